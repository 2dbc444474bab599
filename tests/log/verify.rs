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
