//! The frame: the unit of writing, checking and compression.
//!
//! ```text
//! offset 0   magic         2B   0xCA 0xFE
//! offset 2   flags         1B   bits 0-2: codec (0=none, 1=zstd); bits 3-7 reserved, 0
//! offset 3   recordCount   4B   big-endian int32, >= 1
//! offset 7   baseOffset    8B   big-endian int64 — first record's offset
//! offset 15  uncompressed  4B   payload size before codec
//! offset 19  compressed    4B   payload size on disk ("stored")
//! offset 23  crc32c        4B   Castagnoli over header[2:23] + stored payload
//! offset 27  payload            [len:4BE][record bytes] × recordCount, codec-encoded
//! ```
//!
//! Invariants kept here:
//! - a frame is never encoded or decoded above [`FRAME_BYTES_MAX`] (stored or
//!   uncompressed), and the bound is checked before any allocation;
//! - the CRC excludes the magic, so a scanner can hunt for `0xCAFE` cheaply;
//! - a decoded payload holds exactly `recordCount` length-prefixed entries that fill it
//!   exactly; anything else is a [`FrameError`].

#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use std::fmt;
use std::ops::Range;

mod codec;

pub use codec::{Codec, Codecs, ZSTD_HASH_LOG_DEFAULT, ZSTD_LEVEL_DEFAULT};

/// The two magic bytes every frame starts with.
pub const MAGIC: [u8; 2] = [0xCA, 0xFE];

pub const MAGIC_OFFSET: usize = 0;

pub const FLAGS_OFFSET: usize = MAGIC_OFFSET + 2;

pub const RECORD_COUNT_OFFSET: usize = FLAGS_OFFSET + 1;

pub const BASE_OFFSET_OFFSET: usize = RECORD_COUNT_OFFSET + 4;

pub const UNCOMPRESSED_SIZE_OFFSET: usize = BASE_OFFSET_OFFSET + 8;

pub const STORED_SIZE_OFFSET: usize = UNCOMPRESSED_SIZE_OFFSET + 4;

pub const CRC_OFFSET: usize = STORED_SIZE_OFFSET + 4;

/// Length of the fixed header; the payload starts here.
pub const FRAME_HEADER_LEN: usize = CRC_OFFSET + 4;

const _: () = assert!(FRAME_HEADER_LEN == 27);

/// The bound on a frame's stored and uncompressed payload sizes (maxFrameBytes).
pub const FRAME_BYTES_MAX: u32 = 256 * 1024 * 1024;

/// Length prefix of each record inside the payload.
pub const RECORD_LEN_PREFIX: usize = 4;

const CODEC_MASK: u8 = 0b0000_0111;

