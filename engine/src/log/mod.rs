//! The partition log: buffer → flush → sync, the high-watermark, recovery on open,
//! reads, retention and long-poll.
//!
//! Invariants (asserted where they change):
//! - `log_start <= hwm <= durable_end <= written_end <= next_offset`: consumers see only
//!   records that were fsynced and re-read with a valid CRC;
//! - `persisted_hwm <= hwm` at the moment it is written, so the `hwm` file never passes
//!   durable data; it never decreases except by a recovery clamp;
//! - segment base offsets strictly increase with no gaps: each segment starts where the
//!   previous one ends, and frames inside a segment are contiguous;
//! - commit times never decrease along offsets, also across restarts and when the wall
//!   clock steps backwards (the last recovered commit time is the floor);
//! - after a write or fsync error the log is poisoned: no later append, flush, sync or
//!   HWM advance succeeds; reads of committed data keep working.
//!
//! Locking: `state` (a std mutex, never held across an await) is the partition lock;
//! offsets and commit times are assigned under it. `io` (an async mutex) serialises
//! writes to the active segment, so a frame is written by one task at a time and
//! concurrent `sync()` callers share one fsync (group commit).

mod background;
mod batch;
mod buffer;
pub mod config;
pub mod error;
mod gather;
pub mod metrics;
pub mod notify;
mod open;
mod queue;
mod read;
mod retention;
mod state;
mod verify;
mod write;

use buffer::Buffer;
use state::{Segment, State};

pub use background::{LoopFuture, LoopStart, Spawn};
pub use batch::{ReadBatch, Record, RecordRef, Records};
pub use config::{FsyncPolicy, LogConfig};
pub use error::LogError;
pub use metrics::{LogMetrics, MetricsSnapshot};
pub use notify::{Listener, Notify};
pub use retention::ReapReport;

use crate::clock::Clock;
use crate::format::frame::{Codecs, RECORD_LEN_PREFIX};
use crate::format::{envelope, layout, word};
use crate::fs::{File, Fs, OpenMode};
use crate::recovery::{self, FrameEntry, ScanDepth, TruncationRule};
use metrics::add;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A partition log. Cloning gives another handle to the same log.
pub struct Log<F: Fs, C: Clock> {
    inner: Arc<Inner<F, C>>,
}

impl<F: Fs, C: Clock> Clone for Log<F, C> {
    fn clone(&self) -> Self {
        Log {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<F: Fs, C: Clock> {
    fs: F,
    clock: C,
    dir: PathBuf,
    config: LogConfig,
    state: Mutex<State<F>>,
    /// Broadcast when an encoded frame is queued (or an encode failed).
    encoded_ready: Arc<Notify>,
    io: async_lock::Mutex<write::Io<F>>,
    hwm_file: async_lock::Mutex<F::File>,
    /// Broadcast on commit (and, through [`Log::notify_all`], on nack and lease expiry).
    notify: Arc<Notify>,
    /// Broadcast when the buffer crosses a flush threshold.
    flush_wanted: Arc<Notify>,
    /// Broadcast when the committers the last fsync released are all back (`gather.rs`).
    gathered: Arc<Notify>,
    metrics: LogMetrics,
    /// Retention never deletes a segment ending above this offset (the store keeps
    /// the copies its WAL replay needs); `u64::MAX` when unconstrained.
    retention_floor: std::sync::atomic::AtomicU64,
    /// The wall time that cannot be earlier than now: the last recovered commit time,
    /// with the monotonic time it was taken at (see [`Log::wall_ms`]).
    wall_floor: (u64, Duration),
}

/// A `sync` call counted by the gather; dropped, it stops counting (`gather.rs`).
struct Waiting<'l, F: Fs, C: Clock> {
    log: &'l Log<F, C>,
    target: u64,
    epoch: u64,
}

impl<F: Fs, C: Clock> Drop for Waiting<'_, F, C> {
    fn drop(&mut self) {
        self.log.state().gather.leave(self.target, self.epoch);
    }
}

/// Truncates a buffer back to `mark` when dropped armed.
struct Rollback<'b> {
    buffer: &'b mut Buffer,
    mark: (usize, usize),
    armed: bool,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.buffer.truncate(self.mark);
        }
    }
}

