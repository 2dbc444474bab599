//! `cafelog dump`: print the records a consumer would see, in offset order: offsets
//! below the recovered HWM (R4) and at or above `--from`. Unparseable records are
//! skipped and counted on stderr, never printed. Memory stays within one frame.
//!
//! When recovery would refuse (R3), the records before the corruption are still
//! printed (that is what an operator salvaging a partition wants) and the exit code is 1.

use super::partition::{self, Record, SkipReport};
use super::{CliError, Verdict, output_error};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `cafelog dump`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The partition directory (holds `%020d.log` segments and the `hwm` file).
    pub partition_dir: PathBuf,
    /// Print one JSON object per record and line: {offset, committed_at_ms, key_b64,
    /// payload_b64} (standard base64).
    #[arg(long)]
    pub json: bool,
    /// First offset to print.
    #[arg(long, value_name = "OFFSET", default_value_t = 0)]
    pub from: u64,
}

#[derive(Serialize)]
struct JsonRecord {
    offset: u64,
    committed_at_ms: u64,
    key_b64: String,
    payload_b64: String,
}

/// Bytes of key and payload shown in the table before eliding.
const PREVIEW_BYTES_MAX: usize = 48;

/// Printable form of bytes for the table: ASCII graphic characters as they are,
/// everything else as `\xNN`, cut after [`PREVIEW_BYTES_MAX`] bytes.
fn preview(bytes: &[u8]) -> String {
    let mut text = String::new();
    for byte in bytes.iter().take(PREVIEW_BYTES_MAX) {
        if byte.is_ascii_graphic() || *byte == b' ' {
            text.push(char::from(*byte));
        } else {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    if bytes.len() > PREVIEW_BYTES_MAX {
        text.push_str("...");
    }
    text
}

fn write_record(out: &mut impl Write, json: bool, record: &Record<'_>) -> Result<(), CliError> {
    if json {
        serde_json::to_writer(
            &mut *out,
            &JsonRecord {
                offset: record.offset,
                committed_at_ms: record.committed_at_ms,
                key_b64: BASE64.encode(record.key),
                payload_b64: BASE64.encode(record.payload),
            },
        )?;
        writeln!(out).map_err(output_error)
    } else {
        writeln!(
            out,
            "{:>12}  {:>15}  {:<24}  {:>7}  {}",
            record.offset,
            record.committed_at_ms,
            preview(record.key),
            record.payload.len(),
            preview(record.payload)
        )
        .map_err(output_error)
    }
}

fn report_skipped(skipped: &SkipReport) {
    if skipped.count == 0 {
        return;
    }
    eprintln!("cafelog: skipped {} unreadable records", skipped.count);
    for s in &skipped.first {
        eprintln!("  offset {}: {}", s.offset, s.reason);
    }
    if skipped.count > skipped.first.len() as u64 {
        eprintln!("  ...");
    }
}

/// Runs `cafelog dump`.
pub fn run(args: &Args) -> Result<Verdict, CliError> {
    let scan = partition::scan(&args.partition_dir)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let walked = (|| -> Result<SkipReport, CliError> {
        if !args.json {
            writeln!(
                out,
                "{:>12}  {:>15}  {:<24}  {:>7}  payload",
                "offset", "committed_at_ms", "key", "bytes"
            )
            .map_err(output_error)?;
        }
        let skipped = partition::for_each_visible(&args.partition_dir, &scan, args.from, |r| {
            write_record(&mut out, args.json, r)
        })?;
        out.flush().map_err(output_error)?;
        Ok(skipped)
    })();
    match walked {
        Ok(skipped) => report_skipped(&skipped),
        // The reader went away (`| head`): stop quietly, the verdict still stands.
        Err(e) if e.is_broken_pipe() => {}
        Err(e) => return Err(e),
    }
    Ok(super::verify::refusal(&scan, &args.partition_dir))
}
