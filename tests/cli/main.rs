//! The `cafelog` binary's write and simulation commands, run as a user would.
//!
//! - `append`: JSON lines through the real write path, then `dump` shows them.
//! - `replay` / `sweep`: exit codes, the trace hash line, JSON and JUnit output.

use std::io::Write;
use std::process::{Command, Stdio};

fn cafelog() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cafelog"))
}

fn append(dir: &std::path::Path, input: &str, extra: &[&str]) -> std::process::Output {
    let mut child = cafelog()
        .arg("append")
        .arg(dir)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn append_commits_prints_ranges_and_dump_shows_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("topics/t/p00000");
    let out = append(
        &part,
        "{\"key\":\"a\",\"payload\":\"hello\"}\n{\"key_b64\":\"AAE=\",\"payload_b64\":\"/w==\"}\n{\"payload\":\"3\"}\n",
        &["--commit-every", "2", "--codec", "none"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "committed 0..2\ncommitted 2..3\n"
    );
    // Closed cleanly: the HWM is persisted, so every record is visible.
    assert_eq!(std::fs::read(part.join("hwm")).unwrap(), 3u64.to_be_bytes());
    let dump = cafelog()
        .arg("dump")
        .arg(&part)
        .arg("--json")
        .output()
        .unwrap();
    assert!(dump.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["key_b64"], "AAE=");
    assert_eq!(lines[1]["payload_b64"], "/w==");
    // Appending again continues after the existing records.
    let again = append(&part, "{\"payload\":\"4\"}\n", &[]);
    assert_eq!(String::from_utf8_lossy(&again.stdout), "committed 3..4\n");
}

#[test]
fn append_rejects_bad_input_with_exit_2_and_writes_nothing_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("p");
    let out = append(&part, "{\"payload\":\"ok\"}\n{\"payload\": 5}\n", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    let out = append(&part, "{\"key\":\"a\",\"key_b64\":\"AA==\"}\n", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("both key and key_b64"));
    let bad = cafelog()
        .args(["append", "--codec", "lz4"])
        .arg(&part)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn replay_prints_a_trace_hash_and_replays_identically() {
    let run = || {
        cafelog()
            .args(["replay", "--seed", "7", "--profile", "quick"])
            .output()
            .unwrap()
    };
    let (a, b) = (run(), run());
    let text = String::from_utf8_lossy(&a.stdout).to_string();
    let hash_line = text
        .lines()
        .find(|l| l.starts_with("trace_hash="))
        .expect("trace hash line");
    assert_eq!(hash_line.len(), "trace_hash=".len() + 16);
    assert_eq!(
        a.stdout, b.stdout,
        "the same seed replays to the same output"
    );
    assert!(text.contains("verdict: "));
    let bad = cafelog()
        .args(["replay", "--seed", "1", "--profile", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown profile"));
}

#[test]
fn replay_explains_the_records_it_is_asked_about() {
    let run = |extra: &[&str]| {
        let out = cafelog()
            .args(["replay", "--seed", "7", "--profile", "quick"])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let plain = run(&[]);
    assert!(plain.contains("verdict: PASS"), "{plain}");
    assert!(run(&["--explain"]).contains("explain: no violation names a record"));
    let asked = run(&["--explain-id", "1", "--explain-id", "999999"]);
    assert!(asked.contains("explain [no violation] "), "{asked}");
    assert!(asked.contains("-> produced"), "{asked}");
    assert!(asked.contains("-> acknowledged at "), "{asked}");
    assert!(
        asked.contains("explain: id 999999 was never acknowledged on a partition"),
        "{asked}"
    );
    // The explanation comes before the summary, which it leaves as it was.
    assert!(asked.ends_with(&plain), "{asked}");
}

#[test]
fn sweep_writes_one_json_object_per_seed_and_a_junit_report() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let junit = dir.path().join("s.xml");
    let out = cafelog()
        .args([
            "sweep",
            "--profile",
            "quick",
            "--seeds",
            "10..16",
            "--jobs",
            "2",
            "--determinism-sample",
            "2",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("seeds run: 6"), "{stdout}");
    assert!(stdout.contains("paths reached"));
    assert!(stdout.contains("determinism: 2 re-run seeds"));
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 6);
    for (r, seed) in records.iter().zip(10..) {
        assert_eq!(r["seed"], seed);
        for key in [
            "profile",
            "verdict",
            "message",
            "faults",
            "trace_hash",
            "sim_ms",
            "wall_ms",
        ] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        for key in [
            "acknowledged",
            "delivered",
            "duplicated",
            "lost",
            "recorded_loss",
            "crashes",
        ] {
            assert!(r["stats"].get(key).is_some(), "missing stats.{key}");
        }
    }
    let failed = records.iter().filter(|r| r["verdict"] != "pass").count();
    assert_eq!(out.status.code(), Some(if failed == 0 { 0 } else { 1 }));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testsuite name=\"cafelog sweep (quick)\" tests=\"6\""));
    assert_eq!(xml.matches("<testcase ").count(), 6);
    // Shards are disjoint and cover the range.
    let shard = |i: u32| {
        let path = dir.path().join(format!("shard{i}.json"));
        cafelog()
            .args([
                "sweep",
                "--profile",
                "quick",
                "--seeds",
                "10..16",
                "--determinism-sample",
                "0",
            ])
            .arg("--shard")
            .arg(format!("{i}/2"))
            .arg("--json")
            .arg(&path)
            .output()
            .unwrap();
        path
    };
    let (s0, s1) = (shard(0), shard(1));
    let merged = cafelog().arg("merge").arg(&s0).arg(&s1).output().unwrap();
    assert!(String::from_utf8_lossy(&merged.stdout).contains("seeds run: 6"));
}

#[test]
fn a_sweep_writes_each_seed_as_it_finishes_and_refuses_a_json_path_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    // A path that cannot be written fails before any seed runs.
    let bad = dir.path().join("missing").join("s.json");
    let out = cafelog()
        .args(["sweep", "--profile", "quick", "--seeds", "0..1000000"])
        .args(["--time-budget", "30"])
        .arg("--json")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing/s.json"), "{stderr}");
    assert!(!stderr.contains("cafelog sweep:"), "a seed ran: {stderr}");
    // A sweep stopped part-way keeps every seed it finished.
    let json = dir.path().join("s.json");
    let mut child = cafelog()
        .args([
            "sweep",
            "--profile",
            "quick",
            "--seeds",
            "0..1000000",
            "--jobs",
            "1",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = |text: &str| -> Vec<serde_json::Value> {
        // The line being written when the sweep was killed may be cut short.
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while lines(&std::fs::read_to_string(&json).unwrap_or_default()).len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "no seed written in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let records = lines(&std::fs::read_to_string(&json).unwrap());
    assert!(records.len() >= 3);
    let seeds: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds.len(), records.len(), "each seed once");
    // `merge` reads the file of a killed sweep, leaving out a line cut short.
    let mut text = std::fs::read_to_string(&json).unwrap();
    text.truncate(text.trim_end().len() - 5);
    std::fs::write(&json, &text).unwrap();
    let merged = cafelog().arg("merge").arg(&json).output().unwrap();
    assert_eq!(merged.status.code(), Some(0), "{merged:?}");
    assert!(String::from_utf8_lossy(&merged.stderr).contains("a line cut short"));
    // A --json that is not a regular file gets each record once, at the end.
    let out = cafelog()
        .args([
            "sweep",
            "--profile",
            "quick",
            "--seeds",
            "0..3",
            "--json",
            "/dev/stdout",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("{\"seed\""))
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
}

/// A run past its wall-clock limit (here 0.1 ms, which no run meets) is a hang in every
/// command that runs seeds, never a wait without end.
#[test]
fn replay_shrink_and_scenario_give_up_on_a_run_past_its_limit() {
    let replay = cafelog()
        .args([
            "replay",
            "--seed",
            "1",
            "--profile",
            "quick",
            "--timeout",
            "0.0001",
        ])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(13));
    assert!(String::from_utf8_lossy(&replay.stderr).contains("HANG"));
    let dir = tempfile::tempdir().unwrap();
    let shrink = cafelog()
        .args([
            "shrink",
            "--seed",
            "1",
            "--profile",
            "quick",
            "--timeout",
            "0.0001",
        ])
        .arg("-o")
        .arg(dir.path().join("s.toml"))
        .output()
        .unwrap();
    assert_eq!(shrink.status.code(), Some(13));
    assert!(String::from_utf8_lossy(&shrink.stderr).contains("seed 1: HANG"));
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let first = std::fs::read_dir(scenarios)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .min()
        .unwrap();
    let scenario = cafelog()
        .args(["scenario", "run", "--timeout", "0.0001"])
        .arg(&first)
        .output()
        .unwrap();
    assert_eq!(scenario.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&scenario.stdout);
    assert!(stdout.contains("MISMATCH: HANG"), "{stdout}");
    assert!(stdout.contains("1 mismatched"), "{stdout}");
}

/// `--known` is read before any seed runs, and a sweep never writes its results over it.
#[test]
fn a_sweep_refuses_to_write_over_its_known_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("seeds.toml");
    let text = "[[seed]]\nseed = 1\nprofile = \"quick\"\nwhy = \"a test\"\nexpect = \"pass\"\n";
    std::fs::write(&corpus, text).unwrap();
    for flag in ["--json", "--junit"] {
        let out = cafelog()
            .args(["sweep", "--profile", "quick", "--seeds", "0..2"])
            .arg("--known")
            .arg(&corpus)
            .arg(flag)
            .arg(dir.path().join(".").join("seeds.toml"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("would be overwritten"), "{flag}: {stderr}");
        assert!(
            !stderr.contains("cafelog sweep:"),
            "{flag}: a seed ran: {stderr}"
        );
        assert_eq!(std::fs::read_to_string(&corpus).unwrap(), text, "{flag}");
    }
    // A corpus that does not read fails the sweep before any seed runs.
    std::fs::write(&corpus, "[[seed]]\nseed = \"one\"\n").unwrap();
    let out = cafelog()
        .args(["sweep", "--profile", "quick", "--seeds", "0..2"])
        .arg("--known")
        .arg(&corpus)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("cafelog sweep:"));
    // The final JSON replaces the streamed file whole and leaves no temporary file.
    let json = dir.path().join("s.json");
    let out = cafelog()
        .args(["sweep", "--profile", "quick", "--seeds", "0..2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(&json).unwrap().lines().count(), 2);
    assert!(!dir.path().join("s.json.tmp").exists());
}
