//! The disk's fault events as history faults: each with the file it hit and, for the
//! log's files, the offsets it reached (what a misdirected write, a lost write or a
//! lost fsync took).

use super::*;
use crate::history::HeldCopy;
use crate::reference::frame::Readable;

/// A misdirected segment write's reach, as `FaultKind::Misdirected` records it, and
/// the record copies it reached by identity.
#[derive(Default)]
struct MisdirectedReach {
    /// The hull of the parts; `None` when unknown or when it hit no frame.
    offsets: Option<OffsetRange>,
    /// Whether the hull starts below the persisted HWM.
    below_hwm: Option<bool>,
    /// The frames it landed on and those it was meant to write (empty: it hit none);
    /// `None` when the world cannot name both.
    parts: Option<Vec<OffsetRange>>,
    held: Vec<HeldCopy>,
}

/// The records the frames of segment image `image` (file `path`) hold at `offsets`.
fn segment_held(path: &Path, image: Readable<'_>, offsets: Option<OffsetRange>) -> Vec<HeldCopy> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    offsets.map_or_else(Vec::new, |r| {
        crate::world::disk::held_in_segment(name, image, r.start..r.end)
    })
}

impl Recorder {
    /// What a misdirected write into a segment overwrote: the offsets of the frames it
    /// landed on and of those it was meant to write, as one hull, whether the first of
    /// them starts below the persisted HWM (the durable `hwm` file now; a missing one
    /// means 0), and the two as ranges of their own (empty when it hit no frame) when
    /// the world can name both. `(None, None, _)` when unknown or when it hit no frame.
    fn misdirected_segment(&self, event: &FsEvent) -> MisdirectedReach {
        let Some(over) = &event.overwritten else {
            return MisdirectedReach::default();
        };
        let landed = damage::segment_offsets_hit(&event.path, &over.durable_before, &over.landed);
        // Known only when the walk saw every frame the bytes touched: one past a hole
        // would be missing from a part even when others were named.
        let landed_known =
            !damage::segment_hit_unseen(&event.path, &over.durable_before, &over.landed);
        // The frames it was meant to write, whole in the page cache, are not durable
        // where they belong either: those whose bytes there differ from the cache (a
        // later write may have covered part of the range).
        let meant = self.meant_offsets(&event.path, event.position, event.len);
        let parts: Option<Vec<OffsetRange>> = (landed_known && meant.is_some())
            .then(|| [landed, meant.flatten()].into_iter().flatten().collect());
        // By identity: what the landed frames held on the platter, and what the meant
        // ones hold in the page cache (the copies the write carried).
        let mut held = Vec::new();
        if parts.is_some() {
            // The platter's bytes as written (the image is not masked).
            let before = Readable::whole(&over.durable_before);
            held.extend(segment_held(&event.path, before, landed));
            if let Some(visible) = self.fs.visible_bytes(&event.path) {
                let unreadable = self.fs.visible_unreadable(&event.path);
                let visible = Readable::new(&visible, &unreadable);
                held.extend(segment_held(&event.path, visible, meant.flatten()));
            }
        }
        let offsets = match (landed, meant.flatten()) {
            (Some(a), Some(b)) => OffsetRange {
                start: a.start.min(b.start),
                end: a.end.max(b.end),
            },
            (Some(r), None) | (None, Some(r)) => r,
            (None, None) => {
                return MisdirectedReach {
                    parts,
                    ..MisdirectedReach::default()
                };
            }
        };
        MisdirectedReach {
            offsets: Some(offsets),
            below_hwm: self.durable_hwm(&event.path).map(|p| offsets.start < p),
            parts,
            held,
        }
    }

    /// The persisted HWM of the partition whose segment is at `segment`: its durable
    /// `hwm` word (0 without one; `None` when the file holds no word).
    fn durable_hwm(&self, segment: &Path) -> Option<u64> {
        segment
            .parent()
            .and_then(|dir| self.fs.durable_bytes(&dir.join(layout::HWM_FILE)))
            .map_or(Some(0), |bytes| word::decode(&bytes))
    }

    /// What the engine believes durable in `path` but the disk does not hold: the byte
    /// ranges where the page cache and the durable image differ, with the page cache
    /// (what the engine wrote). Right after a lost fsync these are the writes it did
    /// not persist (and any earlier divergence of that file).
    fn undurable(&self, path: &Path) -> Option<(Vec<u8>, Vec<Range<u64>>)> {
        let visible = self.fs.visible_bytes(path)?;
        let durable = self.fs.durable_bytes(path).unwrap_or_default();
        let ranges = damage::differing(&visible, &durable);
        Some((visible, ranges))
    }

