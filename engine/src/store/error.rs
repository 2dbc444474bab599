//! Errors of the store, typed per cause. Nothing is written when one is returned
//! before the WAL append (validation errors).

use super::wal::WalError;
use crate::log::LogError;
use std::fmt;

#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    InvalidTopicName(String),
    InvalidConfig(String),
    TopicExists(String),
    UnknownTopic(String),
    UnknownPartition {
        topic: String,
        partition: u32,
        partitions: u32,
    },
    /// The topic's `topic.conf` could not be read at open: its partitions stay closed
    /// (and untouched) until an operator repairs it.
    TopicRefused {
        topic: String,
        reason: String,
    },
    /// Recovery refused to open the partition (R3); the reason names file and position.
    PartitionRefused {
        topic: String,
        partition: u32,
        reason: String,
    },
    RecordTooLarge {
        size: usize,
        max: usize,
    },
    /// Ack or nack of an offset that is not delivered and unsettled.
    NotOutstanding {
        topic: String,
        partition: u32,
        offset: u64,
    },
    Log {
        topic: String,
        partition: u32,
        source: LogError,
    },
    Wal(WalError),
    Io {
        op: &'static str,
        source: std::io::Error,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::InvalidTopicName(reason) => write!(f, "invalid topic name: {reason}"),
            StoreError::InvalidConfig(reason) => write!(f, "invalid configuration: {reason}"),
            StoreError::TopicExists(t) => write!(f, "topic {t:?} already exists"),
            StoreError::UnknownTopic(t) => write!(f, "unknown topic {t:?}"),
            StoreError::UnknownPartition {
                topic,
                partition,
                partitions,
            } => write!(
                f,
                "topic {topic:?} has {partitions} partitions; there is no partition {partition}"
            ),
            StoreError::TopicRefused { topic, reason } => {
                write!(f, "topic {topic:?} refused to open: {reason}")
            }
            StoreError::PartitionRefused {
                topic,
                partition,
                reason,
            } => write!(f, "partition {topic}/{partition} refused to open: {reason}"),
            StoreError::RecordTooLarge { size, max } => {
                write!(f, "record of {size} bytes exceeds the {max}-byte bound")
            }
            StoreError::NotOutstanding {
                topic,
                partition,
                offset,
            } => write!(
                f,
                "offset {offset} of {topic}/{partition} is not delivered and unsettled"
            ),
            StoreError::Log {
                topic,
                partition,
                source,
            } => write!(f, "partition {topic}/{partition}: {source}"),
            StoreError::Wal(e) => write!(f, "{e}"),
            StoreError::Io { op, source } => write!(f, "{op} failed: {source}"),
        }
    }
}

impl std::error::Error for StoreError {}
