//! Recovery on open through `Log::open`: what a reopened log shows after a clean close,
//! a torn tail, a zero-filled (preallocated) tail, a sealed segment's leftover, a bad
//! frame above or below the persisted HWM, and an `hwm` word missing or ahead of the
//! segments.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{LogConfig, LogError};
use cafelog_engine::recovery::TruncationRule;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

fn commit_n(log: &TestLog, from: u64, n: u64) {
    for i in from..from + n {
        let r = json_record(i);
        pollster::block_on(log.commit([(&i.to_be_bytes()[..], r.as_slice())])).unwrap();
    }
}

fn assert_records(log: &TestLog, count: u64) {
    let records = read_all(log, 0);
    assert_eq!(records.len() as u64, count);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as u64);
        assert_eq!(r.payload, json_record(i as u64));
        assert_eq!(r.key[..], (i as u64).to_be_bytes());
    }
}

fn hwm_file(dir: &Path) -> u64 {
    u64::from_be_bytes(std::fs::read(dir.join("hwm")).unwrap().try_into().unwrap())
}

/// Writes `bytes` where the frames of the partition's only segment end: over the
/// zeros the writer preallocated, as a crash mid-write leaves them.
fn write_after_frames(dir: &Path, bytes: &[u8]) -> std::path::PathBuf {
    let segment = dir.join("00000000000000000000.log");
    let at = frames_end(dir, "00000000000000000000.log");
    OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .write_all_at(bytes, at)
        .unwrap();
    segment
}

#[test]
fn a_closed_log_reopens_with_everything_visible() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = open_default(dir.path());
    commit_n(&log, 0, 10);
    pollster::block_on(log.close()).unwrap();
    assert_eq!(hwm_file(dir.path()), 10);
    drop(log);
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(
        (report.hwm, report.hidden_records, report.truncation),
        (10, 0, None)
    );
    assert_records(&log, 10);
    commit_n(&log, 10, 5);
    assert_records(&log, 15);
}

#[test]
fn records_above_the_persisted_hwm_stay_hidden_until_new_commits_pass_them() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = open_default(dir.path());
    commit_n(&log, 0, 4);
    pollster::block_on(log.persist_hwm()).unwrap();
    commit_n(&log, 4, 3); // committed, but the crash comes before the HWM persist
    drop(log); // crash: no close
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(
        (report.hwm, report.tail_offset, report.hidden_records),
        (4, 7, 3)
    );
    assert_eq!(read_all(&log, 0).len(), 4, "the hidden tail is not served");
    let range = pollster::block_on(log.commit([(&b"new"[..], &b"x"[..])])).unwrap();
    assert_eq!(range, 7..8, "new commits append past the hidden tail");
    assert_eq!(read_all(&log, 0).len(), 8, "and the HWM moves over it");
}

#[test]
fn a_torn_tail_is_truncated_and_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = open_default(dir.path());
    commit_n(&log, 0, 5);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let segment = write_after_frames(dir.path(), &[0xCA, 0xFE, 0x01, 0, 0]); // a header cut short
    let clean_len = frames_end(dir.path(), "00000000000000000000.log");
    let file_len = std::fs::metadata(&segment).unwrap().len();
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(
        report.truncation,
        Some((TruncationRule::TornTail, file_len - clean_len)),
        "the torn bytes and the preallocated zeros after them are cut"
    );
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), clean_len);
    assert_eq!(log.metrics().snapshot().truncations_torn_tail, 1);
    assert_records(&log, 5);
    commit_n(&log, 5, 3);
    assert_records(&log, 8);
}

#[test]
fn a_zero_filled_tail_is_the_normal_end_and_is_written_over() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = open_default(dir.path());
    commit_n(&log, 0, 3);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let segment = dir.path().join("00000000000000000000.log");
    let frames = frames_end(dir.path(), "00000000000000000000.log");
    let file_len = std::fs::metadata(&segment).unwrap().len();
    assert!(
        file_len > frames,
        "the writer preallocated zeros after its frames"
    );
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(report.truncation, None, "zeros are not a torn tail");
    assert_eq!(
        log.metrics().snapshot().zero_tail_bytes_at_open,
        file_len - frames
    );
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), file_len);
    assert_records(&log, 3);
    commit_n(&log, 3, 4);
    assert_eq!(
        std::fs::metadata(&segment).unwrap().len(),
        file_len,
        "new frames overwrite the zeros instead of growing the file"
    );
    drop(log); // crash: no close
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(report.truncation, None);
    assert_eq!(report.tail_offset, 7);
    commit_n(&log, 7, 1);
    assert_records(&log, 8);
}

