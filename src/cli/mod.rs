//! The subcommands and what they share: the exit-code contract and the typed error
//! that maps onto it.
//!
//! Exit codes (the same for every inspection command):
//! - 0: recovery would open the partition (possibly after a truncation, R1/R2);
//! - 1: recovery would refuse to open it (R3 corruption or a malformed `hwm` file);
//! - 2: usage error, or an I/O error that stopped the command (missing directory, ...).

pub mod append;
pub use cafelog_sim::deadline;
pub mod dump;
pub mod mutants;
mod partition;
pub mod replay;
pub mod scenario;
pub mod shrink;
pub mod sweep;
pub mod verify;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

/// Appended to the top-level `--help`: an index, each subcommand carries its own codes.
pub const TOP_HELP: &str = "\
Start with `cafelog sweep` (many seeds) and `cafelog replay --seed S` (one, exactly).
Each subcommand's --help lists its own exit codes; a usage error exits 2 everywhere.";

/// Appended to `verify --help` and `dump --help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  recovery would open the partition (possibly after truncating a torn tail, R1/R2)
  1  recovery would refuse to open it (R3: corruption below the persisted HWM, or a
     malformed hwm file); the reason, with file and byte position, goes to stderr
  2  usage error, or an I/O error (e.g. the directory does not exist)

The command only reads the partition directory; it never changes it.";

/// What a command concluded about the partition, when it ran to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Recovery would open the partition.
    Opens,
    /// Recovery would refuse (R3).
    Refuses,
}

/// Why a command could not run to its end.
#[derive(Debug)]
#[non_exhaustive]
pub enum CliError {
    /// An I/O error on a file of the partition.
    Io { path: PathBuf, source: io::Error },
    /// Writing the output failed (other than the reader closing the pipe).
    Output { source: io::Error },
    /// The output could not be serialised.
    Json { source: serde_json::Error },
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            CliError::Output { source } => write!(f, "writing output: {source}"),
            CliError::Json { source } => write!(f, "encoding JSON: {source}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<serde_json::Error> for CliError {
    fn from(source: serde_json::Error) -> Self {
        // serde_json reports write failures as io errors of its own; keep them as output
        // errors so a closed pipe is still recognised.
        match source.io_error_kind() {
            Some(kind) => CliError::Output {
                source: io::Error::new(kind, source),
            },
            None => CliError::Json { source },
        }
    }
}

impl CliError {
    /// The reader of our output went away (`cafelog dump | head`): not an error worth a
    /// message, the output simply stops.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output { source } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// Wraps output write errors.
pub fn output_error(source: io::Error) -> CliError {
    CliError::Output { source }
}

/// Maps a command's outcome onto the exit-code contract.
pub fn finish(outcome: Result<Verdict, CliError>) -> ExitCode {
    match outcome {
        Ok(Verdict::Opens) => ExitCode::from(0),
        Ok(Verdict::Refuses) => ExitCode::from(1),
        // Nobody is reading any more; the partition was not judged, but nothing failed
        // either that the (absent) reader could act on.
        Err(e) if e.is_broken_pipe() => ExitCode::from(0),
        Err(e) => {
            eprintln!("cafelog: error: {e}");
            ExitCode::from(2)
        }
    }
}
