//! A restart: what the world reads of the disk before the next open (its views, the
//! records it will hide, see or salvage, by identity), and the end-of-run layouts.

use super::*;
use crate::history::CheckpointFloor;

/// What a restart's open will find on one partition.
pub(super) struct OpenDisk {
    tp: TopicPartition,
    view: DiskView,
    /// The records of its hidden tail.
    hidden: Vec<HeldCopy>,
    /// When it will replay every WAL entry of the partition: the records it can see.
    visible: Option<Vec<HeldCopy>>,
    /// When it will cut at a hole (R2): the readable records past it.
    past_hole: Option<Vec<HeldCopy>>,
}

/// Starts the next incarnation of the engine's node.
pub(super) fn restart(world: &World, node: madsim::task::NodeId) {
    // What the open will read, before the new incarnation can touch it: each
    // directory as the page cache shows it (after a power loss, the durable image),
    // read once, decoded and with its segment files listed.
    let mut disks: Vec<OpenDisk> = Vec::new();
    // An open that finds the WAL checkpoint unreadable replays every entry, skipping
    // those whose records it can see: list those records too; and so for a partition
    // the checkpoint gives no floor (a refused one's, after a lost checkpoint).
    let checkpoint = checkpoint_floors(world);
    let mut segments: Vec<(TopicPartition, Vec<u64>)> = Vec::new();
    let mut frontiers = BTreeMap::new();
    for (tp, dir) in partition_dirs(world) {
        let frontier = world
            .fs
            .visible_bytes(&dir.join(layout::CONSUMER_OFFSET_FILE))
            .and_then(|bytes| word::decode(&bytes));
        frontiers.insert(tp.clone(), frontier);
        let image = disk::dir_image(&world.fs, &dir, disk::Image::Visible);
        let bases = image.as_ref().map_or_else(Vec::new, |image| {
            image
                .segments
                .iter()
                .filter_map(|(name, _)| crate::reference::partition::segment_base(name))
                .collect()
        });
        if let Some(image) = image {
            let decoded = crate::reference::decode(&image);
            let view = DiskView::from_decoded(&decoded);
            let past_hole = decoded
                .bad
                .as_ref()
                .filter(|_| view.rule == crate::history::OpenRule::Hole)
                .map(|bad| disk::held_past_hole(&image, bad));
            disks.push(OpenDisk {
                tp: tp.clone(),
                hidden: disk::held_in(&image, view.hwm..view.tail),
                visible: CheckpointFloor::replays_every_entry(checkpoint.as_deref(), &tp)
                    .then(|| disk::held_in(&image, view.log_start..view.hwm)),
                past_hole,
                view,
            });
        }
        segments.push((tp, bases));
    }
    let wal = wal_damage(world);
    madsim::runtime::Handle::current().restart(node);
    let mut rec = world.recorder.lock();
    rec.holes_announced.clear();
    let now = rec.now_ms();
    rec.history.restart(now);
    for disk in disks {
        let OpenDisk {
            tp,
            view,
            hidden: held,
            visible,
            past_hole,
        } = disk;
        let hidden = view.hwm..view.tail;
        let shown = view.log_start..view.hwm;
        if view.rule == crate::history::OpenRule::Refuse {
            rec.refusal_expected(&tp);
        }
        rec.history.disk_at_open(now, &tp, view, false);
        if let Some(visible) = visible {
            rec.history
                .visible_at_open(now, &tp, shown.start, shown.end, visible);
        }
        if !held.is_empty() {
            rec.history
                .hidden_at_open(now, &tp, hidden.start, hidden.end, held);
        }
        if let Some(held) = past_hole {
            rec.history.past_hole_at_open(now, &tp, held);
        }
    }
    for (tp, bases) in segments {
        rec.history.segments_listed(now, &tp, bases);
    }
    rec.history.wal_at_open(now, wal.0, wal.1);
    let read = world
        .fs
        .visible_inode(&node::wal_dir().join(cafelog_engine::store::wal::CHECKPOINT_FILE));
    rec.checkpoint_read = read;
    let flipped = read.and_then(|inode| rec.checkpoint_flips.get(&inode).copied());
    rec.history.checkpoint_at_open(now, checkpoint, flipped);
    rec.node_down = false;
    rec.open_epoch = world.fs.epoch();
    rec.carried.clear();
    let issued = std::mem::take(&mut rec.hwm_issued);
    rec.hwm_ceiling.extend(issued);
    rec.durable_frontiers = frontiers;
}

/// The WAL checkpoint as the open will read it, by the reference decoder: each
/// partition's floor, none without the file, `None` when it does not read.
fn checkpoint_floors(world: &World) -> Option<Vec<CheckpointFloor>> {
    let path = node::wal_dir().join(cafelog_engine::store::wal::CHECKPOINT_FILE);
    let Some(bytes) = world.fs.visible_bytes(&path) else {
        return Some(Vec::new());
    };
    decode_floors(&bytes)
}

/// The floors a checkpoint image holds, by the reference decoder; `None` when it does
/// not read.
pub(super) fn decode_floors(bytes: &[u8]) -> Option<Vec<CheckpointFloor>> {
    let floors = crate::reference::wal::checkpoint(bytes)?;
    Some(
        floors
            .into_iter()
            .map(|(topic, partition, seq, offset)| CheckpointFloor {
                tp: TopicPartition { topic, partition },
                seq,
                offset,
            })
            .collect(),
    )
}

