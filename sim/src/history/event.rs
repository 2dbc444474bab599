//! One observation of the run ([`Event`]) and every kind of it ([`EventKind`]), with
//! the records some kinds carry: a partition's state at a crash, a topic's setup, a
//! WAL entry a fault destroyed, a copy the world listed by identity.

use super::*;
use serde::{Deserialize, Serialize};

/// The state of one partition at the moment of a crash that the next incarnation opens
/// from: the simulated disk's durable image after a power loss, its page cache after a
/// process crash (before any at-rest damage is taken into account).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashPartition {
    pub tp: TopicPartition,
    /// Value of the `hwm` file the next open reads (0 if missing).
    pub persisted_hwm: Offset,
    /// End offset (exclusive) of the records the next open finds in the log.
    pub durable_tail: Offset,
    /// The engine's in-memory HWM just before the kill, if the world knew it.
    pub memory_hwm: Option<Offset>,
}

impl CrashPartition {
    /// Records above the persisted HWM but durable: hidden after recovery, and
    /// re-committed by the WAL, so each may show up once more as a duplicate.
    pub fn hidden_tail(&self) -> OffsetRange {
        OffsetRange {
            start: self.persisted_hwm,
            end: self.durable_tail.max(self.persisted_hwm),
        }
    }
}

/// A topic as the run created it: what the checkers need of its configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicSetup {
    pub name: String,
    pub partitions: u32,
    /// Records are deliverable only from `committed_at_ms + delay_ms` on.
    pub delay_ms: u64,
    pub lease_ms: u64,
    /// Sealed segments older than this are reaped; `None` keeps them. Absent in
    /// histories written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
    /// The HWM persister's period; `None` in histories written before it was recorded
    /// (and `hwm_persisted` does not judge the topic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hwm_persist_ms: Option<u64>,
    /// The reaper's period; `None` in histories written before it was recorded (and
    /// `retention_progress` does not judge the topic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaper_interval_ms: Option<u64>,
}

