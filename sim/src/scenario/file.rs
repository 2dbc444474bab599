//! The TOML layout of a scenario file, one struct per table, with the checks that give
//! a bad file a precise error (the toml crate adds the line and column).
//!
//! Every knob has a default so a scenario names only what its story needs: topic knobs
//! default to the engine's (`TopicConfig::default()`), the disk to a fault-free one
//! (`FaultOptions::none()`), the profile to `quick`'s durations.
//!
//! Invariants (checked while deserialising, so they carry a position):
//! - a schedule entry has exactly one trigger (`at_ms` or `after_acks`), and exactly
//!   the fields its action needs (`file` for a bit flip, `back_ms` for a clock step);
//! - ranges written as `[lo, hi]` have `lo <= hi`;
//! - topic names are valid and unique; producers and consumers name an existing topic
//!   and partition (checked in [`super::Scenario::parse`], which names the entry).

use crate::check::CheckerName;
use crate::history::FileKind;
use crate::world::{Action, FlipAt, ScheduledFault, Trigger};
use cafelog_engine::format::Codec;
use cafelog_engine::log::{FsyncPolicy, LogConfig};
use cafelog_engine::store::TopicConfig;
use serde::{Deserialize, Serialize};

/// A whole scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Drives madsim's scheduling, the workload's dice and the disk's dice.
    pub seed: u64,
    pub expect: Expect,
    #[serde(default)]
    pub profile: ProfileSpec,
    pub topics: Vec<TopicSpec>,
    #[serde(default)]
    pub producers: Vec<ProducerSpec>,
    #[serde(default)]
    pub consumers: Vec<ConsumerSpec>,
    #[serde(default)]
    pub disk: DiskSpec,
    /// Store-wide knobs; absent when each is the engine's default.
    #[serde(default, skip_serializing_if = "StoreSpec::is_default")]
    pub store: StoreSpec,
    /// Random crashes, flips and clock steps drawn from the seed, instead of a schedule
    /// (what `shrink` writes when the explicit schedule does not reproduce a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmSpec>,
    #[serde(default)]
    pub schedule: Vec<ScheduleEntry>,
}

/// The verdict kinds a scenario can expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Pass,
    SafetyFailure,
    LivenessFailure,
    SimulatorCrash,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Pass => "pass",
            VerdictKind::SafetyFailure => "safety_failure",
            VerdictKind::LivenessFailure => "liveness_failure",
            VerdictKind::SimulatorCrash => "simulator_crash",
        }
    }

    pub fn of(verdict: &crate::check::Verdict) -> Self {
        use crate::check::Verdict;
        match verdict {
            Verdict::Pass => VerdictKind::Pass,
            Verdict::SafetyFailure(_) => VerdictKind::SafetyFailure,
            Verdict::LivenessFailure(_) => VerdictKind::LivenessFailure,
            Verdict::SimulatorCrash { .. } => VerdictKind::SimulatorCrash,
        }
    }
}

/// What the run must end with, and the paths it must reach on the way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawExpect")]
pub struct Expect {
    pub verdict: VerdictKind,
    /// The checker a failure names (required for safety and liveness failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checker: Option<CheckerName>,
    /// Path names (as `Paths::entries` spells them) that must be reached at least once:
    /// the scenario is named after them, so a run that stops reaching them fails.
    #[serde(default)]
    pub reaches: Vec<String>,
    /// Fault kinds (as the run's fault counts name them) that must be injected.
    #[serde(default)]
    pub injects: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    verdict: VerdictKind,
    #[serde(default)]
    checker: Option<CheckerName>,
    #[serde(default)]
    reaches: Vec<String>,
    #[serde(default)]
    injects: Vec<String>,
}

