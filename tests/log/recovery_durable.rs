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

/// Twelve records in frames of one over segments of 600 bytes, nothing persisted as
/// committed, and the second segment's first frame damaged: R2 cuts there and removes
/// every later segment. Returns the config and the segment names.
fn hole_in_the_second_segment(dir: &std::path::Path) -> (LogConfig, Vec<String>) {
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        segment_bytes: 600,
        preallocate_bytes: 0,
        ..LogConfig::default()
    };
    let (log, _) = open(dir, &clock, config.clone());
    for i in 0..12 {
        let r = json_record(i);
        pollster::block_on(log.commit([(&b"k"[..], r.as_slice())])).unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let names = segment_files(dir);
    assert!(names.len() >= 4, "{names:?}");
    std::fs::write(dir.join("hwm"), 0u64.to_be_bytes()).unwrap();
    let damaged = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(&names[1]))
        .unwrap();
    damaged.write_all_at(&[0xFF], 40).unwrap();
    (config, names)
}

#[test]
fn segments_r2_removes_are_unlinked_then_the_directory_is_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let (_, names) = hole_in_the_second_segment(dir.path());

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

/// Commits `n` records in frames of one, closes, and sets the `hwm` word to `hwm`.
fn log_with_hidden_tail(dir: &std::path::Path, n: u64, hwm: u64) -> LogConfig {
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        segment_bytes: 600,
        ..LogConfig::default()
    };
    let (log, _) = open(dir, &clock, config.clone());
    for i in 0..n {
        let r = json_record(i);
        pollster::block_on(log.commit([(&b"k"[..], r.as_slice())])).unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    drop(log);
    std::fs::write(dir.join("hwm"), hwm.to_be_bytes()).unwrap();
    config
}

/// The frames an open writes back: non-zero writes to segment files, by file.
fn segment_writes(fs: &FailingFs) -> Vec<WriteOp> {
    fs.writes
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.file.ends_with(".log") && !w.zeros)
        .cloned()
        .collect()
}

#[test]
fn an_open_writes_back_every_frame_above_the_hwm_with_the_bytes_it_holds() {
    // After a process crash the page cache may show frames the disk lacks (a failed
    // fsync leaves them clean); only writing them again makes a later fsync persist them.
    let dir = tempfile::tempdir().unwrap();
    let config = log_with_hidden_tail(dir.path(), 12, 5);
    let names = segment_files(dir.path());
    assert!(names.len() >= 3, "{names:?}");
    let before: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(dir.path().join(n)).unwrap())
        .collect();
    let (log, fs) = open_failing(dir.path(), config);
    assert_eq!(log.hwm(), 5);
    let writes = segment_writes(&fs);
    // Every segment holding an offset at or above 5 is written back from its first such
    // frame to its last frame, and nothing below it.
    for name in &names {
        let base: u64 = name.trim_end_matches(".log").parse().unwrap();
        let end = frames_end(dir.path(), name);
        let mine: Vec<&WriteOp> = writes.iter().filter(|w| &w.file == name).collect();
        let next_base = names
            .iter()
            .filter_map(|n| n.trim_end_matches(".log").parse::<u64>().ok())
            .find(|&b| b > base)
            .unwrap_or(u64::MAX);
        if next_base <= 5 {
            assert!(mine.is_empty(), "{name} lies below the HWM: {mine:?}");
            continue;
        }
        let first = mine.iter().map(|w| w.position).min().expect("written back");
        let last = mine.iter().map(|w| w.position + w.len).max().unwrap();
        assert_eq!(last, end, "{name}: written back to its last frame");
        if base >= 5 {
            assert_eq!(first, 0, "{name}: every frame is above the HWM");
        } else {
            assert!(first > 0, "{name}: its frames below the HWM are left alone");
        }
    }
    // The bytes are the ones the files held, and the active segment keeps its
    // preallocated zeros.
    for (name, bytes) in names.iter().zip(&before) {
        let now = std::fs::read(dir.path().join(name)).unwrap();
        let end = frames_end(dir.path(), name) as usize;
        assert_eq!(now[..end], bytes[..end], "{name}");
    }
    let last = names.last().unwrap();
    assert_eq!(
        std::fs::metadata(dir.path().join(last)).unwrap().len(),
        before.last().unwrap().len() as u64,
        "{last} keeps its zero tail"
    );
    // Each sealed segment written back has its length set to its last frame in the
    // same fsync (a written-back frame that lands astray past the end cannot outlive
    // it); the active one is never trimmed.
    let set_lens = fs.set_lens.lock().unwrap().clone();
    for name in &names[..names.len() - 1] {
        if writes.iter().any(|w| &w.file == name) {
            let end = frames_end(dir.path(), name);
            assert!(
                set_lens.contains(&(name.clone(), end)),
                "{name}: {set_lens:?}"
            );
        }
    }
    assert!(
        set_lens.iter().all(|(n, _)| n != last),
        "the active segment is not trimmed: {set_lens:?}"
    );
    assert!(
        fs.dir_ops.lock().unwrap().contains(&"sync_dir".to_string()),
        "the partition directory is fsynced at open"
    );
    assert!(
        fs.writes.lock().unwrap().iter().any(|w| w.file == "hwm"),
        "the hwm word is written again at open"
    );
}

