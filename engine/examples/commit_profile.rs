//! CPU profile of the commit path in instructions, for callgrind (repeatable, unlike
//! wall time). `commit_profile <b1|b1000> <warmup> <n> <dir> [compress_min_bytes]` opens a
//! log on `StdFs` in `dir` (use tmpfs, /dev/shm, so fsync is nearly free), runs `warmup`
//! commits, then `n` measured ones: `b1` is `Log::commit` of one bench record, `b1000`
//! `append_batch` of 1000 plus `sync`. Count only the measured ones with
//! `valgrind --tool=callgrind --toggle-collect='commit_profile::measured*'` and divide
//! the collected instructions by `n`.

#[path = "../../benches/engine/workload.rs"]
#[allow(dead_code)]
mod workload;

use cafelog_engine::clock::SystemClock;
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig};
use workload::{Record, pairs};

type L = Log<StdFs, SystemClock>;

fn slice(records: &[Record], from: usize, count: usize) -> &[Record] {
    let from = from % (records.len() - count + 1);
    &records[from..from + count]
}

fn one(log: &L, records: &[Record], batch: usize, k: usize) {
    let chunk = slice(records, k * batch, batch);
    if batch == 1 {
        pollster::block_on(log.commit(pairs(chunk))).expect("commit");
    } else {
        log.append_batch(pairs(chunk)).expect("append");
        pollster::block_on(log.sync()).expect("sync");
    }
}

#[inline(never)]
fn measured(log: &L, records: &[Record], batch: usize, from: usize, n: usize) {
    for k in from..from + n {
        one(log, records, batch, k);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let batch = match args[1].as_str() {
        "b1" => 1,
        "b1000" => 1000,
        other => panic!("unknown path {other}"),
    };
    let warmup: usize = args[2].parse().expect("warmup");
    let n: usize = args[3].parse().expect("n");
    let dir = std::path::PathBuf::from(&args[4]);
    let config = LogConfig {
        compress_min_bytes: args
            .get(5)
            .map_or(LogConfig::default().compress_min_bytes, |a| {
                a.parse().expect("compress_min_bytes")
            }),
        ..LogConfig::default()
    };
    let _ = std::fs::remove_dir_all(&dir);
    let records = workload::pool(100_000);
    let (log, _) = pollster::block_on(Log::open(StdFs, SystemClock, &dir, config)).expect("open");
    for k in 0..warmup {
        one(&log, &records, batch, k);
    }
    measured(&log, &records, batch, warmup, n);
    let m = log.metrics().snapshot();
    eprintln!(
        "stored {} uncompressed {} ratio {:.4} frames {}",
        m.bytes_stored,
        m.bytes_uncompressed,
        m.bytes_stored as f64 / m.bytes_uncompressed as f64,
        m.frames_written
    );
    pollster::block_on(log.close()).expect("close");
}
