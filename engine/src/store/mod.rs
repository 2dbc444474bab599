//! The store: topics of partitions under one data root, the ingress WAL and the produce
//! path, and queue semantics (leases, ack, nack, delay gate, consumer frontier).
//!
//! ```text
//! <root>/topics/<topic>/topic.conf       topic configuration
//! <root>/topics/<topic>/p%05d/           partition logs (see `log`)
//! <root>/wal/                            the ingress WAL (see `wal`)
//! ```
//!
//! **Produce.** A record is appended to the WAL and fsynced (group commit), then
//! committed into its partition log through the log's commit path; only then is it
//! acknowledged. An acknowledgement means the record will be visible to consumers
//! across any in-contract crash.
//!
//! **Recovery order on open.** (1) every partition log recovers (R1-R4; a refusal
//! marks that partition unavailable, the others open); before an R2 cut, every readable
//! record past the hole is written into the WAL again, as a plain entry when its entry
//! is gone and as a salvage copy of its entry otherwise (`salvage`, which opens the WAL
//! early for it: the cut never leaves a record fewer copies than it had); (2) the WAL
//! is read, and every entry past its partition's checkpoint (one of an entry and its
//! copies) is re-committed at a fresh offset; (3) only then does `open` return, so no new produce
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

pub mod error;
mod queue;
mod salvage;
pub mod topic;
pub mod wal;

pub use error::StoreError;
pub use topic::{TopicConfig, validate_topic_name};
pub use wal::{Checkpoint, PartitionId, Wal, WalOpenReport};