#[test]
fn a_zero_tail_as_short_as_a_frame_header_is_still_a_zero_tail() {
    use cafelog_engine::format::frame::FRAME_HEADER_LEN;
    let header = FRAME_HEADER_LEN as u64;
    for zeros in [1, header - 1, header, header + 1] {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(WALL_START_MS);
        let config = LogConfig {
            preallocate_bytes: 0,
            ..LogConfig::default()
        };
        let (log, _) = open(dir.path(), &clock, config.clone());
        commit_n(&log, 0, 3);
        pollster::block_on(log.close()).unwrap();
        drop(log);
        let segment = dir.path().join("00000000000000000000.log");
        let frames = frames_end(dir.path(), "00000000000000000000.log");
        OpenOptions::new()
            .write(true)
            .open(&segment)
            .unwrap()
            .set_len(frames + zeros)
            .unwrap();
        let (log, report) = open(dir.path(), &clock, config);
        assert_eq!(
            report.truncation, None,
            "{zeros} zero bytes are no torn tail"
        );
        assert_eq!(report.zero_tail_bytes, zeros);
        assert_records(&log, 3);
    }
}

#[test]
fn without_preallocation_the_file_ends_at_its_last_frame() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        preallocate_bytes: 0,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    commit_n(&log, 0, 3);
    let segment = dir.path().join("00000000000000000000.log");
    assert_eq!(
        std::fs::metadata(&segment).unwrap().len(),
        frames_end(dir.path(), "00000000000000000000.log")
    );
    assert_eq!(log.metrics().snapshot().bytes_preallocated, 0);
}

#[test]
fn preallocation_stays_within_the_segment_and_sealing_trims_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        segment_bytes: 2_000,
        preallocate_bytes: 1_024,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config.clone());
    commit_n(&log, 0, 30);
    let names = segment_files(dir.path());
    assert!(names.len() >= 3, "segments rolled: {names:?}");
    let (active, sealed) = names.split_last().unwrap();
    for name in sealed {
        let len = std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert_eq!(
            len,
            frames_end(dir.path(), name),
            "sealed {name} ends at its last frame"
        );
        assert!(len <= config.segment_bytes);
    }
    let active_len = std::fs::metadata(dir.path().join(active)).unwrap().len();
    assert!(active_len <= config.segment_bytes, "within the segment cap");
    assert!(log.metrics().snapshot().bytes_preallocated > 0);
    assert_records(&log, 30);
}

/// Commits 20 records over several 2000-byte segments, closes, writes `leftover` after
/// the frames of the first (sealed) segment, reopens, and checks that nothing is lost
/// or truncated and that the leftover is trimmed.
fn reopen_with_leftover_after_a_sealed_segment(leftover: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        segment_bytes: 2_000,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config.clone());
    commit_n(&log, 0, 20);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let first = segment_files(dir.path())[0].clone();
    let path = dir.path().join(&first);
    let len = std::fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .write_all_at(leftover, len)
        .unwrap();
    let (log, report) = open(dir.path(), &clock, config);
    assert_eq!(
        report.truncation, None,
        "offsets continue: nothing is missing"
    );
    assert_eq!(report.recorded_loss_records, 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len, "trimmed");
    assert_records(&log, 20);
}

#[test]
fn a_sealed_segment_left_with_its_zeros_is_trimmed_at_open() {
    // As if the process crashed before the trim at sealing was durable.
    reopen_with_leftover_after_a_sealed_segment(&[0u8; 3_000]);
}

#[test]
fn a_bit_flip_in_a_sealed_segments_leftover_zeros_is_trimmed_not_refused() {
    // Leftover zeros (an untrimmed seal), one bit flipped at rest.
    let mut junk = vec![0u8; 3_000];
    junk[1_234] = 0x08;
    reopen_with_leftover_after_a_sealed_segment(&junk);
}

