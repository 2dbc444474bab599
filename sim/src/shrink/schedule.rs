//! The fault schedule of a shrink: the swarm's faults read back from a run's history
//! as an explicit schedule, and delta debugging over its entries.

use crate::history::{EventKind, FaultKind};
use crate::world::{Action, IdleWake, KillCause, RunOutcome, RunSpec, ScheduledFault, Trigger};

/// The swarm's injected faults as a schedule, in history order. A kill wakes at the
/// very nanosecond the swarm's supervisor woke for it ([`RunOutcome::kills`]), so the
/// scheduler picks among the same ready tasks; an aimed one then waits for the next
/// acknowledgement as the swarm's did (`next_ack_after_ns`). A restart the engine asked
/// for (after a fatal I/O error) is left out, since the engine asks again. Without
/// those times (an outcome from elsewhere), a crash right after a produce
/// acknowledgement (the swarm's aimed crashes) becomes an `after_acks` trigger and
/// everything else fires at its simulated ms. A bit flip hits the very bit the swarm's
/// did ([`RunOutcome::flips`]): one while the node ran wakes as the swarm did. A flip,
/// latent sector or clock step while the node was down joins that kill (folded into a
/// bare one, else `while_down` after it). With `fsync_faults`, fsync EIO and lost
/// fsyncs are armed 1 ms before they fired.
pub fn schedule_from_history(outcome: &RunOutcome, fsync_faults: bool) -> Vec<ScheduledFault> {
    let mut out: Vec<ScheduledFault> = Vec::new();
    let mut acks = 0u64;
    let mut down = false;
    let mut previous_was_ack = false;
    let mut kills = outcome.kills.iter();
    let mut flips = outcome.flips.iter();
    // Whether the kill the node is down from has an entry (a restart the engine asked
    // for has none).
    let mut kept = false;
    for event in outcome.history.events() {
        let mut is_ack = false;
        match &event.kind {
            EventKind::ProduceAck { .. } => {
                acks += 1;
                is_ack = true;
            }
            EventKind::Crash { .. } => down = true,
            EventKind::Restart => down = false,
            EventKind::Fault { kind, .. } => match kind {
                FaultKind::Crash | FaultKind::ProcessCrash => {
                    kept = false;
                    let trigger = match kills.next().map(|k| (k.cause, k.woke_ns)) {
                        Some((KillCause::Requested, _)) => continue,
                        Some((KillCause::Injected, ns)) => Trigger::AtNs(ns),
                        Some((KillCause::AfterAck, ns)) => Trigger::NextAckAfterNs(ns),
                        None if previous_was_ack => Trigger::AfterAcks(acks),
                        None => Trigger::AtMs(event.at_ms),
                    };
                    kept = true;
                    out.push(ScheduledFault {
                        trigger,
                        action: if matches!(kind, FaultKind::Crash) {
                            Action::Crash
                        } else {
                            Action::ProcessCrash
                        },
                    });
                }
                FaultKind::BitFlip { file, .. } => {
                    let (at_ns, at) = flips.next().cloned().unzip();
                    let file = *file;
                    let payload = Action::BitFlip {
                        file,
                        at: at.clone(),
                    };
                    let folded = |kill: &Action| match kill {
                        Action::Crash => Some(Action::CrashWithBitFlip {
                            file,
                            at: at.clone(),
                        }),
                        Action::ProcessCrash => Some(Action::ProcessCrashWithBitFlip {
                            file,
                            at: at.clone(),
                        }),
                        _ => None,
                    };
                    // While the node runs: exactly when it came, or (without the time)
                    // as a crash with a flip at its ms.
                    let running = match at_ns {
                        Some(ns) => ScheduledFault {
                            trigger: Trigger::AtNs(ns),
                            action: payload.clone(),
                        },
                        None => ScheduledFault {
                            trigger: Trigger::AtMs(event.at_ms),
                            action: Action::CrashWithBitFlip {
                                file,
                                at: at.clone(),
                            },
                        },
                    };
                    companion(&mut out, down && kept, &folded, payload, running);
                }
                FaultKind::LatentSector { .. } => {
                    let folded = |kill: &Action| {
                        (*kill == Action::Crash).then_some(Action::CrashWithLatentSector)
                    };
                    let running = ScheduledFault {
                        trigger: Trigger::AtMs(event.at_ms),
                        action: Action::CrashWithLatentSector,
                    };
                    companion(
                        &mut out,
                        down && kept,
                        &folded,
                        Action::LatentSector,
                        running,
                    );
                }
                FaultKind::ClockStep { back_ms } => {
                    let ms = *back_ms;
                    let folded = |kill: &Action| {
                        (*kill == Action::Crash).then_some(Action::CrashWithClockStep { ms })
                    };
                    let running = ScheduledFault {
                        trigger: Trigger::AtMs(event.at_ms),
                        action: Action::CrashWithClockStep { ms },
                    };
                    companion(
                        &mut out,
                        down && kept,
                        &folded,
                        Action::ClockStep { ms },
                        running,
                    );
                }
                FaultKind::FsyncEio { .. } | FaultKind::LostFsync { .. } if fsync_faults => {
                    // Aimed at the file it struck, so cutting other writers of the
                    // disk does not move it.
                    let path = match &event.kind {
                        EventKind::Fault { path, .. } => path.clone(),
                        _ => None,
                    };
                    out.push(ScheduledFault {
                        trigger: Trigger::AtMs(event.at_ms.saturating_sub(1)),
                        action: if matches!(kind, FaultKind::FsyncEio { .. }) {
                            Action::FsyncEio { path }
                        } else {
                            Action::LostFsync { path }
                        },
                    });
                }
                _ => {}
            },
            _ => {}
        }
        previous_was_ack = is_ack;
    }
    with_idle_wakes(out, &outcome.idle_wakes)
}

