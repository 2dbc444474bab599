//! `cafelog shrink --seed S [--profile P] -o FILE`: shrinks a failing seed into a
//! scenario file that fails the same checker, and reports the sizes before and after.

use crate::cli::deadline::{self, Finished, run_within};
use cafelog_sim::profile::Profile;
use cafelog_sim::scenario::{Expect, Scenario};
use cafelog_sim::shrink::{Limits, Shrunk, Target, shrink};
use cafelog_sim::world::{RunSpec, run};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The failing seed.
    #[arg(long)]
    pub seed: u64,
    /// Profile: quick, default or long.
    #[arg(long, default_value = "default", value_parser = Profile::by_name)]
    pub profile: Profile,
    /// Where to write the scenario (e.g. scenarios/NAME.toml).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Bound on the runs the shrink may spend.
    #[arg(long, default_value_t = 3000)]
    pub attempts: usize,
    /// Bound on the shrink's wall time, in seconds (what was found by then is kept).
    #[arg(long, default_value_t = 60)]
    pub time_limit: u64,
    /// Run with this fault kind off, as `replay --without` does (a corpus entry's
    /// `without`); repeatable.
    #[arg(long, value_name = "KIND")]
    pub without: Vec<String>,
    /// Give up on one run still going after this many seconds of wall time (a deadlock,
    /// or a loop that lets no simulated time pass), as a sweep does: the seed's own run
    /// is a hang (exit 13), a candidate's is dropped and the shrink goes on.
    #[arg(long, value_name = "SECS", default_value_t = deadline::SEED_TIMEOUT_SECS,
          value_parser = deadline::parse_secs)]
    pub timeout: f64,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   a scenario that fails the same checker was written
  1   the seed passes (nothing to shrink), or the scenario could not be written
  13  hang: the seed's run, or a run of the shrink, did not finish within --timeout
  2   usage error";

pub fn run_command(args: &Args) -> ExitCode {
    let profile = &args.profile;
    let spec = match RunSpec::from_seed_without(args.seed, profile, &args.without) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("cafelog: error: --without: {e}");
            return ExitCode::from(2);
        }
    };
    let limit = Duration::from_secs_f64(args.timeout);
    let hung = |what: &str| {
        eprintln!("cafelog: {what}: {}", deadline::hung_message(limit));
        ExitCode::from(13)
    };
    let first = match run_limited(limit, &spec) {
        Some(outcome) => outcome,
        None => return hung(&format!("seed {}", args.seed)),
    };
    if first.verdict.is_pass() {
        eprintln!(
            "cafelog: seed {} passes on {}: nothing to shrink",
            args.seed, profile.name
        );
        return ExitCode::from(1);
    }
    let target = Target::of(&first.verdict);
    eprintln!("shrinking seed {}: {}", args.seed, first.verdict);
    // A candidate run past the limit is dropped and the shrink goes on; the shrink
    // checks its own time limit between runs, and gets that plus two runs' worth in all
    // (the backstop, should a run outlive its own limit's thread).
    let limits = Limits {
        runs: args.attempts,
        time: Some(Duration::from_secs(args.time_limit)),
        run: Some(limit),
    };
    let (start, aim) = (spec.clone(), target.clone());
    let whole = Duration::from_secs(args.time_limit).saturating_add(limit.saturating_mul(2));
    let shrunk = match run_within(whole, move || {
        let keep = |o: &cafelog_sim::world::RunOutcome| aim.matches(o);
        shrink(&start, &keep, limits, &mut |line| eprintln!("  {line}"))
    }) {
        Finished::Ran(Ok(s)) => s,
        Finished::Ran(Err(e)) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(1);
        }
        Finished::Panicked(panic) => std::panic::resume_unwind(panic),
        Finished::Hung => {
            return hung("a run of the shrink (the progress above shows how far it got)");
        }
    };
    let text = match scenario_text(args, &first.verdict.to_string(), &target, &shrunk) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(1);
        }
    };
    // What is written is what a user will run: it must fail the same way.
    let back = match Scenario::parse("shrunk", &text) {
        Ok(scenario) => scenario.spec(),
        Err(e) => {
            eprintln!("cafelog: error: the shrunk scenario does not parse back: {e}");
            return ExitCode::from(1);
        }
    };
    let Some(written) = run_limited(limit, &back) else {
        return hung("the scenario file's run");
    };
    if !target.matches(&written) {
        eprintln!(
            "cafelog: error: the scenario file does not fail as the shrunk run did (it \
             gives: {}); nothing written. Where the file's run differs:",
            written.verdict
        );
        let (a, b) = (format!("{:#?}", shrunk.spec), format!("{back:#?}"));
        for (x, y) in a.lines().zip(b.lines()).filter(|(x, y)| x != y).take(12) {
            eprintln!("  {} -> {}", x.trim(), y.trim());
        }
        return ExitCode::from(1);
    }
    if let Err(e) = std::fs::write(&args.output, text) {
        eprintln!("cafelog: error: {}: {e}", args.output.display());
        return ExitCode::from(1);
    }
    print!("{}", dimension_table(&shrunk));
    println!(
        "{} runs in {:.1} s",
        shrunk.attempts,
        shrunk.elapsed.as_secs_f64()
    );
    for note in &shrunk.notes {
        println!("note: {note}");
    }
    println!("verdict: {}", shrunk.outcome.verdict);
    if written.trace_hash != shrunk.outcome.trace_hash {
        println!(
            "note: the file's run fails the same way by another path than the shrink's last \
             run (trace hash {:016x}, not {:016x})",
            written.trace_hash, shrunk.outcome.trace_hash
        );
    }
    println!(
        "wrote {} (run it: cafelog scenario run {})",
        args.output.display(),
        args.output.display()
    );
    ExitCode::from(0)
}

