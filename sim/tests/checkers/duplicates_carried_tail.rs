//! helper-69 on e62f233 ("a partition only refused keeps its durable tail across
//! kills"): default 3908137280's story cut down (ids 1-5 at 0-4, delivered; an `hwm`
//! fsync EIO leaves the platter's word at 4 while the page cache shows 5; a flip at 3;
//! R3 refusals; a power loss, a latent sector over [0, 3); the open cuts at 0 (R1),
//! clamps 4 to 0 and its replay commits id 5 again at 0), with one more step: the first
//! refusing open is killed after its `r3_refused` alarm, before `try_open` returned.
//!
//! That open changed nothing on the partition, so the power loss's durable tail is still
//! 5 (the HWM the engine had at the first crash). The world at e62f233 recorded 4 there
//! (only a returned open counted as refusing, so the killed one broke the carry; the
//! world carries the floor across every open that cut nothing now:
//! `tests/durable_floor.rs`), and with 4
//! `bounded_duplicates` has no budget for id 5's re-commit: the false alarm e62f233
//! closed, back by one kill.

use super::*;

fn story(power_loss_tail: u64) -> Run {
    let refuse = |r: &mut Run, complete: bool| {
        r.restart()
            .disk(0, OpenRule::Refuse, 5, 3, Some(3))
            .alarm(Some(0), refused_alarm(300));
        if complete {
            r.with(|t, h| {
                h.partition_refused(t, &tp(0), "bad frame at 3 below the persisted HWM 5");
            });
        }
    };
    let mut r = Run::new();
    r.produced(5).hwm(0, 5, 4, 5).delivered(5);
    // The word 5's fsync fails: the platter keeps 4, the page cache shows 5; the engine
    // asks for a restart.
    r.fault(
        FaultKind::FsyncEio {
            file: FileKind::Hwm,
        },
        Some(0),
    )
    .process_crash(&[(0, 5, 5, 5)])
    .fault(
        segment_flip(OffsetRange { start: 3, end: 4 }, Some(true)),
        Some(0),
    );
    // The first refusing open is killed right after its alarm (a process crash: the
    // world reads the page cache, and knows no in-memory HWM).
    refuse(&mut r, false);
    r.with(|t, h| {
        h.process_crash(
            t,
            vec![CrashPartition {
                tp: tp(0),
                persisted_hwm: 5,
                durable_tail: 5,
                memory_hwm: None,
            }],
        );
    });
    refuse(&mut r, true);
    // The power loss: the platter's word is 4; the damaged partition's durable tail is
    // the world's lower bound.
    r.with(|t, h| {
        h.crash(
            t,
            vec![CrashPartition {
                tp: tp(0),
                persisted_hwm: 4,
                durable_tail: power_loss_tail,
                memory_hwm: None,
            }],
        );
    })
    .fault(latent_below_hwm(0, 3), Some(0))
    .restart()
    .disk(0, OpenRule::TornTail, 4, 0, Some(0))
    .alarm(Some(0), torn_tail(0))
    .alarm(Some(0), clamp(4, 0))
    .counters(0, 4, 0)
    .opened(0, 0, 0)
    .alarm(Some(0), Alarm::ReplayCommitting { records: 1 });
    r.frontier_seen(0, 0);
    r.hwm(0, 1, 1, 1).deliver(5, 0, 0, 1_100);
    r
}

#[test]
fn the_tail_carried_across_a_refusal_budgets_the_replay() {
    // What the world records when every refusing open returned (e62f233's carry).
    let carried = messages_of(&story(5).report(), CheckerName::BoundedDuplicates);
    assert!(carried.is_empty(), "{carried:#?}");
}

#[test]
fn the_tail_the_world_records_after_a_killed_refusal_leaves_no_budget() {
    // Control: the persisted word alone, what the world recorded at e62f233 when the
    // first refusing open was killed before it returned.
    let broken = messages_of(&story(4).report(), CheckerName::BoundedDuplicates);
    assert_mentions(&broken, &["produce id 5"]);
}
