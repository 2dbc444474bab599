//! `layout`: the engine writes the shapes the spec states (storage-engine.md, "The
//! flusher pipeline" and "Segments are capped"), judged on the segment files it left
//! once the run went quiet ([`EventKind::LayoutObserved`], the first of each
//! partition):
//! - F1: a frame holds at most `flush_records` records;
//! - F2: a frame of two or more records holds at most `flush_bytes` of record bytes
//!   (one record larger than that is a frame of its own);
//! - F3: a zstd frame's payload is at least `compress_min_bytes`, and its topic's codec
//!   is zstd;
//! - S1: a segment of two or more frames is at most `segment_bytes` long;
//! - S2: a segment is rolled only when the next frame would overflow it: a segment's
//!   frames plus its successor's first frame exceed `segment_bytes`;
//! - F4: a drain that left records buffered filled its frame ([`drain`]: the engine's
//!   account of the drain, which the bytes on disk cannot show);
//! - F5: in a zstd topic, a raw frame of at least `compress_min_bytes` is one zstd at the
//!   topic's settings does not shrink (the world compresses it as the engine would);
//! - S3: a sealed segment (one with a successor) ends at its last frame.
//!
//! Each segment is walked on its own, so damage in one hides nothing of the others.
//! What may excuse, each naming its event and covering one segment:
//! - S2: an open found the successor listed and empty (the durable tail at its base,
//!   [`EventKind::DiskAtOpen`]) and the engine did not create that file again since:
//!   its first frame was then written into a segment that already existed, with no
//!   roll to judge;
//! - S2, S3: the decoder stopped inside the segment (damage): not judged, counted;
//! - S3: a lost fsync, a misdirected write or a failed fsync (EIO) named the segment's
//!   file, a power loss followed, and no open of the partition succeeded after that
//!   power loss
//!   (`log_opened`): the platter kept bytes past the trim, and the page cache took them
//!   back at the power loss (a process crash leaves the cache), with no open to trim them
//!   again (a refusal, a run that ended with the node down);
//! - S3: the segment was sealed (its successor created) after the power loss before
//!   the last one, and every open of the partition since the last power loss refused it
//!   (R3): a seal's trim still pending at a kill is lost at a power loss, and the
//!   engine repairs nothing in a partition it refuses to open.
//!
//! Frames a cut or retention removed before the end are not judged: the shape is read
//! once, at the end of the run.

mod drain;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::facts::Facts;
use super::{RecordRef, Violation};
use crate::history::{
    Alarm, EventKind, FaultKind, Incarnation, LayoutKnobs, Offset, SegmentLayout, TopicPartition,
};
use crate::reference::partition::segment_base_of_path;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LayoutReport {
    pub partitions: u64,
    pub segments: u64,
    pub frames: u64,
    /// Successive segment pairs judged by S2.
    pub rolls_judged: u64,
    /// `(partition, successor's base, DiskAtOpen index)`: S2 excused by an open that
    /// found the successor empty.
    pub rolls_excused: Vec<(TopicPartition, Offset, usize)>,
    /// `(partition, base, event index)`: S3 excused by a lost fsync, misdirected write
    /// or failed fsync on the file that no successful open followed, or by the refusal
    /// of every open since the last power loss.
    pub tails_excused: Vec<(TopicPartition, Offset, usize)>,
    /// Segments the decoder stopped inside (damage), not judged by S2 and S3.
    pub damaged: u64,
    /// Drains that left records buffered, judged by F4.
    pub drains_judged: u64,
    /// Drains that left records buffered on a partition the world did not list at the
    /// end: no knobs to judge them by.
    pub drains_unjudged: u64,
    pub violations: Vec<Violation>,
}

pub fn check(facts: &Facts<'_>) -> LayoutReport {
    let mut report = LayoutReport::default();
    let events = facts.history.events();
    let found_empty = found_empty(facts);
    // The first listing of each partition: the world lists again at the very end,
    // after retention's wait, which only deleted segments since.
    let mut judged: BTreeSet<&TopicPartition> = BTreeSet::new();
    for (index, event) in events.iter().enumerate() {
        if let EventKind::LayoutObserved {
            tp,
            knobs,
            segments,
        } = &event.kind
            && judged.insert(tp)
        {
            let judge = Judge {
                facts,
                tp,
                knobs,
                index,
                found_empty: &found_empty,
            };
            judge.partition(segments, &mut report);
        }
    }
    drain::check(facts, &mut report);
    report
}

