//! Recovery: scan a partition ([`scan_partition`]), carry out the plan ([`apply`]), then
//! make durable what the scan found but cannot prove durable ([`persist_unproven`]).

mod persist;
mod reader;
mod salvage;
mod scan;
mod scan_input;
mod scan_invariants;

pub use persist::persist_unproven;
pub use reader::{ProbedFrame, SegmentReader, WINDOW_BYTES};
pub use salvage::{Discard, Kept, Salvage, SalvagedRecord, read_discarded};
pub use scan::{
    Corruption, FrameEntry, PartitionScan, ScanDepth, SegmentScan, Truncation, TruncationRule,
    read_replaced_word_file, read_word_file, scan_partition,
};
pub use scan_input::{ScanInput, scan_fuzz_input};

use crate::fs::{File, Fs, OpenMode};
use std::io;
use std::path::Path;

/// Carries out a scan's plan: trims the zero-filled (preallocated) or damaged unused
/// tail of every kept segment but the last, cuts the bad segment back to its valid extent, removes the
/// segments after it, and makes each change durable (file fsync, then directory fsync)
/// before returning. Refuses (returns the corruption) when the scan says R3.
///
/// The last segment keeps its zero tail: it becomes the active segment, and the writer
/// overwrites that space in place. A sealed segment is trimmed to its last frame when it
/// is sealed; one that still has a zero tail here was sealed by a process that crashed
/// before the trim was durable.
pub async fn apply<F: Fs>(fs: &F, dir: &Path, scan: &mut PartitionScan) -> io::Result<()> {
    if let Some(corruption) = &scan.corruption {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            corruption.to_string(),
        ));
    }
    let sealed = scan.segments.len().saturating_sub(1);
    for segment in scan.segments.iter_mut().take(sealed) {
        if segment.zero_tail > 0 || segment.junk_tail > 0 {
            assert!(
                segment.valid_len + segment.zero_tail + segment.junk_tail <= segment.file_len,
                "the trim cuts only the tails the scan found"
            );
            let file = fs
                .open(&dir.join(&segment.file_name), OpenMode::ReadWrite)
                .await?;
            file.set_len(segment.valid_len).await?;
            file.sync_data().await?;
            segment.file_len = segment.valid_len;
            segment.zero_tail = 0;
            segment.junk_tail = 0;
        }
    }
    let Some(truncation) = &scan.truncation else {
        return Ok(());
    };
    let cut = scan.segments.last();
    assert!(
        cut.is_none_or(|s| s.file_name == truncation.segment && s.valid_len == truncation.position),
        "R1/R2 cut the last kept segment at its valid extent, never inside a kept frame"
    );
    assert!(
        !truncation.removed_segments.contains(&truncation.segment),
        "the cut segment is kept"
    );
    let file = fs
        .open(&dir.join(&truncation.segment), OpenMode::ReadWrite)
        .await?;
    file.set_len(truncation.position).await?;
    file.sync_data().await?;
    for name in &truncation.removed_segments {
        fs.remove_file(&dir.join(name)).await?;
    }
    if !truncation.removed_segments.is_empty() {
        fs.sync_dir(dir).await?;
    }
    // The truncated segment is now the last one kept; its file is its valid extent.
    if let Some(last) = scan.segments.last_mut() {
        assert_eq!(last.file_name, truncation.segment);
        last.file_len = last.valid_len;
        last.zero_tail = 0;
    }
    Ok(())
}
