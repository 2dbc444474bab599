//! What a read returns: records as views of their decoded frames, with no copy and no
//! per-record reference count.
//!
//! Invariants (asserted where a batch is built and where a record is made):
//! - a decoded frame holds one span per record of its header, and a span lies inside
//!   the frame's payload with the key before the payload;
//! - a batch's runs name only records whose span parsed, at ascending offsets, each
//!   once; `len` is the number of records they name.
//!
//! A [`Record`] (owned: its key and payload are `Bytes` views of the frame, one atomic
//! reference count each) is made only when a caller asks for one (`into_iter`,
//! [`RecordRef::to_record`]); iterating `&batch.records` costs no allocation and no
//! atomic, which is most of what a cold read spent besides zstd.

use bytes::Bytes;
use std::fmt;
use std::sync::Arc;

/// One record as a consumer keeps it. Its key and payload are views of the decoded
/// frame's buffer, not copies: holding either keeps the whole decoded frame (one
/// flush's worth of records) in memory, so a caller that keeps a few records for long
/// copies them out (`to_vec`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub offset: u64,
    pub committed_at_ms: u64,
    pub key: Bytes,
    pub payload: Bytes,
}

/// One record of a batch, borrowed from its decoded frame.
#[derive(Clone, Copy)]
pub struct RecordRef<'a> {
    pub offset: u64,
    pub committed_at_ms: u64,
    pub key: &'a [u8],
    pub payload: &'a [u8],
    frame: &'a Bytes,
}

impl RecordRef<'_> {
    /// The record as an owned [`Record`], its key and payload views of the same frame.
    pub fn to_record(&self) -> Record {
        Record {
            offset: self.offset,
            committed_at_ms: self.committed_at_ms,
            key: self.frame.slice_ref(self.key),
            payload: self.frame.slice_ref(self.payload),
        }
    }
}

impl fmt::Debug for RecordRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordRef")
            .field("offset", &self.offset)
            .field("committed_at_ms", &self.committed_at_ms)
            .field("key", &Bytes::copy_from_slice(self.key))
            .field("payload", &Bytes::copy_from_slice(self.payload))
            .finish()
    }
}

impl PartialEq for RecordRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.offset, self.committed_at_ms, self.key, self.payload)
            == (
                other.offset,
                other.committed_at_ms,
                other.key,
                other.payload,
            )
    }
}

impl Eq for RecordRef<'_> {}

/// A decoded frame: its uncompressed payload, and for each record where its key and
/// payload lie in it, or `None` where its envelope does not parse.
pub(super) struct DecodedFrame {
    pub(super) base_offset: u64,
    payload: Bytes,
    spans: Vec<Option<RecordSpan>>,
}

/// Where one parsed record lies in its frame's payload: the key from `key`, the 8-byte
/// commit time before `payload`, the payload to `end` (never 0: a record holds at least
/// its commit time, which also lets `Option<RecordSpan>` take 12 bytes, not 32). The
/// commit time is read from the payload when the record is taken. Offsets fit in 32
/// bits: a frame is at most `FRAME_BYTES_MAX` (256 MiB).
#[derive(Clone, Copy)]
pub(super) struct RecordSpan {
    pub(super) key: u32,
    pub(super) payload: u32,
    pub(super) end: std::num::NonZeroU32,
}

const _: () = assert!(
    std::mem::size_of::<Option<RecordSpan>>() == 12,
    "a span costs 12 bytes a record in every cached frame"
);

impl DecodedFrame {
    pub(super) fn new(base_offset: u64, payload: Bytes, spans: Vec<Option<RecordSpan>>) -> Self {
        for span in spans.iter().flatten() {
            assert!(
                span.key as usize + crate::format::envelope::COMMITTED_AT_LEN
                    <= span.payload as usize
                    && span.payload <= span.end.get()
                    && span.end.get() as usize <= payload.len(),
                "a record's span lies outside its frame or out of order"
            );
        }
        DecodedFrame {
            base_offset,
            payload,
            spans,
        }
    }

    /// Records in the frame, parsed or not.
    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the record at `index` parsed.
    pub(super) fn parsed(&self, index: usize) -> bool {
        self.spans.get(index).is_some_and(Option::is_some)
    }

    /// Records whose envelope does not parse.
    pub(super) fn unparseable(&self) -> usize {
        self.spans.iter().filter(|s| s.is_none()).count()
    }