impl TryFrom<RawExpect> for Expect {
    type Error = String;
    fn try_from(raw: RawExpect) -> Result<Self, String> {
        match (raw.verdict, raw.checker) {
            (VerdictKind::SafetyFailure, None) => {
                return Err("a safety_failure must name its checker (checker = \"...\")".into());
            }
            (VerdictKind::SafetyFailure, Some(c)) if c.is_liveness() => {
                return Err(format!("{c} is the liveness checker: say liveness_failure"));
            }
            (VerdictKind::LivenessFailure, Some(c)) if !c.is_liveness() => {
                return Err(format!("{c} is a safety checker: say safety_failure"));
            }
            (VerdictKind::Pass | VerdictKind::SimulatorCrash, Some(c)) => {
                return Err(format!(
                    "checker = \"{c}\" only goes with safety_failure or liveness_failure"
                ));
            }
            _ => {}
        }
        let known: Vec<&str> = crate::world::recorder::Paths::default()
            .entries()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        if let Some(bad) = raw.reaches.iter().find(|r| !known.contains(&r.as_str())) {
            return Err(format!(
                "unknown path {bad:?} in reaches; known: {}",
                known.join(", ")
            ));
        }
        if let Some(bad) = raw
            .injects
            .iter()
            .find(|r| !FAULT_NAMES.contains(&r.as_str()))
        {
            return Err(format!(
                "unknown fault {bad:?} in injects; known: {}",
                FAULT_NAMES.join(", ")
            ));
        }
        let checker = match raw.verdict {
            VerdictKind::LivenessFailure => raw.checker.or(Some(CheckerName::DeliveredAfterHeal)),
            _ => raw.checker,
        };
        Ok(Expect {
            verdict: raw.verdict,
            checker,
            reaches: raw.reaches,
            injects: raw.injects,
        })
    }
}

/// The fault kinds a run's fault counts use (the `fault` tag of `FaultKind`).
pub const FAULT_NAMES: [&str; 13] = [
    "crash",
    "process_crash",
    "torn_write",
    "lost_write",
    "fsync_eio",
    "lost_fsync",
    "bit_flip",
    "misdirected",
    "latent_sector",
    "enospc",
    "latency",
    "clock_step",
    "cancel",
];

/// Durations of the run (simulated ms) and its record cap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileSpec {
    pub produce_ms: u64,
    pub heal_ms: u64,
    pub delivery_bound_ms: u64,
    pub records_max: u64,
}

impl Default for ProfileSpec {
    fn default() -> Self {
        let quick = crate::profile::Profile::quick();
        ProfileSpec {
            produce_ms: quick.produce_ms,
            heal_ms: quick.heal_ms,
            delivery_bound_ms: quick.delivery_bound_ms,
            records_max: quick.records_max,
        }
    }
}

/// A codec name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodecName {
    None,
    Zstd,
}

/// An fsync policy name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsyncName {
    PerWrite,
    Batched,
}

