//! Recovery: scan a partition ([`scan_partition`]), then carry out the plan ([`apply`]).

mod reader;
mod scan;

pub use reader::{ProbedFrame, SegmentReader, WINDOW_BYTES};
pub use scan::{
    Corruption, FrameEntry, PartitionScan, ScanDepth, SegmentScan, Truncation, TruncationRule,
    read_word_file, scan_partition,
};

use crate::fs::{File, Fs, OpenMode};
use std::io;
use std::path::Path;

/// Carries out a scan's truncation: cuts the bad segment back to its valid extent,
/// removes the segments after it, and makes both durable (file fsync, then directory
/// fsync) before returning. Refuses (returns the corruption) when the scan says R3.
pub async fn apply<F: Fs>(fs: &F, dir: &Path, scan: &mut PartitionScan) -> io::Result<()> {
    if let Some(corruption) = &scan.corruption {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            corruption.to_string(),
        ));
    }
    let Some(truncation) = &scan.truncation else {
        return Ok(());
    };
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
        debug_assert_eq!(last.file_name, truncation.segment);
        last.file_len = last.valid_len;
    }
    Ok(())
}
