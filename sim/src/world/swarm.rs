//! The swarm: crashes, bit flips, clock steps and latent sectors drawn from the run's
//! fault mix until the heal.
//!
//! Invariants:
//! - every injection point takes the next fault number, injected or not, and the
//!   supervisor's own dice are drawn the same either way: number `k` is the same draw
//!   (kind, gap after the fault before it, clock step) in every cut a shrink makes
//!   with [`FaultMix::only`](crate::swarm::FaultMix). Its time moves by what the cut
//!   faults took to inject, and what it strikes is the world's as it is then;
//! - with `only` unset every drawn fault is injected, and the run is the one the seed
//!   has always made (trace hashes do not depend on the numbering).

use super::*;

/// The swarm's fault numbers, and which of them are injected.
struct Numbers<'a> {
    next: u32,
    only: Option<&'a [u32]>,
}

impl Numbers<'_> {
    /// Takes the next number: `Some` with it when its fault is to be injected.
    fn take(&mut self) -> Option<u32> {
        let n = self.next;
        self.next += 1;
        self.only.is_none_or(|only| only.contains(&n)).then_some(n)
    }
}

/// Records that fault `n` was injected (a shrink cuts among these).
fn injected(world: &World, n: u32) {
    world.recorder.lock().swarm_faults.push(n);
}

/// Crashes, flips and clock steps drawn from the fault mix, until the heal.
pub(super) async fn run_swarm(world: &Arc<World>, node: madsim::task::NodeId) {
    let profile = &world.spec.profile;
    let mix = &world.spec.mix;
    let mut dice = Dice::new(sub_seed(world.spec.seed, 4));
    // A stream of its own, so that runs without process crashes draw as before.
    let mut kinds = Dice::new(sub_seed(world.spec.seed, 5));
    let mut numbers = Numbers {
        next: 0,
        only: mix.only.as_deref(),
    };
    // Drawn faults, injected or not: the caps count draws, so a cut moves no later draw.
    let mut crashes = 0u32;
    let mut flips = 0u32;
    let mut steps = 0u32;
    let mut latents = 0u32;
    let mut latent_dice = Dice::new(sub_seed(world.spec.seed, 7));
    let mut next_flip_ms = next_exp(&mut dice, mix.bit_flips_per_s);
    loop {
        let now = now_ms(world);
        if now >= profile.heal_ms {
            break;
        }
        let gap = mix
            .crash_mean_gap_ms
            .filter(|_| crashes < mix.crashes_max)
            .map_or(profile.heal_ms - now, |mean| exp_ms(&mut dice, mean).max(1));
        let wake = (now + gap)
            .min(profile.heal_ms)
            .min(next_flip_ms.unwrap_or(u64::MAX));
        sleep_serving(world, node, wake.saturating_sub(now).max(1)).await;
        let step = Step::begin(world);
        let now = now_ms(world);
        if now >= profile.heal_ms {
            break;
        }
        if next_flip_ms.is_some_and(|at| now >= at) {
            if flips < mix.bit_flips_max {
                let file = draw_flip_file(&mut dice);
                flips += u32::from(try_flip(world, &mut numbers, file, true).await);
            }
            next_flip_ms = next_exp(&mut dice, mix.bit_flips_per_s).map(|d| now + d);
            step.end(world, false);
            continue;
        }
        if mix.crash_mean_gap_ms.is_none() || crashes >= mix.crashes_max {
            step.end(world, false);
            continue;
        }
        let aimed = dice.chance(mix.crash_after_commit_fraction);
        let cause = if aimed {
            KillCause::AfterAck
        } else {
            KillCause::Injected
        };
        let kind = if mix.process_crash_fraction > 0.0 && kinds.chance(mix.process_crash_fraction) {
            Kill::Process
        } else {
            Kill::PowerLoss
        };
        let killed = numbers.take();
        if aimed {
            // The window between a commit and the next HWM persist: crash right after
            // the next acknowledgement (waited for even when the kill is cut, so that
            // later draws come at the same times).
            wait_for_next_ack(world).await;
            if killed.is_some() {
                world.recorder.lock().paths.crashes_after_commit += 1;
            }
        }
        if let Some(n) = killed {
            kill(world, node, kind, cause).await;
            injected(world, n);
        }
        // What the kill brings, while the node is down: numbered even when the kill was
        // not injected, and then not injected either.
        if flips < mix.bit_flips_max && dice.chance(0.5) {
            let file = draw_flip_file(&mut dice);
            flips += u32::from(try_flip(world, &mut numbers, file, killed.is_some()).await);
        }
        // From a stream of its own, so that runs without latent sectors draw as before.
        if kind == Kill::PowerLoss
            && latents < mix.latent_sectors_max
            && latent_dice.chance(mix.latent_sector_probability)
        {
            let n = numbers.take().filter(|_| killed.is_some());
            match n {
                Some(n) => {
                    if latent::inject(world) {
                        latents += 1;
                        injected(world, n);
                    }
                }
                None => latents += 1,
            }
        }
        if steps < mix.clock_steps_max && dice.chance(mix.clock_step_probability) {
            let back = dice.range(1..=mix.clock_step_back_ms_max.max(1));
            if let Some(n) = numbers.take().filter(|_| killed.is_some()) {
                step_clock(world, back);
                injected(world, n);
            }
            steps += 1;
        }
        if killed.is_some() {
            restart(world, node);
        }
        crashes += 1;
        step.end(world, aimed);
    }
}

/// One wake of the supervisor, from its timer to its next sleep.
struct Step {
    woke_ns: u64,
    injected_before: usize,
}

impl Step {
    fn begin(world: &World) -> Step {
        let rec = world.recorder.lock();
        Step {
            woke_ns: rec.supervisor_woke_ns,
            injected_before: rec.swarm_faults.len(),
        }
    }

    /// Records the wake as idle when it injected nothing (`aimed`: it waited for an
    /// acknowledgement first).
    fn end(self, world: &World, aimed: bool) {
        let mut rec = world.recorder.lock();
        if rec.swarm_faults.len() == self.injected_before {
            rec.idle_wakes.push(IdleWake {
                woke_ns: self.woke_ns,
                aimed,
            });
        }
    }
}

/// A drawn flip: injected when its number is and `allowed`. Whether it counts as drawn
/// (a flip that found nothing to flip does not, as before numbers existed).
async fn try_flip(world: &World, numbers: &mut Numbers<'_>, file: FileKind, allowed: bool) -> bool {
    match numbers.take().filter(|_| allowed) {
        Some(n) => {
            let flipped = flip(world, file, None).await;
            if flipped {
                injected(world, n);
            }
            flipped
        }
        None => true,
    }
}
