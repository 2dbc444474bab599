//! `cafelog sweep`: many seeds in parallel, a summary of verdicts, faults and the
//! paths the runs reached, one replay line per failure, and a determinism check.

use crate::cli::deadline::{Finished, run_within};
use cafelog_sim::check::Verdict;
use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunOutcome, RunSpec, run};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

mod merge;
mod record;
mod report;
mod summary;

pub use merge::{MergeArgs, merge_command};
pub use record::SeedRecord;
use report::{JsonStream, write_json, write_junit};
pub use summary::print_summary;
use summary::without_flags;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// How many seeds, from 0 (default: 1000, or 200 for the `long` profile).
    #[arg(long, conflicts_with = "seeds")]
    pub count: Option<u64>,
    /// A seed range `A..B` (end exclusive).
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub seeds: Option<(u64, u64)>,
    /// Profile: quick, default or long.
    #[arg(long, default_value = "default", value_parser = Profile::by_name)]
    pub profile: Profile,
    /// Turn a fault kind off in every seed (cancel, corrupt_write, dir_fsync_eio,
    /// process_crash, latent_sector, loop_drop, settle_drop, wal_roll: the WAL's
    /// drawn segment size, or lazy_frontier: frontiers left to load on first touch;
    /// repeatable):
    /// the seeds as they ran before the swarm drew the kind. Failing seeds print and
    /// save with the same flags.
    #[arg(long, value_name = "KIND")]
    pub without: Vec<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only the I-th of N disjoint slices of the seeds (`0/4` .. `3/4`).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// Write one JSON object per seed to FILE: each line as its seed finishes (a sweep
    /// stopped part-way keeps every seed it finished), then the whole file again, in seed
    /// order, replaced at once at the end.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Stop starting new seeds after this many seconds of wall time.
    #[arg(long, value_name = "SECS")]
    pub time_budget: Option<f64>,
    /// Stop starting new seeds after the first failure.
    #[arg(long)]
    pub fail_fast: bool,
    /// Append failing seeds to the corpus file (default corpus/seeds.toml).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "corpus/seeds.toml")]
    pub save_failures: Option<PathBuf>,
    /// A corpus file (e.g. corpus/seeds.toml): a failing seed whose entry expects exactly
    /// that failure (verdict and checker) is reported as a known failure and does not
    /// fail the sweep; any other failure does, and so does a known one that now passes.
    /// Read before any seed runs; --json and --junit may not name it.
    #[arg(long, value_name = "FILE")]
    pub known: Option<PathBuf>,
    /// Seeds re-run to check that each replays to the same trace hash.
    #[arg(long, default_value_t = 8)]
    pub determinism_sample: usize,
    /// A seed still running after this many seconds of wall time is reported as hung
    /// (a failure) and the sweep goes on without it.
    #[arg(long, value_name = "SECS", default_value_t = crate::cli::deadline::SEED_TIMEOUT_SECS,
          value_parser = crate::cli::deadline::parse_secs)]
    pub seed_timeout: f64,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every seed passed (or failed exactly as a --known corpus entry expects), and the
     re-run sample replayed to identical trace hashes
  1  a seed failed (safety, liveness, simulator crash, or hung past --seed-timeout)
     and no --known entry expects it, or a --known failure now passes (update the
     corpus)
  2  usage or I/O error
  3  non-determinism: a re-run seed gave a different trace hash";

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let a: u64 = a
        .parse()
        .map_err(|e| format!("bad range start {a:?}: {e}"))?;
    let b: u64 = b.parse().map_err(|e| format!("bad range end {b:?}: {e}"))?;
    if b <= a {
        return Err(format!("empty range {a}..{b}"));
    }
    Ok((a, b))
}

/// Whether `a` and `b` name one file (both exist and resolve to the same path).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("expected I/N, got {s:?}"))?;
    let i: u64 = i
        .parse()
        .map_err(|e| format!("bad shard index {i:?}: {e}"))?;
    let n: u64 = n
        .parse()
        .map_err(|e| format!("bad shard count {n:?}: {e}"))?;
    if n == 0 || i >= n {
        return Err(format!("shard {i}/{n}: need 0 <= I < N"));
    }
    Ok((i, n))
}

