//! A scenario's producers and consumers, and the store they talk to.

use super::*;

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
    /// Whether the world asks for every partition's consumer frontier right after each
    /// open (`true`, the default), or leaves each load to the first client that touches
    /// the partition, as the spec's lazy load does.
    pub frontier_at_open: bool,
}

impl Default for StoreSpec {
    fn default() -> Self {
        StoreSpec {
            wal_segment_bytes: crate::world::workload::default_wal_segment_bytes(),
            frontier_at_open: true,
        }
    }
}

impl StoreSpec {
    pub fn is_default(&self) -> bool {
        *self == StoreSpec::default()
    }
}
