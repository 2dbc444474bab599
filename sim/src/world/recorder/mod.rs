//! The run's recorder: the history the checkers judge, plus the paths the run reached.
//! Shared by the world's tasks and the engine node (it lives outside the node, so it
//! survives crashes).
//!
//! The paths are `paths.rs`'s, what a path on the disk is `files.rs`'s, and the disk's
//! fault events as history faults `fs_faults.rs`'s.

mod corrupt_writes;
mod damaged;
mod files;
mod fs_faults;
mod paths;
mod refusals;
mod refused_changes;
mod skips;

pub use corrupt_writes::CorruptWriteAt;
use files::segment_of;
pub use files::{file_kind, partition_of};
pub use paths::Paths;
pub use refused_changes::Scope;

use super::damage;
use super::node::DATA_ROOT;
use crate::fs::{FsEvent, FsEventKind, SimFs};
use crate::history::{
    EventKind, FaultKind, FileKind, HeldCopy, History, Incarnation, OffsetRange, TopicPartition,
};
use crate::reference::wal::Link;
use cafelog_engine::format::{layout, word};
use cafelog_engine::fs::OpenMode;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

impl Paths {}

/// When a kill came, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KillAt {
    /// When the supervisor's timer woke it for this kill: the deadline its last sleep
    /// ran to (for an aimed kill, the one before it waited for the acknowledgement). A
    /// schedule that sleeps to the same nanosecond is woken in the same place among the
    /// tasks ready then, and so the scheduler draws the same order after it.
    pub woke_ns: u64,
    pub cause: KillCause,
}

/// A wake of the swarm's supervisor that injected nothing (see [`KillAt::woke_ns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleWake {
    pub woke_ns: u64,
    /// Whether it then waited for the next acknowledgement (an aimed kill a shrink cut).
    pub aimed: bool,
}

/// Why the world killed the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillCause {
    /// A fault the swarm or a schedule injected at a time.
    Injected,
    /// The swarm's aimed crash: right after the next produce acknowledgement.
    AfterAck,
    /// The engine asked for the restart (a fatal I/O error).
    Requested,
}

