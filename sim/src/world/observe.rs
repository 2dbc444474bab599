//! [`ObservingFs`]: the engine's view of the simulated disk. It passes every call to
//! [`SimFs`] and, before the call returns to the engine, moves the faults the disk
//! injected into the run's history (so everything a fault can affect comes after it),
//! records every candidate `consumer.offset` value the engine writes and every segment
//! file it creates or unlinks, notes which WAL files each incarnation has opened (what
//! damage its open can still read), and tells the recorder of every change the engine
//! issues under a partition's directory (which a refusal must not make).

use super::recorder::{Scope, Shared};
use crate::fs::{SimFile, SimFs};
use crate::history::FileChange;
use cafelog_engine::format::{layout, word};
use cafelog_engine::fs::{File, Fs, OpenMode};
use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone)]
pub struct ObservingFs {
    pub inner: SimFs,
    pub recorder: Shared,
}

pub struct ObservingFile {
    inner: SimFile,
    recorder: Shared,
    path: PathBuf,
    /// The partition or topic whose directory holds the file, if one does.
    scope: Option<Scope>,
}

impl ObservingFs {
    /// Before the engine issues `change` to `path`.
    fn changes(&self, path: &Path, change: FileChange) {
        if let Some(scope) = Scope::of(path) {
            self.recorder.lock().engine_changes(&scope, path, change);
        }
    }

    fn after<T>(&self, result: io::Result<T>) -> io::Result<T> {
        self.recorder.lock().drain_fs();
        result
    }
}

impl ObservingFile {
    fn changes(&self, change: FileChange) {
        if let Some(scope) = &self.scope {
            self.recorder
                .lock()
                .engine_changes(scope, &self.path, change);
        }
    }

    fn after<T>(&self, result: io::Result<T>) -> io::Result<T> {
        self.recorder.lock().drain_fs();
        result
    }
}

impl File for ObservingFile {
    async fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        let r = self.inner.read_at(buf, position).await;
        self.after(r)
    }

    async fn write_at(&self, data: &[u8], position: u64) -> io::Result<()> {
        self.changes(FileChange::Write);
        if position == 0
            && self.path.file_name().and_then(|n| n.to_str()) == Some(layout::HWM_FILE)
            && let Some(word) = word::decode(data)
        {
            self.recorder.lock().hwm_write_issued(&self.path, word);
        }
        let r = self.inner.write_at(data, position).await;
        if r.is_ok()
            && position == 0
            && self.path.file_name().and_then(|n| n.to_str())
                == Some(layout::CONSUMER_OFFSET_TMP_FILE)
            && let Some(value) = word::decode(data)
        {
            self.recorder.lock().frontier_written(&self.path, value);
        }
        if r.is_ok() && super::node::is_checkpoint_file(&self.path) {
            self.recorder.lock().checkpoint_rewritten(&self.path);
        }
        self.after(r)
    }

    async fn len(&self) -> io::Result<u64> {
        let r = self.inner.len().await;
        self.after(r)
    }

    async fn set_len(&self, len: u64) -> io::Result<()> {
        self.changes(FileChange::SetLen);
        self.recorder.lock().segment_set_len(&self.path, len);
        let r = self.inner.set_len(len).await;
        self.after(r)
    }

    async fn sync_data(&self) -> io::Result<()> {
        let r = self.inner.sync_data().await;
        if r.is_ok() && self.path.file_name().and_then(|n| n.to_str()) == Some(layout::HWM_FILE) {
            self.recorder.lock().hwm_synced(&self.path);
        }
        // The sync put the engine's whole write on the platter, over a flip that landed
        // under it since (helper-114 M3).
        if r.is_ok() && super::node::is_checkpoint_file(&self.path) {
            self.recorder.lock().checkpoint_synced(&self.path);
        }
        self.after(r)
    }
}

