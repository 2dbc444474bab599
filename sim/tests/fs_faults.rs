//! The crash and fault model of `SimFs`, one behaviour per test: every crash outcome is
//! one the model allows and each allowed outcome actually occurs over seeds; each
//! injected fault does what its documentation says; the same seed replays exactly.

use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_sim::fs::{FaultOptions, FsEventKind, SECTOR_SIZE, SimFile, SimFs, UNREADABLE_FILL};
use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

const EIO: i32 = 5;
const ENOSPC: i32 = 28;
const ESTALE: i32 = 116;
const SEEDS: u64 = 200;

fn block<T>(future: impl Future<Output = T>) -> T {
    pollster::block_on(future)
}

fn sim(seed: u64) -> SimFs {
    SimFs::new(seed, FaultOptions::none()).expect("valid options")
}

fn path(s: &str) -> PathBuf {
    PathBuf::from(s)
}

/// Creates `file` in `/d` with `contents`, fully durable (data and name).
fn durable_file(fs: &SimFs, file: &str, contents: &[u8]) -> SimFile {
    block(async {
        fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
        let handle = fs
            .open(&Path::new("/d").join(file), OpenMode::CreateTruncate)
            .await
            .expect("create");
        handle.write_at(contents, 0).await.expect("write");
        handle.sync_data().await.expect("sync");
        fs.sync_dir(Path::new("/d")).await.expect("sync dir");
        handle
    })
}

fn read_visible(fs: &SimFs, p: &str) -> Option<Vec<u8>> {
    block(async {
        let file = fs.open(Path::new(p), OpenMode::Read).await.ok()?;
        let mut buf = vec![0; file.len().await.expect("len") as usize];
        let n = file.read_at(&mut buf, 0).await.expect("read");
        assert_eq!(n, buf.len());
        Some(buf)
    })
}

#[test]
fn crash_leaves_each_sector_of_each_pending_write_old_or_new_and_every_outcome_occurs() {
    const OLD: u8 = 0x11;
    const OLD_LEN: u64 = 4096;
    // Two non-overlapping pending writes: one inside the durable image spanning 3
    // sectors, one straddling the durable end (sectors 5..10).
    let writes: [(u64, u64, u8); 2] = [(100, 1300, 0x22), (3000, 5000, 0x33)];
    let mut kinds = BTreeSet::new();
    let mut first_lost_second_kept = false;
    let mut hole_seen = false;
    for seed in 0..SEEDS {
        let fs = sim(seed);
        let file = durable_file(&fs, "seg.log", &[OLD; OLD_LEN as usize]);
        for (start, end, value) in writes {
            let data = vec![value; (end - start) as usize];
            block(file.write_at(&data, start)).expect("pending write");
        }
        assert!(fs.has_pending_data(Path::new("/d/seg.log")));
        fs.take_events();
        fs.crash();
        let image = fs
            .durable_bytes(Path::new("/d/seg.log"))
            .expect("file survives");
        assert_eq!(
            read_visible(&fs, "/d/seg.log").as_ref(),
            Some(&image),
            "cache rebuilt from disk"
        );
        assert!(!fs.has_pending_data(Path::new("/d/seg.log")));
        fs.check_invariants();

        let mut highest_new_end = OLD_LEN;
        let mut write_kept = Vec::new();
        for (start, end, value) in writes {
            let mut kept_sectors = 0;
            let mut sectors = 0;
            for sector in start / SECTOR_SIZE..=(end - 1) / SECTOR_SIZE {
                sectors += 1;
                let lo = (sector * SECTOR_SIZE).max(start);
                let hi = ((sector + 1) * SECTOR_SIZE).min(end);
                let bytes: Vec<u8> = (lo..hi)
                    .map(|p| image.get(p as usize).copied().unwrap_or(0))
                    .collect();
                let new = bytes.iter().all(|&b| b == value);
                let old = (lo..hi).all(|p| {
                    let expected = if p < OLD_LEN { OLD } else { 0 };
                    image.get(p as usize).is_none_or(|&b| b == expected)
                });
                assert!(
                    new ^ old,
                    "seed {seed}: sector {sector} is neither old nor new: {bytes:?}"
                );
                if new {
                    kept_sectors += 1;
                    highest_new_end = highest_new_end.max(hi);
                } else if hi > OLD_LEN {
                    // A lost sector past the old end: it is a hole if something later survived.
                    hole_seen |= image.len() as u64 > hi;
                }
            }
            write_kept.push((kept_sectors, sectors));
        }
        assert_eq!(
            image.len() as u64,
            highest_new_end,
            "seed {seed}: durable length"
        );
        for event in fs.take_events() {
            kinds.insert(event.kind);
        }
        first_lost_second_kept |= write_kept[0].0 == 0 && write_kept[1].0 == write_kept[1].1;
    }
    for kind in [
        FsEventKind::CrashWriteLost,
        FsEventKind::CrashWriteKept,
        FsEventKind::CrashWriteTorn,
    ] {
        assert!(
            kinds.contains(&kind),
            "{kind:?} never happened over {SEEDS} seeds"
        );
    }
    assert!(
        first_lost_second_kept,
        "unsynced writes never persisted out of order"
    );
    assert!(
        hole_seen,
        "a torn write past the durable end never left a zero hole"
    );
}