/// The damage the WAL's segment files hold as the open will read them: skipped bytes
/// and corrupt entries, by the reference decoder.
pub(super) fn wal_damage(world: &World) -> (u64, u64) {
    let dir = node::wal_dir();
    let names = world.fs.visible_names(&dir).unwrap_or_default();
    names
        .iter()
        .filter_map(|name| {
            let base = crate::reference::wal::segment_base(name)?;
            let image = world.fs.visible_bytes(&dir.join(name))?;
            Some(crate::reference::wal::damage(base, &image))
        })
        .fold((0, 0), |(s, c), (ds, dc)| (s + ds, c + dc))
}

/// Adds the dying incarnation's engine counters to the run's paths.
pub(super) fn add_incarnation_paths(rec: &mut recorder::Recorder, world: &World) {
    let Some(store) = world.store() else {
        return;
    };
    let m = store.metrics();
    rec.paths.leases_expired += m.leases_expired.load(Ordering::Relaxed);
    rec.paths.redeliveries += m.redeliveries.load(Ordering::Relaxed);
    rec.paths.parked_receives_woken += m.parked_receives_woken.load(Ordering::Relaxed);
    rec.paths.delay_gates_held += m.delay_gate_holds.load(Ordering::Relaxed);
    rec.paths.records_skipped += m.records_skipped.load(Ordering::Relaxed);
    rec.paths.wal_segments_deleted += m.wal_segments_deleted.load(Ordering::Relaxed);
    for (_, _, metrics) in store.partition_statuses() {
        rec.paths.records_skipped += metrics.records_skipped;
        rec.paths.segments_reaped += metrics.retention_segments_deleted;
    }
}

/// Every partition directory on the disk, as `(tp, dir)`.
/// Records each partition's segment files as the engine left them, for `layout`.
pub(super) fn observe_layouts(world: &World) {
    let mut rec = world.recorder.lock();
    let now = rec.now_ms();
    for plan in &world.spec.workload.topics {
        let knobs = shape::knobs(&plan.config.log);
        let zstd = shape::ZstdSettings::of(&plan.config.log);
        for p in 0..plan.config.partitions {
            let dir = layout::partition_dir(Path::new(DATA_ROOT), &plan.name, p);
            if let Some(segments) = shape::visible_layout(&world.fs, &dir, zstd) {
                let tp = TopicPartition::new(plan.name.clone(), p);
                rec.history.layout_observed(now, &tp, knobs, segments);
            }
        }
    }
}

/// Records the WAL's segment files as the page cache lists them, when the store is open
/// (`wal_progress` judges whether the checkpoint deleted what it covers).
pub(super) fn observe_wal_at_end(world: &World) {
    let Some(store) = world.store() else {
        return;
    };
    let mut rec = world.recorder.lock();
    if !rec.store_open {
        return;
    }
    let dir = node::wal_dir();
    let mut segments: Vec<WalSegmentAtEnd> = world
        .fs
        .visible_names(&dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|name| {
            let base = crate::reference::wal::segment_base(name)?;
            let image = world.fs.visible_bytes(&dir.join(name))?;
            let mut ends = BTreeMap::new();
            let mut entries = 0;
            let frames = crate::reference::wal::frames(&image);
            let last_frame_at = frames.last().map(|f| f.position.start);
            for frame in frames {
                for e in frame.entries {
                    entries += 1;
                    let end = ends
                        .entry(TopicPartition::new(e.topic, e.partition))
                        .or_insert(0);
                    *end = (e.seq + 1).max(*end);
                }
            }
            Some(WalSegmentAtEnd {
                base,
                entries,
                ends: ends.into_iter().collect(),
                last_frame_at,
            })
        })
        .collect();
    segments.sort_by_key(|s| s.base);
    let checkpoint = node::wal_checkpoint_entries(&world.fs);
    let (now, opened) = (rec.now_ms(), rec.store_opened_ms);
    let active = store.wal().active_base();
    let segment_bytes = world.spec.workload.wal_segment_bytes;
    rec.history
        .wal_at_end(now, opened, segments, checkpoint, active, segment_bytes);
}

/// Every partition's records from its log start to its HWM, by identity, as the page
/// cache shows them now: what an open replaying every WAL entry can see.
pub(super) fn visible_now(
    world: &World,
) -> Vec<(TopicPartition, std::ops::Range<u64>, Vec<HeldCopy>)> {
    partition_dirs(world)
        .into_iter()
        .filter_map(|(tp, dir)| {
            let image = disk::dir_image(&world.fs, &dir, disk::Image::Visible)?;
            let view = DiskView::from_decoded(&crate::reference::decode(&image));
            let shown = view.log_start..view.hwm;
            let visible = disk::held_in(&image, shown.clone());
            Some((tp, shown, visible))
        })
        .collect()
}

pub(super) fn partition_dirs(world: &World) -> Vec<(TopicPartition, PathBuf)> {
    let mut out = Vec::new();
    for plan in &world.spec.workload.topics {
        for p in 0..plan.config.partitions {
            out.push((
                TopicPartition::new(plan.name.clone(), p),
                layout::partition_dir(Path::new(DATA_ROOT), &plan.name, p),
            ));
        }
    }
    out
}