/// Why bytes are not a valid frame.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// Fewer bytes than a header or the declared payload.
    Truncated {
        needed: u64,
        available: u64,
    },
    BadMagic {
        found: [u8; 2],
    },
    UnknownCodec {
        bits: u8,
    },
    ReservedFlags {
        flags: u8,
    },
    BadRecordCount {
        count: u32,
    },
    BaseOffsetOutOfRange {
        base_offset: u64,
    },
    TooLarge {
        size: u32,
    },
    /// A `none` frame whose stored and uncompressed sizes differ.
    SizeMismatch {
        uncompressed: u32,
        stored: u32,
    },
    ChecksumMismatch {
        stored: u32,
        computed: u32,
    },
    Decompress {
        reason: String,
    },
    /// The compressor failed while encoding (never a property of bytes on disk).
    Compress {
        reason: String,
    },
    /// A whole frame read back is not as long as its header declares.
    LengthMismatch {
        declared: u64,
        read: u64,
    },
    /// The decoded payload does not hold exactly `recordCount` entries.
    PayloadStructure {
        reason: String,
    },
    /// The disk could not read bytes of the frame (EIO: a latent sector error). Not a
    /// format error, but it is judged like one: the frame's bytes are unknown.
    Unreadable {
        position: u64,
        len: u64,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated { needed, available } => {
                write!(
                    f,
                    "truncated frame: needs {needed} bytes, {available} available"
                )
            }
            FrameError::BadMagic { found } => {
                write!(
                    f,
                    "bad magic {:02x}{:02x} (expected cafe)",
                    found[0], found[1]
                )
            }
            FrameError::UnknownCodec { bits } => write!(f, "unknown codec {bits}"),
            FrameError::ReservedFlags { flags } => {
                write!(f, "reserved flag bits set in flags {flags:#04x}")
            }
            FrameError::BadRecordCount { count } => write!(f, "bad record count {count}"),
            FrameError::BaseOffsetOutOfRange { base_offset } => {
                write!(f, "base offset {base_offset} out of range")
            }
            FrameError::TooLarge { size } => {
                write!(
                    f,
                    "frame size {size} exceeds the {FRAME_BYTES_MAX}-byte bound"
                )
            }
            FrameError::SizeMismatch {
                uncompressed,
                stored,
            } => write!(
                f,
                "uncompressed frame with uncompressed size {uncompressed} != stored size {stored}"
            ),
            FrameError::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ),
            FrameError::Decompress { reason } => write!(f, "payload does not decompress: {reason}"),
            FrameError::Compress { reason } => write!(f, "payload does not compress: {reason}"),
            FrameError::LengthMismatch { declared, read } => {
                write!(f, "frame declares {declared} bytes, {read} were read")
            }
            FrameError::PayloadStructure { reason } => write!(f, "bad payload structure: {reason}"),
            FrameError::Unreadable { position, len } => {
                write!(f, "{len} bytes at {position} unreadable (EIO)")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// The parsed fixed header of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub codec: Codec,
    pub record_count: u32,
    pub base_offset: u64,
    pub uncompressed_size: u32,
    pub stored_size: u32,
    pub crc: u32,
}

fn be_u32(bytes: &[u8; FRAME_HEADER_LEN], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(bytes.get(at..at + 4).unwrap_or(&[0; 4]));
    u32::from_be_bytes(word)
}

fn be_u64(bytes: &[u8; FRAME_HEADER_LEN], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes.get(at..at + 8).unwrap_or(&[0; 8]));
    u64::from_be_bytes(word)
}

