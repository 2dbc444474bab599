//! The store end to end on real directories.
//!
//! - `produce_consume`: topics, partitions by key, validation errors, produce → receive → ack.
//! - `queue`: leases, nack, lease expiry, attempts, the delay gate, long-poll wake-ups.
//! - `frontier`: consumer.offset persistence, lazy recovery, clamps, retention under a consumer.
//! - `crash`: the store dropped without closing at points of the produce and consume
//!   paths; every acknowledged produce is delivered at least once, and duplicates appear
//!   only for records committed after the last persisted HWM.
//! - `checkpoint`: the WAL checkpoint deletes what it covers after an open or a failure.

mod checkpoint;
mod common;
mod crash;
mod frontier;
mod produce_consume;
mod queue;
