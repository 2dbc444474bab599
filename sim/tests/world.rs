//! The world end to end: seeds run to a verdict, deterministically.

use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunSpec, run};

#[test]
fn quick_seeds_pass_and_replay_to_the_same_trace_hash() {
    let profile = Profile::quick();
    for seed in 0..12u64 {
        let spec = RunSpec::from_seed(seed, &profile);
        let a = run(&spec);
        println!(
            "seed {seed}: {} sim_ms={} events={} paths={:?} faults={:?}",
            a.verdict,
            a.sim_ms,
            a.history.len(),
            a.paths,
            a.faults
        );
        let b = run(&spec);
        assert_eq!(
            a.trace_hash, b.trace_hash,
            "seed {seed} is not deterministic"
        );
        assert!(a.history.len() > 10, "seed {seed} did nothing");
    }
}

#[test]
fn the_wal_segment_size_is_a_draw_of_its_own_that_without_leaves_out() {
    let profile = Profile::by_name("quick").unwrap();
    let default = cafelog_sim::world::workload::default_wal_segment_bytes();
    let small = (0..200)
        .filter(|&seed| {
            RunSpec::from_seed(seed, &profile)
                .workload
                .wal_segment_bytes
                < default
        })
        .count();
    assert!(
        (60..=140).contains(&small),
        "{small} of 200 seeds roll the WAL"
    );
    for seed in 0..50 {
        let with = RunSpec::from_seed(seed, &profile);
        let without = RunSpec::from_seed_without(seed, &profile, &["wal_roll".into()]).unwrap();
        assert_eq!(without.workload.wal_segment_bytes, default);
        // Everything else is drawn as it was before the knob existed.
        let mut reset = with.workload.clone();
        reset.wal_segment_bytes = default;
        assert_eq!(reset, without.workload);
        assert_eq!(with.mix, without.mix);
    }
    // A run with small segments rolls and deletes WAL segments mid-run.
    let seed = (0..200)
        .find(|&seed| {
            RunSpec::from_seed(seed, &profile)
                .workload
                .wal_segment_bytes
                < 4_096
        })
        .expect("a seed with segments under 4 KiB");
    let outcome = run(&RunSpec::from_seed(seed, &profile));
    assert!(outcome.verdict.is_pass(), "{}", outcome.verdict);
    assert!(
        outcome.paths.wal_segments_deleted > 0,
        "{:?}",
        outcome.paths
    );
}