/// A create whose caller may be dropped before it returns (a cancelled request): the
/// file can exist by then, created, while nobody saw the handle, and the engine's next
/// roll reuses it without creating anything. Dropped unreturned in the same epoch (not
/// by a kill: the next open lists what a killed incarnation left), it records the
/// creation if the file appeared.
struct CreateWatch<'a> {
    fs: &'a ObservingFs,
    path: &'a Path,
    epoch: u64,
    existed: bool,
    returned: bool,
}

impl<'a> CreateWatch<'a> {
    fn new(fs: &'a ObservingFs, path: &'a Path) -> Self {
        CreateWatch {
            fs,
            path,
            epoch: fs.inner.epoch(),
            existed: fs.inner.visible_bytes(path).is_some(),
            returned: false,
        }
    }
}

impl Drop for CreateWatch<'_> {
    fn drop(&mut self) {
        if !self.returned
            && !self.existed
            && self.fs.inner.epoch() == self.epoch
            && self.fs.inner.visible_bytes(self.path).is_some()
        {
            self.fs.recorder.lock().segment_created(self.path);
        }
    }
}

/// An unlink of a segment file whose caller may be dropped before it returns (a
/// cancelled sweep): recorded when it took effect, with what the file held before it
/// (decoded first, since nothing can be read after). Dropped unreturned in the same
/// epoch (not by a kill: the next open lists what a killed incarnation left), it
/// records the unlink if the file is gone.
struct UnlinkWatch<'a> {
    fs: &'a ObservingFs,
    path: &'a Path,
    epoch: u64,
    segment: Option<super::recorder::UnlinkingSegment>,
}

impl<'a> UnlinkWatch<'a> {
    fn new(fs: &'a ObservingFs, path: &'a Path) -> Self {
        UnlinkWatch {
            fs,
            path,
            epoch: fs.inner.epoch(),
            segment: fs.recorder.lock().segment_unlinking(path),
        }
    }

    fn took_effect(&mut self) {
        if let Some(segment) = self.segment.take() {
            self.fs.recorder.lock().segment_unlinked(segment);
        }
    }
}

impl Drop for UnlinkWatch<'_> {
    fn drop(&mut self) {
        if self.segment.is_some()
            && self.fs.inner.epoch() == self.epoch
            && !self.fs.inner.visible_exists(self.path)
        {
            self.took_effect();
        }
    }
}

impl Fs for ObservingFs {
    type File = ObservingFile;

    async fn open(&self, path: &Path, mode: OpenMode) -> io::Result<ObservingFile> {
        if super::recorder::file_kind(path) == crate::history::FileKind::Wal {
            self.recorder.lock().wal_opening(path, mode);
        }
        if matches!(mode, OpenMode::CreateNew | OpenMode::CreateTruncate) {
            self.changes(path, FileChange::Create);
        }
        let mut watch = (mode == OpenMode::CreateNew).then(|| CreateWatch::new(self, path));
        let r = self.inner.open(path, mode).await;
        if let Some(watch) = &mut watch {
            watch.returned = true;
        }
        if r.is_ok() && mode == OpenMode::CreateNew {
            self.recorder.lock().segment_created(path);
        }
        self.after(r).map(|inner| ObservingFile {
            inner,
            recorder: self.recorder.clone(),
            path: path.to_path_buf(),
            scope: Scope::of(path),
        })
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let r = self.inner.create_dir_all(path).await;
        self.after(r)
    }

    async fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let r = self.inner.list_dir(path).await;
        self.after(r)
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.changes(from, FileChange::Rename);
        self.changes(to, FileChange::Rename);
        let r = self.inner.rename(from, to).await;
        self.after(r)
    }

    async fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.changes(path, FileChange::Unlink);
        let mut watch = UnlinkWatch::new(self, path);
        let r = self.inner.remove_file(path).await;
        // Gone either way: a `NotFound` is an earlier, dropped unlink that went through.
        if r.is_ok()
            || r.as_ref()
                .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
        {
            watch.took_effect();
        }
        // Any other error left the file where it was: nothing for the drop to record.
        watch.segment = None;
        self.after(r)
    }

    async fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let r = self.inner.sync_dir(path).await;
        self.after(r)
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        let r = self.inner.exists(path).await;
        self.after(r)
    }
}
