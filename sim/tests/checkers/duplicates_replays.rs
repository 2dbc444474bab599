//! `bounded_duplicates` read by the third to fifth adversaries (helper-46 on 264af53,
//! then helper-47 to helper-51): each history is one an engine bug could make,
//! and each was accepted by the checker of its day.

use super::*;

/// A power loss with persisted HWM `at` and durable tail `tail`; damage at rest takes
/// the frame at `at` (id `id`'s copy), and the next open cuts there (R1) and comes up.
fn taken_and_cut(r: &mut Run, tail: u64, at: u64, id: ProduceId) {
    r.crash(&[(0, at, tail, tail)])
        .fault(
            segment_flip(
                OffsetRange {
                    start: at,
                    end: at + 1,
                },
                Some(false),
            ),
            Some(0),
        )
        .with(|t, h| {
            let f = h.len() - 1;
            h.damage_held(t, f, &tp(0), vec![held(at, id)]);
        })
        .restart()
        .disk(0, OpenRule::TornTail, at, at, Some(at))
        .alarm(Some(0), torn_tail(at))
        .opened(0, at, at);
    r.frontier_seen(0, at);
}

/// A: x (id 1 at 0) delivered; power loss C1 hides nothing. With `skip`, a flip takes
/// x's frame and R1's open skips it; R1 re-commits id 1 at 1 (y, never delivered,
/// persisted HWM lags at 1). Power loss C2 hides [1, 2) (y, listed). R2 re-commits id 1
/// at 2 (z) and, with `twice` (bug), at 3 (z'). Both z, z' lie at/past C2's durable
/// tail, first delivered after C2: R2 wrote both. The skip's row names R1.
fn skip_named_replay_before_a_later_crash(skip: bool, twice: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)]);
    if skip {
        r.fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        );
    }
    r.restart().disk(0, OpenRule::Clean, 1, 1, None);
    if skip {
        r.alarm(Some(0), frame_skipped(0)).counters(0, 0, 1);
    }
    r.opened(0, 1, 1);
    r.frontier_seen(0, 1);
    r.hwm(0, 2, 1, 2)
        .crash(&[(0, 1, 2, 2)])
        .restart()
        .with(|t, h| {
            h.hidden_at_open(t, &tp(0), 1, 2, vec![held(1, 1)]);
        });
    r.open_clean(0, 1, 2);
    r.frontier_seen(0, 1);
    r.hwm(0, 4, 4, 4).deliver(1, 0, 2, 1_000).consume(0, 2);
    if twice {
        r.deliver(1, 0, 3, 1_000).consume(0, 3);
    }
    r
}

#[test]
fn a_skip_row_names_no_replay_a_later_crash_undid() {
    let legit = duplicate_messages(&skip_named_replay_before_a_later_crash(true, false));
    let no_skip = duplicate_messages(&skip_named_replay_before_a_later_crash(false, true));
    let bug = duplicate_messages(&skip_named_replay_before_a_later_crash(true, true));
    assert!(legit.is_empty());
    assert_eq!(no_skip.len(), 1);
    assert_eq!(bug.len(), 1, "R2 committed id 1 at 2 and 3");
}

/// B: the clamp's "wiped" window. x (id 2 at 1) delivered; flips take [0, 2); R1 cuts
/// at 0, clamps 2 -> 0 and re-commits id 2 at 0 (y, not delivered, persisted HWM 0).
/// Power loss C2 hides [0, 1); a flip takes y (damage held lists it); R2 cuts at 0 (the
/// window goes on to R2) and re-commits id 2 at 0 (z) and, with `twice`, at 2 (z').
fn clamp_window_wiped(twice: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 1)
        .crash(&[(0, 2, 2, 2)])
        .fault(
            segment_flip(OffsetRange { start: 0, end: 2 }, Some(true)),
            Some(0),
        )
        .restart()
        .disk(0, OpenRule::TornTail, 2, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(2, 0))
        .counters(0, 2, 0)
        .opened(0, 0, 0);
    r.frontier_seen(0, 0);
    r.hwm(0, 1, 0, 1);
    taken_and_cut(&mut r, 1, 0, 2);
    r.hwm(0, 3, 3, 3).deliver(2, 0, 0, 1_001).consume(0, 0);
    if twice {
        r.deliver(2, 0, 2, 1_001).consume(0, 2);
    }
    r
}

