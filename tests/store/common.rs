//! Helpers shared by the store tests: a store in a temp dir on the real disk, with a
//! manual clock.

use cafelog_engine::clock::ManualClock;
use cafelog_engine::fs::StdFs;
use cafelog_engine::store::{Delivery, Store, StoreConfig, StoreOpenReport, TopicConfig};
use std::path::Path;

#[path = "../shared/watchdog.rs"]
mod watchdog;

pub type TestStore = Store<StdFs, ManualClock>;
pub const WALL_START_MS: u64 = 1_700_000_000_000;

pub fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    watchdog::start();
    pollster::block_on(f)
}

pub fn open(root: &Path, clock: &ManualClock) -> (TestStore, StoreOpenReport) {
    block(Store::open(
        StdFs,
        clock.clone(),
        root,
        StoreConfig::default(),
    ))
    .expect("open store")
}

pub fn topic(partitions: u32) -> TopicConfig {
    TopicConfig {
        partitions,
        lease_ms: 1_000,
        ..TopicConfig::default()
    }
}

/// Receives everything deliverable from a partition, acking each delivery.
pub fn drain(store: &TestStore, topic: &str, partition: u32) -> Vec<Delivery> {
    let mut out = Vec::new();
    loop {
        let batch = block(store.receive(topic, partition, 100)).expect("receive");
        if batch.is_empty() {
            return out;
        }
        for d in &batch {
            block(store.ack(topic, partition, d.offset)).expect("ack");
        }
        out.extend(batch);
    }
}

#[path = "../shared/frames.rs"]
mod frames;
pub use frames::frames_end;
