//! The store: topics of partitions under one data root, the ingress WAL and the produce
//! path, and queue semantics (leases, ack, nack, delay gate, consumer frontier).
//!
//! ```text
//! <root>/topics/<topic>/topic.conf       topic configuration
//! <root>/topics/<topic>/p%05d/           partition logs (see `log`)
//! <root>/wal/                            the ingress WAL (see `wal`)
//! ```
//!
//! Rooms: this file holds the store's state, topics and accessors; `open` (recovery
//! and the WAL replay), `produce`, `consume` (receive, ack, nack, leases, frontier),
//! `checkpoint` (WAL checkpoints), `salvage` (R2's copies into the WAL), `wal`,
//! `queue` (one partition's leases) and `topic` (`topic.conf`).
//!
//! **Produce.** A record is appended to the WAL and fsynced (group commit), then
//! committed into its partition log through the log's commit path; only then is it
//! acknowledged. An acknowledgement means the record will be visible to consumers
//! across any in-contract crash.
//!
//! **Recovery order on open.** (1) every partition log recovers (R1-R4; a refusal
//! marks that partition unavailable, the others open); before an R2 cut, every readable
//! record past the hole is written into the WAL again, as a plain entry when its entry
//! is gone and linked to its entry otherwise (`salvage`, which opens the WAL
//! early for it: the cut never leaves a record fewer copies than it had); (2) the WAL
//! is read, and every entry past its partition's checkpoint (one of an entry and the
//! salvage entries linked to it) is re-committed at a fresh offset; (3) only then does `open` return, so no new produce
//! is accepted before the replay.
//!
//! **Ordering.** Within a partition, the WAL append and the log append happen under one
//! produce lock, so WAL order is offset order: every record at or above a checkpoint's
//! offset is a copy of an entry at or above its sequence number.
//!
//! **Checkpoint.** Per partition, the WAL checkpoint advances only to entries whose
//! offsets are below the partition's *persisted* HWM, never the in-memory one: a crash
//! can hide records above the persisted HWM, and then the WAL still holds them. Replay
//! re-commits an entry past the checkpoint unless a copy of it is already visible
//! (between the checkpoint's offset and the recovered HWM), so the only duplicates a
//! crash causes are the hidden copies in `[persisted HWM, durable tail)`, exposed once
//! new commits move the HWM over them — duplicates, never loss. Retention never deletes
//! a segment above the checkpoint's offset, so replay can always see those copies.
//!
//! **Frontier.** The lowest unsettled offset; persisted to `consumer.offset` (temp file,
//! fsync, rename, directory fsync) at `frontier_persist_interval`, never past the
//! persisted HWM; loaded lazily when a partition's queue is first touched.

mod checkpoint;
mod consume;
pub mod error;
mod open;
mod produce;
mod queue;
mod salvage;
pub mod topic;
pub mod wal;

pub use error::StoreError;
pub use topic::{TopicConfig, validate_topic_name};
pub use wal::{Checkpoint, PartitionId, Wal, WalOpenReport};

use crate::clock::Clock;
use crate::format::{layout, word};
use crate::fs::{File, Fs, OpenMode, read_exact_at, replace_atomically};
use crate::log::notify::race;
use crate::log::{Log, LogError, LogStatus, MetricsSnapshot, Spawn};
use bytes::Bytes;
use open::open_topic;
use queue::Queue;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Store-wide knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreConfig {
    /// WAL segments roll at this size (8 MiB).
    pub wal_segment_bytes: u64,
    /// The store ticker period: lease expiry and delay-gate wake-ups (10 ms).
    pub tick_interval: Duration,
    /// Frontier persistence cadence (100 ms).
    pub frontier_persist_interval: Duration,
    /// WAL checkpoint cadence (100 ms).
    pub checkpoint_interval: Duration,
    /// Records per replay commit.
    pub replay_batch_records: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            wal_segment_bytes: 8 * 1024 * 1024,
            tick_interval: Duration::from_millis(10),
            frontier_persist_interval: Duration::from_millis(100),
            checkpoint_interval: Duration::from_millis(100),
            replay_batch_records: 1000,
        }
    }
}

