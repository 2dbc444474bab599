//! `bounded_duplicates` and an out-of-contract fault's reach, read by a fifth adversary
//! (helper-48, on 9314de4): each history is one an engine bug could make, and each
//! was accepted by 9314de4. A fault makes no copy itself: a repeat is still the
//! replay's after the crash that showed the fault, on the fault's partition.

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
