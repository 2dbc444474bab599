//! Retention: the reaper deletes only sealed segments past the retention time, and a
//! reaped partition reopens at its new log start.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::log::LogConfig;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        retention_ms: Some(60_000),
        ..LogConfig::default()
    }
}

/// Ten one-record commits under [`config`] on a [`FailingFs`] with no fault set yet:
/// three or more segment files, all sealed but the last.
fn ten_records_on_failing_fs(
    dir: &std::path::Path,
    clock: &ManualClock,
) -> (cafelog_engine::log::Log<FailingFs, ManualClock>, FailingFs) {
    let fs = FailingFs::default();
    let (log, _) = pollster::block_on(cafelog_engine::log::Log::open(
        fs.clone(),
        clock.clone(),
        dir,
        config(),
    ))
    .expect("open");
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    (log, fs)
}

#[test]
fn the_reaper_deletes_only_sealed_segments_older_than_retention() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir.path(), &clock, config());
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    assert!(segment_files(dir.path()).len() >= 3);
    clock.advance(Duration::from_secs(30));
    for i in 10..14u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    // Not old enough yet.
    assert!(
        pollster::block_on(log.reap_once())
            .unwrap()
            .segments
            .is_empty()
    );
    clock.advance(Duration::from_secs(31));
    let active = segment_files(dir.path()).last().unwrap().clone();
    let report = pollster::block_on(log.reap_once()).unwrap();
    assert!(!report.segments.is_empty());
    let remaining = segment_files(dir.path());
    for name in &report.segments {
        assert!(!remaining.contains(name), "{name} still on disk");
    }
    // Everything committed after the first 30 s survives, and the active segment stays.
    assert!(
        remaining.contains(&active),
        "the active segment {active} was deleted"
    );
    assert!(!report.segments.contains(&active));
    let records = read_all(&log, report.log_start);
    assert_eq!(records.last().unwrap().offset, 13);
    assert!(records.iter().all(|r| r.offset >= report.log_start));
    let m = log.metrics().snapshot();
    assert_eq!(m.retention_segments_deleted, report.segments.len() as u64);
    assert_eq!(m.retention_records_deleted, report.records);
    assert_eq!(report.records, report.log_start);
    assert!(
        log.persisted_hwm() >= report.log_start,
        "HWM persisted before deleting"
    );
    // Never the active segment, even when everything is old.
    clock.advance(Duration::from_secs(3600));
    pollster::block_on(log.reap_once()).unwrap();
    let last = segment_files(dir.path());
    assert_eq!(last, vec![active.clone()]);
    assert_eq!(log.log_start(), active[..20].parse::<u64>().unwrap());
}

#[test]
fn reaped_partitions_reopen_at_the_new_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir.path(), &clock, config());
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    clock.advance(Duration::from_secs(61));
    let report = pollster::block_on(log.reap_once()).unwrap();
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let (log, open_report) = open(dir.path(), &clock, config());
    assert_eq!(log.log_start(), report.log_start);
    assert_eq!(open_report.hwm, 10);
    assert_eq!(
        read_all(&log, report.log_start).len() as u64,
        10 - report.log_start
    );
}

#[test]
fn without_retention_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        retention_ms: None,
        ..config()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    clock.advance(Duration::from_secs(86_400));
    assert!(
        pollster::block_on(log.reap_once())
            .unwrap()
            .segments
            .is_empty()
    );
}

/// A crash between the unlinks and the directory sync brings the segments back: the
/// reported log start must not have moved yet, or it would fall back after the restart.
#[test]
fn the_log_start_moves_only_once_the_delete_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let fs = FailingFs::default();
    let (log, _) = pollster::block_on(cafelog_engine::log::Log::open(
        fs.clone(),
        clock.clone(),
        dir.path(),
        config(),
    ))
    .unwrap();
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    pollster::block_on(log.persist_hwm()).unwrap();
    let before = segment_files(dir.path()).len();
    clock.advance(Duration::from_secs(61));
    fs.fail_sync
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(pollster::block_on(log.reap_once()).is_err());
    fs.fail_sync
        .store(false, std::sync::atomic::Ordering::SeqCst);
    // The reaper got as far as the unlinks: only the directory sync failed.
    assert!(segment_files(dir.path()).len() < before);
    assert_eq!(
        log.status().log_start,
        0,
        "the log start moved before the delete was durable"
    );
    // Reads of the deleted range are refused already.
    assert!(matches!(
        pollster::block_on(log.read(0, 1)),
        Err(cafelog_engine::log::LogError::OffsetBeforeLogStart { .. })
    ));
    // The next sweep that deletes durably moves it.
    clock.advance(Duration::from_secs(61));
    for i in 10..20u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    clock.advance(Duration::from_secs(61));
    let report = pollster::block_on(log.reap_once()).unwrap();
    assert_eq!(log.status().log_start, report.log_start);
    assert!(report.log_start > 0);
}

