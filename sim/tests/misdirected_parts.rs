//! What the world records of a misdirected segment write: the frames it landed on and
//! the frames it was meant to write, as parts of their own. Every excuse row reads a
//! reach's offsets as touched, so a part wider than the frames the write changed (the
//! hull of the two, which spans untouched frames between them) excuses losses the
//! fault could not cause. Held to the disk itself: the frames whose durable bytes
//! differ from the page cache's.

use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{Log, LogConfig};
use cafelog_sim::fs::{FaultOptions, SimFs};
use cafelog_sim::history::{EventKind, FaultKind, FileKind, OffsetRange};
use cafelog_sim::world::damage::segment_headers;
use cafelog_sim::world::recorder::Shared;
use std::collections::BTreeSet;
use std::path::Path;

const DIR: &str = "/data/topics/t/p00000";
const SEGMENT: &str = "/data/topics/t/p00000/00000000000000000000.log";

/// The offsets of the frames of `visible` (the page cache, the engine's bytes) whose
/// bytes the durable image does not hold.
fn differing_frames(visible: &[u8], durable: &[u8]) -> BTreeSet<u64> {
    segment_headers(visible, 0, 0)
        .filter(|(at, header)| {
            let frame = *at as usize..(*at + header.frame_len()) as usize;
            durable.get(frame.clone()) != Some(&visible[frame])
        })
        .flat_map(|(_, header)| header.base_offset..header.end_offset())
        .collect()
}

/// 40 records of one frame each committed, then one more whose write the disk sends
/// astray (up to 8 sectors either way); returns the segment fault the world recorded
/// (`None` when the disk misdirected another file's write) and the frames that differ.
fn misdirect_one(seed: u64) -> Option<(FaultKind, BTreeSet<u64>)> {
    let fs = SimFs::new(seed, FaultOptions::none()).expect("options");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(async move {
        let config = LogConfig {
            codec: Codec::None,
            ..LogConfig::default()
        };
        let (log, _) = Log::open(fs.clone(), ManualClock::new(0), DIR, config)
            .await
            .expect("open");
        let body = [b'a'; 100];
        for _ in 0..40 {
            log.commit([(&b"k"[..], &body[..])]).await.expect("commit");
        }
        let rec = Shared::new(fs.clone());
        let mut options = FaultOptions::none();
        options.misdirect_probability = 1.0;
        options.misdirect_max = 1;
        options.misdirect_shift_sectors_max = 8;
        fs.set_options(options).expect("options");
        log.commit([(&b"k"[..], &body[..])]).await.expect("commit");
        rec.lock().drain_fs();
        let kind = rec
            .lock()
            .history
            .events()
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Fault {
                    kind:
                        kind @ FaultKind::Misdirected {
                            file: FileKind::Segment,
                            ..
                        },
                    ..
                } => Some(kind.clone()),
                _ => None,
            })?;
        let path = Path::new(SEGMENT);
        let visible = fs.visible_bytes(path).expect("segment");
        let durable = fs.durable_bytes(path).unwrap_or_default();
        Some((kind, differing_frames(&visible, &durable)))
    })
}

#[test]
fn a_misdirected_segment_write_is_recorded_as_the_frames_it_changed() {
    let (mut seen, mut split, mut hull_wider) = (0, 0, 0);
    for seed in 1..60 {
        let Some((kind, differing)) = misdirect_one(seed) else {
            continue;
        };
        seen += 1;
        let FaultKind::Misdirected { offsets, parts, .. } = kind else {
            unreachable!()
        };
        let parts = parts.unwrap_or_else(|| panic!("seed {seed}: no parts recorded"));
        let named: BTreeSet<u64> = parts.iter().flat_map(|p| p.start..p.end).collect();
        assert_eq!(
            named, differing,
            "seed {seed}: parts {parts:?}, frames changed {differing:?}"
        );
        let hull = offsets.expect("a write that changed frames has a hull");
        let in_hull: BTreeSet<u64> = (hull.start..hull.end).collect();
        assert!(in_hull.is_superset(&named), "seed {seed}: hull {hull:?}");
        split += usize::from(parts.len() == 2);
        hull_wider += usize::from(in_hull.len() > named.len());
        assert!(parts.iter().all(|p: &OffsetRange| p.start < p.end));
    }
    assert!(seen >= 20, "{seen} misdirected segment writes");
    assert!(split >= 5, "{split} landed on other frames");
    assert!(
        hull_wider >= 3,
        "{hull_wider} hulls spanned untouched frames"
    );
}
