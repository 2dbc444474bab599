//! `bounded_duplicates` and an out-of-contract fault's reach, read by the fifth to
//! seventh adversaries (helper-48 on 9314de4, helper-49 on c93984f, helper-50 on
//! 2d72ced): each history is one an engine bug could make (or, where a test says so,
//! a correct engine makes), judged against the checker of its day. A fault makes no
//! copy itself: it destroys one, and the repeat is the replay's after the crash that
//! showed the fault, where that replay commits, on its partition.

use super::*;

fn lost_fsync(start: u64, end: u64) -> FaultKind {
    FaultKind::LostFsync {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start, end }),
    }
}

/// a lost fsync of orders/0's segment (the frame of offset 0, acknowledged after
/// it), and then no power loss at all (`process`: only a process crash, which hides
/// nothing). The engine (bug) commits id 1 a second time, at 1.
///
/// A lost fsync changes the platter only: the page cache keeps the engine's bytes
/// until a power loss rebuilds it (DESIGN "Durability contract": a process crash keeps
/// the page cache; `sim/src/fs/faults.rs` writes a fault's effect to `durable` only;
/// `contract.rs`'s own `Reach::platter_only` / `live_at`). Until then every read,
/// every open and every replay sees exactly what an unfaulted disk shows, so the run
/// is, for the engine, crash-free (or has a crash that hid nothing): DESIGN
/// "duplicates occur only around crashes ... a crash-free run has none".
fn platter_fault_never_shown(process: bool) -> Run {
    let mut r = Run::new();
    r.fault(lost_fsync(0, 1), Some(0))
        .produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0);
    if process {
        r.process_crash(&[(0, 1, 1, 1)])
            .restart()
            .open_clean(0, 1, 1);
        r.frontier_seen(0, 1);
    }
    r.hwm(0, 2, 2, 2).deliver(1, 0, 1, 1_000).consume(0, 1);
    r
}

#[test]
fn a_platter_only_fault_with_no_power_loss_after_it_excuses_no_duplicate() {
    for process in [false, true] {
        assert_eq!(
            duplicate_messages(&platter_fault_never_shown(process)).len(),
            1,
            "process={process}: the lost fsync never reached anything the engine read"
        );
    }
}

/// the same lost fsync, then a power loss that drops the frame of offset 0 of
/// orders/0 (durable tail 0); the open finds orders/0 clean and empty, and its replay
/// re-commits id 1 at orders/0@0 (the same offset: no new copy). The engine (bug)
/// also commits id 1 on orders/1@0.
///
/// A WAL entry names its partition (the replay commits on `entry.partition`,
/// `engine/src/store/open.rs`; `a_copy_on_another_partition_is_never_a_recommit`), and a
/// lost fsync of orders/0's segment touches that one file (and creates nothing): no
/// correct engine puts a copy of id 1 on orders/1.
fn fault_on_one_partition_copy_on_another(other: bool) -> Run {
    let mut r = Run::new();
    r.fault(lost_fsync(0, 1), Some(0))
        .produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 0, 1), (1, 0, 0, 0)])
        .restart()
        .open_clean(0, 0, 0)
        .open_clean(1, 0, 0);
    r.frontier_seen(0, 0);
    r.frontier_seen(1, 0);
    r.hwm(0, 1, 1, 1).deliver(1, 0, 0, 1_000).consume(0, 0);
    if other {
        r.hwm(1, 1, 1, 1).deliver(1, 1, 0, 1_000).consume(1, 0);
    }
    r
}

#[test]
fn a_fault_on_one_partition_excuses_no_copy_on_another() {
    assert!(duplicate_messages(&fault_on_one_partition_copy_on_another(false)).is_empty());
    assert_eq!(
        duplicate_messages(&fault_on_one_partition_copy_on_another(true)).len(),
        1,
        "a lost fsync of orders/0's segment cannot put id 1 on orders/1"
    );
}

