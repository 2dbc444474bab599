//! Shared by the `log` and `store` test binaries (each includes it with `#[path]`).

use cafelog_engine::fs::StdFs;
use cafelog_engine::recovery::{ScanDepth, scan_partition};
use std::path::Path;

/// Where the frames of the segment file at `segment` end: where a crash mid-write would
/// leave its torn bytes (the writer's preallocated zeros, if any, follow).
pub fn frames_end(segment: &Path) -> u64 {
    let dir = segment
        .parent()
        .expect("a segment lives in a partition directory");
    let name = segment
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a file name");
    let scan = pollster::block_on(scan_partition(&StdFs, dir, ScanDepth::Frames)).expect("scan");
    scan.segments
        .iter()
        .find(|s| s.file_name == name)
        .map(|s| s.valid_len)
        .expect("segment scanned")
}
