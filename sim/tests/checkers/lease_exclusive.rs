//! `lease_exclusive`: a live lease keeps its offset from anyone else until a nack, its
//! expiry or a crash ends it, and an ack settles it for good.

use super::*;

/// Topic `orders` with leases of 100 ms; id 1 at offset 0, delivered (asked for at the
/// delivery's own time).
fn leased() -> Run {
    let mut r = Run::with_setup(0, 0, 100);
    r.produce(1, 0, 0, 20).deliver(1, 0, 0, 20).asked();
    r
}

impl Run {
    /// Marks the delivery just recorded as asked for at its own time.
    fn asked(&mut self) -> &mut Self {
        let t = self.t;
        self.h.asked_at(t);
        self
    }
}

fn again(r: &mut Run) -> CheckReport {
    r.deliver_raw(0, 0, &payload(1), &key(1), 20, 2).asked();
    r.report()
}

#[test]
fn lease_exclusive_fires_on_a_redelivery_while_the_lease_is_live() {
    // Delivered at t=30, leased until t=130; again at t=40 with nothing in between.
    let report = again(&mut leased());
    assert_mentions(
        &fires_only(&report, CheckerName::LeaseExclusive),
        &[
            "orders/0 offset 0 delivered again at t=40ms",
            "while its lease was live",
            "until t=130ms",
        ],
    );
}

#[test]
fn a_nack_an_expiry_or_a_crash_ends_a_lease() {
    let mut r = leased();
    r.with(|t, h| {
        h.nack(t, &tp(0), 0);
    });
    let report = again(&mut r);
    assert!(messages_of(&report, CheckerName::LeaseExclusive).is_empty());
    assert_eq!(report.lease_exclusive.after_nack, 1);
    let mut r = leased();
    r.wait(100);
    assert!(messages_of(&again(&mut r), CheckerName::LeaseExclusive).is_empty());
    let mut r = leased();
    r.crash(&[(0, 1, 1, 1)]).restart();
    assert!(messages_of(&again(&mut r), CheckerName::LeaseExclusive).is_empty());
}

#[test]
fn an_accepted_ack_settles_the_offset_for_the_incarnation() {
    // Even past the lease: an acked offset is never delivered again before a crash.
    let mut r = leased();
    r.consume(0, 0).wait(200);
    assert_mentions(
        &messages_of(&again(&mut r), CheckerName::LeaseExclusive),
        &["after the engine accepted its ack at t=40ms"],
    );
}

#[test]
fn the_lease_runs_from_the_ask_and_ends_exactly_at_its_expiry() {
    // Asked for at t=30 but delivered later (the receive parked): the lease ran from no
    // earlier than the ask, so it may have expired at t=130; measured from the delivery
    // it would not have.
    let run = |wait_before_again: u64| {
        let mut r = Run::with_setup(0, 0, 100);
        r.produce(1, 0, 0, 20).wait(80).deliver(1, 0, 0, 20);
        r.h.asked_at(30);
        r.wait(wait_before_again);
        again(&mut r)
    };
    // The first delivery lands at t=110; `again` records at t=120 + the wait.
    assert!(messages_of(&run(10), CheckerName::LeaseExclusive).is_empty());
    assert_mentions(
        &messages_of(&run(9), CheckerName::LeaseExclusive),
        &["delivered again at t=129ms", "until t=130ms"],
    );
}

#[test]
fn a_nack_ends_one_lease_not_the_next() {
    let mut r = leased();
    r.with(|t, h| {
        h.nack(t, &tp(0), 0);
    });
    let report = again(&mut r);
    assert!(messages_of(&report, CheckerName::LeaseExclusive).is_empty());
    // A third delivery 10 ms after the second, with no nack since.
    assert_mentions(
        &messages_of(&again(&mut r), CheckerName::LeaseExclusive),
        &["while its lease was live"],
    );
}

#[test]
fn an_ack_is_judged_without_the_runs_setup() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 20)
        .deliver(1, 0, 0, 20)
        .consume(0, 0)
        .deliver_raw(0, 0, &payload(1), &key(1), 20, 2);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::LeaseExclusive),
        &["after the engine accepted its ack"],
    );
}

#[test]
fn the_engine_accepts_a_settle_only_of_a_lease_it_has_not_settled() {
    let settle = |r: &mut Run, ack: bool| {
        r.with(|t, h| {
            if ack {
                h.ack(t, &tp(0), 0);
            } else {
                h.nack(t, &tp(0), 0);
            }
        });
    };
    let run = |settles: &[bool]| {
        let mut r = leased();
        for &ack in settles {
            settle(&mut r, ack);
        }
        r.report()
    };
    // One ack, one nack, a nack then an ack (the offset is back to ready): all leased.
    for settles in [&[true][..], &[false], &[false, true]] {
        let report = run(settles);
        assert!(
            report.violations().is_empty(),
            "{settles:?}: {:#?}",
            report.violations()
        );
    }
    // A second ack, a nack after the ack or after a nack: the lease was settled.
    for (settles, expect) in [
        (&[true, true][..], "an ack at t="),
        (&[true, false], "a nack at t="),
        (&[false, false], "a nack at t="),
    ] {
        assert_mentions(
            &fires_only(&run(settles), CheckerName::LeaseExclusive),
            &[
                "orders/0 offset 0: the engine accepted",
                expect,
                "its lease from t=30ms was settled",
            ],
        );
    }
    // No lease in this incarnation: the one before the crash died with it.
    let mut r = leased();
    r.crash(&[(0, 1, 1, 1)]).restart();
    settle(&mut r, true);
    let report = r.report();
    assert_mentions(
        &messages_of(&report, CheckerName::LeaseExclusive),
        &["accepted an ack", "no receive of incarnation 1 leased it"],
    );
    assert_eq!(report.lease_exclusive.settles_without_lease, 1);
}

#[test]
fn a_delivery_no_consumer_claimed_is_a_lease() {
    // Leased at t=20 to a receive whose consumer had given up: an ack settles it, and
    // a delivery of the offset while it is live is a violation.
    let unclaimed = || {
        let mut r = Run::with_setup(0, 0, 100);
        r.produce(1, 0, 0, 20).with(|t, h| {
            h.deliveries_unclaimed(t, &tp(0), vec![0], vec![Some(1)], t);
        });
        r
    };
    let mut r = unclaimed();
    r.consume(0, 0);
    // (`no_lost_ack` still wants the record delivered to a consumer.)
    assert!(messages_of(&r.report(), CheckerName::LeaseExclusive).is_empty());
    let report = again(&mut unclaimed());
    assert_mentions(
        &fires_only(&report, CheckerName::LeaseExclusive),
        &[
            "orders/0 offset 0 delivered again at t=",
            "while its lease was live",
        ],
    );
}

#[test]
fn a_nack_without_a_lease_and_an_unclaimed_lease_after_an_ack_fire() {
    // A nack of an offset no receive of this incarnation leased.
    let mut r = Run::with_setup(0, 0, 100);
    r.produce(1, 0, 0, 20).with(|t, h| {
        h.nack(t, &tp(0), 0);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::LeaseExclusive),
        &["accepted a nack", "no receive of incarnation 0 leased it"],
    );
    // Acked, then leased again to a receive whose consumer had given up.
    let mut r = leased();
    r.consume(0, 0).with(|t, h| {
        h.deliveries_unclaimed(t, &tp(0), vec![0], vec![Some(1)], t);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::LeaseExclusive),
        &[
            "orders/0 offset 0 leased again (unclaimed)",
            "after the engine accepted its ack",
        ],
    );
}
