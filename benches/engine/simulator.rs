//! The simulator section: seeds per second and simulated seconds per wall second.

use super::*;

impl Bench {
    /// The simulator's speed: seeds per second and simulated seconds per wall-clock
    /// second, on one thread and on every core, for the `quick` and `default` profiles.
    /// Each thread runs whole seeds (one madsim runtime each), as `cafelog sweep` does.
    pub(crate) fn simulator(&mut self) {
        use cafelog_sim::profile::Profile;
        use cafelog_sim::world::{RunSpec, run};
        section("Simulator speed (whole seeds, as cafelog sweep runs them)");
        header(&[
            "profile",
            "threads",
            "seeds",
            "seeds/s",
            "simulated s / wall s",
            "/ 2000x target",
        ]);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut failures = 0;
        for (name, seeds) in [
            ("quick", self.scale.sim_seeds[0]),
            ("default", self.scale.sim_seeds[1]),
        ] {
            let profile = Profile::by_name(name).expect("a built-in profile");
            for threads in [1, cores] {
                let next = std::sync::atomic::AtomicU64::new(0);
                let sim_ms = std::sync::atomic::AtomicU64::new(0);
                let failed = std::sync::atomic::AtomicU64::new(0);
                let t = Instant::now();
                std::thread::scope(|scope| {
                    for _ in 0..threads {
                        scope.spawn(|| {
                            loop {
                                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                if seed >= seeds {
                                    break;
                                }
                                let spec = RunSpec::from_seed(seed, &profile);
                                // A thread per seed, as the sweep does: madsim's runtime
                                // and its thread-locals start fresh each time.
                                let outcome = std::thread::spawn(move || run(&spec))
                                    .join()
                                    .expect("a seed's run panicked");
                                sim_ms.fetch_add(
                                    outcome.sim_ms,
                                    std::sync::atomic::Ordering::Relaxed,
                                );
                                if outcome.verdict.exit_code() != 0 {
                                    failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                            }
                        });
                    }
                });
                let wall = secs(t.elapsed());
                let speed = sim_ms.into_inner() as f64 / 1000.0 / wall;
                failures += failed.into_inner();
                row(&[
                    name.into(),
                    threads.to_string(),
                    seeds.to_string(),
                    format!("{:.1}", seeds as f64 / wall),
                    format!("{speed:.0}x"),
                    ratio(speed, 2000.0),
                ]);
            }
        }
        println!(
            "  target: default profile >= 2000 simulated s per wall s (TigerBeetle's VOPR reports ~700x)"
        );
        if failures > 0 {
            println!("  {failures} seed(s) did not pass: `cafelog sweep` names them");
        }
    }
}
