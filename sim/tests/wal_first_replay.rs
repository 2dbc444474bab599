//! Which incarnation first reads WAL damage (`WalEntriesDamaged::first_replay`), as the
//! world labels it. Too early a label lets `both_copies_damaged` excuse a record the
//! labelled open could have replayed; too late a one, a loss no open could prevent.

use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_engine::store::wal::{Link, Wal};
use cafelog_sim::fs::{FaultOptions, SimFs};
use cafelog_sim::history::{EventKind, FaultKind, FileKind, encode_payload};
use cafelog_sim::reference::wal::frames;
use cafelog_sim::world::node::wal_dir;
use cafelog_sim::world::recorder::Shared;
use std::path::{Path, PathBuf};

/// Opens the WAL in `wal_dir()` and acknowledges `ids` on partition `t`/0, a frame and
/// an fsync each, then drops it.
async fn acknowledge(fs: &SimFs, ids: impl IntoIterator<Item = u64>) {
    let part = ("t".to_string(), 0u32);
    let (wal, ..) = Wal::open(fs.clone(), wal_dir(), 1 << 20).await.unwrap();
    for id in ids {
        let seq = wal.append(&part, b"k", &encode_payload(id, b"x")).unwrap();
        wal.sync_to(seq).await.unwrap();
    }
}

/// (first_replay - current incarnation, ids) of every `WalEntriesDamaged` so far.
fn damage_events(rec: &Shared) -> Vec<(u32, Vec<u64>)> {
    let rec = rec.lock();
    let current = rec.history.incarnation();
    rec.history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WalEntriesDamaged {
                first_replay,
                entries,
                ..
            } => Some((
                *first_replay - current,
                entries.iter().map(|e| e.id).collect(),
            )),
            _ => None,
        })
        .collect()
}

/// Flips a bit in the middle of `frame` of the WAL file at `path` and reports it to the
/// recorder as the world's `inject::flip` does (in-contract damage at rest).
fn flip_in(fs: &SimFs, rec: &Shared, path: &Path, frame: &std::ops::Range<u64>) {
    let dir = wal_dir();
    let before = fs.durable_bytes(path).unwrap();
    let middle = (frame.start + frame.end) / 2;
    let flip = fs
        .flip_bit_at(|p| p.starts_with(&dir), path, middle, 0)
        .unwrap();
    assert!(flip.in_cache);
    let hit = flip.position..flip.position + 1;
    let fault = rec.lock().fault(
        FaultKind::BitFlip {
            file: FileKind::Wal,
            offsets: None,
            below_hwm: None,
        },
        None,
        None,
    );
    rec.lock().wal_damaged(fault, path, &before, &[hit], true);
}

async fn read_whole(fs: &SimFs, rec: &Shared, path: &Path) -> Vec<u8> {
    rec.lock().wal_opening(path, OpenMode::Read);
    let file = fs.open(path, OpenMode::Read).await.unwrap();
    let len = file.len().await.unwrap();
    let mut buf = vec![0; len as usize];
    cafelog_engine::fs::read_exact_at(&file, &mut buf, 0)
        .await
        .unwrap();
    buf
}