#[test]
fn a_clamp_row_whose_window_was_wiped_names_the_later_replay() {
    let legit = duplicate_messages(&clamp_window_wiped(false));
    let bug = duplicate_messages(&clamp_window_wiped(true));
    assert!(legit.is_empty());
    assert_eq!(
        bug.len(),
        1,
        "R1's copy was wiped; R2 committed id 2 at 0 and 2"
    );
}

/// C: x (id 1 at 0) delivered; crash C0 (no tail), R1 opens. With `skip`, a flip
/// takes x's frame and a read skips it (consume time, R1 up). The engine then writes id
/// 1 again at 2 (y, the bug; id 2 at 1) and delivers it. Power loss C2 hides [1, 3); a
/// flip at 1 (above the persisted HWM) makes R2 cut at 1. The row names R2, which ran
/// after y was delivered.
fn consume_skip_repeat_before_its_crash(skip: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .open_clean(0, 1, 1);
    r.frontier_seen(0, 1);
    if skip {
        r.fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        )
        .alarm(Some(0), frame_skipped(0))
        .counters(0, 0, 1);
    }
    r.produce(2, 0, 1, 1_001)
        .hwm(0, 3, 1, 3)
        .deliver(2, 0, 1, 1_001)
        .deliver(1, 0, 2, 1_000)
        .consume(0, 1)
        .consume(0, 2)
        .crash(&[(0, 1, 3, 3)])
        .fault(
            segment_flip(OffsetRange { start: 1, end: 2 }, Some(false)),
            Some(0),
        )
        .restart()
        .disk(0, OpenRule::TornTail, 1, 1, Some(1))
        .alarm(Some(0), torn_tail(1))
        .opened(0, 1, 1);
    r.frontier_seen(0, 1);
    r
}

#[test]
fn a_consume_time_skip_excuses_no_copy_delivered_before_its_replay() {
    let no_skip = duplicate_messages(&consume_skip_repeat_before_its_crash(false));
    let bug = duplicate_messages(&consume_skip_repeat_before_its_crash(true));
    assert_eq!(no_skip.len(), 1);
    assert_eq!(
        bug.len(),
        1,
        "y was delivered before the crash whose replay the row names"
    );
}

/// D (budgets alone): x (id 1 at 0) delivered; power loss C1 hides [0, 1); R1 completes;
/// power loss C2 finds the log still ending at 1 and hides [0, 1). R2 re-commits id 1 at
/// 1 and, with `twice`, at 2: both at/past C2's durable tail, first delivered after C2.
fn completed_replay_then_crash(twice: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .open_clean(0, 0, 1);
    r.frontier_seen(0, 0);
    r.hwm(0, 1, 0, 1)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .open_clean(0, 0, 1);
    r.frontier_seen(0, 0);
    r.hwm(0, 3, 3, 3).deliver(1, 0, 1, 1_000).consume(0, 1);
    if twice {
        r.deliver(1, 0, 2, 1_000).consume(0, 2);
    }
    r
}

#[test]
fn a_completed_replay_is_not_charged_for_a_copy_written_after_a_later_crash() {
    let legit = duplicate_messages(&completed_replay_then_crash(false));
    let bug = duplicate_messages(&completed_replay_then_crash(true));
    assert!(legit.is_empty());
    assert_eq!(bug.len(), 1);
}

/// E: crash-free; a misdirected segment write of unknown offsets on orders/0, then id
/// 1 delivered at 0..5.
#[test]
fn a_fault_of_unknown_offsets_excuses_one_copy_of_an_id() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000).hwm(0, 5, 5, 5).fault(
        FaultKind::Misdirected {
            file: FileKind::Segment,
            offsets: None,
            below_hwm: None,
            parts: None,
        },
        Some(0),
    );
    for o in 0..5 {
        r.deliver(1, 0, o, 1_000);
    }
    let v = duplicate_messages(&r);
    assert!(v.len() >= 3, "one fault, five copies, no crash");
}

