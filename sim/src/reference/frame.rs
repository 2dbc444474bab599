//! Frames, payload entries and record envelopes, decoded from bytes as FORMAT.md states
//! them ("Frame", "Payload entries", "Record envelope"), without the engine's code.
//!
//! ```text
//! offset 0   magic         2B   0xCA 0xFE
//! offset 2   flags         1B   bits 0-2: codec (0=none, 1=zstd); bits 3-7 reserved, 0
//! offset 3   recordCount   4B   big-endian int32, >= 1
//! offset 7   baseOffset    8B   big-endian int64: first record's offset
//! offset 15  uncompressed  4B   payload size before codec
//! offset 19  compressed    4B   payload size on disk ("stored")
//! offset 23  crc32c        4B   Castagnoli over header[2:23] + stored payload
//! offset 27  payload            [len:4BE][record bytes] × recordCount, codec-encoded
//! ```
//!
//! Invariants:
//! - every read is bounds-checked against the image (`get`), never indexed: an image is
//!   untrusted bytes;
//! - a size field is checked against the 256 MiB bound and the image length before
//!   anything is allocated for it.

use std::ops::Range;

/// `0xCAFE`.
pub const MAGIC: [u8; 2] = [0xCA, 0xFE];
const FLAGS_AT: usize = 2;
const COUNT_AT: usize = 3;
const BASE_AT: usize = 7;
const UNCOMPRESSED_AT: usize = 15;
const STORED_AT: usize = 19;
const CRC_AT: usize = 23;
/// Where the payload starts.
pub const HEADER_LEN: usize = 27;
const _: () = assert!(CRC_AT + 4 == HEADER_LEN && STORED_AT + 4 == CRC_AT);
/// The bound on both payload sizes (`maxFrameBytes`).
const FRAME_BYTES_MAX: u64 = 256 * 1024 * 1024;
const ENVELOPE_VERSION: u8 = 0x02;

/// A header whose fields passed FORMAT.md's checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub zstd: bool,
    pub record_count: u32,
    pub base_offset: u64,
    pub uncompressed: u32,
    pub stored: u32,
    pub crc: u32,
}

impl Header {
    /// Header plus stored payload.
    pub fn frame_len(&self) -> u64 {
        HEADER_LEN as u64 + u64::from(self.stored)
    }

    pub fn end_offset(&self) -> u64 {
        self.base_offset + u64::from(self.record_count)
    }
}

fn word<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    word::<4>(bytes, at).map(u32::from_be_bytes)
}

/// The header at byte `at` of `image`, checked field by field (not its CRC, not the
/// image length). `None` when there are fewer than 27 bytes or a field is out of range.
pub fn header_at(image: &[u8], at: u64) -> Option<Header> {
    let at = usize::try_from(at).ok()?;
    let head = image.get(at..at.checked_add(HEADER_LEN)?)?;
    if word::<2>(head, 0)? != MAGIC {
        return None;
    }
    let flags = *head.get(FLAGS_AT)?;
    if flags & 0b1111_1000 != 0 || flags > 1 {
        return None;
    }
    let record_count = u32_at(head, COUNT_AT)?;
    if record_count == 0 || i32::try_from(record_count).is_err() {
        return None;
    }
    let base_offset = word::<8>(head, BASE_AT).map(u64::from_be_bytes)?;
    if base_offset
        .checked_add(u64::from(record_count))
        .is_none_or(|end| i64::try_from(end).is_err())
    {
        return None;
    }
    let uncompressed = u32_at(head, UNCOMPRESSED_AT)?;
    let stored = u32_at(head, STORED_AT)?;
    if u64::from(uncompressed) > FRAME_BYTES_MAX || u64::from(stored) > FRAME_BYTES_MAX {
        return None;
    }
    let zstd = flags == 1;
    if !zstd && uncompressed != stored {
        return None;
    }
    Some(Header {
        zstd,
        record_count,
        base_offset,
        uncompressed,
        stored,
        crc: u32_at(head, CRC_AT)?,
    })
}

