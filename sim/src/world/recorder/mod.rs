//! The run's recorder: the history the checkers judge, plus the paths the run reached.
//! Shared by the world's tasks and the engine node (it lives outside the node, so it
//! survives crashes).

use super::damage;
use super::node::DATA_ROOT;
use crate::fs::{FsEvent, FsEventKind, SimFs};
use crate::history::{
    EventKind, FaultKind, FileKind, HeldCopy, History, Incarnation, OffsetRange, TopicPartition,
};
use cafelog_engine::format::{layout, word};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// How often each interesting path was reached in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Paths {
    pub crashes: u64,
    /// Kills that were process crashes (the page cache survived); also in `crashes`.
    pub process_crashes: u64,
    pub crashes_after_commit: u64,
    pub torn_tails_truncated: u64,
    /// Partitions opened with preallocated zeros after their last frame.
    pub zero_tails_at_open: u64,
    pub holes_truncated: u64,
    /// Records past an R2 hole whose WAL entry was gone, kept by the salvage.
    pub records_salvaged: u64,
    /// Records past an R2 hole whose WAL entry was there, given a salvage copy.
    pub salvage_copies: u64,
    /// WAL entries damage destroyed while a salvage copy of theirs (or the entry a
    /// destroyed copy copied) stayed readable: named as no loss.
    pub wal_entries_saved_by_copy: u64,
    pub refusals: u64,
    /// Topics whose topic.conf an open could not read.
    pub topics_refused: u64,
    pub recorded_clamps: u64,
    pub hidden_records: u64,
    pub duplicates_exposed: u64,
    pub records_skipped: u64,
    pub partitions_poisoned: u64,
    pub segments_reaped: u64,
    pub leases_expired: u64,
    /// Deliveries of a record leased before (after a nack or an expired lease).
    pub redeliveries: u64,
    pub delay_gates_held: u64,
    /// Long-poll receives that parked and were woken with records (each wait timed by
    /// `woken_promptly`).
    pub parked_receives_woken: u64,
    /// Records that became deliverable while a receive was parked, each timed by
    /// `woken_promptly`.
    pub wakeups_timed: u64,
    /// Deliveries of records of delayed topics (each checked by `delay_gate`).
    pub delayed_delivered: u64,
    /// Frontiers loaded at an open after the engine had persisted one (each held to it
    /// by `frontier_durable`).
    pub frontiers_recovered: u64,
    /// Segment rolls judged by `layout` (a segment and its successor's first frame).
    pub rolls_judged: u64,
    pub wal_replayed: u64,
    /// WAL segments deleted behind the checkpoint.
    pub wal_segments_deleted: u64,
    pub clock_steps: u64,
    pub bit_flips: u64,
    pub latent_sectors: u64,
    pub restarts_after_fatal_error: u64,
    /// Acks and nacks dropped before they returned (each had no effect).
    pub settles_dropped: u64,
    /// Background loop starts dropped part-way and restarted.
    pub loops_dropped: u64,
}

impl Paths {
    /// `(name, count)` for every path, in a stable order.
    pub fn entries(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("crashes", self.crashes),
            ("process_crashes", self.process_crashes),
            ("crashes_after_commit", self.crashes_after_commit),
            ("torn_tails_truncated_r1", self.torn_tails_truncated),
            ("zero_tails_at_open", self.zero_tails_at_open),
            ("holes_truncated_r2", self.holes_truncated),
            ("records_salvaged_r2", self.records_salvaged),
            ("salvage_copies_r2", self.salvage_copies),
            ("wal_entries_saved_by_copy", self.wal_entries_saved_by_copy),
            ("refusals_r3", self.refusals),
            ("topics_refused", self.topics_refused),
            ("recorded_clamps_r4", self.recorded_clamps),
            ("hidden_tail_records", self.hidden_records),
            (
                "hidden_tails_exposed_as_duplicates",
                self.duplicates_exposed,
            ),
            ("records_skipped", self.records_skipped),
            ("partitions_poisoned", self.partitions_poisoned),
            ("segments_reaped", self.segments_reaped),
            ("leases_expired", self.leases_expired),
            ("redeliveries", self.redeliveries),
            ("delay_gates_held", self.delay_gates_held),
            ("parked_receives_woken", self.parked_receives_woken),
            ("wakeups_timed", self.wakeups_timed),
            ("delayed_records_delivered", self.delayed_delivered),
            (
                "frontiers_recovered_after_persist",
                self.frontiers_recovered,
            ),
            ("segment_rolls_judged", self.rolls_judged),
            ("wal_entries_replayed", self.wal_replayed),
            ("wal_segments_deleted", self.wal_segments_deleted),
            ("clock_steps", self.clock_steps),
            ("bit_flips", self.bit_flips),
            ("latent_sectors", self.latent_sectors),
            ("settles_dropped", self.settles_dropped),
            ("loops_dropped", self.loops_dropped),
            (
                "restarts_after_fatal_error",
                self.restarts_after_fatal_error,
            ),
        ]
    }
}

