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
