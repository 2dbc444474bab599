//! The seed corpus file (`corpus/seeds.toml`): seeds worth replaying forever.
//! `append` is what `cafelog sweep --save-failures` calls.

use std::io::Write;
use std::path::Path;

/// Appends one `[[seed]]` entry, preserving the rest of the file.
pub fn append(
    path: &Path,
    seed: u64,
    profile: &str,
    why: &str,
    verdict: &str,
    checker: Option<&str>,
) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let expect = match checker {
        Some(c) => format!("{verdict}:{c}"),
        None => verdict.to_string(),
    };
    let why = why.replace('\\', "\\\\").replace('"', "\\\"");
    writeln!(
        file,
        "\n[[seed]]\nseed = {seed}\nprofile = \"{profile}\"\nexpect = \"{expect}\"\nwhy = \"{why}\""
    )
}