/// a misdirected write into orders/0's segment (offsets unknown), then id 1
/// committed at 0 and delivered. A power loss hides [0, 1) (persisted HWM 0): the
/// classic hidden tail. The open finds the log clean through 1 (whatever the write
/// did, it left the frame of id 1 and the rest of the log valid, and it hit no WAL
/// file), and its one replay re-commits id 1 at 1 (legitimate) and, with `twice` (the
/// bug), again at 2.
///
/// Every copy after the crash comes from that one replay, which commits each WAL
/// entry once (`open.rs`'s `replay`: one commit per root; the checker's own "one copy
/// of an id per replay"). The fault's reach and the crash's budget both rest on that
/// same replay's one commit of id 1, yet the fault's slot (`Excusal::replay: None`)
/// does not go through the replay's node.
fn fault_and_crash_one_replay(twice: bool) -> Run {
    let mut r = Run::new();
    r.fault(
        FaultKind::Misdirected {
            file: FileKind::Segment,
            offsets: None,
            below_hwm: None,
            parts: None,
        },
        Some(0),
    )
    .produce(1, 0, 0, 1_000)
    .hwm(0, 1, 0, 1)
    .deliver(1, 0, 0, 1_000)
    .consume(0, 0)
    .crash(&[(0, 0, 1, 1)])
    .restart()
    .open_clean(0, 0, 1);
    r.frontier_seen(0, 1);
    r.hwm(0, 3, 3, 3).deliver(1, 0, 1, 1_000).consume(0, 1);
    if twice {
        r.deliver(1, 0, 2, 1_000).consume(0, 2);
    }
    r
}

#[test]
fn a_faults_reach_and_a_crash_budget_share_the_one_replay_after_it() {
    assert!(duplicate_messages(&fault_and_crash_one_replay(false)).is_empty());
    assert_eq!(
        duplicate_messages(&fault_and_crash_one_replay(true)).len(),
        1,
        "one replay committed id 1 twice after the crash"
    );
}

/// helper-49: id 1 at 0, persisted and delivered.
/// A lost fsync of orders/0's segment then loses the frames of ids 2 and 3 at 1 and
/// 2 (acknowledged and delivered after it, persisted HWM still 1). Power loss C1
/// (persisted 1, durable tail 1, in-memory HWM 3): the open finds the log clean
/// through 1; the hole makes C1's hidden tail [1, 3) (bound 2). The replay R1
/// re-commits ids 2 and 3 (their frames are gone). With `bug` it first commits id 1
/// again, at 1, pushing ids 2 and 3 to 2 and 3; without, ids 2 and 3 land at 1 and 2
/// (their own offsets: no copy).
///
/// Id 1's frame at 0 was fsynced before the fault and below the persisted HWM: the
/// fault never reached it, and R1's replay finds it visible and skips its entry
/// (`open.rs` `replay`, `visible_copies`). A fault makes no copy itself: a segment
/// frame names its base offset and the scan takes no frame at an offset not due there
/// (`engine/src/recovery/scan.rs` invariants: "a CRC-valid frame at the wrong offset
/// is corruption"; `sim/src/fs/faults.rs`: a misdirected write moves bytes within one
/// file, a lost fsync drops them). So the fault's reach of offset 1 can explain a
/// repeat of what lay at 1 (ids 2's copy elsewhere), never id 1 landing there.
///
/// The checker: for the pair (id 1 at 0, id 1 at 1), `excused.rs` asks the reach of
/// *each* copy (`for c in [a, b]`); the later copy's offset 1 is in the lost fsync's
/// offsets (`Reach::covers` with `seen` = its first delivery, after the fault, and no
/// cut since), so the excuse is found through the repeat itself and handed to that
/// same copy as the repeat of R1 (`for repeat in [j, k]`).
fn reach_found_through_the_repeat(bug: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .fault(lost_fsync(1, 3), Some(0))
        .produce(2, 0, 1, 1_001)
        .produce(3, 0, 2, 1_002)
        .hwm(0, 3, 1, 3)
        .deliver(2, 0, 1, 1_001)
        .deliver(3, 0, 2, 1_002)
        .consume(0, 1)
        .consume(0, 2)
        .crash(&[(0, 1, 1, 3)])
        .restart()
        .open_clean(0, 1, 1);
    r.frontier_seen(0, 1);
    if bug {
        r.hwm(0, 4, 4, 4)
            .deliver(1, 0, 1, 1_000)
            .deliver(2, 0, 2, 1_001)
            .deliver(3, 0, 3, 1_002);
    } else {
        r.hwm(0, 3, 3, 3)
            .deliver_raw(0, 1, &payload(2), &key(2), 1_001, 2)
            .deliver_raw(0, 2, &payload(3), &key(3), 1_002, 2);
    }
    r
}

