//! [`FaultOptions`]: every fault rate and crash-outcome probability of [`super::SimFs`] in
//! one struct, range-checked by [`FaultOptions::validate`], with the caps that keep
//! progress possible.
//!
//! Caps (why they exist: a run must be able to make progress once faults stop, and a
//! workload must not be starved by a fault that fires on every attempt):
//! - each injected fault kind fires at most its `*_max` times per [`super::SimFs`] (a
//!   crash does not reset the count);
//! - ENOSPC fires at most `enospc_consecutive_max` times in a row; the next write after
//!   such a streak is never refused;
//! - latency is at most [`LATENCY_MAX`] per operation;
//! - after [`super::SimFs::heal`] no fault fires at all (latency and interleaving remain:
//!   they are not faults, and crash outcomes are the caller's choice).

use std::fmt;
use std::time::Duration;

/// Upper bound of any single injected latency: beyond this a simulated run mostly waits.
pub const LATENCY_MAX: Duration = Duration::from_secs(10);

/// Upper bound of a misdirected write's shift, in sectors.
pub const MISDIRECT_SHIFT_SECTORS_LIMIT: u32 = 1 << 16;

/// Probabilities are in `[0, 1]`; a `*_max` of 0 disables that fault whatever its
/// probability.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultOptions {
    // --- crash outcomes (in contract): what happens to each pending operation ---
    /// A pending write is lost entirely at a crash.
    pub crash_write_lost_probability: f64,
    /// A pending write is torn at a crash: a random proper subset of its sectors reaches
    /// the disk. The rest (1 - lost - torn) is kept whole.
    pub crash_write_torn_probability: f64,
    /// A pending `set_len` is lost at a crash (otherwise it is kept).
    pub crash_set_len_lost_probability: f64,

    // --- fsync faults ---
    /// `sync_data` with pending data fails with EIO, Linux style: pending data is dropped
    /// from the durable image, pages are marked clean, reads still show the data.
    pub fsync_eio_probability: f64,
    /// Cap on fsync EIO faults.
    pub fsync_eio_max: u32,
    /// `sync_data` with pending data returns Ok and persists nothing (out of contract).
    pub lost_fsync_probability: f64,
    /// Cap on lost fsyncs.
    pub lost_fsync_max: u32,
    /// `sync_dir` of a directory with pending entries fails with EIO and commits none of
    /// them: they stay pending, so a later `sync_dir` may commit them and a power loss
    /// may keep or drop them (a journal commit that failed wrote all or nothing).
    pub dir_fsync_eio_probability: f64,
    /// Cap on directory fsync EIO faults.
    pub dir_fsync_eio_max: u32,

    // --- ENOSPC ---
    /// `write_at` fails with ENOSPC and writes nothing.
    pub enospc_probability: f64,
    /// Cap on ENOSPC faults.
    pub enospc_max: u32,
    /// At most this many ENOSPC failures in a row.
    pub enospc_consecutive_max: u32,

    // --- misdirected writes (out of contract: data lands at the wrong place) ---
    /// When a pending write is persisted (fsync or crash), it lands shifted by a whole
    /// number of sectors in the durable image.
    pub misdirect_probability: f64,
    /// Cap on misdirected writes.
    pub misdirect_max: u32,
    /// The shift is drawn from `1..=misdirect_shift_sectors_max` sectors, up or down.
    pub misdirect_shift_sectors_max: u32,

    // --- writes that land corrupt (in contract: the commit path's verify catches them) ---
    /// A `write_at` of data that is not all zeros to a log segment file stores one bit
    /// flipped, in the page cache and so in what the next fsync persists.
    pub corrupt_write_probability: f64,
    /// Cap on corrupt writes.
    pub corrupt_write_max: u32,
    /// Corrupt writes strike only before this simulated time (`None`: until the
    /// heal), so the poison their verify raises at a later sync comes before the heal.
    pub corrupt_write_before: Option<Duration>,

    // --- scheduling ---
    /// Probability that an operation sleeps (simulated time) before taking effect.
    pub latency_probability: f64,
    /// Lower bound of a sleep. madsim rounds every sleep up to at least 1 ms.
    pub latency_min: Duration,
    /// Upper bound of a sleep, at most [`LATENCY_MAX`].
    pub latency_max: Duration,
    /// Probability that an operation also sleeps *after* taking effect, so a kill can
    /// land between an effect and the caller seeing its result.
    pub latency_after_probability: f64,
    /// Probability that an operation without a sleep still yields to the scheduler
    /// once before taking effect, so another task (or a kill) can run in between.
    pub yield_probability: f64,
    /// While set, fsync EIO and lost fsyncs strike only this file (a schedule's fsync
    /// fault aimed at the file the swarm's struck).
    pub fsync_fault_path: Option<std::path::PathBuf>,
}