/// When a kill came, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KillAt {
    pub at_ns: u64,
    pub cause: KillCause,
}

/// Why the world killed the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillCause {
    /// A fault the swarm or a schedule injected at a time.
    Injected,
    /// The swarm's aimed crash: right after the next produce acknowledgement.
    AfterAck,
    /// The engine asked for the restart (a fatal I/O error).
    Requested,
}

pub struct Recorder {
    pub history: History,
    /// Every kill before the heal, in history order.
    pub kills: Vec<KillAt>,
    /// Every bit flip (when, in ns, and which bit), in history order.
    pub flips: Vec<(u64, super::FlipAt)>,
    start: madsim::time::Instant,
    fs: SimFs,
    pub paths: Paths,
    pub acked: BTreeSet<u64>,
    /// Produce ids a consumer acked (one copy of each is enough).
    pub consumed: BTreeSet<u64>,
    /// The id each offset's last delivery carried in this incarnation, to name what an
    /// ack settles.
    pub carried: BTreeMap<(TopicPartition, u64), u64>,
    /// Receives the node is serving: their partition and ask, by a serial number.
    pub receiving: BTreeMap<u64, (TopicPartition, u64)>,
    next_receive: u64,
    /// Per partition, the `consumer.offset` word the last restart's open found (the
    /// page cache's, which a power loss has made the durable one), before the open
    /// could rewrite it (`None`: absent or not a word).
    pub durable_frontiers: BTreeMap<TopicPartition, Option<u64>>,
    /// Fault counts by kind name, for reports.
    pub faults: BTreeMap<String, u64>,
    pub poisoned_seen: BTreeSet<TopicPartition>,
    pub healed: bool,
    /// Between a crash and the next restart: no open is running.
    pub node_down: bool,
    /// Per WAL file, the last incarnation whose engine opened it (to read it at open,
    /// or to write it). An incarnation reads a WAL file once, at open, right after it
    /// opens it; so damage the file takes after that is first read by the next one.
    wal_opened: BTreeMap<PathBuf, Incarnation>,
}

/// A handle to the recorder.
#[derive(Clone)]
pub struct Shared(Arc<Mutex<Recorder>>);

impl Shared {
    pub fn new(fs: SimFs) -> Self {
        Shared(Arc::new(Mutex::new(Recorder {
            history: History::new(),
            kills: Vec::new(),
            flips: Vec::new(),
            #[allow(
                clippy::disallowed_methods,
                reason = "madsim's Instant, which reads simulated time"
            )]
            start: madsim::time::Instant::now(),
            fs,
            paths: Paths::default(),
            acked: BTreeSet::new(),
            consumed: BTreeSet::new(),
            carried: BTreeMap::new(),
            durable_frontiers: BTreeMap::new(),
            receiving: BTreeMap::new(),
            next_receive: 0,
            faults: BTreeMap::new(),
            poisoned_seen: BTreeSet::new(),
            healed: false,
            node_down: false,
            wal_opened: BTreeMap::new(),
        })))
    }

    pub fn lock(&self) -> MutexGuard<'_, Recorder> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A segment file the engine is unlinking, decoded before the call.
pub struct UnlinkingSegment {
    held: Vec<HeldCopy>,
    tp: TopicPartition,
    base: u64,
}

/// The partition and base of the segment file at `path`, if it is one.
fn segment_of(path: &Path) -> Option<(TopicPartition, u64)> {
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(layout::parse_segment_file_name)?;
    Some((partition_of(path)?, base))
}

/// What kind of file a path names.
pub fn file_kind(path: &Path) -> FileKind {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(layout::SEGMENT_SUFFIX) {
        FileKind::Segment
    } else if name == layout::HWM_FILE {
        FileKind::Hwm
    } else if name.starts_with(layout::CONSUMER_OFFSET_FILE) {
        FileKind::ConsumerOffset
    } else if path.components().any(|c| c.as_os_str() == "wal") {
        FileKind::Wal
    } else {
        FileKind::Other
    }
}

