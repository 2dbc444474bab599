//! Topics: validated names and per-topic configuration, persisted as
//! `topics/<topic>/topic.conf` (`key=value` lines, written by temp file + rename).

use crate::format::frame::Codec;
use crate::log::{FsyncPolicy, LogConfig};
use std::time::Duration;

/// Longest topic name accepted.
pub const TOPIC_NAME_LEN_MAX: usize = 200;
/// Most partitions a topic may have.
pub const PARTITIONS_MAX: u32 = 10_000;
/// The per-topic configuration file.
pub const TOPIC_CONF_FILE: &str = "topic.conf";

/// Checks a topic name: 1 to 200 bytes of `[A-Za-z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > TOPIC_NAME_LEN_MAX {
        return Err(format!(
            "topic name must be 1 to {TOPIC_NAME_LEN_MAX} bytes, got {}",
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("topic name {name:?} is reserved"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "topic name {name:?} contains {bad:?}; allowed: A-Z a-z 0-9 . _ -"
        ));
    }
    Ok(())
}

/// Configuration of a topic.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicConfig {
    pub partitions: u32,
    /// Records are deliverable only once `committed_at + delay_ms <= now`.
    pub delay_ms: u64,
    /// How long a delivery is leased before it becomes deliverable again.
    pub lease_ms: u64,
    /// Partition log knobs: retention, segment size, codec, fsync policy, flush knobs.
    pub log: LogConfig,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            partitions: 1,
            delay_ms: 0,
            lease_ms: 30_000,
            log: LogConfig::default(),
        }
    }
}

impl TopicConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.partitions == 0 || self.partitions > PARTITIONS_MAX {
            return Err(format!(
                "partitions must be 1 to {PARTITIONS_MAX}, got {}",
                self.partitions
            ));
        }
        if self.lease_ms == 0 {
            return Err("lease_ms must be positive".into());
        }
        self.log.validate()
    }

    /// The `topic.conf` text.
    pub fn encode(&self) -> String {
        let l = &self.log;
        let mut out = String::new();
        let mut line = |k: &str, v: String| {
            out.push_str(k);
            out.push('=');
            out.push_str(&v);
            out.push('\n');
        };
        line("partitions", self.partitions.to_string());
        line("delay_ms", self.delay_ms.to_string());
        line("lease_ms", self.lease_ms.to_string());
        line(
            "retention_ms",
            l.retention_ms.map_or("none".into(), |r| r.to_string()),
        );
        line("segment_bytes", l.segment_bytes.to_string());
        line("codec", l.codec.name().to_string());
        line("zstd_level", l.zstd_level.to_string());
        line("zstd_hash_log", l.zstd_hash_log.to_string());
        line("compress_min_bytes", l.compress_min_bytes.to_string());
        line("preallocate_bytes", l.preallocate_bytes.to_string());
        line(
            "fsync",
            match l.fsync {
                FsyncPolicy::PerWrite => "per-write".into(),
                FsyncPolicy::Batched => "batched".into(),
            },
        );
        line("flush_bytes", l.flush_bytes.to_string());
        line("flush_records", l.flush_records.to_string());
        line(
            "flush_interval_ms",
            l.flush_interval.as_millis().to_string(),
        );
        line("sync_interval_ms", l.sync_interval.as_millis().to_string());
        line("sync_bytes", l.sync_bytes.to_string());
        line(
            "hwm_persist_interval_ms",
            l.hwm_persist_interval.as_millis().to_string(),
        );
        line(
            "reaper_interval_ms",
            l.reaper_interval.as_millis().to_string(),
        );
        out
    }

    /// Parses `topic.conf` text; unknown keys are errors (a typo must not pass), and so
    /// is a file without `partitions`, the one key every version wrote: an empty file
    /// (a rename whose data never reached the disk) must not open as a default topic
    /// with fewer partitions than it had.
    pub fn decode(text: &str) -> Result<TopicConfig, String> {
        let mut c = TopicConfig::default();
        let mut partitions_seen = false;
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected key=value", number + 1))?;
            let num = |v: &str| -> Result<u64, String> {
                v.parse::<u64>()
                    .map_err(|e| format!("line {}: {key}: {e}", number + 1))
            };
            let ms = |v: &str| num(v).map(Duration::from_millis);
            match key {
                "partitions" => {
                    c.partitions = narrow(num(value)?)?;
                    partitions_seen = true;
                }
                "delay_ms" => c.delay_ms = num(value)?,
                "lease_ms" => c.lease_ms = num(value)?,
                "retention_ms" => {
                    c.log.retention_ms = if value == "none" {
                        None
                    } else {
                        Some(num(value)?)
                    }
                }
                "segment_bytes" => c.log.segment_bytes = num(value)?,
                "codec" => c.log.codec = value.parse::<Codec>()?,
                "zstd_level" => {
                    c.log.zstd_level = value.parse().map_err(|e| format!("zstd_level: {e}"))?
                }
                "zstd_hash_log" => c.log.zstd_hash_log = narrow(num(value)?)?,
                "compress_min_bytes" => c.log.compress_min_bytes = narrow(num(value)?)?,
                "preallocate_bytes" => c.log.preallocate_bytes = num(value)?,
                "fsync" => c.log.fsync = value.parse()?,
                "flush_bytes" => c.log.flush_bytes = narrow(num(value)?)?,
                "flush_records" => c.log.flush_records = narrow(num(value)?)?,
                "flush_interval_ms" => c.log.flush_interval = ms(value)?,
                "sync_interval_ms" => c.log.sync_interval = ms(value)?,
                "sync_bytes" => c.log.sync_bytes = num(value)?,
                "hwm_persist_interval_ms" => c.log.hwm_persist_interval = ms(value)?,
                "reaper_interval_ms" => c.log.reaper_interval = ms(value)?,
                other => return Err(format!("line {}: unknown key {other:?}", number + 1)),
            }
        }
        if !partitions_seen {
            return Err("no partitions key (empty or damaged file)".into());
        }
        c.validate()?;
        Ok(c)
    }
}

