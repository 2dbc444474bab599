//! [`SimFs`]: a simulated disk with a crash and fault model, implementing the engine's
//! [`Fs`] seam. It lives outside the simulated node, so it survives the node's crash.
//!
//! # Durability model
//!
//! **Files.** Each file (inode) has a *durable image* (what the platter holds), a *page
//! cache* (what reads see) and an ordered list of *pending* operations (`write_at` at a
//! position, `set_len`) made since the last successful `sync_data`. Invariant, unless an
//! injected fault broke it on purpose: cache = durable image + pending operations
//! replayed in order. `sync_data` replays the pending operations onto the durable image
//! (durable := cache for that file) and clears the list.
//!
//! **Directories.** Each directory maps names to inodes twice: the *visible* namespace
//! (what `open`, `exists`, `list_dir` see) and the *durable* one. Creating
//! (`CreateNew`, or `CreateTruncate` of a missing file), renaming (including over an
//! existing file) and removing a file are pending directory operations, kept in one
//! global ordered list, until `sync_dir` commits them:
//! - `sync_dir(d)` commits every pending operation on an entry of `d` (a rename counts
//!   for its *destination* directory: that sync is what makes the new name durable)
//!   plus every earlier pending operation sharing an entry or an inode with one being
//!   committed, so that what is committed commutes with what stays pending. Syncing
//!   the wrong directory therefore commits nothing the engine needed.
//! - directories themselves are durable when `create_dir_all` returns (the engine's
//!   contract says each one is synced into its parent; like that real fsync, this also
//!   commits the parent's pending entries). Directories are never removed.
//!
//! A file whose creation is lost disappears with its data (even fsynced data); a file
//! whose removal is lost comes back with its durable data; a lost rename leaves the old
//! name with its inode and the target with its old inode. Inodes no name or handle
//! refers to are freed.
//!
//! **Power loss** ([`SimFs::crash`], or a madsim kill of the node it is attached to, see
//! [`plugin`]). For every file, in order, each pending write is independently lost,
//! kept whole, or torn: a random proper subset of the absolute 512-byte sectors it
//! touches reaches the disk. So unsynced writes can persist out of order and leave
//! holes; bytes past the durable length are zero-filled. Each pending `set_len` is kept
//! or lost. Pending directory operations: a random *prefix* in their global order
//! survives. Why a prefix and not a random subset: every filesystem the engine targets
//! (ext4, xfs) journals metadata and commits transactions in order, so after a crash a
//! later namespace change is never durable while an earlier one is lost; a subset would
//! produce states (a rename durable but the create of its source lost) that no real disk
//! shows, and would make every failure uninterpretable. Per-directory ordering is still
//! harsher than the journal, because `sync_dir` commits only what belongs to that
//! directory. After a crash the cache is rebuilt from the durable image, every pending
//! list is empty, and the *epoch* is bumped: handles opened before it fail every
//! operation with ESTALE, so a leftover handle of a crashed node cannot write into the
//! new world.
//!
//! **Process crash** ([`SimFs::process_crash`], or a kill announced with
//! [`plugin::kill_process`]): the process dies, the kernel does not. The epoch is bumped
//! (old handles fail with ESTALE, as the dead process's descriptors are gone) and nothing
//! else changes: the page cache, every pending file operation and every pending
//! directory operation survive, so the next incarnation reads what the last one wrote,
//! synced or not, and a later power loss still drops whatever nobody synced, including
//! what the new incarnation read and built on. After an fsync EIO the cache keeps the
//! data no fsync will write (below): a restarted process reads it as if it were durable,
//! which is Linux's behaviour and the root of fsyncgate.
//!
//! **Faults** ([`FaultOptions`], capped, off after [`SimFs::heal`]): fsync EIO (Linux
//! semantics: the pending writes are *not* persisted, the cache still shows them, they
//! leave the list so a later fsync succeeds and persists none of them; a pending
//! truncation is journaled metadata and stays pending); lost fsync (Ok, nothing
//! persisted); ENOSPC on `write_at` (nothing written); misdirected writes (a pending
//! write persisted at fsync or crash lands a whole number of sectors away); bit flips
//! at rest ([`SimFs::flip_random_bit`]); latent sector errors ([`SimFs::latent_sector`]:
//! reads touching a sector fail with EIO until a write of it reaches the platter, see
//! `latent.rs`); latency (until the heal) and scheduling points.
//!
//! **Latency and kills.** Each operation may sleep (madsim simulated time) or yield
//! *before* it takes effect, and may sleep again *after* it took effect but before the
//! caller sees the result. A kill drops the task at such a point: with the sleep before,
//! the operation never happened; with the sleep after, it happened (e.g. data durable)
//! but the engine never learned so. Both windows exist on a real machine. Outside a
//! madsim runtime operations never wait. The same points are where the world drops a
//! cancelled request's future (`world::cancel`, which turns yields on for that): a
//! drop, like a kill, lands between disk calls, never inside one.
//!
//! **Determinism.** All randomness comes from a ChaCha8 stream seeded by
//! [`SimFs::new`]'s seed; every map is a `BTreeMap`, so the same seed and the same
//! sequence of calls give the same outcomes and the same event log.
//!
//! Errors are raw Linux errno values (`ENOENT`, `EEXIST`, `EIO`, `ENOSPC`, `ESTALE`, ...)
//! so their `kind()` matches what [`cafelog_engine::fs::StdFs`] returns.

