//! The workload of a run, drawn from its seed: topics and their configuration,
//! producers and consumers.

use crate::fs::dice::Dice;
use crate::profile::Profile;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{FsyncPolicy, LogConfig};
use cafelog_engine::store::TopicConfig;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct TopicPlan {
    pub name: String,
    pub config: TopicConfig,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProducerPlan {
    pub topic: usize,
    /// Pause between produce calls.
    pub gap_ms: (u64, u64),
    /// Probability that a call starts a burst of back-to-back produces.
    pub burst_probability: f64,
    pub burst_len_max: u32,
    pub payload_bytes: (usize, usize),
    /// Payload bodies repeat a JSON-like pattern (compressible) or are random.
    pub compressible: bool,
    pub keys: u32,
}

/// A consumer's park unless its plan draws a longer one.
pub const DEFAULT_PARK_MS: u64 = 200;
/// The longest park: below the client's reply timeout, so a parked receive is answered.
pub const PARK_MS_MAX: u64 = 2_500;
/// The longest think time of a slow consumer (before the heal).
pub const SLOW_THINK_MS_MAX: u64 = 400;

#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerPlan {
    pub topic: usize,
    pub partition: u32,
    pub batch_max: usize,
    pub nack_probability: f64,
    /// Probability of neither acking nor nacking, so the lease expires.
    pub drop_probability: f64,
    /// Pause between receive calls.
    pub think_ms: (u64, u64),
    /// How long a receive parks on the server before it answers empty.
    pub park_ms: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub topics: Vec<TopicPlan>,
    pub producers: Vec<ProducerPlan>,
    pub consumers: Vec<ConsumerPlan>,
    /// The ingress WAL's segment size (`StoreConfig::wal_segment_bytes`).
    pub wal_segment_bytes: u64,
    /// Whether the world asks for every partition's frontier right after each open,
    /// before any client, or leaves each load to the first client that touches the
    /// partition's queue (the spec's lazy load).
    pub frontier_at_open: bool,
}

/// The engine's own WAL segment size, which no simulated run fills.
pub fn default_wal_segment_bytes() -> u64 {
    cafelog_engine::store::StoreConfig::default().wal_segment_bytes
}

/// The WAL segment size of a swarm seed, from its own dice (drawn after everything
/// else, so a seed run `without` it keeps the run it had before it existed): half the
/// seeds keep the engine's default, the other half roll the WAL every few frames, so
/// that checkpoints delete segments under several partitions while faults land.
pub fn draw_wal_segment_bytes(dice: &mut Dice) -> u64 {
    if dice.chance(0.5) {
        dice.range(1_024..=32_768)
    } else {
        default_wal_segment_bytes()
    }
}

/// Whether a swarm seed loads every frontier at the open, from its own dice (drawn after
/// everything else, like the WAL segment size): half the seeds leave each load to the
/// first client that touches the partition.
pub fn draw_frontier_at_open(dice: &mut Dice) -> bool {
    dice.chance(0.5)
}

