//! A frame's payload codecs: `none` stores the records as they are, `zstd` compresses
//! them (and stores them raw when that is no smaller). [`Codecs`] keeps the zstd
//! contexts a thread reuses, and encodes whole frames.

use super::*;

/// How a frame's payload is encoded on disk (flags bits 0-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Codec {
    None = 0,
    Zstd = 1,
}

impl Codec {
    /// The codec named by flags bits 0-2, if known.
    pub fn from_bits(bits: u8) -> Option<Codec> {
        match bits {
            0 => Some(Codec::None),
            1 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// Lower-case name (`none`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Zstd => "zstd",
        }
    }
}

impl std::str::FromStr for Codec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Codec::None),
            "zstd" => Ok(Codec::Zstd),
            other => Err(format!("unknown codec {other:?} (expected none or zstd)")),
        }
    }
}

/// Reusable compression and decompression state (zstd contexts are costly to create).
pub struct Codecs {
    compressor: Option<zstd::bulk::Compressor<'static>>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    level: i32,
    /// zstd's hash log; 0: zstd's own for the level.
    hash_log: u32,
    /// The uncompressed payload of the frame being encoded, kept between frames so a
    /// writer does not reallocate (and, above glibc's mmap threshold, page-fault) a
    /// fresh buffer per frame. Bounded by the largest frame encoded, itself at most
    /// [`FRAME_BYTES_MAX`].
    payload: Vec<u8>,
}

impl Default for Codecs {
    fn default() -> Self {
        Self::new(ZSTD_LEVEL_DEFAULT, ZSTD_HASH_LOG_DEFAULT)
    }
}

/// The zstd level used unless configured otherwise. Chosen by measurement
/// (`cargo bench --bench engine`, "zstd level at batch 1000"): on JSON-like events level
/// 1 compresses a 1000-record frame in about 0.7x the time of level 3 and, on that
/// data, slightly smaller (81.6% saved against 79.7%); at batch 1000 compression is
/// the commit path's largest cost.
pub const ZSTD_LEVEL_DEFAULT: i32 = 1;

/// zstd's hash log unless configured otherwise (`LogConfig::zstd_hash_log`; 0 would be
/// zstd's own for the level). zstd picks 14 at level 1 for a 1000-record frame; on
/// JSON-like events a 2048-entry table compresses such a frame in about 0.91x the time
/// and 5% smaller (`cargo run --release -p cafelog-engine --example zstd_params`): the
/// table stays in L1 cache, and similar records still find their matches.
pub const ZSTD_HASH_LOG_DEFAULT: u32 = 11;

impl fmt::Debug for Codecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Codecs")
            .field("level", &self.level)
            .field("hash_log", &self.hash_log)
            .finish()
    }
}

impl Codecs {
    /// Contexts are created lazily, on first use. `hash_log` 0 leaves zstd's own for
    /// the level.
    pub fn new(level: i32, hash_log: u32) -> Self {
        Codecs {
            compressor: None,
            decompressor: None,
            level,
            hash_log,
            payload: Vec::new(),
        }
    }

    /// Decodes a CRC-checked frame's stored payload into its uncompressed bytes.
    pub fn decode_payload(
        &mut self,
        header: &FrameHeader,
        stored: &[u8],
    ) -> Result<Vec<u8>, FrameError> {
        match header.codec {
            Codec::None => Ok(stored.to_vec()),
            Codec::Zstd => {
                let decompressor = match &mut self.decompressor {
                    Some(d) => d,
                    slot => slot.insert(zstd::bulk::Decompressor::new().map_err(|e| {
                        FrameError::Decompress {
                            reason: e.to_string(),
                        }
                    })?),
                };
                // The capacity is the header's uncompressed size, already bounded by
                // FRAME_BYTES_MAX; zstd never writes past it.
                let out = decompressor
                    .decompress(stored, header.uncompressed_size as usize)
                    .map_err(|e| FrameError::Decompress {
                        reason: e.to_string(),
                    })?;
                if out.len() != header.uncompressed_size as usize {
                    return Err(FrameError::Decompress {
                        reason: format!(
                            "decompressed to {} bytes, header says {}",
                            out.len(),
                            header.uncompressed_size
                        ),
                    });
                }
                Ok(out)
            }
        }
    }