/// A2: A with R1's copy y taken by damage instead of left undelivered: C2 hides [1, 2)
/// (y), a flip above the persisted HWM takes y (damage held lists it), R2 cuts at 1
/// and re-commits id 1 at 1 (z) and, with `twice`, at 2 (z').
fn skip_named_replay_copy_taken(twice: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        )
        .restart()
        .disk(0, OpenRule::Clean, 1, 1, None)
        .alarm(Some(0), frame_skipped(0))
        .counters(0, 0, 1)
        .opened(0, 1, 1);
    r.frontier_seen(0, 1);
    r.hwm(0, 2, 1, 2);
    taken_and_cut(&mut r, 2, 1, 1);
    r.hwm(0, 3, 3, 3).deliver(1, 0, 1, 1_000).consume(0, 1);
    if twice {
        r.deliver(1, 0, 2, 1_000).consume(0, 2);
    }
    r
}

#[test]
fn a_skip_row_names_no_replay_whose_copy_damage_took() {
    let legit = duplicate_messages(&skip_named_replay_copy_taken(false));
    let bug = duplicate_messages(&skip_named_replay_copy_taken(true));
    assert!(legit.is_empty());
    assert_eq!(bug.len(), 1, "R2 committed id 1 at 1 and 2");
}

/// helper-47: ids 1 and 2 at 0 and 1, delivered; a power loss hides [0, 2). The next
/// open begins its replay and, unless `seen_up`, is killed before it completes; a power
/// loss leaves the log through 4, and a flip at 2 makes the next open cut there, so
/// nothing the first replay wrote is left. That open's replay commits id 1 at 2, id 2
/// after it, and with `twice` id 1 again at 3 (the bug).
fn killed_replay_cut(seen_up: bool, twice: bool) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .consume(0, 0)
        .consume(0, 1)
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .open_clean(0, 0, 2)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 2 });
    if seen_up {
        r.frontier_seen(0, 0);
    }
    r.crash(&[(0, 0, 4, 2)])
        .fault(flip_above_hwm(2), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 0, 2, Some(2))
        .alarm(Some(0), torn_tail(2))
        .opened(0, 0, 2)
        .alarm(Some(0), Alarm::ReplayCommitting { records: 2 });
    r.frontier_seen(0, 0);
    if twice {
        r.hwm(0, 5, 5, 5)
            .deliver(1, 0, 2, 1_100)
            .deliver(1, 0, 3, 1_101)
            .deliver(2, 0, 4, 1_102);
    } else {
        r.hwm(0, 4, 4, 4)
            .deliver(1, 0, 2, 1_100)
            .deliver(2, 0, 3, 1_101);
    }
    r
}

#[test]
fn a_killed_replay_whose_writes_a_cut_took_is_not_charged_for_a_later_copy() {
    for seen_up in [false, true] {
        assert!(duplicate_messages(&killed_replay_cut(seen_up, false)).is_empty());
        assert_eq!(
            duplicate_messages(&killed_replay_cut(seen_up, true)).len(),
            1,
            "seen_up {seen_up}: the second open committed id 1 at 2 and 3"
        );
    }
}