pub struct Recorder {
    pub history: History,
    /// Every kill before the heal, in history order.
    pub kills: Vec<KillAt>,
    /// Every bit flip (when the supervisor woke for it, in ns, and which bit), in
    /// history order.
    pub flips: Vec<(u64, super::FlipAt)>,
    /// The deadline the supervisor's last sleep ran to, in ns (see [`KillAt::woke_ns`]).
    pub supervisor_woke_ns: u64,
    /// The swarm's wakes that injected nothing, in order.
    pub idle_wakes: Vec<IdleWake>,
    /// The swarm's numbers of the faults it injected, in order (`FaultMix::only`).
    pub swarm_faults: Vec<u32>,
    start: madsim::time::Instant,
    fs: SimFs,
    pub paths: Paths,
    acked: BTreeSet<u64>,
    /// Produce ids a consumer acked (one copy of each is enough).
    consumed: BTreeSet<u64>,
    /// How many of `acked` are not in `consumed`: the drain asks every 50 ms whether
    /// all are, and a set comparison each time was 1.4% of a `default` seed.
    owed: usize,
    /// The id each offset's last delivery carried in this incarnation, to name what an
    /// ack settles.
    pub carried: BTreeMap<(TopicPartition, u64), u64>,
    /// The highest `hwm` word the engine issued per partition in this incarnation
    /// (cleared at each restart).
    pub hwm_issued: BTreeMap<TopicPartition, u64>,
    /// Per partition, the highest `hwm` word the last incarnation that wrote one
    /// issued (set at each restart from `hwm_issued`): with this incarnation's, the
    /// most a word the engine wrote about the log as it now stands can say (an open
    /// after a clamp writes a lower word, and older words speak of frames it cut).
    pub hwm_ceiling: BTreeMap<TopicPartition, u64>,
    /// Per partition, the `hwm` words that may be on the platter as the engine wrote
    /// them: the last word a successful fsync of the file covered, and every word
    /// issued since (each may reach it at a power loss, or stay in the cache).
    pub hwm_words: BTreeMap<TopicPartition, std::collections::BTreeSet<u64>>,
    /// Per partition, the last `hwm` word the engine issued.
    pub hwm_last_word: BTreeMap<TopicPartition, u64>,
    /// Partitions whose segments took damage at rest no completed scan has passed since.
    pub damaged: damaged::Damaged,
    /// The corrupt writes of this incarnation, for the kill to tell which a write-back
    /// left behind (`corrupt_writes_left`).
    pub corrupt_writes: Vec<CorruptWriteAt>,
    /// Receives the node is serving: their partition and ask, by a serial number.
    pub receiving: BTreeMap<u64, (TopicPartition, u64)>,
    next_receive: u64,
    /// Per partition, the `consumer.offset` word the last restart's open found (the
    /// page cache's, which a power loss has made the durable one), before the open
    /// could rewrite it (`None`: absent or not a word).
    pub durable_frontiers: BTreeMap<TopicPartition, Option<u64>>,
    /// Per partition, the inode the engine's last frontier write went to (its temp
    /// file, renamed over `consumer.offset` after): whether a later flip hit that file.
    pub frontier_files: BTreeMap<TopicPartition, u64>,
    /// Per inode of the WAL checkpoint's files, the last flip of it (its fault index):
    /// which image a restart reads.
    pub checkpoint_flips: BTreeMap<u64, usize>,
    /// The inode of the WAL checkpoint the last restart read: a flip of it while the
    /// open runs is one that open may read.
    pub checkpoint_read: Option<u64>,
    /// Fault counts by kind name, for reports.
    pub faults: BTreeMap<String, u64>,
    pub poisoned_seen: BTreeSet<TopicPartition>,
    /// Partitions an open cut or clamped in this incarnation (an R1, R2 or R4 alarm), or
    /// whose segment files the engine shortened or unlinked (cleared at each kill): an
    /// incarnation that did none of these leaves every durable frame where it was.
    pub cut_now: BTreeSet<TopicPartition>,
    /// Per partition, the tail certainly durable at the last kill: after a power loss
    /// the durable tail, after a process crash the HWM the engine had (it covers only
    /// fsynced frames). An incarnation that neither cut the partition nor showed an HWM
    /// for it keeps it (an open that refused, or was killed before it returned).
    pub durable_floor: BTreeMap<TopicPartition, u64>,
    /// The store's open in this incarnation has returned (cleared at each kill).
    pub store_open: bool,
    /// When the last store open returned.
    pub store_opened_ms: u64,
    pub healed: bool,
    /// Between a crash and the next restart: no open is running.
    pub node_down: bool,
    /// Per WAL file, the last incarnation whose engine opened it to write: a file it
    /// writes is one it never reads, so damage to it is first read by the next one.
    wal_written: BTreeMap<PathBuf, Incarnation>,
    /// The disk's epoch when the running incarnation started: once it moved (a kill
    /// whose events are being drained), the running open reads nothing more.
    pub open_epoch: u64,
    /// (epoch, partition, id) of WAL entries the running open read intact in a frame
    /// damage hit afterwards (it may hold them still, whatever befalls their copies).
    wal_held: BTreeSet<(u64, TopicPartition, crate::history::ProduceId)>,
    /// Woken at each engine alarm recorded (a schedule entry may wait for one).
    pub alarm_raised: Arc<cafelog_engine::log::Notify>,
    /// The WAL entries process crashes found only in the page cache since the last
    /// power loss, which decides whether each reaches the platter.
    cached_wal: Vec<crate::history::DamagedWalEntry>,
    /// The partitions the running incarnation's open announced an R2 hole on (its
    /// salvage may write to the WAL before it says what it wrote).
    pub holes_announced: BTreeSet<TopicPartition>,
    /// What the running incarnation changed under each partition and topic, and refused.
    refusal_watch: refused_changes::RefusalWatch,
}

