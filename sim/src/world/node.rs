//! The engine's node: a store on the simulated disk, serving requests from clients
//! outside the node. Killing the node drops every task here, with the store in it;
//! requests in flight lose their reply channel, so a client sees "unknown outcome".

use super::alarms::tagged;
use super::cancel::{Cancels, cancel_after};
use super::engine_call::{engine, engine_pinned};
use super::observe::ObservingFs;
use super::recorder::{Recorder, Scope, Shared};
use super::workload::Workload;
use crate::clock::SimClock;
use crate::history::{FaultKind, Incarnation, ProduceId, RequestKind, TopicPartition};
use cafelog_engine::log::Spawn;
use cafelog_engine::store::{Delivery, Produced, Store, StoreConfig};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub type SimStore = Store<ObservingFs, SimClock>;

/// Where the node keeps its data on the simulated disk.
pub const DATA_ROOT: &str = "/data";

/// The ingress WAL's directory, where the store puts it under [`DATA_ROOT`].
pub fn wal_dir() -> PathBuf {
    PathBuf::from(DATA_ROOT).join("wal")
}

/// Whether `path` is one of [`checkpoint_files`], by its name first: asked of every
/// write the engine makes.
pub fn is_checkpoint_file(path: &std::path::Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str());
    (name == Some(cafelog_engine::store::wal::CHECKPOINT_FILE)
        || name == Some(cafelog_engine::format::wal::CHECKPOINT_TMP_FILE))
        && path.parent() == Some(wal_dir().as_path())
}

/// The WAL checkpoint and the temp file the engine renames over it.
pub fn checkpoint_files() -> [PathBuf; 2] {
    let dir = wal_dir();
    [
        dir.join(cafelog_engine::store::wal::CHECKPOINT_FILE),
        dir.join(cafelog_engine::format::wal::CHECKPOINT_TMP_FILE),
    ]
}

/// The WAL checkpoint's seq per partition, as the page cache shows the file and the
/// reference decoder reads it; `None` when there is no file or it does not read.
pub fn wal_checkpoint_seqs(fs: &crate::fs::SimFs) -> Option<Vec<(TopicPartition, u64)>> {
    let entries = wal_checkpoint_entries(fs)?;
    Some(entries.into_iter().map(|(tp, seq, _)| (tp, seq)).collect())
}

/// The WAL checkpoint in the page cache: each partition's seq and offset (retention's
/// floor), `None` without a readable file.
pub fn wal_checkpoint_entries(fs: &crate::fs::SimFs) -> Option<Vec<(TopicPartition, u64, u64)>> {
    let bytes = fs.visible_bytes(&wal_dir().join(cafelog_engine::store::wal::CHECKPOINT_FILE))?;
    let entries = crate::reference::wal::checkpoint(&bytes)?;
    Some(
        entries
            .into_iter()
            .map(|(topic, partition, seq, offset)| {
                (TopicPartition::new(topic, partition), seq, offset)
            })
            .collect(),
    )
}

/// A request from a client.
pub enum Request {
    Produce {
        /// The produce id the payload carries, for the history.
        id: ProduceId,
        topic: String,
        key: Vec<u8>,
        payload: Vec<u8>,
        reply: async_channel::Sender<Result<Produced, String>>,
    },
    Receive {
        topic: String,
        partition: u32,
        max: usize,
        /// How long the receive may park on the server before answering empty.
        park: Duration,
        reply: async_channel::Sender<Result<Vec<Delivery>, String>>,
    },
    Settle {
        topic: String,
        partition: u32,
        offset: u64,
        ack: bool,
        reply: async_channel::Sender<Result<(), String>>,
    },
}

