//! The write side, in two stages: encoding (drain one frame's worth of the buffer into
//! a reserved slot of an offset-ordered queue, then compress it with no lock held) and
//! writing (the queue's ready prefix in order, segment roll, fsync and verification,
//! under the write lock). So one commit can compress while another's fsync is in
//! flight, and concurrent commits compress on every core.

use super::config::PREALLOCATE_BYTES_DEFAULT;
use super::metrics::add;
use super::queue::Encoded;
use super::verify::{assert_contiguous, verify_frame};
use super::{Log, LogError, Segment};
use crate::clock::Clock;
use crate::format::frame::{Codec, Codecs, assert_frame_is};
use crate::format::layout;
use crate::fs::{File, Fs, create_or_reuse_empty};
use crate::recovery::FrameEntry;
use std::sync::{Arc, LazyLock};

/// Zeros for preallocation (the default chunk's worth), shared by every log and never
/// written. A fresh `vec![0; 1 MiB]` per zero-fill is a 1 MiB memset once the allocator
/// serves it from its heap (about 30,000 instructions per commit at batch 1000, by
/// callgrind); this one is allocated once, as pages the kernel zero-fills on first use.
static ZEROS: LazyLock<Box<[u8]>> =
    LazyLock::new(|| vec![0u8; PREALLOCATE_BYTES_DEFAULT as usize].into_boxed_slice());

/// A reserved queue slot not yet filled. Dropped armed (an encode error, a panic), it
/// poisons the log: those records are never written, so nothing past them can be, and
/// every waiter wakes to the poison. (No await lies between reserving and filling, so a
/// dropped future never leaves one.)
struct Reserved<'l, F: Fs, C: Clock> {
    log: &'l Log<F, C>,
    armed: bool,
}

impl<F: Fs, C: Clock> Drop for Reserved<'_, F, C> {
    fn drop(&mut self) {
        if self.armed {
            if self.log.state().poisoned.is_none() {
                let _ = self.log.poison(
                    crate::alarm::CANCELLED_OP,
                    std::io::Error::other("stopped with records in flight (cancelled or panicked)"),
                );
            }
            self.log.inner.encoded_ready.notify_all();
            self.log.inner.notify.notify_all();
        }
    }
}

/// A frame taken off the queue for writing. Dropped before it is written (a `sync`
/// future cancelled at the write's await, or a panic), it goes back to the front of
/// the queue, where the next writer finds it: a cancelled commit leaves nothing in
/// flight for good and poisons nothing. A frame that failed to write has poisoned the
/// log already; putting it back changes nothing then.
struct Taken<'l, F: Fs, C: Clock> {
    log: &'l Log<F, C>,
    frame: Option<Encoded>,
}

impl<F: Fs, C: Clock> Drop for Taken<'_, F, C> {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            let mut st = self.log.state();
            assert_eq!(
                st.written_end, frame.header.base_offset,
                "a frame not written goes back where it was taken"
            );
            st.queue.put_back(frame);
            drop(st);
            self.log.inner.encoded_ready.notify_all();
        }
    }
}

/// State owned by whoever holds the write lock.
pub(super) struct Io<F: Fs> {
    active: Arc<F::File>,
    active_base: u64,
    /// Length of the active segment's file: its frames plus the zero-filled space
    /// preallocated after them.
    allocated: u64,
    /// Cleared for the rest of a segment when zero-filling it failed.
    preallocate: bool,
    /// Frames of the active segment written but not yet fsynced and verified.
    unverified: Vec<FrameEntry>,
    /// The active segment's directory entry is not yet known durable (the roll that
    /// created it was dropped before its directory fsync): fsynced before any commit.
    dir_unsynced: bool,
    /// An fsync of the active segment was issued and its caller dropped before it saw
    /// the result. Linux reports an fsync error once and marks the pages clean, so the
    /// unverified frames may never reach the disk: they are written again before the
    /// next fsync vouches for them.
    fsync_in_doubt: bool,
    /// Where frames are re-read for verification, kept between syncs (bounded by the
    /// largest frame, at most `FRAME_BYTES_MAX` plus its header).
    verify_buf: Vec<u8>,
}

impl<F: Fs> Io<F> {
    pub(super) fn new(active: Arc<F::File>, active_base: u64, allocated: u64) -> Self {
        Io {
            active,
            active_base,
            allocated,
            preallocate: true,
            unverified: Vec::new(),
            dir_unsynced: false,
            fsync_in_doubt: false,
            verify_buf: Vec::new(),
        }
    }
}