/// A handle to the recorder.
#[derive(Clone)]
pub struct Shared(Arc<Mutex<Recorder>>);

impl Shared {
    pub fn new(fs: SimFs) -> Self {
        Shared(Arc::new(Mutex::new(Recorder {
            history: History::new(),
            kills: Vec::new(),
            flips: Vec::new(),
            supervisor_woke_ns: 0,
            idle_wakes: Vec::new(),
            swarm_faults: Vec::new(),
            #[allow(
                clippy::disallowed_methods,
                reason = "madsim's Instant, which reads simulated time"
            )]
            start: madsim::time::Instant::now(),
            fs: fs.clone(),
            paths: Paths::default(),
            acked: BTreeSet::new(),
            consumed: BTreeSet::new(),
            owed: 0,
            carried: BTreeMap::new(),
            hwm_issued: BTreeMap::new(),
            hwm_ceiling: BTreeMap::new(),
            hwm_words: BTreeMap::new(),
            hwm_last_word: BTreeMap::new(),
            damaged: damaged::Damaged::default(),
            corrupt_writes: Vec::new(),
            durable_frontiers: BTreeMap::new(),
            frontier_files: BTreeMap::new(),
            checkpoint_flips: BTreeMap::new(),
            checkpoint_read: None,
            receiving: BTreeMap::new(),
            next_receive: 0,
            faults: BTreeMap::new(),
            poisoned_seen: BTreeSet::new(),
            cut_now: BTreeSet::new(),
            durable_floor: BTreeMap::new(),
            store_open: false,
            store_opened_ms: 0,
            healed: false,
            node_down: false,
            wal_written: BTreeMap::new(),
            open_epoch: fs.epoch(),
            wal_held: BTreeSet::new(),
            alarm_raised: Arc::new(cafelog_engine::log::Notify::default()),
            cached_wal: Vec::new(),
            holes_announced: BTreeSet::new(),
            refusal_watch: refused_changes::RefusalWatch::default(),
        })))
    }

    pub fn lock(&self) -> MutexGuard<'_, Recorder> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A segment file the engine is unlinking, decoded before the call.
pub struct UnlinkingSegment {
    held: Vec<HeldCopy>,
    tp: TopicPartition,
    base: u64,
}

impl Recorder {
    /// Simulated ms since the run started.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A produce of `id` was acknowledged to its producer.
    pub fn note_acked(&mut self, id: u64) {
        if self.acked.insert(id) && !self.consumed.contains(&id) {
            self.owed += 1;
        }
    }

    /// A consumer acked a delivery that carried `id`.
    pub fn note_consumed(&mut self, id: u64) {
        if self.consumed.insert(id) && self.acked.contains(&id) {
            self.owed -= 1;
        }
    }

    /// How many produces were acknowledged (distinct ids).
    pub fn acked_count(&self) -> usize {
        self.acked.len()
    }

    /// Whether a consumer acked every acknowledged produce.
    pub fn all_acked_consumed(&self) -> bool {
        debug_assert_eq!(self.owed == 0, self.acked.is_subset(&self.consumed));
        self.owed == 0
    }

    /// The partition each fault since the last restart named (`None`: a store-wide
    /// file, or the node): what an open still running may have read before it landed.
    /// Not a corrupt write: that is the engine's own write after its scan, which it
    /// must check itself.
    pub fn struck_since_restart(&self) -> impl Iterator<Item = Option<&TopicPartition>> {
        let events = self.history.events();
        let since = events
            .iter()
            .rposition(|e| matches!(e.kind, EventKind::Restart))
            .unwrap_or(0);
        events[since..].iter().filter_map(|e| match &e.kind {
            EventKind::Fault {
                kind: FaultKind::CorruptWrite { .. },
                ..
            } => None,
            EventKind::Fault { tp, .. } => Some(tp.as_ref()),
            _ => None,
        })
    }

