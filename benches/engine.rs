//! `cargo bench --bench engine`: the partition log on real files, against this disk's
//! own limits and (with `--features peers`) against peer write-ahead logs.
//!
//! Every figure stands beside a baseline measured in the same run and is printed as a
//! ratio, because the machines are shared and noisy: absolute numbers drift between
//! runs, ratios within one run are what count. Contenders of one measurement run in
//! interleaved rounds (engine, baseline, baseline, engine, ...) so that a burst of noise
//! hits them alike.
//!
//! Modes: `cargo bench --bench engine` (full, about a minute); `CAFELOG_BENCH_QUICK=1`
//! (a smoke run of a few seconds); and `cargo test`, which runs this binary without
//! `--bench` at tiny counts to check that every measurement still works. Files live in
//! a temp dir under `CAFELOG_BENCH_DIR` (default: the system temp dir). The last
//! section is the simulator's speed (`cafelog-sim`, whole seeds, no files).

/// The allocator `cafelog` itself runs with, so the simulator section measures what a
/// sweep does; the engine, its baselines and the peers all share it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// Helpers live in `benches/engine/` so cargo does not take them for bench targets.
#[path = "engine/bare.rs"]
mod bare;
#[cfg(feature = "peers")]
#[path = "engine/peers.rs"]
mod peers;
#[path = "engine/workload.rs"]
mod workload;

// One file per section of the report, and one for the table it prints.
#[cfg(feature = "peers")]
#[path = "engine/against_peers.rs"]
mod against_peers;
#[path = "engine/knobs.rs"]
mod knobs;
#[path = "engine/reads.rs"]
mod reads;
#[path = "engine/simulator.rs"]
mod simulator;
#[path = "engine/table.rs"]
mod table;
#[path = "engine/writes.rs"]
mod writes;

use table::*;

use cafelog_engine::clock::SystemClock;
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workload::{Record, pairs};

type BenchLog = Log<StdFs, SystemClock>;

/// How much work each measurement does.
#[derive(Clone, Copy, Debug)]
struct Scale {
    name: &'static str,
    /// Commits per contender in the latency measurement.
    latency_commits: usize,
    /// Commits per contender at batch sizes 1, 10, 100, 1000.
    throughput_commits: [usize; 4],
    /// Commits in total per producer count.
    producer_commits: usize,
    /// Passes over the cached frames.
    cached_passes: usize,
    /// Commits per peer at batch 1 and batch 1000.
    #[cfg_attr(
        not(feature = "peers"),
        expect(dead_code, reason = "read only with --features peers")
    )]
    peer_commits: [usize; 2],
    /// Interleaved rounds per measurement.
    rounds: usize,
    /// Simulator seeds per thread count, on the `quick` and the `default` profile.
    sim_seeds: [u64; 2],
}

const FULL: Scale = Scale {
    name: "full",
    latency_commits: 10_000,
    throughput_commits: [10_000, 5_000, 2_000, 1_000],
    producer_commits: 10_000,
    cached_passes: 50,
    peer_commits: [4_000, 500],
    rounds: 10,
    sim_seeds: [400, 160],
};

const QUICK: Scale = Scale {
    name: "quick",
    latency_commits: 2_000,
    throughput_commits: [2_000, 1_000, 400, 200],
    producer_commits: 2_000,
    cached_passes: 10,
    peer_commits: [800, 100],
    rounds: 4,
    sim_seeds: [60, 20],
};

/// What `cargo test` runs: enough to exercise every path, not to measure.
const SMOKE: Scale = Scale {
    name: "smoke (cargo test)",
    latency_commits: 20,
    throughput_commits: [20, 10, 4, 3],
    producer_commits: 32,
    cached_passes: 1,
    peer_commits: [10, 2],
    rounds: 1,
    sim_seeds: [2, 1],
};