#[test]
fn crash_events_match_the_durable_image() {
    for seed in 0..50 {
        let fs = sim(seed);
        let file = durable_file(&fs, "f", &[0u8; 2048]);
        block(file.write_at(&[7u8; 2048], 0)).expect("write");
        fs.take_events();
        fs.crash();
        let image = fs.durable_bytes(Path::new("/d/f")).expect("file");
        let sevens = image.iter().filter(|&&b| b == 7).count();
        let events: Vec<_> = fs
            .take_events()
            .into_iter()
            .filter(|e| e.path == path("/d/f"))
            .collect();
        assert_eq!(events.len(), 1, "one event per pending write");
        match events[0].kind {
            FsEventKind::CrashWriteLost => assert_eq!(sevens, 0),
            FsEventKind::CrashWriteKept => assert_eq!(sevens, 2048),
            FsEventKind::CrashWriteTorn => {
                assert!(sevens > 0 && sevens < 2048 && sevens % 512 == 0)
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn crash_keeps_or_loses_a_pending_set_len() {
    let mut lens = BTreeSet::new();
    for seed in 0..64 {
        let fs = sim(seed);
        let file = durable_file(&fs, "f", &[1u8; 1000]);
        block(file.set_len(10)).expect("set_len");
        fs.crash();
        let len = fs.durable_len(Path::new("/d/f")).expect("file");
        assert!(len == 10 || len == 1000, "seed {seed}: len {len}");
        lens.insert(len);
    }
    assert_eq!(lens, BTreeSet::from([10, 1000]));
}

/// `/d/f` durably holding `aaaa`, `bbbb` written over it, and the next fsync set to
/// fail with EIO (once).
fn bbbb_before_one_eio(seed: u64) -> (SimFs, SimFile) {
    let fs = sim(seed);
    let file = durable_file(&fs, "f", b"aaaa");
    let mut options = FaultOptions::none();
    options.fsync_eio_probability = 1.0;
    options.fsync_eio_max = 1;
    fs.set_options(options).expect("options");
    block(file.write_at(b"bbbb", 0)).expect("write");
    (fs, file)
}

#[test]
fn fsync_eio_leaves_data_undurable_but_readable_and_the_next_fsync_succeeds() {
    let (fs, file) = bbbb_before_one_eio(3);
    let error = block(file.sync_data()).expect_err("EIO");
    assert_eq!(error.raw_os_error(), Some(EIO));
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"aaaa"[..]),
        "not persisted"
    );
    assert_eq!(
        read_visible(&fs, "/d/f").as_deref(),
        Some(&b"bbbb"[..]),
        "the cache still shows it"
    );
    assert!(
        !fs.has_pending_data(Path::new("/d/f")),
        "pages were marked clean"
    );
    block(file.sync_data()).expect("the next fsync succeeds");
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"aaaa"[..]),
        "and persists nothing of it"
    );
    block(file.write_at(b"c", 0)).expect("write");
    block(file.sync_data()).expect("cap reached: no more EIO");
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"caaa"[..])
    );
    assert_eq!(fs.event_counts().get(&FsEventKind::FsyncEio), Some(&1));
    fs.crash();
    assert_eq!(read_visible(&fs, "/d/f").as_deref(), Some(&b"caaa"[..]));
}

#[test]
fn lost_fsync_reports_success_and_persists_nothing() {
    let fs = sim(4);
    let file = durable_file(&fs, "hwm", &[0u8; 8]);
    let mut options = FaultOptions::none();
    options.lost_fsync_probability = 1.0;
    options.lost_fsync_max = 1;
    fs.set_options(options).expect("options");
    block(file.write_at(&42u64.to_be_bytes(), 0)).expect("write");
    block(file.sync_data()).expect("a lost fsync says Ok");
    assert_eq!(fs.durable_bytes(Path::new("/d/hwm")), Some(vec![0u8; 8]));
    assert!(!fs.has_pending_data(Path::new("/d/hwm")));
    fs.crash();
    assert_eq!(read_visible(&fs, "/d/hwm"), Some(vec![0u8; 8]));
    let events = fs.take_events();
    let lost: Vec<_> = events
        .iter()
        .filter(|e| e.kind == FsEventKind::LostFsync)
        .collect();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].path, path("/d/hwm"));
}