#[test]
fn a_faults_reach_of_the_repeats_own_offset_excuses_no_repeat() {
    assert!(duplicate_messages(&reach_found_through_the_repeat(false)).is_empty());
    let bug = duplicate_messages(&reach_found_through_the_repeat(true));
    assert_eq!(bug.len(), 1, "{bug:#?}");
    assert_mentions(&bug, &["produce id 1"]);
}

/// helper-49, a history a correct engine makes (accepted before and after): an `hwm` flip injected while the node is down, as
/// `CrashWithBitFlip` does (`sim/src/world/mod.rs`: `kill` records the crash, then
/// `flip` records the fault), so the fault's history index is *after* the crash whose
/// open reads it, and `crash_showing` names the next crash (here none) instead. Ids 1
/// and 2 at 0 and 1, persisted and delivered; power loss C1 leaves persisted HWM 2,
/// tail 2; the flip turns the word into 0; the open reads 0 and hides [0, 2); its
/// replay re-commits ids 1 and 2 at 2 and 3. A correct engine does exactly this
/// (R4 trusts the persisted word; the replay re-commits what it cannot see). Accepted:
/// C1's budget reads the open's view (`hidden_tail`: `views_before`), so the
/// misplaced `crash_showing` is never asked.
fn hwm_flipped_while_down() -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 2, 2)
        .delivered(2)
        .consume(0, 0)
        .consume(0, 1)
        .crash(&[(0, 2, 2, 2)])
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Hwm,
                offsets: Some(OffsetRange { start: 0, end: 2 }),
                below_hwm: None,
            },
            Some(0),
        )
        .restart()
        .open_clean(0, 0, 2);
    r.frontier_seen(0, 2);
    r.hwm(0, 4, 4, 4)
        .deliver(1, 0, 2, 1_000)
        .deliver(2, 0, 3, 1_001);
    r
}

#[test]
fn probe_an_hwm_flip_while_down_is_still_the_crash_befores() {
    assert!(duplicate_messages(&hwm_flipped_while_down()).is_empty());
}

/// (helper-50)
/// An out-of-contract fault's reach names x (id 1 at 0) as the destroyed copy, and the
/// "repeat" y (id 1 at 1) lies below the durable tail of the crash that showed the
/// fault, where that crash's replay never commits. The engine (bug) commits id 1 a
/// second time at 1 in normal operation, before any crash; a consumer reads x, a
/// misdirected write lands in the frame of offset 0 (its reach: offsets [0, 1)), a
/// power loss leaves the log durable and persisted through 2 (nothing hidden), the
/// open finds it clean, and y is first read after it.
///
/// No replay made y: the replay after the crash commits at the recovered tail (2 here,
/// `fresh_from`; an open with no cut recovers the durable tail), and y's offset 1 was
/// occupied at the crash (below its durable tail, no cut or crash since: "once read,
/// the record at an offset never changes"). A misdirected write makes no copy either:
/// a frame carries its base offset and a CRC-valid frame at the wrong offset is
/// corruption (DESIGN "On-disk rules"; `sim/src/fs/faults.rs` moves bytes within a
/// file). So y is a second commit of id 1 with no crash before it: DESIGN "duplicates
/// occur only around crashes". The hidden-tail budget refuses y for exactly this reason
/// (`recommits`: `later.offset >= fresh`); the fault's row asks no such thing of its
/// repeat (`excused.rs`: only `first_delivery` against the crash), and hands y the
/// free exit of R1's node. (Honest caveat: whether the sim's misdirected write into
/// frame 0 leaves an open that finds the log clean is beside the point; whatever it did
/// to frame 0, it cannot have put a valid id-1 frame at offset 1, and the replay never
/// commits below the recovered tail. The hole predates c93984f: at 9314de4 the reach
/// gave either copy a slot of its own.)
fn fault_repeat_below_the_replays_offsets(bug: bool, fault: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000);
    if !bug {
        r.produce(2, 0, 1, 1_001);
    }
    r.hwm(0, 2, 2, 2).deliver(1, 0, 0, 1_000).consume(0, 0);
    if fault {
        r.fault(
            FaultKind::Misdirected {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 0, end: 1 }),
                below_hwm: Some(true),
                parts: None,
            },
            Some(0),
        );
    }
    r.crash(&[(0, 2, 2, 2)]).restart().open_clean(0, 2, 2);
    r.frontier_seen(0, 1);
    if bug {
        r.deliver(1, 0, 1, 1_000).consume(0, 1);
    } else {
        r.deliver(2, 0, 1, 1_001).consume(0, 1);
    }
    r
}

