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
//! truncation is journaled metadata and stays pending); directory fsync EIO
//! (`sync_dir` of a directory with pending entries commits none of them: they stay
//! pending, as a journal commit that failed wrote all or nothing); lost fsync (Ok, nothing
//! persisted); ENOSPC on `write_at` (nothing written); misdirected writes (a pending
//! write persisted at fsync or crash lands a whole number of sectors away); corrupt
//! writes (a `write_at` of frame bytes to a log segment stores one bit flipped, in the
//! cache and so on the platter at the next fsync: in contract, as the commit path
//! re-reads what it fsynced before it acknowledges anything); bit flips
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

mod damage;
mod data;
pub mod dice;
mod events;
mod faults;
mod file;
mod inode;
mod inspect;
mod latent;
mod namespace;
mod ops;
mod options;
mod paths;
mod pause;
pub mod plugin;
mod power;
mod reads;

pub use damage::BitFlip;
pub use events::{CorruptedWrite, EVENTS_BUFFERED_MAX, FsEvent, FsEventKind, Overwritten};
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
            "/a/.b",
            "/a/..b/c",
            "/a/b.",
            "/\u{e9}t\u{e9}/caf\u{e9}",
            "/\u{e9}/./x",
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