impl<F: Fs, C: Clock> Log<F, C> {
    /// Drains up to one frame's worth of buffered records (at most `flush_records`
    /// records and about `flush_bytes`) when records below `limit` are still buffered,
    /// encodes them as one frame and queues it for [`Log::write_encoded`]. No lock is
    /// held while compressing: the drain reserves the frame's place in the queue (in
    /// offset order) under the state lock, so concurrent commits compress on as many
    /// cores as there are, and one compresses while another's fsync is in flight.
    /// Returns `false` when there was nothing to drain.
    pub(super) async fn encode_frame(&self, limit: u64) -> Result<bool, LogError> {
        let config = &self.inner.config;
        let (base, slot, payload, take, bytes, last_committed_at_ms, mut frame, mut codecs, left) = {
            let mut st = self.state();
            st.check_not_poisoned()?;
            if !st.has_undrained_below(limit) {
                return Ok(false);
            }
            let base = st.written_end + st.in_flight;
            let mut take = 0usize;
            let mut bytes = 0usize;
            for &(_, size) in &st.buffer.records {
                if take > 0 && (take >= config.flush_records || bytes + size > config.flush_bytes) {
                    break;
                }
                take += 1;
                bytes += size;
            }
            // The size of the first record a partial drain leaves, for the account
            // below (raised once the lock is released).
            let left = st.buffer.records.get(take).map(|&(_, next)| next);
            let (payload, last) = st.buffer.take(take);
            st.buffer_bytes -= bytes;
            st.oldest_buffered_at = if st.buffer.is_empty() {
                None
            } else {
                Some(self.inner.clock.now())
            };
            // The records leave the buffer here; until their frame is written they are
            // in flight (encoding or queued), and `written_end` still marks where the
            // first of them goes.
            st.in_flight += take as u64;
            st.in_flight_bytes += bytes;
            let (slot, frame, codecs) = st
                .queue
                .reserve(|| Codecs::new(config.zstd_level, config.zstd_hash_log));
            (base, slot, payload, take, bytes, last, frame, codecs, left)
        };
        if let Some(next_bytes) = left {
            debug_assert!(take >= config.flush_records || bytes + next_bytes > config.flush_bytes);
            crate::alarm::drain_partial(&self.inner.dir, base, take, bytes, next_bytes);
        }
        // Whatever happens from here on (an encode error, a panic), the reserved slot
        // must not stay empty: writers would wait on it. (There is no await before it
        // is filled, so a dropped future cannot leave it.)
        let mut reserved = Reserved {
            log: self,
            armed: true,
        };
        frame.clear();
        let record_count = u32::try_from(take).expect("flush_records fits a frame's count");
        let codec = if payload.len() < config.compress_min_bytes {
            Codec::None
        } else {
            config.codec
        };
        let encoded = codecs.encode_payload_frame(codec, base, record_count, &payload, &mut frame);
        {
            let mut st = self.state();
            st.buffer.recycle(payload);
            st.queue.return_codecs(codecs);
            match encoded {
                Ok(header) => st.queue.fill(
                    slot,
                    Encoded {
                        header,
                        bytes: frame,
                        uncompressed: bytes,
                        last_committed_at_ms,
                    },
                ),
                Err(e) => {
                    drop(st);
                    return Err(self.poison("encode frame", std::io::Error::other(e)));
                }
            }
        }
        reserved.armed = false;
        self.inner.encoded_ready.notify_all();
        Ok(true)
    }

    /// Writes the queued frames to the active segment, in order, up to the first one
    /// still being encoded, rolling first when one would overflow the segment. With
    /// `sync_each`, fsyncs and commits after each frame.
    pub(super) async fn write_encoded(
        &self,
        io: &mut Io<F>,
        sync_each: bool,
    ) -> Result<(), LogError> {
        loop {
            let frame = {
                let mut st = self.state();
                st.check_not_poisoned()?;
                if !st.queue.front_ready() {
                    return Ok(());
                }
                st.queue.take_front()
            };
            // Off the queue and not yet in the file: the guard puts it back if this call
            // is dropped before the write lands.
            let mut taken = Taken {
                log: self,
                frame: Some(frame),
            };
            self.write_frame(io, taken.frame.as_ref().expect("taken above"))
                .await?;
            let written = taken.frame.take().expect("taken above");
            self.state().queue.recycle(written.bytes);
            if sync_each {
                self.sync_locked(io).await?;
            }
        }
    }

    /// Writes queued frames until every record below `target` is written, waiting for
    /// frames other callers are still encoding (they hold no lock this waits for).
    pub(super) async fn write_encoded_through(
        &self,
        io: &mut Io<F>,
        target: u64,
    ) -> Result<(), LogError> {
        loop {
            let ready = self.inner.encoded_ready.listen();
            self.write_encoded(io, false).await?;
            let encode_here = {
                let st = self.state();
                st.check_not_poisoned()?;
                if st.hwm >= target || st.written_end >= target {
                    return Ok(());
                }
                // Nothing in flight covers the rest (a caller drained only part of it):
                // encode it here instead of waiting.
                st.queue.is_empty() && st.has_undrained_below(target)
            };
            if encode_here {
                self.encode_frame(target).await?;
            } else {
                ready.await;
            }
        }
    }