/// helper-48, budgets alone: power loss C1 hides [0, 2) (x = id 1 at 0, delivered
/// while the in-memory HWM showed it; id 2 at 1, never delivered): bound 2. Its
/// replay R1 completes and re-commits id 1 at 2 (y, delivered) and id 2 at 3. Power
/// loss C2 finds all of it durable and persisted (persisted HWM 4 = durable tail 4):
/// nothing hidden. With `bug`, the replay R2 commits id 1 again at 4 (z).
///
/// R2 has no reason to: R1's copy y of id 1 survived C2 (below its durable tail, below
/// the persisted HWM), and R2's replay skips an entry with a copy visible up to the
/// HWM (`open.rs` `replay`: `visible_copies`), which y (and x) are; C2 hid nothing.
/// One crash, one replay of its entries: C1's entries were re-committed once, by R1.
/// The checker lets `replay_writing` pass C1's charge for z on to R2 (z lies past the
/// log C2 left, "a completed replay wrote nothing the crash ending it did not leave"),
/// so id 1 gets a second slot of C1's (one at R1 for y, one at R2 for z), and C1's
/// bound 2 (it hid two entries, of two ids) pays for both.
fn replay_copy_survived_then_moved(bug: bool) -> Run {
    let mut r = replayed_then_crashed(true);
    if bug {
        r.hwm(0, 5, 5, 5).deliver(1, 0, 4, 1_000).consume(0, 4);
    }
    r
}

/// helper-48's history, shared with helper-50's variants: power loss C1 hides [0, 2)
/// (id 1 at 0, delivered; id 2 at 1, never delivered); its replay R1 completes and
/// re-commits id 1 at 2 (y, read during R1 when `y_read`) and id 2 at 3; power loss C2
/// leaves all of it durable and persisted (4), and R2 comes up.
fn replayed_then_crashed(y_read: bool) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 2, 2)])
        .restart()
        .open_clean(0, 0, 2);
    r.frontier_seen(0, 1);
    r.hwm(0, 4, 4, 4);
    if y_read {
        r.deliver(1, 0, 2, 1_000).consume(0, 2);
    }
    r.crash(&[(0, 4, 4, 4)]).restart().open_clean(0, 4, 4);
    r.frontier_seen(0, if y_read { 3 } else { 1 });
    r
}

#[test]
fn a_replay_whose_copy_survived_hands_no_slot_on_to_the_next() {
    assert!(duplicate_messages(&replay_copy_survived_then_moved(false)).is_empty());
    assert_eq!(
        duplicate_messages(&replay_copy_survived_then_moved(true)).len(),
        1,
        "id 1 was hidden once (C1) and re-committed by R1 (y, still in the log): z is extra"
    );
}

/// helper-49, budgets alone: x = id 1 at 0, delivered while only the in-memory
/// HWM showed it. Power loss C1 (persisted HWM 0, durable tail 1) hides [0, 1); a
/// flip above the persisted HWM takes x's frame and the open R1 cuts at 0 (R1 rule).
/// R1 completes and its replay re-commits id 1 at 0 (the cut's offset, `fresh_from`):
/// the same (partition, offset) as x, so no new copy in the accounting; a consumer
/// reads it again there. The HWM passes it and is persisted (1). Power loss C2
/// leaves all of it (persisted HWM 1 = durable tail 1): nothing hidden. With `bug`,
/// R2 commits id 1 again at 1 (z).
///
/// A correct R2 cannot: R1's copy of id 1 at 0 is durable and below the persisted HWM
/// C2 left, so R2's replay finds it among the visible copies and skips the entry
/// (`engine/src/store/open.rs` `replay` / `visible_copies`), if the checkpoint did
/// not already pass it. C1 hid one entry and R1 re-committed it once; z is extra
/// (DESIGN recovery R1 + "ingress WAL replay": each hidden entry is re-committed once).
///
/// The checker: `recommits(C1, z)` holds (x lay in C1's hidden tail; z at or past the
/// cut), and `replay_writing(C1, z)` passes R1 on to R2 because C2's durable tail (1)
/// is at or below z and `kept_by` looks only for a copy *first* delivered after R1's
/// open: R1's copy sits at x's offset, first delivered before C1, so it is invisible
/// to `kept_by` (place.rs, `kept_by`: `opened < y.first_delivery`). C1's bound 1 was
/// never spent by R1 (its re-commit made no new copy), so z takes it at R2's node.
fn recommit_in_place_then_again(bug: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0);
    taken_and_cut(&mut r, 1, 0, 1);
    // R1's replay re-committed id 1 at 0; read again there.
    r.hwm(0, 1, 1, 1)
        .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .open_clean(0, 1, 1);
    r.frontier_seen(0, 1);
    if bug {
        r.hwm(0, 2, 2, 2).deliver(1, 0, 1, 1_000).consume(0, 1);
    }
    r
}