/// One observation. Field docs say who records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum EventKind {
    /// World, first of all: the run's setup. `wall_base_ms` is the simulated wall clock
    /// at time 0; it moves with simulated time and back by each `ClockStep` fault.
    RunStarted {
        wall_base_ms: u64,
        topics: Vec<TopicSetup>,
        /// The longest sleep the disk may add to one operation until the heal (0: the
        /// disk answers at once): how long a woken receive can take to answer.
        #[serde(default, skip_serializing_if = "is_zero")]
        io_latency_max_ms: u64,
        /// The store's frontier persister period; `None` in histories written before
        /// it was recorded (and `frontier_progress` does not judge the run).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frontier_persist_ms: Option<u64>,
        /// Whether the engine's account of every frontier load (`frontier_loaded`) is in
        /// the history, each as a `FrontierObserved` with its `loaded`; `false` in
        /// histories written before it was (and deliveries are not held to a load).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        frontier_loads_reported: bool,
    },
    /// Producer, just before calling produce. `payload` must come from
    /// [`encode_payload`] with this `id`. `partition` is `None` when the engine picks.
    ProduceAttempt {
        id: ProduceId,
        topic: String,
        partition: Option<u32>,
        #[serde(serialize_with = "as_bytes")]
        key: Vec<u8>,
        #[serde(serialize_with = "as_bytes")]
        payload: Vec<u8>,
    },
    /// Producer, when produce returned success: the record must eventually be
    /// delivered. `offset` / `committed_at_ms` when the engine reports them.
    ProduceAck {
        id: ProduceId,
        tp: TopicPartition,
        offset: Option<Offset>,
        committed_at_ms: Option<u64>,
    },
    /// Producer, when produce returned an error (or the node died under it). The
    /// record may or may not show up later; either is fine.
    ProduceFailed { id: ProduceId, error: String },
    /// Consumer, for every record handed to it (first delivery or redelivery).
    Delivery {
        tp: TopicPartition,
        offset: Offset,
        #[serde(serialize_with = "as_bytes")]
        key: Vec<u8>,
        #[serde(serialize_with = "as_bytes")]
        payload: Vec<u8>,
        committed_at_ms: u64,
        attempt: u32,
        /// When the consumer asked for it (its receive call began): the engine leased
        /// it no earlier. Absent in histories written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked_at_ms: Option<u64>,
    },
    /// Consumer, when its ack of `offset` was accepted by the engine.
    Ack { tp: TopicPartition, offset: Offset },
    /// Consumer, when its nack of `offset` was accepted.
    Nack { tp: TopicPartition, offset: Offset },
    /// World, whenever the engine writes a candidate `consumer.offset` value (seen by
    /// the simulated fs as the 8-byte write, or reported by the engine). Needed to
    /// tell an old-or-new frontier from a torn one.
    FrontierWritten {
        tp: TopicPartition,
        frontier: Offset,
    },
    /// World, when the engine issues a write of `word` to `tp`'s `hwm` file while the
    /// store's open runs (before the write's first pause, so before it can land):
    /// what a killed open had set out to persist.
    HwmWriteIssued { tp: TopicPartition, word: Offset },
    /// World, when the engine issues a write of `word` to `tp`'s `hwm` file below
    /// `highest`, a word it issued earlier in the same incarnation (recorded only then:
    /// the word the engine persists only rises).
    HwmWriteLowered {
        tp: TopicPartition,
        word: Offset,
        highest: Offset,
    },
    /// World: the frontier in `consumer.offset` (every offset below it acknowledged),
    /// read as a process reads it (0 when absent or empty, `u64::MAX` when not a word).
    /// Without `loaded`: when an open came up, the word it left. With it: when the
    /// engine reported loading the queue (`frontier_loaded`, its first touch), the word
    /// then and the frontier the engine loaded from it (after its clamps).
    FrontierObserved {
        tp: TopicPartition,
        frontier: Offset,
        /// Absent in histories written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loaded: Option<Offset>,
        /// At an open (no `loaded`): the word the restart found before the open ran,
        /// when the file held an 8-byte word (absent when it was absent, empty or torn,
        /// at the first open, and in histories written before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        found: Option<Offset>,
    },
    /// World, when it kills the node; the event's incarnation is the one that dies. One
    /// entry per partition on the node, from what the next incarnation will open: the
    /// durable image after a power loss, the page cache after a process crash
    /// (`process`: the kernel survived, and with it every unsynced write, which a later
    /// power loss may still drop).
    Crash {
        partitions: Vec<CrashPartition>,
        /// Absent (false) in histories written before process crashes existed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        process: bool,
    },
    /// World, when the node is up again; the event's incarnation is the new one. Every
    /// partition is opened (and so fully scanned) at restart.
    Restart,
    /// World, when the engine refuses to open a partition (R3), with its reason.
    PartitionRefused { tp: TopicPartition, reason: String },
    /// World, when the engine changed a file in the directory of a partition whose open
    /// in the incarnation that issued the change refused it (R3: the world's
    /// `PartitionRefused`, or the engine's `refused` alarm; or its whole topic), or had
    /// to (R3 in the restart's view of the disk, no fault on it or a store-wide file
    /// since): the
    /// first such change per partition and incarnation, `change` of `path`, issued at
    /// `changed_ms` (before the refusal was known, or after it). A correct open reads a
    /// partition before it decides to refuse it, and a store never touches a refused
    /// one.
    RefusedPartitionChanged {
        tp: TopicPartition,
        path: String,
        change: FileChange,
        changed_ms: u64,
    },
    /// World, as `RefusedPartitionChanged`, for a file of a topic's own (its
    /// `topic.conf`) in an incarnation that refused the topic whole (the store's report,
    /// or the engine's `topic_refused` alarm); a change in one of its partitions'
    /// directories is that partition's event.
    RefusedTopicChanged {
        topic: String,
        path: String,
        change: FileChange,
        changed_ms: u64,
    },
    /// World, when the engine reports the partition poisoned (after fsync failure).
    PartitionPoisoned { tp: TopicPartition },
    /// World, when the engine answered a receive whose consumer had already given up
    /// (its reply timed out or the channel closed): the engine leased these offsets,
    /// and no consumer saw them.
    DeliveriesUnclaimed {
        tp: TopicPartition,
        offsets: Vec<Offset>,
        /// The produce id each delivered payload carried, in the order of `offsets`
        /// (`None` for one that does not parse). Empty in histories written before
        /// they were recorded.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ids: Vec<Option<ProduceId>>,
        /// When the receive began. Absent in histories written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked_at_ms: Option<u64>,
    },
    /// World, sampling the engine: the visible (in-memory) HWM, and when known the
    /// durable `hwm` file and the durable tail from the disk image.
    HwmObserved {
        tp: TopicPartition,
        hwm: Offset,
        persisted_hwm: Option<Offset>,
        durable_tail: Option<Offset>,
    },
    /// World, sampling the engine, right after its `HwmObserved`: the partition's
    /// `hwm` word as the platter holds it (`None`: no file, or not 8 bytes), read by
    /// the world, not asked of the engine.
    HwmWordObserved {
        tp: TopicPartition,
        word: Option<Offset>,
    },
    /// World, every sampling period: the partition's `consumer.offset` word as the
    /// platter holds it (`None`: no file, or not 8 bytes), read by the world, not asked
    /// of the engine.
    FrontierWordObserved {
        tp: TopicPartition,
        word: Option<Offset>,
    },
    /// World, when the log start moves (retention deleted segments) or is sampled.
    LogStartObserved {
        tp: TopicPartition,
        log_start: Offset,
    },
    /// World (the disk as the engine uses it), when the engine created the segment file
    /// named by `base`.
    SegmentCreated { tp: TopicPartition, base: Offset },
    /// World, when the engine's unlink of the segment file named by `base` took effect
    /// (its call returned, or it was dropped after the file left the directory; not
    /// yet durable), with every record the file held as reads saw it just before the
    /// call (the reference decoder's, not the engine's).
    SegmentDeleted {
        tp: TopicPartition,
        base: Offset,
        #[serde(default)]
        held: Vec<HeldCopy>,
    },
    /// World, at each restart: the segment files the partition's directory durably
    /// holds, what the open will find (a crash keeps a prefix of pending creates and
    /// unlinks, so the calls alone do not say).
    SegmentsListed {
        tp: TopicPartition,
        bases: Vec<Offset>,
    },
    /// World, at each restart: the damage the WAL's segment files hold as the
    /// reference decoder reads them (`reference::wal::damage`), what the open's
    /// `wal_damaged` must report.
    WalAtOpen {
        skipped_bytes: u64,
        corrupt_entries: u64,
    },
    /// World, at each restart: the WAL checkpoint as the reference decoder reads it
    /// (FORMAT.md), each partition's replay floor; `None` when the file is there and
    /// does not read (the open must replay every entry and say so,
    /// `wal_checkpoint_unreadable`). No file reads as no floors.
    CheckpointAtOpen {
        floors: Option<Vec<CheckpointFloor>>,
        /// The last flip of the file read (the fault's index), if a flip hit it: the
        /// image the open read is that flip's, not a temp file's flipped since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flipped: Option<usize>,
    },
    /// World, right after a flip of the WAL checkpoint or its temp file (the fault at
    /// `fault_index`): the floors the file held before the flip, the higher of its
    /// platter and page-cache images per partition, by the reference decoder; `None`
    /// when neither image read (the flip destroyed no floor). A lost checkpoint adds
    /// only re-commits of records below the floor it held.
    CheckpointDamaged {
        fault_index: usize,
        floors: Option<Vec<CheckpointFloor>>,
        /// The flip before it of the same file (its fault index), if any, since the
        /// engine last wrote that file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        earlier: Option<usize>,
        /// It hit the file the running open read at its restart.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        read: bool,
    },
    /// World, right after a flip the page cache did not take (the fault at
    /// `fault_index`): a pending write or truncation decides that byte, or a failed
    /// fsync left the cache apart from the platter. Only the platter holds it, so only
    /// an open after a power loss (which rebuilds the cache from the platter) can read
    /// it, as a misdirected write's.
    FlipMissedCache { fault_index: usize },
    /// World, right after a flip of an 8-byte word file (`hwm`, `consumer.offset` or its
    /// temp file; the fault at `fault_index`) that the page cache took: a read of
    /// `read_as` (the name that shows the flipped inode) now finds `to` where it found
    /// `from`. The flip's fault reach spans the platter's move too; this is the one a
    /// running process sees. `written`: the flipped file is the one the engine's last
    /// write of the partition's frontier (`FrontierWritten`) went to.
    WordFlipped {
        fault_index: usize,
        read_as: String,
        from: Offset,
        to: Offset,
        written: bool,
    },
    /// World, sampling the engine's counters for a partition. Counters are cumulative
    /// within an incarnation and start from 0 at each restart.
    EngineCounters {
        tp: TopicPartition,
        /// Acknowledged records the engine knows it lost (the R4 clamp).
        recorded_loss_records: u64,
        /// Records skipped at consume time because their frame or envelope was bad.
        skipped_records: u64,
    },
    /// World, at the moment it injects a fault.
    Fault {
        kind: FaultKind,
        tp: Option<TopicPartition>,
        path: Option<String>,
    },
    /// World: from here on no fault is injected. Liveness is measured from here.
    Heal,
    /// World, right after the [`EventKind::Fault`] at `fault_index` when that fault
    /// (a bit flip or a misdirected write) destroyed frames of an ingress WAL segment:
    /// the entries those frames held, decoded from the file's durable bytes as they were
    /// just before. A frame is checked by one CRC, so damage anywhere in it loses all of
    /// its entries. `first_replay` is the first incarnation whose open reads the
    /// damaged bytes (the running one if its open has not read them yet).
    /// Recorded only when the damage hit at least one entry; last in the enum so that
    /// the other variants keep their trace-hash encoding.
    WalEntriesDamaged {
        fault_index: usize,
        first_replay: Incarnation,
        entries: Vec<DamagedWalEntry>,
    },
    /// World, the moment the engine raises an alarm (read from the engine's own
    /// `tracing` event, see [`Alarm`]): `tp` is the partition whose directory the event
    /// names, `None` for the store-wide ones (the WAL).
    EngineAlarm {
        tp: Option<TopicPartition>,
        alarm: Alarm,
        /// The incarnation whose task raised it, when it is not the current one (a
        /// killed incarnation's futures are dropped, and may raise, after the restart).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raised_in: Option<Incarnation>,
    },
    /// World, at a restart, before the new incarnation runs: the partition's durable
    /// image as the reference decoder reads it, which the open is about to read. Again
    /// (`while_open`) when damage lands on the partition while the open runs: the open
    /// may read either image.
    DiskAtOpen {
        tp: TopicPartition,
        disk: DiskView,
        while_open: bool,
    },
    /// World, when a receive asked at `asked_at_ms` came back with no record: its park
    /// timed out, or the engine failed it (`error`). With the deliveries (which carry
    /// their ask), the history then holds every answered receive's wait.
    ReceiveEmpty {
        tp: TopicPartition,
        asked_at_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// World, right after a `FrontierObserved` whose loaded frontier passed the last
    /// value an earlier incarnation wrote to `consumer.offset` (`from`): the records the
    /// log held at offsets `[from, to)` as reads saw them (the reference decoder's),
    /// which no consumer will be given. Something moved the word (a fault on it, or a
    /// bug). Recorded only when it held records (retention moves a frontier over
    /// segments it deleted).
    FrontierSkipped {
        tp: TopicPartition,
        from: Offset,
        to: Offset,
        held: Vec<HeldCopy>,
    },
    /// World, at a restart, right after the partition's `DiskAtOpen`: the records of
    /// its hidden tail, offsets `[from, to)` between the HWM the open will trust and the
    /// valid tail, as the reference decoder reads the durable image. Recorded only when
    /// the hidden tail holds records.
    HiddenAtOpen {
        tp: TopicPartition,
        from: Offset,
        to: Offset,
        held: Vec<HeldCopy>,
    },
    /// World, right after damage at rest to a partition's segment frames (a bit flip, a
    /// latent sector): the records the frames it hit held, as the reference decoder read
    /// the durable image just before it. Which copies the damage took, by identity.
    DamageHeld {
        fault_index: usize,
        tp: TopicPartition,
        held: Vec<HeldCopy>,
    },
    /// World, right after an out-of-contract fault on a partition's segment (a
    /// misdirected write, a lost fsync): the record copies it reached, by identity. The
    /// frames a misdirected write landed on, as the durable image held them before it,
    /// and the frames it (or a lost fsync) left undurable, as the page cache holds
    /// them. A WAL replay can have moved a record above its acknowledged offset; this is
    /// where its copy was.
    ReachHeld {
        fault_index: usize,
        tp: TopicPartition,
        held: Vec<HeldCopy>,
    },
    /// World, when it kills the node (just before the `Crash`): a receive asked at
    /// `asked_at_ms` was still waiting, and dies unanswered.
    ReceiveKilled {
        tp: TopicPartition,
        asked_at_ms: u64,
    },
    /// World, at the end of the run: the partition's segment files as the page cache
    /// holds them (what the engine wrote, whatever reached the platter), in offset
    /// order, decoded by the reference decoder, with the knobs the shape rules use.
    LayoutObserved {
        tp: TopicPartition,
        knobs: LayoutKnobs,
        segments: Vec<SegmentLayout>,
    },
    /// World, right after an `r2_salvaged` alarm that wrote entries: the produce ids
    /// of the WAL entries at the seqs the alarm names, as the reference decoder reads
    /// the page cache: `kept` as plain entries (their entry was gone) or revivals (the
    /// checkpoint had passed it), `copied` as salvage copies. Which records the salvage
    /// saved, by identity.
    SalvageWrote {
        tp: TopicPartition,
        kept: Vec<ProduceId>,
        copied: Vec<ProduceId>,
    },
    /// World, at a restart whose open will find the WAL checkpoint unreadable (by the
    /// reference decoder) and so replay every entry, right after the partition's
    /// `DiskAtOpen`: the records at offsets `[from, to)`, from the log start to the
    /// HWM the open will trust, by identity. The replay skips an entry whose record
    /// one of them is, and commits the others again.
    VisibleAtOpen {
        tp: TopicPartition,
        from: Offset,
        to: Offset,
        held: Vec<HeldCopy>,
    },
    /// World, at a restart whose open will cut the partition at a hole (R2), right
    /// after its `DiskAtOpen`: the readable records past the hole, by identity, as the
    /// reference decoder reads them: what the open's salvage is offered.
    PastHoleAtOpen {
        tp: TopicPartition,
        held: Vec<HeldCopy>,
    },
    /// World, right after a process crash: the WAL entries readable in the page cache
    /// but not on the platter (written, not yet fsynced), by identity. The next open
    /// reads them; a power loss before one of them is fsynced drops it. Recorded only
    /// when there is one.
    WalCachedAtKill { entries: Vec<DamagedWalEntry> },
    /// World, right after a process crash that cut a store open short: every WAL entry
    /// of a partition that open announced an R2 hole on, readable both in the page
    /// cache and on the platter (what its salvage wrote and fsynced before its alarm is
    /// among them, whatever seq it took). The next open reads them. Recorded only when
    /// there is one.
    WalDurableAtKill { entries: Vec<DamagedWalEntry> },
    /// World, right after a power loss: which of the entries earlier process crashes
    /// left in the WAL (`WalCachedAtKill` and `WalDurableAtKill`, since the last power
    /// loss) the platter now reads; the others were dropped. Recorded only when one was
    /// kept.
    WalKeptAtPowerLoss { entries: Vec<DamagedWalEntry> },
    /// World, right after the engine's `frame_skipped` alarm for the frame of `tp` at
    /// `base` with `records` records: whether the page cache then held that frame whole
    /// in its segment's valid extent from byte 0, as the reference decoder reads it
    /// (unreadable sectors count as damage). The engine reads a frame and raises the
    /// alarm with no write to it in between, so a whole frame there is one it skipped
    /// intact.
    FrameAtSkip {
        tp: TopicPartition,
        base: Offset,
        records: u64,
        whole: bool,
    },
    /// World, right after the engine's `r3_refused` alarm for `tp`, when no fault
    /// struck `tp` or a store file since the restart (so the page cache is what the
    /// open read): what the refusal can take. `bad_offset` is where the reference
    /// decoder finds the partition's bad region (`None`: it finds none); `log` the ids
    /// of the records the segments hold in readable frames (their valid extents, and
    /// the frames past the bad region); `wal` the ids of the entries for `tp` the WAL
    /// holds.
    HeldAtRefusal {
        tp: TopicPartition,
        bad_offset: Option<Offset>,
        log: Vec<ProduceId>,
        wal: Vec<ProduceId>,
    },
    /// World, at the end of a run whose node is up: the ingress WAL's segment files the
    /// page cache lists, oldest first, with the partitions their readable entries
    /// belong to (the reference decoder's); the checkpoint file's seq per partition
    /// (`None`: no readable file); the base of the segment the engine says it writes
    /// to; when the running incarnation's store open returned; and the segment size
    /// the store was configured with (`StoreConfig::wal_segment_bytes`).
    /// `wal_progress` judges them. `floors`: the checkpoint file's offset per
    /// partition, below which retention may delete (`retention_progress` reads it;
    /// empty without a readable file, and in histories written before it was recorded).
    WalAtEnd {
        opened_ms: u64,
        segments: Vec<WalSegmentAtEnd>,
        checkpoint: Option<Vec<(TopicPartition, u64)>>,
        active: u64,
        segment_bytes: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        floors: Vec<(TopicPartition, u64)>,
    },
}

