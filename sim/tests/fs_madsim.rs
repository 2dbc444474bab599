//! `SimFs` and `SimClock` inside madsim: a kill of the node a disk is attached to crashes
//! the disk (madsim calls `reset_node` on kill, not on a bare restart), a kill can land
//! while an operation waits, and the clock follows simulated time.

use cafelog_engine::clock::Clock;
use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_sim::clock::{SimClock, WALL_BASE_MS_DEFAULT};
use cafelog_sim::fs::plugin::{self, SimFsPlugin};
use cafelog_sim::fs::{FaultOptions, FsEventKind, SECTOR_SIZE, SimFs};
use madsim::runtime::{Handle, Runtime};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const OLD: u8 = 0x11;
const NEW: u8 = 0x22;
const LEN: usize = 8 * SECTOR_SIZE as usize;

fn runtime(seed: u64) -> Runtime {
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.add_simulator::<SimFsPlugin>();
    runtime
}

/// The node's life: make `/d/seg.log` durable with OLD bytes (first incarnation only),
/// overwrite it with NEW bytes without syncing, report, then idle.
async fn node_main(fs: SimFs, progress: Arc<AtomicU64>) {
    if !fs.exists(Path::new("/d/seg.log")).await.expect("exists") {
        fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
        let f = fs
            .open(Path::new("/d/seg.log"), OpenMode::CreateNew)
            .await
            .expect("create");
        f.write_at(&[OLD; LEN], 0).await.expect("write");
        f.sync_data().await.expect("sync");
        fs.sync_dir(Path::new("/d")).await.expect("sync dir");
    }
    let f = fs
        .open(Path::new("/d/seg.log"), OpenMode::ReadWrite)
        .await
        .expect("open");
    f.write_at(&[NEW; LEN], 0).await.expect("unsynced write");
    progress.fetch_add(1, Ordering::SeqCst);
    loop {
        madsim::time::sleep(Duration::from_secs(1)).await;
    }
}

fn assert_each_sector_old_or_new(image: &[u8]) {
    assert_eq!(image.len(), LEN);
    for (index, sector) in image.chunks(SECTOR_SIZE as usize).enumerate() {
        let all = |v: u8| sector.iter().all(|&b| b == v);
        assert!(
            all(OLD) || all(NEW),
            "sector {index} mixes old and new bytes"
        );
    }
}

async fn wait_for(progress: &AtomicU64, value: u64) {
    while progress.load(Ordering::SeqCst) < value {
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn killing_the_node_crashes_its_disk_and_restart_alone_does_not() {
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let runtime = runtime(seed);
        let fs = SimFs::new(seed, FaultOptions::none()).expect("options");
        let progress = Arc::new(AtomicU64::new(0));
        runtime.block_on({
            let fs = fs.clone();
            async move {
                let node = Handle::current()
                    .create_node()
                    .name("engine")
                    .init({
                        let fs = fs.clone();
                        let progress = progress.clone();
                        move || node_main(fs.clone(), progress.clone())
                    })
                    .build();
                plugin::attach(node.id(), &fs);
                wait_for(&progress, 1).await;
                assert!(fs.has_pending_data(Path::new("/d/seg.log")));

                // A bare restart: madsim does not call reset_node, the disk keeps its state.
                Handle::current().restart(node.id());
                wait_for(&progress, 2).await;
                assert_eq!(
                    fs.epoch(),
                    0,
                    "madsim's restart alone must not crash the disk"
                );

                plugin::crash_and_restart(node.id());
                assert_eq!(fs.epoch(), 1, "kill crashed the disk");
                let durable = fs.durable_bytes(Path::new("/d/seg.log")).expect("file");
                assert_each_sector_old_or_new(&durable);
                wait_for(&progress, 3).await;
                assert_eq!(fs.epoch(), 1);
                assert_eq!(fs.durable_bytes(Path::new("/d/seg.log")), Some(durable));
            }
        });
        let events = fs.take_events();
        assert_eq!(
            events
                .iter()
                .filter(|e| e.kind == FsEventKind::Crash)
                .count(),
            1
        );
        assert!(
            events.iter().all(|e| e.sim_time.is_some()),
            "events carry simulated time"
        );
        kinds.extend(events.iter().map(|e| e.kind));
    }
    for kind in [
        FsEventKind::CrashWriteLost,
        FsEventKind::CrashWriteKept,
        FsEventKind::CrashWriteTorn,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} never happened");
    }
}