#[test]
fn a_replay_copy_in_place_of_the_hidden_one_hands_no_slot_on() {
    assert!(duplicate_messages(&recommit_in_place_then_again(false)).is_empty());
    assert_eq!(
        duplicate_messages(&recommit_in_place_then_again(true)).len(),
        1,
        "C1 hid id 1 once and R1 re-committed it at 0, still in the log at C2: z is extra"
    );
}

/// (helper-50)
/// helper-48's `replay_copy_survived_then_moved`, with R1's copy y read only after
/// the crash that ends R1. Power loss C1 hides [0, 2) (x = id 1 at 0, delivered; id 2
/// at 1, never delivered): bound 2. R1 completes and re-commits id 1 at 2 (y) and id 2
/// at 3; no consumer reads y yet. Power loss C2 leaves everything durable and
/// persisted (persisted HWM 4 = durable tail 4): nothing hidden, bound 0. R2 comes up;
/// then y is delivered at 2 and, with `bug`, R2's own second commit of id 1 at 4 (z).
///
/// A correct R2 commits nothing: y is durable and below the persisted HWM C2 left, so
/// either the checkpoint passed id 1's entry (its copy y below the persisted HWM,
/// `engine/src/store/checkpoint.rs`) and the entry is not live, or it did not and the
/// replay finds y among the visible copies from the checkpoint's offset (at most y's
/// offset: the checkpoint's offset never passes a pending entry's copy) and skips it
/// (`engine/src/store/open.rs` `replay` / `visible_copies`). C1 hid id 1 once, R1
/// re-committed it once (y): z is extra.
///
/// The checker: `replay_writing(C1, z)` passes R1 on to R2 (z lies at C2's durable
/// tail) and `kept_by` finds no copy of id 1 with a delivery between R1's open and C2
/// (x's only delivery is before C1, y's after C2), so C1 is charged twice, once through
/// R1's node (y) and once through R2's (z), and its bound 2 (two hidden records, of
/// two ids) pays for both. A copy first delivered after C2 at an offset below C2's
/// durable tail, with no cut, clamp, or crash ending the log at or below it before
/// that delivery, was in the log at C2 just as well (`recommits` already reasons so:
/// `reopened`), and the next open saw it (or C2 hid it, and C2's budget answers).
fn replay_copy_read_after_the_next_crash(bug: bool) -> Run {
    let mut r = replayed_then_crashed(false);
    if bug {
        r.hwm(0, 5, 5, 5);
    }
    r.deliver(1, 0, 2, 1_000).consume(0, 2);
    if bug {
        r.deliver(1, 0, 4, 1_000).consume(0, 4);
    }
    r
}

#[test]
fn a_replay_copy_first_read_after_the_next_crash_still_ends_the_crashs_replays() {
    assert!(duplicate_messages(&replay_copy_read_after_the_next_crash(false)).is_empty());
    assert_eq!(
        duplicate_messages(&replay_copy_read_after_the_next_crash(true)).len(),
        1,
        "C1 hid id 1 once and R1 re-committed it at 2, still in the log at C2: z is extra"
    );
}

