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
    bench.commit_latency();
    let busy_dir = bench.throughput();
    bench.producers();
    bench.pipelined_batches();
    bench.reads(&busy_dir);
    #[cfg(feature = "peers")]
    bench.peers();
    bench.simulator();
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

    fn commit_latency(&mut self) {
        let n = self.scale.latency_commits;
        let log = open_log(&self.dir("latency-log"), LogConfig::default());
        let mut fresh = bare::FreshBlock::new(&self.dir("latency-fresh").join("f"));
        let mut overwrite =
            bare::OverwriteBlock::new(&self.dir("latency-overwrite").join("f"), n as u64);
        let (mut engine_t, mut fresh_t, mut overwrite_t) = (Vec::new(), Vec::new(), Vec::new());
        let per_round = n.div_ceil(self.scale.rounds);
        let mut i = 0;
        while i < n {
            let end = (i + per_round).min(n);
            for j in i..end {
                let record = self.slice(j, 1);
                let t = Instant::now();
                pollster::block_on(log.commit(pairs(record))).expect("commit");
                engine_t.push(t.elapsed());
            }
            for _ in i..end {
                fresh_t.push(fresh.once());
            }
            for _ in i..end {
                overwrite_t.push(overwrite.once());
            }
            i = end;
        }
        let (e50, e99) = (
            percentile(&mut engine_t, 50.0),
            percentile(&mut engine_t, 99.0),
        );
        let (f50, f99) = (
            percentile(&mut fresh_t, 50.0),
            percentile(&mut fresh_t, 99.0),
        );
        let (o50, o99) = (
            percentile(&mut overwrite_t, 50.0),
            percentile(&mut overwrite_t, 99.0),
        );
        section(&format!(
            "Durable commit latency: 1 record, Log::commit, {n} samples each"
        ));
        header(&["", "p50", "p99", "p50 / this", "p99 / this"]);
        row(&[
            "engine Log::commit".into(),
            us(e50),
            us(e99),
            "1.00".into(),
            "1.00".into(),
        ]);
        row(&[
            "bare 4 KiB write+fdatasync, fresh space".into(),
            us(f50),
            us(f99),
            ratio(secs(e50), secs(f50)),
            ratio(secs(e99), secs(f99)),
        ]);
        row(&[
            "bare 4 KiB write+fdatasync, allocated".into(),
            us(o50),
            us(o99),
            ratio(secs(e50), secs(o50)),
            ratio(secs(e99), secs(o99)),
        ]);
        println!("  target: engine p50 / allocated p50 <= 1.20");
        let m = log.metrics().snapshot();
        println!(
            "  engine fsyncs per commit {:.2}",
            m.fsyncs as f64 / m.commits.max(1) as f64
        );
        pollster::block_on(log.close()).expect("close");
    }

    /// Group commit at batch sizes 1..1000 against the two bare pipelines; also the
    /// compression figures, from the same logs. Returns the directory of the batch-1000
    /// log (closed), which the read measurement reopens.
    fn throughput(&mut self) -> PathBuf {
        section("Group-commit throughput: append_batch + sync, one producer");
        header(&[
            "batch",
            "engine rec/s",
            "engine MB/s",
            "(a) raw rec/s",
            "(b) zstd rec/s",
            "engine / (a)",
            "engine / (b)",
        ]);
        let mut compression = Vec::new();
        let mut busy_dir = PathBuf::new();
        for (slot, &batch) in BATCH_SIZES.iter().enumerate() {
            let commits = self.scale.throughput_commits[slot];
            let log_dir = self.dir(&format!("batch{batch}-log"));
            let log = open_log(&log_dir, LogConfig::default());
            let mut raw = bare::RawPipeline::new(&self.dir(&format!("batch{batch}-raw")).join("f"));
            let mut zstd =
                bare::ZstdPipeline::new(&self.dir(&format!("batch{batch}-zstd")).join("f"), 3);
            let (mut te, mut ta, mut tb) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
            let per_round = commits.div_ceil(self.scale.rounds);
            let wall_ms = 1_700_000_000_000;
            let mut c = 0;
            while c < commits {
                let end = (c + per_round).min(commits);
                let t = Instant::now();
                for k in c..end {
                    let chunk = self.slice(k * batch, batch);
                    log.append_batch(pairs(chunk)).expect("append");
                    pollster::block_on(log.sync()).expect("sync");
                }
                te += t.elapsed();
                let t = Instant::now();
                for k in c..end {
                    raw.commit(self.slice(k * batch, batch), wall_ms);
                }
                ta += t.elapsed();
                let t = Instant::now();
                for k in c..end {
                    zstd.commit(self.slice(k * batch, batch), wall_ms);
                }
                tb += t.elapsed();
                c = end;
            }
            let n = (commits * batch) as f64;
            let user_bytes: usize = (0..commits)
                .map(|k| {
                    self.slice(k * batch, batch)
                        .iter()
                        .map(Record::user_len)
                        .sum::<usize>()
                })
                .sum();
            let (re, ra, rb) = (n / secs(te), n / secs(ta), n / secs(tb));
            row(&[
                batch.to_string(),
                format!("{re:.0}"),
                format!("{:.1}", user_bytes as f64 / secs(te) / 1e6),
                format!("{ra:.0}"),
                format!("{rb:.0}"),
                ratio(re, ra),
                ratio(re, rb),
            ]);
            let m = log.metrics().snapshot();
            let name = match batch {
                1 => Some(("trickle (1 rec/frame)", "~40%")),
                1000 => Some(("busy (1000 rec/frame)", "~95%")),
                _ => None,
            };
            if let Some((name, spec)) = name {
                compression.push((name, spec, m, raw.bytes_written(), zstd.bytes_written()));
            }
            if batch == 1 {
                // The same trickle with every frame compressed (`compress_min_bytes` 0),
                // for what storing lone records raw costs on disk. Not timed.
                let dir = self.dir("trickle-compressed-log");
                let every = open_log(
                    &dir,
                    LogConfig {
                        compress_min_bytes: 0,
                        ..LogConfig::default()
                    },
                );
                for k in 0..commits {
                    every.append_batch(pairs(self.slice(k, 1))).expect("append");
                    pollster::block_on(every.sync()).expect("sync");
                }
                compression.push((
                    "trickle, compress_min_bytes 0",
                    "~40%",
                    every.metrics().snapshot(),
                    raw.bytes_written(),
                    zstd.bytes_written(),
                ));
                pollster::block_on(every.close()).expect("close");
            }
            pollster::block_on(log.close()).expect("close");
            if batch == 1000 {
                busy_dir = log_dir;
            }
        }
        println!("  targets: batch 1000 engine / (a) >= 1.00; batch 1 rec/s >= raft-engine's");
        self.knobs();

        section("Compression saved (LogMetrics bytes_stored vs bytes_uncompressed)");
        header(&[
            "traffic",
            "frames",
            "saved, frames on disk",
            "saved, payload only",
            "spec",
            "(b) zstd pipeline saved",
        ]);
        for (name, spec, m, raw_bytes, zstd_bytes) in &compression {
            let on_disk = 1.0 - m.bytes_stored as f64 / m.bytes_uncompressed as f64;
            // Payload only: the stored payload against the length-prefixed records it
            // encodes (the frame header is fixed overhead the codec cannot remove).
            let stored_payload = m.bytes_stored - 27 * m.frames_written;
            let input_payload = m.bytes_uncompressed + 4 * m.records_written;
            let payload = 1.0 - stored_payload as f64 / input_payload as f64;
            let pipeline =
                1.0 - (*zstd_bytes as f64 - 27.0 * m.frames_written as f64) / *raw_bytes as f64;
            row(&[
                (*name).into(),
                m.frames_written.to_string(),
                pct(on_disk),
                pct(payload),
                (*spec).into(),
                pct(pipeline),
            ]);
        }
        println!(
            "  target: trickle payload never stored larger than its input (saved >= 0%); \
             lone records are stored raw below compress_min_bytes ({} B)",
            LogConfig::default().compress_min_bytes
        );
        busy_dir
    }

    /// The configured zstd level at batch 1000, where compression is the bottleneck:
    /// the default (3) against level 1, both beside pipeline (a).
    /// The knobs at batch 1000, where compression is the commit path's largest cost:
    /// the default (zstd level 1, preallocation on) against level 3 and against
    /// preallocation off, all beside pipeline (a).
    fn knobs(&mut self) {
        section("Knobs at batch 1000 (LogConfig), one producer");
        header(&["contender", "records/s", "saved on disk", "/ (a) raw"]);
        let batch = 1000;
        let commits = self.scale.throughput_commits[3];
        let defaults = LogConfig::default();
        let contenders: [(&str, LogConfig); 5] = [
            (
                "engine default (zstd level 1, hash log 11)",
                defaults.clone(),
            ),
            (
                "engine, zstd level -3 (fast)",
                LogConfig {
                    zstd_level: -3,
                    ..defaults.clone()
                },
            ),
            (
                "engine, zstd level 3",
                LogConfig {
                    zstd_level: 3,
                    ..defaults.clone()
                },
            ),
            (
                "engine, zstd's own hash log (14)",
                LogConfig {
                    zstd_hash_log: 0,
                    ..defaults.clone()
                },
            ),
            (
                "engine default, no preallocation",
                LogConfig {
                    preallocate_bytes: 0,
                    ..defaults
                },
            ),
        ];
        let logs: Vec<BenchLog> = contenders
            .iter()
            .enumerate()
            .map(|(i, (_, config))| open_log(&self.dir(&format!("knobs{i}-log")), config.clone()))
            .collect();
        let mut raw = bare::RawPipeline::new(&self.dir("knobs-raw").join("f"));
        let mut times = vec![Duration::ZERO; logs.len() + 1];
        let per_round = commits.div_ceil(self.scale.rounds);
        let mut c = 0;
        while c < commits {
            let end = (c + per_round).min(commits);
            for (log, time) in logs.iter().zip(&mut times) {
                let t = Instant::now();
                for k in c..end {
                    log.append_batch(pairs(self.slice(k * batch, batch)))
                        .expect("append");
                    pollster::block_on(log.sync()).expect("sync");
                }
                *time += t.elapsed();
            }
            let t = Instant::now();
            for k in c..end {
                raw.commit(self.slice(k * batch, batch), 1_700_000_000_000);
            }
            times[logs.len()] += t.elapsed();
            c = end;
        }
        let n = (commits * batch) as f64;
        let raw_rate = n / secs(times[logs.len()]);
        for ((log, (name, _)), time) in logs.iter().zip(&contenders).zip(&times) {
            let m = log.metrics().snapshot();
            let rate = n / secs(*time);
            row(&[
                (*name).into(),
                format!("{rate:.0}"),
                pct(1.0 - m.bytes_stored as f64 / m.bytes_uncompressed as f64),
                ratio(rate, raw_rate),
            ]);
            pollster::block_on(log.close()).expect("close");
        }
        row(&[
            "(a) raw pipeline".into(),
            format!("{raw_rate:.0}"),
            "-".into(),
            "1.00".into(),
        ]);
    }

    /// The simulator's speed: seeds per second and simulated seconds per wall-clock
    /// second, on one thread and on every core, for the `quick` and `default` profiles.
    /// Each thread runs whole seeds (one madsim runtime each), as `cafelog sweep` does.
    fn simulator(&mut self) {
        use cafelog_sim::profile::Profile;
        use cafelog_sim::world::{RunSpec, run};
        section("Simulator speed (whole seeds, as cafelog sweep runs them)");
        header(&[
            "profile",
            "threads",
            "seeds",
            "seeds/s",
            "simulated s / wall s",
            "/ 2000x target",
        ]);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut failures = 0;
        for (name, seeds) in [
            ("quick", self.scale.sim_seeds[0]),
            ("default", self.scale.sim_seeds[1]),
        ] {
            let profile = Profile::by_name(name).expect("a built-in profile");
            for threads in [1, cores] {
                let next = std::sync::atomic::AtomicU64::new(0);
                let sim_ms = std::sync::atomic::AtomicU64::new(0);
                let failed = std::sync::atomic::AtomicU64::new(0);
                let t = Instant::now();
                std::thread::scope(|scope| {
                    for _ in 0..threads {
                        scope.spawn(|| {
                            loop {
                                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                if seed >= seeds {
                                    break;
                                }
                                let spec = RunSpec::from_seed(seed, &profile);
                                // A thread per seed, as the sweep does: madsim's runtime
                                // and its thread-locals start fresh each time.
                                let outcome = std::thread::spawn(move || run(&spec))
                                    .join()
                                    .expect("a seed's run panicked");
                                sim_ms.fetch_add(
                                    outcome.sim_ms,
                                    std::sync::atomic::Ordering::Relaxed,
                                );
                                if outcome.verdict.exit_code() != 0 {
                                    failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                            }
                        });
                    }
                });
                let wall = secs(t.elapsed());
                let speed = sim_ms.into_inner() as f64 / 1000.0 / wall;
                failures += failed.into_inner();
                row(&[
                    name.into(),
                    threads.to_string(),
                    seeds.to_string(),
                    format!("{:.1}", seeds as f64 / wall),
                    format!("{speed:.0}x"),
                    ratio(speed, 2000.0),
                ]);
            }
        }
        println!(
            "  target: default profile >= 2000 simulated s per wall s (TigerBeetle's VOPR reports ~700x)"
        );
        if failures > 0 {
            println!("  {failures} seed(s) did not pass: `cafelog sweep` names them");
        }
    }

    /// Producers committing batches of 1000 at once: one compresses its batch while
    /// another's fsync is in flight (the write path's encoding stage has its own lock).
    /// Beside pipeline (a), one writer, on the same number of batches.
    fn pipelined_batches(&mut self) {
        section("Batch 1000 from concurrent producers: one Log, each thread append_batch + sync");
        header(&[
            "producers",
            "records/s",
            "fsyncs/batch",
            "vs 1 producer",
            "(a) raw rec/s",
            "engine / (a)",
        ]);
        let batch = 1000;
        let batches = self.scale.throughput_commits[3];
        let mut single = 0.0;
        for producers in [1usize, 2, 4] {
            let log = open_log(
                &self.dir(&format!("pipelined{producers}")),
                LogConfig::default(),
            );
            let per = batches / producers;
            let barrier = std::sync::Barrier::new(producers + 1);
            let started = std::thread::scope(|s| {
                for p in 0..producers {
                    let (log, barrier, bench) = (log.clone(), &barrier, &*self);
                    s.spawn(move || {
                        barrier.wait();
                        for j in 0..per {
                            let chunk = bench.slice((p * per + j) * batch, batch);
                            log.append_batch(pairs(chunk)).expect("append");
                            pollster::block_on(log.sync()).expect("sync");
                        }
                    });
                }
                barrier.wait();
                Instant::now()
            });
            let engine_secs = started.elapsed().as_secs_f64();
            let mut raw =
                bare::RawPipeline::new(&self.dir(&format!("pipelined{producers}-raw")).join("f"));
            let t = Instant::now();
            for k in 0..per * producers {
                raw.commit(self.slice(k * batch, batch), 1_700_000_000_000);
            }
            let raw_rate = (per * producers * batch) as f64 / secs(t.elapsed());
            let m = log.metrics().snapshot();
            let rate = (per * producers * batch) as f64 / engine_secs;
            if producers == 1 {
                single = rate;
            }
            row(&[
                producers.to_string(),
                format!("{rate:.0}"),
                format!("{:.2}", m.fsyncs as f64 / (per * producers) as f64),
                ratio(rate, single),
                format!("{raw_rate:.0}"),
                ratio(rate, raw_rate),
            ]);
            pollster::block_on(log.close()).expect("close");
        }
        println!(
            "  target: batch 1000 engine / (a) >= 1.00 (here with the next batch compressed during the fsync)"
        );
    }

    fn producers(&mut self) {
        section("Concurrent producers: one Log, each thread commits 1 record at a time");
        header(&[
            "producers",
            "commits/s",
            "fsyncs/commit",
            "records/fsync",
            "vs 1 producer",
        ]);
        let total = self.scale.producer_commits;
        let mut single = 0.0;
        for producers in [1usize, 4, 16] {
            let log = open_log(
                &self.dir(&format!("producers{producers}")),
                LogConfig::default(),
            );
            let per = total / producers;
            let barrier = std::sync::Barrier::new(producers + 1);
            let elapsed = std::thread::scope(|s| {
                for p in 0..producers {
                    let (log, barrier, records) = (log.clone(), &barrier, &self.records);
                    s.spawn(move || {
                        barrier.wait();
                        for j in 0..per {
                            let i = (p * per + j) % records.len();
                            pollster::block_on(log.commit(pairs(&records[i..i + 1])))
                                .expect("commit");
                        }
                    });
                }
                barrier.wait();
                // The scope joins every producer before it returns; `elapsed()` is read
                // after that.
                Instant::now()
            });
            let secs_taken = elapsed.elapsed().as_secs_f64();
            let m = log.metrics().snapshot();
            let commits = (per * producers) as f64;
            let rate = commits / secs_taken;
            if producers == 1 {
                single = rate;
            }
            row(&[
                producers.to_string(),
                format!("{rate:.0}"),
                format!("{:.3}", m.fsyncs as f64 / commits),
                format!("{:.2}", m.records_written as f64 / m.fsyncs.max(1) as f64),
                ratio(rate, single),
            ]);
            pollster::block_on(log.close()).expect("close");
        }
    }

    fn reads(&mut self, busy_dir: &Path) {
        section("Read throughput: Log::read(next, 1000), decode + CRC, batch-1000 frames");
        let segment = std::fs::read_dir(busy_dir)
            .expect("list")
            .map(|e| e.expect("entry").path())
            .find(|p| p.extension().is_some_and(|x| x == "log"))
            .expect("a segment");
        let bytes = std::fs::read(&segment).expect("read segment");
        let (bare_records, bare_time) = bare::decompress_frames(&bytes);
        let bare_rate = bare_records as f64 / secs(bare_time);

        let t = Instant::now();
        let log = open_log(busy_dir, LogConfig::default());
        let open_time = t.elapsed();
        let hwm = log.hwm();
        assert_eq!(hwm, bare_records, "every committed record is visible");
        let t = Instant::now();
        let (cold_records, cold_bytes) = read_range(&log, 0, hwm);
        let cold = t.elapsed();
        assert_eq!(cold_records, hwm);

        // Cached: the last frames, fewer than the frame cache holds; the first pass warms.
        let cached_frames = (log.config().frame_cache_frames as u64 / 2).min(hwm / 1000);
        let from = hwm - cached_frames * 1000;
        read_range(&log, from, hwm);
        let t = Instant::now();
        let mut cached_records = 0;
        for _ in 0..self.scale.cached_passes {
            cached_records += read_range(&log, from, hwm).0;
        }
        let cached = t.elapsed();

        header(&["", "records/s", "MB/s (key+payload)", "/ bare decompress"]);
        row(&[
            "bare zstd decompress (no CRC, no split)".into(),
            format!("{bare_rate:.0}"),
            "".into(),
            "1.00".into(),
        ]);
        let cold_rate = cold_records as f64 / secs(cold);
        row(&[
            "engine cold (fresh open, page cache warm)".into(),
            format!("{cold_rate:.0}"),
            format!("{:.0}", cold_bytes as f64 / secs(cold) / 1e6),
            ratio(cold_rate, bare_rate),
        ]);
        let cached_rate = cached_records as f64 / secs(cached);
        row(&[
            format!("engine cached ({cached_frames} frames in the frame cache)"),
            format!("{cached_rate:.0}"),
            "".into(),
            ratio(cached_rate, bare_rate),
        ]);
        println!(
            "  Log::open of {hwm} records in {} frames: {}",
            hwm / 1000,
            ms(open_time)
        );
        pollster::block_on(log.close()).expect("close");
    }

    #[cfg(feature = "peers")]
    fn peers(&mut self) {
        use peers::Peer;
        section("Peers: same records, one fsync per commit (records/s)");
        header(&["batch", "contender", "records/s", "engine / this"]);
        for (slot, batch) in [1usize, 1000].into_iter().enumerate() {
            let commits = self.scale.peer_commits[slot];
            let log = open_log(
                &self.dir(&format!("peers{batch}-log")),
                LogConfig::default(),
            );
            let mut contenders: Vec<Box<dyn Peer>> = vec![
                Box::new(peers::RaftEngine::open(
                    &self.dir(&format!("peers{batch}-raft")),
                )),
                Box::new(peers::Fjall::open(
                    &self.dir(&format!("peers{batch}-fjall")),
                )),
                Box::new(peers::Redb::open(&self.dir(&format!("peers{batch}-redb")))),
            ];
            let mut engine_time = Duration::ZERO;
            let mut peer_time = vec![Duration::ZERO; contenders.len()];
            let per_round = commits.div_ceil(self.scale.rounds);
            let mut c = 0;
            while c < commits {
                let end = (c + per_round).min(commits);
                let t = Instant::now();
                for k in c..end {
                    log.append_batch(pairs(self.slice(k * batch, batch)))
                        .expect("append");
                    pollster::block_on(log.sync()).expect("sync");
                }
                engine_time += t.elapsed();
                for (peer, time) in contenders.iter_mut().zip(&mut peer_time) {
                    let t = Instant::now();
                    for k in c..end {
                        peer.commit(self.slice(k * batch, batch));
                    }
                    *time += t.elapsed();
                }
                c = end;
            }
            let n = (commits * batch) as f64;
            let engine_rate = n / secs(engine_time);
            row(&[
                batch.to_string(),
                "engine".into(),
                format!("{engine_rate:.0}"),
                "1.00".into(),
            ]);
            for (peer, time) in contenders.iter().zip(&peer_time) {
                let rate = n / secs(*time);
                row(&[
                    batch.to_string(),
                    peer.name().into(),
                    format!("{rate:.0}"),
                    ratio(engine_rate, rate),
                ]);
            }
            pollster::block_on(log.close()).expect("close");
        }
        println!("  target: batch 1000 engine / raft-engine >= 1.50");
        self.peers_two_writers();
    }

    /// Batch 1000 from two writers at once, on the engine (one Log, two producers) and
    /// on raft-engine (one Engine, two raft groups): both overlap one writer's
    /// compression with the other's fsync, so this is the like-for-like comparison of
    /// the concurrent case.
    #[cfg(feature = "peers")]
    fn peers_two_writers(&mut self) {
        use peers::Peer;
        section("Peers at batch 1000, two writers at once (records/s)");
        header(&["contender", "records/s", "engine / this"]);
        let batch = 1000;
        let per = self.scale.peer_commits[1];
        let log = open_log(&self.dir("peers2w-log"), LogConfig::default());
        let raft = peers::RaftEngine::open(&self.dir("peers2w-raft"));
        let run = |commit: &(dyn Fn(usize, usize) + Sync)| {
            let t = Instant::now();
            std::thread::scope(|s| {
                for w in 0..2 {
                    s.spawn(move || {
                        for k in 0..per {
                            commit(w, k);
                        }
                    });
                }
            });
            (2 * per * batch) as f64 / secs(t.elapsed())
        };
        let engine_rate = run(&|w, k| {
            let chunk = self.slice((w * per + k) * batch, batch);
            log.append_batch(pairs(chunk)).expect("append");
            pollster::block_on(log.sync()).expect("sync");
        });
        let writers: Vec<std::sync::Mutex<peers::RaftEngine>> = (0..2)
            .map(|w| std::sync::Mutex::new(raft.writer(w as u64 + 1)))
            .collect();
        let raft_rate = run(&|w, k| {
            let chunk = self.slice((w * per + k) * batch, batch);
            writers[w]
                .lock()
                .expect("one thread per writer")
                .commit(chunk);
        });
        row(&[
            "engine, 2 producers".into(),
            format!("{engine_rate:.0}"),
            "1.00".into(),
        ]);
        row(&[
            "raft-engine 0.4, 2 writers".into(),
            format!("{raft_rate:.0}"),
            ratio(engine_rate, raft_rate),
        ]);
        pollster::block_on(log.close()).expect("close");
        println!("  target: batch 1000 engine / raft-engine >= 1.50");
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

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let index = ((samples.len() as f64 - 1.0) * p / 100.0).round() as usize;
    samples[index.min(samples.len() - 1)]
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64().max(1e-9)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

fn section(title: &str) {
    println!("\n## {title}");
}

const FIRST_COLUMN: usize = 44;
const COLUMN: usize = 16;

fn header(columns: &[&str]) {
    row(&columns.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    let rules: Vec<String> = (0..columns.len())
        .map(|i| "-".repeat(if i == 0 { FIRST_COLUMN } else { COLUMN }))
        .collect();
    row(&rules);
}

fn row(cells: &[String]) {
    let mut line = String::from("| ");
    for (i, cell) in cells.iter().enumerate() {
        let width = if i == 0 { FIRST_COLUMN } else { COLUMN };
        line.push_str(&format!("{cell:<width$} | "));
    }
    println!("{}", line.trim_end());
}
