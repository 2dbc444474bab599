//! The supervisor's faults: kills (power loss or process crash), wall-clock steps,
//! bit flips at rest located by the reference decoder, and armed fsync faults.

use super::*;
use crate::history::{CheckpointFloor, Offset};

/// Makes the disk fail its next fsync once, the way `action` says.
pub(super) fn arm_fsync_fault(world: &World, action: &Action) {
    let counts = world.fs.event_counts();
    let mut options = world.fs.options();
    if let Action::FsyncEio { path } | Action::LostFsync { path } = action {
        options.fsync_fault_path = path.as_ref().map(PathBuf::from);
    }
    match action {
        Action::FsyncEio { .. } => {
            let fired = counts
                .get(&crate::fs::FsEventKind::FsyncEio)
                .copied()
                .unwrap_or(0);
            options.fsync_eio_probability = 1.0;
            options.fsync_eio_max = u32::try_from(fired + 1).unwrap_or(u32::MAX);
        }
        _ => {
            let fired = counts
                .get(&crate::fs::FsEventKind::LostFsync)
                .copied()
                .unwrap_or(0);
            options.lost_fsync_probability = 1.0;
            options.lost_fsync_max = u32::try_from(fired + 1).unwrap_or(u32::MAX);
        }
    }
    world
        .fs
        .set_options(options)
        .expect("armed fault options are valid");
}

pub(super) fn exp_ms(dice: &mut Dice, mean_ms: u64) -> u64 {
    let u = dice.unit().max(1e-9);
    (-(u.ln()) * mean_ms as f64) as u64
}

pub(super) fn next_exp(dice: &mut Dice, per_s: f64) -> Option<u64> {
    (per_s > 0.0).then(|| exp_ms(dice, (1000.0 / per_s) as u64))
}

/// How a kill ends an incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kill {
    /// The machine loses power: whatever is not durable is lost or torn.
    PowerLoss,
    /// Only the engine's process dies: the page cache and the pending writes survive.
    Process,
}

/// Kills the engine's node and records what the next incarnation will open from.
pub(super) async fn kill(
    world: &Arc<World>,
    node: madsim::task::NodeId,
    kind: Kill,
    cause: KillCause,
) {
    {
        let mut rec = world.recorder.lock();
        add_incarnation_paths(&mut rec, world);
    }
    let memory: BTreeMap<TopicPartition, u64> = world
        .slot()
        .take()
        .map(|store| {
            store
                .partition_statuses()
                .into_iter()
                .map(|((t, p), status, _)| (TopicPartition::new(t, p), status.hwm))
                .collect()
        })
        .unwrap_or_default();
    {
        let mut rec = world.recorder.lock();
        // Faults the disk logged before the kill (a sync still in its pause after the
        // operation) go in before the crash, and are read off the disk as it is before
        // the crash resets it (helper-66 #6c).
        rec.drain_fs();
        if !rec.healed {
            let fault = match kind {
                Kill::PowerLoss => FaultKind::Crash,
                Kill::Process => FaultKind::ProcessCrash,
            };
            rec.fault(fault, None, None);
            let woke_ns = rec.supervisor_woke_ns;
            rec.kills.push(KillAt { woke_ns, cause });
        }
    }
    let image = match kind {
        Kill::PowerLoss => {
            madsim::runtime::Handle::current().kill(node);
            disk::Image::Durable
        }
        Kill::Process => {
            crate::fs::plugin::kill_process(node);
            disk::Image::Visible
        }
    };
    // Before the crash's accounting: a corrupt write a killed write-back left is damage
    // at rest, which lifts that partition's durable tail as a flip does.
    world
        .recorder
        .lock()
        .corrupt_writes_left(&world.fs, image == disk::Image::Durable);
    // A partition no open cut since the last kill kept every frame it had: what was
    // certainly durable then still is. One the engine holds open says for itself.
    let carried: BTreeMap<TopicPartition, u64> = {
        let mut rec = world.recorder.lock();
        let cut = std::mem::take(&mut rec.cut_now);
        rec.durable_floor
            .iter()
            .filter(|(tp, _)| !memory.contains_key(*tp) && !cut.contains(*tp))
            .map(|(tp, &floor)| (tp.clone(), floor))
            .collect()
    };
    let partitions = {
        let (damaged, words) = {
            let rec = world.recorder.lock();
            let mut ceiling = rec.hwm_ceiling.clone();
            ceiling.extend(rec.hwm_issued.clone());
            let words = disk::WordsWritten {
                all: rec.hwm_words.clone(),
                ceiling,
            };
            (rec.damaged.partitions().cloned().collect(), words)
        };
        disk::crash_partitions(
            &world.fs,
            &partition_dirs(world),
            &damaged,
            &memory,
            &carried,
            &words,
            image,
        )
    };
    let mut rec = world.recorder.lock();
    for p in &partitions {
        let certain = match image {
            disk::Image::Durable => p.durable_tail,
            disk::Image::Visible => p
                .memory_hwm
                .unwrap_or(0)
                .max(carried.get(&p.tp).copied().unwrap_or(0)),
        };
        rec.durable_floor.insert(p.tp.clone(), certain);
    }
    rec.drain_fs();
    rec.paths.crashes += 1;
    if kind == Kill::Process {
        rec.paths.process_crashes += 1;
    }
    rec.poisoned_seen.clear();
    let open_completed = std::mem::replace(&mut rec.store_open, false);
    let now = rec.now_ms();
    // The receives the kill cut short (their tasks died with the node).
    for (tp, asked) in std::mem::take(&mut rec.receiving).into_values() {
        rec.history.receive_killed(now, &tp, asked);
    }
    match kind {
        Kill::PowerLoss => {
            rec.history.crash(now, partitions);
            rec.wal_kept_at_power_loss();
        }
        Kill::Process => {
            rec.history.process_crash(now, partitions);
            rec.wal_cached_at_kill(open_completed);
        }
    };
    rec.node_down = true;
}

