//! A scenario's topics: each one's knobs, named as `TopicConfig` names them, with the
//! engine's defaults for what a file leaves out.

use super::*;

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