/// What the node needs; cloned into every incarnation.
#[derive(Clone)]
pub struct NodeContext {
    pub fs: ObservingFs,
    pub clock: SimClock,
    pub recorder: Shared,
    pub requests: async_channel::Receiver<Request>,
    pub workload: Arc<Workload>,
    /// The running store, for the world's observations (set after open).
    pub current: Arc<Mutex<Option<SimStore>>>,
    /// Set when the engine hit a fatal I/O error and must be restarted.
    pub restart_requested: Arc<AtomicBool>,
    /// Which requests the server drops part-way.
    pub cancels: Arc<Cancels>,
    /// Which starts of the engine's background loops are dropped part-way (their own
    /// stream, so request draws stay as they were).
    pub loop_drops: Arc<Cancels>,
    /// Which acks and nacks the server drops part-way (their own stream too).
    pub settle_drops: Arc<Cancels>,
}

/// How long a dropped background loop stays down before its supervisor starts it
/// again.
const LOOP_RESTART_DELAY: Duration = Duration::from_millis(20);

/// Spawns the engine's background loops as tasks of one incarnation. A loop start the
/// seed picks is dropped at one of its await points, recorded as a cancel fault, and
/// started again after [`LOOP_RESTART_DELAY`] (as a supervisor restarts a failed task);
/// nothing is dropped after the heal.
struct NodeSpawner {
    incarnation: Incarnation,
    recorder: Shared,
    drops: Arc<Cancels>,
}

impl Spawn for NodeSpawner {
    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send + 'static>>) {
        // Spawned on the current node: killed with it.
        drop(madsim::task::spawn(tagged(
            self.incarnation,
            engine_pinned(future),
        )));
    }

    fn spawn_loop(&self, name: &'static str, start: cafelog_engine::log::LoopStart) {
        let recorder = self.recorder.clone();
        let drops = Arc::clone(&self.drops);
        let supervisor = async move {
            loop {
                let after = drops.draw(recorder.lock().healed);
                let run = cancel_after(engine_pinned(start()), after, || !recorder.lock().healed);
                if run.await.is_some() {
                    // The loop ended on its own: its log or store closed or poisoned.
                    return;
                }
                {
                    let mut rec = recorder.lock();
                    rec.fault(
                        FaultKind::Cancel {
                            request: RequestKind::Loop,
                        },
                        None,
                        Some(name),
                    );
                    rec.paths.loops_dropped += 1;
                }
                madsim::time::sleep(LOOP_RESTART_DELAY).await;
            }
        };
        drop(madsim::task::spawn(tagged(self.incarnation, supervisor)));
    }
}

/// The node's main task. An I/O error that fails the open, or poisons the WAL or a
/// partition, is fatal to the process: the node asks to be restarted and stops serving
/// (retrying in the same process would trust data an fsync failed to persist).
pub async fn run(ctx: NodeContext) {
    // Every task of this incarnation carries it, so that what the engine raises while
    // its futures are dropped after a kill is told apart from the next incarnation's.
    let incarnation = ctx.recorder.lock().history.incarnation();
    tagged(incarnation, serve_node(ctx, incarnation)).await;
}

async fn serve_node(ctx: NodeContext, incarnation: Incarnation) {
    let store = match try_open(&ctx).await {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!(error = %e, "store open failed; restart requested");
            ctx.restart_requested.store(true, Ordering::SeqCst);
            return;
        }
    };
    *ctx.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(store.clone());
    {
        let mut rec = ctx.recorder.lock();
        rec.store_open = true;
        rec.store_opened_ms = rec.now_ms();
    }
    store.spawn_background(&NodeSpawner {
        incarnation,
        recorder: ctx.recorder.clone(),
        drops: Arc::clone(&ctx.loop_drops),
    });
    drop(madsim::task::spawn(tagged(
        incarnation,
        watchdog(
            store.clone(),
            ctx.recorder.clone(),
            Arc::clone(&ctx.restart_requested),
        ),
    )));
    while let Ok(request) = ctx.requests.recv().await {
        let store = store.clone();
        let healed = ctx.recorder.lock().healed;
        let cancel = match request {
            Request::Settle { .. } => ctx.settle_drops.draw(healed),
            _ => ctx.cancels.draw(healed),
        };
        drop(madsim::task::spawn(tagged(
            incarnation,
            serve(store, ctx.recorder.clone(), request, cancel),
        )));
    }
}

