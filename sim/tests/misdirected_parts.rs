//! What the world records of a misdirected segment write: the frames it landed on and
//! the frames it was meant to write, as parts of their own. Every excuse row reads a
//! reach's offsets as touched, so a part wider than the frames the write changed (the
//! hull of the two, which spans untouched frames between them) excuses losses the
//! fault could not cause. Held to the disk itself: the frames whose durable bytes
//! differ from the page cache's.

use cafelog_sim::fs::FaultOptions;
use cafelog_sim::history::{EventKind, FaultKind, FileKind, OffsetRange, encode_payload};
use cafelog_sim::world::damage::segment_headers;
use cafelog_sim::world::recorder::Shared;
use std::collections::BTreeSet;
use std::path::Path;

mod common;
use common::{SEGMENT, with_raw_log};

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

/// What the world recorded of a misdirected segment write, and the disk after it.
struct Misdirected {
    kind: FaultKind,
    /// The frames whose durable bytes differ from the page cache's.
    differing: BTreeSet<u64>,
    /// Whether the write changed the durable bytes of the frame at 41.
    changed_41: bool,
    /// The copies the world named in its reach (`ReachHeld`): (offset, id).
    named: BTreeSet<(u64, u64)>,
    /// The same for the lost fsync that made the hole, when there is one.
    hole_named: BTreeSet<(u64, u64)>,
}

/// The copies the `ReachHeld` right after the first fault `is_it` picks names.
fn named_after(
    events: &[cafelog_sim::history::Event],
    is_it: impl Fn(&FaultKind) -> bool,
) -> BTreeSet<(u64, u64)> {
    let Some(fault) = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::Fault { kind, .. } if is_it(kind)))
    else {
        return BTreeSet::new();
    };
    match events.get(fault + 1).map(|e| &e.kind) {
        Some(EventKind::ReachHeld {
            fault_index, held, ..
        }) if *fault_index == fault => held.iter().map(|c| (c.offset, c.id)).collect(),
        _ => BTreeSet::new(),
    }
}

fn options(f: impl FnOnce(&mut FaultOptions)) -> FaultOptions {
    let mut options = FaultOptions::none();
    f(&mut options);
    options
}

/// 40 records of one frame each committed; with `hole`, one more whose fsync the disk
/// loses (a hole on the platter at 40) and one fsynced past it (41); then a batch of
/// `batch` records whose write the disk sends astray (up to 8 sectors either way).
/// Returns `None` when the disk misdirected another file's write.
fn misdirect(seed: u64, hole: bool, batch: usize) -> Option<Misdirected> {
    with_raw_log(seed, |fs, log| async move {
        // The record at offset `o` carries produce id `o + 1`.
        let payloads: Vec<Vec<u8>> = (0..42 + batch as u64)
            .map(|o| encode_payload(o + 1, &[b'a'; 100]))
            .collect();
        let one = |o: usize| [(&b"k"[..], &payloads[o][..])];
        for o in 0..40 {
            log.commit(one(o)).await.expect("commit");
        }
        let rec = Shared::new(fs.clone());
        let path = Path::new(SEGMENT);
        if hole {
            fs.set_options(options(|o| {
                o.lost_fsync_probability = 1.0;
                o.lost_fsync_max = 1;
                o.fsync_fault_path = Some(SEGMENT.into());
            }))
            .expect("options");
            log.commit(one(40)).await.expect("commit 40");
            fs.set_options(FaultOptions::none()).expect("options");
            log.commit(one(41)).await.expect("commit 41");
            rec.lock().drain_fs();
        }
        let before = fs.durable_bytes(path).unwrap_or_default();
        fs.set_options(options(|o| {
            o.misdirect_probability = 1.0;
            o.misdirect_max = 1;
            o.misdirect_shift_sectors_max = 8;
        }))
        .expect("options");
        let first = if hole { 42 } else { 40 };
        log.commit((first..first + batch).map(|o| one(o)[0]))
            .await
            .expect("commit");
        rec.lock().drain_fs();
        let events = rec.lock().history.events().to_vec();
        let named = named_after(&events, |k| {
            matches!(
                k,
                FaultKind::Misdirected {
                    file: FileKind::Segment,
                    ..
                }
            )
        });
        let hole_named = named_after(&events, |k| {
            matches!(
                k,
                FaultKind::LostFsync {
                    file: FileKind::Segment,
                    ..
                }
            )
        });
        let kind = events.iter().find_map(|e| match &e.kind {
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
        let visible = fs.visible_bytes(path).expect("segment");
        let durable = fs.durable_bytes(path).unwrap_or_default();
        let at_41 = segment_headers(&visible, 0, 0)
            .find(|(_, h)| h.base_offset == 41)
            .map(|(at, h)| at as usize..(at + h.frame_len()) as usize);
        let changed_41 = at_41.is_some_and(|r| before.get(r.clone()) != durable.get(r));
        Some(Misdirected {
            kind,
            differing: differing_frames(&visible, &durable),
            changed_41,
            named,
            hole_named,
        })
    })
}

#[test]
fn a_misdirected_segment_write_is_recorded_as_the_frames_it_changed() {
    let (mut seen, mut split, mut hull_wider) = (0, 0, 0);
    for seed in 1..60 {
        let Some(Misdirected {
            kind,
            differing,
            named: copies,
            ..
        }) = misdirect(seed, false, 1)
        else {
            continue;
        };
        seen += 1;
        // By identity: the record of each frame it changed, whether it landed there
        // (the platter's copy) or was meant for it (the cache's).
        let expected: BTreeSet<(u64, u64)> = differing.iter().map(|&o| (o, o + 1)).collect();
        assert_eq!(copies, expected, "seed {seed}: copies named");
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

/// helper-59: bytes that land on a frame the walk from byte 0 reaches and on one past a
/// hole were recorded as a part naming the first only. A part is known only when the
/// walk saw every frame the bytes touched; otherwise the hull stands.
#[test]
fn a_misdirected_write_over_a_frame_past_a_hole_keeps_its_hull() {
    let mut past_hole = 0;
    for seed in 1..25 {
        let Some(Misdirected {
            kind,
            changed_41,
            hole_named,
            ..
        }) = misdirect(seed, true, 40)
        else {
            continue;
        };
        // The lost fsync left offset 40's frame (id 41) undurable.
        assert_eq!(hole_named, BTreeSet::from([(40, 41)]), "seed {seed}");
        let FaultKind::Misdirected { offsets, parts, .. } = kind else {
            unreachable!()
        };
        if !changed_41 {
            continue;
        }
        past_hole += 1;
        let reached = match &parts {
            Some(parts) => parts.iter().any(|p| p.contains(41)),
            None => offsets.is_some_and(|o| o.contains(41)),
        };
        assert!(reached, "seed {seed}: hull {offsets:?}, parts {parts:?}");
    }
    assert!(past_hole >= 5, "{past_hole} writes landed past the hole");
}