#[test]
fn enospc_writes_nothing_and_is_capped() {
    let fs = sim(5);
    let file = durable_file(&fs, "f", b"base");
    let mut options = FaultOptions::none();
    options.enospc_probability = 1.0;
    options.enospc_max = 2;
    options.enospc_consecutive_max = 1;
    fs.set_options(options).expect("options");
    let error = block(file.write_at(b"xxxxxxxx", 2)).expect_err("ENOSPC");
    assert_eq!(error.kind(), ErrorKind::StorageFull);
    assert_eq!(error.raw_os_error(), Some(ENOSPC));
    assert_eq!(
        read_visible(&fs, "/d/f").as_deref(),
        Some(&b"base"[..]),
        "nothing written"
    );
    assert!(!fs.has_pending_data(Path::new("/d/f")));
    block(file.write_at(b"1", 0)).expect("a streak of 1 is followed by a success");
    assert!(block(file.write_at(b"2", 0)).is_err(), "second ENOSPC");
    for _ in 0..10 {
        block(file.write_at(b"3", 0)).expect("cap of 2 reached");
    }
    assert_eq!(fs.event_counts().get(&FsEventKind::Enospc), Some(&2));
}

/// Makes the next synced write land up to 4 sectors away from where it was aimed.
fn misdirect_next_sync(fs: &SimFs) {
    let mut options = FaultOptions::none();
    options.misdirect_probability = 1.0;
    options.misdirect_max = 1;
    options.misdirect_shift_sectors_max = 4;
    fs.set_options(options).expect("options");
}

#[test]
fn misdirected_write_lands_elsewhere_in_the_durable_image() {
    let fs = sim(6);
    let file = durable_file(&fs, "seg.log", &[0u8; 8192]);
    misdirect_next_sync(&fs);
    block(file.write_at(&[0xEE; 512], 2048)).expect("write");
    block(file.sync_data()).expect("sync");
    let image = fs.durable_bytes(Path::new("/d/seg.log")).expect("file");
    assert!(
        image[2048..2560].iter().all(|&b| b == 0),
        "the intended place keeps its old bytes"
    );
    let landed: Vec<usize> = (0..image.len()).filter(|&p| image[p] == 0xEE).collect();
    assert_eq!(landed.len(), 512);
    let at = landed[0] as i64;
    assert!(
        at != 2048 && (at - 2048) % 512 == 0 && (at - 2048).abs() <= 4 * 512,
        "landed at {at}"
    );
    assert_eq!(
        read_visible(&fs, "/d/seg.log").expect("file")[2048],
        0xEE,
        "the cache is right"
    );
    let events = fs.take_events();
    let misdirected: Vec<_> = events
        .iter()
        .filter(|e| e.kind == FsEventKind::MisdirectedWrite)
        .collect();
    assert_eq!(misdirected.len(), 1);
    assert_eq!(misdirected[0].position, Some(2048));
    // The event says where the bytes landed and what the durable image held before, so
    // the world can tell which frames the write destroyed.
    let over = misdirected[0]
        .overwritten
        .as_ref()
        .expect("a misdirected write reports what it overwrote");
    assert_eq!(over.landed, vec![at as u64..at as u64 + 512]);
    assert_eq!(over.durable_before, vec![0u8; 8192]);
}

#[test]
fn a_misdirected_write_at_a_crash_reports_exactly_the_sectors_that_landed() {
    // Kept whole or torn, the surviving sectors land shifted: the event's ranges are
    // exactly the bytes of the image that now hold the write.
    let mut torn_seen = false;
    let mut misdirected_seen = 0;
    for seed in 0..64 {
        let fs = sim(seed);
        let file = durable_file(&fs, "f", &[0u8; 8192]);
        misdirect_next_sync(&fs);
        block(file.write_at(&[0xEE; 2048], 2048)).expect("write");
        fs.take_events();
        fs.crash();
        let image = fs.durable_bytes(Path::new("/d/f")).expect("file");
        let events = fs.take_events();
        let Some(event) = events
            .iter()
            .find(|e| e.kind == FsEventKind::MisdirectedWrite)
        else {
            continue;
        };
        misdirected_seen += 1;
        let over = event.overwritten.as_ref().expect("what it overwrote");
        assert_eq!(over.durable_before, vec![0u8; 8192], "seed {seed}");
        let written: Vec<u64> = (0..image.len() as u64)
            .filter(|&p| image[p as usize] == 0xEE)
            .collect();
        let reported: Vec<u64> = over.landed.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(written, reported, "seed {seed}: {over:?}");
        torn_seen |= events.iter().any(|e| e.kind == FsEventKind::CrashWriteTorn);
    }
    assert!(
        misdirected_seen > 10,
        "{misdirected_seen} misdirected crashes"
    );
    assert!(torn_seen, "no torn misdirected write in 64 seeds");
}