/// A topic and its knobs (`TopicConfig` and `LogConfig`, durations in ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawTopic", into = "RawTopic")]
pub struct TopicSpec {
    pub name: String,
    pub config: TopicConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawTopic {
    name: String,
    partitions: u32,
    delay_ms: u64,
    lease_ms: u64,
    codec: CodecName,
    zstd_level: i32,
    zstd_hash_log: u32,
    compress_min_bytes: usize,
    segment_bytes: u64,
    preallocate_bytes: u64,
    flush_bytes: usize,
    flush_records: usize,
    flush_interval_ms: u64,
    fsync: FsyncName,
    sync_interval_ms: u64,
    sync_bytes: u64,
    hwm_persist_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    retention_ms: Option<u64>,
    reaper_interval_ms: u64,
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Default for RawTopic {
    fn default() -> Self {
        TopicSpec {
            name: String::new(),
            config: TopicConfig::default(),
        }
        .into()
    }
}

impl From<TopicSpec> for RawTopic {
    fn from(t: TopicSpec) -> Self {
        let c = t.config;
        let l = c.log;
        RawTopic {
            name: t.name,
            partitions: c.partitions,
            delay_ms: c.delay_ms,
            lease_ms: c.lease_ms,
            codec: match l.codec {
                Codec::None => CodecName::None,
                Codec::Zstd => CodecName::Zstd,
            },
            zstd_level: l.zstd_level,
            zstd_hash_log: l.zstd_hash_log,
            compress_min_bytes: l.compress_min_bytes,
            segment_bytes: l.segment_bytes,
            preallocate_bytes: l.preallocate_bytes,
            flush_bytes: l.flush_bytes,
            flush_records: l.flush_records,
            flush_interval_ms: ms(l.flush_interval),
            fsync: match l.fsync {
                FsyncPolicy::PerWrite => FsyncName::PerWrite,
                FsyncPolicy::Batched => FsyncName::Batched,
            },
            sync_interval_ms: ms(l.sync_interval),
            sync_bytes: l.sync_bytes,
            hwm_persist_interval_ms: ms(l.hwm_persist_interval),
            retention_ms: l.retention_ms,
            reaper_interval_ms: ms(l.reaper_interval),
        }
    }
}

impl TryFrom<RawTopic> for TopicSpec {
    type Error = String;
    fn try_from(r: RawTopic) -> Result<Self, String> {
        use std::time::Duration;
        cafelog_engine::store::validate_topic_name(&r.name)?;
        let config = TopicConfig {
            partitions: r.partitions,
            delay_ms: r.delay_ms,
            lease_ms: r.lease_ms,
            log: LogConfig {
                codec: match r.codec {
                    CodecName::None => Codec::None,
                    CodecName::Zstd => Codec::Zstd,
                },
                zstd_level: r.zstd_level,
                zstd_hash_log: r.zstd_hash_log,
                compress_min_bytes: r.compress_min_bytes,
                segment_bytes: r.segment_bytes,
                preallocate_bytes: r.preallocate_bytes,
                flush_bytes: r.flush_bytes,
                flush_records: r.flush_records,
                flush_interval: Duration::from_millis(r.flush_interval_ms),
                fsync: match r.fsync {
                    FsyncName::PerWrite => FsyncPolicy::PerWrite,
                    FsyncName::Batched => FsyncPolicy::Batched,
                },
                sync_interval: Duration::from_millis(r.sync_interval_ms),
                sync_bytes: r.sync_bytes,
                hwm_persist_interval: Duration::from_millis(r.hwm_persist_interval_ms),
                retention_ms: r.retention_ms,
                reaper_interval: Duration::from_millis(r.reaper_interval_ms),
                ..LogConfig::default()
            },
        };
        config
            .validate()
            .map_err(|e| format!("topic {:?}: {e}", r.name))?;
        Ok(TopicSpec {
            name: r.name,
            config,
        })
    }
}

/// `[lo, hi]` with `lo <= hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "[u64; 2]", into = "[u64; 2]")]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
}

impl TryFrom<[u64; 2]> for Range {
    type Error = String;
    fn try_from([lo, hi]: [u64; 2]) -> Result<Self, String> {
        if lo > hi {
            return Err(format!("range [{lo}, {hi}] is inverted"));
        }
        Ok(Range { lo, hi })
    }
}

impl From<Range> for [u64; 2] {
    fn from(r: Range) -> Self {
        [r.lo, r.hi]
    }
}

/// One producer (`ProducerPlan`, its topic by name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProducerSpec {
    pub topic: String,
    pub gap_ms: Range,
    pub burst_probability: f64,
    pub burst_len_max: u32,
    pub payload_bytes: Range,
    pub compressible: bool,
    pub keys: u32,
}

impl Default for ProducerSpec {
    fn default() -> Self {
        ProducerSpec {
            topic: String::new(),
            gap_ms: Range { lo: 2, hi: 20 },
            burst_probability: 0.0,
            burst_len_max: 1,
            payload_bytes: Range { lo: 16, hi: 200 },
            compressible: true,
            keys: 8,
        }
    }
}

/// One consumer (`ConsumerPlan`, its topic by name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsumerSpec {
    pub topic: String,
    pub partition: u32,
    pub batch_max: usize,
    pub nack_probability: f64,
    pub drop_probability: f64,
    pub think_ms: Range,
    /// How long a receive parks before it answers empty (1 to 2,500 ms).
    pub park_ms: u64,
}

impl Default for ConsumerSpec {
    fn default() -> Self {
        ConsumerSpec {
            topic: String::new(),
            partition: 0,
            batch_max: 10,
            nack_probability: 0.0,
            drop_probability: 0.0,
            think_ms: Range { lo: 0, hi: 10 },
            park_ms: crate::world::workload::DEFAULT_PARK_MS,
        }
    }
}