/// One delivery to a consumer, under a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub topic: String,
    pub partition: u32,
    pub offset: u64,
    /// Views of the frame the record was read from, as in [`crate::log::Record`].
    pub key: Bytes,
    pub payload: Bytes,
    pub committed_at_ms: u64,
    /// 1 for the first delivery of this offset in this incarnation, then 2, 3, ...
    pub attempt: u32,
}

/// An acknowledged produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Produced {
    pub partition: u32,
    pub offset: u64,
    pub wal_seq: u64,
}

/// What opening the store did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreOpenReport {
    pub partitions_opened: u64,
    /// Partitions recovery refused to open, with the reason.
    pub refused: Vec<(PartitionId, String)>,
    /// Topics whose `topic.conf` could not be read, with the reason.
    pub refused_topics: Vec<(String, String)>,
    pub wal: WalOpenReport,
    /// WAL entries re-committed at fresh offsets.
    pub replayed: u64,
    /// Hidden-tail records made visible because the WAL had lost entries.
    pub hidden_exposed: u64,
    /// Records past an R2 hole written into the WAL before the cut: those whose entry
    /// was gone (re-committed by the replay, counted in `replayed` too) and salvage
    /// copies of those whose entry was still there (see `salvage`).
    pub salvaged: u64,
    /// Per partition log: what recovery did.
    pub partitions: BTreeMap<PartitionId, crate::log::OpenReport>,
}

/// Store counters.
#[derive(Debug, Default)]
pub struct StoreMetrics {
    pub produced: AtomicU64,
    pub deliveries: AtomicU64,
    pub redeliveries: AtomicU64,
    pub acks: AtomicU64,
    pub nacks: AtomicU64,
    pub leases_expired: AtomicU64,
    pub delay_gate_holds: AtomicU64,
    /// Long-poll receives that parked, were woken and answered with records.
    pub parked_receives_woken: AtomicU64,
    pub frontier_clamps: AtomicU64,
    pub frontier_persists: AtomicU64,
    pub records_skipped: AtomicU64,
    pub wal_replayed: AtomicU64,
    pub wal_checkpoints: AtomicU64,
    pub wal_segments_deleted: AtomicU64,
}