impl FaultOptions {
    /// No faults, no latency: a perfect disk that only loses unsynced data at a crash
    /// (crash outcomes keep their default, uniform-ish mix: crashes are always in
    /// contract and are only applied when the caller crashes the disk).
    pub fn none() -> Self {
        Self {
            crash_write_lost_probability: 1.0 / 3.0,
            crash_write_torn_probability: 1.0 / 3.0,
            crash_set_len_lost_probability: 0.5,
            fsync_eio_probability: 0.0,
            fsync_eio_max: 0,
            lost_fsync_probability: 0.0,
            lost_fsync_max: 0,
            dir_fsync_eio_probability: 0.0,
            dir_fsync_eio_max: 0,
            enospc_probability: 0.0,
            enospc_max: 0,
            enospc_consecutive_max: 0,
            misdirect_probability: 0.0,
            misdirect_max: 0,
            misdirect_shift_sectors_max: 1,
            corrupt_write_probability: 0.0,
            corrupt_write_max: 0,
            corrupt_write_before: None,
            latency_probability: 0.0,
            latency_min: Duration::ZERO,
            latency_max: Duration::ZERO,
            latency_after_probability: 0.0,
            yield_probability: 0.0,
            fsync_fault_path: None,
        }
    }

    /// The longest sleep one operation may take before the heal, in whole ms rounded
    /// up; 0 when no operation sleeps.
    pub fn latency_max_ms(&self) -> u64 {
        if self.latency_probability == 0.0 && self.latency_after_probability == 0.0 {
            return 0;
        }
        u64::try_from(self.latency_max.as_micros().div_ceil(1_000)).unwrap_or(u64::MAX)
    }

    /// Checks every probability and range; the constructor and `set_options` call it.
    pub fn validate(&self) -> Result<(), FaultOptionsError> {
        let probabilities = [
            (
                "crash_write_lost_probability",
                self.crash_write_lost_probability,
            ),
            (
                "crash_write_torn_probability",
                self.crash_write_torn_probability,
            ),
            (
                "crash_set_len_lost_probability",
                self.crash_set_len_lost_probability,
            ),
            ("fsync_eio_probability", self.fsync_eio_probability),
            ("lost_fsync_probability", self.lost_fsync_probability),
            ("dir_fsync_eio_probability", self.dir_fsync_eio_probability),
            ("enospc_probability", self.enospc_probability),
            ("misdirect_probability", self.misdirect_probability),
            ("corrupt_write_probability", self.corrupt_write_probability),
            ("latency_probability", self.latency_probability),
            ("latency_after_probability", self.latency_after_probability),
            ("yield_probability", self.yield_probability),
        ];
        for (field, value) in probabilities {
            // `contains` is false for NaN, so NaN is rejected too.
            if !(0.0..=1.0).contains(&value) {
                return Err(FaultOptionsError::ProbabilityOutOfRange { field, value });
            }
        }
        let crash_sum = self.crash_write_lost_probability + self.crash_write_torn_probability;
        if crash_sum > 1.0 {
            return Err(FaultOptionsError::ProbabilitiesExceedOne {
                fields: "crash_write_lost_probability + crash_write_torn_probability",
                sum: crash_sum,
            });
        }
        if self.latency_min > self.latency_max {
            return Err(FaultOptionsError::LatencyRangeInverted {
                min: self.latency_min,
                max: self.latency_max,
            });
        }
        if self.latency_max > LATENCY_MAX {
            return Err(FaultOptionsError::LatencyTooLarge {
                max: self.latency_max,
            });
        }
        if !(1..=MISDIRECT_SHIFT_SECTORS_LIMIT).contains(&self.misdirect_shift_sectors_max) {
            return Err(FaultOptionsError::MisdirectShiftOutOfRange {
                value: self.misdirect_shift_sectors_max,
            });
        }
        if self.enospc_probability > 0.0 && self.enospc_max > 0 && self.enospc_consecutive_max == 0
        {
            return Err(FaultOptionsError::EnospcConsecutiveZero);
        }
        Ok(())
    }
}