/// The partition a path inside `/data/topics/<topic>/p%05d/` belongs to.
pub fn partition_of(path: &Path) -> Option<TopicPartition> {
    let mut parts = path
        .components()
        .map(|c| c.as_os_str().to_str().unwrap_or(""));
    while let Some(part) = parts.next() {
        if part == layout::TOPICS_DIR {
            let topic = parts.next()?;
            let partition = layout::parse_partition_dir_name(parts.next()?)?;
            return Some(TopicPartition::new(topic, partition));
        }
    }
    None
}

impl Recorder {
    /// Simulated ms since the run started.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records a fault; returns its history index.
    pub fn fault(
        &mut self,
        kind: FaultKind,
        tp: Option<&TopicPartition>,
        path: Option<&str>,
    ) -> usize {
        let name = serde_json::to_value(&kind)
            .ok()
            .and_then(|v| v.get("fault").and_then(|f| f.as_str()).map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
        *self.faults.entry(name).or_insert(0) += 1;
        let now = self.now_ms();
        let index = self.history.len();
        self.history.fault(now, kind, tp, path);
        index
    }

    /// The engine is opening the WAL file at `path` (before the call takes effect, so
    /// damage landing while the open runs counts as after it: that errs toward the
    /// later incarnation, which excuses less).
    pub fn wal_opening(&mut self, path: &Path) {
        let incarnation = self.history.incarnation();
        self.wal_opened.insert(path.to_owned(), incarnation);
    }

    /// The first incarnation whose open reads the WAL file at `path` as it is now.
    fn wal_first_replay(&self, path: &Path) -> Incarnation {
        let current = self.history.incarnation();
        if self.node_down || self.wal_opened.get(path) == Some(&current) {
            current + 1
        } else {
            current
        }
    }

    /// After the fault at `fault_index` damaged the `hit` byte ranges of the WAL file at
    /// `path`, whose durable image was `before`: records the entries it destroyed.
    /// Damage at rest (`at_rest`, in contract) names an entry only when nothing standing
    /// for it stays readable; the out-of-contract faults (a misdirected write, a lost
    /// fsync) name every entry they hit, their reach as the contract states it: what
    /// still reads right after them may be overwritten later with no event of its own.
    pub fn wal_damaged(
        &mut self,
        fault_index: usize,
        path: &Path,
        before: &[u8],
        hit: &[Range<u64>],
        at_rest: bool,
    ) {
        // What the WAL still reads after the damage, as a power loss would leave it.
        let readable = if !at_rest {
            damage::WalRoots::new()
        } else {
            let dir = path.parent().unwrap_or(path);
            let images: Vec<(String, Vec<u8>)> = self
                .fs
                .durable_names(dir)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|name| {
                    let bytes = self.fs.durable_bytes(&dir.join(&name))?;
                    Some((name, bytes))
                })
                .collect();
            damage::wal_roots(images.iter().map(|(n, b)| (n.as_str(), b.as_slice())))
        };
        let damage::WalHit {
            lost: entries,
            saved_by_copy,
            ..
        } = damage::wal_entries_hit(path, before, hit, &readable);
        self.paths.wal_entries_saved_by_copy += saved_by_copy;
        if entries.is_empty() {
            return;
        }
        let first_replay = self.wal_first_replay(path);
        let now = self.now_ms();
        self.history
            .wal_entries_damaged(now, fault_index, first_replay, entries);
    }

    /// After an R2 salvage wrote the WAL entries at `seqs` for `tp`: records which
    /// produces they hold, read from the WAL's page cache (the salvage fsynced them).
    pub fn salvage_wrote(&mut self, tp: &TopicPartition, seqs: Range<u64>) {
        let dir = super::node::wal_dir();
        let (mut kept, mut copied) = (Vec::new(), Vec::new());
        for name in self.fs.visible_names(&dir).unwrap_or_default() {
            if crate::reference::wal::segment_base(&name).is_none() {
                continue;
            }
            let Some(image) = self.fs.visible_bytes(&dir.join(&name)) else {
                continue;
            };
            for entry in crate::reference::wal::frames(&image)
                .into_iter()
                .flat_map(|f| f.entries)
                .filter(|e| seqs.contains(&e.seq))
            {
                assert!(
                    entry.topic == tp.topic && entry.partition == tp.partition,
                    "a salvage of {tp} wrote seq {} for {}/{}",
                    entry.seq,
                    entry.topic,
                    entry.partition
                );
                let Ok(id) = crate::history::parse_payload_id(&entry.payload) else {
                    continue;
                };
                match entry.copy_of {
                    Some(_) => copied.push(id),
                    None => kept.push(id),
                }
            }
        }
        let now = self.now_ms();
        self.history.salvage_wrote(now, tp, kept, copied);
    }

