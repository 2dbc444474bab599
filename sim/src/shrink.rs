//! Shrinking: from a failing run, find a much smaller one that still fails the same
//! way, and hand it back as a [`RunSpec`] a scenario file can hold.
//!
//! 1. The swarm's random crashes, bit flips, clock steps and fsync faults are read back
//!    from the history and written as an explicit schedule ([`schedule_from_history`]);
//!    the first variant that still fails the same way replaces the swarm. If none does,
//!    the swarm faults stay and only the workload and profile shrink.
//! 2. Greedy: try each smaller candidate (drop a schedule entry, a producer, a consumer,
//!    a topic or a partition; halve `records_max` or the durations; switch a disk fault
//!    off) and keep the first that still fails the same way; then start over from it.
//!    Stop when no candidate is kept.
//!
//! Bound: at most `attempts_max` runs in all (each candidate is one run), so a shrink
//! takes at most `attempts_max` times one run's cost.

use crate::check::{CheckerName, Verdict};
use crate::history::{EventKind, FaultKind};
use crate::scenario::VerdictKind;
use crate::world::{Action, RunOutcome, RunSpec, ScheduledFault, Trigger, run};

/// The failure a shrink must preserve: the verdict kind and the checker it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub verdict: VerdictKind,
    pub checker: Option<CheckerName>,
}

impl Target {
    pub fn of(verdict: &Verdict) -> Target {
        Target {
            verdict: VerdictKind::of(verdict),
            checker: verdict.failure().map(|f| f.checker),
        }
    }

    pub fn matches(&self, outcome: &RunOutcome) -> bool {
        Target::of(&outcome.verdict) == *self
    }
}

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sizes {
    pub records_produced: u64,
    /// Explicit schedule entries, or for a swarm run the faults it drew (crashes,
    /// bit flips, clock steps, fsync faults).
    pub schedule_entries: usize,
    pub events: usize,
    pub sim_ms: u64,
}

impl Sizes {
    pub fn of(spec: &RunSpec, outcome: &RunOutcome) -> Sizes {
        Sizes {
            records_produced: outcome.records_produced,
            schedule_entries: match &spec.schedule {
                Some(s) => s.len(),
                None => schedule_from_history(outcome, true).len(),
            },
            events: outcome.history.len(),
            sim_ms: outcome.sim_ms,
        }
    }
}

impl std::fmt::Display for Sizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "records produced={} schedule entries={} events={} sim_ms={}",
            self.records_produced, self.schedule_entries, self.events, self.sim_ms
        )
    }
}

/// What a shrink found.
#[derive(Debug)]
pub struct Shrunk {
    pub spec: RunSpec,
    pub outcome: RunOutcome,
    pub before: Sizes,
    pub after: Sizes,
    /// Runs spent, the first one included.
    pub attempts: usize,
    /// Whether the swarm faults could be replaced by an explicit schedule.
    pub explicit: bool,
    /// What happened, for the report and the scenario's header.
    pub notes: Vec<String>,
}

/// Shrinks `start` while `keep` holds. `progress` receives one line per kept step.
pub fn shrink(
    start: &RunSpec,
    keep: &dyn Fn(&RunOutcome) -> bool,
    attempts_max: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Shrunk, String> {
    let first = run(start);
    if !keep(&first) {
        return Err(format!(
            "seed {} does not fail as required (verdict: {})",
            start.seed, first.verdict
        ));
    }
    let before = Sizes::of(start, &first);
    progress(&format!("start: {before}"));
    let mut attempts = 1usize;
    let mut notes = Vec::new();
    let mut best = (start.clone(), first);
    let mut explicit = start.schedule.is_some();
    if !explicit {
        for (label, candidate) in explicit_variants(&best.0, &best.1) {
            if attempts >= attempts_max {
                break;
            }
            attempts += 1;
            let outcome = run(&candidate);
            if keep(&outcome) {
                progress(&format!(
                    "explicit schedule ({label}) reproduces the failure"
                ));
                notes.push(format!(
                    "the swarm's faults became an explicit schedule ({label})"
                ));
                best = (candidate, outcome);
                explicit = true;
                break;
            }
            progress(&format!(
                "explicit schedule ({label}) does not reproduce it"
            ));
        }
        if !explicit {
            notes.push(
                "no explicit schedule reproduced the failure: the swarm faults are kept and \
                 only the workload, profile and disk were shrunk"
                    .into(),
            );
        }
    }
    'passes: loop {
        for (label, candidate) in candidates(&best.0) {
            if attempts >= attempts_max {
                notes.push(format!("stopped at the bound of {attempts_max} runs"));
                break 'passes;
            }
            attempts += 1;
            let outcome = run(&candidate);
            if keep(&outcome) {
                progress(&format!(
                    "[{attempts}/{attempts_max}] kept: {label} ({})",
                    Sizes::of(&candidate, &outcome)
                ));
                best = (candidate, outcome);
                // The other candidates were cut from the old best: start over.
                continue 'passes;
            }
        }
        break;
    }
    let after = Sizes::of(&best.0, &best.1);
    progress(&format!("end after {attempts} runs: {after}"));
    Ok(Shrunk {
        spec: best.0,
        outcome: best.1,
        before,
        after,
        attempts,
        explicit,
        notes,
    })
}