#[test]
fn a_write_back_that_lands_corrupt_is_written_again_before_the_open_returns() {
    // The write-back overwrites the only copy of frames that may hold acknowledged
    // records: one that lands corrupt must not be fsynced as it is.
    let dir = tempfile::tempdir().unwrap();
    let config = log_with_hidden_tail(dir.path(), 12, 5);
    let names = segment_files(dir.path());
    let before: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(dir.path().join(n)).unwrap())
        .collect();
    let fs = FailingFs::default();
    fs.corrupt_segment_writes
        .store(3, std::sync::atomic::Ordering::SeqCst);
    let log = pollster::block_on(open_on(fs.clone(), dir.path(), config.clone())).unwrap();
    assert_eq!(
        fs.corrupt_segment_writes
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the first three writes back landed corrupt"
    );
    for (name, bytes) in names.iter().zip(&before) {
        let now = std::fs::read(dir.path().join(name)).unwrap();
        let end = frames_end(dir.path(), name) as usize;
        assert_eq!(now[..end], bytes[..end], "{name} holds the bytes it held");
    }
    let records = read_all(&log, 0);
    assert_eq!(records.len(), 5, "every record below the HWM reads back");
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let (log, _) = open_failing(dir.path(), config);
    assert_eq!(log.hwm(), 5);
    assert_eq!(read_all(&log, 0).len(), 5);
}

#[test]
fn a_write_back_that_keeps_landing_corrupt_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = log_with_hidden_tail(dir.path(), 12, 5);
    let fs = FailingFs::default();
    fs.corrupt_segment_writes
        .store(u32::MAX, std::sync::atomic::Ordering::SeqCst);
    let error = pollster::block_on(open_on(fs, dir.path(), config))
        .err()
        .expect("the open fails");
    assert!(error.to_string().contains("read back different"), "{error}");
}

#[test]
fn an_open_with_nothing_above_the_hwm_writes_no_frame_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = log_with_hidden_tail(dir.path(), 6, 6);
    let (log, fs) = open_failing(dir.path(), config);
    assert_eq!(log.hwm(), 6);
    assert_eq!(segment_writes(&fs), Vec::<WriteOp>::new());
}

#[test]
fn a_clamped_open_writes_back_every_frame() {
    // A persisted HWM beyond the tail proves the word wrong: nothing is taken as durable.
    let dir = tempfile::tempdir().unwrap();
    let config = log_with_hidden_tail(dir.path(), 6, 100);
    let (log, report) = {
        let fs = FailingFs::default();
        let clock = ManualClock::new(WALL_START_MS);
        let (log, report) = pollster::block_on(cafelog_engine::log::Log::open(
            fs.clone(),
            clock,
            dir.path(),
            config,
        ))
        .expect("open");
        assert!(report.recorded_loss_records > 0);
        let firsts: Vec<u64> = segment_writes(&fs).iter().map(|w| w.position).collect();
        assert!(
            firsts.contains(&0),
            "the first frame is written back: {firsts:?}"
        );
        (log, report)
    };
    assert_eq!(log.hwm(), 6);
    assert!(report.written_back_bytes > 0);
}

/// The offsets of the records `read_discarded` offers for `scan`'s R2 cut.
fn offered_offsets(
    fs: &FailingFs,
    dir: &std::path::Path,
    scan: &cafelog_engine::recovery::PartitionScan,
) -> Vec<u64> {
    pollster::block_on(cafelog_engine::recovery::read_discarded(fs, dir, scan))
        .expect("read")
        .iter()
        .map(|r| r.offset)
        .collect()
}