impl FrameHeader {
    /// Parses and checks a header: magic, flags, count, offset range and size bounds.
    /// The CRC is only read here; [`FrameHeader::check_crc`] verifies it.
    pub fn parse(bytes: &[u8; FRAME_HEADER_LEN]) -> Result<FrameHeader, FrameError> {
        let magic = [bytes[0], bytes[1]];
        if magic != MAGIC {
            return Err(FrameError::BadMagic { found: magic });
        }
        let flags = bytes[FLAGS_OFFSET];
        if flags & !CODEC_MASK != 0 {
            return Err(FrameError::ReservedFlags { flags });
        }
        let codec = Codec::from_bits(flags & CODEC_MASK).ok_or(FrameError::UnknownCodec {
            bits: flags & CODEC_MASK,
        })?;
        let record_count = be_u32(bytes, RECORD_COUNT_OFFSET);
        if record_count == 0 || record_count > i32::MAX as u32 {
            return Err(FrameError::BadRecordCount {
                count: record_count,
            });
        }
        let base_offset = be_u64(bytes, BASE_OFFSET_OFFSET);
        if base_offset > i64::MAX as u64
            || base_offset
                .checked_add(u64::from(record_count))
                .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(FrameError::BaseOffsetOutOfRange { base_offset });
        }
        let uncompressed_size = be_u32(bytes, UNCOMPRESSED_SIZE_OFFSET);
        let stored_size = be_u32(bytes, STORED_SIZE_OFFSET);
        for size in [uncompressed_size, stored_size] {
            if size > FRAME_BYTES_MAX {
                return Err(FrameError::TooLarge { size });
            }
        }
        // Every record costs at least its length prefix.
        if u64::from(uncompressed_size) < u64::from(record_count) * RECORD_LEN_PREFIX as u64 {
            return Err(FrameError::PayloadStructure {
                reason: format!(
                    "{record_count} records cannot fit in {uncompressed_size} uncompressed bytes"
                ),
            });
        }
        if codec == Codec::None && uncompressed_size != stored_size {
            return Err(FrameError::SizeMismatch {
                uncompressed: uncompressed_size,
                stored: stored_size,
            });
        }
        let header = FrameHeader {
            codec,
            record_count,
            base_offset,
            uncompressed_size,
            stored_size,
            crc: be_u32(bytes, CRC_OFFSET),
        };
        // Every bit is a field or checked zero, so a header that parses encodes back to
        // the same bytes (the CRC covers what was read, not a reinterpretation).
        assert_eq!(
            &header.encode(),
            bytes,
            "a parsed header encodes back differently"
        );
        Ok(header)
    }

    /// The header's bytes, with the CRC field as stored in `self.crc`.
    pub fn encode(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut out = [0u8; FRAME_HEADER_LEN];
        let (magic, rest) = out.split_at_mut(FLAGS_OFFSET);
        magic.copy_from_slice(&MAGIC);
        let (flags, rest) = rest.split_at_mut(1);
        flags.copy_from_slice(&[self.codec as u8]);
        let (count, rest) = rest.split_at_mut(4);
        count.copy_from_slice(&self.record_count.to_be_bytes());
        let (base, rest) = rest.split_at_mut(8);
        base.copy_from_slice(&self.base_offset.to_be_bytes());
        let (uncompressed, rest) = rest.split_at_mut(4);
        uncompressed.copy_from_slice(&self.uncompressed_size.to_be_bytes());
        let (stored, crc) = rest.split_at_mut(4);
        stored.copy_from_slice(&self.stored_size.to_be_bytes());
        crc.copy_from_slice(&self.crc.to_be_bytes());
        out
    }

    /// Total bytes of the frame on disk: header plus stored payload.
    pub fn frame_len(&self) -> u64 {
        FRAME_HEADER_LEN as u64 + u64::from(self.stored_size)
    }

    /// One past the last record's offset.
    pub fn end_offset(&self) -> u64 {
        self.base_offset + u64::from(self.record_count)
    }

    /// The CRC32C of header[2:23] followed by `stored`.
    pub fn compute_crc(header: &[u8; FRAME_HEADER_LEN], stored: &[u8]) -> u32 {
        let covered = header.get(FLAGS_OFFSET..CRC_OFFSET).unwrap_or_default();
        crc32c::crc32c_append(crc32c::crc32c(covered), stored)
    }

    /// Verifies the stored CRC against the header bytes and stored payload.
    pub fn check_crc(&self, stored: &[u8]) -> Result<(), FrameError> {
        let computed = Self::compute_crc(&self.encode(), stored);
        if computed == self.crc {
            Ok(())
        } else {
            Err(FrameError::ChecksumMismatch {
                stored: self.crc,
                computed,
            })
        }
    }
}

/// The check before a frame is written, by the log and by the WAL: the bytes are as long
/// as `header` declares and carry it, and, with debug assertions on (tests, simulations
/// in CI), their CRC checks. The full check is a second CRC pass over every frame, which
/// release builds leave to the re-read after the fsync. Panics otherwise: the bytes are
/// the writer's own.
pub fn assert_frame_is(bytes: &[u8], header: &FrameHeader) {
    assert_eq!(
        bytes.len() as u64,
        header.frame_len(),
        "frame bytes and header disagree"
    );
    let head: &[u8; FRAME_HEADER_LEN] = bytes
        .first_chunk()
        .expect("a frame holds at least its header");
    assert_eq!(
        FrameHeader::parse(head).as_ref(),
        Ok(header),
        "frame bytes do not carry their header"
    );
    debug_assert_eq!(check_frame(bytes).map(|(h, _)| h).as_ref(), Ok(header));
}

/// Checks one whole frame read back from disk, as every reader of whole frames does:
/// the header parses and keeps its bounds, the bytes are exactly as long as it
/// declares, and the CRC matches. Returns the header and the stored payload.
pub fn check_frame(bytes: &[u8]) -> Result<(FrameHeader, &[u8]), FrameError> {
    let Some((head, stored)) = bytes.split_first_chunk::<FRAME_HEADER_LEN>() else {
        return Err(FrameError::Truncated {
            needed: FRAME_HEADER_LEN as u64,
            available: bytes.len() as u64,
        });
    };
    let header = FrameHeader::parse(head)?;
    if header.frame_len() != bytes.len() as u64 {
        return Err(FrameError::LengthMismatch {
            declared: header.frame_len(),
            read: bytes.len() as u64,
        });
    }
    check_stored(&header, stored)?;
    Ok((header, stored))
}