    /// The parsed record at `index`.
    fn get(&self, index: usize) -> RecordRef<'_> {
        self.record(self.base_offset + index as u64, &self.spans[index])
    }

    /// The record at `offset`, whose span is `span`.
    #[inline]
    fn record<'a>(&'a self, offset: u64, span: &Option<RecordSpan>) -> RecordRef<'a> {
        let span = span.expect("a batch names only parsed records");
        let key_end = span.payload as usize - crate::format::envelope::COMMITTED_AT_LEN;
        let committed_at: [u8; 8] = self.payload[key_end..span.payload as usize]
            .try_into()
            .expect("the commit time's 8 bytes sit before the payload");
        RecordRef {
            offset,
            committed_at_ms: u64::from_be_bytes(committed_at),
            key: &self.payload[span.key as usize..key_end],
            payload: &self.payload[span.payload as usize..span.end.get() as usize],
            frame: &self.payload,
        }
    }
}

/// Consecutive parsed records `from..to` (indices) of one frame.
#[derive(Clone)]
struct Run {
    frame: Arc<DecodedFrame>,
    from: u32,
    to: u32,
}

/// The records of a batch, in offset order.
#[derive(Clone, Default)]
pub struct Records {
    runs: Vec<Run>,
    len: usize,
}

impl Records {
    /// Adds the parsed records `from..to` (indices) of `frame`, after every record
    /// already in the batch.
    pub(super) fn push_run(&mut self, frame: &Arc<DecodedFrame>, from: usize, to: usize) {
        if from == to {
            return;
        }
        assert!(
            from < to && to <= frame.len(),
            "a run lies inside its frame"
        );
        assert!(
            (from..to).all(|i| frame.parsed(i)),
            "a run names only parsed records"
        );
        if let Some(last) = self.runs.last() {
            let end = last.frame.base_offset + u64::from(last.to);
            assert!(
                frame.base_offset + from as u64 >= end,
                "records are added in offset order"
            );
        }
        self.runs.push(Run {
            frame: Arc::clone(frame),
            from: from as u32,
            to: to as u32,
        });
        self.len += to - from;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records, borrowed.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            runs: self.runs.iter(),
            frame: None,
            spans: [].iter(),
            offset: 0,
        }
    }

    /// The offsets of the batch's records, one range per run of consecutive records.
    pub fn offset_ranges(&self) -> impl Iterator<Item = std::ops::Range<u64>> + '_ {
        self.runs.iter().map(|run| {
            let base = run.frame.base_offset;
            base + u64::from(run.from)..base + u64::from(run.to)
        })
    }

    /// The `index`-th record of the batch (not its offset).
    pub fn get(&self, mut index: usize) -> Option<RecordRef<'_>> {
        for run in &self.runs {
            let n = (run.to - run.from) as usize;
            if index < n {
                return Some(run.frame.get(run.from as usize + index));
            }
            index -= n;
        }
        None
    }

    pub fn first(&self) -> Option<RecordRef<'_>> {
        self.get(0)
    }

    pub fn last(&self) -> Option<RecordRef<'_>> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }
}

/// The records of a batch, borrowed ([`Records::iter`]).
pub struct Iter<'a> {
    runs: std::slice::Iter<'a, Run>,
    /// The frame of the run being walked, its spans left and the next one's offset.
    frame: Option<&'a DecodedFrame>,
    spans: std::slice::Iter<'a, Option<RecordSpan>>,
    offset: u64,
}

impl<'a> Iterator for Iter<'a> {
    type Item = RecordRef<'a>;
    #[inline]
    fn next(&mut self) -> Option<RecordRef<'a>> {
        loop {
            if let Some(frame) = self.frame
                && let Some(span) = self.spans.next()
            {
                self.offset += 1;
                return Some(frame.record(self.offset - 1, span));
            }
            let run = self.runs.next()?;
            self.frame = Some(&run.frame);
            self.spans = run.frame.spans[run.from as usize..run.to as usize].iter();
            self.offset = run.frame.base_offset + u64::from(run.from);
        }
    }
}

impl<'a> IntoIterator for &'a Records {
    type Item = RecordRef<'a>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The records of a batch, owned ([`Record`]s made as they are taken).
pub struct IntoIter {
    runs: std::vec::IntoIter<Run>,
    run: Option<Run>,
    at: u32,
}

impl Iterator for IntoIter {
    type Item = Record;
    fn next(&mut self) -> Option<Record> {
        loop {
            if let Some(run) = &self.run
                && self.at < run.to
            {
                self.at += 1;
                return Some(run.frame.get(self.at as usize - 1).to_record());
            }
            let run = self.runs.next()?;
            self.at = run.from;
            self.run = Some(run);
        }
    }
}

impl IntoIterator for Records {
    type Item = Record;
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        IntoIter {
            runs: self.runs.into_iter(),
            run: None,
            at: 0,
        }
    }
}

impl fmt::Debug for Records {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for Records {}

/// The result of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadBatch {
    pub records: Records,
    /// Where the next read continues (past skipped records too).
    pub next_offset: u64,
    /// Offsets in the range read that were skipped as unreadable.
    pub skipped: Vec<u64>,
}
