//! `cafelog`: the command users run.

use clap::Parser;

/// Deterministic crash-simulation testing for a segmented log storage engine.
#[derive(Parser, Debug)]
#[command(name = "cafelog", version, about)]
enum Command {}

fn main() {
    let command = Command::parse();
    match command {}
}
