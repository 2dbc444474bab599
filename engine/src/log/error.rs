//! Errors of the partition log, typed per cause.

use crate::recovery::Corruption;
use std::fmt;
use std::io;

/// Why a log operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum LogError {
    /// An earlier write or fsync failed; the partition acknowledges nothing more.
    Poisoned {
        reason: String,
    },
    /// The log was closed.
    Closed,
    /// An I/O operation failed (the partition is poisoned when it was a write or sync).
    Io {
        op: &'static str,
        source: io::Error,
    },
    /// Recovery refused to open: damaged acknowledged data with valid data after it (R3).
    Corruption(Corruption),
    /// A read below the first offset still on disk.
    OffsetBeforeLogStart {
        requested: u64,
        log_start: u64,
    },
    /// A record larger than one frame may hold.
    RecordTooLarge {
        size: usize,
        max: usize,
    },
    /// The in-memory buffer is at its bound; commit (sync) before appending more.
    BufferFull {
        buffered_bytes: usize,
        max: usize,
    },
    InvalidConfig(String),
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Poisoned { reason } => {
                write!(f, "partition poisoned by an earlier I/O error: {reason}")
            }
            LogError::Closed => write!(f, "log is closed"),
            LogError::Io { op, source } => write!(f, "{op} failed: {source}"),
            LogError::Corruption(c) => write!(f, "refusing to open: corruption in {c}"),
            LogError::OffsetBeforeLogStart {
                requested,
                log_start,
            } => write!(
                f,
                "offset {requested} is below the log start {log_start} (deleted by retention)"
            ),
            LogError::RecordTooLarge { size, max } => {
                write!(f, "record of {size} bytes exceeds the {max}-byte bound")
            }
            LogError::BufferFull {
                buffered_bytes,
                max,
            } => write!(
                f,
                "append buffer full ({buffered_bytes} of {max} bytes); commit before appending"
            ),
            LogError::InvalidConfig(reason) => write!(f, "invalid log configuration: {reason}"),
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogError::Io { source, .. } => Some(source),
            LogError::Corruption(c) => Some(c),
            _ => None,
        }
    }
}

impl LogError {
    pub(crate) fn io(op: &'static str) -> impl FnOnce(io::Error) -> LogError {
        move |source| LogError::Io { op, source }
    }
}
