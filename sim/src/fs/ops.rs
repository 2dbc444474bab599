//! Namespace operations on the simulated disk: open and create, directories, rename,
//! remove, and the directory fsync that makes pending entries durable.

use super::*;

impl State {
    pub(super) fn open(&mut self, fs: &SimFs, path: &Path, mode: OpenMode) -> io::Result<SimFile> {
        let (dir, name) = split(path)?;
        // One lookup of the directory answers all three questions.
        let Some(entries) = self.ns.dirs.get(&dir) else {
            return Err(self.missing_dir_error(&dir));
        };
        if entries.subdirs.contains(&name) {
            return Err(os_error(errno::EISDIR)); // `dir/name` is a directory.
        }
        let existing = entries.visible.get(&name).copied();
        let ino = match (mode, existing) {
            (OpenMode::Read | OpenMode::ReadWrite, None) => return Err(os_error(errno::ENOENT)),
            (OpenMode::CreateNew, Some(_)) => return Err(os_error(errno::EEXIST)),
            (OpenMode::Read | OpenMode::ReadWrite, Some(ino)) => ino,
            (OpenMode::CreateTruncate, Some(ino)) => {
                let inode = self.inodes.get_mut(&ino).expect("visible inode exists");
                if !inode.cache.is_empty() {
                    inode.set_len(0);
                }
                ino
            }
            (OpenMode::CreateNew | OpenMode::CreateTruncate, None) => {
                let ino = self.next_inode;
                self.next_inode += 1;
                self.inodes.insert(
                    ino,
                    Inode {
                        visible_links: 1,
                        ..Inode::default()
                    },
                );
                self.ns.link(&dir, &name, ino);
                ino
            }
        };
        self.inodes
            .get_mut(&ino)
            .expect("inode exists")
            .open_handles += 1;
        Ok(SimFile {
            fs: fs.clone(),
            ino,
            epoch: self.epoch,
            writable: mode.writable(),
            path: dir.join(&name),
        })
    }

    /// ENOENT when a directory is missing, ENOTDIR when a file stands in its place.
    pub(super) fn missing_dir_error(&self, dir: &Path) -> io::Error {
        let mut cursor = Some(dir);
        while let Some(path) = cursor {
            if let (Some(parent), Some(name)) =
                (path.parent(), path.file_name().and_then(|n| n.to_str()))
                && self.ns.visible(parent, name).is_some()
            {
                return os_error(errno::ENOTDIR);
            }
            cursor = path.parent();
        }
        os_error(errno::ENOENT)
    }

    pub(super) fn create_dir_all(&mut self, path: &Path) -> io::Result<()> {
        let path = normalize(path)?;
        let mut current = PathBuf::from("/");
        for component in path.components().skip(1) {
            let name = component
                .as_os_str()
                .to_str()
                .expect("normalized paths are UTF-8")
                .to_owned();
            let next = current.join(&name);
            if !self.ns.is_dir(&next) {
                if self.ns.visible(&current, &name).is_some() {
                    return Err(os_error(if next == path {
                        errno::EEXIST
                    } else {
                        errno::ENOTDIR
                    }));
                }
                // Like the real fsync of the parent: the parent's pending entries become
                // durable, and so does a pending removal of this very name.
                self.commit_dir(&current);
                let committed = self.ns.commit_entry(&current, &name);
                self.collect_after(&committed);
                self.ns.add_dir(&current, &name);
            }
            current = next;
        }
        Ok(())
    }

    pub(super) fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let path = normalize(path)?;
        let Some(dir) = self.ns.dirs.get(&path) else {
            return Err(self.not_a_dir_error(&path));
        };
        let mut names: Vec<String> = dir.visible.keys().chain(&dir.subdirs).cloned().collect();
        names.sort();
        Ok(names)
    }

    pub(super) fn not_a_dir_error(&self, path: &Path) -> io::Error {
        match split(path) {
            Ok((parent, name)) if self.ns.visible(&parent, &name).is_some() => {
                os_error(errno::ENOTDIR)
            }
            _ => self.missing_dir_error(path),
        }
    }

    pub(super) fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        if self.ns.is_dir(&from_dir.join(&from_name)) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "SimFs does not rename directories",
            ));
        }
        if self.ns.visible(&from_dir, &from_name).is_none() {
            return Err(if self.ns.is_dir(&from_dir) {
                os_error(errno::ENOENT)
            } else {
                self.missing_dir_error(&from_dir)
            });
        }
        if !self.ns.is_dir(&to_dir) {
            return Err(self.missing_dir_error(&to_dir));
        }
        if self.ns.is_dir(&to_dir.join(&to_name)) {
            return Err(os_error(errno::EISDIR));
        }
        if from_dir == to_dir && from_name == to_name {
            return Ok(()); // POSIX: renaming a file onto itself does nothing.
        }
        let (_, replaced) = self.ns.rename(&from_dir, &from_name, &to_dir, &to_name);
        if let Some(replaced) = replaced {
            let inode = self
                .inodes
                .get_mut(&replaced)
                .expect("replaced inode exists");
            inode.visible_links -= 1;
        }
        Ok(())
    }

    pub(super) fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        let (dir, name) = split(path)?;
        if self.ns.is_dir(&dir.join(&name)) {
            return Err(os_error(errno::EISDIR));
        }
        if !self.ns.is_dir(&dir) {
            return Err(self.missing_dir_error(&dir));
        }
        let ino = self
            .ns
            .unlink(&dir, &name)
            .ok_or_else(|| os_error(errno::ENOENT))?;
        self.inodes
            .get_mut(&ino)
            .expect("unlinked inode exists")
            .visible_links -= 1;
        Ok(())
    }

    pub(super) fn sync_dir(&mut self, path: &Path) -> io::Result<()> {
        let path = normalize(path)?;
        if !self.ns.is_dir(&path) {
            return Err(self.not_a_dir_error(&path));
        }
        let pending = self.ns.pending_in(&path);
        if pending > 0 {
            let (mut faults, ..) = self.faults();
            if faults.sync_dir_fails(&path, pending) {
                return Err(os_error(errno::EIO));
            }
        }
        self.commit_dir(&path);
        Ok(())
    }

    pub(super) fn exists(&self, path: &Path) -> io::Result<bool> {
        let path = normalize(path)?;
        if self.ns.is_dir(&path) {
            return Ok(true);
        }
        let (dir, name) = split(&path)?;
        Ok(self.ns.visible(&dir, &name).is_some())
    }
}
