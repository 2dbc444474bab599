//! The write side: one frame per drain, segment roll, fsync and verification.

use super::metrics::add;
use super::{Log, LogError, Segment, create_segment_file};
use crate::clock::Clock;
use crate::format::frame::{Codecs, FRAME_HEADER_LEN, FrameHeader};
use crate::fs::{File, Fs, read_exact_at};
use crate::recovery::FrameEntry;
use std::sync::Arc;

/// State owned by whoever holds the write lock.
pub(super) struct Io<F: Fs> {
    active: Arc<F::File>,
    active_base: u64,
    /// Length of the active segment's file: its frames plus the zero-filled space
    /// preallocated after them.
    allocated: u64,
    /// Cleared for the rest of a segment when zero-filling it failed.
    preallocate: bool,
    codecs: Codecs,
    /// Frames of the active segment written but not yet fsynced and verified.
    unverified: Vec<FrameEntry>,
    frame_buf: Vec<u8>,
    /// Where frames are re-read for verification, kept between syncs (bounded by the
    /// largest frame, at most `FRAME_BYTES_MAX` plus its header).
    verify_buf: Vec<u8>,
}

impl<F: Fs> Io<F> {
    pub(super) fn new(
        active: Arc<F::File>,
        active_base: u64,
        allocated: u64,
        codecs: Codecs,
    ) -> Self {
        Io {
            active,
            active_base,
            allocated,
            preallocate: true,
            codecs,
            unverified: Vec::new(),
            frame_buf: Vec::new(),
            verify_buf: Vec::new(),
        }
    }
}

impl<F: Fs, C: Clock> Log<F, C> {
    /// Drains up to one frame's worth of buffered records below `limit` (at most
    /// `flush_records` records and about `flush_bytes`), encodes them as one frame and
    /// writes it to the active segment, rolling first when it would overflow.
    /// Returns `false` when there was nothing to drain.
    pub(super) async fn write_frame(&self, io: &mut Io<F>, limit: u64) -> Result<bool, LogError> {
        let config = &self.inner.config;
        let (base, payload, take, bytes, last_committed_at_ms) = {
            let mut st = self.state();
            st.check_not_poisoned()?;
            if st.buffer.is_empty() || st.written_end >= limit || st.in_flight > 0 {
                return Ok(false);
            }
            let mut take = 0usize;
            let mut bytes = 0usize;
            for &(_, size) in &st.buffer.records {
                if take > 0 && (take >= config.flush_records || bytes + size > config.flush_bytes) {
                    break;
                }
                take += 1;
                bytes += size;
            }
            let (payload, last) = st.buffer.take(take);
            st.buffer_bytes -= bytes;
            st.oldest_buffered_at = if st.buffer.is_empty() {
                None
            } else {
                Some(self.inner.clock.now())
            };
            // The records leave the buffer here; until the frame is written they are in
            // flight, and `written_end` still marks where they go.
            st.in_flight = take as u64;
            (st.written_end, payload, take, bytes, last)
        };
        io.frame_buf.clear();
        let record_count = u32::try_from(take).expect("flush_records fits a frame's count");
        let header = io
            .codecs
            .encode_payload_frame(
                config.codec,
                base,
                record_count,
                &payload,
                &mut io.frame_buf,
            )
            .map_err(|e| self.poison("encode frame", std::io::Error::other(e)))?;
        self.state().buffer.recycle(payload);
        let frame_len = header.frame_len();

        let active_len = self.segment_len(io.active_base);
        if active_len > 0 && active_len + frame_len > config.segment_bytes {
            self.roll(io, base).await?;
        }
        let position = self.segment_len(io.active_base);
        if position + frame_len > io.allocated {
            self.preallocate(io, position + frame_len).await;
        }
        if let Err(e) = io.active.write_at(&io.frame_buf, position).await {
            return Err(self.poison("write frame", e));
        }
        io.allocated = io.allocated.max(position + frame_len);
        let entry = FrameEntry {
            position,
            base_offset: base,
            record_count: header.record_count,
            frame_len,
        };
        {
            let mut st = self.state();
            let segment = st
                .segments
                .get_mut(&io.active_base)
                .expect("the active segment is indexed");
            assert_eq!(
                segment.end_offset, base,
                "frame does not follow its segment"
            );
            assert_eq!(
                segment.len, position,
                "frame does not follow its segment's bytes"
            );
            segment.frames.push(entry);
            segment.len += frame_len;
            segment.end_offset = header.end_offset();
            segment.last_committed_at_ms = last_committed_at_ms.or(segment.last_committed_at_ms);
            st.written_end = header.end_offset();
            st.in_flight = 0;
            st.unsynced_bytes += frame_len;
            st.check_invariants();
        }
        io.unverified.push(entry);
        let m = &self.inner.metrics;
        add(&m.frames_written, 1);
        add(&m.records_written, u64::from(header.record_count));
        add(&m.bytes_stored, frame_len);
        add(&m.bytes_uncompressed, bytes as u64);
        tracing::trace!(
            base,
            records = header.record_count,
            frame_len,
            "frame written"
        );
        Ok(true)
    }

