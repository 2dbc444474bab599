//! The run history: what the simulated world saw, in the order it saw it.
//!
//! A [`History`] is the only input of the checkers ([`crate::check`]). The world
//! appends one [`Event`] per observation; nothing is ever edited or removed. Every
//! event carries the simulated time (`at_ms`, madsim's monotonic clock, never the
//! wall clock the engine may see stepping backwards) and the node incarnation it
//! belongs to.
//!
//! Invariants kept (asserted in [`History::record`]):
//! - `at_ms` never decreases along the history;
//! - the incarnation starts at 0 and only [`EventKind::Restart`] changes it, by one;
//! - a [`EventKind::Crash`] is stamped with the incarnation that dies, a
//!   [`EventKind::Restart`] with the new one;
//! - no [`EventKind::Fault`] follows [`EventKind::Heal`] (heal means "no faults from
//!   here on"; a fault after it is a simulator bug, so it panics);
//! - a [`EventKind::WalEntriesDamaged`] names an earlier [`EventKind::Fault`].
//!
//! Who records what: producers and consumers live outside the simulated node and
//! survive crashes; they record produce and consume events. The world (the driver
//! that owns the node, the simulated disk and the fault plan) records crashes,
//! restarts, faults, heal, and what it learns from the engine (counters, refusal,
//! poison, HWM, log start) and from the disk's durable image (durable tail, persisted
//! HWM, frontier writes).
//!
//! Payloads carry the produce id so that deliveries can be matched to produces:
//! [`encode_payload`] / [`parse_payload_id`].

#![deny(clippy::unwrap_used)]

mod alarm;
mod disk;
mod display;
mod json;
mod layout;
mod payload;
mod record;

pub use alarm::Alarm;
pub use disk::{BadAt, DiskView, OpenRule};
pub use layout::{LayoutKnobs, SegmentLayout};
pub use payload::{
    PAYLOAD_BODY_LEN_OFFSET, PAYLOAD_HEADER_LEN, PAYLOAD_ID_OFFSET, PAYLOAD_MAGIC,
    PAYLOAD_MAGIC_OFFSET, PayloadError, encode_payload, parse_payload_id,
};

use json::ByteTable;

use std::fmt;

use serde::{Deserialize, Serialize};

/// Unique id of one produce call; retries use a fresh id.
pub type ProduceId = u64;
/// Logical record number in a partition.
pub type Offset = u64;
/// Node incarnation: 0 for the first boot, +1 per restart.
pub type Incarnation = u32;

/// A partition of a topic.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: u32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: u32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// A half-open range of offsets `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OffsetRange {
    pub start: Offset,
    pub end: Offset,
}

impl OffsetRange {
    pub fn contains(&self, offset: Offset) -> bool {
        self.start <= offset && offset < self.end
    }
}

impl fmt::Display for OffsetRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// The kind of file a fault hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A `.log` segment of a partition.
    Segment,
    /// The 8-byte `hwm` file.
    Hwm,
    /// `consumer.offset` or its temp file.
    ConsumerOffset,
    /// The ingress write-ahead log.
    Wal,
    /// A directory (entry creation, rename, unlink).
    Directory,
    Other,
}