#[test]
fn bit_flip_changes_exactly_one_durable_bit_of_a_matching_file() {
    let fs = sim(7);
    durable_file(&fs, "00000000000000000000.log", &[0x5A; 3000]);
    durable_file(&fs, "hwm", &[0; 8]);
    let is_segment = |p: &Path| p.extension().is_some_and(|e| e == "log");
    let flip = fs
        .flip_random_bit(is_segment)
        .expect("a segment has durable bytes");
    assert_eq!(flip.path, path("/d/00000000000000000000.log"));
    let image = fs.durable_bytes(&flip.path).expect("segment");
    let flipped_bits: u32 = image.iter().map(|&b| (b ^ 0x5A).count_ones()).sum();
    assert_eq!(flipped_bits, 1);
    assert_eq!(image[flip.position as usize], flip.after);
    assert_eq!(flip.before ^ flip.after, 1 << flip.bit);
    assert_eq!(
        fs.durable_bytes(Path::new("/d/hwm")),
        Some(vec![0; 8]),
        "hwm untouched"
    );
    assert_eq!(
        read_visible(&fs, "/d/00000000000000000000.log"),
        Some(image),
        "reads see it"
    );
    assert_eq!(
        fs.flip_random_bit(|p| p.ends_with("consumer.offset")),
        None,
        "no such file"
    );
    fs.heal();
    assert_eq!(fs.flip_random_bit(is_segment), None, "no fault after heal");
}

/// Between a rename and its directory's fsync the durable name shows the replaced inode,
/// which no read reaches, and the renamed inode is read through its new name: a flip
/// names the name that shows the inode it hit (helper-110: the world built a move no
/// read saw from the name's other inode).
#[test]
fn a_flip_names_the_name_a_read_sees_it_through() {
    let fs = sim(3);
    durable_file(&fs, "w", &[1; 8]);
    durable_file(&fs, "w.tmp", &[2; 8]);
    block(fs.rename(Path::new("/d/w.tmp"), Path::new("/d/w"))).expect("rename");
    let replaced = fs
        .flip_random_bit(|p| p == Path::new("/d/w"))
        .expect("the old w is durable");
    assert_eq!(replaced.shown_as, None, "no name shows the replaced inode");
    assert_eq!(replaced.read_through(), None);
    assert_eq!(
        read_visible(&fs, "/d/w"),
        Some(vec![2; 8]),
        "no read sees it"
    );
    let renamed = fs
        .flip_random_bit(|p| p == Path::new("/d/w.tmp"))
        .expect("the renamed inode is durable as w.tmp");
    assert!(renamed.in_cache);
    assert_eq!(renamed.read_through(), Some(Path::new("/d/w")));
    let mut seen = vec![2; 8];
    seen[renamed.position as usize] = renamed.after;
    assert_eq!(read_visible(&fs, "/d/w"), Some(seen), "read through w");
    fs.check_invariants();
}

#[test]
fn bit_flip_under_a_pending_write_is_not_visible_until_the_write_is_lost() {
    let fs = sim(8);
    let file = durable_file(&fs, "f.log", &[0u8; 600]);
    block(file.write_at(&[9u8; 600], 0)).expect("pending over every byte");
    let flip = fs.flip_random_bit(|_| true).expect("flip");
    assert_eq!(
        read_visible(&fs, "/d/f.log"),
        Some(vec![9u8; 600]),
        "masked by the pending write"
    );
    let durable = fs.durable_bytes(Path::new("/d/f.log")).expect("file");
    assert_eq!(durable.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    assert_eq!(durable[flip.position as usize], flip.after);
    fs.check_invariants();
}

#[test]
fn unsynced_create_is_lost_for_some_seeds_and_kept_for_others() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let fs = sim(seed);
        block(async {
            fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
            let f = fs
                .open(Path::new("/d/new"), OpenMode::CreateNew)
                .await
                .expect("create");
            f.write_at(b"x", 0).await.expect("write");
            f.sync_data().await.expect("data durable, name not");
        });
        fs.crash();
        let contents = read_visible(&fs, "/d/new");
        match &contents {
            None => assert_eq!(fs.durable_len(Path::new("/d/new")), None),
            Some(bytes) => assert_eq!(bytes, b"x", "a kept create keeps its fsynced data"),
        }
        outcomes.insert(contents.is_some());
        fs.check_invariants();
    }
    assert_eq!(outcomes, BTreeSet::from([false, true]));
}

#[test]
fn synced_create_always_survives_but_syncing_another_directory_does_not_help() {
    let mut lost_with_wrong_sync = 0;
    for seed in 0..64 {
        let fs = sim(seed);
        block(async {
            fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
            fs.create_dir_all(Path::new("/other")).await.expect("mkdir");
            let a = fs
                .open(Path::new("/d/a"), OpenMode::CreateNew)
                .await
                .expect("create");
            a.write_at(b"a", 0).await.expect("write");
            a.sync_data().await.expect("sync");
            fs.sync_dir(Path::new("/d")).await.expect("sync dir");
            let b = fs
                .open(Path::new("/d/b"), OpenMode::CreateNew)
                .await
                .expect("create");
            b.sync_data().await.expect("sync");
            fs.sync_dir(Path::new("/other"))
                .await
                .expect("wrong directory");
        });
        fs.crash();
        assert_eq!(
            read_visible(&fs, "/d/a").as_deref(),
            Some(&b"a"[..]),
            "seed {seed}"
        );
        if !block(fs.exists(Path::new("/d/b"))).expect("exists") {
            lost_with_wrong_sync += 1;
        }
    }
    assert!(lost_with_wrong_sync > 0);
}

