//! The read-back before a commit (spec: "VerifyDurable re-reads the just-written
//! frames before the high-watermark moves") checks that the bytes at the frame's
//! position are that frame: a valid frame read from somewhere else (a misdirected
//! read or write) must fail it, whichever header field gives it away.

use crate::common::*;
use cafelog_engine::format::Codec;
use cafelog_engine::log::LogConfig;

/// The frame of each record the tests commit.
const FRAME: u64 = ONE_RECORD_FRAME;

/// Commits one record, then reads the second frame's position from `from` while a
/// commit of `count` records is verified: the commit must fail and commit nothing.
fn misdirected_read_back_fails_the_commit(from: u64, count: usize) {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        codec: Codec::None,
        ..LogConfig::default()
    };
    let (log, fs) = open_failing(dir.path(), config);
    let payload = vec![b'a'; PAYLOAD];
    pollster::block_on(log.commit([(&b"k"[..], payload.as_slice())])).unwrap();
    // The second frame goes right after the first.
    *fs.redirect_read.lock().unwrap() = Some((FRAME, from));
    let batch: Vec<Vec<u8>> = (0..count).map(|i| vec![b'b' + i as u8; PAYLOAD]).collect();
    let result = pollster::block_on(log.commit(batch.iter().map(|p| (&b"k"[..], p.as_slice()))));
    assert!(result.is_err(), "the read-back returned another frame");
    assert_eq!(log.hwm(), 1, "nothing after the first frame is committed");
}

#[test]
fn a_read_back_of_another_frame_with_the_same_record_count_fails() {
    // The first frame: base 0, one record, a valid CRC; only its base differs.
    misdirected_read_back_fails_the_commit(0, 1);
}

#[test]
fn a_read_back_of_another_frame_with_a_different_count_and_base_fails() {
    misdirected_read_back_fails_the_commit(0, 2);
}

#[test]
fn a_records_scan_counts_unparseable_records_below_the_hwm_and_the_extent() {
    // `cafelog verify`'s figures: one frame of three records, the last two not
    // envelopes; the persisted HWM 2 puts one of them below it.
    use cafelog_engine::format::frame::{Codec, Codecs};
    use cafelog_engine::format::{envelope, layout};
    let dir = tempfile::tempdir().unwrap();
    let mut good = Vec::new();
    envelope::encode(&mut good, b"k", WALL_START_MS, b"v");
    let garbage: &[u8] = &[0xFF; 3];
    let records: [&[u8]; 3] = [&good, garbage, garbage];
    let mut frame = Vec::new();
    Codecs::default()
        .encode_frame(Codec::None, 7, records.into_iter(), &mut frame)
        .unwrap();
    std::fs::write(dir.path().join(layout::segment_file_name(7)), &frame).unwrap();
    std::fs::write(dir.path().join("hwm"), 9u64.to_be_bytes()).unwrap();
    let fs = cafelog_engine::fs::StdFs;
    let scan = pollster::block_on(cafelog_engine::recovery::scan_partition(
        &fs,
        dir.path(),
        cafelog_engine::recovery::ScanDepth::Records,
    ))
    .expect("scan");
    assert_eq!(scan.log_start, 7);
    assert_eq!(scan.tail_offset, 10);
    assert_eq!(
        scan.records(),
        3,
        "the extent holds 3 records from the log start"
    );
    assert_eq!(scan.skipped_records(), 1, "offset 8 only: 9 is at the HWM");
}
