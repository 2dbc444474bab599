//! The read side: records below the HWM, each frame re-checked against its CRC, with a
//! bounded cache of decoded frames. Wrong bytes are never returned: a frame that fails
//! its CRC after open, or a record whose envelope does not parse, is skipped and
//! counted.

use super::batch::{DecodedFrame, ReadBatch, RecordSpan, Records};
use super::metrics::add;
use super::{Log, LogError, Segment};
use crate::clock::Clock;
use crate::format::envelope;
use crate::format::frame::{Codec, Codecs, FRAME_HEADER_LEN, check_frame, record_ranges};
use crate::fs::{Fs, OpenMode, is_eio, read_exact_at};
use crate::recovery::FrameEntry;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

thread_local! {
    /// Decompression contexts reused across reads on this thread: creating a zstd
    /// context per read call cost more than decompressing a 1000-record frame with it.
    static CODECS: std::cell::RefCell<Codecs> = std::cell::RefCell::new(Codecs::default());
    /// The buffer the last compressed frame on this thread was read into: its bytes are
    /// dead once decompressed, and reusing it saves zero-filling a fresh one per frame.
    /// Taken out for the read (so no borrow spans an await), put back after.
    static READ_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A buffer larger than this is not kept for the next read: one huge frame would
/// otherwise pin its size on the thread for good.
const READ_BUFFER_KEPT_MAX: usize = 4 << 20;

/// What the read side keeps between reads, in the log's state: decoded frames, and the
/// frames whose damage was already counted (so each is counted once).
pub(super) struct ReadState {
    cache: FrameCache,
    /// Frames found bad at read time.
    bad_frames: BTreeSet<u64>,
    /// Frames whose unparseable records were already counted.
    skip_counted: BTreeSet<u64>,
}

impl ReadState {
    pub(super) fn new(cache_frames: usize) -> Self {
        ReadState {
            cache: FrameCache::new(cache_frames),
            bad_frames: BTreeSet::new(),
            skip_counted: BTreeSet::new(),
        }
    }

    /// Forgets every frame below `offset` (retention moved the log start).
    pub(super) fn forget_below(&mut self, offset: u64) {
        self.cache.invalidate_below(offset);
        self.bad_frames = self.bad_frames.split_off(&offset);
        self.skip_counted = self.skip_counted.split_off(&offset);
    }
}

/// Decoded frames by base offset, bounded; the oldest insertion is evicted first.
struct FrameCache {
    frames: BTreeMap<u64, (u64, Arc<DecodedFrame>)>,
    capacity: usize,
    tick: u64,
}

impl FrameCache {
    fn new(capacity: usize) -> Self {
        FrameCache {
            frames: BTreeMap::new(),
            capacity,
            tick: 0,
        }
    }

    fn get(&self, base: u64) -> Option<Arc<DecodedFrame>> {
        self.frames.get(&base).map(|(_, f)| Arc::clone(f))
    }

    fn insert(&mut self, base: u64, frame: Arc<DecodedFrame>) {
        self.tick += 1;
        if self.frames.len() >= self.capacity
            && let Some(oldest) = self
                .frames
                .iter()
                .min_by_key(|(_, (tick, _))| *tick)
                .map(|(base, _)| *base)
        {
            self.frames.remove(&oldest);
        }
        self.frames.insert(base, (self.tick, frame));
    }

    /// Drops every frame below `offset`.
    fn invalidate_below(&mut self, offset: u64) {
        self.frames = self.frames.split_off(&offset);
    }
}

enum Located<Fl> {
    Cached(Arc<DecodedFrame>, FrameEntry),
    Read(Arc<Fl>, FrameEntry),
    Open(String, u64, FrameEntry),
}

impl<F: Fs, C: Clock> Log<F, C> {
    /// Up to `max_records` records from `from`, all below the HWM at the time of the call.
    pub async fn read(&self, from: u64, max_records: usize) -> Result<ReadBatch, LogError> {
        let hwm = {
            let st = self.state();
            if from < st.log_start {
                return Err(LogError::OffsetBeforeLogStart {
                    requested: from,
                    log_start: st.log_start,
                });
            }
            st.hwm
        };
        let mut batch = ReadBatch {
            records: Records::default(),
            next_offset: from,
            skipped: Vec::new(),
        };
        while batch.records.len() < max_records && batch.next_offset < hwm {
            let offset = batch.next_offset;
            let located = match self.locate(offset) {
                Ok(located) => located,
                // Retention deleted the segment under us; the caller resumes at the start.
                Err(log_start) if batch.records.is_empty() && batch.skipped.is_empty() => {
                    return Err(LogError::OffsetBeforeLogStart {
                        requested: offset,
                        log_start,
                    });
                }
                Err(_) => return Ok(batch),
            };
            let decoded_here = matches!(located, Some(Located::Read(..) | Located::Open(..)));
            let (frame, entry) = match located {
                None => {
                    // A frame already found bad: skip it again without recounting.
                    let entry = self.frame_at(offset);
                    let end = entry.end_offset().min(hwm);
                    batch.skipped.extend(offset..end);
                    batch.next_offset = end;
                    continue;
                }
                Some(located) => self.load(located).await?,
            };
            let end = entry.end_offset().min(hwm);
            let Some(frame) = frame else {
                self.count_bad_frame(&entry);
                batch.skipped.extend(offset..end);
                batch.next_offset = end;
                continue;
            };
            assert_eq!(
                frame.base_offset, entry.base_offset,
                "cached frame misfiled"
            );
            // The parsed records from `offset` on, as runs of the frame; an unparseable
            // one is skipped.
            let mut at = offset;
            let mut run = at;
            while at < end && batch.records.len() + ((at - run) as usize) < max_records {
                let index = (at - entry.base_offset) as usize;
                if !frame.parsed(index) {
                    let base = entry.base_offset;
                    batch.records.push_run(&frame, (run - base) as usize, index);
                    batch.skipped.push(at);
                    run = at + 1;
                }
                at += 1;
            }
            let base = entry.base_offset;
            batch
                .records
                .push_run(&frame, (run - base) as usize, (at - base) as usize);
            batch.next_offset = at;
            if decoded_here {
                self.cache_decoded(frame, &entry, at < entry.end_offset());
            }
        }
        assert_served_below(&batch, from, hwm);
        Ok(batch)
    }

    /// Where the frame holding `offset` is: decoded in the cache, or in a segment file
    /// (open or not yet); `None` for a frame already found bad; `Err(log_start)` when
    /// retention has deleted it.
    fn locate(&self, offset: u64) -> Result<Option<Located<F::File>>, u64> {
        let st = self.state();
        if offset < st.log_start {
            return Err(st.log_start);
        }
        let (&base, segment) = st
            .segments
            .range(..=offset)
            .next_back()
            .expect("offsets above the log start lie in a segment");
        let index = segment.frames.partition_point(|f| f.end_offset() <= offset);
        let entry = *segment
            .frames
            .get(index)
            .expect("offsets below the HWM lie in a written frame");
        assert!(
            entry.base_offset <= offset,
            "frame {entry:?} starts after {offset}"
        );
        assert!(
            offset < entry.end_offset(),
            "frame {entry:?} ends before {offset}"
        );
        Ok(if st.reads.bad_frames.contains(&entry.base_offset) {
            None
        } else if let Some(frame) = st.reads.cache.get(entry.base_offset) {
            Some(Located::Cached(frame, entry))
        } else if let Some(reader) = &segment.reader {
            Some(Located::Read(Arc::clone(reader), entry))
        } else {
            Some(Located::Open(segment.name.clone(), base, entry))
        })
    }

    /// The located frame, decoded (`None` when unreadable), opening its segment for
    /// reading first when no reader is open yet.
    async fn load(
        &self,
        located: Located<F::File>,
    ) -> Result<(Option<Arc<DecodedFrame>>, FrameEntry), LogError> {
        Ok(match located {
            Located::Cached(frame, entry) => (Some(frame), entry),
            Located::Read(reader, entry) => (self.load_frame(&reader, &entry).await?, entry),
            Located::Open(name, base, entry) => {
                let reader = Arc::new(
                    self.inner
                        .fs
                        .open(&self.inner.dir.join(&name), OpenMode::Read)
                        .await
                        .map_err(LogError::io("open segment for reading"))?,
                );
                if let Some(segment) = self.state().segments.get_mut(&base) {
                    segment.reader = Some(Arc::clone(&reader));
                }
                (self.load_frame(&reader, &entry).await?, entry)
            }
        })
    }

    /// Counts a frame found unreadable, once: its records are skipped from now on.
    fn count_bad_frame(&self, entry: &FrameEntry) {
        let mut st = self.state();
        if st.reads.bad_frames.insert(entry.base_offset) {
            add(
                &self.inner.metrics.records_skipped,
                u64::from(entry.record_count),
            );
            crate::alarm::frame_skipped(
                &self.inner.dir,
                entry.base_offset,
                u64::from(entry.record_count),
                entry.position,
            );
        }
    }

    fn frame_at(&self, offset: u64) -> FrameEntry {
        let st = self.state();
        let (_, segment) = st
            .segments
            .range(..=offset)
            .next_back()
            .expect("offset lies in a segment");
        let index = segment.frames.partition_point(|f| f.end_offset() <= offset);
        *segment.frames.get(index).expect("offset lies in a frame")
    }

    /// Reads, CRC-checks and decodes one frame; `None` when it is unreadable.
    async fn load_frame(
        &self,
        reader: &F::File,
        entry: &FrameEntry,
    ) -> Result<Option<Arc<DecodedFrame>>, LogError> {
        assert!(
            entry.frame_len > FRAME_HEADER_LEN as u64,
            "a frame holds its header and a payload: {entry:?}"
        );
        let mut bytes = READ_BUFFER.take();
        // Zero-fills only past the buffer's old length; the read overwrites the rest.
        bytes.resize(entry.frame_len as usize, 0);
        if let Err(e) = read_exact_at(reader, &mut bytes, entry.position).await {
            // A frame cut short or on a sector the disk cannot read (a latent sector
            // error) is unreadable like one that fails its CRC: skipped and counted.
            if e.kind() == std::io::ErrorKind::UnexpectedEof || is_eio(&e) {
                return Ok(None);
            }
            return Err(LogError::Io {
                op: "read frame",
                source: e,
            });
        }
        // The contexts are borrowed only for this synchronous call, never across an await.
        let decoded = CODECS.with(|codecs| match codecs.try_borrow_mut() {
            Ok(mut codecs) => decode(&mut bytes, entry, &mut codecs),
            Err(_) => decode(&mut bytes, entry, &mut Codecs::default()),
        });
        if bytes.capacity() <= READ_BUFFER_KEPT_MAX {
            READ_BUFFER.set(bytes);
        }
        add(&self.inner.metrics.frames_decoded, 1);
        let Some(decoded) = decoded else {
            return Ok(None);
        };
        let decoded = Arc::new(decoded);
        let unparseable = decoded.unparseable() as u64;
        let mut st = self.state();
        if unparseable > 0 && st.reads.skip_counted.insert(entry.base_offset) {
            // Count unparseable records once, the first time the frame is decoded.
            add(&self.inner.metrics.records_skipped, unparseable);
            crate::alarm::records_skipped(&self.inner.dir, entry.base_offset, unparseable);
        }
        Ok(Some(decoded))
    }

    /// Keeps a frame just decoded when a reader is likely to want it again: the read
    /// stopped inside it (its reader comes back for the rest), or it is one of the
    /// log's newest `frame_cache_frames` frames, which the readers at the tail share. A
    /// scan that reads older frames whole passes through without evicting the tail's.
    fn cache_decoded(&self, frame: Arc<DecodedFrame>, entry: &FrameEntry, stopped_inside: bool) {
        let mut st = self.state();
        let capacity = self.inner.config.frame_cache_frames;
        if stopped_inside || among_newest_frames(&st.segments, entry.base_offset, capacity) {
            st.reads.cache.insert(entry.base_offset, frame);
        }
    }
}

/// Whether the frame at `base` is one of the `n` newest frames written.
fn among_newest_frames<F: Fs>(segments: &BTreeMap<u64, Segment<F>>, base: u64, n: usize) -> bool {
    if n == 0 {
        return false;
    }
    let mut left = n;
    for segment in segments.values().rev() {
        if let Some(nth) = segment.frames.len().checked_sub(left) {
            return base >= segment.frames[nth].base_offset;
        }
        left -= segment.frames.len();
    }
    true
}

/// Decodes a frame's bytes, checking everything the scanner checked. An uncompressed
/// frame takes its own bytes as the payload (no copy, `bytes` left empty); a zstd frame
/// is decompressed and leaves `bytes` to be reused.
fn decode(bytes: &mut Vec<u8>, entry: &FrameEntry, codecs: &mut Codecs) -> Option<DecodedFrame> {
    let (header, stored) = check_frame(bytes).ok()?;
    if header.base_offset != entry.base_offset
        || header.record_count != entry.record_count
        || header.frame_len() != entry.frame_len
    {
        return None;
    }
    let payload = match header.codec {
        Codec::None => Bytes::from(std::mem::take(bytes)).slice(FRAME_HEADER_LEN..),
        Codec::Zstd => Bytes::from(codecs.decode_payload(&header, stored).ok()?),
    };
    // One pass over the payload: each record's length prefix, then its envelope.
    let mut spans = Vec::with_capacity(header.record_count.min(1 << 16) as usize);
    for range in record_ranges(&payload, header.record_count) {
        let range = range.ok()?;
        spans.push(span_of(&payload, range));
    }
    assert_eq!(
        spans.len(),
        header.record_count as usize,
        "one span per record"
    );
    Some(DecodedFrame::new(entry.base_offset, payload, spans))
}

/// Where the parts of the record at `range` of `payload` lie; `None` where its envelope
/// does not parse.
fn span_of(payload: &[u8], range: Range<usize>) -> Option<RecordSpan> {
    let env = envelope::decode(payload.get(range.clone())?).ok()?;
    // The payload runs to the end of the record, the 8-byte commit time sits before it,
    // and the key before that.
    let payload_start = range.end - env.payload.len();
    let key_start = payload_start - envelope::COMMITTED_AT_LEN - env.key.len();
    // A decoded payload is at most FRAME_BYTES_MAX (256 MiB): its offsets fit in 32 bits.
    let at = |x: usize| u32::try_from(x).expect("a frame's offsets fit in 32 bits");
    Some(RecordSpan {
        key: at(key_start),
        payload: at(payload_start),
        end: std::num::NonZeroU32::new(at(range.end)).expect("a record ends past its commit time"),
    })
}

/// What a read returns, whatever the disk held: records and skips at ascending offsets
/// from `from`, none of them both, all below the HWM the read started with, and
/// `next_offset` past them.
fn assert_served_below(batch: &ReadBatch, from: u64, hwm: u64) {
    // Run by run: a run's records are consecutive offsets of one frame.
    let mut expected = from;
    for run in batch.records.offset_ranges() {
        assert!(
            run.start >= expected,
            "record {} served twice or out of order",
            run.start
        );
        assert!(
            run.end <= hwm,
            "record {} served at or above the HWM {hwm}",
            run.end - 1
        );
        let next_skip = batch.skipped.partition_point(|s| *s < run.start);
        assert!(
            batch.skipped.get(next_skip).is_none_or(|s| *s >= run.end),
            "a record of {run:?} also skipped"
        );
        expected = run.end;
    }
    assert!(
        batch.skipped.windows(2).all(|w| w[0] < w[1]),
        "skips out of order"
    );
    assert!(
        batch.skipped.iter().all(|s| *s >= from && *s < hwm),
        "skip outside the read"
    );
    assert!(
        batch.next_offset >= expected,
        "next offset behind what was served"
    );
    assert!(
        batch.next_offset <= hwm.max(from),
        "next offset past the HWM"
    );
}