impl Default for FaultOptions {
    fn default() -> Self {
        Self::none()
    }
}

/// Why a [`FaultOptions`] was rejected.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum FaultOptionsError {
    /// A probability is outside `[0, 1]` (or NaN).
    ProbabilityOutOfRange { field: &'static str, value: f64 },
    /// Probabilities of mutually exclusive outcomes add up to more than 1.
    ProbabilitiesExceedOne { fields: &'static str, sum: f64 },
    /// `latency_min > latency_max`.
    LatencyRangeInverted { min: Duration, max: Duration },
    /// `latency_max` above [`LATENCY_MAX`].
    LatencyTooLarge { max: Duration },
    /// `misdirect_shift_sectors_max` outside `1..=MISDIRECT_SHIFT_SECTORS_LIMIT`.
    MisdirectShiftOutOfRange { value: u32 },
    /// ENOSPC is enabled but `enospc_consecutive_max` is 0, which would disable it
    /// silently: say `enospc_max: 0` instead.
    EnospcConsecutiveZero,
}

impl fmt::Display for FaultOptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProbabilityOutOfRange { field, value } => {
                write!(f, "{field} = {value} is not a probability in [0, 1]")
            }
            Self::ProbabilitiesExceedOne { fields, sum } => {
                write!(f, "{fields} = {sum} exceeds 1")
            }
            Self::LatencyRangeInverted { min, max } => {
                write!(f, "latency_min {min:?} exceeds latency_max {max:?}")
            }
            Self::LatencyTooLarge { max } => {
                write!(f, "latency_max {max:?} exceeds the cap {LATENCY_MAX:?}")
            }
            Self::MisdirectShiftOutOfRange { value } => write!(
                f,
                "misdirect_shift_sectors_max = {value} is outside 1..={MISDIRECT_SHIFT_SECTORS_LIMIT}"
            ),
            Self::EnospcConsecutiveZero => write!(
                f,
                "enospc_consecutive_max = 0 disables ENOSPC; set enospc_max = 0 to say so"
            ),
        }
    }
}

impl std::error::Error for FaultOptionsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_is_valid() {
        assert_eq!(FaultOptions::none().validate(), Ok(()));
    }

    #[test]
    fn out_of_range_values_are_rejected_with_their_field() {
        let mut options = FaultOptions::none();
        options.fsync_eio_probability = 1.5;
        assert_eq!(
            options.validate(),
            Err(FaultOptionsError::ProbabilityOutOfRange {
                field: "fsync_eio_probability",
                value: 1.5
            })
        );
        let mut options = FaultOptions::none();
        options.yield_probability = f64::NAN;
        assert!(matches!(
            options.validate(),
            Err(FaultOptionsError::ProbabilityOutOfRange {
                field: "yield_probability",
                ..
            })
        ));
        let mut options = FaultOptions::none();
        options.crash_write_lost_probability = 0.7;
        options.crash_write_torn_probability = 0.7;
        assert!(matches!(
            options.validate(),
            Err(FaultOptionsError::ProbabilitiesExceedOne { .. })
        ));
        let mut options = FaultOptions::none();
        options.latency_min = Duration::from_millis(5);
        options.latency_max = Duration::from_millis(1);
        assert!(matches!(
            options.validate(),
            Err(FaultOptionsError::LatencyRangeInverted { .. })
        ));
        let mut options = FaultOptions::none();
        options.latency_max = LATENCY_MAX + Duration::from_millis(1);
        assert!(matches!(
            options.validate(),
            Err(FaultOptionsError::LatencyTooLarge { .. })
        ));
        let mut options = FaultOptions::none();
        options.misdirect_shift_sectors_max = 0;
        assert!(matches!(
            options.validate(),
            Err(FaultOptionsError::MisdirectShiftOutOfRange { value: 0 })
        ));
        let mut options = FaultOptions::none();
        options.enospc_probability = 0.1;
        options.enospc_max = 3;
        assert_eq!(
            options.validate(),
            Err(FaultOptionsError::EnospcConsecutiveZero)
        );
    }
}
