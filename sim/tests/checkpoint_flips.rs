//! The world's memory of the flips of each WAL checkpoint file (`Recorder::
//! checkpoint_flips`, by inode), from which a restart names the flip of the file its open
//! reads (`CheckpointAtOpen::flipped`): the engine's write of the file, and the sync that
//! puts that write on the platter over a flip that landed under it, each leave no earlier
//! flip in it (helper-113 F2, helper-114 M3: a flip the sync erased stayed named, and
//! explained a later `wal_checkpoint_unreadable` of a sound file).

use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_sim::fs::{FaultOptions, SimFs};
use cafelog_sim::history::{FaultKind, FileKind};
use cafelog_sim::world::node::wal_dir;
use cafelog_sim::world::observe::ObservingFs;
use cafelog_sim::world::recorder::Shared;

#[test]
fn a_checkpoint_files_write_and_its_sync_each_forget_its_flips() {
    let fs = SimFs::new(1, FaultOptions::none()).expect("options");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    runtime.block_on(async move {
        let rec = Shared::new(fs.clone());
        let observed = ObservingFs {
            inner: fs.clone(),
            recorder: rec.clone(),
        };
        let dir = wal_dir();
        let tmp = dir.join("checkpoint.tmp");
        observed.create_dir_all(&dir).await.expect("dir");
        // A temp file left durable by an earlier replace, holding 16 bytes of 1.
        let file = observed
            .open(&tmp, OpenMode::CreateTruncate)
            .await
            .expect("created");
        file.write_at(&[1; 16], 0).await.expect("written");
        file.sync_data().await.expect("synced");
        observed.sync_dir(&dir).await.expect("dir synced");
        let inode = fs.visible_inode(&tmp).expect("named");
        let flips = |rec: &Shared| rec.lock().checkpoint_flips.get(&inode).copied();

        // The next replace writes it whole: an earlier flip of it is gone.
        rec.lock().checkpoint_flips.insert(inode, 7);
        file.write_at(&[2; 16], 0).await.expect("written");
        assert_eq!(flips(&rec), None, "the write forgets the flip");

        // A flip lands under the pending write; the sync puts the write on the platter
        // over it.
        let flip = fs
            .flip_bit_at(|p| p == tmp, &tmp, 3, 0)
            .expect("the temp file is durable");
        assert!(!flip.in_cache, "the pending write masks it");
        let masked = world_records(&rec, inode, false);
        let other = observed
            .open(&dir.join("00000000000000000000.wal"), OpenMode::CreateNew)
            .await
            .expect("a WAL segment");
        other.sync_data().await.expect("synced");
        assert_eq!(
            flips(&rec),
            Some(masked),
            "another file's sync leaves it named"
        );
        file.sync_data().await.expect("synced");
        assert_eq!(
            fs.durable_bytes(&tmp),
            Some(vec![2; 16]),
            "the sync erased the flip"
        );
        assert_eq!(flips(&rec), None, "and the world forgets it");

        // A flip the page cache took, with nothing pending (one in the sync's pause after
        // it wrote the platter): in the file, and named after the next sync (helper-115).
        let flip = fs
            .flip_bit_at(|p| p == tmp, &tmp, 5, 1)
            .expect("the temp file is durable");
        assert!(flip.in_cache, "nothing masks it");
        let taken = world_records(&rec, inode, true);
        file.sync_data().await.expect("synced");
        assert_ne!(
            fs.durable_bytes(&tmp),
            Some(vec![2; 16]),
            "still in the file"
        );
        assert_eq!(flips(&rec), Some(taken), "and still named");
    });
}

/// The world's record of a flip of the checkpoint's temp file, as `inject.rs` makes it:
/// the fault, a `FlipMissedCache` unless the page cache took it (`in_cache`), and the
/// file's (`inode`) last flip. Returns the fault's index.
fn world_records(rec: &Shared, inode: u64, in_cache: bool) -> usize {
    let mut rec = rec.lock();
    let kind = FaultKind::BitFlip {
        file: FileKind::Wal,
        offsets: None,
        below_hwm: None,
    };
    let fault = rec.fault(kind, None, Some("/data/wal/checkpoint.tmp"));
    if !in_cache {
        let now = rec.now_ms();
        rec.history.flip_missed_cache(now, fault);
    }
    rec.checkpoint_flips.insert(inode, fault);
    fault
}
