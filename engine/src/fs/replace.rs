//! Replacing a small file whole: `consumer.offset`, `topic.conf` and the WAL checkpoint.
//!
//! Invariant: after a crash at any point the file holds its old bytes or its new bytes,
//! never a mix, and the new bytes are durable before the call returns `Ok`. The temp
//! file is fsynced before the rename (else the rename can reach the disk before the
//! data, leaving an empty or partial file under the real name), and the directory
//! after it (else the rename itself can be lost).

use super::{File, Fs, OpenMode};
use std::io;
use std::path::Path;

/// The steps of [`replace_atomically`], in order; the one that failed comes back with
/// its error, so each caller can name it in its own words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplaceStep {
    CreateTemp,
    WriteTemp,
    SyncTemp,
    Rename,
    SyncDir,
}

impl ReplaceStep {
    /// This step's name among a caller's five, given in step order.
    pub fn named(self, names: &[&'static str; 5]) -> &'static str {
        let [create, write, sync, rename, sync_dir] = *names;
        match self {
            ReplaceStep::CreateTemp => create,
            ReplaceStep::WriteTemp => write,
            ReplaceStep::SyncTemp => sync,
            ReplaceStep::Rename => rename,
            ReplaceStep::SyncDir => sync_dir,
        }
    }
}

/// Replaces `dir/name` with `bytes` through `dir/tmp_name`: create (truncating a temp
/// file a crash left), write, fsync, rename over, fsync the directory.
pub async fn replace_atomically<F: Fs>(
    fs: &F,
    dir: &Path,
    name: &str,
    tmp_name: &str,
    bytes: &[u8],
) -> Result<(), (ReplaceStep, io::Error)> {
    assert_ne!(name, tmp_name, "the temp file is another file");
    assert!(
        !name.contains('/') && !tmp_name.contains('/'),
        "both files live in `dir`"
    );
    let tmp = dir.join(tmp_name);
    let file = fs
        .open(&tmp, OpenMode::CreateTruncate)
        .await
        .map_err(|e| (ReplaceStep::CreateTemp, e))?;
    file.write_at(bytes, 0)
        .await
        .map_err(|e| (ReplaceStep::WriteTemp, e))?;
    file.sync_data()
        .await
        .map_err(|e| (ReplaceStep::SyncTemp, e))?;
    fs.rename(&tmp, &dir.join(name))
        .await
        .map_err(|e| (ReplaceStep::Rename, e))?;
    fs.sync_dir(dir)
        .await
        .map_err(|e| (ReplaceStep::SyncDir, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{StdFs, read_exact_at};

    async fn read(fs: &StdFs, path: &Path) -> Vec<u8> {
        let file = fs.open(path, OpenMode::Read).await.unwrap();
        let mut bytes = vec![0; usize::try_from(file.len().await.unwrap()).unwrap()];
        read_exact_at(&file, &mut bytes, 0).await.unwrap();
        bytes
    }

    #[test]
    fn the_new_bytes_replace_the_old_and_the_temp_file_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(async {
            let fs = StdFs;
            for bytes in [&b"first, longer"[..], b"second"] {
                replace_atomically(&fs, dir.path(), "word", "word.tmp", bytes)
                    .await
                    .unwrap();
                assert_eq!(read(&fs, &dir.path().join("word")).await, bytes);
                assert!(!fs.exists(&dir.path().join("word.tmp")).await.unwrap());
            }
        });
    }

    #[test]
    fn a_failed_step_comes_back_by_name() {
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(async {
            let missing = dir.path().join("missing");
            let (step, _) = replace_atomically(&StdFs, &missing, "word", "word.tmp", b"x")
                .await
                .unwrap_err();
            assert_eq!(step, ReplaceStep::CreateTemp);
            let names = ["create", "write", "sync", "rename", "sync dir"];
            assert_eq!(step.named(&names), "create");
            assert_eq!(ReplaceStep::SyncDir.named(&names), "sync dir");
        });
    }
}