/// Records poisoned partitions and asks for a restart once the WAL or a partition is
/// poisoned. (A poisoned WAL fails every later produce; records appended to a log
/// before the failure may still be committed by its flusher, unacknowledged, which is
/// allowed, so the WAL is not reported as a partition's poison.)
async fn watchdog(store: SimStore, recorder: Shared, restart_requested: Arc<AtomicBool>) {
    loop {
        madsim::time::sleep(WATCHDOG_PERIOD).await;
        let wal_poisoned = store.wal().poisoned().is_some();
        let poisoned: Vec<(TopicPartition, u64)> = store
            .partition_statuses()
            .into_iter()
            .filter_map(|((t, p), s, _)| s.hwm_at_poison.map(|h| (TopicPartition::new(t, p), h)))
            .collect();
        if wal_poisoned || !poisoned.is_empty() {
            let mut rec = recorder.lock();
            let now = rec.now_ms();
            for (tp, hwm) in poisoned {
                report_poison(&mut rec, now, &tp, hwm);
            }
            drop(rec);
            restart_requested.store(true, Ordering::SeqCst);
            return;
        }
    }
}

/// Records `tp` poisoned at `now` (once per incarnation), with the HWM as it stood when
/// the poison struck (noticed up to a period later): nothing may move it afterwards.
pub(super) fn report_poison(rec: &mut Recorder, now: u64, tp: &TopicPartition, hwm: u64) {
    if rec.poisoned_seen.insert(tp.clone()) {
        rec.paths.partitions_poisoned += 1;
        rec.history.hwm_observed(now, tp, hwm, None, None);
        rec.history.partition_poisoned(now, tp);
    }
}

/// The store's frontier persister period: the spec's ~100 ms, set by the world (not
/// taken from the engine's default) so that `frontier_progress` holds the engine to a
/// period the engine did not choose.
pub const FRONTIER_PERSIST_MS: u64 = 100;

/// How soon a poisoned engine is noticed (an operator's restart, compressed).
const WATCHDOG_PERIOD: Duration = Duration::from_millis(100);

