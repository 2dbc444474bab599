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
pub mod config;
pub mod error;
pub mod metrics;
pub mod notify;
mod read;
mod retention;
mod write;

pub use background::{LoopFuture, LoopStart, Spawn};
pub use config::{FsyncPolicy, LogConfig};
pub use error::LogError;
pub use metrics::{LogMetrics, MetricsSnapshot};
pub use notify::{Listener, Notify};
pub use read::{ReadBatch, Record};
pub use retention::ReapReport;

use crate::clock::Clock;
use crate::format::frame::{Codecs, RECORD_LEN_PREFIX};
use crate::format::{envelope, layout, word};
use crate::fs::{File, Fs, OpenMode};
use crate::recovery::{self, FrameEntry, ScanDepth, TruncationRule};
use metrics::add;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
    metrics: LogMetrics,
    /// Retention never deletes a segment ending above this offset (the store keeps
    /// the copies its WAL replay needs); `u64::MAX` when unconstrained.
    retention_floor: std::sync::atomic::AtomicU64,
    /// The wall time that cannot be earlier than now: the last recovered commit time,
    /// with the monotonic time it was taken at (see [`Log::wall_ms`]).
    wall_floor: (u64, Duration),
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

/// Records appended but not yet drained into a frame, in offset order.
#[derive(Default)]
struct Buffer {
    /// Each record's envelope behind its 4-byte big-endian length, back to back: the
    /// payload layout of a frame (FORMAT.md), so a drain hands the codec one slice
    /// instead of one allocation per record. Bytes before `start` are drained.
    payload: Vec<u8>,
    start: usize,
    /// Per record: the commit time inside its envelope, and the envelope's length.
    records: VecDeque<(u64, usize)>,
}

impl Buffer {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// A mark to [`Buffer::truncate`] back to.
    fn mark(&self) -> (usize, usize) {
        (self.records.len(), self.payload.len())
    }

    fn push(&mut self, key: &[u8], committed_at_ms: u64, payload: &[u8], size: usize) {
        let len = u32::try_from(size).expect("records are bounded below 4 GiB");
        self.payload.extend_from_slice(&len.to_be_bytes());
        envelope::encode(&mut self.payload, key, committed_at_ms, payload);
        self.records.push_back((committed_at_ms, size));
    }

    /// Drops the records pushed since `mark` (no take may have run in between).
    fn truncate(&mut self, (records, payload_len): (usize, usize)) {
        self.records.truncate(records);
        self.payload.truncate(payload_len);
    }

    /// Takes the first `count` records: their payload bytes and the last one's commit
    /// time. Taking everything moves the buffer out without copying it; taking a part
    /// copies only that part (the rest is compacted once the drained prefix is at least
    /// half the buffer), so draining a backlog frame by frame stays linear.
    fn take(&mut self, count: usize) -> (Vec<u8>, Option<u64>) {
        let mut last = None;
        let len: usize = self
            .records
            .drain(..count)
            .map(|(at, size)| {
                last = Some(at);
                RECORD_LEN_PREFIX + size
            })
            .sum();
        if self.start == 0 && len == self.payload.len() {
            return (std::mem::take(&mut self.payload), last);
        }
        let taken = self
            .payload
            .get(self.start..self.start + len)
            .expect("records index the payload")
            .to_vec();
        self.start += len;
        if self.start == self.payload.len() {
            self.payload.clear();
            self.start = 0;
        } else if self.start >= self.payload.len() / 2 {
            self.payload.drain(..self.start);
            self.start = 0;
        }
        (taken, last)
    }

    /// Gives back a drained payload's allocation for the next appends to fill.
    fn recycle(&mut self, mut spent: Vec<u8>) {
        if self.payload.is_empty() && spent.capacity() > self.payload.capacity() {
            debug_assert_eq!(self.start, 0);
            spent.clear();
            self.payload = spent;
        }
    }
}

/// One segment file.
struct Segment<F: Fs> {
    name: String,
    frames: Vec<FrameEntry>,
    len: u64,
    end_offset: u64,
    last_committed_at_ms: Option<u64>,
    reader: Option<Arc<F::File>>,
}