    /// Records a fault; returns its history index.
    pub fn fault(
        &mut self,
        kind: FaultKind,
        tp: Option<&TopicPartition>,
        path: Option<&str>,
    ) -> usize {
        let name = serde_json::to_value(&kind)
            .ok()
            .and_then(|v| v.get("fault").and_then(|f| f.as_str()).map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
        *self.faults.entry(name).or_insert(0) += 1;
        let now = self.now_ms();
        let index = self.history.len();
        self.history.fault(now, kind, tp, path);
        index
    }

    /// The engine is opening the WAL file at `path` with `mode`.
    pub fn wal_opening(&mut self, path: &Path, mode: OpenMode) {
        if mode != OpenMode::Read {
            let incarnation = self.history.incarnation();
            self.wal_written.insert(path.to_owned(), incarnation);
        }
    }

    /// The first incarnation whose open reads the bytes `hit` of the WAL file at `path`
    /// as they are now. The running open reads each old WAL file once, a frame at a
    /// time, so it is that open unless it returned or already read some of `hit` (the
    /// disk knows which bytes its reads returned); a file it opened to write is one it
    /// made, never read.
    fn wal_first_replay(
        &self,
        path: &Path,
        hit: &[Range<u64>],
        entries: &[crate::history::DamagedWalEntry],
    ) -> Incarnation {
        let current = self.history.incarnation();
        let epoch = self.fs.epoch();
        if self.node_down
            || self.store_open
            || epoch != self.open_epoch
            || entries
                .iter()
                .any(|e| self.wal_held.contains(&(epoch, e.tp.clone(), e.id)))
            || self.wal_written.get(path) == Some(&current)
            || hit
                .iter()
                .any(|range| self.fs.read_since_crash(path, range))
        {
            current + 1
        } else {
            current
        }
    }

    /// After the fault at `fault_index` damaged the `hit` byte ranges of the WAL file at
    /// `path`, whose durable image was `before`: records the entries it destroyed.
    /// Damage at rest (`at_rest`, in contract) names an entry only when nothing standing
    /// for it stays readable; the out-of-contract faults (a misdirected write, a lost
    /// fsync) name every entry they hit, their reach as the contract states it: what
    /// still reads right after them may be overwritten later with no event of its own.
    pub fn wal_damaged(
        &mut self,
        fault_index: usize,
        path: &Path,
        before: &[u8],
        hit: &[Range<u64>],
        at_rest: bool,
    ) {
        // What the WAL still reads after the damage, as a power loss would leave it.
        let readable = if !at_rest {
            damage::WalRoots::new()
        } else {
            let dir = path.parent().unwrap_or(path);
            let images: Vec<(String, Vec<u8>)> = self
                .fs
                .durable_names(dir)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|name| {
                    let bytes = self.fs.durable_bytes(&dir.join(&name))?;
                    Some((name, bytes))
                })
                .collect();
            damage::wal_roots(images.iter().map(|(n, b)| (n.as_str(), b.as_slice())))
        };
        let damage::WalHit {
            lost: entries,
            saved_by_copy,
            ..
        } = damage::wal_entries_hit(path, before, hit, &readable);
        // Entries of the hit frames the running open already read intact: it holds them.
        let epoch = self.fs.epoch();
        if !self.node_down && !self.store_open && epoch == self.open_epoch {
            for frame in crate::reference::wal::frames(before) {
                if hit
                    .iter()
                    .any(|h| frame.position.start < h.end && h.start < frame.position.end)
                    && self.fs.read_since_crash(path, &frame.position)
                {
                    for e in frame.entries {
                        if let Ok(id) = crate::history::parse_payload_id(&e.payload) {
                            self.wal_held.insert((
                                epoch,
                                TopicPartition::new(&e.topic, e.partition),
                                id,
                            ));
                        }
                    }
                }
            }
        }
        self.paths.wal_entries_saved_by_copy += saved_by_copy;
        if entries.is_empty() {
            return;
        }
        let first_replay = self.wal_first_replay(path, hit, &entries);
        let now = self.now_ms();
        self.history
            .wal_entries_damaged(now, fault_index, first_replay, entries);
    }