pub mod dice;
mod events;
mod faults;
mod file;
mod inode;
mod latent;
mod namespace;
mod ops;
mod options;
mod paths;
mod pause;
pub mod plugin;

pub use events::{EVENTS_BUFFERED_MAX, FsEvent, FsEventKind, Overwritten};
pub use inode::{FILE_SIZE_MAX, SECTOR_SIZE};
pub use latent::{LatentSector, UNREADABLE_FILL};
pub use options::{FaultOptions, FaultOptionsError, LATENCY_MAX, MISDIRECT_SHIFT_SECTORS_LIMIT};

use cafelog_engine::fs::{File, Fs, OpenMode};
use dice::Dice;
use events::FsEventLog;
use faults::{Faults, SyncOutcome};
use inode::Inode;
use namespace::{InodeId, Namespace};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

pub use file::SimFile;
use paths::*;
use pause::*;
use std::time::Duration;

/// Linux errno values (asm-generic), the ones `std::io::Error::from_raw_os_error` maps.
mod errno {
    pub(super) const ENOENT: i32 = 2;
    pub(super) const EIO: i32 = 5;
    pub(super) const EBADF: i32 = 9;
    pub(super) const EEXIST: i32 = 17;
    pub(super) const ENOTDIR: i32 = 20;
    pub(super) const EISDIR: i32 = 21;
    pub(super) const EINVAL: i32 = 22;
    pub(super) const EFBIG: i32 = 27;
    pub(super) const ENOSPC: i32 = 28;
    pub(super) const ESTALE: i32 = 116;
}

fn os_error(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// A bit flipped by [`SimFs::flip_random_bit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitFlip {
    /// The durable name of the file.
    pub path: PathBuf,
    /// The byte's position in the file.
    pub position: u64,
    /// Which bit of the byte (0 = least significant).
    pub bit: u8,
    /// The byte before and after.
    pub before: u8,
    pub after: u8,
    /// The page cache held the same byte and took the flip too (the platter and the
    /// cache disagree only where a write is pending or an fsync lied).
    pub in_cache: bool,
}

/// The simulated disk. Cheap to clone: clones share one disk.
#[derive(Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for SimFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("SimFs")
            .field("epoch", &state.epoch)
            .field("files", &state.inodes.len())
            .field("healed", &state.healed)
            .finish()
    }
}

struct State {
    dice: Dice,
    options: FaultOptions,
    healed: bool,
    /// Crash count; handles remember the epoch they were opened in.
    epoch: u64,
    next_inode: InodeId,
    inodes: BTreeMap<InodeId, Inode>,
    ns: Namespace,
    log: FsEventLog,
    enospc_streak: u32,
}