/// (helper-50)
/// helper-48's history again, with y read during R1 (so `kept_by` finds it) but its
/// frame flipped at rest during R2 and skipped by a consumer's read (in contract:
/// detected, never served). With `bug`, the engine then commits id 1 again at 4 (z),
/// in R2, with no restart after the skip.
///
/// R2's replay ran at its open, before the flip, and found y visible below the
/// persisted HWM C2 left (or the checkpoint had passed id 1's entry): it committed
/// nothing (`open.rs` `replay` / `visible_copies`). After that no replay runs until
/// the next restart, and only a replay re-commits a record (the skip row says as
/// much: `damaged_copy` asks for a restart between the copies and a crash before the
/// replay, neither of which is here). So z is a second commit of id 1 that no crash's
/// replay made.
///
/// The checker: `kept_by` drops y because a skip of its frame lies between y's
/// delivery and z's first delivery (`between(s.index)`), although the skip came after
/// the next open's replay had already seen y. So `replay_writing(C1, z)` passes R1 on
/// to R2 and C1's bound 2 pays for y (via R1) and z (via R2). What can take y from the
/// next open's view is a cut, clamp, skip or crash *before that open's replay*
/// (`replay_writing`'s own `cut_below` already stops at the next replay's
/// incarnation), not anything before z's first delivery.
fn replay_copy_skipped_after_the_next_replay(bug: bool) -> Run {
    let mut r = replayed_then_crashed(true);
    r.fault(
        segment_flip(OffsetRange { start: 2, end: 3 }, Some(true)),
        Some(0),
    )
    .alarm(Some(0), frame_skipped(2))
    .counters(0, 0, 1);
    if bug {
        r.hwm(0, 5, 5, 5).deliver(1, 0, 4, 1_000).consume(0, 4);
    }
    r
}

#[test]
fn a_skip_after_the_next_replay_does_not_free_the_crashs_slot() {
    assert!(duplicate_messages(&replay_copy_skipped_after_the_next_replay(false)).is_empty());
    assert_eq!(
        duplicate_messages(&replay_copy_skipped_after_the_next_replay(true)).len(),
        1,
        "R2's replay saw y and committed nothing; z came with no replay after the skip"
    );
}

/// helper-51, budgets alone: a crash's replay commits before its open returns, so
/// below every offset a produce acknowledged in that incarnation.
///
/// x = id 1 at 0, delivered while only the in-memory HWM showed it. Power loss C1
/// hides [0, 1) (bound 1); a flip takes x's frame and the open R1 cuts at 0 (R1 rule)
/// and comes up. R1's replay re-commits id 1 (its entry is past the checkpoint, and no
/// copy is visible). With `in_place`, it lands at 0 (the cut's offset) and a consumer
/// reads it there again: the same (partition, offset) as x, so no new copy; otherwise
/// the history has no cut and the replay's copy at 1 is simply never read. Then a
/// fresh produce, id 2, is acknowledged at the next offset. With `bug`, the engine
/// commits id 1 *again*, after id 2 (z): a second commit of one WAL entry in normal
/// operation (a retry path that re-appends an entry, say).
///
/// A correct engine cannot put any of C1's re-commits past id 2: `Store::open`
/// (`engine/src/store/open.rs`) runs `replay` to the end before it returns the store,
/// and only a returned store takes produces (`produce.rs`), so every offset the
/// replay of R1 wrote lies below the first offset acknowledged to a produce in R1's
/// incarnation. DESIGN "ingress WAL replay": the re-commit lands at fresh offsets at or
/// past the durable tail, *before* new traffic. z is neither R1's replay's copy (that
/// one is at 0, or at 1) nor any later replay's (no crash follows).
///
/// The checker: `recommits(C1, z)` asks only `z.offset >= fresh_from(C1)` (0, the cut)
/// and that x lay in C1's hidden tail; `replay_writing(C1, z)` names R1 (completed, no
/// crash ends it); R1's node for id 1 is free (x is the original; R1's real copy is x's
/// offset or unread), so C1's budget pays for z (place.rs `recommits`, tail.rs
/// `fresh_from`: a lower bound only). Suggested fix: a copy placed on the node of a
/// completed replay R lies below the lowest offset acknowledged on its partition to a
/// produce of incarnation R (no upper bound is there today); the same bound for the
/// rows that name R's node (`checkpoint_lost`'s `replay_reach` takes the first HWM
/// shown after the open, which may already cover post-open produces).
fn recommitted_after_a_fresh_produce(in_place: bool, bug: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0);
    let next = if in_place {
        taken_and_cut(&mut r, 1, 0, 1);
        // R1's replay re-committed id 1 at 0; read again there.
        r.hwm(0, 1, 1, 1)
            .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2)
            .consume(0, 0);
        1
    } else {
        r.crash(&[(0, 0, 1, 1)]).restart().open_clean(0, 0, 1);
        r.frontier_seen(0, 1);
        // R1's replay re-committed id 1 at 1 (never read in this history).
        2
    };
    r.produce(2, 0, next, 1_010)
        .hwm(0, next + 1, next + 1, next + 1)
        .deliver(2, 0, next, 1_010)
        .consume(0, next);
    if bug {
        r.hwm(0, next + 2, next + 2, next + 2)
            .deliver(1, 0, next + 1, 1_011)
            .consume(0, next + 1);
    }
    r
}