    /// At a process crash: records the WAL entries the page cache holds and the platter
    /// does not (`WalCachedAtKill`), which the next open reads and a power loss drops;
    /// and, when the kill ended an open before it completed, every entry of a partition
    /// that open announced an R2 hole on that is readable both in the page cache and on
    /// the platter (`WalDurableAtKill`): whatever its salvage wrote and fsynced before
    /// its alarm (a new seq, or one it reused after a flip made the last frame
    /// unreadable) is among them, and the next open reads them all.
    pub fn wal_cached_at_kill(&mut self, open_completed: bool) {
        let dir = super::node::wal_dir();
        let mut cached = Vec::new();
        let mut written = Vec::new();
        for name in self.fs.visible_names(&dir).unwrap_or_default() {
            if crate::reference::wal::segment_base(&name).is_none() {
                continue;
            }
            let path = dir.join(&name);
            let Some(visible) = self.fs.visible_bytes(&path) else {
                continue;
            };
            // Each durable entry's bytes by seq: an entry is on the platter only if the
            // same bytes sit there under its seq.
            let durable: BTreeMap<u64, Vec<u8>> = self
                .fs
                .durable_bytes(&path)
                .map(|bytes| {
                    crate::reference::wal::frames(&bytes)
                        .into_iter()
                        .flat_map(|f| f.entries)
                        .map(|e| (e.seq, e.payload))
                        .collect()
                })
                .unwrap_or_default();
            for entry in crate::reference::wal::frames(&visible)
                .into_iter()
                .flat_map(|f| f.entries)
            {
                let tp = TopicPartition::new(&entry.topic, entry.partition);
                let into = if durable.get(&entry.seq) != Some(&entry.payload) {
                    &mut cached
                } else if !open_completed && self.holes_announced.contains(&tp) {
                    &mut written
                } else {
                    continue;
                };
                let Ok(id) = crate::history::parse_payload_id(&entry.payload) else {
                    continue;
                };
                into.push(crate::history::DamagedWalEntry {
                    seq: entry.seq,
                    tp,
                    id,
                });
            }
        }
        // Both go to the next power loss, which says which of them the platter reads.
        let now = self.now_ms();
        if !cached.is_empty() {
            self.cached_wal.extend(cached.iter().cloned());
            self.history.wal_cached_at_kill(now, cached);
        }
        if !written.is_empty() {
            self.cached_wal.extend(written.iter().cloned());
            self.history.wal_durable_at_kill(now, written);
        }
    }

    /// At a power loss, after the disk's crash: records which of the entries process
    /// crashes left only in the page cache the platter now reads (`WalKeptAtPowerLoss`;
    /// the crash kept their writes); the others are gone.
    pub fn wal_kept_at_power_loss(&mut self) {
        let cached = std::mem::take(&mut self.cached_wal);
        if cached.is_empty() {
            return;
        }
        let dir = super::node::wal_dir();
        // By seq and record: another record under the same seq is not the write kept.
        let mut durable = BTreeSet::new();
        for name in self.fs.durable_names(&dir).unwrap_or_default() {
            if let Some(bytes) = self.fs.durable_bytes(&dir.join(&name)) {
                durable.extend(
                    crate::reference::wal::frames(&bytes)
                        .into_iter()
                        .flat_map(|f| f.entries)
                        .filter_map(|e| {
                            let id = crate::history::parse_payload_id(&e.payload).ok()?;
                            Some((e.seq, id))
                        }),
                );
            }
        }
        let kept: Vec<_> = cached
            .into_iter()
            .filter(|e| durable.contains(&(e.seq, e.id)))
            .collect();
        if !kept.is_empty() {
            let now = self.now_ms();
            self.history.wal_kept_at_power_loss(now, kept);
        }
    }

