//! Making durable what recovery found but cannot prove durable, before anything builds
//! on it ([`persist_unproven`]).
//!
//! After a process crash the kernel's page cache outlives the process, and recovery
//! reads through it. What it shows above the persisted HWM may not be on the disk:
//! writes nobody fsynced yet, and, after an fsync that failed with EIO, pages Linux
//! marked clean without writing them, which no later fsync will write (fsyncgate). An
//! fsync alone cannot fix the second kind, so every frame recovery keeps that holds an
//! offset at or above the recovered HWM is written again with the bytes it holds, which
//! dirties its pages, and then fsynced. The directory is fsynced too: a crashed process
//! may have created a segment file whose entry is not durable yet.
//!
//! Invariants:
//! - frames wholly below the recovered HWM are left alone: an HWM is persisted only
//!   after the fsync of the frames below it succeeded, and every open runs this before
//!   its log can advance the HWM over what it found. A persisted HWM beyond the tail
//!   (a clamp, R4) proves that word wrong, so then nothing is taken as proven and
//!   every frame is written back;
//! - the bytes written back are the bytes the scan accepted: each frame is read again
//!   through the scanner's own check (magic, bounds, CRC) and its length, offset and
//!   count compared with the scan's before it is written;
//! - nothing is written past a segment's valid extent, so the zero tail stays zeros; a
//!   sealed segment's length is set again to its valid extent in the same fsync, so a
//!   written-back frame that lands astray past the end cannot outlive it on the platter;
//! - every run written back reads back as the bytes written before the fsync that makes
//!   it durable: a write that landed corrupt is written again (a few times, then the
//!   open fails). The write-back overwrites the only copy of frames that may hold
//!   acknowledged records, so it checks its own writes as the commit path does.

use super::reader::SegmentReader;
use super::scan::{FrameEntry, PartitionScan};
use crate::fs::{File, Fs, OpenMode, read_exact_at};
use std::io;
use std::path::Path;

/// Frames written back per write call, at most (one frame alone may be larger).
const CHUNK_BYTES: u64 = 1 << 20;

/// Writes of one run that may read back wrong before the open gives up.
const WRITE_BACK_ATTEMPTS: u32 = 4;

/// Writes back and fsyncs every kept frame holding an offset at or above the scan's
/// HWM (every frame, after a clamp), then fsyncs `dir`. Returns the bytes written
/// back. Run after [`super::apply`], whose truncations and trims the scan then
/// reflects.
pub async fn persist_unproven<F: Fs>(fs: &F, dir: &Path, scan: &PartitionScan) -> io::Result<u64> {
    assert!(
        scan.corruption.is_none(),
        "a refused partition is not opened"
    );
    let proven = if scan.recorded_loss_records() > 0 {
        scan.log_start
    } else {
        scan.hwm()
    };
    let mut written = 0u64;
    let last = scan.segments.len().saturating_sub(1);
    for (i, segment) in scan.segments.iter().enumerate() {
        let unproven: Vec<&FrameEntry> = segment
            .frames
            .iter()
            .filter(|f| f.end_offset() > proven)
            .collect();
        let Some(first) = unproven.first() else {
            continue;
        };
        assert!(
            unproven
                .windows(2)
                .all(|w| w[0].end_position() == w[1].position),
            "frames of {} are contiguous",
            segment.file_name
        );
        let end = unproven.last().map_or(first.position, |f| f.end_position());
        assert!(
            end <= segment.valid_len,
            "write-back stays in the valid extent"
        );
        let file = fs
            .open(&dir.join(&segment.file_name), OpenMode::ReadWrite)
            .await?;
        for chunk in chunks(&unproven) {
            written += write_back(&file, &segment.file_name, chunk).await?;
        }
        if i < last {
            file.set_len(segment.valid_len).await?;
        }
        file.sync_data().await?;
    }
    fs.sync_dir(dir).await?;
    Ok(written)
}

/// Consecutive frames grouped into runs of at most [`CHUNK_BYTES`] (or one frame).
fn chunks<'a>(frames: &'a [&'a FrameEntry]) -> impl Iterator<Item = &'a [&'a FrameEntry]> {
    let mut rest = frames;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let mut n = 1;
        while n < rest.len() && rest[n].end_position() - first.position <= CHUNK_BYTES {
            n += 1;
        }
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(chunk)
    })
}

/// Reads `frames` (contiguous) back through the scanner's own frame check
/// ([`SegmentReader::probe`]: magic, bounds, CRC), checks each is the frame the scan
/// accepted, and writes them to the same place.
async fn write_back<F: File>(file: &F, name: &str, frames: &[&FrameEntry]) -> io::Result<u64> {
    let (Some(first), Some(last)) = (frames.first(), frames.last()) else {
        return Ok(0);
    };
    let mut reader = SegmentReader::new(file, last.end_position());
    let mut bytes = Vec::new();
    for frame in frames {
        let changed = |what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{name} at byte {}: {what} changed since the scan; not writing it back",
                    frame.position
                ),
            )
        };
        let probed = reader
            .probe(frame.position)
            .await?
            .map_err(|_| changed("frame"))?;
        let header = probed.header;
        if header.frame_len() != frame.frame_len
            || header.base_offset != frame.base_offset
            || header.record_count != frame.record_count
        {
            return Err(changed("frame header"));
        }
        bytes.extend_from_slice(&header.encode());
        bytes.extend_from_slice(&probed.stored);
    }
    assert_eq!(
        bytes.len() as u64,
        last.end_position() - first.position,
        "the frames are contiguous"
    );
    write_checked(file, name, &bytes, first.position).await?;
    Ok(bytes.len() as u64)
}

/// Writes `bytes` at `position` and reads them back, writing again while they read
/// back different, at most [`WRITE_BACK_ATTEMPTS`] times.
async fn write_checked<F: File>(
    file: &F,
    name: &str,
    bytes: &[u8],
    position: u64,
) -> io::Result<()> {
    let mut back = vec![0u8; bytes.len()];
    for _ in 0..WRITE_BACK_ATTEMPTS {
        file.write_at(bytes, position).await?;
        read_exact_at(file, &mut back, position).await?;
        if back == bytes {
            return Ok(());
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{name} at byte {position}: {} bytes written back read back different \
             {WRITE_BACK_ATTEMPTS} times",
            bytes.len()
        ),
    ))
}
