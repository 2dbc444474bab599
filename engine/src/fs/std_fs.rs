//! [`StdFs`]: the real filesystem, with real `fdatasync` of files and `fsync` of
//! directories. Its futures complete immediately (the calls block the thread), which is
//! what a synchronous embedder or a thread-per-partition runtime wants.

#![expect(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "this module is the one place the engine may touch the OS filesystem"
)]

use super::{File, Fs, OpenMode};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The operating system's filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

/// An open file of [`StdFs`].
#[derive(Debug)]
pub struct StdFile {
    file: std::fs::File,
}

impl File for StdFile {
    async fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, position) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    async fn write_at(&self, data: &[u8], position: u64) -> io::Result<()> {
        self.file.write_all_at(data, position)
    }

    async fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    async fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    async fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

impl Fs for StdFs {
    type File = StdFile;

    async fn open(&self, path: &Path, mode: OpenMode) -> io::Result<StdFile> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        match mode {
            OpenMode::Read => {}
            OpenMode::ReadWrite => {
                options.write(true);
            }
            OpenMode::CreateNew => {
                options.write(true).create_new(true);
            }
            OpenMode::CreateTruncate => {
                options.write(true).create(true).truncate(true);
            }
        }
        Ok(StdFile {
            file: options.open(path)?,
        })
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        // Create one level at a time so each new directory is synced into its parent.
        let mut missing = Vec::new();
        let mut cursor = Some(path);
        while let Some(dir) = cursor {
            if dir.as_os_str().is_empty() || dir.is_dir() {
                break;
            }
            missing.push(dir);
            cursor = dir.parent();
        }
        for dir in missing.into_iter().rev() {
            match std::fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                self.sync_dir(parent).await?;
            }
        }
        Ok(())
    }

    async fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    async fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    async fn sync_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::File::open(path)?.sync_all()
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }
}