    /// After an R2 salvage wrote the WAL entries at `seqs` for `tp`: records which
    /// produces they hold, read from the WAL's page cache (the salvage fsynced them).
    pub fn salvage_wrote(&mut self, tp: &TopicPartition, seqs: Range<u64>) {
        let dir = super::node::wal_dir();
        let (mut kept, mut copied) = (Vec::new(), Vec::new());
        for name in self.fs.visible_names(&dir).unwrap_or_default() {
            if crate::reference::wal::segment_base(&name).is_none() {
                continue;
            }
            let Some(image) = self.fs.visible_bytes(&dir.join(&name)) else {
                continue;
            };
            for entry in crate::reference::wal::frames(&image)
                .into_iter()
                .flat_map(|f| f.entries)
                .filter(|e| seqs.contains(&e.seq))
            {
                assert!(
                    entry.topic == tp.topic && entry.partition == tp.partition,
                    "a salvage of {tp} wrote seq {} for {}/{}",
                    entry.seq,
                    entry.topic,
                    entry.partition
                );
                let Ok(id) = crate::history::parse_payload_id(&entry.payload) else {
                    continue;
                };
                // A revival is the only entry a replay commits for its record.
                match entry.link {
                    Some(Link::Copy(_)) => copied.push(id),
                    Some(Link::Revival(_)) => {
                        self.paths.salvage_revivals += 1;
                        kept.push(id);
                    }
                    None => kept.push(id),
                }
            }
        }
        let now = self.now_ms();
        self.history.salvage_wrote(now, tp, kept, copied);
    }

    /// The value of an 8-byte file as reads see it now.
    pub fn visible_word(&self, path: &Path) -> Option<u64> {
        self.fs
            .visible_bytes(path)
            .and_then(|b| cafelog_engine::format::word::decode(&b))
    }

    /// The value of an 8-byte file as an open reads it now: 0 when absent or empty,
    /// `u64::MAX` for a file of the wrong length (a torn word, reported as a value no
    /// one wrote).
    pub fn word_as_opened(&self, path: &Path) -> u64 {
        match self.fs.visible_bytes(path) {
            None => 0,
            Some(bytes) if bytes.is_empty() => 0,
            Some(bytes) => cafelog_engine::format::word::decode(&bytes).unwrap_or(u64::MAX),
        }
    }

    /// The engine wrote the WAL checkpoint file at `path` (a replace writes it whole,
    /// over a temp file it created or truncated): no earlier flip of it is in it now.
    pub fn checkpoint_rewritten(&mut self, path: &Path) {
        if let Some(inode) = self.fs.visible_inode(path) {
            self.checkpoint_flips.remove(&inode);
        }
    }

    /// The engine synced the WAL checkpoint file at `path`, which it wrote whole: the
    /// sync put that write on the platter over the flips the pending write masked since
    /// (the page cache missed them); a flip in the sync's pause after that, which the
    /// cache took, is in the file (helper-115 F1).
    pub fn checkpoint_synced(&mut self, path: &Path) {
        let Some(inode) = self.fs.visible_inode(path) else {
            return;
        };
        let Some(&fault) = self.checkpoint_flips.get(&inode) else {
            return;
        };
        let masked = self.history.events()[fault..].iter().any(|e| {
            matches!(e.kind, EventKind::FlipMissedCache { fault_index } if fault_index == fault)
        });
        if masked {
            self.checkpoint_flips.remove(&inode);
        }
    }

    /// A segment file of a partition created (`created`) or unlinked.
    /// The engine created the segment file at `path`.
    pub fn segment_created(&mut self, path: &Path) {
        if let Some((tp, base)) = segment_of(path) {
            let now = self.now_ms();
            self.history.segment_created(now, &tp, base);
        }
    }

    /// The engine is about to unlink the file at `path`: if it is a segment, what it
    /// holds now (after the unlink nothing can be decoded), for [`Self::segment_unlinked`].
    pub fn segment_unlinking(&mut self, path: &Path) -> Option<UnlinkingSegment> {
        let (tp, base) = segment_of(path)?;
        self.cut_now.insert(tp.clone());
        Some(UnlinkingSegment {
            held: self.held_copies(path, base),
            tp,
            base,
        })
    }

