//! The engine's alarms as the history records them: what the engine said it gave up,
//! refused or did at an open, read from its own `tracing` events
//! (`cafelog_engine::alarm`, one variant per alarm name there) at the moment it raised
//! them. The oracle compares them with its own expectation; it never infers them from
//! the engine's file writes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One alarm. Offsets are log offsets, positions byte positions in `segment`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "alarm")]
pub enum Alarm {
    /// R1: an open truncates a torn tail at `offset`.
    TornTail {
        segment: String,
        position: u64,
        offset: u64,
        bytes: u64,
    },
    /// R2: an open truncates at a hole above the persisted HWM, at `offset`.
    Hole {
        segment: String,
        position: u64,
        offset: u64,
        bytes: u64,
    },
    /// Of `offered` readable records past an R2 hole, `kept` (no other copy) were
    /// written into the WAL, and `copied` (their entry still readable) got a second
    /// copy, at WAL seqs `[first_seq, end_seq)`.
    Salvaged {
        offered: u64,
        kept: u64,
        copied: u64,
        first_seq: u64,
        end_seq: u64,
    },
    /// R3: an open refuses the partition.
    Refused { segment: String, position: u64 },
    /// R4: the persisted HWM was clamped down to `hwm`; `lost` records are recorded loss.
    Clamp {
        persisted_hwm: u64,
        hwm: u64,
        lost: u64,
    },
    /// Damaged unused space after a sealed segment's last frame, trimmed at open.
    JunkTrimmed { segment: String, bytes: u64 },
    /// An open finished: its account of the partition.
    LogOpened {
        log_start: u64,
        hwm: u64,
        tail: u64,
        hidden: u64,
    },
    /// A frame failed its checks at consume time: its records are skipped.
    FrameSkipped { base: u64, records: u64 },
    /// Records of a valid frame whose envelope does not parse, skipped at consume time.
    RecordsSkipped { base: u64, records: u64 },
    /// A write or fsync failed, or (`cancelled`) records in flight were dropped before
    /// they reached the file; the partition acknowledges nothing more. `directory`: the
    /// failure was the fsync of the partition's directory after a segment create.
    /// `verify`: a frame the log wrote did not read back as written.
    Poisoned {
        cancelled: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        directory: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        verify: bool,
    },
    /// The hidden tail `[from, to)` made visible (the WAL lost entries).
    HiddenExposed { from: u64, to: u64 },
    /// The WAL had unreadable regions at open.
    WalDamaged {
        corrupt_entries: u64,
        skipped_bytes: u64,
    },
    /// The WAL checkpoint failed its CRC: every entry replays.
    WalCheckpointUnreadable,
    /// A WAL write or fsync failed.
    WalPoisoned,
    /// `consumer.offset` was unreadable: delivery restarts at `log_start`.
    FrontierReset { log_start: u64 },
    /// A recovered frontier `value` outside `[log start, HWM]` was clamped.
    FrontierClamped { value: u64, clamped: u64 },
    /// The topic's `topic.conf` was unreadable at open: none of its partitions opened.
    TopicRefused { topic: String },
    /// Not an alarm but the engine's account: a `consumer.offset` replace with `value`
    /// began.
    FrontierPersisting { value: u64 },
    /// That replace returned (temp file fsynced, renamed, directory fsynced): `value` is
    /// durable.
    FrontierPersisted { value: u64 },
    /// Not an alarm but the engine's account: a retention sweep took `[from, log_start)`
    /// out of the log (its files' unlinks follow, or, the sweep dropped, a later one's).
    LogStartMoved { from: u64, log_start: u64 },
    /// Not an alarm but the engine's account: an open's WAL replay begins to commit
    /// `records` entries into the partition (the open may still be killed before the
    /// store comes up).
    ReplayCommitting { records: u64 },
    /// Not an alarm but the engine's account: a drain took `records` buffered records
    /// (`bytes` of envelopes) into the frame at `base` and left records buffered, the
    /// next one `next_bytes` long. Raised only when records were left.
    DrainPartial {
        base: u64,
        records: u64,
        bytes: u64,
        next_bytes: u64,
    },
    /// Not an alarm but the engine's account: the partition's queue state loaded on
    /// first touch, its frontier at `loaded` (after any reset or clamp).
    FrontierLoaded { loaded: u64 },
}

