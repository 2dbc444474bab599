//! Salvage: the CRC-valid records that an R2 truncation would discard.
//!
//! R2 cuts the log at a bad frame above the persisted HWM and discards every frame
//! after it, because the ingress WAL still holds those records and re-commits them.
//! When the WAL's copy of such a record is damaged too, the discarded frame is the
//! last readable copy: cutting it would turn two faults into a loss. So before the cut,
//! recovery reads the frames past the bad one ([`read_discarded`]) and hands them to
//! a [`Salvage`], which must make durable every record it wants kept (the store writes
//! the ones its WAL lacks into the WAL) before the truncation runs. A double fault then
//! costs a duplicate at most, never a loss.
//!
//! Invariants:
//! - only frames that pass every check of the scanner (magic, header bounds, CRC,
//!   codec, record split) are read, and only envelopes that parse are returned: a
//!   salvaged record is never a wrong byte;
//! - the read is bounded by the bytes R2 discards (the truncated part of one segment
//!   and the segments after it), through [`SegmentReader`]'s window;
//! - only frames at or past the cut's offset are records the cut discards: a valid
//!   frame past the hole that names a lower offset is a stray (a misdirected write, a
//!   stale block) whose records the log already holds below the cut, and keeping it
//!   would commit them twice;
//! - nothing here writes: [`super::apply`] truncates only after [`Salvage::keep`]
//!   returned `Ok`, so a crash between the two leaves the damage (and the copies) for
//!   the next open to find again.

use super::reader::SegmentReader;
use super::scan::{PartitionScan, TruncationRule};
use crate::format::envelope;
use crate::format::frame::{Codecs, split_records};
use crate::fs::{File, Fs, OpenMode};
use std::io;
use std::path::Path;

/// One record read from a frame that R2 is about to discard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalvagedRecord {
    /// The offset its frame gave it (it will not keep it: the log is cut below).
    pub offset: u64,
    pub committed_at_ms: u64,
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
}

/// What a [`Salvage`] made durable of the records offered to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Records that had no other copy a replay would commit (for the store: no WAL
    /// entry, or one its checkpoint had passed), now durable elsewhere for re-commit.
    pub kept: u64,
    /// Records that had another copy, given a second one so the cut leaves two.
    pub copied: u64,
    /// Where the salvage wrote them, for the `r2_salvaged` alarm (for the store, the
    /// WAL sequence numbers `[first_seq, end_seq)`; empty when it wrote nothing).
    pub first_seq: u64,
    pub end_seq: u64,
}

/// What recovery does with the records an R2 truncation would discard.
pub trait Salvage {
    /// Called once per open that truncates by R2, before the truncation, with the
    /// readable records past the bad frame in file order. Returns what it kept; a
    /// record it keeps must be durable somewhere that re-commits it when this returns.
    /// An error stops the open before anything is truncated.
    fn keep(&mut self, records: Vec<SalvagedRecord>) -> impl Future<Output = io::Result<Kept>>;
}

/// The salvage of a log with no WAL behind it: R2 discards, as the spec says.
pub struct Discard;

impl Salvage for Discard {
    async fn keep(&mut self, _records: Vec<SalvagedRecord>) -> io::Result<Kept> {
        Ok(Kept::default())
    }
}

/// The readable records in the region `scan`'s R2 truncation discards: every CRC-valid
/// frame found past the bad one (resynchronising past further damage), in the truncated
/// segment and every segment after it. Empty when the scan truncates by R1 or not at all.
pub async fn read_discarded<F: Fs>(
    fs: &F,
    dir: &Path,
    scan: &PartitionScan,
) -> io::Result<Vec<SalvagedRecord>> {
    let Some(truncation) = scan
        .truncation
        .as_ref()
        .filter(|t| t.rule == TruncationRule::HoleAboveHwm)
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut codecs = Codecs::default();
    let files = std::iter::once((truncation.segment.as_str(), Some(truncation.position))).chain(
        truncation
            .removed_segments
            .iter()
            .map(|n| (n.as_str(), None)),
    );
    for (name, bad_at) in files {
        let file = fs.open(&dir.join(name), OpenMode::Read).await?;
        let file_len = file.len().await?;
        let mut reader = SegmentReader::new(&file, file_len);
        // The bad frame itself is not read: it failed a check.
        let mut next = match bad_at {
            Some(position) => reader.hunt(position).await?,
            None if reader.probe(0).await?.is_ok() => Some(0),
            None => reader.hunt(0).await?,
        };
        while let Some(position) = next {
            assert!(position < file_len, "a frame starts inside the file");
            let frame = match reader.probe(position).await? {
                Ok(frame) => frame,
                Err(_) => {
                    next = reader.hunt(position).await?;
                    continue;
                }
            };
            let end = position + frame.header.frame_len();
            assert!(end <= file_len, "a probed frame lies inside the file");
            next = (end < file_len).then_some(end);
            if frame.header.base_offset < truncation.offset {
                continue;
            }
            let decoded = codecs
                .decode_payload(&frame.header, &frame.stored)
                .ok()
                .and_then(|payload| {
                    let ranges = split_records(&payload, frame.header.record_count).ok()?;
                    Some((payload, ranges))
                });
            if let Some((payload, ranges)) = decoded {
                for (index, range) in ranges.into_iter().enumerate() {
                    let Ok(env) = envelope::decode(payload.get(range).unwrap_or_default()) else {
                        continue;
                    };
                    out.push(SalvagedRecord {
                        offset: frame.header.base_offset + index as u64,
                        committed_at_ms: env.committed_at_ms,
                        key: env.key.to_vec(),
                        payload: env.payload.to_vec(),
                    });
                }
            }
        }
    }
    Ok(out)
}