impl SimFs {
    /// An empty disk (just `/`) whose random choices all derive from `seed`.
    pub fn new(seed: u64, options: FaultOptions) -> Result<Self, FaultOptionsError> {
        options.validate()?;
        Ok(Self {
            state: Arc::new(Mutex::new(State {
                dice: Dice::new(seed),
                options,
                healed: false,
                epoch: 0,
                next_inode: 1,
                inodes: BTreeMap::new(),
                ns: Namespace::new(),
                log: FsEventLog::default(),
                enospc_streak: 0,
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is a model bug that already failed the run;
        // the state is still readable for the report.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the fault options (e.g. a fault phase of a scenario).
    pub fn set_options(&self, options: FaultOptions) -> Result<(), FaultOptionsError> {
        options.validate()?;
        self.lock().options = options;
        Ok(())
    }

    /// The current fault options.
    pub fn options(&self) -> FaultOptions {
        self.lock().options.clone()
    }

    /// From now on no fault fires (liveness phase). Crashes still lose unsynced data.
    pub fn heal(&self) {
        let mut state = self.lock();
        if !state.healed {
            state.healed = true;
            let epoch = state.epoch;
            state.log.record(
                epoch,
                FsEventKind::Heal,
                PathBuf::new(),
                None,
                None,
                String::new(),
            );
        }
    }

    /// Whether [`SimFs::heal`] was called.
    pub fn is_healed(&self) -> bool {
        self.lock().healed
    }

    /// The incarnation: how many crashes this disk went through.
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Power loss: applies the crash model (module docs) to every file and directory.
    pub fn crash(&self) {
        self.lock().crash();
    }

    /// Process crash: the process dies, the kernel does not. Handles go stale, nothing
    /// else changes: the next incarnation reads the page cache, and what was pending
    /// stays pending until a sync or the next power loss (module docs).
    pub fn process_crash(&self) {
        self.lock().process_crash();
    }

    /// Takes the events logged since the last call, in order.
    pub fn take_events(&self) -> Vec<FsEvent> {
        self.lock().log.take()
    }

    /// How many events of each kind were logged since the disk was created.
    pub fn event_counts(&self) -> BTreeMap<FsEventKind, u64> {
        self.lock().log.counts()
    }

    /// Events counted but not stored because [`EVENTS_BUFFERED_MAX`] were waiting.
    pub fn events_dropped(&self) -> u64 {
        self.lock().log.dropped()
    }

    /// Length of the durable image of the file durably named `path`.
    pub fn durable_len(&self, path: &Path) -> Option<u64> {
        self.with_durable(path, |inode| inode.durable.len() as u64)
    }

    /// The durable image of the file durably named `path`, unreadable sectors shown as
    /// [`UNREADABLE_FILL`].
    pub fn durable_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        self.with_durable(path, |inode| {
            inode.mask_unreadable(inode.durable.clone(), false)
        })
    }

    /// The page-cache view of the file visibly named `path` (what a read returns),
    /// bytes a read fails on shown as [`UNREADABLE_FILL`].
    pub fn visible_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let (dir, name) = split(path).ok()?;
        let state = self.lock();
        let ino = state.ns.visible(&dir, &name)?;
        let inode = state.inodes.get(&ino)?;
        Some(inode.mask_unreadable(inode.cache.clone(), true))
    }

    /// Whether a file is visible at `path` now (what an open would find).
    pub fn visible_exists(&self, path: &Path) -> bool {
        split(path).is_ok_and(|(dir, name)| self.lock().ns.visible(&dir, &name).is_some())
    }

    /// The visible entries (files and subdirectories) of directory `path`, sorted:
    /// what a listing returns now.
    pub fn visible_names(&self, path: &Path) -> Option<Vec<String>> {
        self.lock().list_dir(path).ok()
    }

    /// Whether the file visibly named `path` has unsynced writes or truncations.
    pub fn has_pending_data(&self, path: &Path) -> bool {
        let Ok((dir, name)) = split(path) else {
            return false;
        };
        let state = self.lock();
        state
            .ns
            .visible(&dir, &name)
            .and_then(|ino| state.inodes.get(&ino))
            .is_some_and(|inode| !inode.pending.is_empty())
    }

    /// How many directory operations (anywhere) are not durable yet.
    pub fn pending_dir_op_count(&self) -> usize {
        self.lock().ns.pending.len()
    }

    /// The durable entries (files and subdirectories) of directory `path`, sorted.
    pub fn durable_names(&self, path: &Path) -> Option<Vec<String>> {
        let path = normalize(path).ok()?;
        let state = self.lock();
        let dir = state.ns.dirs.get(&path)?;
        let mut names: Vec<String> = dir.durable.keys().chain(&dir.subdirs).cloned().collect();
        names.sort();
        Some(names)
    }

    fn with_durable<T>(&self, path: &Path, f: impl FnOnce(&Inode) -> T) -> Option<T> {
        let (dir, name) = split(path).ok()?;
        let state = self.lock();
        let ino = state.ns.durable(&dir, &name)?;
        Some(f(state.inodes.get(&ino)?))
    }

    /// Flips one random bit of durable data at rest, in a file whose durable path
    /// satisfies `filter` (e.g. `|p| p.extension() == Some("log".as_ref())`). The page
    /// cache shows the flip too, as if the page had been evicted and re-read, unless a
    /// pending operation decides that byte. Returns `None` (and flips nothing) after
    /// [`SimFs::heal`] or when no matching file has durable bytes.
    pub fn flip_random_bit(&self, filter: impl Fn(&Path) -> bool) -> Option<BitFlip> {
        self.lock().flip_random_bit(&filter, None)
    }

    /// Flips bit `bit` of the byte at `position` of the durable file at `path` (a flip
    /// a shrink repeats), drawing the same dice [`SimFs::flip_random_bit`] would, so the
    /// disk's later draws go on as in the run it repeats. Where that file or byte no
    /// longer exists the random flip is made instead.
    pub fn flip_bit_at(
        &self,
        filter: impl Fn(&Path) -> bool,
        path: &Path,
        position: u64,
        bit: u8,
    ) -> Option<BitFlip> {
        self.lock()
            .flip_random_bit(&filter, Some((path, position, bit)))
    }

    /// Makes one random sector of durable data unreadable (a latent sector error, see
    /// `latent.rs`), in a file whose durable path satisfies `filter`, within its first
    /// `within(path)` bytes when that is given and not zero (where its data lies).
    /// `None` (and nothing changes) after [`SimFs::heal`] or when no matching file has
    /// durable bytes.
    pub fn latent_sector(
        &self,
        filter: impl Fn(&Path) -> bool,
        within: impl Fn(&Path) -> Option<u64>,
    ) -> Option<LatentSector> {
        self.lock().latent_sector(&filter, &within)
    }

    /// Checks the model's invariants (walks all data: call it at the end of a run or in
    /// tests). Panics on a violation, which is a bug in the simulator.
    pub fn check_invariants(&self) {
        let state = self.lock();
        state.ns.check();
        let mut links: BTreeMap<InodeId, u32> = BTreeMap::new();
        for dir in state.ns.dirs.values() {
            for &ino in dir.visible.values() {
                *links.entry(ino).or_insert(0) += 1;
            }
            for &ino in dir.durable.values() {
                assert!(
                    state.inodes.contains_key(&ino),
                    "durable entry names a freed inode"
                );
            }
        }
        for (ino, inode) in &state.inodes {
            assert_eq!(
                inode.visible_links,
                links.get(ino).copied().unwrap_or(0),
                "visible link count of inode {ino}"
            );
            if !inode.diverged {
                assert!(
                    inode.replay() == inode.cache,
                    "cache of inode {ino} is not durable + pending"
                );
            }
        }
    }

    /// Draws how this operation waits, then waits, applies `effect`, maybe waits again.
    async fn run<T: Send>(
        &self,
        effect: impl FnOnce(&mut State) -> io::Result<T> + Send,
    ) -> io::Result<T> {
        let (before, after) = self.lock().draw_pauses();
        pause(before).await;
        let result = effect(&mut self.lock());
        pause(after).await;
        result
    }
}

impl State {
    fn faults(&mut self) -> (Faults<'_>, &mut BTreeMap<InodeId, Inode>, &mut Namespace) {
        (
            Faults {
                dice: &mut self.dice,
                options: &self.options,
                healed: self.healed,
                log: &mut self.log,
                epoch: self.epoch,
            },
            &mut self.inodes,
            &mut self.ns,
        )
    }

    /// The inode behind a handle, or ESTALE when the handle predates a crash.
    fn handle_inode(&mut self, handle: &SimFile) -> io::Result<&mut Inode> {
        if handle.epoch != self.epoch {
            self.log.record(
                self.epoch,
                FsEventKind::StaleHandle,
                handle.path.clone(),
                None,
                None,
                format!(
                    "handle of epoch {} used in epoch {}",
                    handle.epoch, self.epoch
                ),
            );
            return Err(os_error(errno::ESTALE));
        }
        Ok(self
            .inodes
            .get_mut(&handle.ino)
            .expect("an open handle of the current epoch keeps its inode alive"))
    }

    /// Frees `ino` when no name, pending operation or open handle refers to it.
    fn collect(&mut self, ino: InodeId) {
        let Some(inode) = self.inodes.get(&ino) else {
            return;
        };
        if inode.visible_links == 0 && inode.open_handles == 0 && !self.ns.references(ino) {
            self.inodes.remove(&ino);
        }
    }

    fn commit_dir(&mut self, dir: &Path) {
        let committed = self.ns.commit(dir);
        self.collect_after(&committed);
    }

    fn collect_after(&mut self, committed: &[namespace::DirOp]) {
        for op in committed {
            match op {
                namespace::DirOp::Unlink { ino, .. } => self.collect(*ino),
                namespace::DirOp::Rename {
                    replaced: Some(ino),
                    ..
                } => self.collect(*ino),
                _ => {}
            }
        }
    }

    fn crash(&mut self) {
        let ended = self.epoch;
        let paths = self.ns.inode_paths();
        let (mut faults, inodes, ns) = self.faults();
        let mut files = 0u64;
        let mut pending_ops = 0u64;
        for (ino, inode) in inodes.iter_mut() {
            if !inode.pending.is_empty() {
                files += 1;
                pending_ops += inode.pending.len() as u64;
            }
            let unnamed = PathBuf::from(format!("<unnamed inode {ino}>"));
            let latent = inode.latent_bytes();
            faults.crash(inode, paths.get(ino).unwrap_or(&unnamed));
            inode.latent_after_power_loss(&latent);
        }
        let (kept, lost) = ns.crash(faults.dice);
        for (kind, ops) in [
            (FsEventKind::CrashDirOpKept, &kept),
            (FsEventKind::CrashDirOpLost, &lost),
        ] {
            for op in ops {
                faults
                    .log
                    .record(ended, kind, op.path(), None, None, op.describe());
            }
        }
        faults.log.record(
            ended,
            FsEventKind::Crash,
            PathBuf::new(),
            None,
            None,
            format!(
                "epoch {ended} ended: {pending_ops} pending file operations in {files} files, \
                 {} directory operations kept, {} lost",
                kept.len(),
                lost.len()
            ),
        );
        self.epoch += 1;
        self.enospc_streak = 0;
        // The visible namespace is now the durable one: recount links, free the rest.
        for inode in self.inodes.values_mut() {
            inode.visible_links = 0;
        }
        let mut named = Vec::new();
        for dir in self.ns.dirs.values() {
            named.extend(dir.visible.values().copied());
        }
        for ino in named {
            if let Some(inode) = self.inodes.get_mut(&ino) {
                inode.visible_links += 1;
            }
        }
        self.inodes.retain(|_, inode| inode.visible_links > 0);
    }

    fn process_crash(&mut self) {
        let ended = self.epoch;
        let files = self
            .inodes
            .values()
            .filter(|i| !i.pending.is_empty())
            .count();
        let pending_ops: usize = self.inodes.values().map(|i| i.pending.len()).sum();
        let dir_ops = self.ns.pending.len();
        self.log.record(
            ended,
            FsEventKind::ProcessCrash,
            PathBuf::new(),
            None,
            None,
            format!(
                "epoch {ended} ended by a process crash: {pending_ops} pending file \
                 operations in {files} files and {dir_ops} directory operations stay pending"
            ),
        );
        self.epoch += 1;
        self.enospc_streak = 0;
        // The dead process's handles closed with it: an unlinked file no name refers to
        // any more is freed, as the kernel frees it at the last close.
        let inodes: Vec<InodeId> = self.inodes.keys().copied().collect();
        for ino in inodes {
            if let Some(inode) = self.inodes.get_mut(&ino) {
                inode.open_handles = 0;
            }
            self.collect(ino);
        }
    }

    /// A random durably named file that `filter` accepts and that has durable bytes: where
    /// damage at rest lands. `None` after the heal or when there is none.
    fn damage_target(&mut self, filter: &dyn Fn(&Path) -> bool) -> Option<(PathBuf, InodeId)> {
        if self.healed {
            return None;
        }
        let candidates: Vec<(PathBuf, InodeId)> = self
            .ns
            .durable_files()
            .into_iter()
            .filter(|(path, ino)| {
                filter(path) && self.inodes.get(ino).is_some_and(|i| !i.durable.is_empty())
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.dice.below(candidates.len() as u64) as usize].clone())
    }

    fn flip_random_bit(
        &mut self,
        filter: &dyn Fn(&Path) -> bool,
        target: Option<(&Path, u64, u8)>,
    ) -> Option<BitFlip> {
        let (mut path, mut ino) = self.damage_target(filter)?;
        let len = self.inodes.get(&ino).map_or(0, |i| i.durable.len() as u64);
        let mut position = self.dice.below(len);
        let mut bit = self.dice.below(8) as u8;
        if let Some((at, p, b)) = target
            && let Some(found) = self.ns.durable_files().into_iter().find(|(candidate, i)| {
                candidate == at
                    && self
                        .inodes
                        .get(i)
                        .is_some_and(|inode| p < inode.durable.len() as u64)
            })
        {
            (path, ino) = found;
            position = p;
            bit = b;
        }
        let inode = self.inodes.get_mut(&ino).expect("candidate inode exists");
        let index = position as usize;
        let before = inode.durable[index];
        let after = before ^ (1 << bit);
        inode.durable[index] = after;
        let masked = inode.pending.iter().any(|op| op.masks(position));
        let in_cache = !masked && inode.cache.get(index) == Some(&before);
        if in_cache {
            inode.cache[index] = after;
        }
        let flip = BitFlip {
            path: path.clone(),
            position,
            bit,
            before,
            after,
            in_cache,
        };
        self.log.record(
            self.epoch,
            FsEventKind::BitFlip,
            path,
            Some(position),
            Some(1),
            format!(
                "bit {bit}: {before:#04x} -> {after:#04x}{}",
                if masked {
                    " (masked by pending write)"
                } else {
                    ""
                }
            ),
        );
        Some(flip)
    }

    fn write(&mut self, handle: &SimFile, data: &[u8], position: u64) -> io::Result<()> {
        if !handle.writable {
            self.handle_inode(handle)?;
            return Err(os_error(errno::EBADF));
        }
        self.handle_inode(handle)?;
        let end = position
            .checked_add(data.len() as u64)
            .filter(|&end| end <= FILE_SIZE_MAX);
        if end.is_none() {
            return Err(os_error(errno::EFBIG));
        }
        let options = &self.options;
        let (p, max, streak_max) = (
            options.enospc_probability,
            options.enospc_max,
            options.enospc_consecutive_max,
        );
        let streak_ok = self.enospc_streak < streak_max;
        let (mut faults, _, _) = self.faults();
        if streak_ok && faults.fires(FsEventKind::Enospc, p, max) {
            faults.log.record(
                faults.epoch,
                FsEventKind::Enospc,
                handle.path.clone(),
                Some(position),
                Some(data.len() as u64),
                String::from("write refused, nothing written"),
            );
            self.enospc_streak += 1;
            return Err(os_error(errno::ENOSPC));
        }
        self.enospc_streak = 0;
        let inode = self.handle_inode(handle)?;
        inode.write(position, data);
        debug_assert!(data.is_empty() || inode.cache.len() as u64 >= position + data.len() as u64);
        Ok(())
    }

    fn set_len(&mut self, handle: &SimFile, len: u64) -> io::Result<()> {
        let inode = self.handle_inode(handle)?;
        if !handle.writable {
            return Err(os_error(errno::EINVAL)); // ftruncate on a read-only fd
        }
        if len > FILE_SIZE_MAX {
            return Err(os_error(errno::EFBIG));
        }
        inode.set_len(len);
        Ok(())
    }

    fn sync_data(&mut self, handle: &SimFile) -> io::Result<()> {
        if self.handle_inode(handle)?.pending.is_empty() {
            return Ok(());
        }
        let (mut faults, inodes, ns) = self.faults();
        let inode = inodes.get_mut(&handle.ino).expect("checked above");
        // The name is only needed when a fault is logged: looked up then.
        let path = || path_of(ns, handle.ino, &handle.path);
        let rewritten = inode.latent_pending_writes();
        match faults.sync(inode, &path) {
            SyncOutcome::Persisted => {
                inode.latent_persisted(&rewritten);
                Ok(())
            }
            SyncOutcome::Lost => Ok(()),
            SyncOutcome::Eio => Err(os_error(errno::EIO)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_of_split_agrees_with_normalize() {
        for text in [
            "/",
            "/a",
            "/a/b",
            "/data/t-1/0/00000000000000000000.log",
            "a/b",
            "/a/",
            "//a",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/.",
            "/..",
            "/a/.",
            "/a/..",
            ".",
            "",
        ] {
            let path = Path::new(text);
            let slow = normalize_components(path).and_then(|p| {
                match (p.parent(), p.file_name().and_then(|n| n.to_str())) {
                    (Some(parent), Some(name)) => Ok((parent.to_owned(), name.to_owned())),
                    _ => Err(os_error(errno::EISDIR)),
                }
            });
            let fast = split(path);
            assert_eq!(
                fast.as_ref().ok(),
                slow.as_ref().ok(),
                "split({text:?}) differs from the component walk"
            );
            assert_eq!(fast.is_err(), slow.is_err(), "{text:?}");
            if is_normal(path) {
                assert_eq!(
                    normalize_components(path).ok().as_deref(),
                    Some(path),
                    "{text:?}"
                );
            }
        }
    }
}