/// The frame at byte `at` of `image` if it is whole and its CRC matches: the documented
/// test of a valid frame, and what a hunt for the next one looks for.
pub fn valid_at(image: &[u8], at: u64) -> Option<Header> {
    let header = header_at(image, at)?;
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(usize::try_from(header.frame_len()).ok()?)?;
    let covered = image.get(start + FLAGS_AT..start + CRC_AT)?;
    let stored = image.get(start + HEADER_LEN..end)?;
    let crc = crc32c::crc32c_append(crc32c::crc32c(covered), stored);
    (crc == header.crc).then_some(header)
}

/// The first byte after `from` (exclusive) where a valid frame starts.
pub fn hunt(image: &[u8], from: u64) -> Option<u64> {
    let start = usize::try_from(from).ok()?.checked_add(1)?;
    let rest = image.get(start..)?;
    rest.windows(MAGIC.len())
        .enumerate()
        .filter(|(_, w)| *w == MAGIC)
        .map(|(i, _)| (start + i) as u64)
        .find(|at| valid_at(image, *at).is_some())
}

/// A segment file's bytes as a reader gets them, with the byte ranges a read of it
/// fails on (EIO), shown in `bytes` as fill. A frame with an unreadable byte is never
/// valid, whatever the fill reads as: the engine's reader refuses it, and a byte may
/// have been written as the fill, so the bytes alone cannot tell.
#[derive(Clone, Copy, Debug)]
pub struct Readable<'a> {
    pub bytes: &'a [u8],
    /// In order, each inside `bytes`.
    pub unreadable: &'a [Range<u64>],
}

impl<'a> Readable<'a> {
    /// Bytes every one of which reads.
    pub fn whole(bytes: &'a [u8]) -> Self {
        Readable {
            bytes,
            unreadable: &[],
        }
    }

    /// `bytes` with `unreadable` (each range inside it, in order).
    pub fn new(bytes: &'a [u8], unreadable: &'a [Range<u64>]) -> Self {
        assert!(
            unreadable.is_sorted_by(|a, b| a.end <= b.start)
                && unreadable.iter().all(|r| r.end <= bytes.len() as u64),
            "unreadable ranges are ordered and inside the image"
        );
        Readable { bytes, unreadable }
    }

    /// Whether a byte of `[position, position + len)` fails to read.
    pub fn unreadable_in(&self, position: u64, len: u64) -> bool {
        let end = position.saturating_add(len);
        self.unreadable
            .iter()
            .any(|r| r.start < end && position < r.end)
    }

    /// [`valid_at`], refused when a byte of the frame fails to read.
    pub fn valid_at(&self, at: u64) -> Option<Header> {
        valid_at(self.bytes, at).filter(|h| !self.unreadable_in(at, h.frame_len()))
    }

    /// [`hunt`] for a frame whose every byte reads (the engine's hunt probes each
    /// candidate and passes over an unreadable one).
    pub fn hunt(&self, from: u64) -> Option<u64> {
        let mut from = from;
        loop {
            let at = hunt(self.bytes, from)?;
            if self.valid_at(at).is_some() {
                return Some(at);
            }
            from = at;
        }
    }
}

/// The stored payload of the frame at `at` (as the codec left it). `None` when the
/// image ends first.
pub fn stored_at<'i>(image: &'i [u8], at: u64, header: &Header) -> Option<&'i [u8]> {
    let start = usize::try_from(at).ok()?.checked_add(HEADER_LEN)?;
    image.get(start..start.checked_add(header.stored as usize)?)
}

/// The records of the valid frame at `at`: its payload decoded (codec) and split into
/// exactly `recordCount` length-prefixed entries. `None` when the payload does not
/// decode or split exactly (a bad frame).
pub fn records_at(image: &[u8], at: u64, header: &Header) -> Option<Vec<Vec<u8>>> {
    let stored = stored_at(image, at, header)?;
    let payload = if header.zstd {
        let out = zstd::bulk::decompress(stored, header.uncompressed as usize).ok()?;
        if out.len() != header.uncompressed as usize {
            return None;
        }
        out
    } else {
        stored.to_vec()
    };
    let mut records = Vec::new();
    let mut rest = payload.as_slice();
    for _ in 0..header.record_count {
        let len = u32_at(rest, 0)? as usize;
        let record = rest.get(4..4usize.checked_add(len)?)?;
        records.push(record.to_vec());
        rest = rest.get(4 + len..)?;
    }
    rest.is_empty().then_some(records)
}

