//! The write path: appends stay invisible until committed, one drain becomes one frame
//! within the flush bounds, and a second sync with nothing new is a no-op.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{FsyncPolicy, LogConfig, LogError};
use std::time::Duration;

#[test]
fn appended_records_are_invisible_until_committed() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    let range = log
        .append_batch([(&b"k"[..], &b"v1"[..]), (b"k", b"v2")])
        .unwrap();
    assert_eq!(range, 0..2);
    assert_eq!(log.hwm(), 0);
    assert!(read_all(&log, 0).is_empty());
    let committed = pollster::block_on(log.sync()).unwrap();
    assert_eq!(committed, 0..2);
    let records = read_all(&log, 0);
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].payload, &b"v2"[..]);
    assert_eq!(records[1].offset, 1);
}

#[test]
fn commit_returns_the_records_offsets_and_a_second_sync_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    let a = pollster::block_on(log.commit([(&b"a"[..], &b"1"[..])])).unwrap();
    let b = pollster::block_on(log.commit([(&b"b"[..], &b"2"[..]), (b"c", b"3")])).unwrap();
    assert_eq!((a, b), (0..1, 1..3));
    let before = log.metrics().snapshot().fsyncs;
    assert_eq!(pollster::block_on(log.sync()).unwrap(), 3..3);
    assert_eq!(
        log.metrics().snapshot().fsyncs,
        before,
        "nothing new, no fsync"
    );
}

#[test]
fn each_drain_becomes_one_frame_bounded_by_flush_records() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        flush_records: 10,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    let records: Vec<Vec<u8>> = (0..25).map(json_record).collect();
    log.append_batch(records.iter().map(|r| (&b"k"[..], r.as_slice())))
        .unwrap();
    pollster::block_on(log.sync()).unwrap();
    let m = log.metrics().snapshot();
    assert_eq!(m.frames_written, 3, "25 records at 10 per frame");
    assert_eq!(m.fsyncs, 1, "one sync for the whole drain");
    assert_eq!(read_all(&log, 0).len(), 25);
}

#[test]
fn per_write_policy_commits_every_flushed_frame() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        fsync: FsyncPolicy::PerWrite,
        flush_records: 2,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    log.append_batch((0..4).map(|_| (&b"k"[..], &b"v"[..])))
        .unwrap();
    pollster::block_on(log.flush_tick()).unwrap();
    let m = log.metrics().snapshot();
    assert_eq!((m.frames_written, m.fsyncs, log.hwm()), (2, 2, 4));
}

#[test]
fn segments_roll_at_segment_bytes_and_are_named_by_their_first_offset() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        segment_bytes: 600,
        codec: Codec::None,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for i in 0..20 {
        let r = json_record(i);
        pollster::block_on(log.commit([(&b"key"[..], r.as_slice())])).unwrap();
    }
    let names = segment_files(dir.path());
    assert!(names.len() >= 5, "rolled into {names:?}");
    assert_eq!(names[0], "00000000000000000000.log");
    for name in &names {
        let len = std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert!(len <= 600, "{name} has {len} bytes");
    }
    // Each segment is named by its first offset and they chain without gaps.
    let bases: Vec<u64> = names.iter().map(|n| n[..20].parse().unwrap()).collect();
    let records = read_all(&log, 0);
    assert_eq!(records.len(), 20);
    assert!(bases.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        log.metrics().snapshot().segments_rolled,
        names.len() as u64 - 1
    );
}

#[test]
fn a_frame_larger_than_segment_bytes_gets_a_segment_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        segment_bytes: 100,
        codec: Codec::None,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    pollster::block_on(log.commit([(&b"k"[..], &[7u8; 500][..])])).unwrap();
    pollster::block_on(log.commit([(&b"k"[..], &[8u8; 500][..])])).unwrap();
    assert_eq!(segment_files(dir.path()).len(), 2);
    assert_eq!(read_all(&log, 0)[1].payload, vec![8u8; 500]);
}

#[test]
fn commit_times_never_decrease_when_the_wall_clock_steps_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir.path(), &clock, LogConfig::default());
    pollster::block_on(log.commit([(&b"k"[..], &b"1"[..])])).unwrap();
    clock.set_wall_ms(WALL_START_MS - 60_000);
    pollster::block_on(log.commit([(&b"k"[..], &b"2"[..])])).unwrap();
    pollster::block_on(log.close()).unwrap();
    drop(log);
    // Across a restart with a clock even further back.
    clock.set_wall_ms(WALL_START_MS - 120_000);
    let (log, _) = open(dir.path(), &clock, LogConfig::default());
    pollster::block_on(log.commit([(&b"k"[..], &b"3"[..])])).unwrap();
    let times: Vec<u64> = read_all(&log, 0)
        .iter()
        .map(|r| r.committed_at_ms)
        .collect();
    assert_eq!(times, vec![WALL_START_MS; 3]);
}