struct State<F: Fs> {
    buffer: Buffer,
    /// Bytes of the buffered envelopes (without their length prefixes).
    buffer_bytes: usize,
    /// Bytes of the envelopes drained into frames not yet written: they still count
    /// against `buffer_bytes_max`.
    in_flight_bytes: usize,
    oldest_buffered_at: Option<Duration>,
    /// Records drained from the buffer into frames not yet written (being encoded, or
    /// queued in `encoded`). A failed encode or write leaves them here: never written,
    /// never acknowledged.
    in_flight: u64,
    /// Frames drained from the buffer, in offset order, waiting for the write lock:
    /// `None` while a caller is still encoding it. Slot `i` has sequence number
    /// `encoded_front_seq + i`.
    encoded: VecDeque<Option<write::Encoded>>,
    encoded_front_seq: u64,
    encoded_next_seq: u64,
    /// Frame buffers and codec contexts for reuse (one per concurrent encode).
    spare_frames: Vec<Vec<u8>>,
    spare_codecs: Vec<Codecs>,
    next_offset: u64,
    written_end: u64,
    durable_end: u64,
    hwm: u64,
    persisted_hwm: u64,
    /// Reads are refused below it from the moment retention takes segments out of the map.
    log_start: u64,
    /// The log start as the disk holds it, which `status` reports: retention raises it
    /// only once its unlinks are durable, so a crash never shows an earlier one.
    durable_log_start: u64,
    last_commit_ms: u64,
    segments: BTreeMap<u64, Segment<F>>,
    poisoned: Option<String>,
    /// The HWM at the moment of poisoning: it never moves past this afterwards.
    hwm_at_poison: Option<u64>,
    closing: bool,
    closed: bool,
    unsynced_bytes: u64,
    last_sync_at: Duration,
    cache: read::FrameCache,
    /// Frames found bad at read time (counted once).
    bad_frames: BTreeSet<u64>,
    /// Frames whose unparseable records were already counted.
    skip_counted: BTreeSet<u64>,
    /// Segment files the reaper took out of the log but has not yet seen unlinked and
    /// the directory fsynced (a sweep dropped or failed part-way): the next sweep
    /// deletes them first, so no file outlives its place in the log.
    unlink_pending: Vec<String>,
}