    /// Writes one encoded frame where the active segment's frames end.
    /// Cancel-safe: nothing is recorded until the frame's bytes are in the file, and
    /// from there on nothing awaits; a call dropped before leaves the state as it was
    /// (a roll already made, zeros already written), and the frame is written again at
    /// the same place.
    async fn write_frame(&self, io: &mut Io<F>, frame: &Encoded) -> Result<(), LogError> {
        let config = &self.inner.config;
        let &Encoded {
            header,
            bytes: ref frame_bytes,
            uncompressed,
            last_committed_at_ms,
        } = frame;
        let base = header.base_offset;
        let frame_len = header.frame_len();
        assert!(header.record_count > 0, "an empty frame is never written");
        assert_eq!(
            self.state().written_end,
            base,
            "frames are written in offset order"
        );
        assert_frame_is(frame_bytes, &header);

        let active_len = self.segment_len(io.active_base);
        if active_len > 0 && active_len + frame_len > config.segment_bytes {
            self.roll(io, base).await?;
        }
        let position = self.segment_len(io.active_base);
        assert!(
            position == 0 || position + frame_len <= config.segment_bytes,
            "a frame that overflows its segment goes first in a new one"
        );
        if position + frame_len > io.allocated {
            self.preallocate(io, position + frame_len, frame_len).await;
        }
        if let Err(e) = io.active.write_at(frame_bytes, position).await {
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
            assert_eq!(st.written_end, base, "frames are written in offset order");
            st.written_end = header.end_offset();
            st.in_flight -= u64::from(header.record_count);
            st.in_flight_bytes -= uncompressed;
            st.unsynced_bytes += frame_len;
            st.check_invariants();
        }
        io.unverified.push(entry);
        let m = &self.inner.metrics;
        add(&m.frames_written, 1);
        add(&m.records_written, u64::from(header.record_count));
        add(&m.bytes_stored, frame_len);
        add(&m.bytes_uncompressed, uncompressed as u64);
        tracing::trace!(
            base,
            records = header.record_count,
            frame_len,
            "frame written"
        );
        Ok(())
    }

