//! `cafelog mutants DIR... [--json FILE]`: the report of a mutation run (`ci/mutants`),
//! read from cargo-mutants' `DIR/outcomes.json` and the log of each mutant; several
//! directories (the shards of one run) make one report.
//!
//! A mutant is caught when a test failed on it, and the report says by what: the seed
//! sweep (`tests/harness` prints how many seeds it needed), the engine's own tests, or
//! both. The score is caught / (caught + missed). Left out of it, each listed on its
//! own: timeouts no test judged (cargo runs the sweep's target before the `log` and
//! `store` tests, so a timeout after the sweep failed is caught by it, and one after it
//! passed is caught by the target that hung, as a hang fails CI; one where the build
//! timed out or the sweep never ran is not judged), inconclusive sweeps (the budget ran out before the last seed, so "passed" would
//! overstate what was tried), failures of the run itself, unviable mutants (they do not
//! build). Mutants listed as equivalent in `.cargo/mutants.toml` are never run;
//! `ci/mutants` writes their names to `equivalent.txt` beside `mutants.out`, and a
//! mutant an earlier part tested that the list names counts only as equivalent. A
//! mutant tested in two parts counts once, as the later part found it.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `mutants.out` directories of a cargo-mutants run (one per shard).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit 3 when a mutant was missed: the report as a CI gate. Timeouts, inconclusive
    /// sweeps and failures of the run are reported but do not fail it; only a mutant
    /// every test and the whole sweep passed on does.
    #[arg(long)]
    pub gate: bool,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  the report was printed (whatever the score, without --gate)
  1  the directory holds no readable outcomes.json
  2  usage error
  3  with --gate: the report was printed and names at least one missed mutant";

/// What `--gate` exits with when a mutant was missed.
pub const EXIT_MISSED: u8 = 3;

/// What became of one mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    Caught,
    Missed,
    /// A test or the build ran past its time limit.
    Timeout,
    /// Every test passed, but the sweep's budget ended it before its last seed.
    Inconclusive,
    Unviable,
    /// cargo-mutants could not judge it (a test binary killed by a signal, say).
    Failure,
}

/// One mutant's line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct MutantReport {
    pub name: String,
    pub file: String,
    pub line: u64,
    pub fate: Fate,
    /// The test targets that failed (`--test log`, `--lib`, ...), from cargo's log.
    pub failed_targets: Vec<String>,
    /// For a timeout: whether the build, not a test, ran out of time.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub build_timed_out: bool,
    /// Seeds the sweep needed to its first failure, when the sweep caught it.
    pub seeds_to_failure: Option<u64>,
    pub build_s: f64,
    pub test_s: f64,
    /// The mutation as a diff, for missed mutants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The sweep's test target (`tests/harness`; runs of cafelog before its rename called
/// it `mutants`).
fn is_sweep(target: &str) -> bool {
    target.ends_with("--test harness") || target.ends_with("--test mutants")
}

impl MutantReport {
    pub fn by_sweep(&self) -> bool {
        self.failed_targets.iter().any(|t| is_sweep(t))
    }
    pub fn by_tests(&self) -> bool {
        self.failed_targets.iter().any(|t| !is_sweep(t))
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    pub tested: u64,
    pub caught: u64,
    pub caught_by_sweep: u64,
    /// Caught by the sweep while every engine test passed: what only the harness saw.
    pub caught_by_sweep_only: u64,
    pub caught_by_tests_only: u64,
    /// Caught, but cargo's log names no failed target.
    pub caught_unattributed: u64,
    pub missed: u64,
    pub timeout: u64,
    pub inconclusive: u64,
    pub unviable: u64,
    pub failure: u64,
    pub equivalent: u64,
}

impl Tally {
    fn add(&mut self, m: &MutantReport) {
        self.tested += 1;
        match m.fate {
            Fate::Caught => {
                self.caught += 1;
                if m.by_sweep() {
                    self.caught_by_sweep += 1;
                    if !m.by_tests() {
                        self.caught_by_sweep_only += 1;
                    }
                } else if m.by_tests() {
                    self.caught_by_tests_only += 1;
                } else {
                    self.caught_unattributed += 1;
                }
            }
            Fate::Missed => self.missed += 1,
            Fate::Timeout => self.timeout += 1,
            Fate::Inconclusive => self.inconclusive += 1,
            Fate::Unviable => self.unviable += 1,
            Fate::Failure => self.failure += 1,
        }
    }