    /// The engine is about to set the length of the file at `path` to `len`: a segment
    /// it shortens may lose frames, whatever its alarms said (`cut_now`).
    pub fn segment_set_len(&mut self, path: &Path, len: u64) {
        if let Some((tp, _)) = segment_of(path)
            && self.fs.visible_len(path).is_some_and(|now| len < now)
        {
            self.cut_now.insert(tp);
        }
    }

    /// The unlink of `segment` took effect.
    pub fn segment_unlinked(&mut self, segment: UnlinkingSegment) {
        let now = self.now_ms();
        self.history
            .segment_deleted(now, &segment.tp, segment.base, segment.held);
    }

    /// Every record the segment file at `path` holds as reads see it now, by the
    /// reference decoder, with the produce id its payload carries.
    fn held_copies(&self, path: &Path, base: u64) -> Vec<HeldCopy> {
        let (Some(bytes), Some(name)) = (
            self.fs.visible_bytes(path),
            path.file_name().and_then(|n| n.to_str()),
        ) else {
            return Vec::new();
        };
        let unreadable = self.fs.visible_unreadable(path);
        let image = crate::reference::frame::Readable::new(&bytes, &unreadable);
        crate::reference::held_records(name, base, image)
            .into_iter()
            .filter_map(super::disk::held_copy)
            .collect()
    }

    /// Every record the segment files visible in partition directory `dir` hold at
    /// offsets in `range`, by the reference decoder.
    pub fn copies_in(&self, dir: &Path, range: Range<u64>) -> Vec<HeldCopy> {
        let mut out = Vec::new();
        for name in self.fs.visible_names(dir).unwrap_or_default() {
            if let Some(base) = crate::reference::partition::segment_base(&name) {
                out.extend(
                    self.held_copies(&dir.join(&name), base)
                        .into_iter()
                        .filter(|c| range.contains(&c.offset)),
                );
            }
        }
        out
    }

    /// The engine's account of a frontier load (`frontier_loaded`, on the queue's first
    /// touch: the world's ask right after the open, or a client's): recorded with what
    /// `consumer.offset` holds now, read from the page cache as the engine just read it
    /// (0 when absent or empty, `u64::MAX` when not a word, as at the open).
    pub fn frontier_load_reported(&mut self, tp: &TopicPartition, loaded: u64) {
        let dir = layout::partition_dir(Path::new(DATA_ROOT), &tp.topic, tp.partition);
        let raw = match self
            .fs
            .visible_bytes(&dir.join(layout::CONSUMER_OFFSET_FILE))
        {
            None => 0,
            Some(bytes) if bytes.is_empty() => 0,
            Some(bytes) => word::decode(&bytes).unwrap_or(u64::MAX),
        };
        let now = self.now_ms();
        self.history.frontier_loaded(now, tp, raw, loaded);
        if self.store_open {
            self.paths.frontiers_loaded_on_touch += 1;
        }
        self.frontier_skips(tp, loaded);
    }

