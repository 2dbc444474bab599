//! Fuzz target `scan`: arbitrary bytes as a partition directory, scanned by the
//! recovery scanner at both depths.
//!
//! Input layout (so that the fuzzer controls the HWM and segment boundaries too):
//! ```text
//! byte 0        control: bit 0 = an hwm file follows, bit 1 = split into two segments
//! [8 bytes]     the hwm file's contents, when bit 0 is set
//! [2 bytes BE]  split position, and [1 byte] the second segment's base offset, when bit 1
//! rest          segment bytes (the first segment is always 00000000000000000000.log)
//! ```
//! Asserted: no panic, `log_start <= hwm <= tail_offset`, frames contiguous from
//! `log_start` to `tail_offset` inside each segment's valid extent, and the derived
//! counts consistent.

#![no_main]

use cafelog_engine::fs::StdFs;
use cafelog_engine::recovery::{PartitionScan, ScanDepth, scan_partition};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

/// One directory for the whole run: creating a tempdir per input would dominate.
fn dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir")).path()
}

fn check(scan: &PartitionScan) {
    let hwm = scan.hwm();
    assert!(scan.log_start <= hwm && hwm <= scan.tail_offset, "{scan:?}");
    let mut expected = scan.log_start;
    for segment in &scan.segments {
        assert!(segment.valid_len <= segment.file_len);
        let mut position = 0;
        for frame in &segment.frames {
            assert_eq!(frame.base_offset, expected);
            assert_eq!(frame.position, position);
            expected = frame.end_offset();
            position = frame.end_position();
        }
        assert_eq!(position, segment.valid_len);
        assert_eq!(expected, segment.end_offset);
    }
    assert_eq!(expected, scan.tail_offset);
    assert_eq!(scan.hidden_records(), scan.tail_offset - hwm);
    assert!(scan.skipped_records() <= hwm - scan.log_start);
    if scan.truncation.is_none() && scan.corruption.is_none() {
        assert!(scan.segments.iter().all(|s| s.valid_len == s.file_len));
    }
}

fuzz_target!(|data: &[u8]| {
    let dir = dir();
    for entry in std::fs::read_dir(dir).expect("list") {
        std::fs::remove_file(entry.expect("entry").path()).expect("clean");
    }
    let Some((&control, mut rest)) = data.split_first() else {
        return;
    };
    if control & 1 != 0 {
        let Some((hwm, tail)) = rest.split_at_checked(8) else {
            return;
        };
        std::fs::write(dir.join("hwm"), hwm).expect("write hwm");
        rest = tail;
    }
    let mut second = None;
    if control & 2 != 0 {
        let Some((head, tail)) = rest.split_at_checked(3) else {
            return;
        };
        let split = usize::from(u16::from_be_bytes([head[0], head[1]])).min(tail.len());
        let (first, last) = tail.split_at(split);
        second = Some((u64::from(head[2]), last));
        rest = first;
    }
    std::fs::write(dir.join("00000000000000000000.log"), rest).expect("write segment");
    if let Some((base, bytes)) = second {
        std::fs::write(dir.join(format!("{base:020}.log")), bytes).expect("write segment");
    }
    for depth in [ScanDepth::Records, ScanDepth::Frames] {
        let scan = pollster::block_on(scan_partition(&StdFs, dir, depth)).expect("scan reads");
        check(&scan);
    }
});