#[test]
fn a_faults_repeat_lies_where_the_replay_commits() {
    assert!(duplicate_messages(&fault_repeat_below_the_replays_offsets(false, true)).is_empty());
    // Without the fault the checker already refuses y (no crash can have made it).
    assert_eq!(
        duplicate_messages(&fault_repeat_below_the_replays_offsets(true, false)).len(),
        1
    );
    let bug = duplicate_messages(&fault_repeat_below_the_replays_offsets(true, true));
    assert_eq!(
        bug.len(),
        1,
        "id 1 at 1 was in the log before the crash: {bug:#?}"
    );
}

/// Fresh quick 3898016637 (a false alarm of 2eaa0e6 to a568159), cut down: ids 1 and
/// 2 at 0 and 1, delivered while only the in-memory HWM showed them (persisted HWM 0);
/// a lost fsync of orders/0's segment then loses the frame of id 3 at 2, acknowledged
/// after it. Power loss C1: the world's durable tail is 3, but the open finds the log
/// ending at 2 (the lost frame), hides [0, 2), and its replay commits ids 1, 2 and 3
/// again from there: at 2, 3 and 4. With `twice` (a bug), id 1 once more at 5.
///
/// C1 hid ids 1 and 2: its budget explains their repeats. The fault explains only
/// where they landed: the replay commits from the tail the open recovered, which the
/// lost frame put below the durable tail the world counts (`fresh_from` asks the
/// faults a crash showed). The fault destroyed id 3's frame, not a copy of id 1, so
/// it excuses no repeat of id 1 itself.
fn replay_below_a_lost_frame(twice: bool) -> Run {
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .consume(0, 0)
        .consume(0, 1)
        .fault(lost_fsync(2, 3), Some(0))
        .produce(3, 0, 2, 1_002)
        .hwm(0, 3, 0, 3)
        .deliver(3, 0, 2, 1_002)
        .consume(0, 2)
        .crash(&[(0, 0, 3, 3)])
        .restart()
        .open_clean(0, 0, 2);
    r.frontier_seen(0, 2);
    r.hwm(0, 5, 5, 5)
        .deliver(1, 0, 2, 1_000)
        .deliver(2, 0, 3, 1_001)
        .deliver(3, 0, 4, 1_002);
    if twice {
        r.hwm(0, 6, 6, 6).deliver(1, 0, 5, 1_000);
    }
    r
}

#[test]
fn a_replay_below_a_frame_a_lost_fsync_took_is_its_crashs() {
    let fine = duplicate_messages(&replay_below_a_lost_frame(false));
    assert!(fine.is_empty(), "{fine:#?}");
    assert_eq!(
        duplicate_messages(&replay_below_a_lost_frame(true)).len(),
        1,
        "one replay committed id 1 twice"
    );
}