#[test]
fn a_replays_copy_lies_below_the_first_produce_its_open_let_in() {
    assert!(duplicate_messages(&recommitted_after_a_fresh_produce(true, false)).is_empty());
    assert_eq!(
        duplicate_messages(&recommitted_after_a_fresh_produce(true, true)).len(),
        1,
        "R1's replay re-committed id 1 at 0 before id 2 was produced; id 1 after it is extra"
    );
}

#[test]
fn a_replays_unread_copy_lies_below_the_first_produce_its_open_let_in() {
    assert!(duplicate_messages(&recommitted_after_a_fresh_produce(false, false)).is_empty());
    assert_eq!(
        duplicate_messages(&recommitted_after_a_fresh_produce(false, true)).len(),
        1,
        "R1's replay re-committed id 1 at 1 before id 2 was produced; id 1 after it is extra"
    );
}

/// helper-51, the clamp row (`damaged_copy`, clamp branch): the same missing upper
/// bound. Ids 1-2 at 0-1, delivered and consumed, persisted HWM 2 (as in
/// duplicates.rs `clamped_then_replayed`); flips at rest take both frames, the open R1
/// cuts at 0 (R1 rule) and clamps the HWM 2 -> 0 (R4, recorded). R1's replay
/// re-commits ids 1 and 2 in WAL order from 0: at 0 and 1, the offsets they had, so no
/// new copy. Then a fresh produce, id 3, is acknowledged at 2. With `bug`, the engine
/// commits id 2 again after it, at 3 (z), and a consumer reads it.
///
/// As above, a correct engine's replay is over before id 3 is produced (`Store::open`
/// returns after `replay`), so whatever re-commit of id 2 the clamp allows lies below
/// 2; z is a second commit of one WAL entry in normal operation. The clamp row accepts
/// z: `other.offset >= floor` (0) and `committed_by(usize::MAX)` (no crash ends R1), and
/// the replay node (orders/0, R1) is free because R1's real copy sits at x's offset.
/// Suggested fix as above: bound the row's repeat by the first offset acknowledged to a
/// produce in the replayer's incarnation (`replay_window` could return it beside the
/// floor).
fn clamped_then_committed_after_a_produce(bug: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 1)
        .flipped_and_clamped(2);
    r.frontier_seen(0, 0);
    // R1's replay re-committed ids 1 and 2 at 0 and 1; read again there.
    r.hwm(0, 2, 2, 2)
        .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2)
        .consume(0, 0)
        .deliver_raw(0, 1, &payload(2), &key(2), 1_001, 2)
        .consume(0, 1)
        .produce(3, 0, 2, 1_010)
        .hwm(0, 3, 3, 3)
        .deliver(3, 0, 2, 1_010)
        .consume(0, 2);
    if bug {
        r.hwm(0, 4, 4, 4).deliver(2, 0, 3, 1_011).consume(0, 3);
    }
    r
}

#[test]
fn a_clamped_copys_recommit_lies_below_the_first_produce_after_the_replay() {
    assert!(duplicate_messages(&clamped_then_committed_after_a_produce(false)).is_empty());
    assert_eq!(
        duplicate_messages(&clamped_then_committed_after_a_produce(true)).len(),
        1,
        "R1's replay re-committed id 2 at 1 before id 3 was produced; id 2 at 3 is extra"
    );
}

