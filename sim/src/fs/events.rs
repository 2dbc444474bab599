//! The fault log: every injected fault and every crash outcome of [`super::SimFs`] as a
//! typed [`FsEvent`], in the order they happened, so the checkers can attribute a loss to
//! the fault that caused it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

/// What happened. Ordered so counts can live in a `BTreeMap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FsEventKind {
    /// Power loss: the disk crashed; `detail` sums up the outcome.
    Crash,
    /// A pending write was lost entirely at a crash.
    CrashWriteLost,
    /// A pending write reached the disk whole at a crash.
    CrashWriteKept,
    /// A pending write was torn at a crash; `detail` lists the sectors that survived.
    CrashWriteTorn,
    /// A pending `set_len` was lost at a crash.
    CrashSetLenLost,
    /// A pending `set_len` reached the disk at a crash.
    CrashSetLenKept,
    /// A pending directory operation (create, rename, remove) was lost at a crash.
    CrashDirOpLost,
    /// A pending directory operation survived a crash.
    CrashDirOpKept,
    /// `sync_data` returned EIO; the pending data is not durable (reads still show it).
    FsyncEio,
    /// `sync_data` returned Ok but persisted nothing. Out of contract.
    LostFsync,
    /// `write_at` returned ENOSPC and wrote nothing.
    Enospc,
    /// A persisted write landed at the wrong position. Out of contract.
    MisdirectedWrite,
    /// One bit of durable data was flipped at rest.
    BitFlip,
    /// A sector of durable data became unreadable (EIO until written again).
    LatentSector,
    /// An operation on a handle from an earlier incarnation was refused.
    StaleHandle,
    /// [`super::SimFs::heal`] was called: no fault fires from here on.
    Heal,
    /// The process using the disk died, the kernel did not: the page cache and every
    /// pending operation outlive it; `detail` says what stays pending.
    ProcessCrash,
    /// `sync_dir` returned EIO; the directory's pending entries stay pending.
    DirFsyncEio,
    /// A segment write stored one bit flipped (page cache and pending write).
    CorruptWrite,
}

/// One entry of the fault log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsEvent {
    /// Position in the log of this `SimFs`, from 0, never reused.
    pub seq: u64,
    /// The incarnation (crash count) the event belongs to; a crash event carries the
    /// epoch it ended.
    pub epoch: u64,
    /// Simulated time since the runtime started, when inside a madsim runtime.
    pub sim_time: Option<Duration>,
    /// What happened.
    pub kind: FsEventKind,
    /// The file (or directory) concerned; empty for whole-disk events.
    pub path: PathBuf,
    /// Byte position concerned, when there is one.
    pub position: Option<u64>,
    /// Byte count concerned, when there is one.
    pub len: Option<u64>,
    /// Human-readable specifics (sectors kept, shift, bit, ...).
    pub detail: String,
    /// For a [`FsEventKind::MisdirectedWrite`]: where it landed and what was there.
    pub overwritten: Option<Overwritten>,
    /// For a [`FsEventKind::LostFsync`]: the byte ranges of the pending operations it
    /// dropped (a write's bytes; a `set_len`'s, between its length and the durable
    /// length), so a caller can tell its loss from older divergence of the same file.
    /// Empty for other events.
    pub lost_ranges: Vec<Range<u64>>,
    /// For a [`FsEventKind::CorruptWrite`]: the bytes as the caller meant them and the
    /// bit that was flipped.
    pub corrupted: Option<CorruptedWrite>,
}

/// A write that landed corrupt: what the caller passed, so a reader can tell which
/// frame the flip hit even after the page cache changed (a rewrite, a truncation).
#[derive(Clone, PartialEq, Eq)]
pub struct CorruptedWrite {
    /// The file position of the flipped byte (within the write).
    pub byte: u64,
    /// Which bit of it, 0 to 7.
    pub bit: u8,
    /// The bytes the caller wrote, starting at the event's `position`.
    pub written: Vec<u8>,
}

impl std::fmt::Debug for CorruptedWrite {
    // The bytes are a frame or more: their length says enough in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorruptedWrite")
            .field("byte", &self.byte)
            .field("bit", &self.bit)
            .field("written_len", &self.written.len())
            .finish()
    }
}

/// What a misdirected write destroyed: the bytes it landed on, in the durable image
/// as it stood just before, so a caller can tell which frames (and records) were there.
#[derive(Clone, PartialEq, Eq)]
pub struct Overwritten {
    /// Byte ranges of the file the write's surviving bytes landed on (one range at
    /// fsync; one per run of kept sectors when a crash tore the write), ascending.
    pub landed: Vec<Range<u64>>,
    /// The file's whole durable image just before the write landed.
    pub durable_before: Vec<u8>,
}

impl std::fmt::Debug for Overwritten {
    // The image is most of a segment: its length says enough in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overwritten")
            .field("landed", &self.landed)
            .field("durable_before_len", &self.durable_before.len())
            .finish()
    }
}

/// Most events kept between two [`super::SimFs::take_events`] calls; beyond it events are
/// counted (in [`FsEventLog::counts`] and `dropped`) but not stored, so a caller that
/// never takes them cannot exhaust memory.
pub const EVENTS_BUFFERED_MAX: usize = 1 << 20;

/// The ordered log and its per-kind counts (counts survive `take`).
#[derive(Debug, Default)]
pub(crate) struct FsEventLog {
    events: Vec<FsEvent>,
    counts: BTreeMap<FsEventKind, u64>,
    next_seq: u64,
    dropped: u64,
}

impl FsEventLog {
    pub(crate) fn record(
        &mut self,
        epoch: u64,
        kind: FsEventKind,
        path: PathBuf,
        position: Option<u64>,
        len: Option<u64>,
        detail: String,
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        *self.counts.entry(kind).or_insert(0) += 1;
        if self.events.len() >= EVENTS_BUFFERED_MAX {
            self.dropped += 1;
            return;
        }
        let sim_time = madsim::time::TimeHandle::try_current().map(|t| t.elapsed());
        self.events.push(FsEvent {
            seq,
            epoch,
            sim_time,
            kind,
            path,
            position,
            len,
            detail,
            overwritten: None,
            lost_ranges: Vec::new(),
            corrupted: None,
        });
    }

    /// Attaches to the event just recorded (a lost fsync) the ranges it dropped;
    /// nothing when that event was not stored (the buffer was full).
    pub(crate) fn lost(&mut self, ranges: Vec<Range<u64>>) {
        if let Some(last) = self.events.last_mut()
            && last.seq + 1 == self.next_seq
        {
            last.lost_ranges = ranges;
        }
    }

    /// Attaches to the event just recorded (a misdirected write) what it overwrote;
    /// nothing when that event was not stored (the buffer was full).
    pub(crate) fn overwrote(&mut self, overwritten: Overwritten) {
        if let Some(last) = self.events.last_mut()
            && last.seq + 1 == self.next_seq
        {
            last.overwritten = Some(overwritten);
        }
    }

    /// Attaches to the event just recorded (a corrupt write) what was meant; nothing
    /// when that event was not stored (the buffer was full).
    pub(crate) fn corrupted(&mut self, corrupted: CorruptedWrite) {
        if let Some(last) = self.events.last_mut()
            && last.seq + 1 == self.next_seq
        {
            last.corrupted = Some(corrupted);
        }
    }

    pub(crate) fn take(&mut self) -> Vec<FsEvent> {
        std::mem::take(&mut self.events)
    }

    pub(crate) fn counts(&self) -> BTreeMap<FsEventKind, u64> {
        self.counts.clone()
    }

    pub(crate) fn count(&self, kind: FsEventKind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}