#[test]
fn renamed_file_after_crash_is_exactly_the_old_or_the_new_one() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let fs = sim(seed);
        durable_file(&fs, "consumer.offset", b"old");
        durable_file(&fs, "consumer.offset.tmp", b"new");
        block(fs.rename(
            Path::new("/d/consumer.offset.tmp"),
            Path::new("/d/consumer.offset"),
        ))
        .expect("rename");
        fs.crash();
        let target = read_visible(&fs, "/d/consumer.offset").expect("the target always exists");
        let tmp = read_visible(&fs, "/d/consumer.offset.tmp");
        match target.as_slice() {
            b"new" => assert_eq!(tmp, None, "seed {seed}"),
            b"old" => assert_eq!(tmp.as_deref(), Some(&b"new"[..]), "seed {seed}"),
            other => panic!("seed {seed}: target holds {other:?}"),
        }
        outcomes.insert(target);
        fs.check_invariants();
    }
    assert_eq!(outcomes.len(), 2);
}

#[test]
fn unsynced_remove_may_bring_the_file_back_with_its_durable_data() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let fs = sim(seed);
        let file = durable_file(&fs, "00000000000000000000.log", b"durable");
        block(file.write_at(b"XX", 0)).expect("unsynced write");
        drop(file);
        block(fs.remove_file(Path::new("/d/00000000000000000000.log"))).expect("remove");
        fs.crash();
        let back = read_visible(&fs, "/d/00000000000000000000.log");
        if let Some(bytes) = &back {
            assert!(
                bytes == b"durable" || bytes == b"XXrable",
                "seed {seed}: {bytes:?}"
            );
        }
        outcomes.insert(back.is_some());
        fs.check_invariants();
    }
    assert_eq!(outcomes, BTreeSet::from([false, true]));
}