    /// Right after an open loaded `tp`'s frontier as `loaded`: when it passed the last
    /// value an earlier incarnation wrote, or the word the disk durably held at the
    /// restart if lower (a crash lost the last rename), it skipped records (the open may
    /// have rewritten the word already). Records those it skipped for good, with no
    /// copy at or above the frontier, so that a loss there can be held to whatever
    /// moved the word.
    pub fn frontier_skips(&mut self, tp: &TopicPartition, loaded: u64) {
        let written = self
            .history
            .last_frontier_written_before(tp, self.history.incarnation());
        let durable = self.durable_frontiers.get(tp).copied().flatten();
        let from = match (written, durable) {
            (Some(w), Some(d)) => w.min(d),
            (w, d) => w.or(d).unwrap_or(0),
        };
        if loaded <= from
            || self.this_incarnation(
                |k| matches!(k, EventKind::FrontierSkipped { tp: t, .. } if t == tp),
            )
        {
            return;
        }
        let dir = layout::partition_dir(Path::new(DATA_ROOT), &tp.topic, tp.partition);
        let copies = self.copies_in(&dir, from..u64::MAX);
        let beyond: BTreeSet<u64> = copies
            .iter()
            .filter(|c| c.offset >= loaded)
            .map(|c| c.id)
            .collect();
        let held: Vec<HeldCopy> = copies
            .into_iter()
            .filter(|c| c.offset < loaded && !beyond.contains(&c.id))
            .collect();
        // Retention moves a frontier over deleted segments, which hold nothing.
        if !held.is_empty() {
            let now = self.now_ms();
            self.history.frontier_skipped(now, tp, from, loaded, held);
        }
    }

    /// A receive of `tp` begins now: its serial number, for [`Recorder::receiving`].
    pub fn begin_receive(&mut self, tp: TopicPartition) -> (u64, u64) {
        let asked = self.now_ms();
        let serial = self.next_receive;
        self.next_receive += 1;
        self.receiving.insert(serial, (tp, asked));
        (serial, asked)
    }

    /// Damage at rest (a flip, a latent sector) reached a segment of `tp`.
    pub fn segment_damaged(&mut self, tp: &TopicPartition) {
        let incarnation = self.history.incarnation();
        self.damaged.hit(tp, incarnation);
    }

    /// An fsync of the `hwm` file at `path` returned Ok: the last word issued is the one
    /// on the platter, and no earlier word can come back.
    pub fn hwm_synced(&mut self, path: &Path) {
        let Some(tp) = partition_of(path) else {
            return;
        };
        if let Some(&last) = self.hwm_last_word.get(&tp) {
            self.hwm_words
                .insert(tp, std::collections::BTreeSet::from([last]));
        }
    }

    /// An `hwm` write the engine issued, recorded while the store's open runs (exposures
    /// and the open's own rewrite of the word; the persister's later writes are many
    /// and no checker needs them).
    pub fn hwm_write_issued(&mut self, path: &Path, word: u64) {
        let Some(tp) = partition_of(path) else {
            return;
        };
        let now = self.now_ms();
        self.hwm_words.entry(tp.clone()).or_default().insert(word);
        self.hwm_last_word.insert(tp.clone(), word);
        let highest = self.hwm_issued.entry(tp.clone()).or_insert(word);
        if word < *highest {
            let highest = *highest;
            self.history.hwm_write_lowered(now, &tp, word, highest);
        } else {
            *highest = word;
        }
        if !self.store_open {
            self.history.hwm_write_issued(now, &tp, word);
        }
    }

    pub fn frontier_written(&mut self, tmp_path: &Path, value: u64) {
        if let Some(tp) = partition_of(tmp_path) {
            // The open's own write of the frontier it loaded (a clamp rewrites it before
            // the open returns): the skip is recorded now, since an open that fails
            // after it never reports what it loaded, and the next one starts from this
            // word.
            let during_open = !self.this_incarnation(|k| {
                matches!(
                    k,
                    EventKind::FrontierWritten { tp: t, .. }
                        | EventKind::FrontierObserved { tp: t, .. } if *t == tp
                )
            });
            if during_open {
                self.frontier_skips(&tp, value);
            }
            if let Some(inode) = self.fs.visible_inode(tmp_path) {
                self.frontier_files.insert(tp.clone(), inode);
            }
            let now = self.now_ms();
            self.history.frontier_written(now, &tp, value);
        }
    }

    /// Whether an event matching `kind` happened in the current incarnation.
    fn this_incarnation(&self, kind: impl Fn(&EventKind) -> bool) -> bool {
        let incarnation = self.history.incarnation();
        self.history
            .events()
            .iter()
            .rev()
            .take_while(|e| e.incarnation == incarnation)
            .any(|e| kind(&e.kind))
    }
}