/// Steps the wall clock back by `back_ms` (while the node is down).
pub(super) fn step_clock(world: &World, back_ms: u64) {
    world
        .clock
        .step_wall(-i64::try_from(back_ms).unwrap_or(i64::MAX));
    let mut rec = world.recorder.lock();
    rec.paths.clock_steps += 1;
    rec.fault(FaultKind::ClockStep { back_ms }, None, None);
}

/// The kind of file a random flip hits: segments twice as often as hwm,
/// consumer.offset and the WAL.
pub(super) fn draw_flip_file(dice: &mut Dice) -> FileKind {
    const KINDS: [FileKind; 5] = [
        FileKind::Segment,
        FileKind::Segment,
        FileKind::Hwm,
        FileKind::ConsumerOffset,
        FileKind::Wal,
    ];
    KINDS[dice.below(KINDS.len() as u64) as usize]
}

/// Flips one bit of durable data at rest in a file of kind `want` (segments, hwm,
/// consumer.offset, WAL): the bit `at` names, or a random one.
pub(super) async fn flip(world: &World, want: FileKind, at: Option<&FlipAt>) -> bool {
    // Map frames before the flip: afterwards the decode stops at the damaged frame.
    let mut before = BTreeMap::new();
    let mut images = BTreeMap::new();
    if want == FileKind::Segment {
        for (_, dir) in partition_dirs(world) {
            if let Some(image) = disk::dir_image(&world.fs, &dir, disk::Image::Durable) {
                before.insert(dir.clone(), crate::reference::decode(&image));
                let visible = disk::dir_image(&world.fs, &dir, disk::Image::Visible);
                images.insert(dir, (image, visible));
            }
        }
    }
    let filter = |p: &std::path::Path| recorder::file_kind(p) == want;
    let flipped = match at {
        Some(at) => {
            world
                .fs
                .flip_bit_at(filter, std::path::Path::new(&at.path), at.position, at.bit)
        }
        None => world.fs.flip_random_bit(filter),
    };
    let Some(flip) = flipped else {
        return false;
    };
    let tp = recorder::partition_of(&flip.path);
    if let (Some(tp), FileKind::Segment) = (&tp, want) {
        world.recorder.lock().segment_damaged(tp);
    }
    // The records of the frame the flip hit, when the durable image placed it.
    let mut held = Vec::new();
    // A word flip's move as a read sees it: the name read, the word before and after.
    let mut word_move = None;
    let (offsets, below_hwm) = match (&tp, want) {
        (Some(_), FileKind::Segment) => {
            // Headers are walked in the durable image as it was before the flip.
            let bytes = durable_before_flip(&world.fs, &flip);
            match disk::locate(&before, &flip.path, flip.position, bytes.as_deref()) {
                (Some(range), below) => {
                    // Named only where the engine reads what the platter held: the cache
                    // took the flip and showed the same records there (a pending write,
                    // or a lost fsync's cache, can hold others at those offsets).
                    if let Some((durable, Some(visible))) =
                        flip.path.parent().and_then(|d| images.get(d))
                        && flip.read_through() == Some(flip.path.as_path())
                    {
                        let platter = disk::held_in(durable, range.start..range.end);
                        if platter == disk::held_in(visible, range.start..range.end) {
                            held = platter;
                        }
                    }
                    // The cache took the flip too, and may hold another frame at that
                    // byte (a misdirected write left the platter's frames shifted): the
                    // flip damaged that frame for the engine as well.
                    let cached = visible_before_flip(&world.fs, &flip)
                        .filter(|_| flip.read_through().is_some())
                        .and_then(|b| disk::locate_in_image(&flip.path, flip.position, &b));
                    match cached {
                        Some(c) if c != range => {
                            let persisted = before
                                .get(flip.path.parent().unwrap_or(&flip.path))
                                .and_then(|d| d.persisted_hwm)
                                .unwrap_or(0);
                            let union = OffsetRange {
                                start: range.start.min(c.start),
                                end: range.end.max(c.end),
                            };
                            (Some(union), Some(union.start < persisted))
                        }
                        _ => (Some(range), below),
                    }
                }
                // No frame there on the platter, but the cache took the flip too: a lost
                // fsync left frames the platter lacks, and the engine reads those.
                (None, below) if flip.read_through().is_some() => {
                    let visible = visible_before_flip(&world.fs, &flip);
                    let range =
                        visible.and_then(|b| disk::locate_in_image(&flip.path, flip.position, &b));
                    (range, below)
                }
                found => found,
            }
        }
        // An 8-byte word: the flip can move what it says anywhere between its value
        // before and after (for `hwm`, the HWM the next open trusts; for
        // `consumer.offset`, the frontier it loads).
        // A flip that reached the page cache too moves the word a process crash's
        // open reads, which differs from the platter's after a lost or failed fsync:
        // the reach spans both moves.
        (Some(_), FileKind::Hwm | FileKind::ConsumerOffset) => {
            let moved = |before: Option<Vec<u8>>, after: Option<Vec<u8>>| {
                Some((word::decode(&before?)?, word::decode(&after?)?))
            };
            let durable = moved(
                durable_before_flip(&world.fs, &flip),
                world.fs.durable_bytes(&flip.path),
            );
            word_move = flip.read_through().and_then(|shown| {
                let m = moved(
                    visible_before_flip(&world.fs, &flip),
                    world.fs.visible_bytes(shown),
                )?;
                Some((shown.to_path_buf(), m))
            });
            let hull = durable
                .into_iter()
                .chain(word_move.as_ref().map(|&(_, m)| m))
                .map(|(a, b)| (a.min(b), a.max(b)))
                .reduce(|(s, e), (t, f)| (s.min(t), e.max(f)));
            (
                durable
                    .and(hull)
                    .map(|(start, end)| OffsetRange { start, end }),
                None,
            )
        }
        _ => (None, None),
    };
    let mut rec = world.recorder.lock();
    rec.paths.bit_flips += 1;
    let woke_ns = rec.supervisor_woke_ns;
    rec.flips.push((
        woke_ns,
        FlipAt {
            path: flip.path.display().to_string(),
            position: flip.position,
            bit: flip.bit,
        },
    ));
    let fault_index = rec.fault(
        FaultKind::BitFlip {
            file: want,
            offsets,
            below_hwm,
        },
        tp.as_ref(),
        Some(&flip.path.display().to_string()),
    );
    if let Some(tp) = &tp
        && !held.is_empty()
    {
        let now = rec.now_ms();
        rec.history.damage_held(now, fault_index, tp, held);
    }
    if want == FileKind::Wal
        && let Some(before) = durable_before_flip(&world.fs, &flip)
    {
        // The entries of the frame the flip hit, from the image as it was before.
        let hit = flip.position..flip.position + 1;
        rec.wal_damaged(fault_index, &flip.path, &before, &[hit], true);
    }
    // A flip that lands while the node's open runs may be read by it or not: the open
    // is then held to either view of the disk.
    let opening = !rec.node_down && world.slot().is_none();
    if opening
        && matches!(want, FileKind::Segment | FileKind::Hwm)
        && let Some(tp) = &tp
        && let Some(decoded) = flip
            .path
            .parent()
            .and_then(|d| disk::dir_image(&world.fs, d, disk::Image::Visible))
            .map(|image| crate::reference::decode(&image))
    {
        let now = rec.now_ms();
        rec.history
            .disk_at_open(now, tp, DiskView::from_decoded(&decoded), true);
    }
    // A flip that makes the WAL checkpoint unreadable while the open runs, before the
    // open read it: that open replays every entry, skipping those whose records it can
    // see. List them now, as a restart does when it finds the checkpoint unreadable.
    // The file the open reads is the inode its restart found named `checkpoint`, whose
    // durable name may still be the temp file's (helper-113).
    if opening
        && want == FileKind::Wal
        && rec.checkpoint_read == Some(flip.inode)
        && !world
            .fs
            .read_since_crash(&flip.path, &(flip.position..flip.position + 1))
        && visible_before_flip(&world.fs, &flip)
            .is_some_and(|b| crate::reference::wal::checkpoint_readable(&b))
        && flip
            .read_through()
            .and_then(|shown| world.fs.visible_bytes(shown))
            .is_some_and(|b| !crate::reference::wal::checkpoint_readable(&b))
    {
        // A partition damaged since the restart may have been scanned before the
        // damage, and its open then sees more than the disk shows now: it gets no
        // listing (the checker then counts every copy below its HWM as seen).
        let damaged: std::collections::BTreeSet<TopicPartition> =
            rec.struck_since_restart().flatten().cloned().collect();
        let now = rec.now_ms();
        for (tp, shown, visible) in super::restart::visible_now(world) {
            if !damaged.contains(&tp) {
                rec.history
                    .visible_at_open(now, &tp, shown.start, shown.end, visible);
            }
        }
    }
    // After the listing above, which follows its flip directly.
    if node::is_checkpoint_file(&flip.path) {
        let floors = held_floors([
            durable_before_flip(&world.fs, &flip),
            visible_before_flip(&world.fs, &flip),
        ]);
        let earlier = rec.checkpoint_flips.insert(flip.inode, fault_index);
        let read = opening && rec.checkpoint_read == Some(flip.inode);
        let now = rec.now_ms();
        rec.history
            .checkpoint_damaged(now, fault_index, floors, (earlier, read));
    }
    if let Some((read_as, moved)) = word_move {
        let name = read_as.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let written = tp
            .as_ref()
            .is_some_and(|tp| rec.frontier_files.get(tp) == Some(&flip.inode));
        let now = rec.now_ms();
        rec.history
            .word_flipped(now, fault_index, name, moved, written);
    }
    // Last of the flip's events (the listing above follows the flip directly).
    if flip.read_through().is_none() {
        let now = rec.now_ms();
        rec.history.flip_missed_cache(now, fault_index);
    }
    true
}

