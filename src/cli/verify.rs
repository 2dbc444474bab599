//! `cafelog verify`: scan a partition as recovery would and report the plan: valid
//! extent, HWM clamp (R4), hidden tail, what would be truncated (R1/R2) or why opening
//! would be refused (R3), and records a consumer would see skipped.

use super::{CliError, Verdict, output_error, partition};
use cafelog_engine::recovery::{PartitionScan, TruncationRule};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `cafelog verify`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The partition directory (holds `%020d.log` segments and the `hwm` file).
    pub partition_dir: PathBuf,
    /// Print one JSON object instead of a readable report.
    #[arg(long)]
    pub json: bool,
}

/// The report, as `--json` prints it. Field names are a stable interface: scripts and
/// the snapshot tests read them.
#[derive(Serialize, Debug)]
pub struct Report {
    /// Segments scanned, up to and including the one holding the first bad region.
    pub segments: usize,
    /// Valid frames.
    pub frames: u64,
    /// Records in the valid extent (`tail_offset - log_start`).
    pub records: u64,
    pub log_start: u64,
    /// Next offset after the valid extent.
    pub tail_offset: u64,
    /// The `hwm` file's value; null when there is no file.
    pub persisted_hwm: Option<u64>,
    /// HWM after the clamp (R4).
    pub hwm: u64,
    pub hidden_records: u64,
    pub recorded_loss_records: u64,
    pub torn_tail_bytes: u64,
    /// Zero-filled (preallocated, unused) bytes after the last frame of each segment:
    /// the normal end of a segment, not a torn tail.
    pub zero_tail_bytes: u64,
    /// Damaged unused bytes after the last frame of sealed segments whose successor
    /// starts at their end offset (nothing missing): trimmed at open, not a torn tail.
    pub junk_tail_bytes: u64,
    /// Records below the HWM inside valid frames whose envelope does not parse.
    pub skipped_records: u64,
    /// Unparseable records anywhere in the valid extent (also above the HWM).
    pub unparseable_offsets: Vec<u64>,
    pub last_committed_at_ms: Option<u64>,
    /// Whether recovery would open the partition.
    pub opens: bool,
    pub truncation: Option<TruncationReport>,
    pub corruption: Option<CorruptionReport>,
    pub segment_extents: Vec<SegmentReport>,
}

#[derive(Serialize, Debug)]
pub struct TruncationReport {
    /// `R1` or `R2`.
    pub rule: &'static str,
    pub segment: String,
    pub position: u64,
    pub offset: u64,
    pub reason: String,
    pub removed_segments: Vec<String>,
    pub bytes: u64,
}

#[derive(Serialize, Debug)]
pub struct CorruptionReport {
    pub segment: String,
    pub position: u64,
    pub reason: String,
}

#[derive(Serialize, Debug)]
pub struct SegmentReport {
    pub file: String,
    pub base_offset: u64,
    pub end_offset: u64,
    pub file_len: u64,
    pub valid_len: u64,
    /// Zero-filled bytes after the last frame (preallocated space).
    pub zero_tail: u64,
    /// Damaged unused bytes after the last frame (see `junk_tail_bytes`).
    pub junk_tail: u64,
    pub frames: usize,
}

/// Short rule names for the JSON report (`TruncationRule::name` is the long form).
fn rule_code(rule: TruncationRule) -> &'static str {
    match rule {
        TruncationRule::TornTail => "R1",
        TruncationRule::HoleAboveHwm => "R2",
    }
}

