//! [`Namespace`]: directories, their visible and durable entries, and the ordered list of
//! pending directory operations between the two.
//!
//! Invariants (checked by [`Namespace::check`]):
//! - replaying `pending` in order over the durable entries gives the visible entries;
//! - directories are always durable (`create_dir_all` syncs them into their parent) and
//!   never removed; a name is a file or a subdirectory, never both;
//! - every pending operation, applied to the durable state, finds the entries it expects
//!   (asserted in `apply_durable`): this holds because a commit takes along every earlier
//!   pending operation that shares an entry or an inode with it, and a crash keeps a
//!   prefix.

use super::dice::Dice;
#[allow(
    clippy::disallowed_types,
    reason = "Dirs::index: lookups only, a fixed-key hasher"
)]
use std::collections::HashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::path::{Path, PathBuf};

pub(crate) type InodeId = u64;

#[derive(Debug, Default)]
pub(crate) struct Dir {
    pub(crate) visible: BTreeMap<String, InodeId>,
    pub(crate) durable: BTreeMap<String, InodeId>,
    pub(crate) subdirs: BTreeSet<String>,
}

#[derive(Clone, Debug)]
pub(crate) enum DirOp {
    Link {
        dir: PathBuf,
        name: String,
        ino: InodeId,
    },
    Unlink {
        dir: PathBuf,
        name: String,
        ino: InodeId,
    },
    Rename {
        from_dir: PathBuf,
        from_name: String,
        to_dir: PathBuf,
        to_name: String,
        ino: InodeId,
        replaced: Option<InodeId>,
    },
}

impl DirOp {
    /// The directory whose `sync_dir` commits this operation. A rename is committed by
    /// its destination directory: that sync is what makes the new name durable.
    fn commit_dir(&self) -> &Path {
        match self {
            DirOp::Link { dir, .. } | DirOp::Unlink { dir, .. } => dir,
            DirOp::Rename { to_dir, .. } => to_dir,
        }
    }

    fn entries(&self) -> Vec<(&Path, &str)> {
        match self {
            DirOp::Link { dir, name, .. } | DirOp::Unlink { dir, name, .. } => {
                vec![(dir.as_path(), name.as_str())]
            }
            DirOp::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ..
            } => vec![
                (from_dir.as_path(), from_name.as_str()),
                (to_dir.as_path(), to_name.as_str()),
            ],
        }
    }

    fn inodes(&self) -> Vec<InodeId> {
        match self {
            DirOp::Link { ino, .. } | DirOp::Unlink { ino, .. } => vec![*ino],
            DirOp::Rename { ino, replaced, .. } => {
                let mut inodes = vec![*ino];
                inodes.extend(*replaced);
                inodes
            }
        }
    }

    /// The path an event about this operation names: the entry it creates or removes.
    pub(crate) fn path(&self) -> PathBuf {
        match self {
            DirOp::Link { dir, name, .. } | DirOp::Unlink { dir, name, .. } => dir.join(name),
            DirOp::Rename {
                to_dir, to_name, ..
            } => to_dir.join(to_name),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            DirOp::Link { dir, name, ino } => {
                format!("create {} (inode {ino})", dir.join(name).display())
            }
            DirOp::Unlink { dir, name, ino } => {
                format!("remove {} (inode {ino})", dir.join(name).display())
            }
            DirOp::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ino,
                replaced,
            } => format!(
                "rename {} -> {} (inode {ino}, replacing {replaced:?})",
                from_dir.join(from_name).display(),
                to_dir.join(to_name).display()
            ),
        }
    }
}

/// The directories by path. Iterated in path order, as a `BTreeMap<PathBuf, Dir>` is
/// (the crash, the link recount and the bit-flip candidates depend on that order); looked
/// up through a hash index, because a `BTreeMap<PathBuf, _>` lookup compares paths
/// component by component, and every SimFs call makes a few.
#[derive(Debug, Default)]
pub(crate) struct Dirs {
    /// Sorted by path (`Path`'s order). Bounded by the directories ever created: they
    /// are never removed.
    sorted: Vec<(PathBuf, Dir)>,
    /// The position of each path in `sorted`; rebuilt when a directory is added. A
    /// fixed-key hasher: lookups only, never iterated, and no OS randomness drawn
    /// inside the simulation.
    #[allow(clippy::disallowed_types, reason = "lookups only, a fixed-key hasher")]
    index: HashMap<PathBuf, usize, BuildHasherDefault<DefaultHasher>>,
}

