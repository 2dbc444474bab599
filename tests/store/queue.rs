//! Queue semantics: nack, lease expiry and the delay gate make a record deliverable
//! again (or not yet) as the spec says.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::store::{Delivery, StoreError, TopicConfig};
use std::time::Duration;

#[test]
fn a_nacked_record_is_deliverable_again_at_once_with_the_next_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    block(store.produce("t", Some(0), b"k", b"v")).unwrap();
    let first = block(store.receive("t", 0, 10)).unwrap();
    assert_eq!(first.len(), 1);
    assert!(
        block(store.receive("t", 0, 10)).unwrap().is_empty(),
        "leased: not redelivered"
    );
    block(store.nack("t", 0, 0)).unwrap();
    let again = block(store.receive("t", 0, 10)).unwrap();
    assert_eq!((again[0].offset, again[0].attempt), (0, 2));
    block(store.ack("t", 0, 0)).unwrap();
    assert!(matches!(
        block(store.ack("t", 0, 0)),
        Err(StoreError::NotOutstanding { .. })
    ));
    assert!(matches!(
        block(store.nack("t", 0, 0)),
        Err(StoreError::NotOutstanding { .. })
    ));
}

#[test]
fn an_expired_lease_makes_the_record_deliverable_again() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    block(store.produce("t", Some(0), b"k", b"v")).unwrap();
    assert_eq!(block(store.receive("t", 0, 10)).unwrap().len(), 1);
    clock.advance(Duration::from_millis(999));
    assert!(block(store.receive("t", 0, 10)).unwrap().is_empty());
    clock.advance(Duration::from_millis(1));
    let again = block(store.receive("t", 0, 10)).unwrap();
    assert_eq!(again[0].attempt, 2);
    assert_eq!(
        store
            .metrics()
            .leases_expired
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(
        block(store.frontier("t", 0)).unwrap(),
        0,
        "not acked: the frontier holds"
    );
}

#[test]
fn the_delay_gate_holds_records_until_commit_time_plus_delay() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic(
        "t",
        TopicConfig {
            delay_ms: 500,
            ..topic(1)
        },
    ))
    .unwrap();
    block(store.produce("t", Some(0), b"k", b"first")).unwrap();
    clock.advance(Duration::from_millis(300));
    block(store.produce("t", Some(0), b"k", b"second")).unwrap();
    assert!(
        block(store.receive("t", 0, 10)).unwrap().is_empty(),
        "gate closed"
    );
    clock.advance(Duration::from_millis(200));
    let open = block(store.receive("t", 0, 10)).unwrap();
    assert_eq!(open.len(), 1, "only the first gate is open");
    assert_eq!(open[0].payload, &b"first"[..]);
    clock.advance(Duration::from_millis(300));
    assert_eq!(
        block(store.receive("t", 0, 10)).unwrap()[0].payload,
        &b"second"[..]
    );
}

#[test]
fn a_parked_receiver_wakes_on_produce_and_on_nack() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    let receiver = {
        let store = store.clone();
        std::thread::spawn(move || block(store.receive_wait("t", 0, 10)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(30));
    assert!(!receiver.is_finished());
    block(store.produce("t", Some(0), b"k", b"v")).unwrap();
    let got = receiver.join().unwrap();
    assert_eq!(got.len(), 1);
    let receiver = {
        let store = store.clone();
        std::thread::spawn(move || block(store.receive_wait("t", 0, 10)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(30));
    assert!(!receiver.is_finished(), "the record is leased");
    block(store.nack("t", 0, 0)).unwrap();
    assert_eq!(receiver.join().unwrap()[0].attempt, 2);
}

#[test]
fn the_ticker_wakes_receivers_when_a_lease_expires_or_a_gate_opens() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic(
        "t",
        TopicConfig {
            delay_ms: 100,
            ..topic(1)
        },
    ))
    .unwrap();
    block(store.produce("t", Some(0), b"k", b"v")).unwrap();
    let receiver = {
        let store = store.clone();
        std::thread::spawn(move || block(store.receive_wait("t", 0, 10)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(30));
    assert!(!receiver.is_finished(), "gate closed");
    clock.advance(Duration::from_millis(100));
    block(store.tick());
    assert_eq!(receiver.join().unwrap().len(), 1);
    let receiver = {
        let store = store.clone();
        std::thread::spawn(move || block(store.receive_wait("t", 0, 10)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(30));
    assert!(!receiver.is_finished(), "leased");
    clock.advance(Duration::from_millis(1000));
    block(store.tick());
    assert_eq!(receiver.join().unwrap()[0].attempt, 2);
}

/// A `receive_wait` of up to 10 records of `t`/0 on its own thread, given 30 ms to
/// park; its answer arrives on the channel (a test fails on a timeout, never hangs).
fn parked_receiver(store: &TestStore) -> std::sync::mpsc::Receiver<Vec<Delivery>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let store = store.clone();
    std::thread::spawn(move || tx.send(block(store.receive_wait("t", 0, 10)).unwrap()));
    std::thread::sleep(Duration::from_millis(30));
    rx
}

/// Found by `woken_promptly` (quick seed 1436): a receive that stopped at its `max`
/// before reaching the gated records cleared the gate a parked receiver had set, so
/// the ticker never broadcast its opening and the parked receiver slept through
/// records that were deliverable.
#[test]
fn a_receive_that_stops_at_its_max_keeps_the_gate_a_parked_receiver_waits_on() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic(
        "t",
        TopicConfig {
            delay_ms: 100,
            ..topic(1)
        },
    ))
    .unwrap();
    block(store.produce("t", Some(0), b"k", b"first")).unwrap();
    block(store.produce("t", Some(0), b"k", b"second")).unwrap();
    let rx = parked_receiver(&store);
    assert!(rx.try_recv().is_err(), "gate closed: parked");
    clock.advance(Duration::from_millis(100));
    // Another consumer takes one record, stopping at its max short of the second.
    let one = block(store.receive("t", 0, 1)).unwrap();
    assert_eq!(one.len(), 1);
    block(store.tick());
    let woken = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the tick wakes the parked receiver: the second record's gate is open");
    assert_eq!(woken.len(), 1);
    assert_eq!(woken[0].offset, 1);
}

/// Found by `woken_promptly` (fresh default seed 2405560001000524): a receive with a
/// `max` of 1 expired two leases itself and took one; the ticker then found nothing
/// left to expire, so nothing told the receiver parked on the partition that the other
/// record was deliverable again.
#[test]
fn a_receive_that_expires_leases_it_does_not_take_wakes_the_parked_receivers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(WALL_START_MS);
    let (store, _) = open(dir.path(), &clock);
    block(store.create_topic("t", topic(1))).unwrap();
    block(store.produce("t", Some(0), b"k", b"first")).unwrap();
    block(store.produce("t", Some(0), b"k", b"second")).unwrap();
    assert_eq!(block(store.receive("t", 0, 10)).unwrap().len(), 2);
    let rx = parked_receiver(&store);
    assert!(rx.try_recv().is_err(), "both leased: parked");
    clock.advance(Duration::from_millis(1_000));
    let one = block(store.receive("t", 0, 1)).unwrap();
    assert_eq!((one.len(), one[0].offset, one[0].attempt), (1, 0, 2));
    block(store.tick());
    let woken = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the parked receiver wakes: offset 1's lease expired");
    assert_eq!((woken.len(), woken[0].offset, woken[0].attempt), (1, 1, 2));
}