    /// What a misdirected write into a segment overwrote: the offsets of the frames it
    /// landed on and whether the first of them starts below the persisted HWM (the
    /// durable `hwm` file now; a missing one means 0). `(None, None)` when unknown or
    /// when it hit no frame.
    fn misdirected_segment(&self, event: &FsEvent) -> (Option<OffsetRange>, Option<bool>) {
        let Some(over) = &event.overwritten else {
            return (None, None);
        };
        let landed = damage::segment_offsets_hit(&event.path, &over.durable_before, &over.landed);
        // The frames it was meant to write, whole in the page cache, are not durable
        // where they belong either: those whose bytes there differ from the cache (a
        // later write may have covered part of the range).
        let meant = self.meant_offsets(&event.path, event.position, event.len);
        let offsets = match (landed, meant) {
            (Some(a), Some(b)) => OffsetRange {
                start: a.start.min(b.start),
                end: a.end.max(b.end),
            },
            (Some(r), None) | (None, Some(r)) => r,
            (None, None) => return (None, None),
        };
        let persisted = event
            .path
            .parent()
            .and_then(|dir| self.fs.durable_bytes(&dir.join(layout::HWM_FILE)))
            .map_or(Some(0), |bytes| word::decode(&bytes));
        (Some(offsets), persisted.map(|p| offsets.start < p))
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
    /// misdirected left undurable.
    fn meant_offsets(&self, path: &Path, at: Option<u64>, len: Option<u64>) -> Option<OffsetRange> {
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
        damage::segment_offsets_hit(path, &visible, &within)
    }

    /// The offsets a lost fsync of `path` (of `file` kind) left undurable: a segment's
    /// frames it did not persist, and where it did not persist a truncation, the offset
    /// past its last frame (the platter keeps what lay beyond, which a later open reads
    /// there); for `hwm` and `consumer.offset` the offsets between the durable value and
    /// the one the engine wrote.
    fn lost_fsync_offsets(&self, path: &Path, file: FileKind) -> Option<OffsetRange> {
        match file {
            FileKind::Segment => {
                // No frame byte left undurable (e.g. the lost fsync was of a write-back
                // of bytes the platter already held): the fault reached no offset.
                let (visible, ranges) = self.undurable(path)?;
                let durable_len = self.fs.durable_bytes(path).map_or(0, |b| b.len());
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
            let kind = match event.kind {
                FsEventKind::FsyncEio => FaultKind::FsyncEio { file },
                FsEventKind::LostFsync => FaultKind::LostFsync {
                    file,
                    offsets: self.lost_fsync_offsets(&event.path, file),
                },
                FsEventKind::Enospc => FaultKind::Enospc { file },
                FsEventKind::MisdirectedWrite => {
                    let (offsets, below_hwm) = if file == FileKind::Segment {
                        self.misdirected_segment(&event)
                    } else {
                        (None, None)
                    };
                    FaultKind::Misdirected {
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
                if lost_fsync && let Some((visible, ranges)) = self.undurable(&event.path) {
                    self.wal_damaged(fault_index, &event.path, &visible, &ranges, false);
                }
            }
        }
    }

    /// The value of an 8-byte file as reads see it now.
    pub fn visible_word(&self, path: &Path) -> Option<u64> {
        self.fs
            .visible_bytes(path)
            .and_then(|b| cafelog_engine::format::word::decode(&b))
    }

    /// A segment file of a partition created (`created`) or unlinked.
    /// The engine created the segment file at `path`.
    pub fn segment_created(&mut self, path: &Path) {
        if let Some((tp, base)) = segment_of(path) {
            let now = self.now_ms();
            self.history.segment_created(now, &tp, base);
        }
    }

    /// The engine is about to unlink the file at `path`: if it is a segment, what it
    /// holds now (after the unlink nothing can be decoded), for [`Self::segment_unlinked`].
    pub fn segment_unlinking(&self, path: &Path) -> Option<UnlinkingSegment> {
        let (tp, base) = segment_of(path)?;
        Some(UnlinkingSegment {
            held: self.held_copies(path, base),
            tp,
            base,
        })
    }

    /// The unlink of `segment` took effect.
    pub fn segment_unlinked(&mut self, segment: UnlinkingSegment) {
        let now = self.now_ms();
        self.history
            .segment_deleted(now, &segment.tp, segment.base, segment.held);
    }

    /// Every record the segment file at `path` holds as reads see it now, by the
    /// reference decoder, with the produce id its payload carries.
    fn held_copies(&self, path: &Path, base: u64) -> Vec<HeldCopy> {
        let (Some(bytes), Some(name)) = (
            self.fs.visible_bytes(path),
            path.file_name().and_then(|n| n.to_str()),
        ) else {
            return Vec::new();
        };
        crate::reference::held_records(name, base, &bytes)
            .into_iter()
            .filter_map(super::disk::held_copy)
            .collect()
    }

    /// Every record the segment files visible in partition directory `dir` hold at
    /// offsets in `range`, by the reference decoder.
    pub fn copies_in(&self, dir: &Path, range: Range<u64>) -> Vec<HeldCopy> {
        let mut out = Vec::new();
        for name in self.fs.visible_names(dir).unwrap_or_default() {
            if let Some(base) = crate::reference::partition::segment_base(&name) {
                out.extend(
                    self.held_copies(&dir.join(&name), base)
                        .into_iter()
                        .filter(|c| range.contains(&c.offset)),
                );
            }
        }
        out
    }

    /// Right after an open loaded `tp`'s frontier as `loaded`: when it passed the last
    /// value an earlier incarnation wrote, or the word the disk durably held at the
    /// restart if lower (a crash lost the last rename), it skipped records (the open may
    /// have rewritten the word already). Records those it skipped for good, with no
    /// copy at or above the frontier, so that a loss there can be held to whatever
    /// moved the word.
    pub fn frontier_skips(&mut self, tp: &TopicPartition, loaded: u64) {
        let written = self
            .history
            .last_frontier_written_before(tp, self.history.incarnation());
        let durable = self.durable_frontiers.get(tp).copied().flatten();
        let from = match (written, durable) {
            (Some(w), Some(d)) => w.min(d),
            (w, d) => w.or(d).unwrap_or(0),
        };
        if loaded <= from
            || self.this_incarnation(
                |k| matches!(k, EventKind::FrontierSkipped { tp: t, .. } if t == tp),
            )
        {
            return;
        }
        let dir = layout::partition_dir(Path::new(DATA_ROOT), &tp.topic, tp.partition);
        let copies = self.copies_in(&dir, from..u64::MAX);
        let beyond: BTreeSet<u64> = copies
            .iter()
            .filter(|c| c.offset >= loaded)
            .map(|c| c.id)
            .collect();
        let held: Vec<HeldCopy> = copies
            .into_iter()
            .filter(|c| c.offset < loaded && !beyond.contains(&c.id))
            .collect();
        // Retention moves a frontier over deleted segments, which hold nothing.
        if !held.is_empty() {
            let now = self.now_ms();
            self.history.frontier_skipped(now, tp, from, loaded, held);
        }
    }

    /// A receive of `tp` begins now: its serial number, for [`Recorder::receiving`].
    pub fn begin_receive(&mut self, tp: TopicPartition) -> (u64, u64) {
        let asked = self.now_ms();
        let serial = self.next_receive;
        self.next_receive += 1;
        self.receiving.insert(serial, (tp, asked));
        (serial, asked)
    }

    pub fn frontier_written(&mut self, tmp_path: &Path, value: u64) {
        if let Some(tp) = partition_of(tmp_path) {
            // The open's own write of the frontier it loaded (a clamp rewrites it before
            // the open returns): the skip is recorded now, since an open that fails
            // after it never reports what it loaded, and the next one starts from this
            // word.
            let during_open = !self.this_incarnation(|k| {
                matches!(
                    k,
                    EventKind::FrontierWritten { tp: t, .. }
                        | EventKind::FrontierObserved { tp: t, .. } if *t == tp
                )
            });
            if during_open {
                self.frontier_skips(&tp, value);
            }
            let now = self.now_ms();
            self.history.frontier_written(now, &tp, value);
        }
    }

    /// Whether an event matching `kind` happened in the current incarnation.
    fn this_incarnation(&self, kind: impl Fn(&EventKind) -> bool) -> bool {
        let incarnation = self.history.incarnation();
        self.history
            .events()
            .iter()
            .rev()
            .take_while(|e| e.incarnation == incarnation)
            .any(|e| kind(&e.kind))
    }
}
