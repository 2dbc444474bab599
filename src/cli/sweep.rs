//! `cafelog sweep`: many seeds in parallel, a summary of verdicts, faults and the
//! paths the runs reached, one replay line per failure, and a determinism check.

use cafelog_sim::check::Verdict;
use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunOutcome, RunSpec, run};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

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
    /// Turn a fault kind off in every seed (cancel, process_crash, latent_sector,
    /// loop_drop, settle_drop, or wal_roll: the WAL's drawn segment size; repeatable):
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
    /// Write one JSON object per seed to FILE.
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
    #[arg(long, value_name = "FILE")]
    pub known: Option<PathBuf>,
    /// Seeds re-run to check that each replays to the same trace hash.
    #[arg(long, default_value_t = 8)]
    pub determinism_sample: usize,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every seed passed (or failed exactly as a --known corpus entry expects), and the
     re-run sample replayed to identical trace hashes
  1  a seed failed (safety, liveness or simulator crash) and no --known entry expects
     it, or a --known failure now passes (update the corpus)
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

/// One seed's result, as written to `--json` and read back by `cafelog merge`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeedRecord {
    pub seed: u64,
    pub profile: String,
    /// The `--without` flags the seed ran with (empty when none); `with` in JSON
    /// written when profiles differed in the kinds they drew.
    #[serde(default, alias = "with", skip_serializing_if = "String::is_empty")]
    pub flags: String,
    /// pass, safety_failure, liveness_failure or simulator_crash.
    pub verdict: String,
    pub checker: Option<String>,
    pub message: String,
    pub faults: BTreeMap<String, u64>,
    pub stats: Stats,
    pub paths: BTreeMap<String, u64>,
    /// How many times each excuse row of the checkers fired in this seed (absent in
    /// JSON written before excuses were counted).
    #[serde(default)]
    pub excuses: BTreeMap<String, u64>,
    pub trace_hash: String,
    pub sim_ms: u64,
    pub wall_ms: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub acknowledged: u64,
    pub delivered: u64,
    pub duplicated: u64,
    pub lost: u64,
    pub recorded_loss: u64,
    pub crashes: u64,
}

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::SafetyFailure(_) => "safety_failure",
        Verdict::LivenessFailure(_) => "liveness_failure",
        Verdict::SimulatorCrash { .. } => "simulator_crash",
    }
}

