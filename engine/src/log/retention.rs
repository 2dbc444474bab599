//! The retention reaper: deletes sealed segments whose last record is older than
//! `retention_ms` and lies below the HWM. Never the active segment. Granularity is the
//! segment, so data lives between `retention_ms` and `retention_ms` + one segment's fill
//! time.
//!
//! Cancel-safe: a sweep takes segments out of the log first and records their files as
//! pending unlink in the log's state; a sweep dropped (or failed) before it saw every
//! unlink and the directory fsync leaves them there, and the next sweep deletes them
//! before anything else. Otherwise an orphan below the log start would come back at the
//! next open, and once its successor is reaped, leave a gap that refuses the partition.

use super::metrics::add;
use super::{Log, LogError};
use crate::alarm;
use crate::clock::Clock;
use crate::fs::Fs;

/// What one sweep deleted (reason `age`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReapReport {
    pub segments: Vec<String>,
    pub bytes: u64,
    pub records: u64,
    pub log_start: u64,
}

impl<F: Fs, C: Clock> Log<F, C> {
    /// One reaper sweep.
    pub async fn reap_once(&self) -> Result<ReapReport, LogError> {
        let Some(retention_ms) = self.inner.config.retention_ms else {
            return Ok(ReapReport {
                log_start: self.log_start(),
                ..ReapReport::default()
            });
        };
        let now_ms = self.wall_ms();
        let floor = self
            .inner
            .retention_floor
            .load(std::sync::atomic::Ordering::Relaxed);
        let candidates = self.reapable(retention_ms, now_ms, floor);
        let pending = !self.state().unlink_pending.is_empty();
        let new_start = match candidates.last() {
            Some(&(_, end)) => end,
            None if pending => self.log_start(),
            None => {
                return Ok(ReapReport {
                    log_start: self.log_start(),
                    ..ReapReport::default()
                });
            }
        };
        // A persisted HWM below the new log start would hide committed records after a
        // crash (the WAL checkpoint follows the persisted HWM): persist first.
        if self.persisted_hwm() < new_start {
            self.persist_hwm().await?;
        }
        let mut report = ReapReport::default();
        let mut names = Vec::new();
        let moved;
        let unlink = {
            let mut st = self.state();
            for (base, end) in &candidates {
                if let Some(segment) = st.segments.remove(base) {
                    report.bytes += segment.len;
                    report.records += end - base;
                    names.push(segment.name.clone());
                    st.unlink_pending.push(segment.name);
                }
            }
            assert!(new_start >= st.log_start, "the log start never moves back");
            let from = st.log_start;
            st.log_start = new_start;
            moved = (from, st.log_start);
            st.reads.forget_below(new_start);
            st.check_invariants();
            st.unlink_pending.clone()
        };
        if moved.1 > moved.0 {
            // Readers forget the records below from here on, long before the unlinks when
            // this sweep is dropped part-way: say so now, with no await in between, and
            // say what the state holds.
            alarm::log_start_moved(&self.inner.dir, moved.0, moved.1);
        }
        self.unlink_durably(&unlink).await?;
        {
            let mut st = self.state();
            st.unlink_pending.retain(|name| !unlink.contains(name));
            st.durable_log_start = st.durable_log_start.max(new_start);
            st.check_invariants();
        }
        let m = &self.inner.metrics;
        add(&m.retention_segments_deleted, names.len() as u64);
        add(&m.retention_bytes_deleted, report.bytes);
        add(&m.retention_records_deleted, report.records);
        tracing::info!(
            reason = "age",
            segments = names.len(),
            bytes = report.bytes,
            records = report.records,
            log_start = new_start,
            "retention deleted segments"
        );
        report.segments = names;
        report.log_start = new_start;
        Ok(report)
    }

    /// Sealed segments from the front, as `(base, end)`, whose last record is older than
    /// `retention_ms` at `now_ms` and that lie entirely below both the HWM and `floor`.
    fn reapable(&self, retention_ms: u64, now_ms: u64, floor: u64) -> Vec<(u64, u64)> {
        let st = self.state();
        let sealed = st.segments.len().saturating_sub(1);
        st.segments
            .iter()
            .take(sealed)
            .take_while(|(_, s)| {
                s.end_offset <= st.hwm
                    && s.end_offset <= floor
                    && s.last_committed_at_ms
                        .is_some_and(|at| at.saturating_add(retention_ms) <= now_ms)
            })
            .map(|(base, s)| (*base, s.end_offset))
            .collect()
    }

    /// Unlinks the named segment files (one already gone counts as unlinked: an earlier
    /// sweep's unlink went through before it was dropped), then fsyncs the directory.
    async fn unlink_durably(&self, names: &[String]) -> Result<(), LogError> {
        for name in names {
            match self.inner.fs.remove_file(&self.inner.dir.join(name)).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("delete segment")(e)),
            }
        }
        self.inner
            .fs
            .sync_dir(&self.inner.dir)
            .await
            .map_err(LogError::io("sync directory after segment delete"))
    }
}
