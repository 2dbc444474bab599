//! The seed sweep as a test, for mutation testing (`ci/mutants`): a bounded `quick`
//! sweep of the real `cafelog` binary that stops at its first failure.
//!
//! `cargo test` does not run it (`test = false` in `Cargo.toml`); `ci/mutants` names it
//! with `--test harness`, beside the engine's own tests, so that a mutant of the engine
//! is caught when the harness would catch the same defect in a user's change. It prints
//! one line that `ci/mutants` reads into its report:
//!
//! `mutant sweep: caught after N seeds (seed S: VERDICT CHECKER)`, where N counts the
//! seeds of the range up to and including the first failing one (every lower seed ran:
//! the sweep hands seeds out in order and stops starting new ones at a failure), or
//! `mutant sweep: passed N seeds in T s`, or `mutant sweep: inconclusive: ran N of M
//! seeds` when the budget ran out first (the test passes, and the report counts the
//! mutant as inconclusive, not missed). The line goes straight to stderr, past the test
//! harness's capture, so cargo's log has it whether the test passed or failed.
//!
//! `CAFELOG_MUTANT_SEEDS` (`A..B`, default `0..500`), `CAFELOG_MUTANT_BUDGET` (seconds
//! of wall time, default 60) and `CAFELOG_MUTANT_PROFILE` (default `quick`) bound it.
//!
//! A seed that never ends (a mutant that loops in the engine) would hang the sweep and
//! the test until `ci/mutants`'s timeout, which judges nothing. The sweep is therefore
//! killed [`HANG_GRACE_S`] after its budget, and the lowest seed with no verdict is
//! reported as caught, with the verdict `hang`.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

/// Seconds past the budget after which the sweep counts as hung: the budget only stops
/// new seeds, and a quick seed takes milliseconds.
const HANG_GRACE_S: u64 = 15;

#[derive(serde::Deserialize)]
struct SeedLine {
    seed: u64,
    verdict: String,
    checker: Option<String>,
}

/// One line for `ci/mutants`'s report, uncaptured.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "mutant sweep: {line}");
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[test]
fn a_bounded_sweep_passes() {
    let seeds = env_or("CAFELOG_MUTANT_SEEDS", "0..500");
    let budget = env_or("CAFELOG_MUTANT_BUDGET", "60");
    let profile = env_or("CAFELOG_MUTANT_PROFILE", "quick");
    let (first, end) = seeds
        .split_once("..")
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .filter(|(a, b)| a < b)
        .unwrap_or_else(|| panic!("CAFELOG_MUTANT_SEEDS={seeds}: expected A..B with A < B"));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("seeds.json");
    let stderr_path = dir.path().join("stderr.txt");
    let begun = Instant::now();
    let budget_s: u64 = budget
        .parse()
        .unwrap_or_else(|_| panic!("CAFELOG_MUTANT_BUDGET={budget}: expected seconds"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cafelog"))
        .args(["sweep", "--profile", &profile, "--seeds", &seeds])
        .args([
            "--time-budget",
            &budget,
            "--fail-fast",
            "--determinism-sample",
            "0",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        // A file, not a pipe: a pipe nobody reads until the end could fill and stall
        // the sweep into a false hang.
        .stderr(std::fs::File::create(&stderr_path).expect("create the sweep's stderr file"))
        .spawn()
        .expect("run cafelog sweep");
    let deadline = begun + Duration::from_secs(budget_s + HANG_GRACE_S);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for cafelog sweep") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let lines = std::fs::read_to_string(&json).unwrap_or_default();
    // A killed sweep may leave its last line half written.
    let records: Vec<SeedLine> = lines
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let Some(status) = status else {
        let done: std::collections::BTreeSet<u64> = records.iter().map(|r| r.seed).collect();
        let hung = (first..end).find(|s| !done.contains(s)).unwrap_or(first);
        report(&format!(
            "caught after {} seeds (seed {hung}: hang -)",
            hung - first + 1
        ));
        panic!(
            "the sweep ran {} s past its budget: seed {hung} never ended \
             (cafelog replay --seed {hung} --profile {profile})",
            HANG_GRACE_S
        );
    };
    let failed = records
        .iter()
        .filter(|r| r.verdict != "pass")
        .min_by_key(|r| r.seed);
    if let Some(f) = failed {
        report(&format!(
            "caught after {} seeds (seed {}: {} {})",
            f.seed - first + 1,
            f.seed,
            f.verdict,
            f.checker.as_deref().unwrap_or("-")
        ));
        panic!(
            "the sweep failed: cafelog replay --seed {} --profile {profile}",
            f.seed
        );
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(
        status.success(),
        "cafelog sweep exited with {status} and no failing seed in its JSON:\n{stderr}"
    );
    let wanted = end - first;
    if (records.len() as u64) < wanted {
        report(&format!(
            "inconclusive: ran {} of {wanted} seeds in the {budget} s budget",
            records.len()
        ));
        return;
    }
    report(&format!(
        "passed {} seeds in {:.1} s",
        records.len(),
        begun.elapsed().as_secs_f64()
    ));
}