impl SeedRecord {
    /// The record of a seed whose run panicked past `run`'s own guard.
    fn escaped_panic(
        seed: u64,
        profile: &str,
        panic: &(dyn std::any::Any + Send),
        wall: Duration,
    ) -> SeedRecord {
        let verdict = Verdict::from_panic(panic);
        SeedRecord {
            seed,
            profile: profile.to_string(),
            flags: String::new(),
            verdict: verdict_name(&verdict).to_string(),
            checker: None,
            message: verdict.to_string(),
            faults: BTreeMap::new(),
            stats: Stats::default(),
            paths: BTreeMap::new(),
            excuses: BTreeMap::new(),
            trace_hash: String::new(),
            sim_ms: 0,
            wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn from_outcome(o: &RunOutcome, wall: Duration) -> SeedRecord {
        let counts = o
            .report
            .as_ref()
            .map(|r| r.accounting.counts())
            .unwrap_or_default();
        SeedRecord {
            seed: o.seed,
            profile: o.profile.to_string(),
            flags: String::new(),
            verdict: verdict_name(&o.verdict).to_string(),
            checker: o.verdict.failure().map(|f| f.checker.to_string()),
            message: o.verdict.to_string(),
            faults: o.faults.clone(),
            stats: Stats {
                acknowledged: counts.acknowledged,
                delivered: counts.delivered,
                duplicated: counts.duplicated,
                lost: counts.lost,
                recorded_loss: counts.recorded_loss,
                crashes: o.paths.crashes,
            },
            paths: o
                .paths
                .entries()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            excuses: o
                .report
                .as_ref()
                .map(|r| {
                    r.excuses_used()
                        .into_iter()
                        .map(|(k, v)| (k.name().to_string(), v))
                        .collect()
                })
                .unwrap_or_default(),
            trace_hash: format!("{:016x}", o.trace_hash),
            sim_ms: o.sim_ms,
            wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn passed(&self) -> bool {
        self.verdict == "pass"
    }

    fn kind(&self) -> String {
        match &self.checker {
            Some(c) => format!("{} [{c}]", self.verdict),
            None => self.verdict.clone(),
        }
    }
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
    eprintln!(
        "cafelog sweep: {} seeds ({start}..{end}{shard}) on profile {}{} with {jobs} jobs",
        seeds.len(),
        profile.name,
        without_flags(&args.without)
    );

    let started = Instant::now();
    let records = run_all(args, profile, &seeds, jobs, started);
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
    let known: Vec<cafelog_sim::corpus::Entry> = match &args.known {
        Some(path) => cafelog_sim::corpus::load(path)?
            .into_iter()
            .filter(|e| e.profile == profile.name && e.expect.as_str() != "pass")
            .collect(),
        None => Vec::new(),
    };
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
        for f in &failures {
            let why = format!("sweep failure: {}", f.kind());
            cafelog_sim::corpus::append(path, f.seed, &f.profile, &args.without, &why)?;
        }
        if !failures.is_empty() {
            let _ = writeln!(
                out,
                "saved {} failing seeds to {}",
                failures.len(),
                path.display()
            );
        }
    }
    let deterministic = check_determinism(
        &mut out,
        profile,
        &args.without,
        &records,
        args.determinism_sample,
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
) -> Vec<SeedRecord> {
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<SeedRecord>();
    let seeds = Arc::new(seeds.to_vec());
    let budget = args.time_budget.map(Duration::from_secs_f64);
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
                // A fresh OS thread per seed: nothing of one run's thread state can leak
                // into the next (madsim's own test builder does the same).
                let name = spec.profile.name;
                let mut record = match std::thread::spawn(move || run(&spec)).join() {
                    Ok(outcome) => SeedRecord::from_outcome(&outcome, begun.elapsed()),
                    // `run` reports every panic as a verdict; one that still escapes
                    // is this seed's simulator crash, never a seed silently dropped.
                    Err(panic) => SeedRecord::escaped_panic(seed, name, &*panic, begun.elapsed()),
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

/// Prints the summary of a set of seed records (also used by `cafelog merge`).
pub fn print_summary(
    out: &mut impl Write,
    records: &[SeedRecord],
    elapsed: Duration,
) -> std::io::Result<()> {
    let passed = records.iter().filter(|r| r.passed()).count();
    let secs = elapsed.as_secs_f64();
    let sim_s: f64 = records.iter().map(|r| r.sim_ms as f64 / 1000.0).sum();
    writeln!(
        out,
        "\nseeds run: {}   passed: {passed}   failed: {}",
        records.len(),
        records.len() - passed
    )?;
    if secs > 0.0 {
        writeln!(
            out,
            "wall {secs:.1}s   {:.1} seeds/s   {:.0} simulated s per wall s",
            records.len() as f64 / secs,
            sim_s / secs
        )?;
    }
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.passed()) {
        *by_kind.entry(r.kind()).or_insert(0) += 1;
    }
    if !by_kind.is_empty() {
        writeln!(out, "failures by verdict and checker:")?;
        for (kind, n) in &by_kind {
            writeln!(out, "  {n:>6}  {kind}")?;
        }
    }
    let mut faults: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        for (k, v) in &r.faults {
            *faults.entry(k.as_str()).or_insert(0) += v;
        }
    }
    writeln!(out, "faults injected:")?;
    for (k, v) in &faults {
        writeln!(out, "  {v:>8}  {k}")?;
    }
    let mut paths: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for r in records {
        for (k, v) in &r.paths {
            let e = paths.entry(k.as_str()).or_insert((0, 0));
            e.0 += v;
            e.1 += u64::from(*v > 0);
        }
    }
    writeln!(out, "paths reached (total, seeds):")?;
    let mut unreached = Vec::new();
    for (k, (total, seeds)) in &paths {
        // A fault kind's own path, in a sweep that never drew the kind (`--without`).
        if *total == 0 && *k == "latent_sectors" && !faults.contains_key("latent_sector") {
            continue;
        }
        let flag = if *total == 0 {
            unreached.push(*k);
            "   <-- NOT REACHED"
        } else {
            ""
        };
        writeln!(out, "  {total:>8} {seeds:>6}  {k}{flag}")?;
    }
    if !unreached.is_empty() {
        writeln!(
            out,
            "warning: no seed reached: {} (a green sweep here proves nothing about them)",
            unreached.join(", ")
        )?;
    }
    // What the green verdicts rest on: every excuse row, with how often it fired.
    let excuses = excuse_totals(records);
    writeln!(out, "excuses used (times, seeds):")?;
    for (name, (times, seeds)) in &excuses {
        writeln!(out, "  {times:>8} {seeds:>6}  {name}")?;
    }
    let failures: Vec<&SeedRecord> = records.iter().filter(|r| !r.passed()).collect();
    if !failures.is_empty() {
        writeln!(out, "failing seeds (one line each reproduces it):")?;
        for f in failures {
            let message: String = f.message.chars().take(160).collect();
            writeln!(
                out,
                "  cafelog replay --seed {} --profile {}{}   # {message}",
                f.seed, f.profile, f.flags
            )?;
        }
    }
    Ok(())
}

/// Per excuse row (every row, fired or not): times it fired and seeds it fired in.
fn excuse_totals(records: &[SeedRecord]) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = cafelog_sim::check::excuse::ExcuseKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), (0, 0)))
        .collect();
    for r in records {
        for (k, v) in &r.excuses {
            let e = out.entry(k.clone()).or_insert((0, 0));
            e.0 += v;
            e.1 += u64::from(*v > 0);
        }
    }
    out
}