/// What the simulator injected. The world records a [`EventKind::Fault`] at the moment
/// of injection, before the faulted call returns to the engine, so that everything the
/// fault can affect comes after it in the history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fault")]
pub enum FaultKind {
    /// The decision to kill the node with a power loss. Informational: checkers read
    /// [`EventKind::Crash`], which carries the durable state.
    Crash,
    /// An unsynced write reached the disk only partly (sector granularity).
    /// Out of contract only on the `hwm` file (a torn 8-byte HWM write).
    TornWrite { file: FileKind },
    /// An unsynced write (or directory entry) was dropped at a crash.
    LostWrite { file: FileKind },
    /// fsync returned EIO. In contract: the partition must poison itself.
    FsyncEio { file: FileKind },
    /// fsync reported success without persisting. Out of contract. `offsets`: for a
    /// segment, the records whose frames it failed to persist; for `hwm` or
    /// `consumer.offset`, the offsets between the durable value and the one the engine
    /// believes durable (what the fault can move past); `None` when unknown.
    LostFsync {
        file: FileKind,
        offsets: Option<OffsetRange>,
    },
    /// A bit flipped in data at rest. `offsets` are the records whose stored bytes
    /// were hit, when known (in `hwm` or `consumer.offset`: the offsets between the
    /// value before and after the flip); `below_hwm` tells whether the flipped frame
    /// starts below the persisted HWM at injection (acknowledged data), when known.
    BitFlip {
        file: FileKind,
        offsets: Option<OffsetRange>,
        below_hwm: Option<bool>,
    },
    /// A write landed at the wrong position or file. `offsets`: the records of the
    /// frames it overwrote and of the frames it was meant to write (neither is durable
    /// where it belongs); `below_hwm` whether the first of them starts below the
    /// persisted HWM.
    Misdirected {
        file: FileKind,
        offsets: Option<OffsetRange>,
        below_hwm: Option<bool>,
    },
    /// A sector of data at rest became unreadable: reads touching it fail with EIO
    /// until a write of it reaches the platter (a latent sector error). In contract:
    /// the engine must judge it like damage it can see. `offsets` and `below_hwm` as
    /// for [`FaultKind::BitFlip`], for every frame the sector shares a byte with.
    LatentSector {
        file: FileKind,
        offsets: Option<OffsetRange>,
        below_hwm: Option<bool>,
    },
    /// A write or create failed with ENOSPC.
    Enospc { file: FileKind },
    /// I/O slowed down by `delay_ms`.
    Latency { delay_ms: u64 },
    /// The wall clock stepped backwards by `back_ms`.
    ClockStep { back_ms: u64 },
    /// The decision to kill the engine's process only: the page cache survives.
    /// Informational, like `Crash`.
    ProcessCrash,
    /// The server dropped a request's engine future at an await point (a client timed
    /// out or went away). In contract: the call acknowledges nothing, and nothing else
    /// may be lost, stuck or poisoned because of it.
    Cancel { request: RequestKind },
}

/// Which client request a [`FaultKind::Cancel`] dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    Produce,
    Receive,
    /// An ack or nack: dropped before it returned, it had no effect (the engine's
    /// contract, `engine/README.md`), so the history records no ack and no nack.
    Settle,
    /// Not a client's request: one of the engine's background loops (flusher, HWM
    /// persister, reaper, store ticker; named by the fault's path), restarted after.
    Loop,
}

impl FaultKind {
    /// The kind of file the fault hit, for the faults on one file.
    pub fn file(&self) -> Option<FileKind> {
        match self {
            FaultKind::TornWrite { file }
            | FaultKind::LostWrite { file }
            | FaultKind::FsyncEio { file }
            | FaultKind::LostFsync { file, .. }
            | FaultKind::BitFlip { file, .. }
            | FaultKind::Misdirected { file, .. }
            | FaultKind::LatentSector { file, .. }
            | FaultKind::Enospc { file } => Some(*file),
            FaultKind::Crash
            | FaultKind::Latency { .. }
            | FaultKind::ClockStep { .. }
            | FaultKind::ProcessCrash
            | FaultKind::Cancel { .. } => None,
        }
    }

    /// Faults the engine cannot defend against (DESIGN.md, "Durability contract"):
    /// they may cause loss, which must then be attributable to them.
    pub fn is_out_of_contract(&self) -> bool {
        match self {
            // A write the disk acknowledged that landed elsewhere: the durable image
            // lacks acknowledged data, exactly as after a lost fsync.
            FaultKind::LostFsync { .. } | FaultKind::Misdirected { .. } => true,
            // The binding layouts of `hwm` and `consumer.offset` are 8 bare bytes with
            // no checksum: a flip there cannot be detected, only attributed.
            FaultKind::BitFlip {
                file: FileKind::Hwm | FileKind::ConsumerOffset,
                ..
            } => true,
            FaultKind::TornWrite { file } => *file == FileKind::Hwm,
            _ => false,
        }
    }