impl Alarm {
    /// The engine's name for it (`cafelog_engine::alarm`).
    pub fn name(&self) -> &'static str {
        use cafelog_engine::alarm as a;
        match self {
            Alarm::TornTail { .. } => a::TORN_TAIL,
            Alarm::Hole { .. } => a::HOLE,
            Alarm::Salvaged { .. } => a::SALVAGED,
            Alarm::Refused { .. } => a::REFUSED,
            Alarm::Clamp { .. } => a::CLAMP,
            Alarm::JunkTrimmed { .. } => a::JUNK_TRIMMED,
            Alarm::LogOpened { .. } => a::LOG_OPENED,
            Alarm::FrameSkipped { .. } => a::FRAME_SKIPPED,
            Alarm::RecordsSkipped { .. } => a::RECORDS_SKIPPED,
            Alarm::Poisoned { .. } => a::POISONED,
            Alarm::HiddenExposed { .. } => a::HIDDEN_EXPOSED,
            Alarm::WalDamaged { .. } => a::WAL_DAMAGED,
            Alarm::WalCheckpointUnreadable => a::WAL_CHECKPOINT_UNREADABLE,
            Alarm::WalPoisoned => a::WAL_POISONED,
            Alarm::FrontierReset { .. } => a::FRONTIER_RESET,
            Alarm::FrontierClamped { .. } => a::FRONTIER_CLAMPED,
            Alarm::TopicRefused { .. } => a::TOPIC_REFUSED,
            Alarm::FrontierPersisting { .. } => a::FRONTIER_PERSISTING,
            Alarm::FrontierPersisted { .. } => a::FRONTIER_PERSISTED,
            Alarm::LogStartMoved { .. } => a::LOG_START_MOVED,
            Alarm::ReplayCommitting { .. } => a::REPLAY_COMMITTING,
            Alarm::DrainPartial { .. } => a::DRAIN_PARTIAL,
            Alarm::FrontierLoaded { .. } => a::FRONTIER_LOADED,
        }
    }

    /// Builds the alarm an engine event names from its fields (`None` for an unknown
    /// name or a missing field: the engine and this enum disagree, a harness bug).
    pub fn from_fields(
        name: &str,
        num: impl Fn(&str) -> Option<u64>,
        text: impl Fn(&str) -> Option<String>,
    ) -> Option<Alarm> {
        use cafelog_engine::alarm as a;
        let alarm = match name {
            a::TORN_TAIL | a::HOLE => {
                let (segment, position, offset, bytes) = (
                    text("segment")?,
                    num("position")?,
                    num("offset")?,
                    num("bytes")?,
                );
                if name == a::TORN_TAIL {
                    Alarm::TornTail {
                        segment,
                        position,
                        offset,
                        bytes,
                    }
                } else {
                    Alarm::Hole {
                        segment,
                        position,
                        offset,
                        bytes,
                    }
                }
            }
            a::SALVAGED => Alarm::Salvaged {
                offered: num("offered")?,
                kept: num("kept")?,
                copied: num("copied")?,
                first_seq: num("first_seq")?,
                end_seq: num("end_seq")?,
            },
            a::REFUSED => Alarm::Refused {
                segment: text("segment")?,
                position: num("position")?,
            },
            a::CLAMP => Alarm::Clamp {
                persisted_hwm: num("persisted_hwm")?,
                hwm: num("hwm")?,
                lost: num("lost")?,
            },
            a::JUNK_TRIMMED => Alarm::JunkTrimmed {
                segment: text("segment")?,
                bytes: num("bytes")?,
            },
            a::LOG_OPENED => Alarm::LogOpened {
                log_start: num("log_start")?,
                hwm: num("hwm")?,
                tail: num("tail")?,
                hidden: num("hidden")?,
            },
            a::FRAME_SKIPPED => Alarm::FrameSkipped {
                base: num("base")?,
                records: num("records")?,
            },
            a::RECORDS_SKIPPED => Alarm::RecordsSkipped {
                base: num("base")?,
                records: num("records")?,
            },
            a::POISONED => Alarm::Poisoned {
                cancelled: text("op")? == a::CANCELLED_OP,
                directory: text("op")? == a::SYNC_DIR_OP,
                verify: [a::VERIFY_AFTER_FSYNC_OP, a::VERIFY_BEFORE_REWRITE_OP]
                    .contains(&text("op")?.as_str()),
            },
            a::HIDDEN_EXPOSED => Alarm::HiddenExposed {
                from: num("from")?,
                to: num("to")?,
            },
            a::WAL_DAMAGED => Alarm::WalDamaged {
                corrupt_entries: num("corrupt_entries")?,
                skipped_bytes: num("skipped_bytes")?,
            },
            a::WAL_CHECKPOINT_UNREADABLE => Alarm::WalCheckpointUnreadable,
            a::WAL_POISONED => Alarm::WalPoisoned,
            a::FRONTIER_RESET => Alarm::FrontierReset {
                log_start: num("log_start")?,
            },
            a::FRONTIER_CLAMPED => Alarm::FrontierClamped {
                value: num("value")?,
                clamped: num("clamped")?,
            },
            a::TOPIC_REFUSED => Alarm::TopicRefused {
                topic: std::path::Path::new(&text("dir")?)
                    .file_name()?
                    .to_str()?
                    .to_owned(),
            },
            a::FRONTIER_PERSISTING => Alarm::FrontierPersisting {
                value: num("value")?,
            },
            a::FRONTIER_PERSISTED => Alarm::FrontierPersisted {
                value: num("value")?,
            },
            a::LOG_START_MOVED => Alarm::LogStartMoved {
                from: num("from")?,
                log_start: num("log_start")?,
            },
            a::REPLAY_COMMITTING => Alarm::ReplayCommitting {
                records: num("records")?,
            },
            a::DRAIN_PARTIAL => Alarm::DrainPartial {
                base: num("base")?,
                records: num("records")?,
                bytes: num("bytes")?,
                next_bytes: num("next_bytes")?,
            },
            a::FRONTIER_LOADED => Alarm::FrontierLoaded {
                loaded: num("loaded")?,
            },
            _ => return None,
        };
        Some(alarm)
    }
}