#[test]
fn a_sweep_that_deletes_nothing_reports_the_log_start_as_it_stands() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir.path(), &clock, config());
    for i in 0..10u64 {
        pollster::block_on(log.commit([(&b"k"[..], &json_record(i)[..])])).unwrap();
    }
    clock.advance(Duration::from_secs(61));
    let start = pollster::block_on(log.reap_once()).unwrap().log_start;
    assert!(start > 0, "the first sweep deleted something");
    // Nothing more is due: the report still says where the log starts.
    let again = pollster::block_on(log.reap_once()).unwrap();
    assert!(again.segments.is_empty());
    assert_eq!(again.log_start, start);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    // Without retention the sweep deletes nothing and says the same.
    let keep = LogConfig {
        retention_ms: None,
        ..config()
    };
    let (log, _) = open(dir.path(), &clock, keep);
    let report = pollster::block_on(log.reap_once()).unwrap();
    assert!(report.segments.is_empty());
    assert_eq!(report.log_start, start);
}

#[test]
fn a_sweep_dropped_before_its_unlinks_is_finished_by_the_next() {
    // Found by the simulator's dropped background loops (default seed 3797000830): a
    // reaper dropped between taking segments out of the log and unlinking them left the
    // files behind; a later sweep reaped their successor, and the next open found a gap
    // below the persisted HWM and refused the partition.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, fs) = ten_records_on_failing_fs(dir.path(), &clock);
    let before = segment_files(dir.path());
    assert!(before.len() >= 3, "{before:?}");
    clock.advance(Duration::from_secs(61));
    fs.hang_remove.store(true, Ordering::SeqCst);
    let (done, alarms) = with_alarms(|| poll_once(log.reap_once()));
    assert!(!done, "the first unlink hangs");
    fs.hang_remove.store(false, Ordering::SeqCst);
    let start = log.log_start();
    assert!(start > 0, "the sweep took segments out of the log");
    assert_eq!(segment_files(dir.path()), before, "nothing unlinked yet");
    // Readers forget the records now, so the engine says so now, not at the unlinks.
    let moved: Vec<_> = alarms
        .iter()
        .filter(|a| a.name == cafelog_engine::alarm::LOG_START_MOVED)
        .map(|a| (a.numbers["from"], a.numbers["log_start"]))
        .collect();
    assert_eq!(moved, [(0, start)]);
    // The next sweep has nothing new to reap, and deletes what the dropped one left,
    // without moving the log start again.
    let (reaped, alarms) = with_alarms(|| pollster::block_on(log.reap_once()));
    reaped.unwrap();
    assert!(alarms.is_empty(), "{alarms:?}");
    let after = segment_files(dir.path());
    for name in &after {
        let base: u64 = name[..20].parse().unwrap();
        assert!(base >= start, "{name} outlives the log start {start}");
    }
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let (log, _) = open(dir.path(), &clock, config());
    assert_eq!(log.log_start(), start, "reopened at the swept log start");
}

#[test]
fn an_unlink_that_fails_fails_the_sweep_and_the_next_finishes_it() {
    // Only a segment already gone counts as unlinked: any other error is the sweep's,
    // and its files stay for the next sweep, not reported deleted and left behind.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, fs) = ten_records_on_failing_fs(dir.path(), &clock);
    let before = segment_files(dir.path());
    assert!(before.len() >= 3, "{before:?}");
    clock.advance(Duration::from_secs(61));
    fs.fail_remove.store(true, Ordering::SeqCst);
    let failed = pollster::block_on(log.reap_once());
    assert!(failed.is_err(), "an unlink failed with EIO: {failed:?}");
    assert_eq!(segment_files(dir.path()), before, "nothing unlinked");
    fs.fail_remove.store(false, Ordering::SeqCst);
    pollster::block_on(log.reap_once()).unwrap();
    let start = log.log_start();
    assert!(start > 0, "the sweep took segments out of the log");
    for name in segment_files(dir.path()) {
        let base: u64 = name[..20].parse().unwrap();
        assert!(base >= start, "{name} outlives the log start {start}");
    }
}

#[test]
fn a_read_retention_overtakes_returns_the_records_it_already_has() {
    // A read that has records when retention deletes the segment it goes on to returns
    // them, as far as it got; only a read that has nothing yet says where the log
    // starts now.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, fs) = ten_records_on_failing_fs(dir.path(), &clock);
    // Frame 0 in the cache; the next frame must come from the disk.
    assert_eq!(pollster::block_on(log.read(0, 1)).unwrap().records.len(), 1);
    fs.pause_read.store(true, Ordering::SeqCst);
    let mut read = std::pin::pin!(log.read(0, 100));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        read.as_mut().poll(&mut cx).is_pending(),
        "paused at frame 1"
    );
    // Retention deletes every sealed segment meanwhile.
    clock.advance(Duration::from_secs(61));
    let reaped = pollster::block_on(log.reap_once()).unwrap();
    assert!(log.log_start() > 2, "{reaped:?}");
    fs.pause_read.store(false, Ordering::SeqCst);
    let std::task::Poll::Ready(result) = read.as_mut().poll(&mut cx) else {
        panic!("the read still waits");
    };
    let batch = result.expect("the records read before the segment went");
    let offsets: Vec<u64> = batch.records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets[0], 0, "{offsets:?}");
    assert!(batch.next_offset < log.log_start(), "{batch:?}");
    // From there the reader is told where the log starts.
    assert!(matches!(
        pollster::block_on(log.read(batch.next_offset, 100)),
        Err(cafelog_engine::log::LogError::OffsetBeforeLogStart { .. })
    ));
}