#[test]
fn surviving_directory_operations_are_a_prefix_of_their_order() {
    let names = ["a", "b", "c", "d", "e"];
    let mut prefix_lengths = BTreeSet::new();
    for seed in 0..100 {
        let fs = sim(seed);
        block(async {
            fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
            for name in names {
                fs.open(&Path::new("/d").join(name), OpenMode::CreateNew)
                    .await
                    .expect("create");
            }
        });
        fs.crash();
        let listed = block(fs.list_dir(Path::new("/d"))).expect("list");
        let prefix: Vec<String> = names[..listed.len()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(listed, prefix, "seed {seed}");
        prefix_lengths.insert(listed.len());
    }
    assert_eq!(
        prefix_lengths.len(),
        names.len() + 1,
        "every prefix length occurs"
    );
}

#[test]
fn committing_a_rename_commits_the_create_it_depends_on() {
    for seed in 0..32 {
        let fs = sim(seed);
        block(async {
            fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
            fs.create_dir_all(Path::new("/e")).await.expect("mkdir");
            fs.open(Path::new("/d/x"), OpenMode::CreateNew)
                .await
                .expect("create");
            fs.rename(Path::new("/d/x"), Path::new("/e/y"))
                .await
                .expect("rename");
            fs.sync_dir(Path::new("/e"))
                .await
                .expect("sync destination");
        });
        assert_eq!(fs.pending_dir_op_count(), 0);
        fs.crash();
        assert!(
            block(fs.exists(Path::new("/e/y"))).expect("exists"),
            "seed {seed}"
        );
        assert!(
            !block(fs.exists(Path::new("/d/x"))).expect("exists"),
            "seed {seed}"
        );
    }
}

#[test]
fn recreating_a_removed_name_and_syncing_the_directory_is_durable() {
    for seed in 0..32 {
        let fs = sim(seed);
        drop(durable_file(&fs, "f", b"old"));
        block(async {
            fs.remove_file(Path::new("/d/f")).await.expect("remove");
            let f = fs
                .open(Path::new("/d/f"), OpenMode::CreateNew)
                .await
                .expect("recreate");
            f.write_at(b"new", 0).await.expect("write");
            f.sync_data().await.expect("sync");
            fs.sync_dir(Path::new("/d")).await.expect("sync dir");
        });
        fs.crash();
        assert_eq!(
            read_visible(&fs, "/d/f").as_deref(),
            Some(&b"new"[..]),
            "seed {seed}"
        );
        fs.check_invariants();
    }
}

#[test]
fn handles_from_before_a_crash_fail_every_operation() {
    let fs = sim(9);
    let file = durable_file(&fs, "f", b"abc");
    fs.crash();
    assert_eq!(fs.epoch(), 1);
    let mut buf = [0u8; 3];
    let errors = [
        block(file.read_at(&mut buf, 0))
            .map(|_| ())
            .expect_err("read"),
        block(file.write_at(b"zzz", 0)).expect_err("write"),
        block(file.len()).map(|_| ()).expect_err("len"),
        block(file.set_len(0)).expect_err("set_len"),
        block(file.sync_data()).expect_err("sync"),
    ];
    for error in errors {
        assert_eq!(error.raw_os_error(), Some(ESTALE));
    }
    assert_eq!(
        read_visible(&fs, "/d/f").as_deref(),
        Some(&b"abc"[..]),
        "nothing leaked in"
    );
    assert_eq!(fs.event_counts().get(&FsEventKind::StaleHandle), Some(&5));
    drop(file);
    let fresh = block(fs.open(Path::new("/d/f"), OpenMode::ReadWrite)).expect("reopen");
    block(fresh.write_at(b"Z", 0)).expect("a new handle works");
    fs.check_invariants();
}

#[test]
fn healed_disk_injects_no_fault() {
    let fs = sim(10);
    let file = durable_file(&fs, "f", b"0");
    let mut options = FaultOptions::none();
    options.fsync_eio_probability = 1.0;
    options.fsync_eio_max = 100;
    options.lost_fsync_probability = 1.0;
    options.lost_fsync_max = 100;
    options.enospc_probability = 1.0;
    options.enospc_max = 100;
    options.enospc_consecutive_max = 100;
    options.misdirect_probability = 1.0;
    options.misdirect_max = 100;
    fs.set_options(options).expect("options");
    assert!(
        block(file.write_at(b"1", 0)).is_err(),
        "faults are on before heal"
    );
    fs.heal();
    for round in 0..20u8 {
        block(file.write_at(&[round], 0)).expect("write");
        block(file.sync_data()).expect("sync");
        assert_eq!(fs.durable_bytes(Path::new("/d/f")), Some(vec![round]));
    }
    let counts = fs.event_counts();
    assert_eq!(counts.get(&FsEventKind::Heal), Some(&1));
    assert_eq!(counts.get(&FsEventKind::Enospc), Some(&1));
    assert_eq!(counts.get(&FsEventKind::FsyncEio), None);
}

/// A scripted workload with every fault enabled and two crashes; returns everything an
/// outside observer can see.
fn workload(seed: u64) -> (Vec<String>, Vec<Option<Vec<u8>>>) {
    let mut options = FaultOptions::none();
    options.fsync_eio_probability = 0.1;
    options.fsync_eio_max = 5;
    options.lost_fsync_probability = 0.1;
    options.lost_fsync_max = 5;
    options.enospc_probability = 0.1;
    options.enospc_max = 5;
    options.enospc_consecutive_max = 2;
    options.misdirect_probability = 0.05;
    options.misdirect_max = 3;
    options.misdirect_shift_sectors_max = 8;
    let fs = SimFs::new(seed, options).expect("options");
    let names = ["00000000000000000000.log", "hwm", "consumer.offset"];
    for round in 0..3u8 {
        block(async {
            fs.create_dir_all(Path::new("/p")).await.expect("mkdir");
            for (i, name) in names.iter().enumerate() {
                let path = Path::new("/p").join(name);
                let Ok(f) = fs.open(&path, OpenMode::CreateTruncate).await else {
                    continue;
                };
                for k in 0..4u64 {
                    let data = vec![round * 16 + i as u8 + k as u8; 700];
                    let _ = f.write_at(&data, k * 700).await;
                    if k % 2 == 1 {
                        let _ = f.sync_data().await;
                    }
                }
                if i == 0 {
                    let _ = fs.sync_dir(Path::new("/p")).await;
                }
            }
        });
        fs.flip_random_bit(|_| true);
        fs.crash();
    }
    let events = fs
        .take_events()
        .iter()
        .map(|e| {
            format!(
                "{} {:?} {} {:?} {:?} {}",
                e.epoch,
                e.kind,
                e.path.display(),
                e.position,
                e.len,
                e.detail
            )
        })
        .collect();
    let images = names
        .iter()
        .map(|n| fs.durable_bytes(&Path::new("/p").join(n)))
        .collect();
    fs.check_invariants();
    (events, images)
}

#[test]
fn same_seed_same_outcomes() {
    let first = workload(42);
    assert_eq!(first, workload(42));
    assert!(first.0.len() > 10, "the workload logs events");
    let differs = (43..48).any(|seed| workload(seed) != first);
    assert!(differs, "the seed drives the outcomes");
}

/// `records` appends of 100 bytes, every fourth synced, then a crash; the wall time it
/// took, the best of three.
#[allow(
    clippy::disallowed_methods,
    reason = "the host's time, compared only with itself in the same test"
)]
fn small_writes(records: u64) -> std::time::Duration {
    (0..3)
        .map(|_| {
            let fs = sim(11);
            let file = durable_file(&fs, "seg.log", b"");
            let started = std::time::Instant::now();
            block(async {
                for record in 0..records {
                    file.write_at(&[record as u8; 100], record * 100)
                        .await
                        .expect("write");
                    if record % 4 == 3 {
                        file.sync_data().await.expect("sync");
                    }
                }
            });
            fs.crash();
            let elapsed = started.elapsed();
            assert_eq!(fs.durable_len(Path::new("/d/seg.log")), Some(records * 100));
            elapsed
        })
        .min()
        .expect("three runs")
}

