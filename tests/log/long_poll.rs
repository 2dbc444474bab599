//! Long-poll: a parked reader wakes on the commit it waits for, even one that races
//! its parking, and a notify wakes every parked waiter.

use crate::common::*;
use std::time::Duration;

#[test]
fn a_parked_waiter_wakes_on_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    let waiter = {
        let log = log.clone();
        std::thread::spawn(move || {
            pollster::block_on(log.wait_beyond(0));
            log.hwm()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "nothing committed yet");
    pollster::block_on(log.commit([(&b"k"[..], &b"v"[..])])).unwrap();
    assert_eq!(waiter.join().unwrap(), 1);
}

#[test]
fn a_commit_that_races_the_park_is_not_missed() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    // Listen first, then commit, then await: the listener must already be complete.
    let listener = log.listen();
    pollster::block_on(log.commit([(&b"k"[..], &b"v"[..])])).unwrap();
    pollster::block_on(listener);
    // And wait_beyond returns at once when the data is already there.
    pollster::block_on(log.wait_beyond(0));
}

#[test]
fn notify_all_wakes_every_parked_waiter() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let listener = log.listen();
            std::thread::spawn(move || pollster::block_on(listener))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    log.notify_all();
    for w in waiters {
        w.join().unwrap();
    }
}

#[test]
fn closing_the_log_releases_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _clock) = open_default(dir.path());
    let waiter = {
        let log = log.clone();
        std::thread::spawn(move || pollster::block_on(log.wait_beyond(100)))
    };
    std::thread::sleep(Duration::from_millis(20));
    pollster::block_on(log.close()).unwrap();
    waiter.join().unwrap();
}
