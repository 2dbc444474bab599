//! What every [`PartitionScan`] must satisfy, whatever the bytes it read: the scanner
//! asserts it on each scan it returns, and the fuzz target and its tests rely on that.

use super::PartitionScan;

impl PartitionScan {
    /// Panics unless the scan is self-consistent:
    /// - `log_start <= hwm <= tail_offset`;
    /// - every kept frame starts where the previous one ended, in offsets and in bytes,
    ///   and a segment's valid extent ends at its last frame;
    /// - the kept segments' offsets run from `log_start` to `tail_offset` without a gap;
    /// - a segment's valid extent, zero tail and junk tail fit in its file, and fill it
    ///   when recovery neither truncates nor refuses;
    /// - a truncation cuts the last kept segment exactly at its valid extent, and the
    ///   first record it discards is the tail offset.
    ///
    /// Costs one pass over the frame list, which the scan has just read from disk.
    pub fn assert_consistent(&self) {
        let hwm = self.hwm();
        assert!(self.log_start <= hwm, "log_start above hwm: {self:?}");
        assert!(hwm <= self.tail_offset, "hwm above tail: {self:?}");
        let mut expected = self.log_start;
        for segment in &self.segments {
            assert_eq!(segment.base_offset, expected, "segment gap: {self:?}");
            let mut position = 0;
            for frame in &segment.frames {
                assert_eq!(frame.base_offset, expected, "frame offsets: {self:?}");
                assert_eq!(frame.position, position, "frame positions: {self:?}");
                expected = frame.end_offset();
                position = frame.end_position();
            }
            assert_eq!(position, segment.valid_len, "valid extent: {self:?}");
            assert_eq!(expected, segment.end_offset, "segment end: {self:?}");
            let used = segment.valid_len + segment.zero_tail + segment.junk_tail;
            assert!(used <= segment.file_len, "tails past the file: {self:?}");
            if self.truncation.is_none() && self.corruption.is_none() {
                assert_eq!(used, segment.file_len, "unexplained bytes: {self:?}");
            }
        }
        assert_eq!(expected, self.tail_offset, "tail offset: {self:?}");
        assert_eq!(self.hidden_records(), self.tail_offset - hwm);
        assert!(self.skipped_records() <= hwm - self.log_start);
        if let Some(truncation) = &self.truncation {
            assert_eq!(truncation.offset, self.tail_offset, "cut offset: {self:?}");
            let last = self.segments.last();
            assert!(
                last.is_none_or(|s| s.file_name == truncation.segment),
                "cut outside the last kept segment: {self:?}"
            );
            assert!(
                last.is_none_or(|s| s.valid_len == truncation.position),
                "cut inside the valid extent: {self:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FrameEntry, PartitionScan, SegmentScan};

    fn frame(position: u64, base_offset: u64) -> FrameEntry {
        FrameEntry {
            position,
            base_offset,
            record_count: 2,
            frame_len: 50,
        }
    }

    /// One segment of two frames (offsets 0..4, bytes 0..100) and a zero tail of 20.
    fn consistent() -> PartitionScan {
        PartitionScan {
            segments: vec![SegmentScan {
                file_name: "00000000000000000000.log".into(),
                base_offset: 0,
                file_len: 120,
                valid_len: 100,
                zero_tail: 20,
                junk_tail: 0,
                junk_reason: None,
                end_offset: 4,
                frames: vec![frame(0, 0), frame(50, 2)],
                last_committed_at_ms: None,
            }],
            persisted_hwm: Some(3),
            log_start: 0,
            tail_offset: 4,
            truncation: None,
            corruption: None,
            unparseable: Vec::new(),
            last_committed_at_ms: None,
        }
    }

    #[test]
    fn a_consistent_scan_passes() {
        consistent().assert_consistent();
    }

    #[test]
    #[should_panic(expected = "frame offsets")]
    fn a_gap_between_frames_panics() {
        let mut scan = consistent();
        scan.segments[0].frames[1].base_offset = 3;
        scan.assert_consistent();
    }

    #[test]
    #[should_panic(expected = "frame positions")]
    fn overlapping_frames_panic() {
        let mut scan = consistent();
        scan.segments[0].frames[1].position = 49;
        scan.assert_consistent();
    }

    #[test]
    #[should_panic(expected = "unexplained bytes")]
    fn bytes_no_tail_explains_panic_when_nothing_is_cut() {
        let mut scan = consistent();
        scan.segments[0].file_len = 121;
        scan.assert_consistent();
    }

    #[test]
    #[should_panic(expected = "tail offset")]
    fn a_tail_past_the_frames_panics() {
        let mut scan = consistent();
        scan.tail_offset = 5;
        scan.assert_consistent();
    }
}