fn sorted_segments(fs: &SimFs) -> Vec<PathBuf> {
    let dir = wal_dir();
    let mut names = fs.visible_names(&dir).unwrap();
    names.retain(|n| n.ends_with(".wal"));
    names.sort();
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// The running open reads segment A whole (id 2's root entry, intact); a flip then
/// destroys that frame, which names nothing (segment B holds a salvage copy of the
/// entry, still readable); a second flip destroys the copy in B before the open reaches
/// B. The open holds id 2 intact and replays it: the next open is the first to miss it.
#[test]
fn an_entry_the_open_read_before_its_copies_were_flipped_is_held_by_it() {
    let fs = SimFs::new(1, FaultOptions::none()).expect("options");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    runtime.block_on(async move {
        let dir = wal_dir();
        let part = ("t".to_string(), 0u32);
        // Incarnation A: ids 1 and 2 acknowledged, each in its own frame.
        acknowledge(&fs, [1, 2]).await;
        fs.crash();
        // Incarnation B: an R2 salvage writes a copy of id 2's entry (fsynced).
        let (wal, _, entries, _) = Wal::open(fs.clone(), dir.clone(), 1 << 20).await.unwrap();
        let root = entries[1].seq;
        let seq = wal
            .append_linked(&part, b"k", &encode_payload(2, b"x"), Link::Copy(root))
            .unwrap();
        wal.sync_to(seq).await.unwrap();
        drop(wal);
        fs.crash();

        // Incarnation C's open (the recorder's running one).
        let rec = Shared::new(fs.clone());
        let segs = sorted_segments(&fs);
        assert_eq!(segs.len(), 2, "{segs:?}");
        let (a, b) = (&segs[0], &segs[1]);
        let a_frames: Vec<_> = frames(&fs.visible_bytes(a).unwrap())
            .into_iter()
            .map(|f| f.position)
            .collect();
        let b_frames: Vec<_> = frames(&fs.visible_bytes(b).unwrap())
            .into_iter()
            .map(|f| f.position)
            .collect();
        assert_eq!((a_frames.len(), b_frames.len()), (2, 1));
        // The open reads A whole: it now holds id 2's entry, intact.
        let read = read_whole(&fs, &rec, a).await;
        let held: Vec<_> = frames(&read)
            .into_iter()
            .flat_map(|f| f.entries)
            .map(|e| e.seq)
            .collect();
        assert!(held.contains(&root), "the open read id 2's entry intact");
        // Flip 1: id 2's root frame in A, after the open read it. Saved by the copy.
        flip_in(&fs, &rec, a, &a_frames[1]);
        assert!(
            damage_events(&rec).is_empty(),
            "the copy in B saves the root"
        );
        // Flip 2: the copy's frame in B, which the open has not read yet.
        flip_in(&fs, &rec, b, &b_frames[0]);
        let named = damage_events(&rec);
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].1, vec![2], "id 2 named lost");
        assert_eq!(
            named[0].0, 1,
            "the running open read id 2's root entry intact before any damage: its \
             replay can re-commit id 2"
        );
    });
}

/// At a power loss the world drains the disk's fault events (`inject::kill`) after the
/// disk's epoch moved, and before it marks the node down: the disk has forgotten the
/// killed open's reads by then. A pending write of the incarnation before (a process
/// crash came before its fsync), misdirected at the power loss over frames the killed
/// open had read, is first read by the next open, not the killed one.
#[test]
fn damage_drained_at_a_power_loss_is_first_read_by_the_next_open() {
    let mut labels = Vec::new();
    for seed in 1..40u64 {
        let fs = SimFs::new(seed, FaultOptions::none()).expect("options");
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        let got = runtime.block_on(async move {
            // Incarnation A: ids 1..=30 acknowledged, a frame each (past two sectors).
            acknowledge(&fs, 1..=30).await;
            let segs = sorted_segments(&fs);
            let path = segs[0].clone();
            let image = fs.visible_bytes(&path).unwrap();
            assert!(image.len() > 1024);
            // A's last frame write, never fsynced (A dies in a process crash first).
            let last = frames(&image).last().unwrap().position.clone();
            let tail = image[last.start as usize..last.end as usize].to_vec();
            let file = fs.open(&path, OpenMode::ReadWrite).await.unwrap();
            file.write_at(&tail, image.len() as u64).await.unwrap();
            drop(file);
            fs.process_crash();
            // Incarnation B's open (running) reads the segment whole ...
            let rec = Shared::new(fs.clone());
            read_whole(&fs, &rec, &path).await;
            // ... and a power loss kills it: the pending write lands a sector off.
            let mut options = fs.options();
            options.misdirect_probability = 1.0;
            options.misdirect_max = 1;
            options.misdirect_shift_sectors_max = 1;
            fs.set_options(options).unwrap();
            fs.crash();
            // inject.rs kill(): drain_fs runs here, before node_down = true.
            assert!(!rec.lock().node_down && !rec.lock().store_open);
            rec.lock().drain_fs();
            damage_events(&rec)
        });
        if let Some((label, ids)) = got.first() {
            labels.push((seed, *label, ids.clone()));
        }
    }
    assert!(!labels.is_empty(), "no seed shifted the write down");
    for (seed, label, ids) in &labels {
        assert_eq!(
            *label, 1,
            "seed {seed}: ids {ids:?} named first read by the killed open (+0), whose \
             reads had returned them intact; the next open is the first to read them"
        );
    }
}

