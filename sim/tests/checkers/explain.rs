//! `replay --explain` tells a lost record's story from the same facts the checkers
//! read: where its copy went, what destroyed its WAL entry, and each excuse row's
//! answer, including the one that applied when it did.

use super::loss::{WhileOpening, replay_copy_damaged_while_opening};
use super::*;
use cafelog_sim::check::explain::{Answer, Subject, explain, subjects};

fn row<'a>(rows: &'a [cafelog_sim::check::explain::Row], name: &str) -> &'a Answer {
    &rows
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
        .answer
}

#[test]
fn a_lost_record_is_explained_by_its_copies_and_every_row_tried() {
    // The open's cut came before the flip that hit the replay's copy: not excused.
    let run = replay_copy_damaged_while_opening(WhileOpening {
        cut_before_damage: true,
        no_cut_after: true,
        ..WhileOpening::default()
    });
    let report = run.report();
    let named = subjects(&report);
    let lost = named
        .iter()
        .find(|s| s.id == Some(1))
        .expect("the lost record is named");
    assert!(lost.checkers.contains(&CheckerName::NoLostAck), "{lost:?}");
    assert_eq!((lost.tp.clone(), lost.offset), (tp(0), Some(0)));
    let e = explain(&run.h, lost);
    let notes: Vec<&str> = e.story.iter().map(|(_, _, n)| n.as_str()).collect();
    let text = e.render();
    for wanted in [
        "acknowledged at orders/0@0, committed at 1000 ms",
        "the open cut at 0 (R1): the log from 0 is gone, the copy at 0 with it",
        "hidden tail [0, 1) holds a copy at 0",
        "its WAL entry (seq 0) destroyed; the first open to replay the WAL after it is \
         incarnation 2",
    ] {
        assert!(notes.contains(&wanted), "missing {wanted:?} in:\n{text}");
    }
    // The copy was followed: the crash after the first cut knows no copy until the
    // open lists the replay's copy hidden.
    assert!(
        notes
            .iter()
            .any(|n| n.ends_with("no copy known in the log")),
        "{text}"
    );
    assert!(
        matches!(row(&e.rows, "refused"), Answer::Lacks(w) if w.contains("no refusal")),
        "{text}"
    );
    match row(&e.rows, "both_copies_damaged (a listed copy)") {
        Answer::Rejected(found) => {
            assert!(
                found.len() >= 2,
                "the WAL damage and a listed copy's damage: {text}"
            )
        }
        _ => panic!("the listed row found its events and said no:\n{text}"),
    }
}

#[test]
fn an_excused_record_asked_for_shows_the_row_that_applied() {
    let run = replay_copy_damaged_while_opening(WhileOpening::default());
    let report = run.report();
    assert!(
        subjects(&report).iter().all(|s| s.id != Some(1)),
        "excused, so no violation names it"
    );
    let asked = Subject {
        checkers: vec![CheckerName::NoLostAck],
        tp: tp(0),
        id: Some(1),
        offset: Some(0),
    };
    let e = explain(&run.h, &asked);
    match row(&e.rows, "both_copies_damaged (a listed copy)") {
        Answer::Applies(x) => assert!(x.covers.contains("last log copy, at offset 0"), "{x}"),
        _ => panic!("expected the listed row to apply:\n{}", e.render()),
    }
    assert!(
        e.render().contains("applies: both_copies_damaged"),
        "{}",
        e.render()
    );
}
