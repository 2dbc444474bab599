//! What the world records of a lost segment fsync: the frames whose bytes that fsync
//! dropped, not every frame whose platter bytes differ from the page cache. A second
//! lost fsync on a segment that already has a hole must not take the first one's
//! frames into its reach (helper-66 #6b): every excuse row reads a reach as touched,
//! so an older hole (or an in-contract flip at rest) would pass as this fault's doing.

use cafelog_sim::fs::FaultOptions;
use cafelog_sim::history::{EventKind, FaultKind, FileKind, OffsetRange, encode_payload};
use cafelog_sim::world::recorder::Shared;
use std::collections::BTreeSet;

mod common;
use common::{SEGMENT, with_raw_log};

/// Each lost segment fsync's recorded offsets and the copies named with it, in order.
type Recorded = Vec<(Option<OffsetRange>, BTreeSet<(u64, u64)>)>;

/// 40 records committed one per frame; then commits of offsets 40, 41 and 42 with the
/// fsync of 40 and of 42 lost (the disk drops their pending writes and says they are
/// durable), 41's kept.
fn two_lost_fsyncs(seed: u64) -> Recorded {
    with_raw_log(seed, |fs, log| async move {
        // The record at offset `o` carries produce id `o + 1`.
        let payloads: Vec<Vec<u8>> = (0..43u64)
            .map(|o| encode_payload(o + 1, &[b'a'; 100]))
            .collect();
        let one = |o: usize| [(&b"k"[..], &payloads[o][..])];
        for o in 0..40 {
            log.commit(one(o)).await.expect("commit");
        }
        let rec = Shared::new(fs.clone());
        // The disk counts its faults over its life: the cap is the running total.
        let lose_next_fsync = |total: u32| {
            let mut o = FaultOptions::none();
            o.lost_fsync_probability = 1.0;
            o.lost_fsync_max = total;
            o.fsync_fault_path = Some(SEGMENT.into());
            fs.set_options(o).expect("options");
        };
        lose_next_fsync(1);
        log.commit(one(40)).await.expect("commit 40");
        rec.lock().drain_fs();
        fs.set_options(FaultOptions::none()).expect("options");
        log.commit(one(41)).await.expect("commit 41");
        lose_next_fsync(2);
        log.commit(one(42)).await.expect("commit 42");
        rec.lock().drain_fs();
        let events = rec.lock().history.events().to_vec();
        events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.kind {
                EventKind::Fault {
                    kind:
                        FaultKind::LostFsync {
                            file: FileKind::Segment,
                            offsets,
                        },
                    ..
                } => {
                    let named = match events.get(i + 1).map(|e| &e.kind) {
                        Some(EventKind::ReachHeld {
                            fault_index, held, ..
                        }) if *fault_index == i => held.iter().map(|c| (c.offset, c.id)).collect(),
                        _ => BTreeSet::new(),
                    };
                    Some((*offsets, named))
                }
                _ => None,
            })
            .collect()
    })
}

#[test]
fn a_lost_fsync_reaches_only_the_frames_it_dropped() {
    for seed in 1..6 {
        let recorded = two_lost_fsyncs(seed);
        assert_eq!(recorded.len(), 2, "seed {seed}: {recorded:?}");
        assert_eq!(
            recorded[0],
            (
                Some(OffsetRange { start: 40, end: 41 }),
                BTreeSet::from([(40, 41)])
            ),
            "seed {seed}: the first lost fsync"
        );
        // The hole at 40 is still on the platter, but it is the first fault's.
        assert_eq!(
            recorded[1],
            (
                Some(OffsetRange { start: 42, end: 43 }),
                BTreeSet::from([(42, 43)])
            ),
            "seed {seed}: the second lost fsync"
        );
    }
}