#[test]
fn small_writes_and_syncs_cost_the_same_per_operation_as_the_file_grows() {
    // A guard against per-operation costs proportional to the file size, as a ratio
    // measured in the same run (no absolute time: the machines are shared). Ten times
    // the operations on a file ten times larger: linear costs about 10x, a cost
    // proportional to the file's size about 100x.
    let small = small_writes(2_000);
    let large = small_writes(20_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    assert!(
        ratio < 40.0,
        "20,000 operations took {ratio:.1}x the time of 2,000 ({large:?} vs {small:?})"
    );
}

#[test]
fn a_process_crash_keeps_the_page_cache_and_pending_operations_until_a_power_loss() {
    let fs = sim(5);
    let file = durable_file(&fs, "f", b"aaaa");
    block(file.write_at(b"bb", 0)).expect("write");
    let created = block(fs.open(Path::new("/d/g"), OpenMode::CreateNew)).expect("create");
    block(created.write_at(b"gg", 0)).expect("write");
    fs.process_crash();
    // The old handles died with the process.
    let stale = block(file.write_at(b"x", 0)).expect_err("stale handle");
    assert_eq!(stale.raw_os_error(), Some(ESTALE));
    // The next process reads what the last one wrote, synced or not.
    assert_eq!(read_visible(&fs, "/d/f").as_deref(), Some(&b"bbaa"[..]));
    assert_eq!(read_visible(&fs, "/d/g").as_deref(), Some(&b"gg"[..]));
    assert!(fs.has_pending_data(Path::new("/d/f")), "still not durable");
    assert_eq!(fs.pending_dir_op_count(), 1, "the create is still pending");
    assert_eq!(fs.event_counts().get(&FsEventKind::ProcessCrash), Some(&1));
    assert_eq!(fs.event_counts().get(&FsEventKind::Crash), None);
    // A power loss later drops what nobody synced (lost writes are the only outcome
    // with these options: nothing is kept or torn).
    let mut options = FaultOptions::none();
    options.crash_write_lost_probability = 1.0;
    options.crash_write_torn_probability = 0.0;
    fs.set_options(options).expect("options");
    fs.crash();
    assert_eq!(read_visible(&fs, "/d/f").as_deref(), Some(&b"aaaa"[..]));
    fs.check_invariants();
}

#[test]
fn after_an_fsync_eio_a_process_crash_shows_pages_no_fsync_will_write() {
    let (fs, file) = bbbb_before_one_eio(6);
    block(file.sync_data()).expect_err("EIO");
    fs.process_crash();
    // The restarted process reads the new bytes as if they were durable...
    assert_eq!(read_visible(&fs, "/d/f").as_deref(), Some(&b"bbbb"[..]));
    let again = block(fs.open(Path::new("/d/f"), OpenMode::ReadWrite)).expect("open");
    block(again.sync_data()).expect("an fsync succeeds");
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"aaaa"[..]),
        "and writes nothing: the pages are clean"
    );
    // ...until it writes them again.
    block(again.write_at(b"bbbb", 0)).expect("write back");
    block(again.sync_data()).expect("sync");
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"bbbb"[..])
    );
}

#[test]
fn an_fsync_eio_drops_the_pending_writes_but_not_a_truncation() {
    // `aaaa` durable; `bbbb` written over it, then the file cut to 2 bytes: the EIO
    // marks the written pages clean, but the cut is journaled metadata, which the next
    // fsync commits (a restarted process that builds on the cut must not see the old
    // bytes come back past it).
    let (fs, file) = bbbb_before_one_eio(7);
    block(file.set_len(2)).expect("set_len");
    block(file.sync_data()).expect_err("EIO");
    assert_eq!(read_visible(&fs, "/d/f").as_deref(), Some(&b"bb"[..]));
    fs.process_crash();
    let again = block(fs.open(Path::new("/d/f"), OpenMode::ReadWrite)).expect("open");
    block(again.write_at(b"c", 0)).expect("write");
    block(again.sync_data()).expect("cap reached: no more EIO");
    assert_eq!(
        fs.durable_bytes(Path::new("/d/f")).as_deref(),
        Some(&b"ca"[..]),
        "the cut persisted with the next fsync, the dropped bbbb did not"
    );
    fs.crash();
    assert_eq!(read_visible(&fs, "/d/f").as_deref(), Some(&b"ca"[..]));
    fs.check_invariants();
}