    /// Damage to a segment at rest, which the engine must detect when it reads it.
    pub fn segment_damage(&self) -> Option<(Option<OffsetRange>, Option<bool>)> {
        match self {
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets,
                below_hwm,
            }
            | FaultKind::Misdirected {
                file: FileKind::Segment,
                offsets,
                below_hwm,
            }
            | FaultKind::LatentSector {
                file: FileKind::Segment,
                offsets,
                below_hwm,
            } => Some((*offsets, *below_hwm)),
            _ => None,
        }
    }
}

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
    /// World, after a restart: the frontier the engine recovered from
    /// `consumer.offset` (every offset below it is acknowledged): the file's value as
    /// the durable image holds it (0 when absent), and the frontier the engine loaded
    /// from it (after its clamps), as its API reports it.
    FrontierObserved {
        tp: TopicPartition,
        frontier: Offset,
        /// Absent in histories written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loaded: Option<Offset>,
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
    /// World, when the engine reports the partition poisoned (after fsync failure).
    PartitionPoisoned { tp: TopicPartition },
    /// World, when the engine answered a receive whose consumer had already given up
    /// (its reply timed out or the channel closed): the engine leased these offsets,
    /// and no consumer saw them.
    DeliveriesUnclaimed {
        tp: TopicPartition,
        offsets: Vec<Offset>,
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
    /// its entries. `first_replay` is the first incarnation whose open reads the file
    /// after the damage (the running one if its open has not opened the file yet).
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
    /// the page cache: `kept` as plain entries (their entry was gone), `copied` as
    /// salvage copies. Which records the salvage saved, by identity.
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

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The ordered list of events of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    events: Vec<Event>,
    incarnation: Incarnation,
    healed: bool,
}

impl History {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The incarnation the next event will be stamped with.
    pub fn incarnation(&self) -> Incarnation {
        self.incarnation
    }

    /// Simulated time of the last event (0 for an empty history).
    pub fn end_ms(&self) -> u64 {
        self.events.last().map_or(0, |e| e.at_ms)
    }

    /// Appends an event; the incarnation is tracked here. Panics on a broken history
    /// invariant (see the module doc): that is a simulator bug, not an engine one.
    pub fn record(&mut self, at_ms: u64, kind: EventKind) -> &mut Self {
        assert!(
            at_ms >= self.end_ms(),
            "history time went backwards: {at_ms} ms after {} ms",
            self.end_ms()
        );
        match &kind {
            EventKind::Restart => self.incarnation += 1,
            EventKind::Fault { .. } => {
                assert!(!self.healed, "fault injected after heal at {at_ms} ms");
            }
            EventKind::Heal => self.healed = true,
            EventKind::WalEntriesDamaged { fault_index, .. } => assert!(
                matches!(
                    self.events.get(*fault_index).map(|e| &e.kind),
                    Some(EventKind::Fault { .. })
                ),
                "WAL damage names event {fault_index}, which is not a fault"
            ),
            _ => {}
        }
        let event = Event {
            at_ms,
            incarnation: self.incarnation,
            kind,
        };
        // The trace also goes through `tracing` (target `cafelog_sim::trace`), so an
        // embedder's subscriber sees it interleaved with the engine's own events.
        tracing::debug!(target: "cafelog_sim::trace", at_ms, incarnation = event.incarnation, "{event}");
        self.events.push(event);
        self
    }

    /// One JSON object per line, in history order.
    pub fn to_json_lines(&self) -> String {
        let mut out = Vec::new();
        self.write_json_lines(&mut out)
            .expect("writing to a Vec cannot fail");
        // serde_json writes valid UTF-8 only.
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// [`History::to_json_lines`], streamed into `out` without building the string.
    pub fn write_json_lines(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        for event in &self.events {
            // Serialising plain data with string keys cannot fail; only `out` can.
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, ByteTable);
            event
                .serialize(&mut serializer)
                .map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_and_rejects_damage() {
        let payload = encode_payload(0x0102_0304_0506_0708, b"filler");
        assert_eq!(payload.len(), PAYLOAD_HEADER_LEN + 6);
        assert_eq!(parse_payload_id(&payload), Ok(0x0102_0304_0506_0708));
        assert_eq!(
            parse_payload_id(&payload[..10]),
            Err(PayloadError::TooShort { len: 10 })
        );
        let mut bad_magic = payload.clone();
        bad_magic[0] ^= 1;
        assert_eq!(
            parse_payload_id(&bad_magic),
            Err(PayloadError::BadMagic { found: *b"bafe" })
        );
        let truncated = &payload[..payload.len() - 1];
        assert_eq!(
            parse_payload_id(truncated),
            Err(PayloadError::BodyLenMismatch {
                header: 6,
                actual: 5
            })
        );
    }

    #[test]
    fn history_serialises_to_json_and_back() {
        let tp = TopicPartition::new("orders", 3);
        let mut history = History::new();
        history
            .produce_attempt(1, 7, "orders", Some(3), b"k", &encode_payload(7, b""))
            .produce_ack(2, 7, &tp, Some(0), Some(1_000))
            .fault(
                3,
                FaultKind::BitFlip {
                    file: FileKind::Segment,
                    offsets: Some(OffsetRange { start: 0, end: 1 }),
                    below_hwm: Some(true),
                },
                Some(&tp),
                None,
            )
            .wal_entries_damaged(
                3,
                2,
                0,
                vec![DamagedWalEntry {
                    seq: 9,
                    tp: tp.clone(),
                    id: 7,
                }],
            )
            .crash(4, vec![])
            .restart(5)
            .heal(6);
        let json = serde_json::to_string(&history).expect("serialises");
        let back: History = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, history);
        assert_eq!(back.events()[5].incarnation, 1);
        let lines = history.to_json_lines();
        assert_eq!(lines.lines().count(), 7);
        assert!(lines.contains(r#""event":"produce_ack""#), "{lines}");
        assert!(lines.contains(r#""fault":"bit_flip""#), "{lines}");
        assert!(
            lines.contains(
                r#""event":"wal_entries_damaged","fault_index":2,"first_replay":0,"entries":[{"seq":9,"tp":{"topic":"orders","partition":3},"id":7}]"#
            ),
            "{lines}"
        );
    }

    #[test]
    fn json_lines_are_serde_json_compact_output() {
        let every_byte: Vec<u8> = (0..=255).collect();
        let mut history = History::new();
        history
            .produce_attempt(1, 7, "t\"\\é", Some(2), &every_byte, &every_byte)
            .produce_failed(2, 7, "boom\n");
        let expected: String = history
            .events()
            .iter()
            .map(|e| serde_json::to_string(e).expect("serialises") + "\n")
            .collect();
        assert_eq!(history.to_json_lines(), expected);
    }

    #[test]
    #[should_panic(expected = "fault injected after heal")]
    fn fault_after_heal_is_a_simulator_bug() {
        History::new()
            .heal(1)
            .fault(2, FaultKind::ClockStep { back_ms: 5 }, None, None);
    }

    #[test]
    #[should_panic(expected = "WAL damage names event 0, which is not a fault")]
    fn wal_damage_must_name_a_fault() {
        History::new()
            .heal(1)
            .wal_entries_damaged(2, 0, 0, Vec::new());
    }

    #[test]
    #[should_panic(expected = "history time went backwards")]
    fn time_never_goes_backwards() {
        History::new().heal(5).heal(4);
    }
}
