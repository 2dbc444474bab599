//! The seed corpus (`corpus/seeds.toml`): replays every entry, asserts its verdict and
//! that the paths it is kept for are still reached.

use cafelog_sim::corpus;
use cafelog_sim::profile::Profile;
use cafelog_sim::scenario::{Expect, judge};
use cafelog_sim::world::{RunSpec, run};
use std::path::Path;

#[test]
fn every_corpus_seed_ends_as_expected_and_reaches_its_paths() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/seeds.toml");
    let entries = corpus::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(entries.len() >= 8, "the corpus lost its entries");
    let mut problems = Vec::new();
    for entry in &entries {
        assert!(!entry.why.trim().is_empty(), "seed {}: say why", entry.seed);
        let profile = Profile::by_name(&entry.profile).unwrap_or_else(|e| panic!("{e}"));
        let spec = RunSpec::from_seed_without(entry.seed, &profile, &entry.without)
            .unwrap_or_else(|e| panic!("seed {}: {e}", entry.seed));
        let outcome = run(&spec);
        let without: String = entry
            .without
            .iter()
            .map(|k| format!(" --without {k}"))
            .collect();
        let expect = Expect {
            verdict: entry.expect,
            checker: entry.checker,
            reaches: entry.reaches.clone(),
            injects: Vec::new(),
        };
        for problem in judge(&expect, &outcome).problems {
            problems.push(format!(
                "seed {} ({}): {problem} [why: {}] (cafelog replay --seed {} --profile {}{without})",
                entry.seed, entry.profile, entry.why, entry.seed, entry.profile
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