#[test]
fn oversize_records_and_a_full_buffer_are_typed_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        buffer_bytes_max: 2 * 1024 * 1024,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    let big = vec![0u8; 3 * 1024 * 1024];
    assert!(matches!(
        log.append(b"k", &big),
        Err(LogError::RecordTooLarge { .. })
    ));
    let half = vec![0u8; 1024 * 1024];
    log.append(b"k", &half).unwrap();
    assert!(matches!(
        log.append(b"k", &half),
        Err(LogError::BufferFull { .. })
    ));
    assert_eq!(log.status().next_offset, 1);
}

#[test]
fn closed_logs_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    pollster::block_on(log.commit([(&b"k"[..], &b"v"[..])])).unwrap();
    pollster::block_on(log.close()).unwrap();
    assert!(matches!(log.append(b"k", b"v"), Err(LogError::Closed)));
    assert_eq!(read_all(&log, 0).len(), 1, "reads still work after close");
}

#[test]
fn invalid_configuration_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        flush_records: 0,
        ..LogConfig::default()
    };
    let err = pollster::block_on(cafelog_engine::log::Log::open(
        cafelog_engine::fs::StdFs,
        clock,
        dir.path(),
        config,
    ))
    .err()
    .expect("rejected");
    assert!(err.to_string().contains("flush_records"), "{err}");
}

#[test]
fn an_fsync_error_poisons_the_partition_but_committed_reads_keep_working() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_failing(dir.path(), LogConfig::default());
    pollster::block_on(log.commit([(&b"k"[..], &b"committed"[..])])).unwrap();
    fs.fail_sync.store(true, Ordering::SeqCst);
    let err = pollster::block_on(log.commit([(&b"k"[..], &b"lost"[..])])).unwrap_err();
    assert!(err.to_string().contains("fsync segment"), "{err}");
    fs.fail_sync.store(false, Ordering::SeqCst);
    // No retry: later writes and syncs fail even though the disk works again.
    let again = pollster::block_on(log.commit([(&b"k"[..], &b"later"[..])])).unwrap_err();
    assert!(matches!(again, LogError::Poisoned { .. }), "{again}");
    assert!(matches!(
        pollster::block_on(log.sync()),
        Err(LogError::Poisoned { .. })
    ));
    assert!(matches!(
        pollster::block_on(log.persist_hwm()),
        Err(LogError::Poisoned { .. })
    ));
    assert_eq!(log.hwm(), 1, "nothing after the error is acknowledged");
    assert!(log.metrics().snapshot().poisoned);
    let batch = pollster::block_on(log.read(0, 10)).unwrap();
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records.get(0).unwrap().payload, &b"committed"[..]);
}

#[test]
fn a_write_error_poisons_too() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_failing(dir.path(), LogConfig::default());
    fs.fail_write.store(true, Ordering::SeqCst);
    assert!(pollster::block_on(log.commit([(&b"k"[..], &b"v"[..])])).is_err());
    fs.fail_write.store(false, Ordering::SeqCst);
    assert!(matches!(
        log.append(b"k", b"v"),
        Err(LogError::Poisoned { .. })
    ));
}

#[test]
fn a_sync_commits_everything_appended_before_it_so_later_syncs_share_its_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    // Appends from many producers, then many concurrent commits: one drain covers all.
    for i in 0..16u64 {
        log.append(b"k", &i.to_be_bytes()).unwrap();
    }
    let syncs: Vec<_> = (0..16).map(|_| log.sync()).collect();
    pollster::block_on(async {
        for s in syncs {
            s.await.unwrap();
        }
    });
    let m = log.metrics().snapshot();
    assert_eq!(m.fsyncs, 1, "16 commits shared one fsync");
    assert_eq!(log.hwm(), 16);
}