#[test]
fn an_r2_cut_offers_every_readable_record_past_the_hole_to_the_salvage() {
    // Each removed segment is read from its first frame, the cut segment from the first
    // valid frame after the bad one.
    let dir = tempfile::tempdir().unwrap();
    let (config, names) = hole_in_the_second_segment(dir.path());
    let clock = ManualClock::new(WALL_START_MS);
    let fs = FailingFs::default();
    let scan =
        pollster::block_on(scan_partition(&fs, dir.path(), ScanDepth::Frames)).expect("scan");
    assert_eq!(
        scan.truncation.as_ref().unwrap().rule,
        TruncationRule::HoleAboveHwm
    );
    let offered = offered_offsets(&fs, dir.path(), &scan);
    let first_removed: u64 = names[2].trim_end_matches(".log").parse().unwrap();
    let second: u64 = names[1].trim_end_matches(".log").parse().unwrap();
    // Everything from the second record of the cut segment (its first frame is the bad
    // one) to the last record, each once.
    let expected: Vec<u64> = (second + 1..12).collect();
    assert!(offered.contains(&first_removed), "{offered:?}");
    assert_eq!(offered, expected);
    // A bare log open (no WAL) discards them all, as the spec says.
    let (_, report) = pollster::block_on(cafelog_engine::log::Log::open(
        fs,
        clock,
        dir.path(),
        config,
    ))
    .expect("open");
    assert_eq!(report.salvage_offered, expected.len() as u64);
    assert_eq!(report.salvaged, 0);
}

#[test]
fn each_record_of_a_frame_past_the_hole_is_offered_at_its_own_offset() {
    // Three frames of four records; the first is damaged above the persisted HWM 0, so
    // the open cuts there (R2) and offers the eight records of the two after it.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        preallocate_bytes: 0,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config);
    for frame in 0..3 {
        let records: Vec<Vec<u8>> = (0..4).map(|i| json_record(frame * 4 + i)).collect();
        log.append_batch(records.iter().map(|r| (&b"k"[..], r.as_slice())))
            .unwrap();
        pollster::block_on(log.sync()).unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    drop(log);
    let names = segment_files(dir.path());
    assert_eq!(names.len(), 1, "{names:?}");
    std::fs::write(dir.path().join("hwm"), 0u64.to_be_bytes()).unwrap();
    let segment = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join(&names[0]))
        .unwrap();
    segment.write_all_at(&[0xFF], 40).unwrap();
    let fs = FailingFs::default();
    let scan =
        pollster::block_on(scan_partition(&fs, dir.path(), ScanDepth::Frames)).expect("scan");
    assert_eq!(
        scan.truncation.as_ref().unwrap().rule,
        TruncationRule::HoleAboveHwm
    );
    assert_eq!(
        offered_offsets(&fs, dir.path(), &scan),
        (4..12).collect::<Vec<u64>>()
    );
}

#[test]
fn the_salvage_skips_a_stray_frame_that_names_an_offset_below_the_cut() {
    // A valid frame past the hole whose offset lies below the cut (a misdirected write
    // of an old frame) holds records the log keeps below the cut: offering them would
    // commit them twice.
    let dir = tempfile::tempdir().unwrap();
    let (_, names) = hole_in_the_second_segment(dir.path());
    let fs = FailingFs::default();
    let first = pollster::block_on(scan_partition(&fs, dir.path(), ScanDepth::Frames))
        .expect("scan")
        .segments[0]
        .frames[0];
    let stray = &std::fs::read(dir.path().join(&names[0])).unwrap()[..first.frame_len as usize];
    let last = dir.path().join(names.last().unwrap());
    let mut bytes = std::fs::read(&last).unwrap();
    bytes.extend_from_slice(stray);
    std::fs::write(&last, bytes).unwrap();

    let scan =
        pollster::block_on(scan_partition(&fs, dir.path(), ScanDepth::Frames)).expect("scan");
    let truncation = scan.truncation.clone().expect("R2 cuts");
    let offered = offered_offsets(&fs, dir.path(), &scan);
    let second: u64 = names[1].trim_end_matches(".log").parse().unwrap();
    assert_eq!(truncation.offset, second);
    assert_eq!(offered, (second + 1..12).collect::<Vec<u64>>());
}