/// Offsets and state of a log at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogStatus {
    /// The first offset the disk still holds: retention moves it once a delete is durable
    /// (reads below a delete in flight are refused already).
    pub log_start: u64,
    pub hwm: u64,
    pub persisted_hwm: u64,
    /// Records fsynced and verified (the hidden tail ends here after recovery).
    pub durable_end: u64,
    /// Records written to segment files (maybe unsynced).
    pub written_end: u64,
    /// The next offset an append gets.
    pub next_offset: u64,
    pub segments: usize,
    pub last_commit_ms: u64,
    pub poisoned: Option<String>,
    /// The HWM when the log was poisoned.
    pub hwm_at_poison: Option<u64>,
    pub closed: bool,
}

/// What recovery did on open.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct OpenReport {
    pub truncation: Option<(TruncationRule, u64)>,
    pub recorded_loss_records: u64,
    pub hidden_records: u64,
    pub hwm: u64,
    pub tail_offset: u64,
    /// Zero-filled (preallocated, unused) bytes found after the segments' last frames.
    pub zero_tail_bytes: u64,
    /// Readable records past an R2 hole, handed to the salvage before the truncation.
    pub salvage_offered: u64,
    /// Of them, the ones the salvage kept (made durable elsewhere for re-commit).
    pub salvaged: u64,
    /// Of them, the ones that had another copy and were given a second one.
    pub salvage_copied: u64,
    /// Bytes of frames above the HWM written back and fsynced, because the page cache
    /// of a crashed process may show them without the disk holding them.
    pub written_back_bytes: u64,
}