/// Re-runs an evenly spread sample (failures first) and compares trace hashes.
/// The flags that turn the kinds `without` off, as a replay command line takes them.
fn without_flags(without: &[String]) -> String {
    without.iter().map(|k| format!(" --without {k}")).collect()
}

fn check_determinism(
    out: &mut impl Write,
    profile: &Profile,
    without: &[String],
    records: &[SeedRecord],
    sample: usize,
) -> bool {
    if sample == 0 || records.is_empty() {
        return true;
    }
    let mut chosen: Vec<&SeedRecord> = records
        .iter()
        .filter(|r| !r.passed())
        .take(sample / 2)
        .collect();
    let step = (records.len() / (sample - chosen.len()).max(1)).max(1);
    for r in records.iter().step_by(step) {
        if chosen.len() >= sample {
            break;
        }
        if !chosen.iter().any(|c| c.seed == r.seed) {
            chosen.push(r);
        }
    }
    let mut ok = true;
    for r in &chosen {
        let spec = RunSpec::from_seed_without(r.seed, profile, without)
            .expect("--without checked before the sweep");
        let again = std::thread::spawn(move || run(&spec).trace_hash).join();
        let hash = again
            .map(|h| format!("{h:016x}"))
            .unwrap_or_else(|_| "panicked".into());
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

fn write_json(path: &PathBuf, records: &[SeedRecord]) -> Result<(), String> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn write_junit(
    path: &PathBuf,
    profile: &Profile,
    records: &[SeedRecord],
    elapsed: Duration,
) -> Result<(), String> {
    let failures = records.iter().filter(|r| !r.passed()).count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str(&format!(
        "<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n  <testsuite name=\"cafelog sweep ({})\" tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n",
        records.len(),
        elapsed.as_secs_f64(),
        profile.name,
        records.len(),
        elapsed.as_secs_f64()
    ));
    // The excuses the verdicts rest on, as suite properties CI systems display.
    xml.push_str("    <properties>\n");
    for (name, (times, seeds)) in excuse_totals(records) {
        xml.push_str(&format!(
            "      <property name=\"excuse.{name}\" value=\"{times} times in {seeds} seeds\"/>\n"
        ));
    }
    xml.push_str("    </properties>\n");
    for r in records {
        xml.push_str(&format!(
            "    <testcase classname=\"cafelog.sweep.{}\" name=\"seed {}\" time=\"{:.3}\"",
            profile.name,
            r.seed,
            r.wall_ms as f64 / 1000.0
        ));
        if r.passed() {
            xml.push_str("/>\n");
        } else {
            xml.push_str(&format!(
                ">\n      <failure type=\"{}\" message=\"{}\">cafelog replay --seed {} --profile {}{}\n{}</failure>\n    </testcase>\n",
                xml_escape(&r.kind()),
                xml_escape(&r.message.chars().take(300).collect::<String>()),
                r.seed,
                r.profile,
                r.flags,
                xml_escape(&r.message)
            ));
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    std::fs::write(path, xml).map_err(|e| format!("{}: {e}", path.display()))
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// JSON files written by `cafelog sweep --json` (e.g. one per shard).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also write the merged records to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `cafelog merge`: one summary from the JSON files of several sweeps (shards).
pub fn merge_command(args: &MergeArgs) -> ExitCode {
    let mut records = Vec::new();
    for path in &args.files {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cafelog: error: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        };
        for (line_no, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            match serde_json::from_str::<SeedRecord>(line) {
                Ok(r) => records.push(r),
                Err(e) => {
                    eprintln!("cafelog: error: {}:{}: {e}", path.display(), line_no + 1);
                    return ExitCode::from(2);
                }
            }
        }
    }
    records.sort_by_key(|r| (r.profile.clone(), r.seed));
    records.dedup_by_key(|r| (r.profile.clone(), r.seed));
    if let Some(path) = &args.json
        && let Err(e) = write_json(path, &records)
    {
        eprintln!("cafelog: error: {e}");
        return ExitCode::from(2);
    }
    let wall = Duration::from_millis(records.iter().map(|r| r.wall_ms).sum());
    let mut out = std::io::stdout().lock();
    if print_summary(&mut out, &records, wall).is_err() {
        return ExitCode::from(2);
    }
    if records.iter().all(SeedRecord::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_that_escapes_a_run_is_a_failing_seed_not_a_missing_one() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("attempt to add with overflow");
        let record = SeedRecord::escaped_panic(7, "quick", &*payload, Duration::from_millis(3));
        assert!(!record.passed());
        assert_eq!(record.verdict, "simulator_crash");
        assert_eq!((record.seed, record.profile.as_str()), (7, "quick"));
        assert!(
            record.message.contains("attempt to add with overflow"),
            "{}",
            record.message
        );
    }
}