/// Checks a parsed header against its stored payload read apart from it (the
/// scanner's reader reads the two separately): the length it declares, then the CRC.
pub fn check_stored(header: &FrameHeader, stored: &[u8]) -> Result<(), FrameError> {
    if stored.len() as u64 != u64::from(header.stored_size) {
        return Err(FrameError::LengthMismatch {
            declared: header.frame_len(),
            read: (FRAME_HEADER_LEN + stored.len()) as u64,
        });
    }
    header.check_crc(stored)
}

/// Splits a decoded payload into the byte ranges of its `count` records.
pub fn split_records(payload: &[u8], count: u32) -> Result<Vec<Range<usize>>, FrameError> {
    let mut ranges = Vec::with_capacity(count.min(1 << 16) as usize);
    for range in record_ranges(payload, count) {
        ranges.push(range?);
    }
    Ok(ranges)
}

/// The byte ranges of a decoded payload's `count` records, in order, without collecting
/// them: an error, and nothing after it, where the payload does not hold exactly `count`
/// length-prefixed records that fill it.
pub fn record_ranges(payload: &[u8], count: u32) -> RecordRanges<'_> {
    RecordRanges {
        payload,
        count,
        index: 0,
        position: 0,
        done: false,
    }
}

/// See [`record_ranges`].
pub struct RecordRanges<'p> {
    payload: &'p [u8],
    count: u32,
    index: u32,
    position: usize,
    done: bool,
}

impl RecordRanges<'_> {
    #[inline]
    fn range(&mut self) -> Result<Range<usize>, FrameError> {
        let (index, position) = (self.index, self.position);
        let prefix = self
            .payload
            .get(position..position + RECORD_LEN_PREFIX)
            .ok_or_else(|| FrameError::PayloadStructure {
                reason: format!("record {index} length prefix past the payload end"),
            })?;
        let mut word = [0u8; 4];
        word.copy_from_slice(prefix);
        let len = u32::from_be_bytes(word) as usize;
        let start = position + RECORD_LEN_PREFIX;
        let end = start
            .checked_add(len)
            .filter(|end| *end <= self.payload.len())
            .ok_or_else(|| FrameError::PayloadStructure {
                reason: format!("record {index} of {len} bytes runs past the payload end"),
            })?;
        self.index += 1;
        self.position = end;
        Ok(start..end)
    }
}