/// `schedule` with the swarm's idle wakes woven in by time, each before the first
/// timed entry that comes after it: a wake that injected nothing moves the scheduler's
/// draws as much as one that did.
fn with_idle_wakes(schedule: Vec<ScheduledFault>, idle: &[IdleWake]) -> Vec<ScheduledFault> {
    let wake = |w: &IdleWake| ScheduledFault {
        trigger: if w.aimed {
            Trigger::NextAckAfterNs(w.woke_ns)
        } else {
            Trigger::AtNs(w.woke_ns)
        },
        action: Action::Wake,
    };
    let mut idle = idle.iter().peekable();
    let mut out = Vec::with_capacity(schedule.len() + idle.len());
    for entry in schedule {
        let at_ns = match entry.trigger {
            Trigger::AtNs(ns) | Trigger::NextAckAfterNs(ns) => Some(ns),
            Trigger::AtMs(ms) => Some(ms.saturating_mul(1_000_000)),
            Trigger::WhileDown | Trigger::AfterAcks(_) | Trigger::AfterAlarm { .. } => None,
        };
        if let Some(at_ns) = at_ns {
            while let Some(w) = idle.next_if(|w| w.woke_ns < at_ns) {
                out.push(wake(w));
            }
        }
        out.push(entry);
    }
    out.extend(idle.map(wake));
    out
}

/// Adds a fault the swarm made while the node was down from the kill `out` ends with
/// (`down`), or while it ran: folded into a bare kill when an action holds both
/// (`folded`), else right after the kill (`while_down`), else `running`.
fn companion(
    out: &mut Vec<ScheduledFault>,
    down: bool,
    folded: &dyn Fn(&Action) -> Option<Action>,
    payload: Action,
    running: ScheduledFault,
) {
    if !down {
        out.push(running);
        return;
    }
    match out.last_mut() {
        Some(last) if last.trigger != Trigger::WhileDown => {
            if let Some(both) = folded(&last.action) {
                last.action = both;
                return;
            }
        }
        _ => {}
    }
    out.push(ScheduledFault {
        trigger: Trigger::WhileDown,
        action: payload,
    });
}

/// Explicit-schedule versions of a swarm run, most faithful first.
pub(super) fn explicit_variants(spec: &RunSpec, outcome: &RunOutcome) -> Vec<(String, RunSpec)> {
    let mut with_fsync = spec.clone();
    with_fsync.schedule = Some(schedule_from_history(outcome, true));
    // The scheduled fsync faults replace the disk's random ones.
    with_fsync.mix.fs.fsync_eio_probability = 0.0;
    with_fsync.mix.fs.fsync_eio_max = 0;
    with_fsync.mix.fs.lost_fsync_probability = 0.0;
    with_fsync.mix.fs.lost_fsync_max = 0;
    let mut disk_kept = spec.clone();
    disk_kept.schedule = Some(schedule_from_history(outcome, false));
    vec![
        ("fsync faults scheduled".into(), with_fsync),
        ("disk fault dice kept".into(), disk_kept),
    ]
}