impl<F: Fs> State<F> {
    fn check_not_poisoned(&self) -> Result<(), LogError> {
        match &self.poisoned {
            Some(reason) => Err(LogError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn check_writable(&self) -> Result<(), LogError> {
        self.check_not_poisoned()?;
        if self.closing || self.closed {
            return Err(LogError::Closed);
        }
        Ok(())
    }

    /// Whether records below `limit` are still in the buffer (not yet drained into a
    /// frame).
    fn has_undrained_below(&self, limit: u64) -> bool {
        !self.buffer.is_empty() && self.written_end + self.in_flight < limit
    }

    fn check_invariants(&self) {
        assert!(
            self.log_start <= self.hwm
                && self.hwm <= self.durable_end
                && self.durable_end <= self.written_end
                && self.written_end <= self.next_offset,
            "log offsets out of order: start {} hwm {} durable {} written {} next {}",
            self.log_start,
            self.hwm,
            self.durable_end,
            self.written_end,
            self.next_offset
        );
        assert!(
            self.durable_log_start <= self.log_start,
            "durable log start {} above the log start {}",
            self.durable_log_start,
            self.log_start
        );
        assert!(
            self.hwm_at_poison.is_none_or(|at| self.hwm == at),
            "HWM moved after the log was poisoned"
        );
        assert_eq!(
            self.written_end + self.in_flight + self.buffer.len() as u64,
            self.next_offset,
            "buffer does not end at the log end"
        );
        // What counts against `buffer_bytes_max` is what the buffer holds: each record's
        // envelope behind its length prefix.
        assert_eq!(
            self.buffer_bytes + RECORD_LEN_PREFIX * self.buffer.len(),
            self.buffer.payload.len() - self.buffer.start,
            "buffer_bytes out of step with the buffered records"
        );
        // Every record's envelope has at least its version, key length and commit time,
        // so records in flight have bytes in flight and none have none.
        assert_eq!(
            self.in_flight == 0,
            self.in_flight_bytes == 0,
            "in_flight_bytes {} out of step with {} records in flight",
            self.in_flight_bytes,
            self.in_flight
        );
        assert!(
            self.spare_frames.len() <= write::SPARE_FRAMES,
            "frame buffer pool over its bound"
        );
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
    /// Opens (or creates) the partition in `dir`, running recovery (R1-R4): torn tails
    /// and holes above the persisted HWM are truncated and fsynced, a clamp is recorded
    /// and persisted, and damaged acknowledged data refuses to open. The frames kept
    /// above the HWM are written back and fsynced, and the directory fsynced, so that
    /// nothing a crashed process left only in the page cache is built on.
    pub async fn open(
        fs: F,
        clock: C,
        dir: impl Into<PathBuf>,
        config: LogConfig,
    ) -> Result<(Self, OpenReport), LogError> {
        Self::open_salvaging(fs, clock, dir, config, &mut recovery::Discard).await
    }

    /// [`Log::open`], handing the records an R2 truncation would discard to `salvage`
    /// before the truncation runs (see [`recovery::Salvage`]): the store keeps those its
    /// WAL no longer holds.
    pub async fn open_salvaging(
        fs: F,
        clock: C,
        dir: impl Into<PathBuf>,
        config: LogConfig,
        salvage: &mut impl recovery::Salvage,
    ) -> Result<(Self, OpenReport), LogError> {
        config.validate().map_err(LogError::InvalidConfig)?;
        let dir = dir.into();
        fs.create_dir_all(&dir)
            .await
            .map_err(LogError::io("create partition directory"))?;
        let mut scan = recovery::scan_partition(&fs, &dir, ScanDepth::Frames)
            .await
            .map_err(LogError::io("scan partition"))?;
        if let Some(corruption) = scan.corruption.clone() {
            crate::alarm::refused(
                &dir,
                &corruption.segment,
                corruption.position,
                &corruption.reason,
            );
            return Err(LogError::Corruption(corruption));
        }
        let metrics = LogMetrics::default();
        let mut report = OpenReport::default();
        if let Some(t) = &scan.truncation {
            crate::alarm::truncated(
                &dir,
                t.rule == TruncationRule::TornTail,
                &t.segment,
                t.position,
                t.offset,
                t.bytes,
                &t.reason,
            );
            match t.rule {
                TruncationRule::TornTail => add(&metrics.truncations_torn_tail, 1),
                TruncationRule::HoleAboveHwm => add(&metrics.truncations_hole, 1),
            }
            add(&metrics.truncated_bytes, t.bytes);
            report.truncation = Some((t.rule, t.bytes));
        }
        report.zero_tail_bytes = scan.zero_tail_bytes();
        for s in scan.segments.iter().filter(|s| s.junk_tail > 0) {
            crate::alarm::junk_trimmed(
                &dir,
                &s.file_name,
                s.junk_tail,
                s.junk_reason.as_deref().unwrap_or(""),
            );
        }
        add(&metrics.zero_tail_bytes_at_open, report.zero_tail_bytes);
        let discarded = recovery::read_discarded(&fs, &dir, &scan)
            .await
            .map_err(LogError::io("read the frames R2 discards"))?;
        if !discarded.is_empty() {
            report.salvage_offered = discarded.len() as u64;
            let kept = salvage
                .keep(discarded)
                .await
                .map_err(LogError::io("salvage before R2"))?;
            report.salvaged = kept.kept;
            report.salvage_copied = kept.copied;
            assert!(kept.kept + kept.copied <= report.salvage_offered);
            crate::alarm::salvaged(&dir, report.salvage_offered, &kept);
        }
        recovery::apply(&fs, &dir, &mut scan)
            .await
            .map_err(LogError::io("truncate during recovery"))?;
        report.written_back_bytes = recovery::persist_unproven(&fs, &dir, &scan)
            .await
            .map_err(LogError::io("write back what recovery found above the HWM"))?;
        let hwm = scan.hwm();
        report.hwm = hwm;
        report.tail_offset = scan.tail_offset;
        report.recorded_loss_records = scan.recorded_loss_records();
        report.hidden_records = scan.hidden_records();
        if report.recorded_loss_records > 0 {
            crate::alarm::clamp(&dir, scan.persisted_hwm.unwrap_or(0), hwm);
        }
        add(&metrics.recorded_loss_records, report.recorded_loss_records);
        add(&metrics.hidden_records_at_open, report.hidden_records);

        let hwm_file = open_hwm_file(&fs, &dir, hwm).await?;

        let mut segments = BTreeMap::new();
        for s in &scan.segments {
            segments.insert(
                s.base_offset,
                Segment {
                    name: s.file_name.clone(),
                    frames: s.frames.clone(),
                    len: s.valid_len,
                    end_offset: s.end_offset,
                    last_committed_at_ms: s.last_committed_at_ms,
                    reader: None,
                },
            );
        }
        if segments.is_empty() {
            let base = scan.tail_offset;
            create_segment_file(&fs, &dir, base).await?;
            segments.insert(base, Segment::empty(base));
        }
        let (&active_base, active_segment) = segments
            .last_key_value()
            .expect("at least one segment exists");
        let active = Arc::new(
            fs.open(&dir.join(&active_segment.name), OpenMode::ReadWrite)
                .await
                .map_err(LogError::io("open active segment"))?,
        );

        let tail = scan.tail_offset;
        let now = clock.now();
        let state = State {
            buffer: Buffer::default(),
            buffer_bytes: 0,
            in_flight_bytes: 0,
            oldest_buffered_at: None,
            in_flight: 0,
            encoded: VecDeque::new(),
            encoded_front_seq: 0,
            encoded_next_seq: 0,
            spare_frames: Vec::new(),
            spare_codecs: vec![Codecs::new(config.zstd_level, config.zstd_hash_log)],
            next_offset: tail,
            written_end: tail,
            durable_end: tail,
            hwm,
            persisted_hwm: hwm,
            log_start: scan.log_start,
            durable_log_start: scan.log_start,
            last_commit_ms: scan.last_committed_at_ms.unwrap_or(0),
            segments,
            poisoned: None,
            hwm_at_poison: None,
            closing: false,
            closed: false,
            unsynced_bytes: 0,
            last_sync_at: now,
            cache: read::FrameCache::new(config.frame_cache_frames),
            bad_frames: BTreeSet::new(),
            skip_counted: BTreeSet::new(),
            unlink_pending: Vec::new(),
        };
        state.check_invariants();
        let allocated = scan
            .segments
            .last()
            .filter(|s| s.base_offset == active_base)
            .map_or(0, |s| s.file_len);
        let io = write::Io::new(active, active_base, allocated);
        let log = Log {
            inner: Arc::new(Inner {
                fs,
                clock,
                dir,
                config,
                state: Mutex::new(state),
                encoded_ready: Arc::new(Notify::default()),
                io: async_lock::Mutex::new(io),
                hwm_file: async_lock::Mutex::new(hwm_file),
                notify: Arc::new(Notify::default()),
                flush_wanted: Arc::new(Notify::default()),
                metrics,
                retention_floor: std::sync::atomic::AtomicU64::new(u64::MAX),
                wall_floor: (scan.last_committed_at_ms.unwrap_or(0), now),
            }),
        };
        crate::alarm::log_opened(log.dir(), scan.log_start, hwm, tail);
        Ok((log, report))
    }

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
        LogError::Io { op, source }
    }
}

impl<F: Fs> Segment<F> {
    fn empty(base: u64) -> Self {
        Segment {
            name: layout::segment_file_name(base),
            frames: Vec::new(),
            len: 0,
            end_offset: base,
            last_committed_at_ms: None,
            reader: None,
        }
    }
}

/// Creates a segment file and makes its directory entry durable.
async fn create_segment_file<F: Fs>(fs: &F, dir: &Path, base: u64) -> Result<F::File, LogError> {
    let file = fs
        .open(
            &dir.join(layout::segment_file_name(base)),
            OpenMode::CreateNew,
        )
        .await
        .map_err(LogError::io("create segment"))?;
    fs.sync_dir(dir)
        .await
        .map_err(LogError::io("sync directory after segment create"))?;
    Ok(file)
}

/// Opens the `hwm` file (creating it durably when absent), writes `hwm` into it and
/// fsyncs it, whether or not recovery changed the value.
async fn open_hwm_file<F: Fs>(fs: &F, dir: &Path, hwm: u64) -> Result<F::File, LogError> {
    let path = dir.join(layout::HWM_FILE);
    let exists = fs.exists(&path).await.map_err(LogError::io("stat hwm"))?;
    let file = fs
        .open(
            &path,
            if exists {
                OpenMode::ReadWrite
            } else {
                OpenMode::CreateNew
            },
        )
        .await
        .map_err(LogError::io("open hwm"))?;
    // Written even when unchanged: the value read may sit only in the page cache of a
    // crashed process (a failed fsync leaves it there, clean), and this open builds on it.
    file.write_at(&word::encode(hwm), 0)
        .await
        .map_err(LogError::io("write hwm"))?;
    file.sync_data().await.map_err(LogError::io("sync hwm"))?;
    if !exists {
        fs.sync_dir(dir)
            .await
            .map_err(LogError::io("sync directory after hwm create"))?;
    }
    Ok(file)
}
