//! What the world reads of the disk without going through the engine: durable and
//! visible bytes, names and pending work. Never a fault, never a draw of the dice.

use super::*;

impl SimFs {
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

    /// The durable image of the file durably named `path` with the bytes under its
    /// unreadable sectors as they were written: where its frames lie, which an earlier
    /// latent sector hides from a decode of [`SimFs::durable_bytes`].
    pub fn durable_bytes_unmasked(&self, path: &Path) -> Option<Vec<u8>> {
        self.with_durable(path, |inode| inode.durable.clone())
    }

    /// The byte ranges of [`SimFs::durable_bytes`] a read of the platter fails on, in
    /// order (empty when none, or when there is no such file).
    pub fn durable_unreadable(&self, path: &Path) -> Vec<std::ops::Range<u64>> {
        self.with_durable(path, |inode| {
            inode.unreadable_ranges(inode.durable.len() as u64, false)
        })
        .unwrap_or_default()
    }

    /// The byte ranges of [`SimFs::visible_bytes`] a read fails on now, in order (empty
    /// when none, or when there is no such file).
    pub fn visible_unreadable(&self, path: &Path) -> Vec<std::ops::Range<u64>> {
        let Ok((dir, name)) = split(path) else {
            return Vec::new();
        };
        let state = self.lock();
        state
            .ns
            .visible(&dir, &name)
            .and_then(|ino| state.inodes.get(&ino))
            .map(|inode| inode.unreadable_ranges(inode.cache.len() as u64, true))
            .unwrap_or_default()
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

    /// The inode visibly named `path` now (what a handle opened there writes), to match
    /// against a [`BitFlip::inode`].
    pub fn visible_inode(&self, path: &Path) -> Option<u64> {
        let (dir, name) = split(path).ok()?;
        self.lock().ns.visible(&dir, &name)
    }

    /// Length of the page-cache view of the file visibly named `path`.
    pub fn visible_len(&self, path: &Path) -> Option<u64> {
        let (dir, name) = split(path).ok()?;
        let state = self.lock();
        let ino = state.ns.visible(&dir, &name)?;
        Some(state.inodes.get(&ino)?.cache.len() as u64)
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

    /// Whether a read since the last crash returned any byte of `range` of the file
    /// durably named `path` (whether damage landing there now comes after that read).
    pub fn read_since_crash(&self, path: &Path, range: &std::ops::Range<u64>) -> bool {
        let epoch = self.lock().epoch;
        self.with_durable(path, |inode| inode.reads.any(epoch, range))
            .unwrap_or(false)
    }

    fn with_durable<T>(&self, path: &Path, f: impl FnOnce(&Inode) -> T) -> Option<T> {
        let (dir, name) = split(path).ok()?;
        let state = self.lock();
        let ino = state.ns.durable(&dir, &name)?;
        Some(f(state.inodes.get(&ino)?))
    }
}
