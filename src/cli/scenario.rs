//! `cafelog scenario run FILE|DIR [--trace]`: runs scenario files, prints the same
//! summary as `replay` for each, and exits 0 only when every run ends in the verdict
//! its file expects and reaches the paths it names.

use crate::cli::deadline::{self, Finished, run_within};
use cafelog_sim::scenario::Scenario;
use cafelog_sim::world::run;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Run a scenario file, or every `*.toml` in a directory.
    Run(RunArgs),
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// A scenario file or a directory of them.
    pub path: PathBuf,
    /// Print every event of each run.
    #[arg(long)]
    pub trace: bool,
    /// Give up on a run still going after this many seconds of wall time (a deadlock,
    /// or a loop that lets no simulated time pass): a mismatch, and on to the next.
    #[arg(long, value_name = "SECS", default_value_t = deadline::SEED_TIMEOUT_SECS,
          value_parser = deadline::parse_secs)]
    pub timeout: f64,
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every scenario ended as it expects (verdict, checker, paths reached)
  1  at least one scenario did not (each mismatch is printed), or hung past --timeout
  2  usage error, or a scenario file that cannot be read or parsed";

pub fn run_command(args: &Args) -> ExitCode {
    match &args.command {
        Command::Run(run_args) => run_scenarios(run_args),
    }
}

fn run_scenarios(args: &RunArgs) -> ExitCode {
    let loaded = if args.path.is_dir() {
        Scenario::load_dir(&args.path)
    } else {
        Scenario::load(&args.path).map(|s| vec![s])
    };
    let scenarios = match loaded {
        Ok(s) if s.is_empty() => {
            eprintln!(
                "cafelog: error: no *.toml scenario in {}",
                args.path.display()
            );
            return ExitCode::from(2);
        }
        Ok(s) => s,
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            return ExitCode::from(2);
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut mismatched = Vec::new();
    let limit = Duration::from_secs_f64(args.timeout);
    for scenario in &scenarios {
        let spec = scenario.spec();
        let _ = writeln!(out, "== scenario {}", scenario.name);
        let outcome = match run_within(limit, move || run(&spec)) {
            Finished::Ran(outcome) => outcome,
            Finished::Panicked(panic) => std::panic::resume_unwind(panic),
            Finished::Hung => {
                let _ = writeln!(
                    out,
                    "scenario {}: MISMATCH: {}\n",
                    scenario.name,
                    deadline::hung_message(limit)
                );
                mismatched.push(scenario.name.clone());
                continue;
            }
        };
        if args.trace {
            for event in outcome.history.events() {
                let _ = writeln!(out, "{event}");
            }
        }
        let _ = super::replay::print_summary(&mut out, &outcome);
        let judgement = scenario.judge(&outcome);
        if judgement.ok() {
            let _ = writeln!(out, "scenario {}: as expected", scenario.name);
        } else {
            for problem in &judgement.problems {
                let _ = writeln!(out, "scenario {}: MISMATCH: {problem}", scenario.name);
            }
            mismatched.push(scenario.name.clone());
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "{} scenarios, {} as expected, {} mismatched{}",
        scenarios.len(),
        scenarios.len() - mismatched.len(),
        mismatched.len(),
        if mismatched.is_empty() {
            String::new()
        } else {
            format!(": {}", mismatched.join(", "))
        }
    );
    let _ = out.flush();
    if mismatched.is_empty() {
        ExitCode::from(0)
    } else {
        ExitCode::from(1)
    }
}