impl fmt::Display for Alarm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Alarm::TornTail {
                segment,
                position,
                offset,
                bytes,
            }
            | Alarm::Hole {
                segment,
                position,
                offset,
                bytes,
            } => {
                write!(f, " {segment}@{position} offset={offset} bytes={bytes}")
            }
            Alarm::Salvaged {
                offered,
                kept,
                copied,
                ..
            } => write!(f, " offered={offered} kept={kept} copied={copied}"),
            Alarm::Refused { segment, position } => write!(f, " {segment}@{position}"),
            Alarm::Clamp {
                persisted_hwm,
                hwm,
                lost,
            } => {
                write!(f, " persisted_hwm={persisted_hwm} hwm={hwm} lost={lost}")
            }
            Alarm::JunkTrimmed { segment, bytes } => write!(f, " {segment} bytes={bytes}"),
            Alarm::LogOpened {
                log_start,
                hwm,
                tail,
                hidden,
            } => {
                write!(
                    f,
                    " log_start={log_start} hwm={hwm} tail={tail} hidden={hidden}"
                )
            }
            Alarm::FrameSkipped { base, records } | Alarm::RecordsSkipped { base, records } => {
                write!(f, " base={base} records={records}")
            }
            Alarm::HiddenExposed { from, to } => write!(f, " [{from}, {to})"),
            Alarm::WalDamaged {
                corrupt_entries,
                skipped_bytes,
            } => {
                write!(
                    f,
                    " corrupt_entries={corrupt_entries} skipped_bytes={skipped_bytes}"
                )
            }
            Alarm::FrontierReset { log_start } => write!(f, " log_start={log_start}"),
            Alarm::FrontierClamped { value, clamped } => write!(f, " {value} -> {clamped}"),
            Alarm::TopicRefused { topic } => write!(f, " {topic}"),
            Alarm::FrontierPersisting { value } | Alarm::FrontierPersisted { value } => {
                write!(f, " value={value}")
            }
            Alarm::LogStartMoved { from, log_start } => write!(f, " [{from}, {log_start})"),
            Alarm::ReplayCommitting { records } => write!(f, " records={records}"),
            Alarm::FrontierLoaded { loaded } => write!(f, " loaded={loaded}"),
            Alarm::DrainPartial {
                base,
                records,
                bytes,
                next_bytes,
            } => write!(
                f,
                " base={base} records={records} bytes={bytes} next_bytes={next_bytes}"
            ),
            Alarm::Poisoned {
                cancelled: true, ..
            } => f.write_str(" (records in flight dropped)"),
            Alarm::Poisoned {
                directory: true, ..
            } => f.write_str(" (directory fsync)"),
            Alarm::Poisoned { verify: true, .. } => f.write_str(" (a frame read back bad)"),
            Alarm::Poisoned { .. } | Alarm::WalCheckpointUnreadable | Alarm::WalPoisoned => Ok(()),
        }
    }
}