    /// Caught over caught and missed: the mutants whose tests all ran to a verdict.
    pub fn score(&self) -> Option<f64> {
        let judged = self.caught + self.missed;
        (judged > 0).then(|| self.caught as f64 / judged as f64)
    }
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub total: Tally,
    pub by_file: BTreeMap<String, Tally>,
    pub equivalent: Vec<String>,
    pub mutants: Vec<MutantReport>,
}

pub fn run_command(args: &Args) -> ExitCode {
    let report = match read(&args.dirs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(1);
        }
    };
    print!("{}", render(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("the report serialises");
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("cafelog: error: writing {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    if args.gate
        && let Some(why) = gate_failure(&report)
    {
        eprintln!("cafelog: gate: {why}");
        return ExitCode::from(EXIT_MISSED);
    }
    ExitCode::SUCCESS
}

/// Why the report fails `--gate`, if it does: a missed mutant, which a test or checker
/// must kill or `.cargo/mutants.toml` must list as equivalent, with its reason.
pub fn gate_failure(report: &Report) -> Option<String> {
    let missed: Vec<&str> = report
        .mutants
        .iter()
        .filter(|m| m.fate == Fate::Missed)
        .map(|m| m.name.as_str())
        .collect();
    if missed.is_empty() {
        return None;
    }
    Some(format!(
        "{} missed mutant(s): {}. Kill each with a test, a checker, a workload or a \
         fault that fails on it, or list it in .cargo/mutants.toml as equivalent with \
         the reason no behaviour can differ",
        missed.len(),
        missed.join("; ")
    ))
}

/// Reads `mutants.out` directories (the shards of one run) into one report.
pub fn read(dirs: &[PathBuf]) -> Result<Report, String> {
    // By name: a mutant tested again in a later part counts as the later part found it.
    let mut mutants: BTreeMap<String, MutantReport> = BTreeMap::new();
    let mut equivalent = Vec::new();
    for dir in dirs {
        for m in read_dir(dir)? {
            mutants.insert(m.name.clone(), m);
        }
        // Each shard lists the same equivalent mutants of the whole selection, beside
        // its mutants.out (ci/mutants) or inside it.
        for path in [dir.join("equivalent.txt"), dir.join("../equivalent.txt")] {
            if let Ok(text) = std::fs::read_to_string(path) {
                equivalent.extend(text.lines().map(str::to_owned));
            }
        }
    }
    equivalent.sort();
    equivalent.dedup();
    Ok(summarise(mutants.into_values().collect(), equivalent))
}

fn read_dir(dir: &Path) -> Result<Vec<MutantReport>, String> {
    let path = dir.join("outcomes.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))?;
    let outcomes = json["outcomes"]
        .as_array()
        .ok_or_else(|| format!("{}: no `outcomes` array", path.display()))?;
    let mut mutants = Vec::new();
    for outcome in outcomes {
        let Some(mutant) = outcome["scenario"].get("Mutant") else {
            continue; // the baseline
        };
        mutants.push(mutant_report(dir, outcome, mutant)?);
    }
    Ok(mutants)
}

fn mutant_report(dir: &Path, outcome: &Value, mutant: &Value) -> Result<MutantReport, String> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let log = outcome["log_path"]
        .as_str()
        .and_then(|p| std::fs::read_to_string(dir.join(p)).ok())
        .unwrap_or_default();
    let fate = match outcome["summary"].as_str() {
        Some("CaughtMutant") => Fate::Caught,
        Some("MissedMutant") if log.contains("mutant sweep: inconclusive") => Fate::Inconclusive,
        Some("MissedMutant") => Fate::Missed,
        // The sweep runs before the log tests: when it failed before something hung,
        // the harness caught the mutant; when it passed and a later target hung, that
        // target caught it (a hang fails CI as surely as an assertion).
        Some("Timeout") if log.contains("mutant sweep: caught after") => Fate::Caught,
        Some("Timeout") if log.contains("mutant sweep: passed") && hung_target(&log).is_some() => {
            Fate::Caught
        }
        Some("Timeout") => Fate::Timeout,
        Some("Unviable") => Fate::Unviable,
        Some("Failure") => Fate::Failure,
        other => return Err(format!("mutant {}: outcome {other:?}", mutant["name"])),
    };
    let phase_s = |name: &str| {
        outcome["phase_results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["phase"] == name)
            .filter_map(|p| p["duration"].as_f64())
            .sum::<f64>()
    };
    let build_timed_out = outcome["phase_results"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| p["phase"] == "Build" && p["process_status"] == "Timeout");
    let diff = (fate == Fate::Missed)
        .then(|| outcome["diff_path"].as_str())
        .flatten()
        .and_then(|p| std::fs::read_to_string(dir.join(p)).ok());
    let (mut failed_targets, seeds_to_failure) = read_log(&log);
    if outcome["summary"] == "Timeout"
        && let Some(target) = hung_target(&log)
    {
        failed_targets.push(format!("hung: {target}"));
    }
    Ok(MutantReport {
        name: text(&mutant["name"]),
        file: text(&mutant["file"]),
        line: mutant["span"]["start"]["line"].as_u64().unwrap_or(0),
        fate,
        failed_targets,
        build_timed_out: fate == Fate::Timeout && build_timed_out,
        seeds_to_failure,
        build_s: phase_s("Build"),
        test_s: phase_s("Test"),
        diff,
    })
}

/// The test binary that was running when a timeout killed the tests: the last one cargo
/// started (`Running `.../deps/log-0123abcd``) with no `test result` line after it.
pub fn hung_target(log: &str) -> Option<String> {
    let start = log.rfind("     Running `")?;
    let rest = &log[start..];
    if rest.contains("test result:") {
        return None;
    }
    let binary = rest.split('`').nth(1)?.rsplit('/').next()?;
    let name = binary.rsplit_once('-').map_or(binary, |(name, _)| name);
    Some(format!("--test {name}"))
}

/// The failed test targets and the sweep's seeds to failure, from a mutant's log:
/// cargo prints ``to rerun pass `-p cafelog --test log` `` for each failed target, and
/// `tests/harness` prints `mutant sweep: caught after N seeds`.
pub fn read_log(log: &str) -> (Vec<String>, Option<u64>) {
    let mut targets: Vec<String> = log
        .lines()
        .filter_map(|l| l.split("to rerun pass `").nth(1)?.split('`').next())
        .map(str::to_owned)
        .collect();
    targets.sort();
    targets.dedup();
    let seeds = log.lines().find_map(|l| {
        l.split("mutant sweep: caught after ")
            .nth(1)?
            .split(' ')
            .next()?
            .parse()
            .ok()
    });
    (targets, seeds)
}

fn summarise(mut mutants: Vec<MutantReport>, equivalent: Vec<String>) -> Report {
    // A mutant an earlier part tested and a later one lists as equivalent is equivalent.
    mutants.retain(|m| !equivalent.contains(&m.name));
    let mut total = Tally::default();
    let mut by_file: BTreeMap<String, Tally> = BTreeMap::new();
    for m in &mutants {
        total.add(m);
        by_file.entry(m.file.clone()).or_default().add(m);
    }
    for name in &equivalent {
        total.equivalent += 1;
        let file = name.split(':').next().unwrap_or_default().to_owned();
        by_file.entry(file).or_default().equivalent += 1;
    }
    Report {
        total,
        by_file,
        equivalent,
        mutants,
    }
}

fn percent(score: Option<f64>) -> String {
    score.map_or_else(|| "-".to_owned(), |s| format!("{:.1}%", 100.0 * s))
}

/// Quantile of a sorted slice (nearest rank).
fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied()
}

pub fn render(r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let t = &r.total;
    let _ = writeln!(
        s,
        "mutants tested: {}   caught: {} (by the sweep {}, of them by the sweep alone {}; \
         by the engine tests alone {}; unattributed {})   missed: {}\n\
         not scored: timeout {}, inconclusive {}, unviable {}, failure {}   \
         equivalent (not run): {}",
        t.tested,
        t.caught,
        t.caught_by_sweep,
        t.caught_by_sweep_only,
        t.caught_by_tests_only,
        t.caught_unattributed,
        t.missed,
        t.timeout,
        t.inconclusive,
        t.unviable,
        t.failure,
        t.equivalent
    );
    let _ = writeln!(
        s,
        "score: {} (caught / (caught + missed))",
        percent(t.score())
    );
    let _ = writeln!(
        s,
        "\n{:<34} {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>8} {:>6} {:>7}",
        "file",
        "tested",
        "caught",
        "sweep",
        "missed",
        "timeout",
        "incon",
        "unviable",
        "equiv",
        "score"
    );
    for (file, f) in &r.by_file {
        let _ = writeln!(
            s,
            "{:<34} {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>8} {:>6} {:>7}",
            file.trim_start_matches("engine/src/"),
            f.tested,
            f.caught,
            f.caught_by_sweep,
            f.missed,
            f.timeout,
            f.inconclusive,
            f.unviable,
            f.equivalent,
            percent(f.score())
        );
    }
    let viable: Vec<&MutantReport> = r
        .mutants
        .iter()
        .filter(|m| m.fate != Fate::Unviable)
        .collect();
    let mut build: Vec<f64> = viable.iter().map(|m| m.build_s).collect();
    let mut test: Vec<f64> = viable.iter().map(|m| m.test_s).collect();
    build.sort_by(f64::total_cmp);
    test.sort_by(f64::total_cmp);
    if let (Some(b50), Some(t50)) = (quantile(&build, 0.5), quantile(&test, 0.5)) {
        let _ = writeln!(
            s,
            "\nper viable mutant: rebuild p50 {b50:.1}s p90 {:.1}s; tests p50 {t50:.1}s p90 {:.1}s",
            quantile(&build, 0.9).unwrap_or(b50),
            quantile(&test, 0.9).unwrap_or(t50)
        );
    }
    let mut seeds: Vec<u64> = r
        .mutants
        .iter()
        .filter_map(|m| m.seeds_to_failure)
        .collect();
    seeds.sort_unstable();
    if let Some(p50) = quantile(&seeds, 0.5) {
        let _ = writeln!(
            s,
            "seeds the sweep needed to its first failure ({} mutants): p50 {p50}, p90 {}, max {}",
            seeds.len(),
            quantile(&seeds, 0.9).unwrap_or(p50),
            seeds.last().copied().unwrap_or(p50)
        );
    }
    let missed: Vec<&MutantReport> = r
        .mutants
        .iter()
        .filter(|m| m.fate == Fate::Missed)
        .collect();
    if !missed.is_empty() {
        let _ = writeln!(s, "\nmissed:");
        for m in missed {
            let _ = writeln!(s, "  {}", m.name);
            for line in m.diff.as_deref().unwrap_or_default().lines() {
                if (line.starts_with('+') || line.starts_with('-'))
                    && !line.starts_with("+++")
                    && !line.starts_with("---")
                {
                    let _ = writeln!(s, "      {line}");
                }
            }
        }
    }
    let timeouts: Vec<&MutantReport> = r
        .mutants
        .iter()
        .filter(|m| m.fate == Fate::Timeout)
        .collect();
    if !timeouts.is_empty() {
        let _ = writeln!(s, "\ntimed out (not scored):");
        for m in timeouts {
            let what = if m.build_timed_out {
                " (the build)"
            } else {
                ""
            };
            let _ = writeln!(s, "  {}{what}", m.name);
        }
    }
    for (fate, title) in [
        (
            Fate::Inconclusive,
            "inconclusive: the sweep's budget ended before its last seed",
        ),
        (
            Fate::Failure,
            "not judged (cargo-mutants reported a failure)",
        ),
    ] {
        let names: Vec<&str> = r
            .mutants
            .iter()
            .filter(|m| m.fate == fate)
            .map(|m| m.name.as_str())
            .collect();
        if !names.is_empty() {
            let _ = writeln!(s, "\n{title}:");
            for name in names {
                let _ = writeln!(s, "  {name}");
            }
        }
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_log_names_failed_targets_and_the_seeds_to_failure() {
        let log = "test a ... FAILED\n\
            error: test failed, to rerun pass `-p cafelog --test store`\n\
            mutant sweep: caught after 37 seeds (seed 36: fail no_lost_ack)\n\
            error: test failed, to rerun pass `-p cafelog --test harness`\n\
            error: 2 targets failed:\n    `-p cafelog --test store`\n";
        let (targets, seeds) = read_log(log);
        assert_eq!(
            targets,
            ["-p cafelog --test harness", "-p cafelog --test store"]
        );
        assert_eq!(seeds, Some(37));
        assert_eq!(
            read_log("mutant sweep: passed 500 seeds in 3.1 s\n"),
            (vec![], None)
        );
    }

    #[test]
    fn the_score_leaves_out_what_no_test_judged_and_equivalents_count_once() {
        let m = |fate, targets: &[&str]| MutantReport {
            name: "engine/src/x.rs:1:1: replace f with ()".into(),
            file: "engine/src/x.rs".into(),
            line: 1,
            fate,
            failed_targets: targets.iter().map(|t| t.to_string()).collect(),
            build_timed_out: false,
            seeds_to_failure: None,
            build_s: 1.0,
            test_s: 2.0,
            diff: None,
        };
        let r = summarise(
            vec![
                m(Fate::Caught, &["-p cafelog --test harness"]),
                m(Fate::Caught, &["-p cafelog-engine --lib"]),
                m(Fate::Missed, &[]),
                m(Fate::Timeout, &[]),
                m(Fate::Inconclusive, &[]),
                m(Fate::Caught, &[]),
                m(Fate::Unviable, &[]),
                MutantReport {
                    name: "engine/src/y.rs:2:2: replace g with ()".into(),
                    ..m(Fate::Missed, &[])
                },
            ],
            vec!["engine/src/y.rs:2:2: replace g with ()".into()],
        );
        let t = &r.total;
        assert_eq!((t.tested, t.caught, t.caught_by_sweep), (7, 3, 1));
        assert_eq!((t.caught_by_tests_only, t.caught_by_sweep_only), (1, 1));
        assert_eq!(t.caught_unattributed, 1);
        assert_eq!((t.missed, t.timeout, t.inconclusive), (1, 1, 1));
        assert_eq!((t.unviable, t.equivalent), (1, 1));
        // Caught 3 of the 4 judged: timeouts and inconclusive sweeps are not scored.
        assert_eq!(t.score(), Some(0.75));
        assert_eq!(r.by_file["engine/src/y.rs"].equivalent, 1);
        assert!(render(&r).contains("score: 75.0%"));
    }

    /// A mutants.out directory with one outcome per (name, summary, log text).
    fn fixture(dir: &Path, outcomes: &[(&str, &str, &str)]) {
        std::fs::create_dir_all(dir.join("log")).unwrap();
        let mut list = Vec::new();
        for (i, (name, summary, log)) in outcomes.iter().enumerate() {
            let log_path = format!("log/m{i}.log");
            std::fs::write(dir.join(&log_path), log).unwrap();
            list.push(serde_json::json!({
                "scenario": {"Mutant": {"name": name, "file": "engine/src/x.rs",
                    "span": {"start": {"line": 3}}}},
                "summary": summary,
                "log_path": log_path,
                "diff_path": null,
                "phase_results": [{"phase": "Build", "duration": 2.0,
                    "process_status": if *summary == "Timeout" { "Timeout" } else { "Success" }}],
            }));
        }
        list.insert(
            0,
            serde_json::json!({"scenario": "Baseline", "summary": "Success"}),
        );
        let json = serde_json::json!({"outcomes": list});
        std::fs::write(dir.join("outcomes.json"), json.to_string()).unwrap();
    }

    #[test]
    fn parts_merge_by_name_and_a_budget_cut_sweep_is_inconclusive() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (
            root.path().join("a/mutants.out"),
            root.path().join("b/mutants.out"),
        );
        let hung = "     Running `/t/deps/harness-0a`\nmutant sweep: passed 500 seeds in 3 s\n\
            test result: ok. 1 passed\n     Running `/t/deps/log-1b`\ntest a ... \n";
        let caught = "error: test failed, to rerun pass `-p cafelog --test harness`\n\
            mutant sweep: caught after 9 seeds (seed 8: fail no_lost_ack)\n";
        fixture(
            &a,
            &[
                (
                    "x.rs:3:1: m1",
                    "MissedMutant",
                    "mutant sweep: passed 500 seeds in 3 s\n",
                ),
                (
                    "x.rs:3:2: m2",
                    "MissedMutant",
                    "mutant sweep: inconclusive: ran 90 of 500\n",
                ),
                ("x.rs:3:3: eq", "MissedMutant", ""),
            ],
        );
        // The later part tested m1 again and caught it; eq is now listed as equivalent.
        fixture(
            &b,
            &[
                ("x.rs:3:1: m1", "CaughtMutant", caught),
                ("x.rs:3:4: m4", "Timeout", ""),
                ("x.rs:3:5: m5", "Timeout", caught),
                ("x.rs:3:6: m6", "Timeout", hung),
            ],
        );
        std::fs::write(root.path().join("b/equivalent.txt"), "x.rs:3:3: eq\n").unwrap();
        let r = read(&[a, b]).unwrap();
        let fates: Vec<(&str, Fate)> = r
            .mutants
            .iter()
            .map(|m| (m.name.as_str(), m.fate))
            .collect();
        assert_eq!(
            fates,
            [
                ("x.rs:3:1: m1", Fate::Caught),
                ("x.rs:3:2: m2", Fate::Inconclusive),
                ("x.rs:3:4: m4", Fate::Timeout),
                // Timed out after the sweep failed: the harness caught it.
                ("x.rs:3:5: m5", Fate::Caught),
                // The sweep passed, then the log tests hung: they caught it.
                ("x.rs:3:6: m6", Fate::Caught),
            ]
        );
        assert_eq!(r.mutants[0].seeds_to_failure, Some(9));
        assert!(r.mutants[2].build_timed_out);
        assert_eq!(r.mutants[4].failed_targets, ["hung: --test log"]);
        assert_eq!(r.total.caught_by_tests_only, 1);
        assert_eq!((r.total.caught_by_sweep_only, r.total.equivalent), (2, 1));
        assert_eq!(r.total.score(), Some(1.0));
        assert_eq!(
            gate_failure(&r),
            None,
            "a timeout or an inconclusive sweep passes"
        );
        let first = read(&[root.path().join("a/mutants.out")]).unwrap();
        let why = gate_failure(&first).expect("a missed mutant fails the gate");
        assert!(
            why.starts_with("2 missed mutant(s): x.rs:3:1: m1; x.rs:3:3: eq"),
            "{why}"
        );
        let missing = read(&[root.path().join("nowhere")]).unwrap_err();
        assert!(missing.contains("outcomes.json"), "{missing}");
    }
}
