//! Named profiles: the sizes and durations of a run. `quick` is for CI, `default` for
//! users, `long` for soak sweeps.

use std::ops::RangeInclusive;

/// Sizes and durations of a run; the workload and fault mix are drawn inside them.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    /// Producers run for this long (simulated ms).
    pub produce_ms: u64,
    /// Faults (crashes, flips, clock steps, disk faults) stop here.
    pub heal_ms: u64,
    /// After the heal, every acknowledged record must be delivered within this bound.
    pub delivery_bound_ms: u64,
    /// After the heal, an expired lease or a nack is followed by a redelivery within
    /// this bound (faults are off; the engine's ticker runs every 10 ms).
    pub redelivery_bound_ms: u64,
    /// A receive parked when a record becomes deliverable to it answers within this
    /// bound, judged where the disk answers at once (no I/O latency, or after the heal).
    pub wake_bound_ms: u64,
    pub topics: RangeInclusive<u32>,
    pub partitions: RangeInclusive<u32>,
    pub producers: RangeInclusive<u32>,
    pub consumers_per_partition: RangeInclusive<u32>,
    /// Cap on records produced in the run (a bound on memory and time).
    pub records_max: u64,
    /// When set, the only produce ids sent (sorted): a producer draws every other
    /// record as usual and goes on without sending it, so the records it does send
    /// keep their ids, keys and bodies. A shrink's cut of records that play no part.
    pub only_ids: Option<Vec<u64>>,
    /// Pause between produce calls of one producer (ms).
    pub produce_gap_ms: RangeInclusive<u64>,
    pub payload_bytes: RangeInclusive<usize>,
    pub segment_bytes: RangeInclusive<u64>,
    /// Mean time between crashes when crashes are on (ms).
    pub crash_mean_gap_ms: RangeInclusive<u64>,
    /// Cap on crashes per run, so the run always makes progress.
    pub crashes_max: u32,
    /// Whether seeds with cancels on also drop and restart the engine's background
    /// loops (`--without loop_drop` turns it off for one run). On in every profile.
    pub loop_drops: bool,
}

impl Profile {
    /// The profiles, by name.
    pub fn all() -> [Profile; 3] {
        [
            Profile::quick(),
            Profile::default_profile(),
            Profile::long(),
        ]
    }

    pub fn by_name(name: &str) -> Result<Profile, String> {
        Profile::all()
            .into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                format!(
                    "unknown profile {name:?}; known: {}",
                    Profile::all().map(|p| p.name).join(", ")
                )
            })
    }

    /// Short runs for CI: a few seconds of simulated traffic.
    pub fn quick() -> Profile {
        Profile {
            name: "quick",
            produce_ms: 3_000,
            heal_ms: 3_000,
            delivery_bound_ms: 5_000,
            redelivery_bound_ms: 250,
            wake_bound_ms: 50,
            topics: 1..=2,
            partitions: 1..=2,
            producers: 1..=3,
            consumers_per_partition: 1..=2,
            records_max: 600,
            only_ids: None,
            produce_gap_ms: 1..=40,
            payload_bytes: 16..=400,
            segment_bytes: 2_048..=16_384,
            crash_mean_gap_ms: 300..=1_500,
            crashes_max: 8,
            loop_drops: true,
        }
    }

    /// What `cafelog sweep` runs by default.
    pub fn default_profile() -> Profile {
        Profile {
            name: "default",
            produce_ms: 10_000,
            heal_ms: 10_000,
            delivery_bound_ms: 8_000,
            redelivery_bound_ms: 250,
            wake_bound_ms: 50,
            topics: 1..=3,
            partitions: 1..=3,
            producers: 1..=4,
            consumers_per_partition: 1..=2,
            records_max: 2_000,
            only_ids: None,
            produce_gap_ms: 1..=60,
            payload_bytes: 16..=800,
            segment_bytes: 4_096..=65_536,
            crash_mean_gap_ms: 500..=3_000,
            crashes_max: 12,
            loop_drops: true,
        }
    }

    /// Soak runs: longer traffic, more crashes.
    pub fn long() -> Profile {
        Profile {
            name: "long",
            produce_ms: 60_000,
            heal_ms: 60_000,
            delivery_bound_ms: 10_000,
            redelivery_bound_ms: 250,
            records_max: 10_000,
            only_ids: None,
            crashes_max: 40,
            loop_drops: true,
            ..Profile::default_profile()
        }
    }

    /// Simulated ms the run lasts at most: traffic, then the drain.
    pub fn end_ms(&self) -> u64 {
        self.produce_ms.max(self.heal_ms) + self.delivery_bound_ms + 1_000
    }
}
