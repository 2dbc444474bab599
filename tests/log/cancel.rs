//! Cancelled futures: a commit (or a WAL sync) dropped at any of its await points, as a
//! server drops a request when its client times out, leaves the log and the WAL as a
//! later call can finish them. Nothing is poisoned, lost or written twice because of
//! the drop, and nothing is reported durable before it is.

use crate::common::*;
use cafelog_engine::fs::Fs;
use cafelog_engine::log::LogConfig;
use cafelog_engine::store::Wal;
use std::sync::atomic::Ordering;

#[test]
fn a_sync_dropped_while_its_frame_is_written_leaves_it_for_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_failing(dir.path(), LogConfig::default());
    pollster::block_on(log.commit([(&b"k"[..], &b"committed"[..])])).unwrap();
    log.append(b"k", b"in flight").unwrap();
    fs.hang_write.store(true, Ordering::SeqCst);
    assert!(
        !poll_once(log.sync()),
        "the write hangs, so the sync is pending"
    );
    fs.hang_write.store(false, Ordering::SeqCst);
    assert_eq!(log.hwm(), 1, "nothing of the dropped sync is acknowledged");
    // The frame went back to the queue: the next commit writes it, then its own.
    let range = pollster::block_on(log.commit([(&b"k"[..], &b"later"[..])])).unwrap();
    assert_eq!(range, 2..3);
    let payloads: Vec<Vec<u8>> = read_all(&log, 0)
        .into_iter()
        .map(|r| r.payload.to_vec())
        .collect();
    assert_eq!(
        payloads,
        [&b"committed"[..], b"in flight", b"later"].map(<[u8]>::to_vec)
    );
}

#[test]
fn a_sync_dropped_during_verification_leaves_the_frames_to_verify_again() {
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_failing(
        dir.path(),
        LogConfig {
            flush_records: 1,
            ..LogConfig::default()
        },
    );
    log.append_batch([(&b"k"[..], &b"one"[..]), (b"k", b"two")])
        .unwrap();
    fs.hang_read.store(true, Ordering::SeqCst);
    assert!(!poll_once(log.sync()), "the verification read hangs");
    fs.hang_read.store(false, Ordering::SeqCst);
    assert_eq!(log.hwm(), 0, "nothing is committed before it is verified");
    let before = log.metrics().snapshot().fsyncs;
    let range = pollster::block_on(log.sync()).unwrap();
    assert_eq!(range, 0..2, "the next sync commits both frames");
    assert_eq!(log.hwm(), 2);
    assert_eq!(
        log.metrics().snapshot().fsyncs,
        before + 1,
        "after fsyncing (and verifying) them again"
    );
}

#[test]
fn a_roll_dropped_at_its_directory_fsync_is_finished_by_the_next_commit() {
    // The segment exists once created; the next commit must write into it (not create
    // it again) and fsync the directory before anything in it counts as durable.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 200,
        preallocate_bytes: 0,
        ..LogConfig::default()
    };
    let (log, fs) = open_failing(dir.path(), config);
    let record = vec![b'x'; 120];
    pollster::block_on(log.commit([(&b"k"[..], record.as_slice())])).unwrap();
    log.append(b"k", &record).unwrap();
    fs.hang_sync_dir.store(true, Ordering::SeqCst);
    assert!(!poll_once(log.sync()), "the roll's directory fsync hangs");
    fs.hang_sync_dir.store(false, Ordering::SeqCst);
    assert_eq!(segment_files(dir.path()).len(), 2, "the new segment exists");
    assert_eq!(log.hwm(), 1);
    fs.dir_ops.lock().unwrap().clear();
    let range = pollster::block_on(log.sync()).unwrap();
    assert_eq!(range, 1..2);
    assert_eq!(
        fs.dir_ops.lock().unwrap().as_slice(),
        ["sync_dir"],
        "the directory is fsynced before the commit in the new segment"
    );
    assert_eq!(read_all(&log, 0).len(), 2);
}

fn open_wal(fs: &FailingFs, dir: &std::path::Path, segment_bytes: u64) -> Wal<FailingFs> {
    let (wal, _, _, _) =
        pollster::block_on(Wal::open(fs.clone(), dir.join("wal"), segment_bytes)).expect("open");
    wal
}

/// Every entry a reopened WAL reads: (seq, payload).
fn wal_entries(dir: &std::path::Path) -> Vec<(u64, Vec<u8>)> {
    let (_, _, entries, _) =
        pollster::block_on(Wal::open(FailingFs::default(), dir.join("wal"), 1 << 20))
            .expect("reopen");
    entries.into_iter().map(|e| (e.seq, e.payload)).collect()
}

#[test]
fn a_wal_sync_dropped_during_its_write_keeps_its_entries_for_the_next() {
    // Dropped, the old sync lost the entries it had taken off the buffer, and the next
    // frame numbered later entries from the first lost seq.
    let dir = tempfile::tempdir().unwrap();
    let fs = FailingFs::default();
    pollster::block_on(fs.create_dir_all(&dir.path().join("wal"))).unwrap();
    let wal = open_wal(&fs, dir.path(), 1 << 20);
    let p = ("t".to_owned(), 0);
    let first = wal.append(&p, b"k", b"one").unwrap();
    fs.hang_write.store(true, Ordering::SeqCst);
    assert!(!poll_once(wal.sync_to(first)), "the write hangs");
    fs.hang_write.store(false, Ordering::SeqCst);
    let second = wal.append(&p, b"k", b"two").unwrap();
    pollster::block_on(wal.sync_to(second)).expect("the next sync writes both");
    drop(wal);
    assert_eq!(
        wal_entries(dir.path()),
        [(first, b"one".to_vec()), (second, b"two".to_vec())]
    );
}

