//! `poison_acks_nothing`.

use super::*;

fn poison_run(restart_before_ack: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .attempt(2, 0)
        .fault(
            FaultKind::FsyncEio {
                file: FileKind::Segment,
            },
            Some(0),
        )
        .with(|t, h| {
            h.partition_poisoned(t, &tp(0));
        });
    if restart_before_ack {
        r.crash(&[(0, 1, 2, 1)]).restart().hwm(0, 1, 1, 2);
    }
    let t = r.now();
    r.h.produce_ack(t, 2, &tp(0), Some(1), Some(1_001));
    r.hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    r
}

#[test]
fn poison_acks_nothing_fires_on_an_ack_and_hwm_advance_after_poison() {
    let messages = fires_only(&poison_run(false).report(), CheckerName::PoisonAcksNothing);
    assert_mentions(
        &messages,
        &[
            "orders/0 acknowledged produce id 2 at offset 1",
            "after it was poisoned",
            "incarnation 0",
        ],
    );
    assert_mentions(
        &messages,
        &[
            "HWM of orders/0 advanced from 1 to 2",
            "after it was poisoned",
        ],
    );
}

#[test]
fn a_restart_clears_the_poison() {
    assert_clean(&poison_run(true).report());
}