    /// Encodes `records` (already enveloped) as one frame starting at `base_offset`,
    /// appending the frame's bytes to `out`. With [`Codec::Zstd`], a payload that does
    /// not shrink is stored with [`Codec::None`]: the codec is per frame, and a lone small
    /// record grows under zstd.
    pub fn encode_frame<'r>(
        &mut self,
        codec: Codec,
        base_offset: u64,
        records: impl ExactSizeIterator<Item = &'r [u8]>,
        out: &mut Vec<u8>,
    ) -> Result<FrameHeader, FrameError> {
        let count = records.len();
        let record_count = u32::try_from(count)
            .ok()
            .filter(|c| *c >= 1 && *c <= i32::MAX as u32)
            .ok_or(FrameError::BadRecordCount {
                count: u32::try_from(count).unwrap_or(u32::MAX),
            })?;
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        let result =
            self.encode_payload(codec, base_offset, record_count, records, &mut payload, out);
        self.payload = payload;
        result
    }

    /// [`Codecs::encode_frame`] with the payload scratch buffer taken out of `self`.
    fn encode_payload<'r>(
        &mut self,
        codec: Codec,
        base_offset: u64,
        record_count: u32,
        records: impl ExactSizeIterator<Item = &'r [u8]>,
        payload: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<FrameHeader, FrameError> {
        for record in records {
            let len =
                u32::try_from(record.len()).map_err(|_| FrameError::TooLarge { size: u32::MAX })?;
            payload.extend_from_slice(&len.to_be_bytes());
            payload.extend_from_slice(record);
        }
        self.encode_payload_frame(codec, base_offset, record_count, payload, out)
    }

    /// Encodes an already laid-out payload (`[len:4BE][record bytes]` for each of
    /// `record_count` records, FORMAT.md) as one frame starting at `base_offset`,
    /// appending the frame's bytes to `out`. The frame is built in place: header space,
    /// then the payload compressed straight into `out` (no intermediate buffer), or
    /// copied raw when zstd does not shrink it; then the CRC and header over it.
    pub fn encode_payload_frame(
        &mut self,
        codec: Codec,
        base_offset: u64,
        record_count: u32,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<FrameHeader, FrameError> {
        if record_count == 0 || record_count > i32::MAX as u32 {
            return Err(FrameError::BadRecordCount {
                count: record_count,
            });
        }
        debug_assert!(
            split_records(payload, record_count)
                .is_ok_and(|r| r.last().map(|r| r.end) == Some(payload.len())),
            "payload does not hold exactly {record_count} records"
        );
        let uncompressed_size = u32::try_from(payload.len())
            .ok()
            .filter(|s| *s <= FRAME_BYTES_MAX)
            .ok_or(FrameError::TooLarge {
                size: u32::try_from(payload.len()).unwrap_or(u32::MAX),
            })?;
        let start = out.len();
        let stored_at = start + FRAME_HEADER_LEN;
        out.resize(stored_at, 0);
        let compressed = match codec {
            Codec::None => false,
            Codec::Zstd => {
                let compressor = compressor(&mut self.compressor, self.level, self.hash_log)?;
                compress_append(compressor, payload, out)?;
                out.len() - stored_at < payload.len()
            }
        };
        if !compressed {
            out.truncate(stored_at);
            out.extend_from_slice(payload);
        }
        let codec = if compressed { Codec::Zstd } else { Codec::None };
        let stored = out.get(stored_at..).unwrap_or_default();
        let stored_size = u32::try_from(stored.len())
            .ok()
            .filter(|s| *s <= FRAME_BYTES_MAX)
            .ok_or(FrameError::TooLarge { size: u32::MAX })?;
        let mut header = FrameHeader {
            codec,
            record_count,
            base_offset,
            uncompressed_size,
            stored_size,
            crc: 0,
        };
        header.crc = FrameHeader::compute_crc(&header.encode(), stored);
        out.get_mut(start..stored_at)
            .expect("header space was reserved")
            .copy_from_slice(&header.encode());
        // Paired check: what we are about to write parses back to the same header.
        assert_eq!(
            out.get(start..start + FRAME_HEADER_LEN)
                .and_then(|h| <&[u8; FRAME_HEADER_LEN]>::try_from(h).ok())
                .map(FrameHeader::parse),
            Some(Ok(header)),
            "an encoded header does not parse back"
        );
        assert_eq!(
            (out.len() - start) as u64,
            header.frame_len(),
            "frame bytes and header length disagree"
        );
        assert!(
            codec == Codec::None || stored_size < uncompressed_size,
            "zstd is kept only when it shrinks the payload"
        );
        Ok(header)
    }
}

/// The compressor in `slot`, created at `level` (and `hash_log`) on first use.
fn compressor<'s>(
    slot: &'s mut Option<zstd::bulk::Compressor<'static>>,
    level: i32,
    hash_log: u32,
) -> Result<&'s mut zstd::bulk::Compressor<'static>, FrameError> {
    let error = |e: std::io::Error| FrameError::Compress {
        reason: e.to_string(),
    };
    match slot {
        Some(c) => Ok(c),
        slot => {
            let mut compressor = zstd::bulk::Compressor::new(level).map_err(error)?;
            if hash_log != 0 {
                compressor
                    .set_parameter(zstd::zstd_safe::CParameter::HashLog(hash_log))
                    .map_err(error)?;
            }
            Ok(slot.insert(compressor))
        }
    }
}

/// Compresses `input` as one zstd frame appended to `out`.
fn compress_append(
    compressor: &mut zstd::bulk::Compressor<'static>,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let at = out.len();
    // Room for zstd's worst case; a cursor makes it write after what is there.
    out.reserve(zstd::zstd_safe::compress_bound(input.len()));
    let mut cursor = std::io::Cursor::new(&mut *out);
    cursor.set_position(at as u64);
    let written = compressor
        .compress_to_buffer(input, &mut cursor)
        .map_err(|e| FrameError::Compress {
            reason: e.to_string(),
        })?;
    assert_eq!(out.len(), at + written, "zstd wrote past its count");
    Ok(())
}