impl Report {
    pub fn new(scan: &PartitionScan) -> Report {
        let report = Report {
            segments: scan.segments.len(),
            frames: scan.frames(),
            records: scan.records(),
            log_start: scan.log_start,
            tail_offset: scan.tail_offset,
            persisted_hwm: scan.persisted_hwm,
            hwm: scan.hwm(),
            hidden_records: scan.hidden_records(),
            recorded_loss_records: scan.recorded_loss_records(),
            torn_tail_bytes: scan.torn_tail_bytes(),
            zero_tail_bytes: scan.zero_tail_bytes(),
            junk_tail_bytes: scan.junk_tail_bytes(),
            skipped_records: scan.skipped_records(),
            unparseable_offsets: scan.unparseable.clone(),
            last_committed_at_ms: scan.last_committed_at_ms,
            opens: scan.check().is_ok(),
            truncation: scan.truncation.as_ref().map(|t| TruncationReport {
                rule: rule_code(t.rule),
                segment: t.segment.clone(),
                position: t.position,
                offset: t.offset,
                reason: t.reason.clone(),
                removed_segments: t.removed_segments.clone(),
                bytes: t.bytes,
            }),
            corruption: scan.corruption.as_ref().map(|c| CorruptionReport {
                segment: c.segment.clone(),
                position: c.position,
                reason: c.reason.clone(),
            }),
            segment_extents: scan
                .segments
                .iter()
                .map(|s| SegmentReport {
                    file: s.file_name.clone(),
                    base_offset: s.base_offset,
                    end_offset: s.end_offset,
                    file_len: s.file_len,
                    valid_len: s.valid_len,
                    zero_tail: s.zero_tail,
                    junk_tail: s.junk_tail,
                    frames: s.frames.len(),
                })
                .collect(),
        };
        // The relations FORMAT.md promises for these fields.
        assert!(report.log_start <= report.hwm && report.hwm <= report.tail_offset);
        assert_eq!(report.hidden_records, report.tail_offset - report.hwm);
        assert!(report.skipped_records <= report.hwm - report.log_start);
        report
    }

    fn write_text(&self, out: &mut impl Write, dir: &std::path::Path) -> std::io::Result<()> {
        writeln!(out, "partition       {}", dir.display())?;
        writeln!(out, "segments        {}", self.segments)?;
        for s in &self.segment_extents {
            write!(
                out,
                "  {}  offsets {}..{}  {} frames  {} of {} bytes valid",
                s.file, s.base_offset, s.end_offset, s.frames, s.valid_len, s.file_len
            )?;
            if s.zero_tail > 0 {
                write!(out, ", then {} zero bytes (preallocated)", s.zero_tail)?;
            }
            if s.junk_tail > 0 {
                write!(
                    out,
                    ", then {} damaged unused bytes (trimmed at open)",
                    s.junk_tail
                )?;
            }
            writeln!(out)?;
        }
        writeln!(out, "frames          {}", self.frames)?;
        writeln!(
            out,
            "records         {} (offsets {}..{})",
            self.records, self.log_start, self.tail_offset
        )?;
        match self.persisted_hwm {
            Some(p) => writeln!(out, "persisted hwm   {p}")?,
            None => writeln!(out, "persisted hwm   none (no hwm file: 0)")?,
        }
        writeln!(out, "hwm             {} (after the clamp)", self.hwm)?;
        writeln!(out, "hidden records  {}", self.hidden_records)?;
        writeln!(
            out,
            "recorded loss   {} records",
            self.recorded_loss_records
        )?;
        writeln!(out, "torn tail       {} bytes", self.torn_tail_bytes)?;
        writeln!(
            out,
            "zero tail       {} bytes (preallocated, the normal end)",
            self.zero_tail_bytes
        )?;
        writeln!(out, "skipped records {}", self.skipped_records)?;
        if let Some(t) = &self.truncation {
            writeln!(
                out,
                "truncation      {}: {} at byte {} (offset {}): {}",
                t.rule, t.segment, t.position, t.offset, t.reason
            )?;
            if !t.removed_segments.is_empty() {
                writeln!(
                    out,
                    "                removes {}",
                    t.removed_segments.join(", ")
                )?;
            }
        }
        match &self.corruption {
            Some(c) => writeln!(
                out,
                "verdict         REFUSE (R3): {} at byte {}: {}",
                c.segment, c.position, c.reason
            ),
            None if self.truncation.is_some() => {
                writeln!(out, "verdict         opens after truncation")
            }
            None => writeln!(out, "verdict         opens cleanly"),
        }
    }
}

/// Runs `cafelog verify`.
pub fn run(args: &Args) -> Result<Verdict, CliError> {
    let scan = partition::scan(&args.partition_dir)?;
    let report = Report::new(&scan);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out).map_err(output_error)?;
    } else {
        report
            .write_text(&mut out, &args.partition_dir)
            .map_err(output_error)?;
    }
    out.flush().map_err(output_error)?;
    Ok(refusal(&scan, &args.partition_dir))
}

/// The verdict; a refusal is also explained on stderr, naming file and byte position.
pub fn refusal(scan: &PartitionScan, dir: &std::path::Path) -> Verdict {
    match scan.check() {
        Ok(()) => Verdict::Opens,
        Err(corruption) => {
            eprintln!(
                "cafelog: recovery would refuse to open {}: {}",
                dir.display(),
                corruption
            );
            Verdict::Refuses
        }
    }
}