/// A WAL of 64-byte segments whose active one is full (a 100-byte entry, durable) with
/// a second entry buffered: the next sync rolls.
fn wal_about_to_roll() -> (tempfile::TempDir, FailingFs, Wal<FailingFs>, [u64; 2]) {
    let dir = tempfile::tempdir().unwrap();
    let fs = FailingFs::default();
    pollster::block_on(fs.create_dir_all(&dir.path().join("wal"))).unwrap();
    let wal = open_wal(&fs, dir.path(), 64);
    let p = ("t".to_owned(), 0);
    let first = wal.append(&p, b"k", &[b'x'; 100]).unwrap();
    pollster::block_on(wal.sync_to(first)).unwrap();
    let second = wal.append(&p, b"k", b"two").unwrap();
    (dir, fs, wal, [first, second])
}

#[test]
fn a_wal_roll_dropped_at_its_directory_fsync_is_finished_by_the_next_sync() {
    let (dir, fs, wal, [first, second]) = wal_about_to_roll();
    let big = vec![b'x'; 100];
    fs.hang_sync_dir.store(true, Ordering::SeqCst);
    assert!(
        !poll_once(wal.sync_to(second)),
        "the roll's directory fsync hangs"
    );
    fs.hang_sync_dir.store(false, Ordering::SeqCst);
    fs.dir_ops.lock().unwrap().clear();
    pollster::block_on(wal.sync_to(second)).expect("no second create of the segment");
    assert_eq!(
        fs.dir_ops.lock().unwrap().first().map(String::as_str),
        Some("sync_dir"),
        "the directory is fsynced before the entry counts as durable"
    );
    drop(wal);
    assert_eq!(
        wal_entries(dir.path()),
        [(first, big), (second, b"two".to_vec())]
    );
}

#[test]
fn a_segment_file_a_dropped_create_left_empty_is_reused_and_one_with_bytes_is_not() {
    // The create took effect after its caller was dropped: the file exists, empty, and
    // nothing recorded it. The next roll reuses it; a file with bytes it refuses.
    for leftover in [&b""[..], b"data"] {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 200,
            preallocate_bytes: 0,
            ..LogConfig::default()
        };
        let (log, _fs) = open_failing(dir.path(), config);
        let record = vec![b'x'; 120];
        pollster::block_on(log.commit([(&b"k"[..], record.as_slice())])).unwrap();
        let next = dir
            .path()
            .join(cafelog_engine::format::layout::segment_file_name(1));
        std::fs::write(&next, leftover).unwrap();
        let result = pollster::block_on(log.commit([(&b"k"[..], record.as_slice())]));
        if leftover.is_empty() {
            assert_eq!(result.unwrap(), 1..2);
            assert_eq!(read_all(&log, 0).len(), 2);
        } else {
            let err = result.unwrap_err();
            assert!(err.to_string().contains("exists with 4 bytes"), "{err}");
            assert_eq!(std::fs::read(&next).unwrap(), leftover, "left untouched");
        }
    }
}

#[test]
fn a_wal_segment_a_dropped_create_left_empty_is_reused() {
    let (dir, _fs, wal, [first, second]) = wal_about_to_roll();
    let big = vec![b'x'; 100];
    let names = std::fs::read_dir(dir.path().join("wal")).unwrap().count();
    // The roll names the new segment by the next seq; leave it created and empty.
    let next = cafelog_engine::store::wal::segment_name(second);
    std::fs::write(dir.path().join("wal").join(&next), b"").unwrap();
    pollster::block_on(wal.sync_to(second)).expect("the empty leftover is reused");
    assert_eq!(
        std::fs::read_dir(dir.path().join("wal")).unwrap().count(),
        names + 1
    );
    drop(wal);
    assert_eq!(
        wal_entries(dir.path()),
        [(first, big), (second, b"two".to_vec())]
    );
}

#[test]
fn an_fsync_whose_caller_was_dropped_is_not_trusted_its_frames_are_written_again() {
    // Linux reports an fsync error once and marks the pages clean: a caller dropped
    // before it saw the error leaves frames that no later fsync writes. The next sync
    // writes them again (checked first) before an fsync vouches for them.
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_failing(dir.path(), LogConfig::default());
    log.append(b"k", b"one").unwrap();
    fs.fail_sync.store(true, Ordering::SeqCst);
    fs.hang_after_sync.store(true, Ordering::SeqCst);
    assert!(!poll_once(log.sync()), "the fsync failed, unseen");
    fs.fail_sync.store(false, Ordering::SeqCst);
    fs.hang_after_sync.store(false, Ordering::SeqCst);
    let frame = fs
        .writes
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("the frame's write");
    fs.writes.lock().unwrap().clear();
    assert_eq!(pollster::block_on(log.sync()).unwrap(), 0..1);
    assert_eq!(
        fs.writes.lock().unwrap().as_slice(),
        [frame],
        "the frame is written again, in full, at its place"
    );
    assert_eq!(read_all(&log, 0).len(), 1);
}