#[test]
fn a_kill_during_slow_io_stops_the_node_between_operations() {
    let mut options = FaultOptions::none();
    options.latency_probability = 1.0;
    options.latency_min = Duration::from_millis(1);
    options.latency_max = Duration::from_millis(50);
    options.latency_after_probability = 0.5;
    let mut synced_counts = std::collections::BTreeSet::new();
    for seed in 0..30 {
        let runtime = runtime(seed);
        let fs = SimFs::new(seed, options.clone()).expect("options");
        let acked = Arc::new(AtomicU64::new(0));
        let synced_not_acked = runtime.block_on({
            let fs = fs.clone();
            let acked = acked.clone();
            async move {
                let node = Handle::current()
                    .create_node()
                    .init({
                        let fs = fs.clone();
                        let acked = acked.clone();
                        move || {
                            let fs = fs.clone();
                            let acked = acked.clone();
                            async move {
                                fs.create_dir_all(Path::new("/d")).await.expect("mkdir");
                                let f = fs
                                    .open(Path::new("/d/log"), OpenMode::CreateNew)
                                    .await
                                    .expect("create");
                                fs.sync_dir(Path::new("/d")).await.expect("sync dir");
                                for record in 0..1000u64 {
                                    f.write_at(&record.to_be_bytes(), record * 8)
                                        .await
                                        .expect("write");
                                    f.sync_data().await.expect("sync");
                                    acked.store(record + 1, Ordering::SeqCst);
                                }
                            }
                        }
                    })
                    .build();
                plugin::attach(node.id(), &fs);
                madsim::time::sleep(Duration::from_millis(300 + seed * 7)).await;
                Handle::current().kill(node.id());
                let acked_at_kill = acked.load(Ordering::SeqCst);
                let durable = fs.durable_bytes(Path::new("/d/log")).expect("synced name");
                // Every acknowledged record is durable; at most one more (synced, not acked).
                let durable_records = durable.len() as u64 / 8;
                assert!(durable_records >= acked_at_kill && durable_records <= acked_at_kill + 1);
                for (index, chunk) in durable.chunks(8).enumerate() {
                    assert_eq!(chunk, (index as u64).to_be_bytes());
                }
                madsim::time::sleep(Duration::from_secs(5)).await;
                assert_eq!(
                    acked.load(Ordering::SeqCst),
                    acked_at_kill,
                    "the killed node stopped"
                );
                assert_eq!(fs.durable_bytes(Path::new("/d/log")), Some(durable));
                durable_records - acked_at_kill
            }
        });
        synced_counts.insert(synced_not_acked);
    }
    assert_eq!(
        synced_counts.len(),
        2,
        "kills land both before and after an fsync's effect"
    );
}

#[test]
fn sim_clock_follows_simulated_time_and_wall_time_steps_back() {
    Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(async {
        let clock = SimClock::default();
        let t0 = clock.now();
        let w0 = clock.wall_ms();
        assert!(w0 >= WALL_BASE_MS_DEFAULT);
        let sleep = clock.sleep(Duration::from_millis(1500));
        fn assert_send<T: Send>(_: &T) {}
        assert_send(&sleep);
        sleep.await;
        let elapsed = clock.now() - t0;
        assert!(elapsed >= Duration::from_millis(1500) && elapsed < Duration::from_millis(1600));
        let w1 = clock.wall_ms();
        assert!((1500..1600).contains(&(w1 - w0)));
        let shared = clock.clone();
        shared.step_wall(-60_000);
        assert_eq!(clock.wall_offset_ms(), -60_000);
        assert!(
            clock.wall_ms() < w1 - 59_000,
            "wall time stepped back for every clone"
        );
        assert!(
            clock.now() >= elapsed + t0,
            "monotonic time did not move back"
        );
        let early = SimClock::new(10);
        early.step_wall(-1_000_000);
        assert_eq!(early.wall_ms(), 0, "wall time is clamped at the epoch");
    });
}

#[test]
fn fs_futures_are_send() {
    fn assert_send<T: Send>(_: T) {}
    let fs = SimFs::new(0, FaultOptions::none()).expect("options");
    assert_send(fs.open(Path::new("/x"), OpenMode::CreateNew));
    assert_send(fs.create_dir_all(Path::new("/x")));
    assert_send(fs.list_dir(Path::new("/")));
    assert_send(fs.rename(Path::new("/a"), Path::new("/b")));
    assert_send(fs.remove_file(Path::new("/a")));
    assert_send(fs.sync_dir(Path::new("/")));
    assert_send(fs.exists(Path::new("/")));
    let file = pollster::block_on(fs.open(Path::new("/x"), OpenMode::CreateNew)).expect("create");
    let mut buf = [0u8; 1];
    assert_send(file.read_at(&mut buf, 0));
    assert_send(file.write_at(b"x", 0));
    assert_send(file.len());
    assert_send(file.set_len(0));
    assert_send(file.sync_data());
}