async fn try_open(ctx: &NodeContext) -> Result<SimStore, String> {
    let (store, report) = engine(Store::open(
        ctx.fs.clone(),
        ctx.clock.clone(),
        PathBuf::from(DATA_ROOT),
        StoreConfig {
            wal_segment_bytes: ctx.workload.wal_segment_bytes,
            frontier_persist_interval: Duration::from_millis(FRONTIER_PERSIST_MS),
            ..StoreConfig::default()
        },
    ))
    .await
    .map_err(|e| e.to_string())?;
    // The refusals, before anything below can fail (rule 8 judges what the refusing
    // incarnation changes once the world knows).
    {
        let mut rec = ctx.recorder.lock();
        let now = rec.now_ms();
        let incarnation = rec.history.incarnation();
        for ((topic, partition), reason) in &report.refused {
            let tp = TopicPartition::new(topic.clone(), *partition);
            rec.history.partition_refused(now, &tp, reason);
            rec.refusal_known(&Scope::Partition(tp), incarnation);
            rec.paths.refusals += 1;
        }
        for (topic, _) in &report.refused_topics {
            rec.refusal_known(&Scope::Topic(topic.clone()), incarnation);
        }
    }
    // A topic the open refused (its topic.conf unreadable) is not created again.
    let existing: Vec<String> = store
        .topics()
        .into_iter()
        .map(|(n, _)| n)
        .chain(store.refused_topics().into_iter().map(|(n, _)| n))
        .collect();
    for plan in &ctx.workload.topics {
        if !existing.contains(&plan.name) {
            engine(store.create_topic(&plan.name, plan.config.clone()))
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    let mut frontiers = Vec::new();
    for part in store.partitions() {
        // What the durable `consumer.offset` holds (old or new, never torn, is the
        // property judged), read before the engine loads and clamps it. The value
        // recorded is read again below, with no await before the record: a flip
        // between this read and the record would otherwise be one the word left does
        // not show (helper-111). This read stays for the disk's draws, which every
        // seed's run depends on.
        let path = part
            .log
            .dir()
            .join(cafelog_engine::format::layout::CONSUMER_OFFSET_FILE);
        if let Err(e) = cafelog_engine::recovery::read_word_file(&ctx.fs.inner, &path).await {
            return Err(e.to_string());
        }
        frontiers.push((
            part.id.clone(),
            path,
            part.log.log_start(),
            part.log.metrics().snapshot(),
        ));
    }
    {
        let mut rec = ctx.recorder.lock();
        let now = rec.now_ms();
        rec.paths.topics_refused += report.refused_topics.len() as u64;
        for open in report.partitions.values() {
            match open.truncation.map(|t| t.0) {
                Some(cafelog_engine::recovery::TruncationRule::TornTail) => {
                    rec.paths.torn_tails_truncated += 1
                }
                Some(cafelog_engine::recovery::TruncationRule::HoleAboveHwm) => {
                    rec.paths.holes_truncated += 1
                }
                None => {}
            }
            if open.recorded_loss_records > 0 {
                rec.paths.recorded_clamps += 1;
            }
            if open.zero_tail_bytes > 0 {
                rec.paths.zero_tails_at_open += 1;
            }
            rec.paths.hidden_records += open.hidden_records;
        }
        rec.paths.wal_replayed += report.replayed;
        for open in report.partitions.values() {
            rec.paths.records_salvaged += open.salvaged;
            rec.paths.salvage_copies += open.salvage_copied;
        }
        for ((topic, partition), path, log_start, metrics) in frontiers {
            let tp = TopicPartition::new(topic, partition);
            let raw = rec.word_as_opened(&path);
            // The word the open left; the load's own observation (with what the engine
            // loaded) is recorded from the engine's account when the queue first loads.
            let found = rec.durable_frontiers.get(&tp).copied().flatten();
            rec.history.frontier_opened(now, &tp, found, raw);
            // The log start recovery found, before the reaper can move it: a segment gone by
            // now was deleted before this open scanned the partition.
            rec.history.log_start_observed(now, &tp, log_start);
            rec.history.engine_counters(
                now,
                &tp,
                metrics.recorded_loss_records,
                metrics.records_skipped,
            );
        }
    }
    // The spec loads a partition's frontier on the first touch of its queue. Some runs
    // ask for every one here, before any client can touch it; the rest leave the loads
    // to the clients (a receive, or an ack of an earlier incarnation's delivery).
    if ctx.workload.frontier_at_open {
        for part in store.partitions() {
            engine(store.frontier(&part.id.0, part.id.1))
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(store)
}

/// The answer a dropped request gives its client.
const CANCELLED: &str = "cancelled";

/// Records that the server dropped a request's engine future.
fn cancelled(recorder: &Shared, request: RequestKind, tp: Option<&TopicPartition>) {
    recorder
        .lock()
        .fault(FaultKind::Cancel { request }, tp, None);
}

/// One request, served in its own task; dropped after `cancel` pending polls when the
/// seed picked it ([`super::cancel`]). The engine's futures are boxed (by [`engine`])
/// so that this future stays small: madsim copies a task's whole future when it spawns
/// it (several times, inside `async_task`), and `serve` is spawned once per request.
async fn serve(store: SimStore, recorder: Shared, request: Request, cancel: Option<u32>) {
    match request {
        Request::Produce {
            id,
            topic,
            key,
            payload,
            reply,
        } => {
            let call = engine(store.produce(&topic, None, &key, &payload));
            let result = match cancel_after(call, cancel, || !recorder.lock().healed).await {
                Some(result) => result.map_err(|e| e.to_string()),
                None => {
                    cancelled(&recorder, RequestKind::Produce, None);
                    Err(CANCELLED.to_owned())
                }
            };
            let produced = result.as_ref().ok().copied();
            // Recorded in the same step as the send, like a delivery: a reply the
            // producer only reads after a crash (and the restart, and whatever recovery
            // did) was still made by this incarnation, at this moment.
            if reply.send(result).await.is_ok()
                && let Some(produced) = produced
            {
                let mut rec = recorder.lock();
                let now = rec.now_ms();
                let tp = TopicPartition::new(topic.clone(), produced.partition);
                rec.history
                    .produce_ack(now, id, &tp, Some(produced.offset), None);
                rec.note_acked(id);
            }
        }
        Request::Receive {
            topic,
            partition,
            max,
            park,
            reply,
        } => {
            let tp = TopicPartition::new(topic.clone(), partition);
            let (serial, asked) = recorder.lock().begin_receive(tp.clone());
            let waited =
                engine(store.with_timeout(park, store.receive_wait(&topic, partition, max)));
            let result = match cancel_after(waited, cancel, || !recorder.lock().healed).await {
                Some(answer) => answer.unwrap_or(Ok(Vec::new())).map_err(|e| e.to_string()),
                None => {
                    cancelled(&recorder, RequestKind::Receive, Some(&tp));
                    Err(CANCELLED.to_owned())
                }
            };
            let (delivered, error) = match &result {
                Ok(d) => (d.clone(), None),
                Err(e) => (Vec::new(), Some(e.clone())),
            };
            // Recorded in the same step as the send (no other task runs in between), so
            // the history has each answer at the moment and incarnation it happened.
            let claimed = reply.send(result).await.is_ok();
            let mut rec = recorder.lock();
            rec.receiving.remove(&serial);
            let now = rec.now_ms();
            if !claimed {
                if !delivered.is_empty() {
                    let offsets = delivered.iter().map(|d| d.offset).collect();
                    let ids: Vec<_> = delivered
                        .iter()
                        .map(|d| crate::history::parse_payload_id(&d.payload).ok())
                        .collect();
                    // A late ack of the lease (a consumer settling what it took before
                    // a crash) consumes the record it carried.
                    for (d, id) in delivered.iter().zip(&ids) {
                        match id {
                            Some(id) => rec.carried.insert((tp.clone(), d.offset), *id),
                            None => rec.carried.remove(&(tp.clone(), d.offset)),
                        };
                    }
                    rec.history
                        .deliveries_unclaimed(now, &tp, offsets, ids, asked);
                }
            } else if delivered.is_empty() {
                rec.history.receive_empty(now, &tp, asked, error);
            } else {
                for d in &delivered {
                    rec.history.delivery(
                        now,
                        &tp,
                        d.offset,
                        &d.key,
                        &d.payload,
                        d.committed_at_ms,
                        d.attempt,
                    );
                    rec.history.asked_at(asked);
                    match crate::history::parse_payload_id(&d.payload) {
                        Ok(id) => rec.carried.insert((tp.clone(), d.offset), id),
                        Err(_) => rec.carried.remove(&(tp.clone(), d.offset)),
                    };
                }
            }
        }
        Request::Settle {
            topic,
            partition,
            offset,
            ack,
            reply,
        } => {
            let tp = TopicPartition::new(topic.clone(), partition);
            let call = engine(async {
                if ack {
                    store.ack(&topic, partition, offset).await
                } else {
                    store.nack(&topic, partition, offset).await
                }
            });
            let result = match cancel_after(call, cancel, || !recorder.lock().healed).await {
                Some(result) => result.map_err(|e| e.to_string()),
                None => {
                    // Dropped before it returned: no effect, so no ack or nack recorded.
                    cancelled(&recorder, RequestKind::Settle, Some(&tp));
                    recorder.lock().paths.settles_dropped += 1;
                    Err(CANCELLED.to_owned())
                }
            };
            if result.is_ok() {
                // Recorded here, before any other task runs, so the history never shows
                // a frontier moving over this offset before its ack.
                let mut rec = recorder.lock();
                let now = rec.now_ms();
                if ack {
                    rec.history.ack(now, &tp, offset);
                    if let Some(&id) = rec.carried.get(&(tp.clone(), offset)) {
                        rec.note_consumed(id);
                    }
                } else {
                    rec.history.nack(now, &tp, offset);
                }
            }
            drop(reply.send(result).await);
        }
    }
}
