//! Group commit's gather on a real clock: an fsync waits for the committers the last
//! one released, but never past its bound, so producers that stop leave the others
//! committing. (What the gather gains, records per fsync, is timing: the bench's
//! `producers` section measures it; this test catches a gather that never stops.)

use crate::common::*;
use cafelog_engine::clock::SystemClock;
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig};
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

type RealLog = Log<StdFs, SystemClock>;

fn commit(log: &RealLog, i: u64) {
    let record = json_record(i);
    pollster::block_on(log.commit([(&b"k"[..], record.as_slice())])).unwrap();
}

#[test]
fn producers_that_stop_do_not_stall_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let log = pollster::block_on(Log::open(
        StdFs,
        SystemClock,
        dir.path(),
        LogConfig::default(),
    ))
    .unwrap()
    .0;
    // A gather that waited for producers who left would hang: the channel turns that
    // into a failure (a minute is no speed target; this takes well under a second).
    let (done, finished) = std::sync::mpsc::channel();
    let run = log.clone();
    std::thread::spawn(move || {
        // Four producers in step, so fsyncs release several at once; they stop one by
        // one as they finish, with committers still forecast back.
        std::thread::scope(|s| {
            for p in 0..4u64 {
                let log = &run;
                s.spawn(move || (0..50 + 10 * p).for_each(|i| commit(log, p * 1000 + i)));
            }
        });
        let fsyncs = run.metrics().fsyncs.load(Ordering::Relaxed);
        (0..200).for_each(|i| commit(&run, 10_000 + i));
        done.send(run.metrics().fsyncs.load(Ordering::Relaxed) - fsyncs)
            .unwrap();
    });
    let alone_fsyncs = match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(fsyncs) => fsyncs,
        Err(RecvTimeoutError::Timeout) => panic!("a producer stalled behind the gather"),
        Err(RecvTimeoutError::Disconnected) => panic!("a producer failed"),
    };
    // A check of the count only: one record a commit, so one fsync each.
    assert_eq!(alone_fsyncs, 200);
    assert_eq!(read_all(&log, 0).len(), 4 * 50 + 60 + 200);
}