#[test]
fn the_written_image_shows_what_lies_under_unreadable_sectors() {
    let fs = sim(1);
    let contents: Vec<u8> = (0..4 * SECTOR_SIZE).map(|i| (i % 251) as u8).collect();
    durable_file(&fs, "seg.log", &contents);
    let mut sectors = BTreeSet::new();
    // Draws until two distinct sectors are unreadable.
    while sectors.len() < 2 {
        let s = fs
            .latent_sector(|p| p == Path::new("/d/seg.log"), |_| None)
            .expect("a durable file to damage");
        sectors.insert(s.position);
    }
    let masked = fs.durable_bytes(Path::new("/d/seg.log")).expect("file");
    let written = fs
        .durable_bytes_unmasked(Path::new("/d/seg.log"))
        .expect("file");
    assert_eq!(written, contents, "the bytes as written, sectors and all");
    for &position in &sectors {
        let sector = position as usize..(position + SECTOR_SIZE) as usize;
        assert!(masked[sector.clone()].iter().all(|&b| b == UNREADABLE_FILL));
        assert_eq!(written[sector.clone()], contents[sector]);
    }
}

/// Makes every segment write of frame bytes land corrupt, up to `max` of them.
fn corrupt_segment_writes(fs: &SimFs, max: u32) {
    let mut options = FaultOptions::none();
    options.corrupt_write_probability = 1.0;
    options.corrupt_write_max = max;
    fs.set_options(options).expect("options");
}

/// Bit positions where `a` and `b` differ.
fn differing_bits(a: &[u8], b: &[u8]) -> Vec<u64> {
    assert_eq!(a.len(), b.len());
    (0..a.len() as u64 * 8)
        .filter(|&i| (a[(i / 8) as usize] ^ b[(i / 8) as usize]) & (1 << (i % 8)) != 0)
        .collect()
}

#[test]
fn a_corrupt_write_stores_one_bit_flipped_in_the_cache_and_on_the_platter() {
    let segment = "00000000000000000000.log";
    let fs = sim(21);
    let file = durable_file(&fs, segment, &[0u8; 4096]);
    corrupt_segment_writes(&fs, 1);
    let data: Vec<u8> = (0..1024u32).map(|i| (i % 251) as u8 + 1).collect();
    block(file.write_at(&data, 512)).expect("write");
    let cached = read_visible(&fs, &format!("/d/{segment}")).expect("file");
    assert_eq!(differing_bits(&cached[512..1536], &data).len(), 1);
    block(file.sync_data()).expect("sync");
    let durable = fs
        .durable_bytes(&path(&format!("/d/{segment}")))
        .expect("durable");
    assert_eq!(durable, cached, "the fsync persists what the cache shows");
    let events: Vec<_> = fs
        .take_events()
        .into_iter()
        .filter(|e| e.kind == FsEventKind::CorruptWrite)
        .collect();
    assert_eq!(events.len(), 1);
    let corrupted = events[0].corrupted.as_ref().expect("what was meant");
    assert_eq!(corrupted.written, data);
    assert_eq!((events[0].position, events[0].len), (Some(512), Some(1024)));
    let flipped = differing_bits(&cached, &[&[0u8; 512][..], &data, &[0u8; 2560]].concat());
    assert_eq!(flipped, vec![corrupted.byte * 8 + u64::from(corrupted.bit)]);
    // Capped at one: the next write lands as written.
    block(file.write_at(&data, 2048)).expect("write");
    let cached = read_visible(&fs, &format!("/d/{segment}")).expect("file");
    assert_eq!(cached[2048..3072], data[..]);
}

#[test]
fn a_corrupt_write_strikes_only_segment_frame_bytes_and_never_after_the_heal() {
    let fs = sim(22);
    let segment = "00000000000000000000.log";
    let file = durable_file(&fs, segment, &[1u8; 128]);
    let data = [0xABu8; 64];
    for name in ["hwm", "consumer.offset", "00000000000000000000.wal"] {
        let file = durable_file(&fs, name, &[0u8; 128]);
        corrupt_segment_writes(&fs, 4);
        block(file.write_at(&data, 0)).expect("write");
        assert_eq!(
            read_visible(&fs, &format!("/d/{name}")).unwrap()[..64],
            data
        );
    }
    block(file.write_at(&[0u8; 64], 0)).expect("zeros");
    assert_eq!(
        read_visible(&fs, &format!("/d/{segment}")).unwrap()[..64],
        [0u8; 64],
        "a preallocation's zeros land as written"
    );
    fs.heal();
    block(file.write_at(&data, 0)).expect("write");
    assert_eq!(
        read_visible(&fs, &format!("/d/{segment}")).unwrap()[..64],
        data
    );
    assert_eq!(fs.event_counts().get(&FsEventKind::CorruptWrite), None);
}