impl Workload {
    pub fn draw(dice: &mut Dice, profile: &Profile) -> Workload {
        let topic_count =
            dice.range(u64::from(*profile.topics.start())..=u64::from(*profile.topics.end()));
        let mut topics = Vec::new();
        for index in 0..topic_count {
            let partitions = dice.range(
                u64::from(*profile.partitions.start())..=u64::from(*profile.partitions.end()),
            ) as u32;
            let log = LogConfig {
                codec: if dice.chance(0.8) {
                    Codec::Zstd
                } else {
                    Codec::None
                },
                segment_bytes: dice.range(profile.segment_bytes.clone()),
                flush_records: dice.range(1..=200) as usize,
                flush_bytes: dice.range(1_024..=65_536) as usize,
                flush_interval: Duration::from_millis(dice.range(2..=100)),
                fsync: if dice.chance(0.5) {
                    FsyncPolicy::Batched
                } else {
                    FsyncPolicy::PerWrite
                },
                sync_interval: Duration::from_millis(dice.range(20..=1_000)),
                sync_bytes: dice.range(4_096..=1 << 20),
                hwm_persist_interval: Duration::from_millis(dice.range(10..=300)),
                retention_ms: dice.chance(0.5).then(|| dice.range(500..=5_000)),
                reaper_interval: Duration::from_millis(dice.range(200..=2_000)),
                ..LogConfig::default()
            };
            let config = TopicConfig {
                partitions,
                delay_ms: if dice.chance(0.3) {
                    dice.range(10..=500)
                } else {
                    0
                },
                lease_ms: dice.range(100..=2_000),
                log,
            };
            topics.push(TopicPlan {
                name: format!("topic-{index}"),
                config,
            });
        }
        let producer_count =
            dice.range(u64::from(*profile.producers.start())..=u64::from(*profile.producers.end()));
        let producers = (0..producer_count)
            .map(|_| {
                let lo = dice.range(profile.produce_gap_ms.clone());
                let hi = lo + dice.range(0..=*profile.produce_gap_ms.end());
                let small = dice.range(
                    *profile.payload_bytes.start() as u64..=*profile.payload_bytes.end() as u64,
                ) as usize;
                ProducerPlan {
                    topic: dice.below(topics.len() as u64) as usize,
                    gap_ms: (lo, hi),
                    burst_probability: dice.unit() * 0.2,
                    burst_len_max: dice.range(2..=50) as u32,
                    payload_bytes: (
                        *profile.payload_bytes.start(),
                        small.max(*profile.payload_bytes.start()),
                    ),
                    compressible: dice.chance(0.7),
                    keys: dice.range(1..=64) as u32,
                }
            })
            .collect();
        let mut consumers = Vec::new();
        for (topic, plan) in topics.iter().enumerate() {
            for partition in 0..plan.config.partitions {
                let count = dice.range(
                    u64::from(*profile.consumers_per_partition.start())
                        ..=u64::from(*profile.consumers_per_partition.end()),
                );
                for _ in 0..count {
                    consumers.push(ConsumerPlan {
                        topic,
                        partition,
                        batch_max: dice.range(1..=50) as usize,
                        nack_probability: if dice.chance(0.5) {
                            dice.unit() * 0.1
                        } else {
                            0.0
                        },
                        drop_probability: if dice.chance(0.5) {
                            dice.unit() * 0.05
                        } else {
                            0.0
                        },
                        think_ms: (0, dice.range(0..=50)),
                        park_ms: DEFAULT_PARK_MS,
                    });
                }
            }
        }
        // Drawn last so that adding it left every earlier draw of a seed as it was.
        // Off, a chunk smaller than a segment (preallocation runs out and is extended
        // mid-segment), or the default (the whole of a simulated segment at once).
        for plan in &mut topics {
            plan.config.log.preallocate_bytes = match dice.below(4) {
                0 => 0,
                1 => dice.range(256..=4_096),
                _ => LogConfig::default().preallocate_bytes,
            };
        }
        // Drawn after preallocation, for the same reason. Mostly the defaults (lone
        // records stored raw, zstd's hash log tuned), sometimes every frame compressed
        // or zstd's own hash log.
        for plan in &mut topics {
            if dice.below(4) == 0 {
                plan.config.log.compress_min_bytes = 0;
            }
            if dice.below(4) == 0 {
                plan.config.log.zstd_hash_log = 0;
            }
        }
        // Drawn after the knobs, for the same reason. Half the consumers park for up to seconds
        // (below the client's 3 s reply timeout): a missed wake-up then costs a long
        // wait that `woken_promptly` sees, where a short park would hide it. A quarter
        // think for up to a few hundred ms before the heal: a record one of them nacked
        // then waits on the wake-up of a parked peer, not on its own next receive.
        for plan in &mut consumers {
            if dice.chance(0.5) {
                plan.park_ms = dice.range(DEFAULT_PARK_MS..=PARK_MS_MAX);
            }
            if dice.chance(0.25) {
                plan.think_ms.1 = dice.range(100..=SLOW_THINK_MS_MAX);
            }
        }
        // Drawn last, for the same reason. One
        // topic in eight drains frames of a few hundred bytes: most records are then
        // larger than `flush_bytes` and take a frame of their own, the case the frame
        // cut (storage-engine.md: "one frame per drain") must get right at its edge.
        for plan in &mut topics {
            if dice.below(8) == 0 {
                plan.config.log.flush_bytes = dice.range(16..=512) as usize;
            }
        }
        Workload {
            topics,
            producers,
            consumers,
            wal_segment_bytes: default_wal_segment_bytes(),
            frontier_at_open: true,
        }
    }

    /// A payload body of `len` bytes for produce `id`.
    pub fn body(dice: &mut Dice, compressible: bool, id: u64, len: usize) -> Vec<u8> {
        if compressible {
            let pattern = format!(
                r#"{{"order":{id},"customer":"c-{}","sku":"SKU-{:05}","status":"created"}}"#,
                id % 97,
                id % 1000
            );
            // The pattern repeated and cut at `len`, copied a pattern at a time.
            let pattern = pattern.as_bytes();
            let mut body = Vec::with_capacity(len);
            while body.len() < len {
                let count = (len - body.len()).min(pattern.len());
                body.extend_from_slice(&pattern[..count]);
            }
            body
        } else {
            (0..len).map(|_| dice.next_u64() as u8).collect()
        }
    }
}