fn add(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

/// One partition of a topic.
pub struct Partition<F: Fs, C: Clock> {
    pub id: PartitionId,
    pub log: Log<F, C>,
    queue: async_lock::Mutex<Option<Queue>>,
    /// Held across the WAL append and the log append, so WAL order is offset order.
    produce_order: Mutex<()>,
}

enum Slot<F: Fs, C: Clock> {
    Open(Arc<Partition<F, C>>),
    Refused(String),
}

struct TopicState<F: Fs, C: Clock> {
    config: TopicConfig,
    partitions: Vec<Slot<F, C>>,
}

/// WAL entries of one partition not yet below its persisted HWM.
#[derive(Default)]
struct Pending {
    /// seq -> offset in the log; `None` when the log append failed (replay commits it).
    entries: BTreeMap<u64, Option<u64>>,
    /// One past the highest seq ever assigned to this partition.
    seq_end: u64,
    checkpoint: Checkpoint,
    /// The first entry whose record was appended past the HWM, as the last look for
    /// abandoned produces found it ([`Store::commit_abandoned`]).
    uncommitted: Option<u64>,
}

struct Inner<F: Fs, C: Clock> {
    fs: F,
    clock: C,
    root: PathBuf,
    config: StoreConfig,
    topics: Mutex<BTreeMap<String, Arc<TopicState<F, C>>>>,
    /// Topics whose `topic.conf` was unreadable at open, with the reason.
    refused_topics: BTreeMap<String, String>,
    wal: Wal<F>,
    pending: Mutex<BTreeMap<PartitionId, Pending>>,
    /// Held across a WAL checkpoint; whether one is owed though no partition's moved:
    /// the last one failed, or the open found sealed segments the loaded one covers.
    checkpoint_owed: async_lock::Mutex<bool>,
    metrics: StoreMetrics,
}

/// A store. Cloning gives another handle to the same store.
pub struct Store<F: Fs, C: Clock> {
    inner: Arc<Inner<F, C>>,
}

impl<F: Fs, C: Clock> Clone for Store<F, C> {
    fn clone(&self) -> Self {
        Store {
            inner: Arc::clone(&self.inner),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn log_err(id: &PartitionId) -> impl FnOnce(LogError) -> StoreError + '_ {
    move |source| StoreError::Log {
        topic: id.0.clone(),
        partition: id.1,
        source,
    }
}

impl<F: Fs, C: Clock> Store<F, C> {
    /// Creates a topic with its partitions. Nothing is created when validation fails.
    pub async fn create_topic(&self, name: &str, config: TopicConfig) -> Result<(), StoreError> {
        validate_topic_name(name).map_err(StoreError::InvalidTopicName)?;
        config.validate().map_err(StoreError::InvalidConfig)?;
        if let Some(reason) = self.inner.refused_topics.get(name) {
            // Creating it again would write a fresh topic.conf over data it cannot read.
            return Err(StoreError::TopicRefused {
                topic: name.to_string(),
                reason: reason.clone(),
            });
        }
        if lock(&self.inner.topics).contains_key(name) {
            return Err(StoreError::TopicExists(name.to_string()));
        }
        let fs = &self.inner.fs;
        let dir = self.inner.root.join(layout::TOPICS_DIR).join(name);
        let io = |op: &'static str| move |source| StoreError::Io { op, source };
        fs.create_dir_all(&dir)
            .await
            .map_err(io("create topic directory"))?;
        const STEPS: [&str; 5] = [
            "create topic.conf",
            "write topic.conf",
            "sync topic.conf",
            "rename topic.conf",
            "sync topic directory",
        ];
        replace_atomically(
            fs,
            &dir,
            topic::TOPIC_CONF_FILE,
            "topic.conf.tmp",
            config.encode().as_bytes(),
        )
        .await
        .map_err(|(step, source)| StoreError::Io {
            op: step.named(&STEPS),
            source,
        })?;
        let mut report = StoreOpenReport::default();
        // A new topic's partitions hold nothing to salvage.
        let state = open_topic(
            fs,
            &self.inner.clock,
            &self.inner.root,
            name,
            config,
            &mut report,
            None,
        )
        .await?;
        // A new partition has no checkpoint yet: retention waits for the first one.
        for slot in &state.partitions {
            if let Slot::Open(part) = slot {
                part.log.set_retention_floor(0);
            }
        }
        lock(&self.inner.topics).insert(name.to_string(), Arc::new(state));
        Ok(())
    }

    /// Topic names and configurations.
    pub fn topics(&self) -> Vec<(String, TopicConfig)> {
        lock(&self.inner.topics)
            .iter()
            .map(|(n, t)| (n.clone(), t.config.clone()))
            .collect()
    }

    /// Topics whose `topic.conf` was unreadable at open, with the reason.
    pub fn refused_topics(&self) -> Vec<(String, String)> {
        self.inner
            .refused_topics
            .iter()
            .map(|(t, r)| (t.clone(), r.clone()))
            .collect()
    }

    fn topic(&self, topic: &str) -> Result<Arc<TopicState<F, C>>, StoreError> {
        if let Some(reason) = self.inner.refused_topics.get(topic) {
            return Err(StoreError::TopicRefused {
                topic: topic.to_string(),
                reason: reason.clone(),
            });
        }
        lock(&self.inner.topics)
            .get(topic)
            .cloned()
            .ok_or_else(|| StoreError::UnknownTopic(topic.to_string()))
    }

    /// An open partition, or why it is not available.
    pub fn partition(
        &self,
        topic: &str,
        partition: u32,
    ) -> Result<Arc<Partition<F, C>>, StoreError> {
        let state = self.topic(topic)?;
        match state.partitions.get(partition as usize) {
            None => Err(StoreError::UnknownPartition {
                topic: topic.to_string(),
                partition,
                partitions: state.config.partitions,
            }),
            Some(Slot::Refused(reason)) => Err(StoreError::PartitionRefused {
                topic: topic.to_string(),
                partition,
                reason: reason.clone(),
            }),
            Some(Slot::Open(p)) => Ok(Arc::clone(p)),
        }
    }

    /// Every open partition.
    pub fn partitions(&self) -> Vec<Arc<Partition<F, C>>> {
        lock(&self.inner.topics)
            .values()
            .flat_map(|t| t.partitions.iter())
            .filter_map(|s| match s {
                Slot::Open(p) => Some(Arc::clone(p)),
                Slot::Refused(_) => None,
            })
            .collect()
    }

    /// The store's background work, as one future: the ticker, frontier persistence
    /// and WAL checkpoints. Spawn the partition logs' loops with
    /// [`Store::spawn_background`].
    pub async fn run_ticker(self) {
        let config = self.inner.config.clone();
        let clock = self.inner.clock.clone();
        let mut last_frontier = clock.now();
        let mut last_checkpoint = clock.now();
        loop {
            clock.sleep(config.tick_interval).await;
            self.tick().await;
            let now = clock.now();
            if now.saturating_sub(last_frontier) >= config.frontier_persist_interval {
                last_frontier = now;
                if let Err(e) = self.persist_frontiers().await {
                    tracing::error!(error = %e, "frontier persistence failed");
                }
            }
            if now.saturating_sub(last_checkpoint) >= config.checkpoint_interval {
                last_checkpoint = now;
                self.commit_abandoned().await;
                if let Err(e) = self.checkpoint_wal().await {
                    tracing::error!(error = %e, "WAL checkpoint failed");
                }
            }
        }
    }

    /// Hands every partition log's loops and the store ticker to `spawner`.
    pub fn spawn_background(&self, spawner: &impl Spawn) {
        for part in self.partitions() {
            part.log.spawn_background(spawner);
        }
        let store = self.clone();
        spawner.spawn_loop(
            "ticker",
            Box::new(move || Box::pin(store.clone().run_ticker())),
        );
    }

    /// Closes every partition (drain, commit, persist the HWM), persists frontiers and
    /// the WAL checkpoint.
    pub async fn close(&self) -> Result<(), StoreError> {
        for part in self.partitions() {
            part.log.close().await.map_err(log_err(&part.id))?;
        }
        self.persist_frontiers().await?;
        self.checkpoint_wal().await
    }

    pub fn metrics(&self) -> &StoreMetrics {
        &self.inner.metrics
    }

    /// Per open partition: its log's status and counters.
    pub fn partition_statuses(&self) -> Vec<(PartitionId, LogStatus, MetricsSnapshot)> {
        self.partitions()
            .iter()
            .map(|p| (p.id.clone(), p.log.status(), p.log.metrics().snapshot()))
            .collect()
    }

    /// Partitions that refused to open, with the reason.
    pub fn refused(&self) -> Vec<(PartitionId, String)> {
        lock(&self.inner.topics)
            .iter()
            .flat_map(|(name, t)| {
                t.partitions
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, s)| match s {
                        Slot::Refused(reason) => Some(((name.clone(), i as u32), reason.clone())),
                        Slot::Open(_) => None,
                    })
            })
            .collect()
    }

    pub fn wal(&self) -> &Wal<F> {
        &self.inner.wal
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Races `future` against a sleep of `timeout`; `None` on timeout.
    pub async fn with_timeout<T>(
        &self,
        timeout: Duration,
        future: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        match race(future, self.inner.clock.sleep(timeout)).await {
            crate::log::notify::Either::Left(v) => Some(v),
            crate::log::notify::Either::Right(()) => None,
        }
    }
}