/// helper-53 (accepted; a history a correct engine makes): the world's durable tail
/// overstated at the crash *after* a completed replay, so `kept_by` and
/// `replay_writing` read that crash's durable tail as the log the next open found.
///
/// Id 1 at 0, delivered while only the in-memory HWM showed it; power loss C1 hides
/// [0, 1) and R1 re-commits id 1 at 1 (delivered). The hwm word is still 0 (no flush
/// since). A lost fsync of orders/0's segment then loses the frame of id 2 at 2
/// (acknowledged at 2 in R1's incarnation, never read). Power loss C2: the platter
/// ends at 2, but the world's durable tail is 3: an earlier flip or latent sector on
/// orders/0 (even one a cut since removed) leaves the partition in the world's sticky
/// `damaged` set (`sim/src/world/inject.rs` `flip`, `sim/src/world/latent.rs`), and
/// `sim/src/world/disk.rs` `crash_partitions` then takes
/// `max(decoded tail, persisted, memory HWM)`, the memory HWM 3 covering the lost
/// frame. The open finds tail 2, HWM 0, hides ids 1 at 0 and 1, and its replay
/// (`engine/src/store/open.rs` `replay`: the checkpoint advances only below the
/// persisted HWM, `checkpoint.rs`, so the entries of ids 1 and 2 are live; no visible
/// copy below HWM 0) commits id 1 at 2 and id 2 at 3.
///
/// C2's hidden tail [0, 3) held both earlier copies: its budget explains id 1 at 2.
fn replay_lost_after_a_completed_replay() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 0, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 0, 1, 1)])
        .restart()
        .open_clean(0, 0, 1);
    r.frontier_seen(0, 0);
    r.hwm(0, 2, 0, 2)
        .deliver(1, 0, 1, 1_000)
        .consume(0, 1)
        .fault(lost_fsync(2, 3), Some(0))
        .produce(2, 0, 2, 1_001)
        .hwm(0, 3, 0, 3)
        .crash(&[(0, 0, 3, 3)])
        .restart()
        .open_clean(0, 0, 2);
    r.frontier_seen(0, 2);
    r.hwm(0, 4, 4, 4)
        .deliver(1, 0, 2, 1_000)
        .deliver(2, 0, 3, 1_001)
        .consume(0, 2)
        .consume(0, 3);
    r
}

#[test]
fn a_replays_copy_a_lost_fsync_took_is_the_next_crashs() {
    let m = duplicate_messages(&replay_lost_after_a_completed_replay());
    assert!(m.is_empty(), "{m:#?}");
}

/// helper-53 (accepted; a history a correct engine makes): two lost fsyncs, a process
/// crash between (which shows neither: the page cache keeps the engine's bytes), and
/// the power loss after the replay that shows both.
///
/// Id 1 at 0 is on the platter; a lost fsync then loses the frame of id 2 at 1
/// (acknowledged after it). Both delivered under the in-memory HWM 2 (hwm word 0).
/// Process crash C1: the open reads the cache (tail 2, HWM 0), hides [0, 2), and its
/// replay commits ids 1 and 2 at 2 and 3, whose fsync is lost too. Power loss C2: the
/// platter holds id 1 at 0 alone (durable tail 1); the open finds tail 1, HWM 0, hides
/// id 1 at 0, and its replay (`open.rs` `replay`: no copy visible below HWM 0; the
/// entries are live, `checkpoint.rs` passes only entries below the persisted HWM)
/// commits ids 1 and 2 at 1 and 2: offsets reused, and a third copy of each id.
fn two_lost_fsyncs_around_a_process_crash() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .fault(lost_fsync(1, 2), Some(0))
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 0, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 0)
        .consume(0, 1)
        .process_crash(&[(0, 0, 2, 2)])
        .restart()
        .fault(lost_fsync(2, 4), Some(0))
        .open_clean(0, 0, 2);
    r.frontier_seen(0, 0);
    r.hwm(0, 4, 0, 4)
        .deliver(1, 0, 2, 1_000)
        .deliver(2, 0, 3, 1_001)
        .consume(0, 2)
        .consume(0, 3)
        .crash(&[(0, 0, 1, 4)])
        .restart()
        .open_clean(0, 0, 1);
    r.frontier_seen(0, 0);
    r.hwm(0, 3, 3, 3)
        .deliver(1, 0, 1, 1_000)
        .deliver(2, 0, 2, 1_001);
    r
}

#[test]
fn two_lost_fsyncs_around_a_process_crash_are_the_crashes() {
    let m = duplicate_messages(&two_lost_fsyncs_around_a_process_crash());
    assert!(m.is_empty(), "{m:#?}");
}
