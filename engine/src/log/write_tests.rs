//! The guard on a reserved queue slot. Only an encode error or a panic between
//! reserving and filling drops it armed, and neither can be caused from outside the
//! engine, so it is tested here, directly.

use super::*;
use crate::clock::ManualClock;
use crate::fs::StdFs;
use crate::log::LogConfig;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

fn ready(listener: &mut std::pin::Pin<&mut impl Future<Output = ()>>) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    matches!(listener.as_mut().poll(&mut cx), Poll::Ready(()))
}

#[test]
fn a_slot_dropped_armed_poisons_the_log_and_wakes_every_waiter() {
    let dir = tempfile::tempdir().unwrap();
    let open = Log::open(StdFs, ManualClock::new(0), dir.path(), LogConfig::default());
    let (log, _) = pollster::block_on(open).unwrap();

    let mut waiter = pin!(log.listen());
    drop(Reserved {
        log: &log,
        armed: false,
    });
    assert_eq!(log.status().poisoned, None, "a filled slot changes nothing");
    assert!(!ready(&mut waiter), "and wakes no one");

    drop(Reserved {
        log: &log,
        armed: true,
    });
    let reason = log
        .status()
        .poisoned
        .expect("a slot left empty poisons the log");
    assert!(reason.starts_with(crate::alarm::CANCELLED_OP), "{reason}");
    assert!(ready(&mut waiter), "a parked waiter wakes to the poison");
    assert!(
        log.append(b"k", b"v").is_err(),
        "nothing is appended past records that will never be written"
    );
}