const BATCH_SIZES: [usize; 4] = [1, 10, 100, 1000];

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let scale = if !benching {
        SMOKE
    } else if std::env::var_os("CAFELOG_BENCH_QUICK").is_some_and(|v| v != "0") {
        QUICK
    } else {
        FULL
    };
    let base = std::env::var_os("CAFELOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("cafelog-bench-")
        .tempdir_in(&base)
        .expect("temp dir");
    let started = Instant::now();
    println!("cafelog engine benchmark, mode {}", scale.name);
    println!(
        "dir {} (filesystem {}), {} cpus, peers {}",
        tmp.path().display(),
        filesystem_of(tmp.path()),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if cfg!(feature = "peers") {
            "on"
        } else {
            "off (--features peers)"
        }
    );
    let records = workload::pool(100_000);
    let mean_user = records.iter().map(Record::user_len).sum::<usize>() / records.len();
    println!("records: JSON-like, mean {mean_user} B (key + payload) before the envelope\n");

    let mut bench = Bench {
        root: tmp.path().to_path_buf(),
        records,
        scale,
        next_dir: 0,
    };
    // `CAFELOG_BENCH_ONLY=producers,reads` runs only the named sections (the names
    // below), for a quick look at one figure; a full run is what BENCHMARKS.md quotes.
    let only = std::env::var("CAFELOG_BENCH_ONLY").ok();
    let wanted = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| w == name))
    };
    if let Some(only) = &only {
        const SECTIONS: [&str; 7] = [
            "latency",
            "throughput",
            "producers",
            "batches",
            "reads",
            "peers",
            "simulator",
        ];
        if let Some(bad) = only.split(',').find(|w| !SECTIONS.contains(w)) {
            eprintln!("CAFELOG_BENCH_ONLY: no section {bad:?}; the sections are {SECTIONS:?}");
            std::process::exit(2);
        }
    }
    if wanted("latency") {
        bench.commit_latency();
    }
    // The read section reads the busy log the throughput section writes.
    let busy_dir = (wanted("throughput") || wanted("reads")).then(|| bench.throughput());
    if wanted("producers") {
        bench.producers();
    }
    if wanted("batches") {
        bench.pipelined_batches();
    }
    if let Some(busy_dir) = busy_dir.filter(|_| wanted("reads")) {
        bench.reads(&busy_dir);
    }
    #[cfg(feature = "peers")]
    if wanted("peers") {
        bench.peers();
    }
    if wanted("simulator") {
        bench.simulator();
    }
    println!("\ntotal wall time {:.1} s", started.elapsed().as_secs_f64());
}

struct Bench {
    root: PathBuf,
    records: Vec<Record>,
    scale: Scale,
    next_dir: usize,
}

impl Bench {
    fn dir(&mut self, name: &str) -> PathBuf {
        self.next_dir += 1;
        let dir = self.root.join(format!("{:02}-{name}", self.next_dir));
        std::fs::create_dir(&dir).expect("bench dir");
        dir
    }

    /// `count` records starting at index `from` of the pool (wrapping).
    fn slice(&self, from: usize, count: usize) -> &[Record] {
        let from = from % (self.records.len() - count + 1);
        &self.records[from..from + count]
    }
}

fn open_log(dir: &Path, config: LogConfig) -> BenchLog {
    pollster::block_on(Log::open(StdFs, SystemClock, dir, config))
        .expect("open log")
        .0
}

/// Reads `from..to` in calls of up to 1000 records; returns (records, key+payload bytes).
fn read_range(log: &BenchLog, from: u64, to: u64) -> (u64, u64) {
    let (mut records, mut bytes) = (0u64, 0u64);
    let mut next = from;
    while next < to {
        let batch = pollster::block_on(log.read(next, 1000)).expect("read");
        assert!(batch.skipped.is_empty(), "no record is skipped");
        assert!(batch.next_offset > next, "reads make progress");
        for r in &batch.records {
            bytes += (r.key.len() + r.payload.len()) as u64;
        }
        records += batch.records.len() as u64;
        next = batch.next_offset;
    }
    (records, bytes)
}

/// The filesystem type of the mount holding `path`, from /proc/mounts.
fn filesystem_of(path: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, point, fs) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(point)
                .then(|| (point.len(), fs.to_string()))
        })
        .max()
        .map_or_else(|| "unknown".into(), |(_, fs)| fs)
}