impl Dirs {
    pub(crate) fn get(&self, path: &Path) -> Option<&Dir> {
        let &position = self.index.get(path)?;
        self.sorted.get(position).map(|(_, dir)| dir)
    }

    pub(crate) fn get_mut(&mut self, path: &Path) -> Option<&mut Dir> {
        let &position = self.index.get(path)?;
        self.sorted.get_mut(position).map(|(_, dir)| dir)
    }

    pub(crate) fn contains_key(&self, path: &Path) -> bool {
        self.index.contains_key(path)
    }

    /// Adds `path` (or replaces its directory, returning the old one).
    pub(crate) fn insert(&mut self, path: PathBuf, dir: Dir) -> Option<Dir> {
        match self
            .sorted
            .binary_search_by(|(p, _)| p.as_path().cmp(&path))
        {
            Ok(position) => Some(std::mem::replace(&mut self.sorted[position].1, dir)),
            Err(position) => {
                self.sorted.insert(position, (path, dir));
                self.index = self
                    .sorted
                    .iter()
                    .enumerate()
                    .map(|(i, (p, _))| (p.clone(), i))
                    .collect();
                None
            }
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&PathBuf, &Dir)> {
        self.sorted.iter().map(|(p, d)| (p, d))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Dir> {
        self.sorted.iter().map(|(_, d)| d)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Dir> {
        self.sorted.iter_mut().map(|(_, d)| d)
    }
}

impl<'a> IntoIterator for &'a Dirs {
    type Item = (&'a PathBuf, &'a Dir);
    type IntoIter = Box<dyn Iterator<Item = (&'a PathBuf, &'a Dir)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[derive(Debug)]
pub(crate) struct Namespace {
    pub(crate) dirs: Dirs,
    pub(crate) pending: Vec<DirOp>,
}

impl Namespace {
    pub(crate) fn new() -> Self {
        let mut dirs = Dirs::default();
        dirs.insert(PathBuf::from("/"), Dir::default());
        Self {
            dirs,
            pending: Vec::new(),
        }
    }

    pub(crate) fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains_key(path)
    }

    pub(crate) fn visible(&self, dir: &Path, name: &str) -> Option<InodeId> {
        self.dirs.get(dir)?.visible.get(name).copied()
    }

    pub(crate) fn durable(&self, dir: &Path, name: &str) -> Option<InodeId> {
        self.dirs.get(dir)?.durable.get(name).copied()
    }

    /// Adds a directory; it is durable at once. The caller has checked that `parent`
    /// exists and holds no file named `name` (visible or durable).
    pub(crate) fn add_dir(&mut self, parent: &Path, name: &str) {
        let dir = self.dirs.get_mut(parent).expect("parent directory exists");
        assert!(!dir.visible.contains_key(name) && !dir.durable.contains_key(name));
        dir.subdirs.insert(name.to_owned());
        let previous = self.dirs.insert(parent.join(name), Dir::default());
        assert!(previous.is_none(), "directory added twice");
    }

    pub(crate) fn link(&mut self, dir: &Path, name: &str, ino: InodeId) {
        let entries = self.dirs.get_mut(dir).expect("directory exists");
        assert!(!entries.subdirs.contains(name));
        let previous = entries.visible.insert(name.to_owned(), ino);
        assert!(previous.is_none(), "link over an existing entry");
        self.pending.push(DirOp::Link {
            dir: dir.to_owned(),
            name: name.to_owned(),
            ino,
        });
    }

    pub(crate) fn unlink(&mut self, dir: &Path, name: &str) -> Option<InodeId> {
        let ino = self.dirs.get_mut(dir)?.visible.remove(name)?;
        self.pending.push(DirOp::Unlink {
            dir: dir.to_owned(),
            name: name.to_owned(),
            ino,
        });
        Some(ino)
    }

    /// Moves a visible entry; returns the inode moved and the one it replaced. The
    /// caller has checked that both directories exist and `from` names a file.
    pub(crate) fn rename(
        &mut self,
        from_dir: &Path,
        from_name: &str,
        to_dir: &Path,
        to_name: &str,
    ) -> (InodeId, Option<InodeId>) {
        let ino = self
            .dirs
            .get_mut(from_dir)
            .and_then(|d| d.visible.remove(from_name))
            .expect("rename source exists");
        let replaced = self
            .dirs
            .get_mut(to_dir)
            .expect("rename destination directory exists")
            .visible
            .insert(to_name.to_owned(), ino);
        self.pending.push(DirOp::Rename {
            from_dir: from_dir.to_owned(),
            from_name: from_name.to_owned(),
            to_dir: to_dir.to_owned(),
            to_name: to_name.to_owned(),
            ino,
            replaced,
        });
        (ino, replaced)
    }

    /// `sync_dir(dir)`: commits every pending operation whose commit directory is `dir`,
    /// together with every earlier pending operation that shares an entry or an inode
    /// with one being committed (transitively), so that committed operations commute
    /// with the ones left pending. Returns the committed operations in order.
    pub(crate) fn commit(&mut self, dir: &Path) -> Vec<DirOp> {
        self.commit_where(|op| op.commit_dir() == dir)
    }

    /// How many pending operations `sync_dir(dir)` would commit directly (not counting
    /// the earlier ones they depend on).
    pub(crate) fn pending_in(&self, dir: &Path) -> usize {
        self.pending
            .iter()
            .filter(|op| op.commit_dir() == dir)
            .count()
    }

    /// Commits the pending operations on entry `dir/name` (and their dependencies), so
    /// that the durable namespace agrees with the visible one about that name.
    pub(crate) fn commit_entry(&mut self, dir: &Path, name: &str) -> Vec<DirOp> {
        self.commit_where(|op| op.entries().contains(&(dir, name)))
    }

    fn commit_where(&mut self, selected: impl Fn(&DirOp) -> bool) -> Vec<DirOp> {
        let mut entries: BTreeSet<(&Path, &str)> = BTreeSet::new();
        let mut inodes: BTreeSet<InodeId> = BTreeSet::new();
        let mut marked = vec![false; self.pending.len()];
        // Dependencies only point backwards, so one backward pass finds the closure.
        for (index, op) in self.pending.iter().enumerate().rev() {
            let hit = selected(op)
                || op.entries().iter().any(|entry| entries.contains(entry))
                || op.inodes().iter().any(|i| inodes.contains(i));
            if hit {
                marked[index] = true;
                entries.extend(op.entries());
                inodes.extend(op.inodes());
            }
        }
        let mut committed = Vec::new();
        let mut kept = Vec::new();
        for (op, commit) in std::mem::take(&mut self.pending).into_iter().zip(marked) {
            if commit {
                committed.push(op);
            } else {
                kept.push(op);
            }
        }
        self.pending = kept;
        for op in &committed {
            self.apply_durable(op);
        }
        committed
    }

    /// A crash: a random prefix of the pending operations reaches the disk (metadata is
    /// journaled and commits in order), the rest is lost, and the visible namespace
    /// becomes the durable one. Returns (kept, lost).
    pub(crate) fn crash(&mut self, dice: &mut Dice) -> (Vec<DirOp>, Vec<DirOp>) {
        let mut pending = std::mem::take(&mut self.pending);
        let kept_count = dice.below(pending.len() as u64 + 1) as usize;
        let lost = pending.split_off(kept_count);
        for op in &pending {
            self.apply_durable(op);
        }
        for dir in self.dirs.values_mut() {
            dir.visible = dir.durable.clone();
        }
        (pending, lost)
    }

    fn apply_durable(&mut self, op: &DirOp) {
        match op {
            DirOp::Link { dir, name, ino } => {
                let previous = self.durable_dir(dir).insert(name.clone(), *ino);
                assert_eq!(
                    previous,
                    None,
                    "durable link over an entry: {}",
                    op.describe()
                );
            }
            DirOp::Unlink { dir, name, ino } => {
                let previous = self.durable_dir(dir).remove(name);
                assert_eq!(
                    previous,
                    Some(*ino),
                    "durable unlink mismatch: {}",
                    op.describe()
                );
            }
            DirOp::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ino,
                replaced,
            } => {
                let previous = self.durable_dir(from_dir).remove(from_name);
                assert_eq!(
                    previous,
                    Some(*ino),
                    "durable rename source: {}",
                    op.describe()
                );
                let previous = self.durable_dir(to_dir).insert(to_name.clone(), *ino);
                assert_eq!(
                    previous,
                    *replaced,
                    "durable rename target: {}",
                    op.describe()
                );
            }
        }
    }

    fn durable_dir(&mut self, dir: &Path) -> &mut BTreeMap<String, InodeId> {
        &mut self
            .dirs
            .get_mut(dir)
            .expect("directories are never removed")
            .durable
    }

    /// Whether any entry (visible or durable) or pending operation names `ino`.
    pub(crate) fn references(&self, ino: InodeId) -> bool {
        self.dirs
            .values()
            .any(|d| d.visible.values().any(|&i| i == ino) || d.durable.values().any(|&i| i == ino))
            || self.pending.iter().any(|op| op.inodes().contains(&ino))
    }

    /// A path for every inode that has a name, visible names first.
    pub(crate) fn inode_paths(&self) -> BTreeMap<InodeId, PathBuf> {
        let mut paths = BTreeMap::new();
        for (dir_path, dir) in &self.dirs {
            for (name, &ino) in &dir.visible {
                paths.entry(ino).or_insert_with(|| dir_path.join(name));
            }
        }
        for (dir_path, dir) in &self.dirs {
            for (name, &ino) in &dir.durable {
                paths.entry(ino).or_insert_with(|| dir_path.join(name));
            }
        }
        paths
    }

    /// The name that shows `ino` now: `durable_path` when it still does, else the first
    /// other visible name in path order (a rename moved it and is not yet durable).
    pub(crate) fn visible_name(&self, durable_path: &Path, ino: InodeId) -> Option<PathBuf> {
        let shows = |dir: &Path, name: &str| self.visible(dir, name) == Some(ino);
        if let (Some(dir), Some(name)) = (
            durable_path.parent(),
            durable_path.file_name().and_then(|n| n.to_str()),
        ) && shows(dir, name)
        {
            return Some(durable_path.to_path_buf());
        }
        self.dirs.iter().find_map(|(dir_path, dir)| {
            dir.visible
                .iter()
                .find(|(_, i)| **i == ino)
                .map(|(name, _)| dir_path.join(name))
        })
    }

    /// Every durable file entry, in path order.
    pub(crate) fn durable_files(&self) -> Vec<(PathBuf, InodeId)> {
        let mut files = Vec::new();
        for (dir_path, dir) in &self.dirs {
            for (name, &ino) in &dir.durable {
                files.push((dir_path.join(name), ino));
            }
        }
        files
    }

    /// Checks the invariants in the module comment; panics on a violation.
    pub(crate) fn check(&self) {
        let mut replayed: BTreeMap<&Path, BTreeMap<String, InodeId>> = self
            .dirs
            .iter()
            .map(|(p, d)| (p.as_path(), d.durable.clone()))
            .collect();
        for op in &self.pending {
            match op {
                DirOp::Link { dir, name, ino } => {
                    replayed
                        .get_mut(dir.as_path())
                        .expect("dir")
                        .insert(name.clone(), *ino);
                }
                DirOp::Unlink { dir, name, .. } => {
                    replayed.get_mut(dir.as_path()).expect("dir").remove(name);
                }
                DirOp::Rename {
                    from_dir,
                    from_name,
                    to_dir,
                    to_name,
                    ino,
                    ..
                } => {
                    replayed
                        .get_mut(from_dir.as_path())
                        .expect("dir")
                        .remove(from_name);
                    replayed
                        .get_mut(to_dir.as_path())
                        .expect("dir")
                        .insert(to_name.clone(), *ino);
                }
            }
        }
        for (path, dir) in &self.dirs {
            assert_eq!(
                replayed.get(path.as_path()),
                Some(&dir.visible),
                "visible entries of {} are not durable + pending",
                path.display()
            );
            for name in &dir.subdirs {
                assert!(self.dirs.contains_key(&path.join(name)), "subdir missing");
                assert!(!dir.visible.contains_key(name) && !dir.durable.contains_key(name));
            }
            if let Some(parent) = path.parent() {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .expect("utf-8 name");
                assert!(
                    self.dirs
                        .get(parent)
                        .is_some_and(|p| p.subdirs.contains(name))
                );
            }
        }
    }
}
