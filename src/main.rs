//! `cafelog`: the command users run. Each subcommand lives in its own module under
//! `src/cli/`; add a variant to [`Command`] and a module to add a subcommand.

#![deny(clippy::unwrap_used)]

mod cli;

/// mimalloc: the simulator allocates per simulated operation, and glibc malloc was
/// ~12% of a seed's instructions (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Deterministic crash-simulation testing for a segmented log storage engine.
#[derive(Parser, Debug)]
#[command(name = "cafelog", version, about, after_help = cli::TOP_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Scan a partition directory as recovery would, and report what recovery would do.
    #[command(after_help = cli::EXIT_CODES_HELP)]
    Verify(cli::verify::Args),
    /// Print the records a consumer would see (offsets below the recovered HWM).
    #[command(after_help = cli::EXIT_CODES_HELP)]
    Dump(cli::dump::Args),
    /// Append JSON-line records from stdin to a partition through the real write path.
    #[command(after_help = cli::append::HELP)]
    Append(cli::append::Args),
    /// Run many simulation seeds in parallel; summarise verdicts, faults and paths.
    #[command(after_help = cli::sweep::EXIT_CODES_HELP)]
    Sweep(cli::sweep::Args),
    /// Merge the JSON files of several sweeps (e.g. shards) into one summary.
    Merge(cli::sweep::MergeArgs),
    /// Run one simulation seed exactly as a sweep did; print its trace and verdict.
    #[command(after_help = cli::replay::EXIT_CODES_HELP)]
    Replay(cli::replay::Args),
    /// Run scenario files (`scenarios/*.toml`) and compare each verdict with its file's.
    #[command(after_help = cli::scenario::EXIT_CODES_HELP)]
    Scenario(cli::scenario::Args),
    /// Shrink a failing seed into a small scenario file that fails the same checker.
    #[command(after_help = cli::shrink::EXIT_CODES_HELP)]
    Shrink(cli::shrink::Args),
    /// Report a mutation run of the engine (`ci/mutants`): caught, missed, by what.
    #[command(after_help = cli::mutants::EXIT_CODES_HELP)]
    Mutants(cli::mutants::Args),
}

fn main() -> ExitCode {
    // clap exits with status 2 on usage errors and 0 for --help/--version, which is the
    // contract `EXIT_CODES_HELP` documents.
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Verify(args) => cli::verify::run(&args),
        Command::Dump(args) => cli::dump::run(&args),
        Command::Replay(args) => return cli::replay::run_command(&args),
        Command::Sweep(args) => return cli::sweep::run_command(&args),
        Command::Append(args) => return cli::append::run(&args),
        Command::Merge(args) => return cli::sweep::merge_command(&args),
        Command::Scenario(args) => return cli::scenario::run_command(&args),
        Command::Shrink(args) => return cli::shrink::run_command(&args),
        Command::Mutants(args) => return cli::mutants::run_command(&args),
    };
    cli::finish(outcome)
}
