//! A refusal takes what the refused open could see, nothing gone before it: the world
//! lists it (`HeldAtRefusal`), and `refused` covers a record held in the segments'
//! readable frames or the WAL's live entries then, in a frame a fault damaged (by the
//! identities the world named, else by the offsets the fault reached), or acknowledged
//! at or past the bad region, and no other.

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;
use cafelog_sim::check::explain::{Answer, explain, subjects};

/// ids 1..=3 acknowledged at 0..3 of orders/0; a flip at 2 below the HWM, whose
/// damage the world named as the copies `damaged` ((id, offset)) when given; a power
/// loss, and the open refuses the partition at 2, with the world's listing `held` when
/// given: (log ids, WAL ids).
fn refused_at_2(held: Option<(Vec<u64>, Vec<u64>)>, damaged: Option<&[(ProduceId, u64)]>) -> Run {
    refused_at_2_reached(held, damaged, &[], None, true)
}

/// [`refused_at_2`], with a misdirected write of the frame at 5 before the flip, in
/// which the world named the copies `reached` (a replay may put a record there); with
/// `reopened_at`, a process crash after it and an open that came up with that HWM;
/// the crash before the refusing open a power loss, or a process crash.
fn refused_at_2_reached(
    held: Option<(Vec<u64>, Vec<u64>)>,
    damaged: Option<&[(ProduceId, u64)]>,
    reached: &[HeldCopy],
    reopened_at: Option<u64>,
    power_loss: bool,
) -> Run {
    let mut r = Run::new();
    let damaged: Option<Vec<HeldCopy>> = damaged.map(|d| {
        d.iter()
            .map(|&(id, offset)| HeldCopy {
                offset,
                id,
                committed_at_ms: 1_000 + offset,
            })
            .collect()
    });
    r.produced(3).hwm(0, 3, 3, 3);
    if !reached.is_empty() {
        let part = OffsetRange { start: 5, end: 6 };
        r.fault(misdirected_segment(part), Some(0)).with(|t, h| {
            let fault = h.len() - 1;
            h.reach_held(t, fault, &tp(0), reached.to_vec());
        });
    }
    if let Some(hwm) = reopened_at {
        r.process_crash(&[(0, 3, 3, 3)])
            .restart()
            .opened(0, hwm, 6)
            .with(|t, h| {
                h.frontier_observed(t, &tp(0), 0);
            });
    }
    r.fault(
        segment_flip(OffsetRange { start: 2, end: 3 }, Some(true)),
        Some(0),
    )
    .with(|t, h| {
        let fault = h.len() - 1;
        if let Some(damaged) = damaged {
            h.damage_held(t, fault, &tp(0), damaged);
        }
    });
    crash_and_refuse_at_2(&mut r, power_loss, held);
    r
}

/// A crash (a power loss, or a process crash), and the open refuses orders/0 at 2, with
/// the world's listing `held` when given: (log ids, WAL ids).
fn crash_and_refuse_at_2(r: &mut Run, power_loss: bool, held: Option<(Vec<u64>, Vec<u64>)>) {
    if power_loss {
        r.crash(&[(0, 3, 3, 3)]);
    } else {
        r.process_crash(&[(0, 3, 3, 3)]);
    }
    r.restart()
        .disk(0, OpenRule::Refuse, 3, 2, Some(2))
        .alarm(Some(0), refused_alarm(200))
        .with(|t, h| {
            if let Some((log, wal)) = held {
                h.held_at_refusal(t, &tp(0), Some(2), log, wal);
            }
            h.partition_refused(t, &tp(0), "crc mismatch in 00000000000000000000.log at 200");
        });
}

fn refused(report: &CheckReport, id: ProduceId) -> bool {
    report.no_lost_ack.excuse_of(id).map(|e| e.kind) == Some(ExcuseKind::Refused)
}

#[test]
fn a_refusal_excuses_what_the_open_could_see() {
    for held in [None, Some((vec![1, 2], vec![])), Some((vec![1], vec![2]))] {
        let report = refused_at_2(held.clone(), Some(&[(3, 2)])).report();
        assert_clean(&report);
        for id in 1..=3 {
            assert!(refused(&report, id), "{held:?}: id {id}");
        }
    }
}