/// The swarm's injected faults as a schedule, in history order. A crash that came
/// right after a produce acknowledgement (the swarm's aimed crashes) becomes an
/// `after_acks` trigger; everything else fires at its simulated time. A bit flip or
/// clock step while the node was down joins that crash; a flip while it ran becomes a
/// crash with a flip (the schedule cannot flip a running node's disk). With
/// `fsync_faults`, fsync EIO and lost fsyncs are armed 1 ms before they fired.
pub fn schedule_from_history(outcome: &RunOutcome, fsync_faults: bool) -> Vec<ScheduledFault> {
    let mut out: Vec<ScheduledFault> = Vec::new();
    let mut acks = 0u64;
    let mut down = false;
    let mut previous_was_ack = false;
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
                FaultKind::Crash | FaultKind::ProcessCrash => out.push(ScheduledFault {
                    trigger: if previous_was_ack {
                        Trigger::AfterAcks(acks)
                    } else {
                        Trigger::AtMs(event.at_ms)
                    },
                    action: if matches!(kind, FaultKind::Crash) {
                        Action::Crash
                    } else {
                        Action::ProcessCrash
                    },
                }),
                FaultKind::BitFlip { file, .. } => {
                    let flip = Action::CrashWithBitFlip { file: *file };
                    match out.last_mut() {
                        Some(last) if down && last.action == Action::Crash => last.action = flip,
                        _ => out.push(ScheduledFault {
                            trigger: Trigger::AtMs(event.at_ms),
                            action: flip,
                        }),
                    }
                }
                FaultKind::LatentSector { .. } => {
                    let latent = Action::CrashWithLatentSector;
                    match out.last_mut() {
                        Some(last) if down && last.action == Action::Crash => last.action = latent,
                        _ => out.push(ScheduledFault {
                            trigger: Trigger::AtMs(event.at_ms),
                            action: latent,
                        }),
                    }
                }
                FaultKind::ClockStep { back_ms } => {
                    let step = Action::CrashWithClockStep { ms: *back_ms };
                    match out.last_mut() {
                        Some(last) if down && last.action == Action::Crash => last.action = step,
                        _ => out.push(ScheduledFault {
                            trigger: Trigger::AtMs(event.at_ms),
                            action: step,
                        }),
                    }
                }
                FaultKind::FsyncEio { .. } | FaultKind::LostFsync { .. } if fsync_faults => {
                    out.push(ScheduledFault {
                        trigger: Trigger::AtMs(event.at_ms.saturating_sub(1)),
                        action: if matches!(kind, FaultKind::FsyncEio { .. }) {
                            Action::FsyncEio
                        } else {
                            Action::LostFsync
                        },
                    });
                }
                _ => {}
            },
            _ => {}
        }
        previous_was_ack = is_ack;
    }
    out
}

