//! The engine's seam implemented: `SimFile` (a handle) and `Fs for SimFs`; each call
//! runs through `SimFs::run`, which pauses, applies the operation and logs the event.

use super::*;

/// An open file of [`SimFs`], valid until the disk crashes.
#[derive(Debug)]
pub struct SimFile {
    pub(super) fs: SimFs,
    pub(super) ino: InodeId,
    pub(super) epoch: u64,
    pub(super) writable: bool,
    /// The path it was opened as (for events; the file may have been renamed since).
    pub(super) path: PathBuf,
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut state = self.fs.lock();
        if state.epoch == self.epoch {
            if let Some(inode) = state.inodes.get_mut(&self.ino) {
                inode.open_handles -= 1;
            }
            state.collect(self.ino);
        }
    }
}

impl File for SimFile {
    async fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        self.fs
            .run(|state| {
                let epoch = state.epoch;
                let inode = state.handle_inode(self)?;
                if inode.unreadable(position, buf.len() as u64) {
                    return Err(os_error(errno::EIO));
                }
                let count = inode.read(buf, position);
                inode.reads.mark(epoch, position..position + count as u64);
                Ok(count)
            })
            .await
    }

    async fn write_at(&self, data: &[u8], position: u64) -> io::Result<()> {
        self.fs.run(|state| state.write(self, data, position)).await
    }

    async fn len(&self) -> io::Result<u64> {
        self.fs
            .run(|state| Ok(state.handle_inode(self)?.cache.len() as u64))
            .await
    }

    async fn set_len(&self, len: u64) -> io::Result<()> {
        self.fs.run(|state| state.set_len(self, len)).await
    }

    async fn sync_data(&self) -> io::Result<()> {
        self.fs.run(|state| state.sync_data(self)).await
    }
}

impl Fs for SimFs {
    type File = SimFile;

    async fn open(&self, path: &Path, mode: OpenMode) -> io::Result<SimFile> {
        self.run(|state| state.open(self, path, mode)).await
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.run(|state| state.create_dir_all(path)).await
    }

    async fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.run(|state| state.list_dir(path)).await
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.run(|state| state.rename(from, to)).await
    }

    async fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.run(|state| state.remove_file(path)).await
    }

    async fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.run(|state| state.sync_dir(path)).await
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        self.run(|state| state.exists(path)).await
    }
}
