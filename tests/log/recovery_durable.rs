//! Recovery makes what it changed durable before it returns (`recovery::apply`: "file
//! fsync, then directory fsync"): segments R2 removes stay removed across a power loss
//! right after the open, whatever the open does next. The simulator cannot tell: every
//! later change to the directory fsyncs it too, and until then R2 would cut the
//! resurrected segments again.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::LogConfig;
use cafelog_engine::recovery::{ScanDepth, TruncationRule, apply, scan_partition};
use std::os::unix::fs::FileExt;

#[test]
fn segments_r2_removes_are_unlinked_then_the_directory_is_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        segment_bytes: 600,
        preallocate_bytes: 0,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for i in 0..12 {
        let r = json_record(i);
        pollster::block_on(log.commit([(&b"k"[..], r.as_slice())])).unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let names = segment_files(dir.path());
    assert!(names.len() >= 4, "{names:?}");
    // Nothing persisted as committed, and the second segment's first frame damaged:
    // R2 cuts there and removes every later segment.
    std::fs::write(dir.path().join("hwm"), 0u64.to_be_bytes()).unwrap();
    let damaged = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join(&names[1]))
        .unwrap();
    damaged.write_all_at(&[0xFF], 40).unwrap();

    let fs = FailingFs::default();
    let mut scan =
        pollster::block_on(scan_partition(&fs, dir.path(), ScanDepth::Frames)).expect("scan");
    let truncation = scan.truncation.clone().expect("R2 cuts");
    assert_eq!(truncation.rule, TruncationRule::HoleAboveHwm);
    assert_eq!(truncation.removed_segments, names[2..]);
    pollster::block_on(apply(&fs, dir.path(), &mut scan)).expect("apply");

    let ops = fs.dir_ops.lock().unwrap().clone();
    let removes: Vec<String> = names[2..].iter().map(|n| format!("remove {n}")).collect();
    assert_eq!(ops[..removes.len()], removes[..], "{ops:?}");
    assert_eq!(
        ops[removes.len()..],
        ["sync_dir".to_string()],
        "the directory is fsynced after the unlinks, before apply returns"
    );
    assert_eq!(segment_files(dir.path()), names[..2]);
}
