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

use std::io::Write;
use std::process::Command;
use std::time::Instant;

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
    let begun = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cafelog"))
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
        .output()
        .expect("run cafelog sweep");
    let lines = std::fs::read_to_string(&json).unwrap_or_default();
    let records: Vec<SeedLine> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("a sweep JSON line"))
        .collect();
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
    assert!(
        out.status.success(),
        "cafelog sweep exited with {} and no failing seed in its JSON:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
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
