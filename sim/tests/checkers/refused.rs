//! A refusal takes what the refused open could see, nothing gone before it: the world
//! lists it (`HeldAtRefusal`), and `refused` covers a record held in the segments or
//! the WAL then, or one at or past the bad region, and no other.

use super::*;
use cafelog_sim::check::excuse::ExcuseKind;
use cafelog_sim::check::explain::{Answer, explain, subjects};

/// ids 1..=3 acknowledged at 0..3 of orders/0; a flip at 2 below the HWM; a power loss,
/// and the open refuses the partition at 2, with the world's listing `held` when given:
/// (log ids, WAL ids).
fn refused_at_2(held: Option<(Vec<u64>, Vec<u64>)>) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 3, 3)
        .fault(
            segment_flip(OffsetRange { start: 2, end: 3 }, Some(true)),
            Some(0),
        )
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .disk(0, OpenRule::Refuse, 3, 2, Some(2))
        .alarm(
            Some(0),
            Alarm::Refused {
                segment: "00000000000000000000.log".into(),
                position: 200,
            },
        )
        .with(|t, h| {
            if let Some((log, wal)) = held {
                h.held_at_refusal(t, &tp(0), Some(2), log, wal);
            }
            h.partition_refused(t, &tp(0), "crc mismatch in 00000000000000000000.log at 200");
        });
    r
}

fn refused(report: &CheckReport, id: ProduceId) -> bool {
    report.no_lost_ack.excuse_of(id).map(|e| e.kind) == Some(ExcuseKind::Refused)
}

#[test]
fn a_refusal_excuses_what_the_open_could_see() {
    for held in [None, Some((vec![1, 2], vec![])), Some((vec![1], vec![2]))] {
        let report = refused_at_2(held.clone()).report();
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
    let run = refused_at_2(Some((vec![1], vec![])));
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