#[test]
fn the_write_back_refuses_a_frame_that_changed_since_the_scan() {
    // A frame read back for the write-back must be the one the scan accepted; a valid
    // frame of another offset in its place (same length, good CRC) is not written.
    use cafelog_engine::format::frame::{Codec, Codecs};
    use cafelog_engine::format::{envelope, layout};
    let dir = tempfile::tempdir().unwrap();
    let mut record = Vec::new();
    envelope::encode(&mut record, b"k", WALL_START_MS, b"v");
    let frame_at = |base: u64| {
        let mut out = Vec::new();
        Codecs::default()
            .encode_frame(Codec::None, base, [record.as_slice()].into_iter(), &mut out)
            .unwrap();
        out
    };
    let name = layout::segment_file_name(0);
    let path = dir.path().join(&name);
    let (first, second) = (frame_at(0), frame_at(1));
    std::fs::write(&path, [first.as_slice(), second.as_slice()].concat()).unwrap();
    std::fs::write(dir.path().join("hwm"), 0u64.to_be_bytes()).unwrap();
    let fs = FailingFs::default();
    let scan =
        pollster::block_on(scan_partition(&fs, dir.path(), ScanDepth::Frames)).expect("scan");
    assert_eq!(scan.tail_offset, 2);
    // The same bytes: written back.
    pollster::block_on(cafelog_engine::recovery::persist_unproven(
        &fs,
        dir.path(),
        &scan,
    ))
    .expect("unchanged frames are written back");
    // The second frame replaced by a valid frame of offset 5, same length.
    let other = frame_at(5);
    assert_eq!(other.len(), second.len());
    std::fs::write(&path, [first.as_slice(), other.as_slice()].concat()).unwrap();
    let error = pollster::block_on(cafelog_engine::recovery::persist_unproven(
        &fs,
        dir.path(),
        &scan,
    ))
    .expect_err("a changed frame is not written back");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    assert!(
        error.to_string().contains("changed since the scan"),
        "{error}"
    );
}

#[test]
fn the_write_back_groups_frames_into_writes_of_at_most_a_mebibyte() {
    // `persist::CHUNK_BYTES`: memory stays bounded whatever the hidden tail holds, and
    // small frames are not written one call each.
    const CHUNK_BYTES: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let config = LogConfig {
        codec: Codec::None,
        ..LogConfig::default()
    };
    let (log, _) = open(dir.path(), &clock, config.clone());
    let records: Vec<Vec<u8>> = (0..20_000).map(json_record).collect();
    for batch in records.chunks(500) {
        pollster::block_on(log.commit(batch.iter().map(|r| (&b"k"[..], r.as_slice())))).unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    drop(log);
    std::fs::write(dir.path().join("hwm"), 0u64.to_be_bytes()).unwrap();
    let names = segment_files(dir.path());
    assert_eq!(names.len(), 1);
    let end = frames_end(dir.path(), &names[0]);
    assert!(end > 2 * CHUNK_BYTES, "a hidden tail of {end} bytes");
    let frames = pollster::block_on(scan_partition(
        &FailingFs::default(),
        dir.path(),
        ScanDepth::Frames,
    ))
    .unwrap()
    .segments[0]
        .frames
        .clone();
    let frame_max = frames.iter().map(|f| f.frame_len).max().unwrap();
    let (_, fs) = open_failing(dir.path(), config);
    let writes = segment_writes(&fs);
    assert_eq!(writes.iter().map(|w| w.len).sum::<u64>(), end);
    assert!(
        writes.iter().all(|w| w.len <= CHUNK_BYTES.max(frame_max)),
        "{writes:?}"
    );
    assert!(
        writes.len() * 4 < frames.len(),
        "{} writes for {} frames",
        writes.len(),
        frames.len()
    );
}

/// A WAL segment a crashed process created may show in the directory before its entry
/// is durable: the open fsyncs the directory before it writes into the segment it
/// finds empty, or a power loss takes the segment and every acknowledged entry in it
/// (fresh quick 3803037128: a produce acknowledged after such an open was lost).
#[test]
fn a_wal_open_makes_the_segments_it_found_durable_before_writing_into_them() {
    use cafelog_engine::store::Wal;
    let dir = tempfile::tempdir().unwrap();
    let fs = FailingFs::default();
    let wal_dir = dir.path().join("wal");
    // The first open creates an empty segment, as a process killed before its first
    // write leaves it.
    drop(pollster::block_on(Wal::open(fs.clone(), &wal_dir, 1 << 20)).expect("open"));
    fs.dir_ops.lock().unwrap().clear();
    let (wal, _, entries, _) =
        pollster::block_on(Wal::open(fs.clone(), &wal_dir, 1 << 20)).expect("reopen");
    assert!(entries.is_empty());
    assert_eq!(wal.segment_count(), 1, "the empty segment is reused");
    assert_eq!(
        fs.dir_ops.lock().unwrap().as_slice(),
        ["sync_dir"],
        "the directory holding it is fsynced at open"
    );
}
