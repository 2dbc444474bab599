//! `cafelog append`: JSON lines from stdin through the real write path of a partition.

use base64::Engine as _;
use cafelog_engine::clock::SystemClock;
use cafelog_engine::format::Codec;
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The partition directory (created when absent).
    pub dir: PathBuf,
    /// Codec for new frames.
    #[arg(long, default_value = "zstd")]
    pub codec: String,
    /// Commit after every N records (default: once, at the end of input). Each commit
    /// prints the committed offset range.
    #[arg(long, value_name = "N")]
    pub commit_every: Option<usize>,
}

pub const HELP: &str = "\
Input: one JSON object per line, {\"key\": \"...\", \"payload\": \"...\"}, or with
\"key_b64\" / \"payload_b64\" for binary data (standard base64). A missing key is empty.
Output: `committed <first>..<end>` per commit (end exclusive).
Exit codes: 0 committed and closed cleanly; 1 a write or fsync failed (the partition is
poisoned, nothing after the error was acknowledged); 2 bad input or usage.";

#[derive(serde::Deserialize)]
struct Line {
    key: Option<String>,
    key_b64: Option<String>,
    payload: Option<String>,
    payload_b64: Option<String>,
}

fn field(
    text: Option<String>,
    b64: Option<String>,
    name: &str,
    line: usize,
) -> Result<Vec<u8>, String> {
    match (text, b64) {
        (Some(_), Some(_)) => Err(format!("line {line}: both {name} and {name}_b64")),
        (Some(t), None) => Ok(t.into_bytes()),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD
            .decode(b.as_bytes())
            .map_err(|e| format!("line {line}: {name}_b64: {e}")),
        (None, None) => Ok(Vec::new()),
    }
}

pub fn run(args: &Args) -> ExitCode {
    let codec: Codec = match args.codec.parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(2);
        }
    };
    if args.commit_every == Some(0) {
        eprintln!("cafelog: error: --commit-every must be positive");
        return ExitCode::from(2);
    }
    let config = LogConfig {
        codec,
        ..LogConfig::default()
    };
    let (log, _) = match pollster::block_on(Log::open(StdFs, SystemClock, &args.dir, config)) {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("cafelog: error: {}: {e}", args.dir.display());
            return ExitCode::from(
                if matches!(e, cafelog_engine::log::LogError::Corruption(_)) {
                    1
                } else {
                    2
                },
            );
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut pending = 0usize;
    let mut first: Option<u64> = None;
    let commit = |log: &Log<StdFs, SystemClock>,
                  first: &mut Option<u64>,
                  out: &mut dyn Write|
     -> Result<(), String> {
        let end = log.status().next_offset;
        pollster::block_on(log.sync()).map_err(|e| e.to_string())?;
        if let Some(start) = first.take() {
            writeln!(out, "committed {start}..{end}").map_err(|e| e.to_string())?;
            out.flush().map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    for (index, line) in std::io::stdin().lock().lines().enumerate() {
        let number = index + 1;
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("cafelog: error: reading stdin: {e}");
                return ExitCode::from(2);
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = match serde_json::from_str(&line) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("cafelog: error: line {number}: {e}");
                return ExitCode::from(2);
            }
        };
        let (key, payload) = match (
            field(parsed.key, parsed.key_b64, "key", number),
            field(parsed.payload, parsed.payload_b64, "payload", number),
        ) {
            (Ok(k), Ok(p)) => (k, p),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("cafelog: error: {e}");
                return ExitCode::from(2);
            }
        };
        match log.append(&key, &payload) {
            Ok(offset) => {
                first.get_or_insert(offset);
            }
            Err(e) => {
                eprintln!("cafelog: error: line {number}: {e}");
                return ExitCode::from(
                    if matches!(e, cafelog_engine::log::LogError::RecordTooLarge { .. }) {
                        2
                    } else {
                        1
                    },
                );
            }
        }
        pending += 1;
        if args.commit_every.is_some_and(|n| pending >= n) {
            if let Err(e) = commit(&log, &mut first, &mut out) {
                eprintln!("cafelog: error: commit failed: {e}");
                return ExitCode::from(1);
            }
            pending = 0;
        }
    }
    if let Err(e) = commit(&log, &mut first, &mut out) {
        eprintln!("cafelog: error: commit failed: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = pollster::block_on(log.close()) {
        eprintln!("cafelog: error: close failed: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