/// Before and after, one dimension a line.
fn dimension_table(shrunk: &Shrunk) -> String {
    let mut out = format!("{:<18} {:>8} {:>8}\n", "", "before", "after");
    for ((name, before), (_, after)) in shrunk
        .before
        .dimensions()
        .into_iter()
        .zip(shrunk.after.dimensions())
    {
        out.push_str(&format!("{name:<18} {before:>8} {after:>8}\n"));
    }
    out
}

/// The scenario file: where it came from, what the shrink removed, what the failure
/// rests on, then the shrunk run.
fn scenario_text(
    args: &Args,
    original: &str,
    target: &Target,
    shrunk: &Shrunk,
) -> Result<String, String> {
    let without: String = args
        .without
        .iter()
        .map(|k| format!(" --without {k}"))
        .collect();
    let mut story = format!(
        "Shrunk by `cafelog shrink --seed {} --profile {}{without}` ({} runs, {:.1} s).\n\
         The swarm run failed: {}\n\
         Before: {}.\nAfter:  {}.\n",
        args.seed,
        args.profile.name,
        shrunk.attempts,
        shrunk.elapsed.as_secs_f64(),
        original.chars().take(300).collect::<String>(),
        shrunk.before,
        shrunk.after
    );
    if !shrunk.steps.is_empty() {
        story.push_str(&format!("Removed or reset: {}.\n", shrunk.steps.join("; ")));
    }
    if let Some(failure) = shrunk.outcome.verdict.failure() {
        let records: Vec<String> = failure
            .records
            .iter()
            .take(3)
            .map(|r| {
                let mut s = String::new();
                if let Some(id) = r.id {
                    s.push_str(&format!("id {id} "));
                }
                if let Some(tp) = &r.tp {
                    s.push_str(&format!("at {tp}"));
                }
                if let Some(offset) = r.offset {
                    s.push_str(&format!("@{offset}"));
                }
                s.trim().to_owned()
            })
            .collect();
        let focus: Vec<String> = failure
            .context
            .iter()
            .filter(|c| c.focus)
            .map(|c| format!("#{} {}", c.index, c.event))
            .collect();
        story.push_str(&format!(
            "It rests on: {} ({}); events: {}.\n",
            records.join(", "),
            failure.checker,
            focus.join("; ")
        ));
    }
    for note in &shrunk.notes {
        story.push_str(&format!("Note: {note}.\n"));
    }
    story.push_str(
        "TODO: say what bug class this guards against, and expect `pass` once it is fixed.",
    );
    let expect = Expect {
        verdict: target.verdict,
        checker: target.checker,
        reaches: Vec::new(),
        injects: Vec::new(),
    };
    Scenario::from_spec(&shrunk.spec, expect).to_toml(&wrap(&story, 86))
}

/// Wraps each line of `text` at `width` columns, on spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut current = String::new();
        for word in line.split(' ') {
            if !current.is_empty() && current.len() + 1 + word.len() > width {
                out.push_str(&current);
                out.push('\n');
                current.clear();
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push_str(&current);
        out.push('\n');
    }
    out
}

/// One run within `limit`, `None` when it hung (a panic that escapes it stays a panic).
fn run_limited(limit: Duration, spec: &RunSpec) -> Option<cafelog_sim::world::RunOutcome> {
    let spec = spec.clone();
    match run_within(limit, move || run(&spec)) {
        Finished::Ran(outcome) => Some(outcome),
        Finished::Panicked(panic) => std::panic::resume_unwind(panic),
        Finished::Hung => None,
    }
}