    /// Zero-fills `preallocate_bytes` of the active segment after `frame_end`, where the
    /// frame about to be written ends (never past `segment_bytes`). The zeros become
    /// durable with the frame's fsync; the frames after it then overwrite allocated
    /// space, whose fdatasync needs no inode update, instead of growing the file, whose
    /// fdatasync commits the inode through the filesystem journal. Frames larger than a
    /// quarter of the chunk are written past the end as they are: zero-filling first
    /// would write every byte twice to save one journal commit per frame, and at that
    /// size the write costs more than the journal commit.
    async fn preallocate(&self, io: &mut Io<F>, frame_end: u64, frame_len: u64) {
        let config = &self.inner.config;
        let chunk = config.preallocate_bytes;
        if !io.preallocate || chunk == 0 || frame_len > chunk / 4 {
            return;
        }
        let target = (frame_end + chunk).min(config.segment_bytes.max(frame_end));
        if target <= frame_end {
            return;
        }
        let len = (target - frame_end) as usize;
        assert!(
            frame_end > self.segment_len(io.active_base),
            "zeros go after the frame about to be written, never over a written one"
        );
        let fresh;
        let zeros = match ZEROS.get(..len) {
            Some(shared) => shared,
            None => {
                fresh = vec![0u8; len];
                fresh.as_slice()
            }
        };
        match io.active.write_at(zeros, frame_end).await {
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
                // Part of the zeros may have landed: sealing must trim whatever did.
                io.allocated = io.active.len().await.unwrap_or(u64::MAX).max(frame_end);
            }
        }
    }

    fn segment_len(&self, base: u64) -> u64 {
        self.state().segments.get(&base).map_or(0, |s| s.len)
    }

    /// Seals the active segment (fsync, verify, commit its frames) and starts a new one
    /// named by its first offset, with its directory entry made durable.
    async fn roll(&self, io: &mut Io<F>, new_base: u64) -> Result<(), LogError> {
        assert!(
            new_base > io.active_base,
            "a new segment starts past the active one"
        );
        self.sync_locked(io).await?;
        assert!(
            io.unverified.is_empty(),
            "a segment is sealed only once verified"
        );
        // Sealing trims the preallocated space: a sealed segment ends at its last frame.
        // Trimmed even when the page cache shows nothing past it: the platter may hold
        // more (a write a crashed process left pending, a write that landed astray),
        // and the next open judges the bytes past a sealed segment's end.
        let len = self.segment_len(io.active_base);
        assert!(len > 0, "an empty segment is never sealed");
        if let Err(e) = io.active.set_len(len).await {
            return Err(self.poison("trim sealed segment", e));
        }
        if let Err(e) = io.active.sync_data().await {
            return Err(self.poison("fsync trimmed segment", e));
        }
        // Recorded as the active segment in the same step as the handle arrives (no
        // await between); a roll dropped before that leaves at most an empty file, which
        // the next one reuses. The directory entry is fsynced here or, if this call is
        // dropped first, before any commit.
        let path = self.inner.dir.join(layout::segment_file_name(new_base));
        let file = match create_or_reuse_empty(&self.inner.fs, &path).await {
            Ok(file) => file,
            Err(e) => return Err(self.poison("create segment", e)),
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
        io.dir_unsynced = true;
        self.sync_dir_if_needed(io).await?;
        add(&self.inner.metrics.segments_rolled, 1);
        tracing::debug!(new_base, "segment rolled");
        Ok(())
    }

    /// Writes every unverified frame again with the bytes the file holds (checked
    /// first), so that the next fsync persists them even if an earlier one failed
    /// unseen and left their pages clean.
    async fn rewrite_unverified(&self, io: &mut Io<F>) -> Result<(), LogError> {
        for index in 0..io.unverified.len() {
            let entry = io.unverified[index];
            if let Err(reason) = verify_frame(io.active.as_ref(), &entry, &mut io.verify_buf).await
            {
                return Err(self.poison(
                    crate::alarm::VERIFY_BEFORE_REWRITE_OP,
                    std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
                ));
            }
            assert_eq!(
                io.verify_buf.len() as u64,
                entry.frame_len,
                "rewrite its bytes only"
            );
            if let Err(e) = io.active.write_at(&io.verify_buf, entry.position).await {
                return Err(self.poison("rewrite frame", e));
            }
        }
        Ok(())
    }

    /// Fsyncs the partition directory when the active segment's entry may not be
    /// durable yet.
    async fn sync_dir_if_needed(&self, io: &mut Io<F>) -> Result<(), LogError> {
        if io.dir_unsynced {
            if let Err(e) = self.inner.fs.sync_dir(&self.inner.dir).await {
                return Err(self.poison(crate::alarm::SYNC_DIR_OP, e));
            }
            io.dir_unsynced = false;
        }
        Ok(())
    }

    /// Fsyncs the active segment, re-reads and CRC-checks the frames written since the
    /// last sync, and only then advances the HWM and wakes waiters.
    pub(super) async fn sync_locked(&self, io: &mut Io<F>) -> Result<(), LogError> {
        let Some(last) = io.unverified.last().copied() else {
            return Ok(());
        };
        assert_contiguous(&io.unverified);
        assert!(
            io.unverified[0].base_offset >= self.state().durable_end,
            "frames verified once are not verified again"
        );
        self.sync_dir_if_needed(io).await?;
        if io.fsync_in_doubt {
            self.rewrite_unverified(io).await?;
        }
        io.fsync_in_doubt = true;
        let started = self.inner.clock.now();
        let synced = io.active.sync_data().await;
        let took = self.inner.clock.now().saturating_sub(started);
        io.fsync_in_doubt = false;
        if let Err(e) = synced {
            return Err(self.poison("fsync segment", e));
        }
        add(&self.inner.metrics.fsyncs, 1);
        // The list is cleared only once every frame passed: a call dropped part-way
        // (a cancelled `sync`) leaves it whole, and the next sync fsyncs and verifies
        // again (both are idempotent) before anything is committed.
        for index in 0..io.unverified.len() {
            let entry = io.unverified[index];
            if let Err(reason) = verify_frame(io.active.as_ref(), &entry, &mut io.verify_buf).await
            {
                return Err(self.poison(
                    crate::alarm::VERIFY_AFTER_FSYNC_OP,
                    std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
                ));
            }
        }
        io.unverified.clear();
        {
            let mut st = self.state();
            st.check_not_poisoned()?;
            assert!(
                last.end_offset() <= st.written_end,
                "verified past what was written"
            );
            st.durable_end = st.durable_end.max(last.end_offset());
            st.hwm = st.durable_end;
            st.unsynced_bytes = 0;
            st.last_sync_at = self.inner.clock.now();
            let (hwm, now) = (st.hwm, st.last_sync_at);
            st.gather.fsynced(hwm, now, took);
            st.check_invariants();
        }
        add(&self.inner.metrics.commits, 1);
        self.inner.notify.notify_all();
        Ok(())
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