/// `(partition, base) -> DiskAtOpen index` for each segment an open found listed with
/// no valid frame (the durable tail at its base) and the engine did not create again
/// after that open. A restart records the partition's `DiskAtOpen` and
/// `SegmentsListed` in either order.
fn found_empty(facts: &Facts<'_>) -> BTreeMap<(TopicPartition, Offset), usize> {
    // Every image an open may have read: a second `DiskAtOpen` (`while_open`) follows
    // damage that landed during the open.
    let mut tails: Vec<((TopicPartition, Incarnation), Offset, usize)> = Vec::new();
    let mut listed: BTreeMap<(TopicPartition, Incarnation), &[Offset]> = BTreeMap::new();
    let mut created: BTreeMap<(TopicPartition, Offset), usize> = BTreeMap::new();
    for (index, event) in facts.history.events().iter().enumerate() {
        let key = |tp: &TopicPartition| (tp.clone(), event.incarnation);
        match &event.kind {
            EventKind::DiskAtOpen { tp, disk, .. } => {
                tails.push((key(tp), disk.tail, index));
            }
            EventKind::SegmentsListed { tp, bases } => {
                listed.insert(key(tp), bases);
            }
            EventKind::SegmentCreated { tp, base } => {
                created.insert((tp.clone(), *base), index);
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for (key, tail, index) in tails {
        let segment = (key.0.clone(), tail);
        let recreated = created.get(&segment).is_some_and(|&c| c > index);
        if !recreated && listed.get(&key).is_some_and(|bases| bases.contains(&tail)) {
            out.entry(segment).or_insert(index);
        }
    }
    out
}

struct Judge<'a, 'h> {
    facts: &'a Facts<'h>,
    tp: &'a TopicPartition,
    knobs: &'a LayoutKnobs,
    /// The `LayoutObserved` event.
    index: usize,
    found_empty: &'a BTreeMap<(TopicPartition, Offset), usize>,
}

impl Judge<'_, '_> {
    fn partition(&self, segments: &[SegmentLayout], report: &mut LayoutReport) {
        report.partitions += 1;
        for (k, segment) in segments.iter().enumerate() {
            report.segments += 1;
            report.frames += u64::from(segment.frames);
            self.frames(segment, report);
            self.codec(segment, report);
            if segment.frames > 1 && segment.valid_len > self.knobs.segment_bytes {
                self.violation(
                    report,
                    segment,
                    format!(
                        "S1: segment {} holds {} frames in {} bytes, over segment_bytes {}",
                        segment.base, segment.frames, segment.valid_len, self.knobs.segment_bytes
                    ),
                );
            }
            if segment.damaged {
                report.damaged += 1;
                continue;
            }
            let Some(next) = segments.get(k + 1) else {
                continue;
            };
            self.sealed_tail(segment, report);
            if !next.damaged && next.frames > 0 && next.base == segment.end {
                self.roll(segment, next, report);
            }
        }
    }

    /// F1-F3 over one segment's frames.
    fn frames(&self, segment: &SegmentLayout, report: &mut LayoutReport) {
        let k = self.knobs;
        if u64::from(segment.records_max) > k.flush_records {
            self.violation(
                report,
                segment,
                format!(
                    "F1: a frame of segment {} holds {} records, over flush_records {}",
                    segment.base, segment.records_max, k.flush_records
                ),
            );
        }
        if segment.multi_record_bytes_max > k.flush_bytes {
            self.violation(
                report,
                segment,
                format!(
                    "F2: a frame of segment {} holds {} record bytes in several records, over \
                     flush_bytes {}",
                    segment.base, segment.multi_record_bytes_max, k.flush_bytes
                ),
            );
        }
        if let Some(min) = segment.zstd_payload_min
            && (!k.zstd || min < k.compress_min_bytes)
        {
            self.violation(
                report,
                segment,
                format!(
                    "F3: segment {} holds a zstd frame of {min} payload bytes (topic codec \
                     zstd: {}, compress_min_bytes {})",
                    segment.base, k.zstd, k.compress_min_bytes
                ),
            );
        }
    }

    /// F5: a zstd topic stores raw only what zstd does not shrink.
    fn codec(&self, segment: &SegmentLayout, report: &mut LayoutReport) {
        let Some((position, payload, zstd)) = segment.compressible_raw else {
            return;
        };
        self.violation(
            report,
            segment,
            format!(
                "F5: segment {} holds a raw frame at byte {position} of {payload} payload \
                 bytes, which zstd at the topic's settings stores in {zstd} \
                 (compress_min_bytes {})",
                segment.base, self.knobs.compress_min_bytes
            ),
        );
    }

    /// S3: a sealed segment ends at its last frame.
    fn sealed_tail(&self, segment: &SegmentLayout, report: &mut LayoutReport) {
        if segment.file_len == segment.valid_len {
            return;
        }
        if let Some(fault) = self
            .untrimmed_by(segment.base, segment.end)
            .or_else(|| self.refused_since_power_loss(segment.end))
        {
            report
                .tails_excused
                .push((self.tp.clone(), segment.base, fault));
            return;
        }
        self.violation(
            report,
            segment,
            format!(
                "S3: sealed segment {} is {} bytes long but its frames end at {}",
                segment.base, segment.file_len, segment.valid_len
            ),
        );
    }

    /// S2: `next` was rolled only because its first frame would overflow `segment`.
    fn roll(&self, segment: &SegmentLayout, next: &SegmentLayout, report: &mut LayoutReport) {
        report.rolls_judged += 1;
        if segment.valid_len + next.first_frame_len > self.knobs.segment_bytes {
            return;
        }
        if let Some(&open) = self.found_empty.get(&(self.tp.clone(), next.base)) {
            report
                .rolls_excused
                .push((self.tp.clone(), next.base, open));
            return;
        }
        self.violation(
            report,
            next,
            format!(
                "S2: segment {} was rolled at {} bytes although its successor's first frame \
                 ({} bytes) fit within segment_bytes {}",
                segment.base, segment.valid_len, next.first_frame_len, self.knobs.segment_bytes
            ),
        );
    }

    /// The last lost fsync, misdirected write or failed fsync (EIO) on segment
    /// `base`'s file (ending at offset `end`), when no open of the partition succeeded
    /// after it showed: the only faults that leave the platter longer than the engine's
    /// trim, with nothing since to trim it again (after an EIO the page cache shows the
    /// trim, so no later open sees anything to trim; a trim exists only once the
    /// segment was sealed, its successor created). Such a fault shows at the next power
    /// loss (a process crash leaves the page cache, which holds the engine's bytes):
    /// with none before the observation it excuses nothing, and only an open after it
    /// counts.
    fn untrimmed_by(&self, base: Offset, end: Offset) -> Option<usize> {
        let events = self.facts.history.events();
        let sealed = events[..self.index].iter().position(|e| {
            matches!(&e.kind, EventKind::SegmentCreated { tp, base } if tp == self.tp && *base == end)
        });
        let fault = (0..self.index).rev().find(|&i| match &events[i].kind {
            EventKind::Fault {
                kind:
                    kind @ (FaultKind::LostFsync { .. }
                    | FaultKind::Misdirected { .. }
                    | FaultKind::FsyncEio { .. }),
                tp: Some(tp),
                path: Some(path),
            } => {
                (!matches!(kind, FaultKind::FsyncEio { .. }) || sealed.is_some_and(|s| s < i))
                    && tp == self.tp
                    && segment_base_of_path(path) == Some(base)
            }
            _ => false,
        })?;
        let shown = self.facts.next_power_loss_after(fault);
        if shown >= self.index {
            return None;
        }
        let opened_after = events[shown..self.index].iter().any(|e| {
            matches!(
                &e.kind,
                EventKind::EngineAlarm {
                    tp: Some(tp),
                    alarm: Alarm::LogOpened { .. },
                    ..
                } if tp == self.tp
            )
        });
        (!opened_after).then_some(fault)
    }

    /// The refusal of the partition after the last power loss, when no open of it
    /// succeeded since that power loss and the segment ending at `end` was sealed (its
    /// successor created) after the power loss before it: only then can its trim have
    /// been pending at the last one, with nothing since to trim it again.
    fn refused_since_power_loss(&self, end: Offset) -> Option<usize> {
        let mut losses = self
            .facts
            .crashes
            .iter()
            .rev()
            .filter(|c| !c.process && c.index < self.index);
        let loss = losses.next()?;
        let previous = losses.next().map_or(0, |c| c.index);
        let events = self.facts.history.events();
        let sealed_since = events[previous..loss.index].iter().any(|e| {
            matches!(&e.kind, EventKind::SegmentCreated { tp, base } if tp == self.tp && *base == end)
        });
        if !sealed_since {
            return None;
        }
        let alarms = self.facts.alarms.of(self.tp);
        let after = || {
            alarms
                .iter()
                .filter(|a| loss.index < a.index && a.index < self.index)
        };
        if after().any(|a| matches!(a.alarm, Alarm::LogOpened { .. })) {
            return None;
        }
        after()
            .find(|a| matches!(a.alarm, Alarm::Refused { .. }))
            .map(|a| a.index)
    }

    fn violation(&self, report: &mut LayoutReport, segment: &SegmentLayout, what: String) {
        report.violations.push(Violation {
            message: format!("{} {what}", self.tp),
            records: vec![RecordRef::new(self.tp, Some(segment.base), None)],
            events: vec![self.index],
        });
    }
}
