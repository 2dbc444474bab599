//! A scenario's faults: the disk's fault options, the swarm's fault mix, and the names
//! a file may use for a fault kind.

use super::*;

/// The fault kinds a run's fault counts use (the `fault` tag of `FaultKind`).
pub const FAULT_NAMES: [&str; 14] = [
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
    "corrupt_write",
];

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
    pub dir_fsync_eio_probability: f64,
    pub dir_fsync_eio_max: u32,
    pub enospc_probability: f64,
    pub enospc_max: u32,
    pub enospc_consecutive_max: u32,
    pub misdirect_probability: f64,
    pub misdirect_max: u32,
    pub misdirect_shift_sectors_max: u32,
    // Left out when off, so the files written before the fault existed read the same.
    #[serde(skip_serializing_if = "is_zero")]
    pub corrupt_write_probability: f64,
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub corrupt_write_max: u32,
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
            dir_fsync_eio_probability: o.dir_fsync_eio_probability,
            dir_fsync_eio_max: o.dir_fsync_eio_max,
            enospc_probability: o.enospc_probability,
            enospc_max: o.enospc_max,
            enospc_consecutive_max: o.enospc_consecutive_max,
            misdirect_probability: o.misdirect_probability,
            misdirect_max: o.misdirect_max,
            misdirect_shift_sectors_max: o.misdirect_shift_sectors_max,
            corrupt_write_probability: o.corrupt_write_probability,
            corrupt_write_max: o.corrupt_write_max,
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
            dir_fsync_eio_probability: self.dir_fsync_eio_probability,
            dir_fsync_eio_max: self.dir_fsync_eio_max,
            enospc_probability: self.enospc_probability,
            enospc_max: self.enospc_max,
            enospc_consecutive_max: self.enospc_consecutive_max,
            misdirect_probability: self.misdirect_probability,
            misdirect_max: self.misdirect_max,
            misdirect_shift_sectors_max: self.misdirect_shift_sectors_max,
            corrupt_write_probability: self.corrupt_write_probability,
            corrupt_write_max: self.corrupt_write_max,
            corrupt_write_before: None,
            latency_probability: self.latency_probability,
            latency_min: Duration::from_micros(self.latency_min_us),
            latency_max: Duration::from_micros(self.latency_max_us),
            latency_after_probability: self.latency_after_probability,
            yield_probability: self.yield_probability,
            fsync_fault_path: None,
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
    /// Whether the background loops and the acks are dropped too; unset, they are
    /// whenever requests are (`cancel_probability` above 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_drops: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle_drops: Option<bool>,
    /// Only the swarm's faults with these numbers are injected (a shrink's cut: the
    /// others are drawn and skipped, so each number keeps its draw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<u32>>,
}

/// Requests dropped part-way under an explicit schedule (a swarm's are in `[swarm]`):
/// the server's cancels, which an explicit schedule does not replace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelSpec {
    /// Probability that a request is dropped at one of its await points.
    pub probability: f64,
    /// Whether the background loops and the acks are dropped too; unset, they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loops: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settles: Option<bool>,
}

impl CancelSpec {
    /// The mix's cancels, when it has any.
    pub fn of(m: &crate::swarm::FaultMix) -> Option<CancelSpec> {
        (m.cancel_probability > 0.0).then(|| CancelSpec {
            probability: m.cancel_probability,
            loops: (!m.loop_drops).then_some(false),
            settles: (!m.settle_drops).then_some(false),
        })
    }
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
            loop_drops: (m.loop_drops != (m.cancel_probability > 0.0)).then_some(m.loop_drops),
            settle_drops: (m.settle_drops != (m.cancel_probability > 0.0))
                .then_some(m.settle_drops),
            only: m.only.clone(),
        }
    }
}
