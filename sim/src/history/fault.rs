//! What the simulator injects: the file kinds a fault names, the fault kinds with what
//! each reached, and the requests a cancel drops.

use super::*;
use serde::{Deserialize, Serialize};

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
    /// where it belongs), as one hull; `below_hwm` whether the first of them starts
    /// below the persisted HWM. `parts`, for a segment: the frames it overwrote and
    /// those it was meant to write as ranges of their own (the offsets between them
    /// are untouched), empty when it hit no frame; `None` when the world could not
    /// name both.
    Misdirected {
        file: FileKind,
        offsets: Option<OffsetRange>,
        below_hwm: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parts: Option<Vec<OffsetRange>>,
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
    /// A write to a segment stored one bit flipped (in the page cache, so the next
    /// fsync persists it). In contract: the commit path re-reads what it fsynced before
    /// the HWM moves, so it must poison the log rather than acknowledge the frame; it
    /// excuses no loss, skip, refusal or clamp, only the poison and a cut of its own
    /// frame. `offsets`: the records of the frame the bit landed in (`None`: unknown);
    /// `below_hwm` whether that frame starts below the durable `hwm` word at the write
    /// (only a write-back after a clamp rewrites frames there).
    CorruptWrite {
        file: FileKind,
        offsets: Option<OffsetRange>,
        below_hwm: Option<bool>,
    },
    /// A corrupt write an open's write-back made was still in place when a kill ended
    /// that open (the read-back that repairs it never ran): from here on it is damage
    /// at rest to that frame, as [`FaultKind::BitFlip`] is, and excuses what such
    /// damage excuses. Recorded at the kill, for the image the next open reads.
    CorruptWriteLeft {
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
            | FaultKind::CorruptWrite { file, .. }
            | FaultKind::CorruptWriteLeft { file, .. }
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
                ..
            }
            | FaultKind::LatentSector {
                file: FileKind::Segment,
                offsets,
                below_hwm,
            }
            | FaultKind::CorruptWriteLeft {
                file: FileKind::Segment,
                offsets,
                below_hwm,
            } => Some((*offsets, *below_hwm)),
            _ => None,
        }
    }
}
