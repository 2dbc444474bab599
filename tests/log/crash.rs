//! A real crash test: a child process (this test binary, re-executed) appends and
//! commits in a loop, printing each acknowledged range; the parent kills it with SIGKILL
//! at random moments, reopens the partition, and checks every acknowledged record is
//! present with identical bytes, offsets are contiguous and commit times never decrease.

use crate::common::*;
use cafelog_engine::clock::SystemClock;
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const CHILD_DIR_ENV: &str = "CAFELOG_CRASH_CHILD_DIR";
const ROUNDS: u64 = 12;

/// The payload of produce number `n`: deterministic, so the parent can check bytes.
fn payload(n: u64) -> Vec<u8> {
    let mut p = json_record(n);
    p.extend_from_slice(&n.to_be_bytes());
    p
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * 1024, // roll often, so crashes land around rolls too
        ..LogConfig::default()
    }
}

/// The child: appends batches forever, printing `ack <first> <last> <n0>` per commit.
#[test]
fn crash_child_entry() {
    let Ok(dir) = std::env::var(CHILD_DIR_ENV) else {
        return; // Only does something when re-executed by the parent.
    };
    let start: u64 = std::env::var("CAFELOG_CRASH_CHILD_START")
        .unwrap()
        .parse()
        .unwrap();
    let (log, _) =
        pollster::block_on(Log::open(StdFs, SystemClock, &dir, config())).expect("child open");
    let out = std::io::stdout();
    let mut n = start;
    let mut batch = 1u64;
    loop {
        let payloads: Vec<Vec<u8>> = (n..n + batch).map(payload).collect();
        let range =
            pollster::block_on(log.commit(payloads.iter().map(|p| (&b"key"[..], p.as_slice()))))
                .expect("commit");
        let mut out = out.lock();
        writeln!(out, "ack {} {} {}", range.start, range.end, n).unwrap();
        out.flush().unwrap();
        n += batch;
        batch = batch % 7 + 1;
        if n.is_multiple_of(5) {
            pollster::block_on(log.persist_hwm()).unwrap();
        }
    }
}

#[test]
fn sigkill_at_random_moments_never_loses_an_acknowledged_record() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    // offset -> produce number, for every acknowledged record.
    let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next_n = 0u64;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash::crash_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR_ENV, dir.path())
            .env("CAFELOG_CRASH_CHILD_START", next_n.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let kill_after = Duration::from_millis(20 + rng % 180);
        let reader = std::thread::spawn(move || {
            let mut acks = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let parts: Vec<&str> = line.split_whitespace().collect();
                if parts.first() == Some(&"ack") {
                    let nums: Vec<u64> = parts[1..].iter().map(|p| p.parse().unwrap()).collect();
                    acks.push((nums[0], nums[1], nums[2]));
                }
            }
            acks
        });
        std::thread::sleep(kill_after);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acks = reader.join().unwrap();
        for (start, end, n0) in &acks {
            for (i, offset) in (*start..*end).enumerate() {
                acked.insert(offset, n0 + i as u64);
            }
            next_n = next_n.max(n0 + (end - start));
        }

        // Reopen (recovery runs) and check every acknowledged record.
        let clock = cafelog_engine::clock::ManualClock::new(WALL_START_MS);
        let (log, report) = open(dir.path(), &clock, config());
        assert_eq!(report.recorded_loss_records, 0, "round {round}: {report:?}");
        let records = read_all(&log, 0);
        let by_offset: BTreeMap<u64, &cafelog_engine::log::Record> =
            records.iter().map(|r| (r.offset, r)).collect();
        for (offset, n) in &acked {
            let Some(record) = by_offset.get(offset) else {
                // Acked but above the persisted HWM: hidden, still on disk.
                assert!(
                    *offset >= log.hwm() && *offset < log.status().durable_end,
                    "round {round}: acknowledged offset {offset} lost (hwm {}, tail {})",
                    log.hwm(),
                    log.status().durable_end
                );
                continue;
            };
            assert_eq!(
                record.payload,
                payload(*n),
                "round {round}: offset {offset} changed"
            );
        }
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r.offset, i as u64, "round {round}: offsets not contiguous");
        }
        assert!(
            records
                .windows(2)
                .all(|w| w[0].committed_at_ms <= w[1].committed_at_ms),
            "round {round}: commit times decreased"
        );
        // Commit everything recovered so the next round starts past the hidden tail.
        pollster::block_on(log.close()).unwrap();
        // Offsets in the hidden tail that were acked are now visible with their bytes.
        let visible: BTreeMap<u64, Vec<u8>> = read_all(&log, 0)
            .into_iter()
            .map(|r| (r.offset, r.payload.to_vec()))
            .collect();
        for (offset, n) in &acked {
            if *offset < log.hwm() {
                assert_eq!(
                    visible.get(offset),
                    Some(&payload(*n)),
                    "round {round}: offset {offset}"
                );
            }
        }
    }
    assert!(
        acked.len() > 50,
        "the child acknowledged only {} records",
        acked.len()
    );
}