/// helper-52 (the open item from the adversarial read of 1a38f2a): a clamp's replay
/// window handed on to a later open that cut at or below its floor took in a copy made
/// by an open in between.
///
/// Ids 1-3 at 0-2, delivered and consumed, persisted HWM 3. A latent sector over [0, 3)
/// makes the open R1 cut at 0 and clamp 3 -> 0 (recorded); its replay re-commits id 3
/// (the entry of ids 1-2 lay behind the checkpoint) at 0, never read. A crash leaves
/// the log at 1 with HWM 1 persisted; the open R2 is clean (the copy at 0 is in place,
/// below its HWM). With `between`, the engine commits id 3 again during R2, at 1 (z),
/// and a consumer reads it; then a crash with z persisted. A latent sector over the
/// log makes the open R3 cut at 0 and clamp to 0; its replay commits id 3 at 0 again,
/// and a consumer reads it there.
///
/// A correct engine cannot make z. R2's open read a clean log ending at 1 with HWM 1
/// (`Store::open`, `engine/src/store/open.rs`): R1's copy of id 3 at 0 was visible, so
/// R2's replay skipped id 3's entry (or the checkpoint R1's replay advanced had dropped
/// it); no produce of id 3 was attempted in R2 (and none was acknowledged there at all).
/// Only R3's cut took R1's copy, and only R3's replay re-commits the entry: after R3's
/// restart. Without `between` the history is the legitimate one (copies at 2 and 0).
///
/// The checker: `damaged_copy` (excused.rs, clamp branch) finds R1's clamp (hwm 0 <= 2
/// < 3); `replay_window` hands the window on from R1 to R3 (the first later cut at or
/// below the floor 0) and returns R3's end (no crash ends R3: `usize::MAX`), and
/// `committed_by` asks only that z was first delivered before that end. z goes through
/// the node of R2's replay (`replay_writing`: R1's ending crash left the log at 1 <= z's
/// offset and no copy R1 delivered lasted, so the crash's replay passes on to R2), which
/// no other copy uses; R3's copy at 0 is excused by R3's clamp as z's repeat. Fix: a
/// handed-on window starts at the wiping open's restart; a copy first delivered before
/// that counts only in an earlier window.
fn clamp_wiped_after_a_copy_in_between(between: bool) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3);
    for offset in 0..3 {
        r.consume(0, offset);
    }
    r.crash(&[(0, 3, 3, 3)])
        .fault(latent_below_hwm(0, 3), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, 3, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(3, 0))
        .opened(0, 0, 0)
        .frontier_seen(0, 0);
    // R1's replay put id 3 back at 0 (never read); the HWM 1 covering it persisted.
    r.crash(&[(0, 1, 1, 1)])
        .restart()
        .open_clean(0, 1, 1)
        .frontier_seen(0, 0);
    let tail = if between {
        // The bug: id 3 committed again while R2 runs, at 1.
        r.hwm(0, 2, 2, 2).deliver(3, 0, 1, 1_002).consume(0, 1);
        2
    } else {
        1
    };
    r.crash(&[(0, tail, tail, tail)])
        .fault(latent_below_hwm(0, tail), Some(0))
        .restart()
        .disk(0, OpenRule::TornTail, tail, 0, Some(0))
        .alarm(Some(0), torn_tail(0))
        .alarm(Some(0), clamp(tail, 0))
        .opened(0, 0, 0)
        .frontier_seen(0, 0)
        // R3's replay: id 3 at 0 again.
        .hwm(0, 1, 1, 1)
        .deliver(3, 0, 0, 1_002)
        .consume(0, 0);
    r
}

#[test]
fn a_handed_on_clamp_window_starts_at_the_wiping_opens_restart() {
    let clean = clamp_wiped_after_a_copy_in_between(false).report();
    assert!(
        clean.bounded_duplicates.violations.is_empty(),
        "{:?}",
        clean.bounded_duplicates.violations
    );
    assert_mentions(
        &duplicate_messages(&clamp_wiped_after_a_copy_in_between(true)),
        &["produce id 3 delivered from orders/0@"],
    );
}