/// Store-wide knobs (`StoreConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSpec {
    /// The ingress WAL's segment size: small ones roll the WAL and delete segments
    /// behind the checkpoint within a run.
    pub wal_segment_bytes: u64,
}

impl Default for StoreSpec {
    fn default() -> Self {
        StoreSpec {
            wal_segment_bytes: crate::world::workload::default_wal_segment_bytes(),
        }
    }
}

impl StoreSpec {
    pub fn is_default(&self) -> bool {
        *self == StoreSpec::default()
    }
}

/// The disk's fault options (`FaultOptions`, latencies in µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiskSpec {
    pub crash_write_lost_probability: f64,
    pub crash_write_torn_probability: f64,
    pub crash_set_len_lost_probability: f64,
    pub fsync_eio_probability: f64,
    pub fsync_eio_max: u32,
    pub lost_fsync_probability: f64,
    pub lost_fsync_max: u32,
    pub enospc_probability: f64,
    pub enospc_max: u32,
    pub enospc_consecutive_max: u32,
    pub misdirect_probability: f64,
    pub misdirect_max: u32,
    pub misdirect_shift_sectors_max: u32,
    pub latency_probability: f64,
    pub latency_min_us: u64,
    pub latency_max_us: u64,
    pub latency_after_probability: f64,
    pub yield_probability: f64,
}

impl Default for DiskSpec {
    fn default() -> Self {
        DiskSpec::from(&crate::fs::FaultOptions::none())
    }
}

fn us(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl From<&crate::fs::FaultOptions> for DiskSpec {
    fn from(o: &crate::fs::FaultOptions) -> Self {
        DiskSpec {
            crash_write_lost_probability: o.crash_write_lost_probability,
            crash_write_torn_probability: o.crash_write_torn_probability,
            crash_set_len_lost_probability: o.crash_set_len_lost_probability,
            fsync_eio_probability: o.fsync_eio_probability,
            fsync_eio_max: o.fsync_eio_max,
            lost_fsync_probability: o.lost_fsync_probability,
            lost_fsync_max: o.lost_fsync_max,
            enospc_probability: o.enospc_probability,
            enospc_max: o.enospc_max,
            enospc_consecutive_max: o.enospc_consecutive_max,
            misdirect_probability: o.misdirect_probability,
            misdirect_max: o.misdirect_max,
            misdirect_shift_sectors_max: o.misdirect_shift_sectors_max,
            latency_probability: o.latency_probability,
            latency_min_us: us(o.latency_min),
            latency_max_us: us(o.latency_max),
            latency_after_probability: o.latency_after_probability,
            yield_probability: o.yield_probability,
        }
    }
}

impl DiskSpec {
    /// The fault options, range-checked by `FaultOptions::validate`.
    pub fn options(&self) -> Result<crate::fs::FaultOptions, String> {
        use std::time::Duration;
        let o = crate::fs::FaultOptions {
            crash_write_lost_probability: self.crash_write_lost_probability,
            crash_write_torn_probability: self.crash_write_torn_probability,
            crash_set_len_lost_probability: self.crash_set_len_lost_probability,
            fsync_eio_probability: self.fsync_eio_probability,
            fsync_eio_max: self.fsync_eio_max,
            lost_fsync_probability: self.lost_fsync_probability,
            lost_fsync_max: self.lost_fsync_max,
            enospc_probability: self.enospc_probability,
            enospc_max: self.enospc_max,
            enospc_consecutive_max: self.enospc_consecutive_max,
            misdirect_probability: self.misdirect_probability,
            misdirect_max: self.misdirect_max,
            misdirect_shift_sectors_max: self.misdirect_shift_sectors_max,
            latency_probability: self.latency_probability,
            latency_min: Duration::from_micros(self.latency_min_us),
            latency_max: Duration::from_micros(self.latency_max_us),
            latency_after_probability: self.latency_after_probability,
            yield_probability: self.yield_probability,
        };
        o.validate().map_err(|e| format!("[disk]: {e}"))?;
        Ok(o)
    }
}

/// The swarm's own faults (`FaultMix` without the disk).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwarmSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_mean_gap_ms: Option<u64>,
    pub crash_after_commit_fraction: f64,
    pub crashes_max: u32,
    pub bit_flips_per_s: f64,
    pub bit_flips_max: u32,
    pub clock_step_probability: f64,
    pub clock_step_back_ms_max: u64,
    pub clock_steps_max: u32,
    /// Fraction of the kills that are process crashes (the page cache survives).
    #[serde(skip_serializing_if = "is_zero")]
    pub process_crash_fraction: f64,
    /// Probability that a request is dropped at one of its await points.
    #[serde(skip_serializing_if = "is_zero")]
    pub cancel_probability: f64,
    /// Probability that a power loss leaves one sector of a segment unreadable.
    #[serde(skip_serializing_if = "is_zero")]
    pub latent_sector_probability: f64,
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub latent_sectors_max: u32,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

impl Default for SwarmSpec {
    fn default() -> Self {
        SwarmSpec::from(&crate::swarm::FaultMix::none())
    }
}

impl From<&crate::swarm::FaultMix> for SwarmSpec {
    fn from(m: &crate::swarm::FaultMix) -> Self {
        SwarmSpec {
            crash_mean_gap_ms: m.crash_mean_gap_ms,
            crash_after_commit_fraction: m.crash_after_commit_fraction,
            crashes_max: m.crashes_max,
            bit_flips_per_s: m.bit_flips_per_s,
            bit_flips_max: m.bit_flips_max,
            clock_step_probability: m.clock_step_probability,
            clock_step_back_ms_max: m.clock_step_back_ms_max,
            clock_steps_max: m.clock_steps_max,
            process_crash_fraction: m.process_crash_fraction,
            cancel_probability: m.cancel_probability,
            latent_sector_probability: m.latent_sector_probability,
            latent_sectors_max: m.latent_sectors_max,
        }
    }
}

/// The actions a schedule entry names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionName {
    Crash,
    ProcessCrash,
    CrashWithBitFlip,
    ProcessCrashWithBitFlip,
    BitFlip,
    CrashWithClockStep,
    CrashWithLatentSector,
    LatentSector,
    ClockStep,
    FsyncEio,
    LostFsync,
}