use crate::clock::Clock;
use crate::format::{layout, word};
use crate::fs::{File, Fs, OpenMode, read_exact_at};
use crate::log::notify::race;
use crate::log::{Log, LogError, LogStatus, MetricsSnapshot, Spawn};
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
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
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
    /// Opens the store at `root`: partitions recover (salvaging into the WAL what an R2
    /// cut would lose), then the WAL replays.
    pub async fn open(
        fs: F,
        clock: C,
        root: impl Into<PathBuf>,
        config: StoreConfig,
    ) -> Result<(Self, StoreOpenReport), StoreError> {
        let root = root.into();
        let topics_dir = root.join(layout::TOPICS_DIR);
        fs.create_dir_all(&topics_dir)
            .await
            .map_err(|source| StoreError::Io {
                op: "create data root",
                source,
            })?;
        let mut report = StoreOpenReport::default();
        // An R2 cut discards records the WAL is trusted to re-commit; the salvage keeps
        // those whose entry it lost, opening the WAL at the first cut that needs it.
        let mut opening =
            salvage::OpeningWal::new(fs.clone(), root.join("wal"), config.wal_segment_bytes);
        let mut topics = BTreeMap::new();
        let mut refused_topics = BTreeMap::new();
        let names = fs
            .list_dir(&topics_dir)
            .await
            .map_err(|source| StoreError::Io {
                op: "list topics",
                source,
            })?;
        for name in names {
            if validate_topic_name(&name).is_err() {
                continue;
            }
            let conf_path = topics_dir.join(&name).join(topic::TOPIC_CONF_FILE);
            if !fs
                .exists(&conf_path)
                .await
                .map_err(|source| StoreError::Io {
                    op: "stat topic.conf",
                    source,
                })?
            {
                tracing::warn!(topic = %name, "topic directory without topic.conf ignored");
                continue;
            }
            // An unreadable topic.conf closes that topic, not the store: its partitions
            // are left untouched and its WAL entries kept for a later replay.
            let config = match read_text(&fs, &conf_path).await {
                Ok(text) => {
                    TopicConfig::decode(&text).map_err(|e| format!("{}: {e}", conf_path.display()))
                }
                Err(StoreError::InvalidConfig(reason)) => Err(reason),
                Err(e) => return Err(e),
            };
            let config = match config {
                Ok(config) => config,
                Err(reason) => {
                    crate::alarm::topic_refused(&topics_dir.join(&name), &reason);
                    report.refused_topics.push((name.clone(), reason.clone()));
                    refused_topics.insert(name, reason);
                    continue;
                }
            };
            let state = open_topic(
                &fs,
                &clock,
                &root,
                &name,
                config,
                &mut report,
                Some(&mut opening),
            )
            .await?;
            topics.insert(name, Arc::new(state));
        }
        let salvage::OpenedWal {
            wal,
            checkpoint,
            entries,
            report: wal_report,
            salvaged,
        } = opening.finish().await.map_err(StoreError::Wal)?;
        report.wal = wal_report;
        report.salvaged = salvaged;

        // A recovery clamp (R4) may have cut a partition below its checkpoint's offset:
        // the records it writes there next are copies of entries past the checkpoint,
        // which replay must see. Lower the offset to the recovered HWM, durably, before
        // anything is committed.
        let mut checkpoint = checkpoint;
        let mut lowered = false;
        for state in topics.values() {
            for slot in &state.partitions {
                if let Slot::Open(part) = slot
                    && let Some(cp) = checkpoint.get_mut(&part.id)
                    && part.log.hwm() < cp.offset
                {
                    cp.offset = part.log.hwm();
                    lowered = true;
                }
            }
        }
        if lowered {
            wal.checkpoint(&checkpoint).await.map_err(StoreError::Wal)?;
        }
        let mut pending: BTreeMap<PartitionId, Pending> = BTreeMap::new();
        for (id, cp) in &checkpoint {
            let p = pending.entry(id.clone()).or_default();
            p.checkpoint = *cp;
            p.seq_end = cp.seq;
        }
        let store = Store {
            inner: Arc::new(Inner {
                fs,
                clock,
                root,
                config,
                topics: Mutex::new(topics),
                refused_topics,
                wal,
                pending: Mutex::new(pending),
                metrics: StoreMetrics::default(),
            }),
        };
        for part in store.partitions() {
            part.log
                .set_retention_floor(checkpoint.get(&part.id).map_or(0, |c| c.offset));
        }
        if report.wal.corrupt_entries > 0 || report.wal.skipped_bytes > 0 {
            // The WAL has an unreadable region: a torn last group commit (never
            // acknowledged) looks the same as a damaged acknowledged frame, so assume it
            // lost entries it cannot name. The hidden tails may hold the only copies:
            // expose them before the replay, which then skips the entries whose copies
            // became visible.
            for part in store.partitions() {
                report.hidden_exposed += part
                    .log
                    .expose_hidden_tail()
                    .await
                    .map_err(log_err(&part.id))?;
            }
        }
        // The replay commits at the recovered tail, reusing any offsets a cut or clamp
        // took back. A `consumer.offset` above the recovered HWM (a clamp of damaged
        // frames, or a damaged `hwm` word) would mark those re-committed records as
        // acknowledged: lower it, durably, before anything is committed. This reads the
        // word only to bound it; the queue state itself still loads on first touch.
        for part in store.partitions() {
            let bound = part.log.hwm();
            let dir = part.log.dir().to_path_buf();
            let stored = store.read_frontier_word(&part).await?;
            if let Ok(Some(value)) = stored
                && value > bound
            {
                crate::alarm::frontier_clamped(&dir, value, bound);
                add(&store.inner.metrics.frontier_clamps, 1);
                persist_frontier_word(&store.inner.fs, &dir, bound).await?;
            }
        }
        report.replayed = store.replay(entries, &checkpoint).await?;
        add(&store.inner.metrics.wal_replayed, report.replayed);
        Ok((store, report))
    }

    /// Re-commits WAL entries past their partition's checkpoint, in WAL order, except
    /// those with a copy already visible between the checkpoint's offset and the HWM.
    /// An entry and its salvage copies stand for one record: the first readable one is
    /// replayed in its root's place, and all of them then share its offset. A copy of an
    /// entry the checkpoint passed stands for a record below it and is skipped.
    async fn replay(
        &self,
        entries: Vec<wal::WalEntry>,
        checkpoint: &BTreeMap<PartitionId, Checkpoint>,
    ) -> Result<u64, StoreError> {
        let mut by_partition: BTreeMap<PartitionId, BTreeMap<u64, Vec<wal::WalEntry>>> =
            BTreeMap::new();
        for entry in entries {
            let floor = checkpoint
                .get(&entry.partition)
                .copied()
                .unwrap_or_default();
            let live = entry.seq >= floor.seq && entry.root() >= floor.seq;
            {
                let mut pending = lock(&self.inner.pending);
                let p = pending.entry(entry.partition.clone()).or_default();
                p.seq_end = p.seq_end.max(entry.seq + 1);
                if live {
                    p.entries.insert(entry.seq, None);
                }
            }
            if live {
                by_partition
                    .entry(entry.partition.clone())
                    .or_default()
                    .entry(entry.root())
                    .or_default()
                    .push(entry);
            }
        }
        let mut replayed = 0u64;
        for (id, roots) in by_partition {
            let Ok(partition) = self.partition(&id.0, id.1) else {
                tracing::error!(topic = %id.0, partition = id.1, entries = roots.len(),
                    "WAL entries for an unavailable partition kept for a later replay");
                continue;
            };
            let from = checkpoint.get(&id).map_or(0, |c| c.offset);
            let mut visible = visible_copies(&partition.log, from)
                .await
                .map_err(log_err(&id))?;
            let mut to_commit = Vec::new();
            {
                let mut pending = lock(&self.inner.pending);
                let p = pending.entry(id.clone()).or_default();
                for (root, mut members) in roots {
                    let seqs: Vec<u64> = members.iter().map(|e| e.seq).collect();
                    debug_assert!(seqs.windows(2).all(|w| w[0] < w[1]));
                    debug_assert!(members.iter().all(|e| e.root() == root));
                    let first = members.swap_remove(0);
                    debug_assert!(
                        members
                            .iter()
                            .all(|e| (&e.key, &e.payload) == (&first.key, &first.payload)),
                        "a copy holds its root's bytes"
                    );
                    let copy = (first.key, first.payload);
                    match visible
                        .get_mut(&copy)
                        .and_then(|offsets| offsets.pop_first())
                    {
                        // Already visible below the recovered HWM: covered. It stays
                        // pending at that offset until a checkpoint passes it, so the
                        // checkpoint's offset never rises above its copy while an
                        // earlier entry holds its seq back (a replay of every entry,
                        // after a lost checkpoint, commits old entries at new offsets:
                        // WAL order is then not offset order).
                        Some(offset) => {
                            for seq in seqs {
                                p.entries.insert(seq, Some(offset));
                            }
                        }
                        None => to_commit.push((seqs, copy)),
                    }
                }
            }
            for chunk in to_commit.chunks(self.inner.config.replay_batch_records.max(1)) {
                let range = partition
                    .log
                    .commit(chunk.iter().map(|(_, (k, v))| (k.as_slice(), v.as_slice())))
                    .await
                    .map_err(log_err(&id))?;
                let mut pending = lock(&self.inner.pending);
                let p = pending.entry(id.clone()).or_default();
                for ((seqs, _), offset) in chunk.iter().zip(range) {
                    for &seq in seqs {
                        p.entries.insert(seq, Some(offset));
                    }
                }
                replayed += chunk.len() as u64;
            }
        }
        if replayed > 0 {
            tracing::info!(replayed, "WAL entries re-committed");
        }
        Ok(replayed)
    }

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
        let tmp = dir.join("topic.conf.tmp");
        let file = fs
            .open(&tmp, OpenMode::CreateTruncate)
            .await
            .map_err(io("create topic.conf"))?;
        file.write_at(config.encode().as_bytes(), 0)
            .await
            .map_err(io("write topic.conf"))?;
        file.sync_data().await.map_err(io("sync topic.conf"))?;
        fs.rename(&tmp, &dir.join(topic::TOPIC_CONF_FILE))
            .await
            .map_err(io("rename topic.conf"))?;
        fs.sync_dir(&dir)
            .await
            .map_err(io("sync topic directory"))?;
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

    /// The partition a key maps to (CRC32C of the key modulo the partition count).
    pub fn partition_for_key(&self, topic: &str, key: &[u8]) -> Result<u32, StoreError> {
        let partitions = self.topic(topic)?.config.partitions;
        Ok(crc32c::crc32c(key) % partitions)
    }

    /// Produces one record: WAL append + fsync, then a durable commit into the partition.
    /// `Ok` is the acknowledgement.
    pub async fn produce(
        &self,
        topic: &str,
        partition: Option<u32>,
        key: &[u8],
        payload: &[u8],
    ) -> Result<Produced, StoreError> {
        let index = match partition {
            Some(p) => p,
            None => self.partition_for_key(topic, key)?,
        };
        let part = self.partition(topic, index)?;
        let max = part.log.config().record_bytes_max();
        let size = crate::format::envelope::encoded_len(key.len(), payload.len());
        if size > max {
            return Err(StoreError::RecordTooLarge { size, max });
        }
        let (seq, appended) = {
            // One lock across both appends: WAL order is offset order in this partition.
            let _order = lock(&part.produce_order);
            let mut pending = lock(&self.inner.pending);
            let seq = self
                .inner
                .wal
                .append(&part.id, key, payload)
                .map_err(StoreError::Wal)?;
            let appended = part.log.append(key, payload);
            let p = pending.entry(part.id.clone()).or_default();
            // Registered before anything is durable, so a checkpoint can never pass it.
            p.entries.insert(seq, appended.as_ref().ok().copied());
            p.seq_end = p.seq_end.max(seq + 1);
            (seq, appended)
        };
        // A failed log append leaves the WAL entry pending: a later replay commits it.
        let offset = appended.map_err(log_err(&part.id))?;
        self.inner.wal.sync_to(seq).await.map_err(StoreError::Wal)?;
        part.log.sync().await.map_err(log_err(&part.id))?;
        let range = offset..offset + 1;
        assert!(
            part.log.hwm() > offset,
            "acknowledging offset {offset} above the HWM"
        );
        add(&self.inner.metrics.produced, 1);
        Ok(Produced {
            partition: index,
            offset: range.start,
            wal_seq: seq,
        })
    }

    /// The partition's `consumer.offset` word: `Ok(None)` when absent, `Err(reason)`
    /// when unreadable as a word, empty included: the file only ever appears by
    /// renaming a temp file fsynced with its 8 bytes, so an empty one means that fsync
    /// was lost (the zero-length-after-rename bug class), and the restart at the log
    /// start it forces must be reported.
    async fn read_frontier_word(
        &self,
        part: &Partition<F, C>,
    ) -> Result<Result<Option<u64>, String>, StoreError> {
        let path = part.log.dir().join(layout::CONSUMER_OFFSET_FILE);
        crate::recovery::read_replaced_word_file(&self.inner.fs, &path)
            .await
            .map_err(|source| StoreError::Io {
                op: "read consumer.offset",
                source,
            })
    }

    /// Loads the partition's queue state from `consumer.offset` on first touch.
    async fn queue<'a>(
        &self,
        part: &'a Partition<F, C>,
    ) -> Result<async_lock::MutexGuard<'a, Option<Queue>>, StoreError> {
        let mut guard = part.queue.lock().await;
        if guard.is_none() {
            let stored = self.read_frontier_word(part).await?;
            let status = part.log.status();
            let value = match stored {
                Ok(v) => v.unwrap_or(status.log_start),
                Err(reason) => {
                    crate::alarm::frontier_reset(part.log.dir(), status.log_start, &reason);
                    add(&self.inner.metrics.frontier_clamps, 1);
                    status.log_start
                }
            };
            let clamped = value.clamp(status.log_start, status.hwm);
            if clamped != value {
                crate::alarm::frontier_clamped(part.log.dir(), value, clamped);
                add(&self.inner.metrics.frontier_clamps, 1);
            }
            let mut q = Queue::new(clamped);
            q.persisted_frontier = value;
            *guard = Some(q);
        }
        Ok(guard)
    }

    /// Up to `max` deliverable records of one partition, each leased for the topic's
    /// `lease_ms`: nacked and expired ones first, then new ones up to the HWM, stopping
    /// at the first record whose delay gate is closed. Does not wait.
    pub async fn receive(
        &self,
        topic: &str,
        partition: u32,
        max: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let config = self.topic(topic)?.config.clone();
        let part = self.partition(topic, partition)?;
        let mut guard = self.queue(&part).await?;
        let q = guard.as_mut().expect("queue loaded");
        let now = self.inner.clock.now();
        let wall_ms = part.log.wall_ms();
        let deadline = now + Duration::from_millis(config.lease_ms);
        let log_start = part.log.log_start();
        q.drop_below(log_start);
        let expired = q.expire(now);
        if expired > 0 {
            add(&self.inner.metrics.leases_expired, expired);
        }
        // Every read comes before any lease: a caller that drops this future (a client
        // that gave up waiting) leaves no lease behind on a record it never returned.
        let ready: Vec<u64> = q.ready.iter().take(max).copied().collect();
        let mut redelivered = Vec::new();
        let mut settle = Vec::new();
        for offset in ready {
            let batch = match part.log.read(offset, 1).await {
                Ok(b) => b,
                Err(LogError::OffsetBeforeLogStart { .. }) => {
                    settle.push(offset);
                    continue;
                }
                Err(e) => return Err(log_err(&part.id)(e)),
            };
            match batch.records.into_iter().next() {
                Some(record) if record.offset == offset => redelivered.push(record),
                _ => settle.push(offset),
            }
        }
        let mut fresh = Vec::new();
        let mut skips = 0u64;
        let mut gate = None;
        let mut scanned_to_end = false;
        let mut next_scan = q.next_scan;
        while redelivered.len() + fresh.len() < max {
            let want = max - redelivered.len() - fresh.len();
            let batch = match part.log.read(next_scan, want).await {
                Ok(b) => b,
                Err(LogError::OffsetBeforeLogStart { log_start, .. }) => {
                    // Forgetting what retention deleted loses no delivery.
                    q.drop_below(log_start);
                    next_scan = next_scan.max(q.next_scan);
                    continue;
                }
                Err(e) => return Err(log_err(&part.id)(e)),
            };
            if batch.next_offset == next_scan {
                scanned_to_end = true;
                break;
            }
            let mut gated = false;
            let mut skipped = batch.skipped.iter().peekable();
            for record in batch.records {
                while let Some(s) = skipped.next_if(|s| **s < record.offset) {
                    next_scan = *s + 1;
                    settle.push(*s);
                    skips += 1;
                }
                let opens_at = record.committed_at_ms.saturating_add(config.delay_ms);
                if config.delay_ms > 0 && opens_at > wall_ms {
                    // Commit times never decrease, so nothing after this one is open either.
                    gate = Some(opens_at);
                    gated = true;
                    break;
                }
                next_scan = record.offset + 1;
                fresh.push(record);
            }
            if gated {
                break;
            }
            for s in skipped {
                next_scan = *s + 1;
                settle.push(*s);
                skips += 1;
            }
            next_scan = next_scan.max(batch.next_offset);
        }
        // No await below: the queue changes all at once, or not at all.
        // A scan that stopped at `max` saw neither the gate nor the end of the log: it
        // keeps the gate receivers parked on (the ticker then wakes them, at worst once
        // too early) instead of clearing it.
        if gate.is_some() || scanned_to_end {
            q.gate_opens_at_ms = gate;
        }
        if gate.is_some() {
            add(&self.inner.metrics.delay_gate_holds, 1);
        }
        q.next_scan = next_scan;
        for offset in settle {
            q.settle(offset);
        }
        add(&self.inner.metrics.records_skipped, skips);
        let mut out = Vec::with_capacity(redelivered.len() + fresh.len());
        for record in redelivered {
            let attempt = q.lease(record.offset, deadline);
            add(&self.inner.metrics.redeliveries, 1);
            out.push(self.delivery(&part.id, record, attempt));
        }
        for record in fresh {
            let attempt = q.lease(record.offset, deadline);
            out.push(self.delivery(&part.id, record, attempt));
        }
        add(&self.inner.metrics.deliveries, out.len() as u64);
        // Leases this receive expired and left for others (it stopped at `max`) are news
        // to receivers parked on the partition: the ticker will find nothing left to
        // expire, so tell them here.
        if expired > 0 && !q.ready.is_empty() {
            part.log.notify_all();
        }
        Ok(out)
    }

    fn delivery(&self, id: &PartitionId, record: crate::log::Record, attempt: u32) -> Delivery {
        Delivery {
            topic: id.0.clone(),
            partition: id.1,
            offset: record.offset,
            key: record.key,
            payload: record.payload,
            committed_at_ms: record.committed_at_ms,
            attempt,
        }
    }

    /// Like [`Store::receive`], but parks until at least one record is deliverable.
    /// Waiters are woken by commits, nacks, lease expiry and opening delay gates (all
    /// broadcast on the partition log); there is no timer per waiter.
    pub async fn receive_wait(
        &self,
        topic: &str,
        partition: u32,
        max: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let part = self.partition(topic, partition)?;
        let mut parked = false;
        loop {
            let listener = part.log.listen();
            let out = self.receive(topic, partition, max).await?;
            if !out.is_empty() {
                if parked {
                    add(&self.inner.metrics.parked_receives_woken, 1);
                }
                return Ok(out);
            }
            if part.log.status().closed {
                return Ok(out);
            }
            listener.await;
            parked = true;
        }
    }

    /// Settles a delivered record.
    pub async fn ack(&self, topic: &str, partition: u32, offset: u64) -> Result<(), StoreError> {
        let part = self.partition(topic, partition)?;
        let mut guard = self.queue(&part).await?;
        let q = guard.as_mut().expect("queue loaded");
        if !q.is_outstanding(offset) {
            return Err(StoreError::NotOutstanding {
                topic: topic.to_string(),
                partition,
                offset,
            });
        }
        q.settle(offset);
        add(&self.inner.metrics.acks, 1);
        Ok(())
    }

    /// Makes a delivered record deliverable again at once and wakes receivers.
    pub async fn nack(&self, topic: &str, partition: u32, offset: u64) -> Result<(), StoreError> {
        let part = self.partition(topic, partition)?;
        {
            let mut guard = self.queue(&part).await?;
            let q = guard.as_mut().expect("queue loaded");
            if !q.leased.contains_key(&offset) {
                return Err(StoreError::NotOutstanding {
                    topic: topic.to_string(),
                    partition,
                    offset,
                });
            }
            q.leased.remove(&offset);
            q.ready.insert(offset);
        }
        add(&self.inner.metrics.nacks, 1);
        part.log.notify_all();
        Ok(())
    }

    /// The consumer frontier of a partition (loading it if needed).
    pub async fn frontier(&self, topic: &str, partition: u32) -> Result<u64, StoreError> {
        let part = self.partition(topic, partition)?;
        let guard = self.queue(&part).await?;
        Ok(guard.as_ref().map_or(0, |q| q.frontier))
    }

    /// One ticker step: expire leases and wake receivers when a lease expired or a
    /// delay gate opened.
    pub async fn tick(&self) {
        let now = self.inner.clock.now();
        for part in self.partitions() {
            let wall_ms = part.log.wall_ms();
            let wake = {
                let mut guard = part.queue.lock().await;
                let Some(q) = guard.as_mut() else { continue };
                let expired = q.expire(now);
                add(&self.inner.metrics.leases_expired, expired);
                let gate_open = q.gate_opens_at_ms.is_some_and(|at| at <= wall_ms);
                if gate_open {
                    q.gate_opens_at_ms = None;
                }
                expired > 0 || gate_open
            };
            if wake {
                part.log.notify_all();
            }
        }
    }

    /// Persists every loaded frontier that moved: temp file, fsync, rename over,
    /// directory fsync. Never past the partition's persisted HWM.
    pub async fn persist_frontiers(&self) -> Result<(), StoreError> {
        for part in self.partitions() {
            let mut guard = part.queue.lock().await;
            let Some(q) = guard.as_mut() else { continue };
            let value = q.frontier.min(part.log.persisted_hwm());
            if value == q.persisted_frontier {
                continue;
            }
            let dir = part.log.dir().to_path_buf();
            persist_frontier_word(&self.inner.fs, &dir, value).await?;
            q.persisted_frontier = value;
            add(&self.inner.metrics.frontier_persists, 1);
        }
        Ok(())
    }

    /// Advances every partition's WAL checkpoint over the entries below its persisted
    /// HWM, persists it when it moved, and deletes WAL segments it fully covers.
    pub async fn checkpoint_wal(&self) -> Result<(), StoreError> {
        let parts = self.partitions();
        let persisted: BTreeMap<PartitionId, u64> = parts
            .iter()
            .map(|p| (p.id.clone(), p.log.persisted_hwm()))
            .collect();
        let (checkpoint, moved) = {
            let mut pending = lock(&self.inner.pending);
            let mut moved = false;
            for (id, p) in pending.iter_mut() {
                let Some(&hwm) = persisted.get(id) else {
                    continue;
                };
                // Only a prefix of the WAL can be dropped: the checkpoint names one seq.
                // Entries behind an uncovered one stay pending even when covered.
                while let Some((&seq, &offset)) = p.entries.first_key_value() {
                    if offset.is_some_and(|o| o < hwm) {
                        p.entries.remove(&seq);
                    } else {
                        break;
                    }
                }
                // The replay looks for copies of the entries past the checkpoint from its
                // offset up: none of their known copies may lie below it.
                let lowest_copy = p.entries.values().flatten().copied().min();
                let next = Checkpoint {
                    seq: p.entries.keys().next().copied().unwrap_or(p.seq_end),
                    offset: lowest_copy.map_or(hwm, |o| o.min(hwm)),
                };
                if next.seq > p.checkpoint.seq || next.offset > p.checkpoint.offset {
                    p.checkpoint = Checkpoint {
                        seq: next.seq.max(p.checkpoint.seq),
                        offset: next.offset.max(p.checkpoint.offset),
                    };
                    moved = true;
                }
            }
            let checkpoint: BTreeMap<PartitionId, Checkpoint> = pending
                .iter()
                .map(|(id, p)| (id.clone(), p.checkpoint))
                .collect();
            (checkpoint, moved)
        };
        if !moved {
            return Ok(());
        }
        let deleted = self
            .inner
            .wal
            .checkpoint(&checkpoint)
            .await
            .map_err(StoreError::Wal)?;
        // Retention may now delete up to the durable checkpoint's offset, no further:
        // replay reads the copies above it.
        for part in &parts {
            if let Some(cp) = checkpoint.get(&part.id) {
                part.log.set_retention_floor(cp.offset);
            }
        }
        add(&self.inner.metrics.wal_checkpoints, 1);
        add(
            &self.inner.metrics.wal_segments_deleted,
            deleted.len() as u64,
        );
        Ok(())
    }

    /// Persists every partition's HWM now (what the HWM persister does on its cadence).
    pub async fn persist_hwms(&self) -> Result<(), StoreError> {
        for part in self.partitions() {
            part.log.persist_hwm().await.map_err(log_err(&part.id))?;
        }
        Ok(())
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

async fn open_topic<F: Fs, C: Clock>(
    fs: &F,
    clock: &C,
    root: &Path,
    name: &str,
    config: TopicConfig,
    report: &mut StoreOpenReport,
    mut salvage: Option<&mut salvage::OpeningWal<F>>,
) -> Result<TopicState<F, C>, StoreError> {
    let mut partitions = Vec::new();
    for index in 0..config.partitions {
        let dir = layout::partition_dir(root, name, index);
        let id = (name.to_string(), index);
        let (fs, clock, log_config) = (fs.clone(), clock.clone(), config.log.clone());
        let opened = match salvage.as_deref_mut() {
            Some(salvage) => {
                let mut salvage = salvage.partition(&id);
                Log::open_salvaging(fs, clock, &dir, log_config, &mut salvage).await
            }
            None => Log::open(fs, clock, &dir, log_config).await,
        };
        match opened {
            Ok((log, open_report)) => {
                report.partitions_opened += 1;
                report.partitions.insert(id.clone(), open_report);
                partitions.push(Slot::Open(Arc::new(Partition {
                    id,
                    log,
                    queue: async_lock::Mutex::new(None),
                    produce_order: Mutex::new(()),
                })));
            }
            Err(LogError::Corruption(c)) => {
                report.refused.push((id, c.to_string()));
                partitions.push(Slot::Refused(c.to_string()));
            }
            Err(e) => return Err(log_err(&id)(e)),
        }
    }
    Ok(TopicState { config, partitions })
}

/// The offsets of the records in `[from, hwm)`, per (key, payload).
async fn visible_copies<F: Fs, C: Clock>(
    log: &Log<F, C>,
    from: u64,
) -> Result<BTreeMap<(Vec<u8>, Vec<u8>), std::collections::BTreeSet<u64>>, LogError> {
    let mut copies = BTreeMap::new();
    let mut next = from.max(log.log_start());
    loop {
        let batch = log.read(next, 1000).await?;
        if batch.next_offset == next {
            return Ok(copies);
        }
        next = batch.next_offset;
        for r in batch.records {
            copies
                .entry((r.key, r.payload))
                .or_insert_with(std::collections::BTreeSet::new)
                .insert(r.offset);
        }
    }
}

async fn read_text<F: Fs>(fs: &F, path: &Path) -> Result<String, StoreError> {
    let io = |op: &'static str| move |source| StoreError::Io { op, source };
    let file = fs.open(path, OpenMode::Read).await.map_err(io("open"))?;
    let len = file.len().await.map_err(io("stat"))?;
    if len > 1 << 16 {
        return Err(StoreError::InvalidConfig(format!(
            "{} is too large",
            path.display()
        )));
    }
    let mut bytes = vec![0u8; len as usize];
    read_exact_at(&file, &mut bytes, 0)
        .await
        .map_err(io("read"))?;
    String::from_utf8(bytes)
        .map_err(|_| StoreError::InvalidConfig(format!("{} is not UTF-8", path.display())))
}

/// Replaces the partition's `consumer.offset` with `value`, between the two events of
/// the engine's account: begun, and (only once the directory fsync returned) durable.
async fn persist_frontier_word<F: Fs>(fs: &F, dir: &Path, value: u64) -> Result<(), StoreError> {
    crate::alarm::frontier_persisting(dir, value);
    write_word_atomically(
        fs,
        dir,
        layout::CONSUMER_OFFSET_FILE,
        layout::CONSUMER_OFFSET_TMP_FILE,
        value,
    )
    .await?;
    crate::alarm::frontier_persisted(dir, value);
    Ok(())
}

/// Replaces `dir/name` with an 8-byte value: temp file, fsync, rename over, dir fsync.
async fn write_word_atomically<F: Fs>(
    fs: &F,
    dir: &Path,
    name: &str,
    tmp_name: &str,
    value: u64,
) -> Result<(), StoreError> {
    let io = |op: &'static str| move |source| StoreError::Io { op, source };
    let tmp = dir.join(tmp_name);
    let file = fs
        .open(&tmp, OpenMode::CreateTruncate)
        .await
        .map_err(io("create temp file"))?;
    file.write_at(&word::encode(value), 0)
        .await
        .map_err(io("write temp file"))?;
    file.sync_data().await.map_err(io("sync temp file"))?;
    fs.rename(&tmp, &dir.join(name))
        .await
        .map_err(io("rename"))?;
    fs.sync_dir(dir).await.map_err(io("sync directory"))?;
    Ok(())
}
