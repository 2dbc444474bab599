//! zstd parameters on the bench's 1000-record frames: compression time per frame and the
//! stored/raw ratio, for each contender, in the same run (the evidence behind
//! `ZSTD_HASH_LOG_DEFAULT`). CPU only, no files: `cargo run --release -p cafelog-engine
//! --example zstd_params`. Run it on a quiet machine; the last of three rounds is printed.

#[path = "../../benches/engine/workload.rs"]
#[allow(dead_code)]
mod workload;

use cafelog_engine::format::envelope;
use std::time::Instant;
use zstd::zstd_safe::CParameter;

/// 50 frame payloads of 1000 records each, laid out as the engine lays them out:
/// `[len:4BE][envelope]` per record.
fn payloads() -> Vec<Vec<u8>> {
    let records = workload::pool(50_000);
    records
        .chunks(1000)
        .map(|chunk| {
            let mut payload = Vec::new();
            let mut record = Vec::new();
            for (key, value) in workload::pairs(chunk) {
                record.clear();
                envelope::encode(&mut record, key, 1_700_000_000_000, value);
                payload.extend_from_slice(&(record.len() as u32).to_be_bytes());
                payload.extend_from_slice(&record);
            }
            payload
        })
        .collect()
}

#[expect(
    clippy::disallowed_methods,
    reason = "a wall-clock measurement of zstd itself, outside the engine's Clock seam"
)]
fn main() {
    let payloads = payloads();
    let contenders: Vec<(&str, i32, Vec<CParameter>)> = vec![
        ("level 1 (zstd's hash log)", 1, vec![]),
        ("level 1, hash log 13", 1, vec![CParameter::HashLog(13)]),
        ("level 1, hash log 12", 1, vec![CParameter::HashLog(12)]),
        ("level 1, hash log 11", 1, vec![CParameter::HashLog(11)]),
        ("level 1, hash log 10", 1, vec![CParameter::HashLog(10)]),
        (
            "level 1, hash log 11, min match 7",
            1,
            vec![CParameter::HashLog(11), CParameter::MinMatch(7)],
        ),
        ("level -1", -1, vec![]),
        ("level -3", -3, vec![]),
        ("level 3", 3, vec![]),
    ];
    let mut out = vec![0u8; zstd::zstd_safe::compress_bound(1 << 20)];
    println!("{:36} {:>12} {:>8}", "contender", "µs/frame", "ratio");
    for round in 0..3 {
        for (name, level, params) in &contenders {
            let mut compressor = zstd::bulk::Compressor::new(*level).expect("level");
            for p in params {
                compressor.set_parameter(*p).expect("parameter");
            }
            let started = Instant::now();
            let (mut stored, mut raw, mut frames) = (0usize, 0usize, 0usize);
            for _ in 0..10 {
                for payload in &payloads {
                    stored += compressor
                        .compress_to_buffer(payload, &mut out[..])
                        .expect("compress");
                    raw += payload.len();
                    frames += 1;
                }
            }
            if round == 2 {
                let per_frame = started.elapsed().as_secs_f64() * 1e6 / frames as f64;
                let ratio = stored as f64 / raw as f64;
                println!("{name:36} {per_frame:12.1} {ratio:8.3}");
            }
        }
    }
}
