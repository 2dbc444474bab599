//! The encode queue: frames between the buffer and the file. A commit drains records in
//! offset order into a reserved slot, fills it once compressed (with no lock held), and
//! the writer takes filled slots from the front, so frames reach the file in offset
//! order however many commits compress at once. The queue also keeps the frame buffers
//! and codec contexts encodes reuse.
//!
//! Invariants (`check_invariants`): the slots are numbered without a gap from the front
//! to the next sequence number; the buffer pool stays within its bound.

use crate::format::frame::{Codecs, FrameHeader};
use std::collections::VecDeque;

/// Frame buffers kept for reuse between encodes (two stages in flight need two).
pub(super) const SPARE_FRAMES: usize = 2;

/// A frame encoded for writing.
pub(super) struct Encoded {
    pub(super) header: FrameHeader,
    pub(super) bytes: Vec<u8>,
    /// Bytes of the records' envelopes it holds (for the compression counters).
    pub(super) uncompressed: usize,
    pub(super) last_committed_at_ms: Option<u64>,
}

pub(super) struct EncodeQueue {
    /// `None` while a caller is still encoding it. Slot `i` has sequence number
    /// `front_seq + i`.
    slots: VecDeque<Option<Encoded>>,
    front_seq: u64,
    next_seq: u64,
    spare_frames: Vec<Vec<u8>>,
    spare_codecs: Vec<Codecs>,
}

impl EncodeQueue {
    pub(super) fn new(codecs: Codecs) -> Self {
        EncodeQueue {
            slots: VecDeque::new(),
            front_seq: 0,
            next_seq: 0,
            spare_frames: Vec::new(),
            spare_codecs: vec![codecs],
        }
    }

    /// Reserves the next slot; returns its sequence number and a frame buffer and codec
    /// contexts to encode with (reused when there are spares, else from `new_codecs`).
    pub(super) fn reserve(
        &mut self,
        new_codecs: impl FnOnce() -> Codecs,
    ) -> (u64, Vec<u8>, Codecs) {
        let slot = self.next_seq;
        self.next_seq += 1;
        self.slots.push_back(None);
        let frame = self.spare_frames.pop().unwrap_or_default();
        let codecs = self.spare_codecs.pop().unwrap_or_else(new_codecs);
        (slot, frame, codecs)
    }

    /// Fills the slot `reserve` returned.
    pub(super) fn fill(&mut self, slot: u64, frame: Encoded) {
        assert!(
            slot >= self.front_seq,
            "slot {slot} was taken before it was filled"
        );
        let index = (slot - self.front_seq) as usize;
        let place = self
            .slots
            .get_mut(index)
            .expect("a reserved slot stays until it is filled");
        assert!(place.is_none(), "slot {slot} filled twice");
        *place = Some(frame);
    }

    /// Gives back the codec contexts an encode used.
    pub(super) fn return_codecs(&mut self, codecs: Codecs) {
        self.spare_codecs.push(codecs);
    }

    /// Whether the front slot holds a frame ready for writing.
    pub(super) fn front_ready(&self) -> bool {
        matches!(self.slots.front(), Some(Some(_)))
    }

    /// Takes the front frame; only when [`EncodeQueue::front_ready`].
    pub(super) fn take_front(&mut self) -> Encoded {
        self.front_seq += 1;
        self.slots
            .pop_front()
            .flatten()
            .expect("the front frame is encoded")
    }

    /// Puts back a frame taken and not written: it goes first again.
    pub(super) fn put_back(&mut self, frame: Encoded) {
        self.front_seq -= 1;
        self.slots.push_front(Some(frame));
    }

    /// Keeps a written frame's buffer for the next encode, within the pool's bound.
    pub(super) fn recycle(&mut self, bytes: Vec<u8>) {
        if self.spare_frames.len() < SPARE_FRAMES {
            self.spare_frames.push(bytes);
        }
    }

    /// No slot reserved, filled or not.
    pub(super) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub(super) fn check_invariants(&self) {
        assert_eq!(
            self.front_seq + self.slots.len() as u64,
            self.next_seq,
            "encode queue slots out of step with their numbers"
        );
        assert!(
            self.spare_frames.len() <= SPARE_FRAMES,
            "frame buffer pool over its bound"
        );
    }
}