/// An unsigned LEB128 varint in shortest form, at most 10 bytes: value and length.
pub fn uvarint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (index, byte) in bytes.iter().take(10).enumerate() {
        if index == 9 && *byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7F) << (7 * index);
        if byte & 0x80 == 0 {
            return (index == 0 || *byte != 0).then_some((value, index + 1));
        }
    }
    None
}

/// A parsed envelope `[version 0x02][keyLen][key][committedAtUnixMs:8B][payload]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope<'r> {
    pub key: &'r [u8],
    pub committed_at_ms: u64,
    pub payload: &'r [u8],
}

pub fn envelope(record: &[u8]) -> Option<Envelope<'_>> {
    let (&version, rest) = record.split_first()?;
    if version != ENVELOPE_VERSION {
        return None;
    }
    let (key_len, used) = uvarint(rest)?;
    let rest = rest.get(used..)?;
    let (key, rest) = rest.split_at_checked(usize::try_from(key_len).ok()?)?;
    let (time, payload) = rest.split_at_checked(8)?;
    Some(Envelope {
        key,
        committed_at_ms: u64::from_be_bytes(time.try_into().ok()?),
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cafelog_engine::format::frame::{Codec, Codecs};

    /// One frame encoded by the engine, to check that the two sides read it alike.
    fn engine_frame(codec: Codec, base: u64, records: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        Codecs::new(1, 0)
            .encode_frame(codec, base, records.iter().copied(), &mut out)
            .expect("encodes");
        out
    }

    #[test]
    fn reads_what_the_engine_writes_with_both_codecs() {
        let records: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i % 3; 64]).collect();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        for codec in [Codec::None, Codec::Zstd] {
            let image = engine_frame(codec, 7, &refs);
            let header = valid_at(&image, 0).expect("valid");
            assert_eq!((header.base_offset, header.record_count), (7, 40));
            assert_eq!(header.frame_len(), image.len() as u64);
            assert_eq!(records_at(&image, 0, &header), Some(records.clone()));
        }
    }

    #[test]
    fn any_flipped_bit_but_the_magic_fails_the_crc_or_the_header() {
        let image = engine_frame(Codec::None, 0, &[b"abc", b"defg"]);
        for at in 0..image.len() {
            for bit in 0..8 {
                let mut bad = image.clone();
                bad[at] ^= 1 << bit;
                assert!(valid_at(&bad, 0).is_none(), "byte {at} bit {bit}");
            }
        }
    }

    #[test]
    fn a_hunt_finds_the_next_valid_frame_past_garbage() {
        let mut image = vec![0xCA, 0xFE, 0, 1, 2];
        let second = image.len() as u64;
        image.extend(engine_frame(Codec::None, 3, &[b"x"]));
        assert_eq!(hunt(&image, 0), Some(second));
        assert_eq!(hunt(&image, second), None);
    }

    #[test]
    fn envelopes_and_varints_follow_the_format() {
        let mut record = vec![0x02, 3];
        record.extend(b"key");
        record.extend(1_700_000_000_123u64.to_be_bytes());
        record.extend(b"payload");
        let env = envelope(&record).expect("parses");
        assert_eq!(
            (env.key, env.committed_at_ms, env.payload),
            (&b"key"[..], 1_700_000_000_123, &b"payload"[..])
        );
        assert!(envelope(&[0x01, 0]).is_none(), "another version");
        assert_eq!(uvarint(&[0xAC, 0x02]), Some((300, 2)));
        assert!(uvarint(&[0x80, 0x00]).is_none(), "not shortest");
    }
}
