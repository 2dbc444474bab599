//! How many swarm runs their explicit schedule repeats: for each seed with a kill the
//! swarm injected, the run of `schedule_from_history` (the disk's dice kept) against
//! the swarm's, event for event up to the swarm's last fault, and whole.
//!
//! `cargo run --release -p cafelog-sim --example repeat -- [PROFILE] [SEEDS]`
//! (default quick 0..300). Prints the seeds that part, and where.

use cafelog_sim::history::{EventKind, FaultKind};
use cafelog_sim::profile::Profile;
use cafelog_sim::shrink::schedule_from_history;
use cafelog_sim::world::{KillCause, RunSpec, run};

fn main() {
    let profile = std::env::args().nth(1).unwrap_or("quick".into());
    let seeds = std::env::args().nth(2).unwrap_or("0..300".into());
    let (a, b) = seeds.split_once("..").expect("seeds as A..B");
    let (a, b): (u64, u64) = (a.parse().expect("A"), b.parse().expect("B"));
    let p = Profile::by_name(&profile).expect("a profile");
    let (mut with_kill, mut to_last_fault, mut whole) = (0, 0, 0);
    for seed in a..b {
        let spec = RunSpec::from_seed(seed, &p);
        let swarm = run(&spec);
        if !swarm.kills.iter().any(|k| k.cause != KillCause::Requested) {
            continue;
        }
        with_kill += 1;
        let mut explicit = spec.clone();
        explicit.schedule = Some(schedule_from_history(&swarm, false));
        let again = run(&explicit);
        let (x, y) = (swarm.history.events(), again.history.events());
        let last_fault = x
            .iter()
            .rposition(|e| {
                matches!(
                    e.kind,
                    EventKind::Fault {
                        kind: FaultKind::Crash
                            | FaultKind::ProcessCrash
                            | FaultKind::BitFlip { .. }
                            | FaultKind::LatentSector { .. }
                            | FaultKind::ClockStep { .. },
                        ..
                    }
                )
            })
            .expect("a kill is a fault");
        let parts = x.iter().zip(y).position(|(e, f)| e != f);
        match parts {
            Some(i) if i <= last_fault => {
                println!(
                    "seed {seed}: parts at event {i} ({} ms) of {}",
                    x[i].at_ms,
                    x.len()
                );
                if b - a == 1 {
                    // One seed: show where.
                    for (name, h) in [("swarm", x), ("explicit", y)] {
                        for (j, e) in h.iter().enumerate().take(i + 3).skip(i.saturating_sub(5)) {
                            println!("  {name} #{j} {e:?}");
                        }
                    }
                    println!(
                        "  kills {:?}\n  schedule {:?}",
                        swarm.kills, explicit.schedule
                    );
                }
                continue;
            }
            _ => to_last_fault += 1,
        }
        whole += usize::from(parts.is_none() && x.len() == y.len());
    }
    println!(
        "{with_kill} seeds with an injected kill: {to_last_fault} repeat up to their last \
         fault, {whole} whole"
    );
}
