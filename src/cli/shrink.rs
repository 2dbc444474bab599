//! `cafelog shrink --seed S [--profile P] -o FILE`: shrinks a failing seed into a
//! scenario file that fails the same checker, and reports the sizes before and after.

use cafelog_sim::profile::Profile;
use cafelog_sim::scenario::{Expect, Scenario};
use cafelog_sim::shrink::{Shrunk, Target, shrink};
use cafelog_sim::world::{RunSpec, run};
use std::path::PathBuf;
use std::process::ExitCode;

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
    #[arg(long, default_value_t = 300)]
    pub attempts: usize,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  a scenario that fails the same checker was written
  1  the seed passes (nothing to shrink), or the scenario could not be written
  2  usage error";

pub fn run_command(args: &Args) -> ExitCode {
    let profile = &args.profile;
    let spec = RunSpec::from_seed(args.seed, profile);
    let first = run(&spec);
    if first.verdict.is_pass() {
        eprintln!(
            "cafelog: seed {} passes on {}: nothing to shrink",
            args.seed, profile.name
        );
        return ExitCode::from(1);
    }
    let target = Target::of(&first.verdict);
    eprintln!("shrinking seed {}: {}", args.seed, first.verdict);
    let keep = |o: &cafelog_sim::world::RunOutcome| target.matches(o);
    let shrunk = match shrink(&spec, &keep, args.attempts, &mut |line| {
        eprintln!("  {line}")
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(1);
        }
    };
    let text = match scenario_text(args, &first.verdict.to_string(), target, &shrunk) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = std::fs::write(&args.output, text) {
        eprintln!("cafelog: error: {}: {e}", args.output.display());
        return ExitCode::from(1);
    }
    println!("before: {}", shrunk.before);
    println!("after:  {}", shrunk.after);
    for note in &shrunk.notes {
        println!("note: {note}");
    }
    println!("verdict: {}", shrunk.outcome.verdict);
    println!(
        "wrote {} (run it: cafelog scenario run {})",
        args.output.display(),
        args.output.display()
    );
    ExitCode::from(0)
}

/// The scenario file: where it came from, then the shrunk run.
fn scenario_text(
    args: &Args,
    original: &str,
    target: Target,
    shrunk: &Shrunk,
) -> Result<String, String> {
    let mut story = format!(
        "Shrunk by `cafelog shrink --seed {} --profile {}` ({} runs).\n\
         The swarm run failed: {}\n\
         Before: {}.\nAfter:  {}.\n",
        args.seed,
        args.profile.name,
        shrunk.attempts,
        original.chars().take(300).collect::<String>(),
        shrunk.before,
        shrunk.after
    );
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
