//! `cafelog replay`: runs one seed exactly as a sweep did, optionally printing its
//! trace, and ends with the verdict and `trace_hash=<hex>`.

use cafelog_sim::history::{Event, EventKind};
use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunOutcome, RunSpec, run};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::deadline::{self, Finished, run_within};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The seed to run.
    #[arg(long)]
    pub seed: u64,
    /// Profile: quick, default or long.
    #[arg(long, default_value = "default", value_parser = Profile::by_name)]
    pub profile: Profile,
    /// Print every event of the run.
    #[arg(long)]
    pub trace: bool,
    /// With --trace: only events about this partition (`topic/partition`).
    #[arg(long, value_name = "TOPIC/PARTITION")]
    pub partition: Option<String>,
    /// With --trace: only events of these kinds (comma-separated, e.g. crash,restart,fault).
    #[arg(long, value_delimiter = ',')]
    pub kind: Vec<String>,
    /// With --trace: only events at or after this simulated ms.
    #[arg(long)]
    pub from_ms: Option<u64>,
    /// With --trace: only events at or before this simulated ms.
    #[arg(long)]
    pub to_ms: Option<u64>,
    /// Write the run's history as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    pub history: Option<std::path::PathBuf>,
    /// Draw the run (HWMs, durable tails, frontier, acks, crashes, faults) to this SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<std::path::PathBuf>,
    /// Explain the records the violations name: for each, the events the checkers read
    /// about it (its ack, where its offset stood at each crash, what each open found and
    /// cut, the damage that named it, its deliveries) and, for a lost record, every
    /// excuse row tried with what it found or lacked. The first few records; see
    /// --explain-id.
    #[arg(long)]
    pub explain: bool,
    /// With --explain: explain the record with this produce id (repeatable), whatever
    /// the verdict.
    #[arg(long, value_name = "ID")]
    pub explain_id: Vec<u64>,
    /// Run with this fault kind off (cancel, corrupt_write, dir_fsync_eio,
    /// process_crash, latent_sector, loop_drop, settle_drop, wal_roll: the WAL's
    /// drawn segment size, or lazy_frontier: frontiers left to load on first touch;
    /// repeatable):
    /// the seed as it ran before the swarm drew the kind, as corpus entries with
    /// `without` do.
    #[arg(long, value_name = "KIND")]
    pub without: Vec<String>,
    /// Give up on a run still going after this many seconds of wall time (a deadlock,
    /// or a loop that lets no simulated time pass), as a sweep does.
    #[arg(long, value_name = "SECS", default_value_t = crate::cli::deadline::SEED_TIMEOUT_SECS,
          value_parser = crate::cli::deadline::parse_secs)]
    pub timeout: f64,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   pass
  10  safety failure (a checker found a violation)
  11  liveness failure (acknowledged records not delivered in time after the heal)
  12  simulator crash (a panic in the engine or the simulator)
  13  hang: the run did not finish within --timeout
  2   usage error";

pub fn run_command(args: &Args) -> ExitCode {
    let spec = match RunSpec::from_seed_without(args.seed, &args.profile, &args.without) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("cafelog: error: --without: {e}");
            return ExitCode::from(2);
        }
    };
    let limit = Duration::from_secs_f64(args.timeout);
    let outcome = match run_within(limit, move || run(&spec)) {
        Finished::Ran(outcome) => outcome,
        // `run` reports every panic as a verdict; one that escapes it stays a panic.
        Finished::Panicked(panic) => std::panic::resume_unwind(panic),
        Finished::Hung => {
            eprintln!("cafelog: {}", deadline::hung_message(limit));
            return ExitCode::from(13);
        }
    };
    if let Some(path) = &args.history
        && let Err(e) = std::fs::write(path, outcome.history.to_json_lines())
    {
        eprintln!("cafelog: error: {}: {e}", path.display());
        return ExitCode::from(2);
    }
    if let Some(path) = &args.timeline
        && let Err(e) = cafelog_sim::timeline::write(path, &outcome)
    {
        eprintln!("cafelog: error: {}: {e}", path.display());
        return ExitCode::from(2);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.trace {
        for event in outcome.history.events() {
            if keep(args, event) {
                let _ = writeln!(out, "{event}");
            }
        }
    }
    if args.explain || !args.explain_id.is_empty() {
        let _ = print_explanations(&mut out, &outcome, &args.explain_id);
    }
    let _ = print_summary(&mut out, &outcome);
    let _ = out.flush();
    ExitCode::from(u8::try_from(outcome.verdict.exit_code()).unwrap_or(1))
}

