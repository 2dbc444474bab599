//! A log's mutable state under its one mutex (`Log::state`), its segment map, and the
//! invariants `check_invariants` asserts after every change: the offsets in order (log
//! start <= HWM <= durable end <= written end <= next offset), the durable log start
//! never past the log start, the persisted HWM never past the HWM, a poisoned log's HWM
//! frozen, the segment map running from the log start to the written end without a gap,
//! the buffer and the records in flight in step with the log end, and the encode queue's
//! own (`queue.rs`).

use super::*;

/// One segment file.
pub(super) struct Segment<F: Fs> {
    pub(super) name: String,
    pub(super) frames: Vec<FrameEntry>,
    pub(super) len: u64,
    pub(super) end_offset: u64,
    pub(super) last_committed_at_ms: Option<u64>,
    pub(super) reader: Option<Arc<F::File>>,
}

impl<F: Fs> Segment<F> {
    pub(super) fn empty(base: u64) -> Self {
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

pub(super) struct State<F: Fs> {
    pub(super) buffer: Buffer,
    /// Bytes of the buffered envelopes (without their length prefixes).
    pub(super) buffer_bytes: usize,
    /// Bytes of the envelopes drained into frames not yet written: they still count
    /// against `buffer_bytes_max`.
    pub(super) in_flight_bytes: usize,
    pub(super) oldest_buffered_at: Option<Duration>,
    /// Records drained from the buffer into frames not yet written (being encoded, or
    /// queued in `encoded`). A failed encode or write leaves them here: never written,
    /// never acknowledged.
    pub(super) in_flight: u64,
    /// Frames drained from the buffer, in offset order, waiting for the write lock.
    pub(super) queue: queue::EncodeQueue,
    pub(super) next_offset: u64,
    pub(super) written_end: u64,
    pub(super) durable_end: u64,
    pub(super) hwm: u64,
    pub(super) persisted_hwm: u64,
    /// Reads are refused below it from the moment retention takes segments out of the map.
    pub(super) log_start: u64,
    /// The log start as the disk holds it, which `status` reports: retention raises it
    /// only once its unlinks are durable, so a crash never shows an earlier one.
    pub(super) durable_log_start: u64,
    pub(super) last_commit_ms: u64,
    pub(super) segments: BTreeMap<u64, Segment<F>>,
    pub(super) poisoned: Option<String>,
    /// The HWM at the moment of poisoning: it never moves past this afterwards.
    pub(super) hwm_at_poison: Option<u64>,
    pub(super) closing: bool,
    pub(super) closed: bool,
    pub(super) unsynced_bytes: u64,
    pub(super) last_sync_at: Duration,
    /// The read side's cache and damage counts (`read.rs`).
    pub(super) reads: read::ReadState,
    /// Segment files the reaper took out of the log but has not yet seen unlinked and
    /// the directory fsynced (a sweep dropped or failed part-way): the next sweep
    /// deletes them first, so no file outlives its place in the log.
    pub(super) unlink_pending: Vec<String>,
    /// Group commit's forecast of the committers coming back (`gather.rs`).
    pub(super) gather: super::gather::Gather,
}

impl<F: Fs> State<F> {
    pub(super) fn check_not_poisoned(&self) -> Result<(), LogError> {
        match &self.poisoned {
            Some(reason) => Err(LogError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    pub(super) fn check_writable(&self) -> Result<(), LogError> {
        self.check_not_poisoned()?;
        if self.closing || self.closed {
            return Err(LogError::Closed);
        }
        Ok(())
    }

    /// Whether records below `limit` are still in the buffer (not yet drained into a
    /// frame).
    pub(super) fn has_undrained_below(&self, limit: u64) -> bool {
        !self.buffer.is_empty() && self.written_end + self.in_flight < limit
    }

    pub(super) fn check_invariants(&self) {
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
            self.persisted_hwm <= self.hwm,
            "persisted HWM {} above the HWM {}",
            self.persisted_hwm,
            self.hwm
        );
        self.check_segments();
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
        self.queue.check_invariants();
    }

    /// The segment map starts at the log start and ends at the written end (the active
    /// segment is last); with debug assertions on, each segment starts where the
    /// previous one ends and its frames are contiguous (a walk over every frame).
    fn check_segments(&self) {
        let (Some((&first, _)), Some((_, last))) = (
            self.segments.first_key_value(),
            self.segments.last_key_value(),
        ) else {
            panic!("a log always has its active segment");
        };
        assert_eq!(
            first, self.log_start,
            "the first segment does not start the log"
        );
        assert_eq!(
            last.end_offset, self.written_end,
            "the active segment does not end at the written end"
        );
        if cfg!(debug_assertions) {
            let mut expected = first;
            for (&base, segment) in &self.segments {
                assert_eq!(
                    base, expected,
                    "segment {base} does not follow its predecessor"
                );
                let mut position = 0;
                for frame in &segment.frames {
                    assert_eq!(frame.base_offset, expected, "frame offsets out of step");
                    assert_eq!(frame.position, position, "frame positions out of step");
                    expected = frame.end_offset();
                    position = frame.end_position();
                }
                assert_eq!(segment.len, position, "segment length out of step");
                assert_eq!(segment.end_offset, expected, "segment end out of step");
            }
        }
    }
}
