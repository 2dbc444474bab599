//! Seeds per second for one profile, as `cafelog sweep` runs them (same allocator).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunSpec, run};
#[allow(
    clippy::disallowed_methods,
    reason = "the host's wall time around whole runs"
)]
fn main() {
    let name = std::env::args().nth(1).unwrap_or("default".into());
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let p = Profile::by_name(&name).unwrap();
    let t = std::time::Instant::now();
    let mut sim = 0;
    let mut fails = 0;
    for seed in 0..n {
        let o = run(&RunSpec::from_seed(seed, &p));
        sim += o.sim_ms;
        if o.verdict.exit_code() != 0 {
            fails += 1;
            println!(
                "seed {seed}: {}",
                o.verdict.to_string().chars().take(250).collect::<String>()
            );
        }
    }
    let wall = t.elapsed().as_secs_f64();
    println!(
        "{n} seeds in {wall:.2}s: {:.1} seeds/s, {:.0}x sim/wall, {fails} failures",
        n as f64 / wall,
        sim as f64 / 1000.0 / wall
    );
}
