//! Which way an `hwm` fault moved the word decides what it did to the copies between
//! its two values (helper-70): a lowered word hides them (the open's replay commits
//! them again, a duplicate the fault explains), a raised one shows them (the replay must
//! skip them, and a second commit is the engine's own).

use super::*;

/// The direction of an `hwm` flip, recorded only as the range between its two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    /// 2 -> 3: the word rose over id 3's copy at 2, which the open then shows.
    Raised,
    /// 3 -> 2: the word fell below id 3's copy at 2, which the open then hides.
    Lowered,
}

/// Ids 1-4 at 0-3 on orders/0, all delivered and read; the engine's word is `before`
/// (in-memory HWM 4). A flip of the word at rest while the node is up (offsets [2, 3)),
/// then power loss A with the flipped word durable. The open reads it; its replay commits
/// what it could not see. `bug`: the replay also commits id 3, whose copy at 2 the open
/// showed (raised) or hid (lowered).
fn flipped_word_then_replay(dir: Dir, bug: bool) -> Run {
    let (before, after) = match dir {
        Dir::Raised => (2, 3),
        Dir::Lowered => (3, 2),
    };
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, before, 4);
    delivered_and_read(&mut r, 4);
    r.frontier_written(0, 2);
    r.fault(hwm_flip_between(2, 3), Some(0));
    r.crash(&[(0, after, 4, 4)])
        .restart()
        .open_clean(0, after, 4);
    r.frontier_seen(0, 2);
    // What the replay must commit: every record above the word it read (hidden), each
    // once, from the tail on.
    let mut ids: Vec<u64> = (after + 1..=4).collect();
    if bug && dir == Dir::Raised {
        ids.insert(0, 3);
    }
    replay_commits(&mut r, &ids);
    r
}

#[test]
fn flipped_words_correct_replays_pass() {
    for dir in [Dir::Raised, Dir::Lowered] {
        let m = duplicate_messages(&flipped_word_then_replay(dir, false));
        assert!(m.is_empty(), "{dir:?}: {m:#?}");
    }
}

/// A flip that raised the word over id 3's copy showed it to the open (its replay must
/// skip it: `visible_copies`) and hid nothing: the `out_of_contract` row asks that the
/// open read a word at or below the copy.
#[test]
fn a_raised_hwm_flip_destroys_no_copy() {
    let m = duplicate_messages(&flipped_word_then_replay(Dir::Raised, true));
    assert_eq!(
        m.len(),
        1,
        "the raised word showed id 3's copy; its repeat is the engine's: {m:#?}"
    );
}

/// The same raised flip landing while the node is down after power loss A (as
/// `CrashWithBitFlip` records it). A's budget was computed from the word A left (2), so
/// it counted id 3's copy at 2 as hidden, though the open read 3 and showed it; it
/// starts at the word the open read now.
fn raised_while_down(bug: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 2, 4);
    delivered_and_read(&mut r, 4);
    r.frontier_written(0, 2);
    r.crash(&[(0, 2, 4, 4)])
        .fault(hwm_flip_between(2, 3), Some(0));
    r.restart().open_clean(0, 3, 4);
    r.frontier_seen(0, 2);
    let ids: Vec<u64> = if bug { vec![3, 4] } else { vec![4] };
    replay_commits(&mut r, &ids);
    r
}

#[test]
fn a_raised_hwm_flip_while_down_leaves_the_crash_no_budget_for_the_shown_copy() {
    let ok = duplicate_messages(&raised_while_down(false));
    assert!(ok.is_empty(), "{ok:#?}");
    let m = duplicate_messages(&raised_while_down(true));
    assert_eq!(
        m.len(),
        1,
        "the open read 3: id 3's copy at 2 was shown: {m:#?}"
    );
}