/// One ingress WAL segment file at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalSegmentAtEnd {
    /// The first seq its name gives.
    pub base: u64,
    /// Its readable entries.
    pub entries: u64,
    /// The partitions of those entries, each once, in order, with one past the last
    /// seq of theirs the segment holds.
    pub ends: Vec<(TopicPartition, u64)>,
    /// The byte position its last readable frame starts at (`None`: no readable frame).
    pub last_frame_at: Option<u64>,
}

/// One ingress WAL entry destroyed by damage at rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DamagedWalEntry {
    /// WAL sequence number of the entry.
    pub seq: u64,
    pub tp: TopicPartition,
    /// The produce id its payload carries.
    pub id: ProduceId,
}

/// One partition's entry in the WAL checkpoint: the replay takes its entries from seq
/// `seq` on, and looks for their visible copies from offset `offset` up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointFloor {
    pub tp: TopicPartition,
    pub seq: u64,
    pub offset: Offset,
}

impl CheckpointFloor {
    /// Whether an open reading the checkpoint `floors` (`None`: unreadable) replays
    /// every WAL entry of `tp`: it gives `tp` no floor past the start (seq 0, offset 0).
    pub fn replays_every_entry(floors: Option<&[CheckpointFloor]>, tp: &TopicPartition) -> bool {
        floors.is_none_or(|floors| {
            floors
                .iter()
                .find(|f| f.tp == *tp)
                .is_none_or(|f| (f.seq, f.offset) == (0, 0))
        })
    }
}