impl<F: Fs, C: Clock> Log<F, C> {
    fn state(&self) -> MutexGuard<'_, State<F>> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn config(&self) -> &LogConfig {
        &self.inner.config
    }

    pub fn metrics(&self) -> &LogMetrics {
        &self.inner.metrics
    }

    pub fn status(&self) -> LogStatus {
        let st = self.state();
        LogStatus {
            log_start: st.durable_log_start,
            hwm: st.hwm,
            persisted_hwm: st.persisted_hwm,
            durable_end: st.durable_end,
            written_end: st.written_end,
            next_offset: st.next_offset,
            segments: st.segments.len(),
            last_commit_ms: st.last_commit_ms,
            poisoned: st.poisoned.clone(),
            hwm_at_poison: st.hwm_at_poison,
            closed: st.closed,
        }
    }

    /// Wall-clock ms as the log uses it: never earlier than the last recovered commit
    /// time plus the monotonic time since open. A wall clock that stepped backwards
    /// (across a restart, or while running) therefore neither freezes commit times at
    /// the old maximum nor holds delay gates and retention until it catches up.
    pub fn wall_ms(&self) -> u64 {
        self.wall_ms_at(self.inner.clock.now())
    }

    /// [`Log::wall_ms`] with the monotonic time `now` already read.
    fn wall_ms_at(&self, now: Duration) -> u64 {
        let (floor_ms, at) = self.inner.wall_floor;
        let since = now.saturating_sub(at);
        let floor = floor_ms.saturating_add(u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        self.inner.clock.wall_ms().max(floor)
    }

    /// Retention will not delete segments holding offsets at or above `offset`.
    pub fn set_retention_floor(&self, offset: u64) {
        self.inner.retention_floor.store(offset, Ordering::Relaxed);
    }

    /// The exclusive bound of what consumers may see.
    pub fn hwm(&self) -> u64 {
        self.state().hwm
    }

    /// The HWM last made durable in the `hwm` file.
    pub fn persisted_hwm(&self) -> u64 {
        self.state().persisted_hwm
    }

    pub fn log_start(&self) -> u64 {
        self.state().log_start
    }

    /// Appends one record to the buffer; returns its offset. Not durable or visible
    /// until a commit ([`Log::sync`]).
    pub fn append(&self, key: &[u8], payload: &[u8]) -> Result<u64, LogError> {
        self.append_batch([(key, payload)]).map(|r| r.start)
    }

    /// Appends records to the buffer under the partition lock; returns their offsets.
    /// Commit times are assigned here: `max(wall clock, last commit time)`, so they
    /// never decrease along offsets.
    pub fn append_batch<'a>(
        &self,
        records: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<Range<u64>, LogError> {
        let max = self.inner.config.record_bytes_max();
        let now = self.inner.clock.now();
        let wall_ms = self.wall_ms_at(now);
        let mut st = self.state();
        st.check_writable()?;
        let start = st.next_offset;
        let committed_at_ms = wall_ms.max(st.last_commit_ms);
        let records_before = st.buffer.len();
        let held = st.buffer_bytes + st.in_flight_bytes;
        let buffer_max = self.inner.config.buffer_bytes_max;
        let mut batch_bytes = 0usize;
        {
            // Undoes the pushes if the batch fails, or if the caller's iterator panics.
            let mut pushed = Rollback {
                mark: st.buffer.mark(),
                buffer: &mut st.buffer,
                armed: true,
            };
            for (key, payload) in records {
                let size = envelope::encoded_len(key.len(), payload.len());
                if size > max {
                    return Err(LogError::RecordTooLarge { size, max });
                }
                batch_bytes += size;
                // Checked as the batch grows, so an oversized batch is never copied
                // whole. Records drained into frames not yet written still count.
                if held + batch_bytes > buffer_max {
                    return Err(LogError::BufferFull {
                        buffered_bytes: held,
                        max: buffer_max,
                    });
                }
                pushed.buffer.push(key, committed_at_ms, payload, size);
            }
            pushed.armed = false;
        }
        let appended = (st.buffer.len() - records_before) as u64;
        st.last_commit_ms = committed_at_ms;
        st.next_offset += appended;
        st.buffer_bytes += batch_bytes;
        st.oldest_buffered_at.get_or_insert(now);
        let end = st.next_offset;
        let wanted = st.buffer_bytes >= self.inner.config.flush_bytes
            || st.buffer.len() >= self.inner.config.flush_records;
        drop(st);
        if wanted {
            self.inner.flush_wanted.notify_all();
        }
        Ok(start..end)
    }

    /// Appends records and commits them; returns their offsets once they are durable,
    /// verified and visible.
    pub async fn commit<'a>(
        &self,
        records: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<Range<u64>, LogError> {
        let range = self.append_batch(records)?;
        self.sync().await?;
        let hwm = self.hwm();
        assert!(
            hwm >= range.end,
            "sync returned before covering {range:?} (hwm {hwm})"
        );
        Ok(range)
    }

    /// The commit path: drains the buffer synchronously, writes, fsyncs, re-reads and
    /// CRC-verifies the new frames, then advances the HWM and wakes waiters. Everything
    /// appended before the call is committed when it returns `Ok`; concurrent callers
    /// share fsyncs. Returns the range the HWM moved over while this call waited.
    pub async fn sync(&self) -> Result<Range<u64>, LogError> {
        let (target, start) = {
            let st = self.state();
            st.check_not_poisoned()?;
            if st.closed {
                return Err(LogError::Closed);
            }
            (st.next_offset, st.hwm)
        };
        // Encode what is buffered below the target before taking the write lock: this
        // commit compresses while another one's fsync is in flight.
        while self.encode_frame(target).await? {}
        // Its records are queued: an arrival the next fsync may be waiting for.
        let (epoch, complete) = self.state().gather.arrive(target);
        if complete {
            self.inner.gathered.notify_all();
        }
        let _waiting = Waiting {
            log: self,
            target,
            epoch,
        };
        // Wait for the write lock, or for another caller's fsync to cover the target,
        // whichever comes first: a commit already durable returns without queueing for
        // the lock (which a caller looping on commits could hold again and again).
        let mut io = loop {
            let committed = self.inner.notify.listen();
            {
                let st = self.state();
                st.check_not_poisoned()?;
                if st.hwm >= target {
                    return Ok(start..st.hwm);
                }
            }
            match notify::race(self.inner.io.lock(), committed).await {
                notify::Either::Left(io) => break io,
                notify::Either::Right(()) => {}
            }
        };
        self.gather_arrivals(target).await;
        self.write_encoded_through(&mut io, target).await?;
        self.sync_locked(&mut io).await?;
        let st = self.state();
        // Everything below the target is fsynced and verified now (a hidden tail from
        // recovery stays hidden until new commits pass it, so the HWM may be lower).
        if st.durable_end < target {
            drop(st);
            return Err(self.poison(
                "sync",
                std::io::Error::other(format!(
                    "returned with the durable end below its target {target}"
                )),
            ));
        }
        Ok(start..st.hwm.max(start))
    }

    /// Waits, holding the write lock, for the committers the last fsync released to
    /// come back with their next records, at most until the gather's deadline.
    async fn gather_arrivals(&self, target: u64) {
        loop {
            let gathered = self.inner.gathered.listen();
            let wait = {
                let st = self.state();
                // Nothing comes back to a log closing or poisoned. And a full frame
                // already waiting for the disk shares the fsync well enough: waiting
                // would only idle the disk while big commits compress.
                let config = &self.inner.config;
                if st.hwm >= target
                    || st.closing
                    || st.poisoned.is_some()
                    || st.in_flight >= config.flush_records as u64
                    || st.in_flight_bytes >= config.flush_bytes
                {
                    return;
                }
                st.gather.wait_at(self.inner.clock.now())
            };
            let Some(wait) = wait else { return };
            notify::race(gathered, self.inner.clock.sleep(wait)).await;
        }
    }

    /// Persists the in-memory HWM when it moved: one 8-byte write at position 0 and an
    /// fsync. Returns the value now durable.
    pub async fn persist_hwm(&self) -> Result<u64, LogError> {
        let file = self.inner.hwm_file.lock().await;
        let hwm = {
            let st = self.state();
            st.check_not_poisoned()?;
            if st.hwm == st.persisted_hwm {
                return Ok(st.persisted_hwm);
            }
            assert!(st.hwm > st.persisted_hwm, "the persisted HWM only rises");
            assert!(
                st.hwm <= st.durable_end,
                "the HWM never passes durable data"
            );
            st.hwm
        };
        let result = async {
            file.write_at(&word::encode(hwm), 0).await?;
            file.sync_data().await
        }
        .await;
        if let Err(e) = result {
            return Err(self.poison("persist hwm", e));
        }
        add(&self.inner.metrics.hwm_persists, 1);
        add(&self.inner.metrics.fsyncs, 1);
        let mut st = self.state();
        assert!(
            hwm <= st.durable_end,
            "persisted HWM {hwm} passes durable data"
        );
        st.persisted_hwm = st.persisted_hwm.max(hwm);
        Ok(st.persisted_hwm)
    }

    /// Makes the hidden tail visible: moves the HWM to the durable end found by recovery
    /// and persists it. For a store whose WAL lost entries (a corrupt WAL frame): the
    /// hidden copies may then be the only ones left, and exposing them trades possible
    /// duplicates for certain loss. Returns how many records became visible.
    pub async fn expose_hidden_tail(&self) -> Result<u64, LogError> {
        let _io = self.inner.io.lock().await;
        let (from, exposed) = {
            let mut st = self.state();
            st.check_not_poisoned()?;
            let exposed = st.durable_end - st.hwm;
            let from = st.hwm;
            st.hwm = st.durable_end;
            st.check_invariants();
            (from, exposed)
        };
        if exposed > 0 {
            crate::alarm::hidden_exposed(&self.inner.dir, from, from + exposed);
            self.inner.notify.notify_all();
            self.persist_hwm().await?;
        }
        Ok(exposed)
    }

    /// Drains, commits and persists the HWM; later appends and syncs fail with `Closed`.
    pub async fn close(&self) -> Result<(), LogError> {
        {
            let mut st = self.state();
            if st.closed {
                return Ok(());
            }
            st.closing = true;
        }
        // A lock holder gathering arrivals stops: none come to a closing log.
        self.inner.gathered.notify_all();
        self.sync().await?;
        self.persist_hwm().await?;
        self.state().closed = true;
        self.inner.notify.notify_all();
        self.inner.flush_wanted.notify_all();
        Ok(())
    }

    /// A listener that completes at the next commit or [`Log::notify_all`]. Take it
    /// *before* checking for data, then await it: no wake-up can be missed.
    pub fn listen(&self) -> Listener {
        self.inner.notify.listen()
    }

    /// Wakes every parked waiter (commit does this; queues call it on nack and lease
    /// expiry).
    pub fn notify_all(&self) {
        self.inner.notify.notify_all();
    }

    /// Parks until the HWM passes `offset`, or the log is closed or poisoned.
    pub async fn wait_beyond(&self, offset: u64) {
        loop {
            let listener = self.listen();
            {
                let st = self.state();
                if st.hwm > offset || st.closed || st.poisoned.is_some() {
                    return;
                }
            }
            listener.await;
        }
    }

    /// Marks the log poisoned and returns the error to report.
    fn poison(&self, op: &'static str, source: std::io::Error) -> LogError {
        let reason = format!("{op}: {source}");
        {
            let mut st = self.state();
            if st.poisoned.is_none() {
                crate::alarm::poisoned(&self.inner.dir, op, &reason);
                st.poisoned = Some(reason);
                st.hwm_at_poison = Some(st.hwm);
            }
        }
        self.inner.metrics.poisoned.store(true, Ordering::Relaxed);
        self.inner.notify.notify_all();
        self.inner.flush_wanted.notify_all();
        self.inner.gathered.notify_all();
        LogError::Io { op, source }
    }
}