/// Explicit-schedule versions of a swarm run, most faithful first.
fn explicit_variants(spec: &RunSpec, outcome: &RunOutcome) -> Vec<(String, RunSpec)> {
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

/// Turns one disk fault off.
type SwitchOff = fn(&mut crate::fs::FaultOptions);

/// Every one-step-smaller version of `spec`, the biggest cuts first.
fn candidates(spec: &RunSpec) -> Vec<(String, RunSpec)> {
    let mut out: Vec<(String, RunSpec)> = Vec::new();
    let mut push = |label: String, f: &dyn Fn(&mut RunSpec)| {
        let mut c = spec.clone();
        f(&mut c);
        if c.schedule != spec.schedule
            || c.workload != spec.workload
            || c.mix != spec.mix
            || c.profile != spec.profile
        {
            out.push((label, c));
        }
    };
    if let Some(schedule) = &spec.schedule {
        let n = schedule.len();
        if n > 1 {
            push("drop the second half of the schedule".into(), &|c| {
                if let Some(s) = &mut c.schedule {
                    s.truncate(n / 2);
                }
            });
            push("drop the first half of the schedule".into(), &|c| {
                if let Some(s) = &mut c.schedule {
                    s.drain(..n / 2);
                }
            });
        }
        for i in (0..n).rev() {
            push(format!("drop schedule entry {i}"), &|c| {
                if let Some(s) = &mut c.schedule {
                    s.remove(i);
                }
            });
        }
    } else {
        let m = &spec.mix;
        push("halve crashes_max".into(), &|c| {
            c.mix.crashes_max = m.crashes_max / 2
        });
        push("no bit flips".into(), &|c| c.mix.bit_flips_max = 0);
        push("no clock steps".into(), &|c| c.mix.clock_steps_max = 0);
        push("no aimed crashes".into(), &|c| {
            c.mix.crash_after_commit_fraction = 0.0
        });
    }
    let w = &spec.workload;
    for t in (0..w.topics.len()).rev() {
        // A topic goes only if a producer is left elsewhere: without producers a run
        // cannot fail in any interesting way.
        if w.topics.len() > 1 && w.producers.iter().any(|p| p.topic != t) {
            push(format!("drop topic {}", w.topics[t].name), &|c| {
                drop_topic(c, t)
            });
        }
        if w.topics[t].config.partitions > 1 {
            push(
                format!("one partition fewer in {}", w.topics[t].name),
                &|c| {
                    let last = c.workload.topics[t].config.partitions - 1;
                    c.workload.topics[t].config.partitions = last;
                    c.workload
                        .consumers
                        .retain(|k| !(k.topic == t && k.partition == last));
                },
            );
        }
    }
    for i in (0..w.producers.len()).rev() {
        if w.producers.len() > 1 {
            push(format!("drop producer {i}"), &|c| {
                c.workload.producers.remove(i);
            });
        }
    }
    for i in (0..w.consumers.len()).rev() {
        push(format!("drop consumer {i}"), &|c| {
            c.workload.consumers.remove(i);
        });
    }
    let p = &spec.profile;
    if p.records_max > 10 {
        push(format!("records_max {}", p.records_max / 2), &|c| {
            c.profile.records_max = p.records_max / 2
        });
    }
    if p.produce_ms > 200 {
        push(format!("produce_ms {}", p.produce_ms / 2), &|c| {
            c.profile.produce_ms = p.produce_ms / 2
        });
    }
    if p.heal_ms > 200 {
        push(format!("heal_ms {}", p.heal_ms / 2), &|c| {
            c.profile.heal_ms = p.heal_ms / 2
        });
    }
    let fs = &spec.mix.fs;
    let disk: [(&str, bool, SwitchOff); 8] = [
        ("no fsync EIO", fs.fsync_eio_max > 0, |o| {
            o.fsync_eio_max = 0
        }),
        ("no lost fsync", fs.lost_fsync_max > 0, |o| {
            o.lost_fsync_max = 0
        }),
        ("no ENOSPC", fs.enospc_max > 0, |o| o.enospc_max = 0),
        ("no misdirected writes", fs.misdirect_max > 0, |o| {
            o.misdirect_max = 0
        }),
        ("no latency", fs.latency_probability > 0.0, |o| {
            o.latency_probability = 0.0;
            o.latency_after_probability = 0.0;
        }),
        ("no yields", fs.yield_probability > 0.0, |o| {
            o.yield_probability = 0.0
        }),
        (
            "no torn writes at crashes",
            fs.crash_write_torn_probability > 0.0,
            |o| o.crash_write_torn_probability = 0.0,
        ),
        (
            "no lost writes at crashes",
            fs.crash_write_lost_probability > 0.0,
            |o| o.crash_write_lost_probability = 0.0,
        ),
    ];
    for (label, on, off) in disk {
        if on {
            push(label.into(), &|c| off(&mut c.mix.fs));
        }
    }
    out
}

/// Removes topic `t` with its producers and consumers; later topics shift down.
fn drop_topic(spec: &mut RunSpec, t: usize) {
    let w = &mut spec.workload;
    w.topics.remove(t);
    w.producers.retain(|p| p.topic != t);
    w.consumers.retain(|c| c.topic != t);
    for p in &mut w.producers {
        if p.topic > t {
            p.topic -= 1;
        }
    }
    for c in &mut w.consumers {
        if c.topic > t {
            c.topic -= 1;
        }
    }
}
