//! The `out_of_contract` duplicates row and the crash's hidden tail after d306b85, read
//! by helper-72: the word an `hwm` fault left is the one the open that replays read,
//! not an open killed before it (a raised word shows the copy to the replay); and a
//! lost fsync of the partition's directory (offsets unknown) reaches the records
//! acknowledged after it, not a copy acknowledged in place before it and first read
//! after. Each buggy history here was accepted before.

use super::*;

/// Ids 1-4 at 0-3 on orders/0, delivered and read. With `lowered_first`, the engine's
/// word is 3 and a flip at rest lowers it to 2 before power loss A; else the engine's
/// word is 2. Open 1 reads 2 and is killed before it replays anything (power loss B).
/// While the node is down a flip raises the word 2 -> 3. Open 2 reads 3 (id 3's copy
/// at 2 is shown) and replays. `bug`: it commits id 3 again.
fn raised_after_killed_open(lowered_first: bool, bug: bool) -> Run {
    let mut r = Run::new();
    let word = if lowered_first { 3 } else { 2 };
    r.produced(4).hwm(0, 4, word, 4);
    delivered_and_read(&mut r, 4);
    r.frontier_written(0, 2);
    if lowered_first {
        r.fault(hwm_flip_between(2, 3), Some(0));
    }
    r.crash(&[(0, 2, 4, 4)]);
    // Open 1: reads 2, killed before its log opened.
    r.restart().disk(0, OpenRule::Clean, 2, 4, None);
    r.crash(&[(0, 2, 4, 2)])
        .fault(hwm_flip_between(2, 3), Some(0));
    r.restart().open_clean(0, 3, 4);
    r.frontier_seen(0, 2);
    let ids: Vec<u64> = if bug { vec![3, 4] } else { vec![4] };
    replay_commits(&mut r, &ids);
    r
}

/// Without the bug nothing is reported; with it, the second commit of id 3.
fn second_commit_of_a_shown_copy_is_caught(lowered_first: bool) {
    let ok = duplicate_messages(&raised_after_killed_open(lowered_first, false));
    assert!(ok.is_empty(), "{ok:#?}");
    let m = duplicate_messages(&raised_after_killed_open(lowered_first, true));
    assert_eq!(
        m.len(),
        1,
        "open 2 read 3: id 3's copy at 2 was shown: {m:#?}"
    );
}

#[test]
fn the_replaying_open_read_the_word_not_the_one_killed_before_it() {
    second_commit_of_a_shown_copy_is_caught(false);
}

#[test]
fn a_lowered_word_excuses_nothing_once_a_later_open_replays_over_a_raised_one() {
    second_commit_of_a_shown_copy_is_caught(true);
}

/// A lost fsync of orders/0's directory: recorded `Other`, its offsets unknown.
fn lost_dir_fsync(r: &mut Run) {
    r.with(|t, h| {
        h.fault(
            t,
            FaultKind::LostFsync {
                file: FileKind::Other,
                offsets: None,
            },
            Some(&tp(0)),
            Some("/data/topics/orders/p00000"),
        );
    });
}

/// A lost fsync of orders/0's directory (recorded `Other`, offsets unknown), after ids
/// 1-4 were acknowledged, fsynced and persisted (word 4) and before any was read.
/// Power loss A hides nothing; the open reads 4. `bug`: its replay commits id 3 again.
fn dir_fsync_then_replay(fault: bool, bug: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 4, 4);
    if fault {
        lost_dir_fsync(&mut r);
    }
    delivered_and_read(&mut r, 4);
    r.frontier_written(0, 4);
    r.crash(&[(0, 4, 4, 4)]).restart().open_clean(0, 4, 4);
    r.frontier_seen(0, 4);
    if bug {
        r.alarm(Some(0), Alarm::ReplayCommitting { records: 1 });
        r.hwm(0, 5, 5, 5).deliver(3, 0, 4, 1_002);
    }
    r
}

#[test]
fn a_lost_directory_fsync_does_not_reach_copies_acknowledged_before_it() {
    assert!(duplicate_messages(&dir_fsync_then_replay(true, false)).is_empty());
    let control = duplicate_messages(&dir_fsync_then_replay(false, true));
    assert_eq!(control.len(), 1, "{control:#?}");
    let m = duplicate_messages(&dir_fsync_then_replay(true, true));
    assert_eq!(m.len(), 1, "ids 1-4 were fsynced before the fault: {m:#?}");
}

/// helper-70's raised flip (`a_raised_hwm_flip_destroys_no_copy`) with a lost fsync of
/// the partition's directory between the acks and the first reads.
fn raised_flip_and_dir_fsync(dir: bool) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 2, 4);
    if dir {
        lost_dir_fsync(&mut r);
    }
    delivered_and_read(&mut r, 4);
    r.frontier_written(0, 2);
    r.fault(hwm_flip_between(2, 3), Some(0));
    r.crash(&[(0, 3, 4, 4)]).restart().open_clean(0, 3, 4);
    r.frontier_seen(0, 2);
    r.alarm(Some(0), Alarm::ReplayCommitting { records: 2 });
    r.hwm(0, 6, 6, 6);
    r.deliver(3, 0, 4, 1_002).deliver(4, 0, 5, 1_003);
    r
}

#[test]
fn a_lost_directory_fsync_does_not_excuse_what_a_raised_flip_showed() {
    let base = duplicate_messages(&raised_flip_and_dir_fsync(false));
    assert_eq!(base.len(), 1, "{base:#?}");
    let m = duplicate_messages(&raised_flip_and_dir_fsync(true));
    assert_eq!(
        m.len(),
        1,
        "the directory fault does not lend the flip an excuse: {m:#?}"
    );
}