    /// The frames of the segment at `path`, in the page cache, whose bytes in
    /// `[at, at + len)` the durable image lacks: what a write meant for that range and
    /// misdirected left undurable. `Some(None)` when it left no frame undurable; `None`
    /// when the world cannot tell (the walk does not reach every frame in the range).
    fn meant_offsets(
        &self,
        path: &Path,
        at: Option<u64>,
        len: Option<u64>,
    ) -> Option<Option<OffsetRange>> {
        let (at, len) = (at?, len?);
        let (visible, ranges) = self.undurable(path)?;
        let within: Vec<Range<u64>> = ranges
            .into_iter()
            .filter_map(|r| {
                let start = r.start.max(at);
                let end = r.end.min(at + len);
                (start < end).then_some(start..end)
            })
            .collect();
        let hit = damage::segment_offsets_hit(path, &visible, &within);
        (!damage::segment_hit_unseen(path, &visible, &within)).then_some(hit)
    }

    /// [`Recorder::undurable`] within the ranges the lost fsync `event` dropped: what
    /// this fault left undurable, not older divergence of the same file (an earlier
    /// lost fsync's hole, a misdirected write's landing, a flip at rest; helper-66 #6b).
    fn lost_by(&self, event: &FsEvent) -> Option<(Vec<u8>, Vec<Range<u64>>)> {
        let (visible, ranges) = self.undurable(&event.path)?;
        Some((visible, intersect(&ranges, &event.lost_ranges)))
    }

    /// The record copies the lost fsync `event` of a segment left undurable: those of
    /// the page cache's frames the platter does not hold byte for byte (not the hull to
    /// past the last frame its offsets take when a truncation was lost too).
    fn lost_fsync_held(&self, event: &FsEvent) -> Vec<HeldCopy> {
        let Some((visible, ranges)) = self.lost_by(event) else {
            return Vec::new();
        };
        let unreadable = self.fs.visible_unreadable(&event.path);
        segment_held(
            &event.path,
            Readable::new(&visible, &unreadable),
            damage::segment_offsets_hit(&event.path, &visible, &ranges),
        )
    }

    /// The offsets a lost fsync of `path` (of `file` kind) left undurable: a segment's
    /// frames it did not persist, and where it did not persist a truncation, the offset
    /// past its last frame (the platter keeps what lay beyond, which a later open reads
    /// there); for `hwm` and `consumer.offset` the offsets between the durable value and
    /// the one the engine wrote.
    fn lost_fsync_offsets(&self, event: &FsEvent, file: FileKind) -> Option<OffsetRange> {
        let path = event.path.as_path();
        match file {
            FileKind::Segment => {
                // No frame byte left undurable (e.g. the lost fsync was of a write-back
                // of bytes the platter already held): the fault reached no offset.
                let (visible, ranges) = self.lost_by(event)?;
                // A truncation this fault did not persist shows as dropped bytes past the
                // page cache's end; an older fault's lost truncation is not its own.
                let truncation_lost = ranges.iter().any(|r| r.end > visible.len() as u64);
                let durable_len = if truncation_lost {
                    self.fs.durable_bytes(path).map_or(0, |b| b.len())
                } else {
                    0
                };
                Some(
                    damage::lost_fsync_reach(path, &visible, &ranges, durable_len)
                        .unwrap_or(OffsetRange { start: 0, end: 0 }),
                )
            }
            FileKind::Hwm | FileKind::ConsumerOffset => {
                let written = self.visible_word(path)?;
                let durable = self
                    .fs
                    .durable_bytes(path)
                    .and_then(|b| word::decode(&b))
                    .unwrap_or(0);
                Some(OffsetRange {
                    start: written.min(durable),
                    end: written.max(durable),
                })
            }
            _ => None,
        }
    }