    /// Zero-fills `preallocate_bytes` of the active segment after `frame_end`, where the
    /// frame about to be written ends (never past `segment_bytes`). The zeros become
    /// durable with the frame's fsync; the frames after it then overwrite allocated
    /// space, whose fdatasync needs no inode update, instead of growing the file, whose
    /// fdatasync commits the inode through the filesystem journal. Frames larger than a
    /// quarter of the chunk are written past the end as they are: zero-filling first
    /// would write every byte twice to save one journal commit per frame, and at that
    /// size the write costs more than the journal commit.
    async fn preallocate(&self, io: &mut Io<F>, frame_end: u64) {
        let config = &self.inner.config;
        let chunk = config.preallocate_bytes;
        let frame_len = frame_end - self.segment_len(io.active_base);
        if !io.preallocate || chunk == 0 || frame_len > chunk / 4 {
            return;
        }
        let target = (frame_end + chunk).min(config.segment_bytes.max(frame_end));
        if target <= frame_end {
            return;
        }
        let zeros = vec![0u8; (target - frame_end) as usize];
        match io.active.write_at(&zeros, frame_end).await {
            Ok(()) => {
                io.allocated = target;
                add(&self.inner.metrics.bytes_preallocated, target - frame_end);
            }
            // Zeros after the last frame are harmless however much of them landed (a
            // scan reads them as the segment's end), so a failed preallocation costs
            // only speed: this segment's frames grow the file from here on.
            Err(e) => {
                tracing::warn!(error = %e, segment = io.active_base, "preallocation failed; writing without it");
                io.preallocate = false;
            }
        }
    }

    fn segment_len(&self, base: u64) -> u64 {
        self.state().segments.get(&base).map_or(0, |s| s.len)
    }

    /// Seals the active segment (fsync, verify, commit its frames) and starts a new one
    /// named by its first offset, with its directory entry made durable.
    async fn roll(&self, io: &mut Io<F>, new_base: u64) -> Result<(), LogError> {
        self.sync_locked(io).await?;
        // Sealing trims the preallocated space: a sealed segment ends at its last frame.
        let len = self.segment_len(io.active_base);
        if io.allocated > len {
            if let Err(e) = io.active.set_len(len).await {
                return Err(self.poison("trim sealed segment", e));
            }
            if let Err(e) = io.active.sync_data().await {
                return Err(self.poison("fsync trimmed segment", e));
            }
        }
        let file = match create_segment_file(&self.inner.fs, &self.inner.dir, new_base).await {
            Ok(file) => file,
            Err(LogError::Io { op, source }) => return Err(self.poison(op, source)),
            Err(other) => return Err(other),
        };
        {
            let mut st = self.state();
            let previous = st
                .segments
                .last_key_value()
                .map(|(_, s)| s.end_offset)
                .expect("a segment exists");
            assert_eq!(
                previous, new_base,
                "new segment does not follow the last one"
            );
            st.segments.insert(new_base, Segment::empty(new_base));
        }
        io.active = Arc::new(file);
        io.active_base = new_base;
        io.allocated = 0;
        io.preallocate = true;
        add(&self.inner.metrics.segments_rolled, 1);
        tracing::debug!(new_base, "segment rolled");
        Ok(())
    }

    /// Fsyncs the active segment, re-reads and CRC-checks the frames written since the
    /// last sync, and only then advances the HWM and wakes waiters.
    pub(super) async fn sync_locked(&self, io: &mut Io<F>) -> Result<(), LogError> {
        let Some(last) = io.unverified.last().copied() else {
            return Ok(());
        };
        if let Err(e) = io.active.sync_data().await {
            return Err(self.poison("fsync segment", e));
        }
        add(&self.inner.metrics.fsyncs, 1);
        for entry in std::mem::take(&mut io.unverified) {
            if let Err(reason) = verify_frame(io.active.as_ref(), &entry, &mut io.verify_buf).await
            {
                return Err(self.poison(
                    "verify frame after fsync",
                    std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
                ));
            }
        }
        {
            let mut st = self.state();
            st.check_not_poisoned()?;
            st.durable_end = st.durable_end.max(last.end_offset());
            st.hwm = st.durable_end;
            st.unsynced_bytes = 0;
            st.last_sync_at = self.inner.clock.now();
            st.check_invariants();
        }
        add(&self.inner.metrics.commits, 1);
        self.inner.notify.notify_all();
        Ok(())
    }
}

/// Re-reads one frame into `bytes` and checks its header and CRC (the paired check of
/// the write).
async fn verify_frame<Fl: File>(
    file: &Fl,
    entry: &FrameEntry,
    bytes: &mut Vec<u8>,
) -> Result<(), String> {
    // Stale bytes from an earlier frame are overwritten in full by the exact read below.
    bytes.resize(entry.frame_len as usize, 0);
    read_exact_at(file, bytes, entry.position)
        .await
        .map_err(|e| e.to_string())?;
    let (head, stored) = bytes.split_at(FRAME_HEADER_LEN);
    let head: &[u8; FRAME_HEADER_LEN] = head.try_into().map_err(|_| "short header".to_string())?;
    let header = FrameHeader::parse(head).map_err(|e| e.to_string())?;
    if header.base_offset != entry.base_offset || header.record_count != entry.record_count {
        return Err(format!(
            "frame at {} reads back as offsets {}+{}, wrote {}+{}",
            entry.position,
            header.base_offset,
            header.record_count,
            entry.base_offset,
            entry.record_count
        ));
    }
    header.check_crc(stored).map_err(|e| e.to_string())
}