/// Writes frames for offsets `5..8` by hand after a partition holding `0..5`, with a
/// garbage frame between, and returns the segment path.
fn partition_with_bad_frame_then_valid(dir: &Path, persisted_hwm: u64) -> std::path::PathBuf {
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        ..LogConfig::default()
    };
    let (log, _) = open(dir, &clock, config);
    commit_n(&log, 0, 5);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let segment = dir.join("00000000000000000000.log");
    // A frame for offset 5 with a flipped payload byte, then a valid frame for 6.
    let mut codecs = cafelog_engine::format::Codecs::default();
    let mut bad = Vec::new();
    let mut record = Vec::new();
    cafelog_engine::format::envelope::encode(&mut record, b"k", WALL_START_MS, b"five");
    codecs
        .encode_frame(Codec::None, 5, [record.as_slice()].into_iter(), &mut bad)
        .unwrap();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    let mut good = Vec::new();
    codecs
        .encode_frame(Codec::None, 6, [record.as_slice()].into_iter(), &mut good)
        .unwrap();
    let mut bytes = bad;
    bytes.extend_from_slice(&good);
    write_after_frames(dir, &bytes);
    std::fs::write(dir.join("hwm"), persisted_hwm.to_be_bytes()).unwrap();
    segment
}

#[test]
fn a_bad_frame_above_the_persisted_hwm_with_valid_frames_after_it_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    partition_with_bad_frame_then_valid(dir.path(), 5);
    let clock = ManualClock::new(WALL_START_MS);
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(
        report.truncation.map(|t| t.0),
        Some(TruncationRule::HoleAboveHwm)
    );
    assert_eq!(log.status().next_offset, 5);
    assert_records(&log, 5);
}

#[test]
fn a_bad_frame_below_the_persisted_hwm_with_valid_frames_after_it_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let segment = partition_with_bad_frame_then_valid(dir.path(), 7);
    let before = std::fs::read(&segment).unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let err = pollster::block_on(cafelog_engine::log::Log::open(
        cafelog_engine::fs::StdFs,
        clock,
        dir.path(),
        LogConfig::default(),
    ))
    .err()
    .expect("refused");
    let LogError::Corruption(c) = &err else {
        panic!("expected corruption, got {err}");
    };
    assert_eq!(c.segment, "00000000000000000000.log");
    assert!(c.reason.contains("checksum mismatch"), "{}", c.reason);
    assert_eq!(
        std::fs::read(&segment).unwrap(),
        before,
        "nothing was truncated"
    );
}

#[test]
fn an_hwm_ahead_of_the_tail_is_clamped_recorded_and_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = open_default(dir.path());
    commit_n(&log, 0, 3);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    std::fs::write(dir.path().join("hwm"), 10u64.to_be_bytes()).unwrap();
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!((report.hwm, report.recorded_loss_records), (3, 7));
    assert_eq!(log.metrics().snapshot().recorded_loss_records, 7);
    assert_eq!(
        hwm_file(dir.path()),
        3,
        "the clamp is persisted before new appends"
    );
    drop(log);
    let (_, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(report.recorded_loss_records, 0, "recorded once");
}

#[test]
fn a_missing_hwm_file_means_zero_and_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = open_default(dir.path());
    commit_n(&log, 0, 2);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join("hwm")).unwrap();
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!((report.hwm, report.hidden_records), (0, 2));
    assert!(read_all(&log, 0).is_empty());
    assert_eq!(hwm_file(dir.path()), 0);
}

#[test]
fn recovery_across_several_segments_keeps_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        segment_bytes: 1024,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config.clone());
    commit_n(&log, 0, 40);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    assert!(segment_files(dir.path()).len() > 3);
    let (log, report) = open(dir.path(), &clock, config);
    assert_eq!(report.hwm, 40);
    assert_records(&log, 40);
}

#[test]
fn a_valid_frame_that_names_the_wrong_offset_ends_the_log_like_a_torn_one() {
    // A CRC-valid frame whose base offset does not continue the log (a misdirected
    // write of another frame) ends the valid extent like a damaged one: accepted, it
    // would number the records after it wrongly.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    commit_n(&log, 0, 5);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let mut record = Vec::new();
    cafelog_engine::format::envelope::encode(&mut record, b"k", WALL_START_MS, b"stray");
    let mut stray = Vec::new();
    cafelog_engine::format::Codecs::default()
        .encode_frame(Codec::None, 9, [record.as_slice()].into_iter(), &mut stray)
        .unwrap();
    write_after_frames(dir.path(), &stray);
    let (log, report) = open(dir.path(), &clock, LogConfig::default());
    assert_eq!(
        report.truncation.map(|t| t.0),
        Some(TruncationRule::TornTail)
    );
    assert_eq!(log.status().next_offset, 5);
    assert_records(&log, 5);
}
