//! Directory fsync EIO in `SimFs`: a failed `sync_dir` commits none of the directory's
//! pending entries and leaves them pending, so a later `sync_dir` commits them and a
//! power loss keeps or drops them; a directory with nothing pending never fails.

use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_sim::fs::{FaultOptions, FsEventKind, SimFs};
use std::collections::BTreeSet;
use std::path::Path;

const EIO: i32 = 5;

fn block<T>(future: impl Future<Output = T>) -> T {
    pollster::block_on(future)
}

/// A disk whose next `sync_dir` with pending entries fails (once), with `/d/f` created
/// and its data fsynced, its name still pending.
fn created_before_one_dir_eio(seed: u64) -> SimFs {
    let fs = SimFs::new(seed, FaultOptions::none()).expect("valid options");
    block(async {
        fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
        let file = fs
            .open(Path::new("/d/f"), OpenMode::CreateNew)
            .await
            .expect("create");
        file.write_at(b"abcd", 0).await.expect("write");
        file.sync_data().await.expect("sync data");
    });
    let mut options = FaultOptions::none();
    options.dir_fsync_eio_probability = 1.0;
    options.dir_fsync_eio_max = 1;
    fs.set_options(options).expect("options");
    fs
}

#[test]
fn a_failed_directory_fsync_commits_nothing_and_the_next_one_commits_the_entry() {
    let fs = created_before_one_dir_eio(1);
    let error = block(fs.sync_dir(Path::new("/d"))).expect_err("EIO");
    assert_eq!(error.raw_os_error(), Some(EIO));
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")),
        None,
        "the name is not durable"
    );
    assert!(
        block(fs.exists(Path::new("/d/f"))).expect("exists"),
        "still visible"
    );
    assert_eq!(fs.event_counts().get(&FsEventKind::DirFsyncEio), Some(&1));
    block(fs.sync_dir(Path::new("/d"))).expect("cap reached: the next one succeeds");
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"abcd"[..]),
        "and commits the entry left pending"
    );
}

#[test]
fn a_power_loss_after_a_failed_directory_fsync_keeps_or_drops_the_entry() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let fs = created_before_one_dir_eio(seed);
        block(fs.sync_dir(Path::new("/d"))).expect_err("EIO");
        fs.crash();
        outcomes.insert(block(fs.exists(Path::new("/d/f"))).expect("exists"));
    }
    assert_eq!(
        outcomes,
        BTreeSet::from([false, true]),
        "both kept and dropped occur"
    );
}

#[test]
fn a_directory_with_nothing_pending_never_fails_its_fsync() {
    let fs = created_before_one_dir_eio(2);
    block(fs.sync_dir(Path::new("/e")))
        .expect_err("not a directory yet, whatever the fault options");
    block(fs.create_dir_all(Path::new("/e"))).expect("mkdir");
    block(fs.sync_dir(Path::new("/e"))).expect("nothing pending in /e");
    assert_eq!(fs.event_counts().get(&FsEventKind::DirFsyncEio), None);
}