/// A parsed `u64` in a narrower integer type, or why it does not fit.
fn narrow<T: TryFrom<u64>>(value: u64) -> Result<T, String>
where
    T::Error: std::fmt::Display,
{
    T::try_from(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_are_validated() {
        for good in ["orders", "a", "o.r-d_e.r5", &"x".repeat(200)] {
            assert_eq!(validate_topic_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a\\b",
            "über",
            "a b",
            &"x".repeat(201),
        ] {
            assert!(validate_topic_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn topic_config_round_trips_and_rejects_unknown_keys() {
        let config = TopicConfig {
            partitions: 4,
            delay_ms: 250,
            lease_ms: 1000,
            log: LogConfig {
                retention_ms: Some(60_000),
                segment_bytes: 4096,
                codec: Codec::None,
                fsync: FsyncPolicy::PerWrite,
                zstd_hash_log: 0,
                compress_min_bytes: 0,
                preallocate_bytes: 4096,
                ..LogConfig::default()
            },
        };
        assert_eq!(TopicConfig::decode(&config.encode()), Ok(config.clone()));
        // Blank lines and comments are skipped wherever they stand.
        let commented = format!("# written by hand\n\n{}\n# end\n", config.encode());
        assert_eq!(TopicConfig::decode(&commented), Ok(config));
        // A topic.conf written before a key existed opens with that key's default.
        let old = TopicConfig::decode(
            "partitions=3
",
        )
        .expect("decodes");
        assert_eq!(old.log, LogConfig::default());
        assert!(
            TopicConfig::decode("partitons=3\n")
                .unwrap_err()
                .contains("unknown key")
        );
        assert!(TopicConfig::decode("partitions=0\n").is_err());
        // An empty file is damage, not a default topic.
        assert!(TopicConfig::decode("").is_err());
        assert!(TopicConfig::decode("delay_ms=5\n").is_err());
    }
}