#[test]
fn a_refusal_does_not_excuse_a_record_gone_before_it() {
    // id 2, acknowledged at 1 below the bad region, is in neither the segments nor the
    // WAL the refused open could see: something before the refusal lost it.
    let run = refused_at_2(Some((vec![1], vec![])), Some(&[(3, 2)]));
    let report = run.report();
    assert_mentions(
        &fires_only(&report, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    assert!(refused(&report, 1) && refused(&report, 3));
    // `--explain` shows the refusal found and set aside, as the verdict did.
    let subjects = subjects(&report);
    let lost = subjects
        .iter()
        .find(|s| s.id == Some(2))
        .expect("id 2 is named");
    let e = explain(&run.h, lost);
    let row = e
        .rows
        .iter()
        .find(|r| r.name == "refused")
        .expect("a refused row");
    assert!(
        matches!(&row.answer, Answer::Rejected(found) if !found.is_empty()),
        "{}",
        e.render()
    );
}

#[test]
fn a_refusal_takes_what_a_fault_damaged_by_identity_else_by_offset() {
    // A replay had moved id 2 (acknowledged at 1) into the frame at 2, which the flip
    // damaged: the world named it there.
    let report = refused_at_2(Some((vec![1], vec![])), Some(&[(2, 2)])).report();
    assert!(refused(&report, 2));
    // Unnamed, the damage holds whatever lay at the offsets the flip reached: id 3,
    // acknowledged at 2, and not id 2, acknowledged at 1.
    let report = refused_at_2(Some((vec![1], vec![])), None).report();
    assert!(refused(&report, 3));
    assert!(!refused(&report, 2));
    // Named, the damage holds what it names, and id 2 is not named: held nowhere below
    // the bad region, it was gone before the refusal.
    let report = refused_at_2(Some((vec![1], vec![])), Some(&[(3, 2)])).report();
    assert!(!refused(&report, 2));
    // At or past the bad region the hunt's reading is not trusted: id 3, acknowledged
    // at 2, is the refusal's though no listing or damage names it.
    let report = refused_at_2(Some((vec![1], vec![])), Some(&[(2, 2)])).report();
    assert!(refused(&report, 3));
}

#[test]
fn a_refusal_a_later_open_got_past_excuses_nothing() {
    // The open after the next power loss found the partition whole and opened it: the
    // refused open changed nothing on disk, so ids 1..=3, never delivered, are that
    // open's to keep.
    let mut run = refused_at_2(None, None);
    run.crash(&[(0, 3, 3, 3)]).restart().open_clean(0, 3, 3);
    let report = run.report();
    assert_mentions(
        &messages_of(&report, CheckerName::NoLostAck),
        &["id 1 at offset 0"],
    );
    assert!(!refused(&report, 1) && !refused(&report, 2));
    // Refused again at every open after it, the partition never came back: the first
    // refusal stands.
    let mut run = refused_at_2(None, None);
    run.crash(&[(0, 3, 3, 3)])
        .restart()
        .disk(0, OpenRule::Refuse, 3, 2, Some(2))
        .alarm(Some(0), refused_alarm(200));
    let report = run.report();
    assert_clean(&report);
    assert!((1..=3).all(|id| refused(&report, id)));
}

#[test]
fn a_refused_topic_opened_again_later_excuses_nothing() {
    let run = |reopened: bool| {
        let mut r = Run::new();
        r.produced(1)
            .crash(&[(0, 1, 1, 1)])
            .misdirected_store_file("/data/topics/orders/topic.conf");
        r.restart().alarm(
            None,
            Alarm::TopicRefused {
                topic: "orders".into(),
            },
        );
        if reopened {
            r.crash(&[(0, 1, 1, 1)]).restart().open_clean(0, 1, 1);
        }
        r.report()
    };
    assert!(refused(&run(false), 1));
    let report = run(true);
    assert!(!refused(&report, 1));
    assert_mentions(
        &messages_of(&report, CheckerName::NoLostAck),
        &["id 1 at offset 0"],
    );
}

#[test]
fn a_refusal_takes_a_copy_an_out_of_contract_fault_reached_by_identity() {
    // Fresh quick 3912002895: a replay had moved ids 87-93 above their acknowledged
    // offsets, into the frame a misdirected write was meant for, and the refusal came
    // at that frame. Here id 2 (acknowledged at 1, listed nowhere) had its copy at 5.
    let report =
        refused_at_2_reached(Some((vec![1], vec![])), None, &[held(5, 2)], None, true).report();
    assert!(refused(&report, 2));
    // An open after a process crash came up with its HWM at 5 and wrote the frame
    // there back from the page cache: the copy was whole again before the refusal.
    let report =
        refused_at_2_reached(Some((vec![1], vec![])), None, &[held(5, 2)], Some(5), true).report();
    assert!(!refused(&report, 2));
    // An HWM above it leaves the damaged frame where it was.
    let report =
        refused_at_2_reached(Some((vec![1], vec![])), None, &[held(5, 2)], Some(6), true).report();
    assert!(refused(&report, 2));
    // With no power loss between the fault and the refusal, the page cache still
    // served the frame the engine wrote: the fault took no copy (helper-67).
    let report =
        refused_at_2_reached(Some((vec![1], vec![])), None, &[held(5, 2)], None, false).report();
    assert!(!refused(&report, 2));
    // A copy of another record there says nothing of id 2.
    let report =
        refused_at_2_reached(Some((vec![1], vec![])), None, &[held(5, 3)], None, true).report();
    assert!(!refused(&report, 2));
    assert_mentions(
        &messages_of(&report, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

/// helper-66 #5: a copy a fault reached that was already a stale hidden duplicate. Ids
/// 1-3 at 0-2 (id 2 acked at 1); a flip at 0 and a power loss; the open cuts at 0 (R2
/// above P 0) and its replay puts ids 1, 3, 2 at 0, 1, 2 (WAL order); a process crash
/// hides 0-3 (P 0); the next open's replay commits them again at 3-5 (id 2 at 5), HWM
/// persisted 6; a misdirected write lands on the stale copy at 2 (named, with
/// `named`); a power loss; the open refuses at 2. Id 2's live copy at 5 is gone
/// (engine bug) and not listed: the fault destroyed only a copy the record had left.
fn stale_named(named: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 0, 3)
        .fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(false)),
            Some(0),
        )
        .crash(&[(0, 0, 3, 3)])
        .restart()
        .disk(0, OpenRule::Hole, 0, 0, Some(0))
        .alarm(Some(0), super::loss::hole_at(0))
        .opened(0, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 3, 0, 3)
        .process_crash(&[(0, 0, 3, 3)])
        .restart()
        .disk(0, OpenRule::Clean, 0, 3, None)
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 0, 3, vec![held(0, 1), held(1, 3), held(2, 2)]);
        })
        .opened(0, 0, 3)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .hwm(0, 6, 6, 6)
        .fault(
            misdirected_segment(OffsetRange { start: 2, end: 3 }),
            Some(0),
        )
        .with(|t, h| {
            let fault = h.len() - 1;
            if named {
                h.reach_held(t, fault, &tp(0), vec![held(2, 2)]);
            }
        })
        .crash(&[(0, 6, 2, 6)])
        .restart()
        .disk(0, OpenRule::Refuse, 6, 2, Some(2))
        .alarm(Some(0), refused_alarm(200))
        .with(|t, h| {
            h.held_at_refusal(t, &tp(0), Some(2), vec![1, 3], vec![]);
        })
        .with(|t, h| {
            h.partition_refused(t, &tp(0), "corrupt at 2");
        });
    r
}

