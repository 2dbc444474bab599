//! `both_copies_damaged` when a killed replay wrote the record again beside its hidden
//! copy: the next open finds two copies hidden, and each must be destroyed in its own
//! right (fresh quick seed 2045469403007234).

use super::loss::{expect_both_copies, wal_damaged_open_cut_at_0};
use super::*;

fn held(offset: u64) -> HeldCopy {
    HeldCopy {
        offset,
        id: 1,
        committed_at_ms: 1_000 + offset,
    }
}

/// Id 1 acknowledged at 0 and hidden by a power loss (persisted HWM 0). The open after
/// replays its WAL entry at 1 and is killed, leaving both copies hidden. At the next
/// power loss a flip destroys the copy at 1 and, with `both_hit`, a latent sector the
/// copy at 0; the open after cuts the log at 0 (R1) and is killed. A flip then destroys
/// the WAL entry, and the open after it completes with the record gone. Without
/// `both_hit` that open cuts at 1 only, and the last finds the copy at 0 hidden.
fn replayed_beside_its_copy(both_hit: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 1, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 1, vec![held(0)]);
        })
        .opened(0, 0, 1)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 1 })
        .crash(&[(0, 0, 2, 0)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 2, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 2, vec![held(0), held(1)]);
        })
        .crash(&[(0, 0, 2, 0)])
        .fault(flip_above_hwm(1), Some(0))
        .with(|t, h| {
            let fault_index = h.len() - 1;
            h.damage_held(t, fault_index, &tp(0), vec![held(1)]);
        });
    if !both_hit {
        // The copy at 0 outlives the cut at 1: the last open finds it hidden, and with
        // the WAL damaged must expose it.
        r.restart()
            .disk(0, OpenRule::TornTail, 0, 1, Some(1))
            .alarm(Some(0), torn_tail(1))
            .opened(0, 0, 1)
            .crash(&[(0, 0, 1, 0)])
            .wal_entry_flipped(0, 1, 4)
            .restart()
            .disk(0, OpenRule::Clean, 0, 1, None)
            .with(|t, h| {
                h.hidden_at_open(t, &tp(0), 0, 1, vec![held(0)]);
            })
            .opened(0, 0, 1)
            .alarm(
                None,
                Alarm::WalDamaged {
                    corrupt_entries: 1,
                    skipped_bytes: 100,
                },
            )
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            });
        return r;
    }
    let latent = FaultKind::LatentSector {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 0, end: 1 }),
        below_hwm: Some(false),
    };
    r.fault(latent, Some(0)).with(|t, h| {
        let fault_index = h.len() - 1;
        h.damage_held(t, fault_index, &tp(0), vec![held(0)]);
    });
    r.restart()
        .disk(0, OpenRule::TornTail, 0, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .opened(0, 0, 0)
        .crash(&[(0, 0, 0, 0)])
        .wal_entry_flipped(0, 1, 4)
        .restart();
    wal_damaged_open_cut_at_0(&mut r);
    r
}

#[test]
fn a_record_replayed_beside_its_hidden_copy_is_lost_only_with_both_frames() {
    expect_both_copies(
        &replayed_beside_its_copy(true).report(),
        1,
        "offset 1 (id 1)",
    );
    // The copy at 0 was not hit: the cut at 0 is the engine's, and the record's loss too.
    assert_mentions(
        &messages_of(
            &replayed_beside_its_copy(false).report(),
            CheckerName::NoLostAck,
        ),
        &["id 1 at offset 0"],
    );
}