/// One entry of `[[schedule]]`: a trigger and an action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawEntry", into = "RawEntry")]
pub struct ScheduleEntry(pub ScheduledFault);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_acks: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    while_down: bool,
    action: ActionName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<FileKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    back_ms: Option<u64>,
    /// A flip's exact bit: the durable file, the byte and the bit (all three or none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    position: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bit: Option<u8>,
}

impl TryFrom<RawEntry> for ScheduleEntry {
    type Error = String;
    fn try_from(r: RawEntry) -> Result<Self, String> {
        let trigger = match (r.at_ms, r.at_ns, r.after_acks, r.while_down) {
            (Some(at), None, None, false) => Trigger::AtMs(at),
            (None, Some(at), None, false) => Trigger::AtNs(at),
            (None, None, Some(n), false) => Trigger::AfterAcks(n),
            (None, None, None, true) => {
                if !matches!(
                    r.action,
                    ActionName::BitFlip | ActionName::LatentSector | ActionName::ClockStep
                ) {
                    return Err(
                        "while_down takes bit_flip, latent_sector or clock_step: a fault at \
                         the kill before"
                            .into(),
                    );
                }
                Trigger::WhileDown
            }
            _ => {
                return Err(
                    "a schedule entry needs exactly one of at_ms, at_ns, after_acks \
                     or while_down = true"
                        .into(),
                );
            }
        };
        let flips = matches!(
            r.action,
            ActionName::CrashWithBitFlip
                | ActionName::ProcessCrashWithBitFlip
                | ActionName::BitFlip
        );
        let at = match (r.path, r.position, r.bit) {
            (None, None, None) => None,
            (Some(path), Some(position), Some(bit)) if flips && bit < 8 => Some(FlipAt {
                path,
                position,
                bit,
            }),
            _ => {
                return Err("path, position and bit (0-7) go together, on a bit flip only".into());
            }
        };
        let action = match (r.action, r.file, r.back_ms) {
            (name, Some(file), None) if flips => {
                if !matches!(
                    file,
                    FileKind::Segment | FileKind::Hwm | FileKind::ConsumerOffset | FileKind::Wal
                ) {
                    return Err(format!(
                        "file = {file:?}: bit flips hit segment, hwm, consumer_offset or wal"
                    ));
                }
                match name {
                    ActionName::CrashWithBitFlip => Action::CrashWithBitFlip { file, at },
                    ActionName::ProcessCrashWithBitFlip => {
                        Action::ProcessCrashWithBitFlip { file, at }
                    }
                    _ => Action::BitFlip { file, at },
                }
            }
            (_, None, _) if flips => {
                return Err("a bit flip needs file = \"segment\" (or hwm, ...)".into());
            }
            (ActionName::CrashWithClockStep, None, Some(ms)) => Action::CrashWithClockStep { ms },
            (ActionName::ClockStep, None, Some(ms)) => Action::ClockStep { ms },
            (ActionName::CrashWithClockStep | ActionName::ClockStep, _, None) => {
                return Err("a clock step needs back_ms".into());
            }
            (action, None, None) => match action {
                ActionName::Crash => Action::Crash,
                ActionName::ProcessCrash => Action::ProcessCrash,
                ActionName::CrashWithLatentSector => Action::CrashWithLatentSector,
                ActionName::LatentSector => Action::LatentSector,
                ActionName::FsyncEio => Action::FsyncEio,
                ActionName::LostFsync => Action::LostFsync,
                ActionName::CrashWithBitFlip
                | ActionName::ProcessCrashWithBitFlip
                | ActionName::BitFlip
                | ActionName::CrashWithClockStep
                | ActionName::ClockStep => unreachable!("handled above"),
            },
            (action, _, _) => {
                let name = serde_json::to_value(action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                return Err(format!(
                    "{name} takes no file or back_ms (only crash_with_bit_flip takes file, \
                     only crash_with_clock_step takes back_ms)"
                ));
            }
        };
        Ok(ScheduleEntry(ScheduledFault { trigger, action }))
    }
}

impl From<ScheduleEntry> for RawEntry {
    fn from(e: ScheduleEntry) -> Self {
        let (at_ms, at_ns, after_acks) = match e.0.trigger {
            Trigger::AtMs(at) => (Some(at), None, None),
            Trigger::AtNs(at) => (None, Some(at), None),
            Trigger::AfterAcks(n) => (None, None, Some(n)),
            Trigger::WhileDown => (None, None, None),
        };
        let while_down = e.0.trigger == Trigger::WhileDown;
        let mut at = None;
        let (action, file, back_ms) = match e.0.action {
            Action::Crash => (ActionName::Crash, None, None),
            Action::ProcessCrash => (ActionName::ProcessCrash, None, None),
            Action::CrashWithBitFlip { file, at: a } => {
                at = a;
                (ActionName::CrashWithBitFlip, Some(file), None)
            }
            Action::ProcessCrashWithBitFlip { file, at: a } => {
                at = a;
                (ActionName::ProcessCrashWithBitFlip, Some(file), None)
            }
            Action::BitFlip { file, at: a } => {
                at = a;
                (ActionName::BitFlip, Some(file), None)
            }
            Action::CrashWithClockStep { ms } => (ActionName::CrashWithClockStep, None, Some(ms)),
            Action::CrashWithLatentSector => (ActionName::CrashWithLatentSector, None, None),
            Action::LatentSector => (ActionName::LatentSector, None, None),
            Action::ClockStep { ms } => (ActionName::ClockStep, None, Some(ms)),
            Action::FsyncEio => (ActionName::FsyncEio, None, None),
            Action::LostFsync => (ActionName::LostFsync, None, None),
        };
        RawEntry {
            at_ms,
            at_ns,
            after_acks,
            while_down,
            action,
            file,
            back_ms,
            path: at.as_ref().map(|a| a.path.clone()),
            position: at.as_ref().map(|a| a.position),
            bit: at.as_ref().map(|a| a.bit),
        }
    }
}