impl Iterator for RecordRanges<'_> {
    type Item = Result<Range<usize>, FrameError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.index == self.count {
            self.done = true;
            let left = self.payload.len() - self.position;
            return (left != 0).then(|| {
                Err(FrameError::PayloadStructure {
                    reason: format!("{left} bytes left after {} records", self.count),
                })
            });
        }
        let range = self.range();
        self.done = range.is_err();
        Some(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(codec: Codec, base: u64, records: &[Vec<u8>]) {
        let mut codecs = Codecs::default();
        let mut out = Vec::new();
        let header = codecs
            .encode_frame(codec, base, records.iter().map(Vec::as_slice), &mut out)
            .expect("encode");
        assert_eq!(out.len() as u64, header.frame_len());
        let (parsed, stored) = check_frame(&out).expect("a frame as written checks");
        assert_eq!(parsed, header);
        let payload = codecs.decode_payload(&parsed, stored).expect("decode");
        let ranges = split_records(&payload, parsed.record_count).expect("split");
        let decoded: Vec<Vec<u8>> = ranges.into_iter().map(|r| payload[r].to_vec()).collect();
        assert_eq!(decoded, records);
        assert_eq!(parsed.base_offset, base);
    }

    proptest! {
        #[test]
        fn frames_round_trip(
            zstd in any::<bool>(),
            base in 0u64..(1 << 40),
            records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..600), 1..40),
        ) {
            roundtrip(if zstd { Codec::Zstd } else { Codec::None }, base, &records);
        }

        #[test]
        fn any_single_bit_flip_is_caught_by_parse_or_crc(
            records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 1..5),
            bit in any::<proptest::sample::Index>(),
        ) {
            let mut out = Vec::new();
            Codecs::default().encode_frame(Codec::Zstd, 7, records.iter().map(Vec::as_slice), &mut out).unwrap();
            let bit = bit.index(out.len() * 8);
            out[bit / 8] ^= 1 << (bit % 8);
            let caught = match check_frame(&out) {
                Err(_) => true,
                Ok((h, _)) => h.base_offset != 7,
            };
            prop_assert!(caught, "flip of bit {bit} went unnoticed");
        }
    }

    #[test]
    fn a_frame_read_back_short_long_or_flipped_does_not_check() {
        let mut out = Vec::new();
        let header = Codecs::default()
            .encode_frame(Codec::None, 3, [&b"abc"[..], b"de"].into_iter(), &mut out)
            .unwrap();
        let len = header.frame_len();
        assert_eq!(check_frame(&out).map(|(h, _)| h), Ok(header));
        assert_eq!(
            check_frame(&out[..out.len() - 1]).map(|(h, _)| h),
            Err(FrameError::LengthMismatch {
                declared: len,
                read: len - 1
            })
        );
        let mut longer = out.clone();
        longer.push(0);
        assert_eq!(
            check_frame(&longer).map(|(h, _)| h),
            Err(FrameError::LengthMismatch {
                declared: len,
                read: len + 1
            })
        );
        assert!(matches!(
            check_frame(&out[..FRAME_HEADER_LEN - 1]),
            Err(FrameError::Truncated { .. })
        ));
        let last = out.len() - 1;
        out[last] ^= 1;
        assert!(matches!(
            check_frame(&out),
            Err(FrameError::ChecksumMismatch { .. })
        ));
        assert_eq!(
            check_stored(&header, &out[FRAME_HEADER_LEN + 1..]),
            Err(FrameError::LengthMismatch {
                declared: len,
                read: len - 1
            })
        );
    }

    #[test]
    fn empty_and_long_records_round_trip() {
        roundtrip(Codec::Zstd, 0, &[Vec::new()]);
        roundtrip(Codec::None, 0, &[Vec::new(), vec![7; 1 << 20]]);
        roundtrip(Codec::Zstd, 99, &[vec![b'x'; 1 << 20]]);
    }

    #[test]
    fn incompressible_payload_is_stored_raw() {
        let mut out = Vec::new();
        let header = Codecs::default()
            .encode_frame(Codec::Zstd, 0, [&b"tiny"[..]].into_iter(), &mut out)
            .unwrap();
        assert_eq!(header.codec, Codec::None);
        assert_eq!(header.stored_size, header.uncompressed_size);
    }

    #[test]
    fn header_bounds_are_checked_before_allocation() {
        let mut header = FrameHeader {
            codec: Codec::Zstd,
            record_count: 1,
            base_offset: 0,
            uncompressed_size: FRAME_BYTES_MAX + 1,
            stored_size: 10,
            crc: 0,
        }
        .encode();
        assert_eq!(
            FrameHeader::parse(&header),
            Err(FrameError::TooLarge {
                size: FRAME_BYTES_MAX + 1
            })
        );
        header[FLAGS_OFFSET] = 5;
        assert_eq!(
            FrameHeader::parse(&header),
            Err(FrameError::UnknownCodec { bits: 5 })
        );
        header[0] = 0;
        assert_eq!(
            FrameHeader::parse(&header),
            Err(FrameError::BadMagic { found: [0, 0xFE] })
        );
    }

    #[test]
    fn split_rejects_trailing_and_short_payloads() {
        assert!(split_records(&[0, 0, 0, 1, 9, 3], 1).is_err());
        assert!(split_records(&[0, 0, 0, 5, 9], 1).is_err());
        assert_eq!(split_records(&[0, 0, 0, 1, 9], 1).unwrap(), vec![4..5]);
    }
}
