//! The filesystem seam: the engine touches storage only through [`Fs`] and [`File`].
//!
//! Production uses [`StdFs`]; the simulator supplies a fault-injecting implementation
//! with a crash model. Every method that can block is async so that a simulator can add
//! latency, interleave tasks, and crash the node between any two operations.
//!
//! Contract the engine relies on (POSIX, as the simulator models it):
//! - `write_at` data is *pending* until `sync_data` on that file returns `Ok`; after a
//!   crash pending data may be lost, kept, or torn at sector granularity.
//! - creating, renaming and removing a file are pending until `sync_dir` on its parent
//!   directory returns `Ok`.
//! - an error from `sync_data` means the pending data may be gone even though reads still
//!   return it; the engine never retries a sync on the same file after an error.

mod replace;
mod std_fs;

pub use replace::{ReplaceStep, replace_atomically};
pub use std_fs::StdFs;

use std::future::Future;
use std::io;
use std::path::Path;

/// How [`Fs::open`] opens a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    ReadWrite,
    /// Read and write; the file must not exist yet (its creation is pending until the
    /// directory is synced).
    CreateNew,
    /// Read and write; created when absent, truncated to zero length when present.
    CreateTruncate,
}

impl OpenMode {
    /// Whether the handle may write.
    pub fn writable(self) -> bool {
        !matches!(self, OpenMode::Read)
    }
}

/// An open file. Positions are absolute byte positions; there is no cursor.
#[expect(
    clippy::len_without_is_empty,
    reason = "a file's length is a query, not a collection size"
)]
pub trait File: Send + Sync + 'static {
    /// Reads up to `buf.len()` bytes at `position`; returns how many were read (0 at the end).
    fn read_at(
        &self,
        buf: &mut [u8],
        position: u64,
    ) -> impl Future<Output = io::Result<usize>> + Send;

    /// Writes all of `data` at `position`, extending the file when needed.
    fn write_at(&self, data: &[u8], position: u64) -> impl Future<Output = io::Result<()>> + Send;

    /// Current length in bytes (as the page cache sees it).
    fn len(&self) -> impl Future<Output = io::Result<u64>> + Send;

    /// Truncates or extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> impl Future<Output = io::Result<()>> + Send;

    /// Makes the file's written data durable (fdatasync).
    fn sync_data(&self) -> impl Future<Output = io::Result<()>> + Send;
}

/// A filesystem. Paths are ordinary paths; the simulator interprets them in its own
/// namespace.
pub trait Fs: Clone + Send + Sync + 'static {
    /// The file handle type.
    type File: File;

    /// Opens `path` in `mode`.
    fn open(
        &self,
        path: &Path,
        mode: OpenMode,
    ) -> impl Future<Output = io::Result<Self::File>> + Send;

    /// Creates `path` and its missing parents. Each directory created is synced into its
    /// parent before this returns.
    fn create_dir_all(&self, path: &Path) -> impl Future<Output = io::Result<()>> + Send;

    /// The names of the entries of directory `path`, sorted.
    fn list_dir(&self, path: &Path) -> impl Future<Output = io::Result<Vec<String>>> + Send;

    /// Atomically replaces `to` with `from` (pending until the directory is synced).
    fn rename(&self, from: &Path, to: &Path) -> impl Future<Output = io::Result<()>> + Send;

    /// Removes a file (pending until the directory is synced).
    fn remove_file(&self, path: &Path) -> impl Future<Output = io::Result<()>> + Send;

    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> impl Future<Output = io::Result<()>> + Send;

    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> impl Future<Output = io::Result<bool>> + Send;
}

/// Reads exactly `buf.len()` bytes at `position`, or fails with `UnexpectedEof`.
pub async fn read_exact_at<F: File>(file: &F, buf: &mut [u8], position: u64) -> io::Result<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let rest = buf.get_mut(done..).unwrap_or_default();
        let n = file.read_at(rest, position + done as u64).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short read at position {}", position + done as u64),
            ));
        }
        done += n;
    }
    Ok(())
}

/// Whether `e` is EIO: the disk could not read (a latent sector error) or write.
pub fn is_eio(e: &io::Error) -> bool {
    e.raw_os_error() == Some(EIO)
}

/// Linux's EIO.
const EIO: i32 = 5;

/// Creates `path` for a new segment, or opens the empty file a dropped call left there:
/// a create that took effect after its caller's future was dropped (it never saw the
/// handle, so nothing recorded or wrote the file). A file there with bytes is not one
/// this process made and lost track of: `AlreadyExists`, and nothing is touched.
pub async fn create_or_reuse_empty<F: Fs>(fs: &F, path: &Path) -> io::Result<F::File> {
    match fs.open(path, OpenMode::CreateNew).await {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let file = fs.open(path, OpenMode::ReadWrite).await?;
            let len = file.len().await?;
            if len > 0 {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists with {len} bytes", path.display()),
                ));
            }
            Ok(file)
        }
        created => created,
    }
}
