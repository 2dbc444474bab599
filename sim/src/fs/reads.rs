//! [`ReadMarks`]: which bytes of a file the running incarnation has read, so the world
//! can tell whether damage landing while an open runs came before or after the open
//! read those bytes (a read between two pauses takes effect at one instant).
//!
//! Invariant: `ranges` are sorted, non-empty, and neither overlap nor touch; they all
//! belong to `epoch`, and a mark of a later epoch forgets them first.

use std::ops::Range;

#[derive(Debug, Default)]
pub(crate) struct ReadMarks {
    epoch: u64,
    ranges: Vec<Range<u64>>,
}

impl ReadMarks {
    /// A read in `epoch` returned the bytes `range`.
    pub(crate) fn mark(&mut self, epoch: u64, range: Range<u64>) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.ranges.clear();
        }
        if range.is_empty() {
            return;
        }
        // Reads are mostly sequential: the common case extends the last range.
        if let Some(last) = self.ranges.last_mut()
            && last.start <= range.start
            && range.start <= last.end
        {
            last.end = last.end.max(range.end);
        } else {
            let at = self.ranges.partition_point(|r| r.end < range.start);
            let mut merged = range;
            let mut until = at;
            while until < self.ranges.len() && self.ranges[until].start <= merged.end {
                merged.start = merged.start.min(self.ranges[until].start);
                merged.end = merged.end.max(self.ranges[until].end);
                until += 1;
            }
            self.ranges.splice(at..until, [merged]);
        }
        debug_assert!(
            self.ranges
                .windows(2)
                .all(|w| w[0].start < w[0].end && w[0].end < w[1].start)
        );
    }

    /// Whether a read in `epoch` returned any byte of `range`.
    pub(crate) fn any(&self, epoch: u64, range: &Range<u64>) -> bool {
        epoch == self.epoch
            && self
                .ranges
                .iter()
                .any(|r| r.start < range.end && range.start < r.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_merge_and_a_new_epoch_forgets_them() {
        let mut marks = ReadMarks::default();
        marks.mark(1, 10..20);
        marks.mark(1, 40..50);
        marks.mark(1, 0..5);
        assert_eq!(marks.ranges, vec![0..5, 10..20, 40..50]);
        marks.mark(1, 18..41);
        assert_eq!(marks.ranges, vec![0..5, 10..50]);
        marks.mark(1, 5..10);
        assert_eq!(marks.ranges, vec![0..50]);
        assert!(marks.any(1, &(49..60)));
        assert!(!marks.any(1, &(50..60)));
        assert!(!marks.any(2, &(0..1)));
        marks.mark(2, 60..61);
        assert!(!marks.any(2, &(0..50)));
        assert!(marks.any(2, &(60..61)));
    }
}