/// Delta debugging (Zeller and Hildebrandt's ddmin): a smallest subsequence of `items`
/// for which `fails` holds, found by trying chunks and their complements at doubling
/// granularity, so `n` entries needing one of them cost about `2 log2 n` runs instead
/// of `n`. `fails` answers `None` when the shrink's budget is spent; the smallest
/// sequence found so far is then returned. `items` itself is taken to fail.
pub fn ddmin<T: Clone>(items: &[T], fails: &mut dyn FnMut(&[T]) -> Option<bool>) -> Vec<T> {
    let mut current = items.to_vec();
    if current.is_empty() {
        return current;
    }
    match fails(&[]) {
        Some(true) => return Vec::new(),
        None => return current,
        Some(false) => {}
    }
    let mut n = 2usize;
    while current.len() >= 2 {
        let chunks = split(&current, n);
        let mut reduced = None;
        // A chunk alone, then everything but one chunk (for n = 2 they are the same).
        let complements = (n > 2).then(|| (0..chunks.len()).map(|i| complement(&chunks, i)));
        let tries = chunks
            .iter()
            .cloned()
            .map(|c| (c, 2))
            .chain(complements.into_iter().flatten().map(|c| (c, n - 1)));
        for (candidate, next_n) in tries {
            match fails(&candidate) {
                Some(true) => {
                    reduced = Some((candidate, next_n));
                    break;
                }
                Some(false) => {}
                None => return current,
            }
        }
        match reduced {
            Some((smaller, next_n)) => {
                current = smaller;
                n = next_n.max(2);
            }
            None if n >= current.len() => break,
            None => n = (2 * n).min(current.len()),
        }
    }
    current
}

/// `items` in `n` chunks of nearly equal length, in order.
fn split<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let n = n.min(items.len()).max(1);
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + (items.len() - start) / (n - i);
        out.push(items[start..end].to_vec());
        start = end;
    }
    out
}

/// Every chunk but the `skip`-th, joined in order.
fn complement<T: Clone>(chunks: &[Vec<T>], skip: usize) -> Vec<T> {
    chunks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != skip)
        .flat_map(|(_, c)| c.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs ddmin over 0..n with a failure that needs every number of `needed`.
    fn shrink_to(n: u32, needed: &[u32]) -> (Vec<u32>, usize) {
        let items: Vec<u32> = (0..n).collect();
        let mut runs = 0;
        let found = ddmin(&items, &mut |c| {
            runs += 1;
            Some(needed.iter().all(|x| c.contains(x)))
        });
        (found, runs)
    }

    /// Runs `spec`, then its explicit schedule (the disk's dice kept): how many of the
    /// seeds with an injected kill repeat event for event.
    fn repeats(spec: &RunSpec) -> Option<bool> {
        use crate::world::run;
        let swarm = run(spec);
        if !swarm.kills.iter().any(|k| k.cause != KillCause::Requested) {
            return None;
        }
        let mut explicit = spec.clone();
        explicit.schedule = Some(schedule_from_history(&swarm, false));
        let again = run(&explicit);
        Some(swarm.history.events() == again.history.events())
    }

    #[test]
    fn an_explicit_schedule_repeats_the_swarm_event_for_event() {
        use crate::profile::Profile;
        let quick = Profile::quick();
        let (mut tried, mut repeated) = (0, 0);
        for seed in 0..40 {
            if let Some(same) = repeats(&RunSpec::from_seed(seed, &quick)) {
                tried += 1;
                repeated += usize::from(same);
                assert!(same, "quick seed {seed} parts from its explicit schedule");
            }
        }
        assert!(tried >= 25, "{tried} seeds with a kill");
        // A swarm cut by number wakes where its cut faults were, and repeats too.
        let mut cut = 0;
        for seed in 0..40 {
            let mut spec = RunSpec::from_seed(seed, &quick);
            let injected = crate::world::run(&spec).swarm_faults;
            if injected.len() < 4 {
                continue;
            }
            spec.mix.only = Some(injected.iter().copied().step_by(2).collect());
            if let Some(same) = repeats(&spec) {
                assert!(same, "quick seed {seed}, every other fault, parts");
                cut += 1;
            }
        }
        assert!(cut >= 10 && repeated == tried, "{cut} cut seeds");
    }

    #[test]
    fn one_needed_entry_of_many_is_found_in_logarithmic_runs() {
        let (found, runs) = shrink_to(64, &[37]);
        assert_eq!(found, [37]);
        assert!(runs <= 2 * 6 + 2, "{runs} runs");
    }

    #[test]
    fn entries_needed_together_are_all_kept_and_nothing_else() {
        assert_eq!(shrink_to(20, &[3, 17]).0, [3, 17]);
        assert_eq!(shrink_to(9, &[0, 4, 8]).0, [0, 4, 8]);
        assert_eq!(shrink_to(5, &[]).0, Vec::<u32>::new());
        assert_eq!(shrink_to(1, &[0]).0, [0]);
    }

    #[test]
    fn a_spent_budget_returns_the_smallest_found_so_far() {
        let items: Vec<u32> = (0..16).collect();
        let mut runs = 0;
        let found = ddmin(&items, &mut |c| {
            runs += 1;
            (runs <= 3).then(|| c.contains(&5))
        });
        assert!(found.contains(&5) && found.len() < 16, "{found:?}");
    }
}