    /// Moves the disk's injected faults into the history.
    pub fn drain_fs(&mut self) {
        for event in self.fs.take_events() {
            if self.healed
                && matches!(
                    event.kind,
                    FsEventKind::CrashWriteTorn
                        | FsEventKind::CrashWriteLost
                        | FsEventKind::CrashDirOpLost
                )
            {
                // After the heal, a restart the engine asked for (a fatal error from
                // before the heal) still crashes the disk; what it drops was never
                // synced, and nothing is injected any more.
                continue;
            }
            let file = file_kind(&event.path);
            // The record copies an out-of-contract fault on a segment reached.
            let mut held: Vec<HeldCopy> = Vec::new();
            let kind = match event.kind {
                FsEventKind::FsyncEio => FaultKind::FsyncEio { file },
                // A directory's, the WAL's included: its path tells which (a failed
                // fsync of the WAL's directory damages no entry).
                FsEventKind::DirFsyncEio => FaultKind::FsyncEio {
                    file: FileKind::Directory,
                },
                FsEventKind::LostFsync => {
                    if file == FileKind::Segment {
                        held = self.lost_fsync_held(&event);
                    }
                    FaultKind::LostFsync {
                        file,
                        offsets: self.lost_fsync_offsets(&event, file),
                    }
                }
                FsEventKind::Enospc => FaultKind::Enospc { file },
                FsEventKind::MisdirectedWrite => {
                    let reach = if file == FileKind::Segment {
                        self.misdirected_segment(&event)
                    } else {
                        MisdirectedReach::default()
                    };
                    held = reach.held;
                    FaultKind::Misdirected {
                        file,
                        offsets: reach.offsets,
                        below_hwm: reach.below_hwm,
                        parts: reach.parts,
                    }
                }
                // Not damage at rest: no damaged-partition mark, no held copies. The
                // engine's verify must catch it before anything builds on the frame.
                FsEventKind::CorruptWrite => {
                    self.paths.corrupt_writes += 1;
                    let frame = corrupt_frame(&event);
                    let offsets = frame.as_ref().map(|(o, _)| *o);
                    // Whether the frame it hit starts below the durable `hwm` word.
                    let below_hwm =
                        offsets.and_then(|o| self.durable_hwm(&event.path).map(|p| o.start < p));
                    // Only a write whose frame the walk placed: one it could not place
                    // would excuse the whole partition once left.
                    if let (Some(tp), Some(c), Some(position), Some((offsets, frame))) = (
                        partition_of(&event.path),
                        &event.corrupted,
                        event.position,
                        frame,
                    ) {
                        let mut stored = c.written[frame.clone()].to_vec();
                        let flipped = usize::try_from(c.byte - position).unwrap_or(0) - frame.start;
                        stored[flipped] ^= 1 << c.bit;
                        self.corrupt_writes.push(CorruptWriteAt {
                            tp,
                            path: event.path.clone(),
                            frame_at: position + frame.start as u64,
                            stored,
                            offsets,
                            below_hwm,
                        });
                    }
                    FaultKind::CorruptWrite {
                        file,
                        offsets,
                        below_hwm,
                    }
                }
                FsEventKind::CrashWriteTorn => FaultKind::TornWrite { file },
                FsEventKind::CrashWriteLost => FaultKind::LostWrite { file },
                FsEventKind::CrashDirOpLost => FaultKind::LostWrite {
                    file: FileKind::Directory,
                },
                // Crashes, heals and bit flips are recorded by the world itself, with
                // more context; kept outcomes and stale handles are not faults.
                _ => continue,
            };
            let tp = partition_of(&event.path);
            let path = event.path.display().to_string();
            let lost_fsync = matches!(kind, FaultKind::LostFsync { .. });
            let fault_index = self.fault(kind, tp.as_ref(), Some(&path));
            if let Some(tp) = &tp
                && !held.is_empty()
            {
                let now = self.now_ms();
                self.history.reach_held(now, fault_index, tp, held);
            }
            if file == FileKind::Wal {
                if let Some(over) = &event.overwritten {
                    // What it landed on, and what it was meant to write where it belongs.
                    self.wal_damaged(
                        fault_index,
                        &event.path,
                        &over.durable_before,
                        &over.landed,
                        false,
                    );
                    if let (Some((visible, ranges)), Some(at), Some(len)) =
                        (self.undurable(&event.path), event.position, event.len)
                    {
                        let within: Vec<Range<u64>> = ranges
                            .into_iter()
                            .filter(|r| r.start < at + len && at < r.end)
                            .collect();
                        self.wal_damaged(fault_index, &event.path, &visible, &within, false);
                    }
                }
                if lost_fsync && let Some((visible, ranges)) = self.lost_by(&event) {
                    self.wal_damaged(fault_index, &event.path, &visible, &ranges, false);
                }
            }
        }
    }
}

/// The records and the byte range (within the write) of the frame a corrupt write's
/// flipped bit landed in, walking the bytes the engine meant (every segment write is a
/// run of whole frames from its position; the page cache may have changed since).
fn corrupt_frame(event: &FsEvent) -> Option<(OffsetRange, Range<usize>)> {
    let (c, position) = (event.corrupted.as_ref()?, event.position?);
    let within = c.byte.checked_sub(position)?;
    let mut at = 0;
    loop {
        let header = crate::reference::frame::valid_at(&c.written, at)?;
        let end = at + header.frame_len();
        if within < end {
            let offsets = OffsetRange {
                start: header.base_offset,
                end: header.base_offset + u64::from(header.record_count),
            };
            return Some((
                offsets,
                usize::try_from(at).ok()?..usize::try_from(end).ok()?,
            ));
        }
        at = end;
    }
}

/// The parts of `ranges` inside one of `within`, ascending and merged.
fn intersect(ranges: &[Range<u64>], within: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = ranges
        .iter()
        .flat_map(|r| {
            within
                .iter()
                .map(|w| r.start.max(w.start)..r.end.min(w.end))
                .filter(|r| r.start < r.end)
        })
        .collect();
    out.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(out.len());
    for r in out {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}