/// A WAL flip landing while an open runs is first read by that open unless its reads
/// already returned the flipped byte: the open opens each WAL file and then reads it a
/// frame at a time, with pauses between, so the moment it opened a file says nothing.
#[test]
fn a_wal_flip_is_first_read_by_the_open_that_had_not_read_its_byte() {
    #[derive(Clone, Copy)]
    enum Before {
        Nothing,
        OpenedOnly,
        FirstFrameRead,
        WholeFileRead,
        OpenedToWrite,
        StoreOpen,
    }
    let first_replay = |before: Before| {
        let fs = SimFs::new(1, FaultOptions::none()).expect("options");
        let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        runtime.block_on(async move {
            let dir = wal_dir();
            // Ids 1 and 2 acknowledged, each in its own frame; then a power loss.
            acknowledge(&fs, [1, 2]).await;
            fs.crash();
            let rec = Shared::new(fs.clone());
            let path = dir.join(&fs.visible_names(&dir).unwrap()[0]);
            let image = fs.visible_bytes(&path).unwrap();
            let positions: Vec<_> = frames(&image).into_iter().map(|f| f.position).collect();
            assert_eq!(positions.len(), 2);
            match before {
                Before::Nothing => {}
                Before::OpenedOnly => {
                    rec.lock().wal_opening(&path, OpenMode::Read);
                    fs.open(&path, OpenMode::Read).await.unwrap();
                }
                Before::FirstFrameRead => {
                    rec.lock().wal_opening(&path, OpenMode::Read);
                    let file = fs.open(&path, OpenMode::Read).await.unwrap();
                    let mut buf = vec![0; positions[0].end as usize];
                    file.read_at(&mut buf, 0).await.unwrap();
                }
                Before::WholeFileRead => {
                    rec.lock().wal_opening(&path, OpenMode::Read);
                    Wal::open(fs.clone(), dir.clone(), 1 << 20).await.unwrap();
                }
                Before::OpenedToWrite => rec.lock().wal_opening(&path, OpenMode::ReadWrite),
                Before::StoreOpen => rec.lock().store_open = true,
            }
            // A flip lands in id 2's frame.
            flip_in(&fs, &rec, &path, &positions[1]);
            let named = damage_events(&rec);
            assert_eq!(named.len(), 1, "one damage event");
            assert_eq!(named[0].1, vec![2], "id 2's entry is named");
            named[0].0
        })
    };
    assert_eq!(
        first_replay(Before::Nothing),
        0,
        "the running open reads it"
    );
    assert_eq!(first_replay(Before::OpenedOnly), 0, "opened, not read yet");
    assert_eq!(
        first_replay(Before::FirstFrameRead),
        0,
        "the open read only the frame before"
    );
    assert_eq!(
        first_replay(Before::WholeFileRead),
        1,
        "the open read it whole"
    );
    assert_eq!(
        first_replay(Before::OpenedToWrite),
        1,
        "a file it writes it never reads"
    );
    assert_eq!(first_replay(Before::StoreOpen), 1, "the open had returned");
}