/// One record a deleted segment file held: where, whose, and the commit time its
/// envelope carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldCopy {
    pub offset: Offset,
    pub id: ProduceId,
    pub committed_at_ms: u64,
}

/// Keys and payloads serialize as byte strings: JSON writes them as the same array of
/// numbers a `Vec<u8>` gives, and the trace hash takes them eight bytes at a time.
fn as_bytes<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(bytes)
}

/// One history entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Simulated monotonic time in milliseconds.
    pub at_ms: u64,
    /// The node incarnation current when the event was recorded.
    pub incarnation: Incarnation,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// The partition a poison struck and the incarnation it struck in, if this event
    /// says so: the world's report, or the engine's alarm (which comes as the poison
    /// strikes; one a killed incarnation's task raises after the restart is its own).
    pub fn poisoned(&self) -> Option<(&TopicPartition, Incarnation)> {
        match &self.kind {
            EventKind::PartitionPoisoned { tp } => Some((tp, self.incarnation)),
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: crate::history::Alarm::Poisoned { .. },
                raised_in,
            } => Some((tp, raised_in.unwrap_or(self.incarnation))),
            _ => None,
        }
    }
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// A change the engine makes to a file through the filesystem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    /// `write_at`.
    Write,
    /// `set_len`.
    SetLen,
    /// An open that creates the file, or truncates it (`CreateNew`, `CreateTruncate`).
    Create,
    /// `remove_file`.
    Unlink,
    /// `rename`, from or to the path.
    Rename,
}

impl std::fmt::Display for FileChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileChange::Write => "write",
            FileChange::SetLen => "set_len",
            FileChange::Create => "create",
            FileChange::Unlink => "unlink",
            FileChange::Rename => "rename",
        })
    }
}