fn kind_name(kind: &EventKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.get("event").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

fn keep(args: &Args, event: &Event) -> bool {
    if args.from_ms.is_some_and(|from| event.at_ms < from)
        || args.to_ms.is_some_and(|to| event.at_ms > to)
    {
        return false;
    }
    if !args.kind.is_empty() && !args.kind.iter().any(|k| *k == kind_name(&event.kind)) {
        return false;
    }
    if let Some(filter) = &args.partition {
        let line = event.to_string();
        // Events name partitions as `topic/partition`; whole-run events (crash,
        // restart, heal) are kept so the partition's story stays readable.
        let global = matches!(
            event.kind,
            EventKind::Crash { .. } | EventKind::Restart | EventKind::Heal
        );
        if !global && !line.contains(&format!("{filter} ")) && !line.ends_with(filter.as_str()) {
            return false;
        }
    }
    true
}

/// The end of a replay: verdict, failure context, accounting, paths, trace hash.
pub fn print_summary(out: &mut impl Write, outcome: &RunOutcome) -> std::io::Result<()> {
    writeln!(
        out,
        "seed={} profile={} sim_ms={}",
        outcome.seed, outcome.profile, outcome.sim_ms
    )?;
    writeln!(out, "faults on: {}", outcome.fault_kinds_on.join(", "))?;
    let faults: Vec<String> = outcome
        .faults
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    writeln!(
        out,
        "faults injected: {}",
        if faults.is_empty() {
            "none".into()
        } else {
            faults.join(" ")
        }
    )?;
    if let Some(report) = &outcome.report {
        let c = report.accounting.counts();
        writeln!(
            out,
            "records: produced={} acknowledged={} delivered={} lost={} duplicated={} unexpected={} corrupt={}",
            outcome.records_produced,
            c.acknowledged,
            c.delivered,
            c.lost,
            c.duplicated,
            c.unexpected,
            c.corrupt
        )?;
    }
    let paths: Vec<String> = outcome
        .paths
        .entries()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    writeln!(
        out,
        "paths: {}",
        if paths.is_empty() {
            "none".into()
        } else {
            paths.join(" ")
        }
    )?;
    if let Some(report) = &outcome.report {
        print_excuses(out, report, &outcome.history)?;
    }
    if let Some(failure) = outcome.verdict.failure() {
        writeln!(out, "events around the failure:")?;
        for context in &failure.context {
            writeln!(out, "  {context}")?;
        }
    }
    writeln!(out, "verdict: {}", outcome.verdict)?;
    writeln!(out, "trace_hash={:016x}", outcome.trace_hash)
}

/// Lines per checker of excuses printed; the rest are counted.
const EXCUSES_SHOWN: usize = 8;

/// Every excuse the checkers made, with the events it rests on: what a green verdict
/// (or one excused record) stands on.
fn print_excuses(
    out: &mut impl Write,
    report: &cafelog_sim::check::CheckReport,
    history: &cafelog_sim::history::History,
) -> std::io::Result<()> {
    let used = report.excuses_used();
    if used.is_empty() {
        return writeln!(out, "excuses: none");
    }
    let tally: Vec<String> = used.iter().map(|(k, n)| format!("{k}={n}")).collect();
    writeln!(out, "excuses: {}", tally.join(" "))?;
    let cause = |c: &usize| -> String {
        history
            .events()
            .get(*c)
            .map_or_else(|| format!("#{c}"), |e| format!("#{c} ({e})"))
    };
    let lines: Vec<String> = report
        .no_lost_ack
        .excused
        .iter()
        .map(|e| {
            let offset = e.offset.map_or_else(|| "?".into(), |o| o.to_string());
            format!(
                "lost id {} at {}@{offset}: {} [{}] resting on {}",
                e.id,
                e.tp,
                e.excuse.kind,
                e.excuse.covers,
                e.excuse
                    .causes
                    .iter()
                    .map(cause)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .chain(report.bounded_duplicates.excused.iter().map(|(id, e)| {
            format!(
                "duplicate of id {id}: {} [{}] resting on {}",
                e.kind,
                e.covers,
                e.causes.iter().map(cause).collect::<Vec<_>>().join(", ")
            )
        }))
        .collect();
    for line in lines.iter().take(EXCUSES_SHOWN) {
        writeln!(out, "  excused: {line}")?;
    }
    if lines.len() > EXCUSES_SHOWN {
        writeln!(
            out,
            "  excused: ... and {} more",
            lines.len() - EXCUSES_SHOWN
        )?;
    }
    Ok(())
}

/// Records explained by a bare `--explain`; the rest are counted.
const EXPLAINED_MAX: usize = 3;

/// `--explain`: the story of each record the violations name (the first
/// [`EXPLAINED_MAX`]), or of the records `ids` names.
fn print_explanations(
    out: &mut impl Write,
    outcome: &RunOutcome,
    ids: &[u64],
) -> std::io::Result<()> {
    use cafelog_sim::check::explain::{Subject, explain, subjects};
    let Some(report) = &outcome.report else {
        return writeln!(out, "explain: the run has no checker report (it crashed)");
    };
    let named = subjects(report);
    let chosen: Vec<Subject> = if ids.is_empty() {
        named.iter().take(EXPLAINED_MAX).cloned().collect()
    } else {
        let mut chosen = Vec::new();
        for &id in ids {
            match named.iter().find(|s| s.id == Some(id)) {
                Some(s) => chosen.push(s.clone()),
                None => match acked_at(&outcome.history, report, id) {
                    Some(s) => chosen.push(s),
                    None => writeln!(
                        out,
                        "explain: id {id} was never acknowledged on a partition"
                    )?,
                },
            }
        }
        chosen
    };
    if chosen.is_empty() && ids.is_empty() {
        writeln!(out, "explain: no violation names a record")?;
    }
    for s in &chosen {
        write!(out, "{}", explain(&outcome.history, s).render())?;
    }
    if ids.is_empty() && named.len() > EXPLAINED_MAX {
        writeln!(
            out,
            "explain: {} more record(s) named; ask for one with --explain-id",
            named.len() - EXPLAINED_MAX
        )?;
    }
    Ok(())
}

/// The record `id` where it was acknowledged; with the loss checker's rows when that
/// checker excused its loss.
fn acked_at(
    history: &cafelog_sim::history::History,
    report: &cafelog_sim::check::CheckReport,
    id: u64,
) -> Option<cafelog_sim::check::explain::Subject> {
    let excused = report.no_lost_ack.excused.iter().any(|e| e.id == id);
    history.events().iter().find_map(|e| match &e.kind {
        EventKind::ProduceAck {
            id: acked,
            tp,
            offset,
            ..
        } if *acked == id => Some(cafelog_sim::check::explain::Subject {
            checkers: if excused {
                vec![cafelog_sim::check::CheckerName::NoLostAck]
            } else {
                Vec::new()
            },
            tp: tp.clone(),
            id: Some(id),
            offset: *offset,
        }),
        _ => None,
    })
}
