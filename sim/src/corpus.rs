//! The seed corpus (`corpus/seeds.toml`): seeds worth replaying forever, because they
//! once failed or because they reach a rare path. The `corpus` test binary replays
//! every entry; `cafelog sweep --save-failures` appends failing seeds with [`append`].
//!
//! Layout: one `[[seed]]` table per entry with `seed`, `profile`, `why` (a line for a
//! person), `expect` (the verdict kind, `pass` for a regression case that must pass
//! once fixed), optionally `checker` (for an expected failure), `reaches` (path
//! names the seed must keep reaching, so an entry cannot silently stop covering what
//! it is there for) and `without` (fault kinds the swarm gained after the entry was
//! recorded, turned off so the seed runs as it did then; `cafelog replay --without`).
//!
//! This module reads and writes a real file: it is tooling around the simulation, not
//! part of a simulated run.

use crate::check::CheckerName;
use crate::scenario::VerdictKind;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One corpus entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub seed: u64,
    pub profile: String,
    pub why: String,
    pub expect: VerdictKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checker: Option<CheckerName>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reaches: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub without: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    #[serde(default)]
    seed: Vec<Entry>,
}

/// Parses a corpus file's text.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let file: CorpusFile = toml::from_str(text).map_err(|e| e.to_string())?;
    Ok(file.seed)
}

/// Reads a corpus file.
#[allow(
    clippy::disallowed_methods,
    reason = "host I/O outside any run: the corpus file"
)]
pub fn load(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Appends a regression entry (`expect = "pass"`: the seed must pass once its bug is
/// fixed) for `seed` on `profile`, keeping the file's text, comments included, as it
/// is. Creates the file if missing. Returns `false`, changing nothing, when the
/// corpus already holds that seed on that profile.
#[allow(
    clippy::disallowed_methods,
    reason = "host I/O outside any run: the corpus file"
)]
pub fn append(
    path: &Path,
    seed: u64,
    profile: &str,
    without: &[String],
    why: &str,
) -> Result<bool, String> {
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    let entries = parse(&existing).map_err(|e| format!("{}: {e}", path.display()))?;
    if entries
        .iter()
        .any(|e| e.seed == seed && e.profile == profile)
    {
        return Ok(false);
    }
    let entry = Entry {
        seed,
        profile: profile.to_owned(),
        why: why.replace(['\n', '\r'], " "),
        expect: VerdictKind::Pass,
        checker: None,
        reaches: Vec::new(),
        without: without.to_vec(),
    };
    #[derive(Serialize)]
    struct One<'a> {
        seed: [&'a Entry; 1],
    }
    let table = toml::to_string(&One { seed: [&entry] }).map_err(|e| e.to_string())?;
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&table);
    // The result must still parse, with exactly one entry more.
    let after = parse(&text).map_err(|e| format!("appending broke the corpus: {e}"))?;
    assert_eq!(after.len(), entries.len() + 1, "append adds one entry");
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, &text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(true)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "host I/O: a temporary corpus file"
)]
mod tests {
    use super::*;

    #[test]
    fn append_keeps_the_file_and_skips_known_seeds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("seeds.toml");
        let head = "# The corpus.\n\n[[seed]]\nseed = 1\nprofile = \"quick\"\nwhy = \"R1\"\n\
                    expect = \"pass\"\nreaches = [\"torn_tails_truncated_r1\"]\n";
        std::fs::write(&path, head).expect("write");
        let without = vec!["cancel".to_owned()];
        assert_eq!(
            append(&path, 7, "default", &[], "failed no_lost_ack\nin a sweep"),
            Ok(true)
        );
        assert_eq!(append(&path, 7, "default", &[], "again"), Ok(false));
        assert_eq!(
            append(&path, 7, "quick", &without, "other profile"),
            Ok(true)
        );
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with(head), "{text}");
        let entries = load(&path).expect("parses");
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].seed, 7);
        assert_eq!(entries[1].why, "failed no_lost_ack in a sweep");
        assert_eq!(entries[1].expect, VerdictKind::Pass);
        assert!(entries[1].without.is_empty());
        assert_eq!(entries[2].without, without, "a sweep's --without is kept");
        let fresh = dir.path().join("new.toml");
        assert_eq!(append(&fresh, 3, "quick", &[], "first"), Ok(true));
        assert_eq!(load(&fresh).expect("parses").len(), 1);
    }
}