pub fn run_command(args: &Args) -> ExitCode {
    match sweep(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn sweep(args: &Args) -> Result<ExitCode, String> {
    let profile = &args.profile;
    // Every kind checked once, before any seed runs.
    RunSpec::from_seed_without(0, profile, &args.without).map_err(|e| format!("--without: {e}"))?;
    let (start, end) = match (args.seeds, args.count) {
        (Some(range), _) => range,
        (None, Some(0)) => return Err("--count must be positive".into()),
        (None, Some(n)) => (0, n),
        (None, None) => (0, if profile.name == "long" { 200 } else { 1000 }),
    };
    let seeds: Vec<u64> = (start..end)
        .filter(|s| args.shard.is_none_or(|(i, n)| (s - start) % n == i))
        .collect();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let shard = args
        .shard
        .map_or(String::new(), |(i, n)| format!(", shard {i}/{n}"));
    // The corpus is read, and kept from being overwritten, before any seed runs.
    let known: Vec<cafelog_sim::corpus::Entry> = match &args.known {
        Some(path) => {
            for (flag, out) in [("--json", &args.json), ("--junit", &args.junit)] {
                if out.as_deref().is_some_and(|out| same_file(out, path)) {
                    return Err(format!(
                        "{flag} {} is the --known corpus: it would be overwritten",
                        path.display()
                    ));
                }
            }
            cafelog_sim::corpus::load(path)?
                .into_iter()
                .filter(|e| e.profile == profile.name && e.expect.as_str() != "pass")
                .collect()
        }
        None => Vec::new(),
    };
    let mut stream = match args.json.as_deref() {
        Some(path) => JsonStream::create(path)?,
        None => None,
    };
    eprintln!(
        "cafelog sweep: {} seeds ({start}..{end}{shard}) on profile {}{} with {jobs} jobs",
        seeds.len(),
        profile.name,
        without_flags(&args.without)
    );

    let started = Instant::now();
    let records = run_all(args, profile, &seeds, jobs, started, stream.as_mut());
    drop(stream);
    let elapsed = started.elapsed();

    if let Some(path) = &args.json {
        write_json(path, &records)?;
    }
    if let Some(path) = &args.junit {
        write_junit(path, profile, &records, elapsed)?;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    print_summary(&mut out, &records, elapsed).map_err(|e| e.to_string())?;
    if records.len() < seeds.len() {
        let _ = writeln!(
            out,
            "stopped early: {} of {} seeds run ({})",
            records.len(),
            seeds.len(),
            if args.fail_fast {
                "--fail-fast"
            } else {
                "--time-budget"
            }
        );
    }
    let is_known = |r: &SeedRecord| {
        known.iter().any(|e| {
            e.seed == r.seed
                && e.expect.as_str() == r.verdict
                && e.checker.map(|c| c.as_str().to_string()) == r.checker
        })
    };
    let fixed: Vec<u64> = known
        .iter()
        .filter(|e| records.iter().any(|r| r.seed == e.seed && r.passed()))
        .map(|e| e.seed)
        .collect();
    let (known_failures, failures): (Vec<&SeedRecord>, Vec<&SeedRecord>) = records
        .iter()
        .filter(|r| !r.passed())
        .partition(|r| is_known(r));
    if !known_failures.is_empty() {
        let seeds: Vec<String> = known_failures.iter().map(|r| r.seed.to_string()).collect();
        let _ = writeln!(
            out,
            "known failures (expected by {}; still open bugs): seeds {}",
            args.known
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string()),
            seeds.join(", ")
        );
    }
    if !fixed.is_empty() {
        let seeds: Vec<String> = fixed.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "FIXED: known failures now pass (set expect = \"pass\" in the corpus): seeds {}",
            seeds.join(", ")
        );
    }
    if let Some(path) = &args.save_failures {
        // A hung seed would hang the corpus test that replays it: it is named, not saved.
        let (hung, saved): (Vec<&&SeedRecord>, Vec<&&SeedRecord>) =
            failures.iter().partition(|f| f.is_hung());
        for f in &saved {
            let why = format!("sweep failure: {}", f.kind());
            cafelog_sim::corpus::append(path, f.seed, &f.profile, &args.without, &why)?;
        }
        if !saved.is_empty() {
            let _ = writeln!(
                out,
                "saved {} failing seeds to {}",
                saved.len(),
                path.display()
            );
        }
        if !hung.is_empty() {
            let seeds: Vec<String> = hung.iter().map(|f| f.seed.to_string()).collect();
            let _ = writeln!(
                out,
                "not saved, since the corpus test would hang on them: hung seeds {}",
                seeds.join(", ")
            );
        }
    }
    let deterministic = check_determinism(
        &mut out,
        profile,
        &args.without,
        &records,
        args.determinism_sample,
        Duration::from_secs_f64(args.seed_timeout),
    );
    let _ = out.flush();
    Ok(if !deterministic {
        ExitCode::from(3)
    } else if failures.is_empty() && fixed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn run_all(
    args: &Args,
    profile: &Profile,
    seeds: &[u64],
    jobs: usize,
    started: Instant,
    mut stream: Option<&mut JsonStream>,
) -> Vec<SeedRecord> {
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<SeedRecord>();
    let seeds = Arc::new(seeds.to_vec());
    let budget = args.time_budget.map(Duration::from_secs_f64);
    let limit = Duration::from_secs_f64(args.seed_timeout);
    let mut workers = Vec::new();
    for _ in 0..jobs.min(seeds.len().max(1)) {
        let (next, stop, tx, seeds, profile) = (
            Arc::clone(&next),
            Arc::clone(&stop),
            tx.clone(),
            Arc::clone(&seeds),
            profile.clone(),
        );
        let without = args.without.clone();
        workers.push(std::thread::spawn(move || {
            loop {
                if stop.load(Ordering::SeqCst) || budget.is_some_and(|b| started.elapsed() >= b) {
                    return;
                }
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(&seed) = seeds.get(index) else {
                    return;
                };
                let spec = RunSpec::from_seed_without(seed, &profile, &without)
                    .expect("--without checked before the sweep");
                let begun = Instant::now();
                // A fresh OS thread per seed (madsim's own test builder does the same),
                // waited for at most `limit`.
                let name = spec.profile.name;
                let mut record = match run_within(limit, move || run(&spec)) {
                    Finished::Ran(outcome) => SeedRecord::from_outcome(&outcome, begun.elapsed()),
                    // `run` reports every panic as a verdict; one that still escapes
                    // is this seed's simulator crash, never a seed silently dropped.
                    Finished::Panicked(panic) => {
                        SeedRecord::escaped_panic(seed, name, &*panic, begun.elapsed())
                    }
                    Finished::Hung => SeedRecord::hung(seed, name, limit),
                };
                record.flags = without_flags(&without);
                if tx.send(record).is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);
    let progress = std::io::stderr().is_terminal();
    let mut records = Vec::new();
    let mut failed = 0usize;
    for record in rx {
        if !record.passed() {
            failed += 1;
            if args.fail_fast {
                stop.store(true, Ordering::SeqCst);
            }
        }
        if let Some(stream) = stream.as_deref_mut() {
            stream.append(&record);
        }
        records.push(record);
        if progress {
            let done = records.len();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let eta = (seeds.len() - done) as f64 / rate.max(1e-9);
            eprint!(
                "\r  {done}/{} seeds  {failed} failed  {rate:.0} seeds/s  ETA {eta:.0}s   ",
                seeds.len()
            );
        }
    }
    if progress {
        eprintln!();
    }
    for w in workers {
        let _ = w.join();
    }
    records.sort_by_key(|r| r.seed);
    records
}

fn check_determinism(
    out: &mut impl Write,
    profile: &Profile,
    without: &[String],
    records: &[SeedRecord],
    sample: usize,
    limit: Duration,
) -> bool {
    if sample == 0 || records.is_empty() {
        return true;
    }
    // A hung seed would hang again: it is not re-run.
    let mut chosen: Vec<&SeedRecord> = records
        .iter()
        .filter(|r| !r.passed() && !r.is_hung())
        .take(sample / 2)
        .collect();
    let step = (records.len() / (sample - chosen.len()).max(1)).max(1);
    for r in records.iter().step_by(step) {
        if chosen.len() >= sample {
            break;
        }
        if !r.is_hung() && !chosen.iter().any(|c| c.seed == r.seed) {
            chosen.push(r);
        }
    }
    let mut ok = true;
    for r in &chosen {
        let spec = RunSpec::from_seed_without(r.seed, profile, without)
            .expect("--without checked before the sweep");
        let hash = match run_within(limit, move || run(&spec).trace_hash) {
            Finished::Ran(h) => format!("{h:016x}"),
            Finished::Panicked(_) => "panicked".into(),
            Finished::Hung => "hung".into(),
        };
        if hash != r.trace_hash {
            ok = false;
            let _ = writeln!(
                out,
                "NON-DETERMINISM: seed {} gave trace hash {} then {hash}; replay it twice with \
                 `cafelog replay --seed {} --profile {}{}` and diff the traces",
                r.seed, r.trace_hash, r.seed, r.profile, r.flags
            );
        }
    }
    if ok {
        let _ = writeln!(
            out,
            "determinism: {} re-run seeds replayed to identical trace hashes",
            chosen.len()
        );
    }
    ok
}