#[test]
fn concurrent_producers_compressing_at_once_commit_every_record_once_in_order() {
    // Small frames so every sync drains several, and encodes from four threads
    // interleave in the queue; a small segment so rolls happen among them.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        flush_records: 7,
        segment_bytes: 16 * 1024,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config.clone());
    let producers = 4u64;
    let batches = 25u64;
    let batch = 40u64;
    std::thread::scope(|s| {
        for p in 0..producers {
            let log = log.clone();
            s.spawn(move || {
                for b in 0..batches {
                    let ids: Vec<u64> = (0..batch).map(|i| (p * batches + b) * batch + i).collect();
                    let records: Vec<(Vec<u8>, Vec<u8>)> = ids
                        .iter()
                        .map(|id| (id.to_be_bytes().to_vec(), json_record(*id)))
                        .collect();
                    let range = log
                        .append_batch(records.iter().map(|(k, v)| (k.as_slice(), v.as_slice())))
                        .unwrap();
                    let committed = pollster::block_on(log.sync()).unwrap();
                    assert!(committed.end >= range.end, "sync covers its own appends");
                    assert!(log.hwm() >= range.end);
                }
            });
        }
    });
    let total = producers * batches * batch;
    assert_eq!(log.hwm(), total);
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let (log, report) = open(dir.path(), &clock, config);
    assert_eq!((report.truncation, report.tail_offset), (None, total));
    let records = read_all(&log, 0);
    let mut seen = std::collections::BTreeSet::new();
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as u64, "offsets are contiguous");
        let id = u64::from_be_bytes(r.key[..].try_into().unwrap());
        assert_eq!(r.payload, json_record(id), "record {id} intact");
        assert!(seen.insert(id), "record {id} committed once");
    }
    assert_eq!(seen.len() as u64, total);
    assert!(segment_files(dir.path()).len() > 2, "segments rolled");
}

#[test]
fn a_batch_whose_iterator_panics_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    log.append(b"k", b"before").unwrap();
    let records: Vec<(&[u8], &[u8])> = vec![(b"k", b"one"), (b"k", b"two"), (b"k", b"three")];
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut n = 0;
        log.append_batch(records.iter().map(|r| {
            n += 1;
            assert!(n < 3, "the caller's iterator panics at its third record");
            *r
        }))
    }));
    assert!(result.is_err(), "the panic reaches the caller");
    // The two records pushed before the panic are gone: offsets continue from 1.
    let range = pollster::block_on(log.commit([(&b"k"[..], &b"after"[..])])).unwrap();
    assert_eq!(range, 1..2);
    let payloads: Vec<Vec<u8>> = read_all(&log, 0)
        .into_iter()
        .map(|r| r.payload.to_vec())
        .collect();
    assert_eq!(payloads, vec![b"before".to_vec(), b"after".to_vec()]);
}

#[test]
fn records_drained_but_not_yet_written_still_count_against_the_buffer_bound() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_bytes: 4096,
        buffer_bytes_max: 4096,
        ..LogConfig::default()
    };
    let (log, fs) = open_failing(dir.path(), config);
    let record = vec![b'x'; 1000];
    fs.block_write.store(true, Ordering::SeqCst);
    let committer = {
        let (log, record) = (log.clone(), record.clone());
        std::thread::spawn(move || {
            log.append_batch([(&b"k"[..], &record[..]); 3]).unwrap();
            pollster::block_on(log.sync()).unwrap();
        })
    };
    while !fs.write_blocked.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // ~3000 bytes are drained into a frame whose write is blocked: the buffer itself is
    // empty, but those bytes are still held in memory.
    let err = log.append_batch([(&b"k"[..], &record[..]); 2]).unwrap_err();
    assert!(matches!(err, LogError::BufferFull { .. }), "{err}");
    fs.block_write.store(false, Ordering::SeqCst);
    committer.join().unwrap();
    assert_eq!(log.hwm(), 3);
    log.append_batch([(&b"k"[..], &record[..]); 2]).unwrap();
}

#[test]
fn frames_below_compress_min_bytes_are_stored_raw_and_larger_ones_compress() {
    use cafelog_engine::format::frame::{FRAME_HEADER_LEN, FrameHeader};
    use cafelog_engine::log::config::COMPRESS_MIN_BYTES_DEFAULT;
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig::default();
    assert_eq!(config.compress_min_bytes, COMPRESS_MIN_BYTES_DEFAULT);
    let (log, _) = open(dir.path(), &clock, config);
    let records: Vec<Vec<u8>> = (0..3).map(json_record).collect();
    pollster::block_on(log.commit([(&b"k"[..], records[0].as_slice())])).unwrap();
    pollster::block_on(log.commit(records[1..].iter().map(|r| (&b"k"[..], r.as_slice())))).unwrap();
    let segment = std::fs::read(dir.path().join(&segment_files(dir.path())[0])).unwrap();
    let header = |at: usize| {
        FrameHeader::parse(segment[at..at + FRAME_HEADER_LEN].try_into().unwrap()).unwrap()
    };
    let lone = header(0);
    assert_eq!(lone.codec, Codec::None, "a lone record is stored raw");
    assert!((lone.uncompressed_size as usize) < COMPRESS_MIN_BYTES_DEFAULT);
    let pair = header(lone.frame_len() as usize);
    assert_eq!(
        pair.codec,
        Codec::Zstd,
        "two records reach the bound and compress"
    );
    let read: Vec<Vec<u8>> = read_all(&log, 0)
        .into_iter()
        .map(|r| r.payload.to_vec())
        .collect();
    assert_eq!(read, records);
}
