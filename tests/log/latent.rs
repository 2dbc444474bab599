//! Reads the disk fails (EIO from a latent sector error, persistent until the sector is
//! written again) and short reads: recovery judges an unreadable frame like a corrupt
//! one (R3 below the persisted HWM, a cut above it), never as the end of the log, and a
//! read at consume time skips and counts it. Nothing wrong is ever returned.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{Log, LogConfig, LogError, OpenReport};
use cafelog_engine::recovery::TruncationRule;
use std::path::Path;

const SEGMENT: &str = "00000000000000000000.log";

fn config() -> LogConfig {
    LogConfig {
        codec: Codec::None,
        frame_cache_frames: 1,
        ..LogConfig::default()
    }
}

/// Records per test log: one frame each, all of one size.
const FRAMES: u64 = 8;

/// [`FRAMES`] records of 1,000 bytes, one frame each, committed and closed (persisted
/// HWM [`FRAMES`]); returns the frame length.
fn log_of_frames(dir: &Path) -> u64 {
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir, &clock, config());
    for i in 0..FRAMES {
        pollster::block_on(log.commit([(&b"k"[..], &record(i)[..])])).unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    let end = frames_end(dir, SEGMENT);
    assert_eq!(end % FRAMES, 0, "frames of one size");
    end / FRAMES
}

fn record(i: u64) -> Vec<u8> {
    vec![b'a' + i as u8; 1_000]
}

/// The frames (by offset) a read error at byte `at` makes unreadable: every frame
/// sharing a byte with its 512-byte sector.
fn hit(at: u64, frame: u64) -> std::ops::Range<u64> {
    let sector = at / 512 * 512;
    sector / frame..((sector + 511) / frame + 1).min(FRAMES)
}

fn open_on(
    fs: &FailingFs,
    dir: &Path,
) -> Result<(Log<FailingFs, ManualClock>, OpenReport), LogError> {
    let clock = ManualClock::new(WALL_START_MS);
    pollster::block_on(Log::open(fs.clone(), clock, dir, config()))
}

/// A [`FailingFs`] on which byte `at` of the segment cannot be read.
fn unreadable_at(at: u64) -> FailingFs {
    let fs = FailingFs::default();
    *fs.unreadable.lock().unwrap() = Some((SEGMENT.into(), at..at + 1));
    fs
}

#[test]
fn an_unreadable_frame_below_the_persisted_hwm_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let frame = log_of_frames(dir.path());
    let at = 3 * frame + 600;
    let before = std::fs::read(dir.path().join(SEGMENT)).unwrap();
    let err = open_on(&unreadable_at(at), dir.path())
        .err()
        .expect("refused");
    let LogError::Corruption(c) = &err else {
        panic!("expected a refusal (R3), got {err}");
    };
    assert!(c.reason.contains("unreadable (EIO)"), "{}", c.reason);
    assert_eq!(c.position, hit(at, frame).start * frame);
    assert_eq!(
        std::fs::read(dir.path().join(SEGMENT)).unwrap(),
        before,
        "nothing was truncated"
    );
}

#[test]
fn an_unreadable_frame_above_the_persisted_hwm_is_cut_not_an_open_error() {
    // Valid frames after the unreadable ones: a hole above the HWM (R2); none: a torn
    // tail (R1). Either way the log ends where the unreadable bytes begin.
    for (at_frame, rule) in [
        (2, TruncationRule::HoleAboveHwm),
        (FRAMES - 1, TruncationRule::TornTail),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let frame = log_of_frames(dir.path());
        std::fs::write(dir.path().join("hwm"), 1u64.to_be_bytes()).unwrap();
        let at = at_frame * frame + frame / 2;
        let (log, report) = open_on(&unreadable_at(at), dir.path()).expect("open");
        assert_eq!(
            report.truncation.map(|t| t.0),
            Some(rule),
            "frame {at_frame}"
        );
        assert_eq!(log.status().next_offset, hit(at, frame).start);
    }
}

#[test]
fn a_frame_unreadable_after_open_is_skipped_and_counted_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let frame = log_of_frames(dir.path());
    let fs = FailingFs::default();
    let (log, _) = open_on(&fs, dir.path()).expect("open");
    let at = 4 * frame + 10;
    *fs.unreadable.lock().unwrap() = Some((SEGMENT.into(), at..at + 1));
    let batch = pollster::block_on(log.read(0, 100)).unwrap();
    let lost: Vec<u64> = (4..5).collect();
    assert_eq!(
        batch.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..FRAMES)
            .filter(|o| !lost.contains(o))
            .collect::<Vec<_>>()
    );
    assert_eq!(batch.skipped, lost);
    assert_eq!(log.metrics().snapshot().records_skipped, 1);
    for r in &batch.records {
        assert_eq!(r.payload, record(r.offset));
    }
}

#[test]
fn short_reads_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    log_of_frames(dir.path());
    let fs = FailingFs::default();
    fs.short_reads
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let (log, report) = open_on(&fs, dir.path()).expect("open");
    assert_eq!((report.hwm, report.truncation), (FRAMES, None));
    let batch = pollster::block_on(log.read(0, 100)).unwrap();
    assert_eq!(batch.records.len() as u64, FRAMES);
    for r in &batch.records {
        assert_eq!(r.payload, record(r.offset));
    }
}

#[test]
fn an_unreadable_sector_takes_every_frame_it_touches() {
    // The failing byte lies just past frame 3's start, and its 512-byte sector begins
    // inside frame 2: a disk fails the whole sector, so frame 2 is unreadable too, and
    // the cut (above the persisted HWM) comes at frame 2, not 3.
    let dir = tempfile::tempdir().unwrap();
    let frame = log_of_frames(dir.path());
    std::fs::write(dir.path().join("hwm"), 1u64.to_be_bytes()).unwrap();
    let at = 3 * frame + 10;
    assert_eq!(hit(at, frame), 2..4, "the sector straddles frames 2 and 3");
    let (log, _) = open_on(&unreadable_at(at), dir.path()).expect("open");
    assert_eq!(log.status().next_offset, 2);
}

#[test]
fn a_bad_sector_is_found_by_bisection_in_logarithmic_reads() {
    // The reader splits a failed read at sector boundaries, halving each time: about
    // 2 log2(window / 512) failed reads, not one per sector of the window.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir.path(), &clock, config());
    for i in 0..64u64 {
        pollster::block_on(log.commit([(&b"k"[..], &vec![b'a' + (i % 26) as u8; 8_000][..])]))
            .unwrap();
    }
    pollster::block_on(log.close()).unwrap();
    let end = frames_end(dir.path(), SEGMENT);
    let sectors = end / 512;
    assert!(sectors > 900, "{sectors} sectors");
    let fs = unreadable_at(end / 2);
    let _ = open_on(&fs, dir.path());
    let failed = fs.eio_reads.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        failed <= 2 * 64,
        "{failed} failed reads to find one bad sector among {sectors}"
    );
}