#[test]
fn a_refusal_does_not_take_a_stale_hidden_copy_a_fault_reached() {
    assert!(!refused(&stale_named(false).report(), 2));
    assert!(
        !refused(&stale_named(true).report(), 2),
        "the copy at 2 was hidden and committed again at 5 before the fault"
    );
}

/// helper-108: a flip the page cache did not take is the platter's only; a refusal
/// after a process crash read the cache, so the copy the flip's damage named (id 2,
/// moved into the frame at 2) is not the refusal's unless a power loss came between.
#[test]
fn a_refusal_takes_no_copy_a_flip_the_cache_missed_named_before_a_process_crash() {
    for (missed, power_loss) in [(false, false), (true, false), (true, true)] {
        let mut r = Run::new();
        r.produced(3).hwm(0, 3, 3, 3).with(|t, h| {
            let flip = segment_flip(OffsetRange { start: 2, end: 3 }, Some(true));
            h.fault(t, flip, Some(&tp(0)), None);
            let fault = h.len() - 1;
            let copy = HeldCopy {
                offset: 2,
                id: 2,
                committed_at_ms: 1_002,
            };
            h.damage_held(t, fault, &tp(0), vec![copy]);
            if missed {
                h.flip_missed_cache(t, fault);
            }
        });
        crash_and_refuse_at_2(&mut r, power_loss, Some((vec![1], vec![])));
        assert_eq!(
            refused(&r.report(), 2),
            !missed || power_loss,
            "missed {missed}, power loss {power_loss}"
        );
    }
}
