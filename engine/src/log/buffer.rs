//! The append buffer: records appended but not yet drained into a frame, laid out as
//! a frame's payload (FORMAT.md) so a drain hands the codec one slice.

use super::*;

/// Records appended but not yet drained into a frame, in offset order.
#[derive(Default)]
pub(super) struct Buffer {
    /// Each record's envelope behind its 4-byte big-endian length, back to back: the
    /// payload layout of a frame (FORMAT.md), so a drain hands the codec one slice
    /// instead of one allocation per record. Bytes before `start` are drained.
    pub(super) payload: Vec<u8>,
    pub(super) start: usize,
    /// Per record: the commit time inside its envelope, and the envelope's length.
    pub(super) records: VecDeque<(u64, usize)>,
}

impl Buffer {
    pub(super) fn len(&self) -> usize {
        self.records.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// A mark to [`Buffer::truncate`] back to.
    pub(super) fn mark(&self) -> (usize, usize) {
        (self.records.len(), self.payload.len())
    }

    pub(super) fn push(&mut self, key: &[u8], committed_at_ms: u64, payload: &[u8], size: usize) {
        let len = u32::try_from(size).expect("records are bounded below 4 GiB");
        self.payload.extend_from_slice(&len.to_be_bytes());
        envelope::encode(&mut self.payload, key, committed_at_ms, payload);
        self.records.push_back((committed_at_ms, size));
    }

    /// Drops the records pushed since `mark` (no take may have run in between).
    pub(super) fn truncate(&mut self, (records, payload_len): (usize, usize)) {
        self.records.truncate(records);
        self.payload.truncate(payload_len);
    }

    /// Takes the first `count` records: their payload bytes and the last one's commit
    /// time. Taking everything moves the buffer out without copying it; taking a part
    /// copies only that part (the rest is compacted once the drained prefix is at least
    /// half the buffer), so draining a backlog frame by frame stays linear.
    pub(super) fn take(&mut self, count: usize) -> (Vec<u8>, Option<u64>) {
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
    pub(super) fn recycle(&mut self, mut spent: Vec<u8>) {
        if self.payload.is_empty() && spent.capacity() > self.payload.capacity() {
            debug_assert_eq!(self.start, 0);
            spent.clear();
            self.payload = spent;
        }
    }
}