/// The floors the checkpoint `images` held (the platter's and the page cache's, before
/// a flip), the higher per partition; `None` when no image reads.
fn held_floors(images: [Option<Vec<u8>>; 2]) -> Option<Vec<CheckpointFloor>> {
    let mut held: BTreeMap<TopicPartition, (u64, Offset)> = BTreeMap::new();
    let mut read = false;
    for floors in images
        .iter()
        .flatten()
        .filter_map(|bytes| super::restart::decode_floors(bytes))
    {
        read = true;
        for f in floors {
            let at = held.entry(f.tp).or_default();
            *at = (at.0.max(f.seq), at.1.max(f.offset));
        }
    }
    read.then(|| {
        held.into_iter()
            .map(|(tp, (seq, offset))| CheckpointFloor { tp, seq, offset })
            .collect()
    })
}

/// The durable image of the file `flip` hit, as it was before the flip. Not the visible
/// file: a segment the reaper has unlinked but not yet made durably gone has no visible
/// name, and a crash brings it back.
pub(super) fn durable_before_flip(fs: &SimFs, flip: &crate::fs::BitFlip) -> Option<Vec<u8>> {
    let mut bytes = fs.durable_bytes(&flip.path)?;
    if let Some(byte) = bytes.get_mut(flip.position as usize) {
        *byte = flip.before;
    }
    Some(bytes)
}

/// The page cache's image of the inode `flip` hit, as it was before the flip, read
/// through the name that shows it (`None` when no name does). Not the file the durable
/// name's path shows now: between a rename and its directory's fsync that is another.
pub(super) fn visible_before_flip(fs: &SimFs, flip: &crate::fs::BitFlip) -> Option<Vec<u8>> {
    let mut bytes = fs.visible_bytes(flip.shown_as.as_deref()?)?;
    if flip.in_cache
        && let Some(byte) = bytes.get_mut(flip.position as usize)
    {
        *byte = flip.before;
    }
    Some(bytes)
}
