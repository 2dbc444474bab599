//! Kills aimed at what they followed: a timed kill of an explicit schedule turned into
//! one that fires right after a produce acknowledgement or an engine alarm, so that a
//! cut which moves every time after it (a topic nobody produces to, a consumer) can be
//! tried again without moving the kill against the engine's progress.

use crate::history::{EventKind, FaultKind};
use crate::world::{Action, KillCause, RunOutcome, ScheduledFault, Trigger};

/// `schedule` (which ran as `outcome`) with each kill that fires at a time aimed
/// instead right after the produce acknowledgement it came after: the count of
/// acknowledged ids when it fired. A time is the run's own; an acknowledgement count
/// stays put when a cut (a topic nobody produces to, a consumer) moves every time
/// after it. `None` when no kill fired after an acknowledgement, or the run's kills do
/// not match the schedule's (one never fired).
pub(super) fn aimed_at_acks(
    schedule: &[ScheduledFault],
    outcome: &RunOutcome,
) -> Option<Vec<ScheduledFault>> {
    let mut counts = acks_at_kills(outcome)?.into_iter();
    let mut out = schedule.to_vec();
    let mut changed = false;
    for entry in &mut out {
        if !entry.action.kills() {
            continue;
        }
        let (_, n) = counts.next()?;
        if n > 0 && entry.trigger.is_timed() {
            entry.trigger = Trigger::AfterAcks(n);
            changed = true;
        }
    }
    (changed && counts.next().is_none()).then(|| without_wakes(out))
}

/// `schedule` (which ran as `outcome`) with each kill that fires at a time aimed
/// instead right after what it came after in its incarnation: a produce
/// acknowledgement (`after_acks`), or an engine alarm (`after_alarm`, counted within
/// the incarnation). A kill in the middle of an open then stays in the same step of
/// it when a cut moves every time after it. `None` as for [`aimed_at_acks`], or when
/// no kill follows an alarm.
pub(super) fn aimed_at_events(
    schedule: &[ScheduledFault],
    outcome: &RunOutcome,
) -> Option<Vec<ScheduledFault>> {
    let mut aims = aims_at_kills(outcome)?.into_iter();
    let mut out = schedule.to_vec();
    let mut alarms = false;
    for entry in &mut out {
        if !entry.action.kills() {
            continue;
        }
        if let Some(aim) = aims.next()?
            && entry.trigger.is_timed()
        {
            alarms |= matches!(aim, Trigger::AfterAlarm { .. });
            entry.trigger = aim;
        }
    }
    (alarms && aims.next().is_none()).then(|| without_wakes(out))
}

/// An aimed schedule keeps no `wake` entry: a wake repeats the swarm's timing, which
/// the cut an aimed kill is for has moved, and would only hold the kill after it back
/// to a time.
fn without_wakes(mut schedule: Vec<ScheduledFault>) -> Vec<ScheduledFault> {
    schedule.retain(|e| e.action != Action::Wake);
    schedule
}

/// For each kill the run injected (not a restart the engine asked for), in order, the
/// trigger that aims it at what it followed in its incarnation: the last produce
/// acknowledgement or engine alarm before it (`None` when neither came since the
/// restart). `None` when the history and [`RunOutcome::kills`] disagree.
fn aims_at_kills(outcome: &RunOutcome) -> Option<Vec<Option<Trigger>>> {
    use crate::world::AlarmName;
    let mut acked = std::collections::BTreeSet::new();
    let mut counts: std::collections::BTreeMap<&'static str, u64> = Default::default();
    let mut last: Option<Trigger> = None;
    let mut kills = outcome.kills.iter();
    let mut aims = Vec::new();
    for event in outcome.history.events() {
        match &event.kind {
            EventKind::Restart => {
                counts.clear();
                last = None;
            }
            EventKind::ProduceAck { id, .. } => {
                acked.insert(*id);
                last = Some(Trigger::AfterAcks(acked.len() as u64));
            }
            EventKind::EngineAlarm {
                alarm,
                raised_in: None,
                ..
            } => {
                let name = AlarmName::parse(alarm.name())?;
                let count = counts.entry(name.as_str()).or_default();
                *count += 1;
                last = Some(Trigger::AfterAlarm {
                    alarm: name,
                    count: *count,
                });
            }
            EventKind::Fault {
                kind: FaultKind::Crash | FaultKind::ProcessCrash,
                ..
            } => {
                let cause = kills.next()?.cause;
                if cause != KillCause::Requested {
                    aims.push(last);
                }
            }
            _ => {}
        }
    }
    Some(aims)
}

/// For each kill the run injected (not a restart the engine asked for), in order, its
/// ms and how many produce ids had been acknowledged when it fired. `None` when the
/// history and [`RunOutcome::kills`] disagree.
fn acks_at_kills(outcome: &RunOutcome) -> Option<Vec<(u64, u64)>> {
    let mut acked = std::collections::BTreeSet::new();
    let mut kills = outcome.kills.iter();
    let mut counts = Vec::new();
    for event in outcome.history.events() {
        let killed = matches!(
            event.kind,
            EventKind::Fault {
                kind: FaultKind::Crash | FaultKind::ProcessCrash,
                ..
            }
        );
        if let EventKind::ProduceAck { id, .. } = &event.kind {
            acked.insert(*id);
        } else if killed && kills.next()?.cause != KillCause::Requested {
            counts.push((event.at_ms, acked.len() as u64));
        }
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use crate::shrink::schedule::schedule_from_history;
    use crate::world::{RunSpec, run};

    type Aim = fn(&[ScheduledFault], &RunOutcome) -> Option<Vec<ScheduledFault>>;

    /// Quick `seed` as an explicit schedule, the run of it, and that schedule `aim`ed
    /// (`None` when `aim` has nothing to aim).
    fn timed_and_aimed(
        seed: u64,
        aim: Aim,
    ) -> Option<(
        RunSpec,
        RunOutcome,
        Vec<ScheduledFault>,
        Vec<ScheduledFault>,
    )> {
        let mut spec = RunSpec::from_seed(seed, &Profile::quick());
        spec.schedule = Some(schedule_from_history(&run(&spec), false));
        let timed = run(&spec);
        let schedule = spec.schedule.clone().expect("explicit");
        let aimed = aim(&schedule, &timed)?;
        Some((spec, timed, schedule, aimed))
    }

    #[test]
    fn a_kill_aimed_at_acknowledgements_fires_right_after_as_many() {
        let mut checked = 0;
        for seed in 0..30 {
            let Some((mut spec, timed, schedule, aimed)) = timed_and_aimed(seed, aimed_at_acks)
            else {
                continue;
            };
            let want = acks_at_kills(&timed).expect("kills match");
            // Aimed, the schedule keeps its faults and drops its wakes.
            let faults: Vec<&ScheduledFault> = schedule
                .iter()
                .filter(|e| e.action != Action::Wake)
                .collect();
            assert_eq!(aimed.len(), faults.len(), "seed {seed}");
            for (entry, &was) in aimed.iter().zip(&faults) {
                if let Trigger::AfterAcks(n) = entry.trigger {
                    assert!(was.action.kills(), "seed {seed}");
                    assert!(want.iter().any(|&(_, c)| c == n), "seed {seed}");
                } else {
                    assert_eq!(entry, was, "seed {seed}: only kills are aimed");
                }
            }
            let aims: Vec<u64> = aimed
                .iter()
                .filter(|e| e.action.kills())
                .map(|e| match e.trigger {
                    Trigger::AfterAcks(n) => n,
                    _ => 0,
                })
                .collect();
            spec.schedule = Some(aimed);
            let outcome = run(&spec);
            // The ms each count of acknowledged ids was reached at, and each kill's.
            let mut acked = std::collections::BTreeSet::new();
            let mut reached = Vec::new();
            for event in outcome.history.events() {
                if let EventKind::ProduceAck { id, .. } = &event.kind
                    && acked.insert(*id)
                {
                    reached.push(event.at_ms);
                }
            }
            let kills = acks_at_kills(&outcome).expect("kills match");
            // Each aimed kill that fired waited for its count; the first came in the ms
            // its count was reached. (What follows a kill may differ from the timed run,
            // so a later kill's count can be reached before the kill ahead of it.)
            assert!(!kills.is_empty(), "seed {seed}");
            for (&n, &(_, count)) in aims.iter().zip(&kills).filter(|(n, _)| **n > 0) {
                assert!(count >= n, "seed {seed}: killed after {count} of {n} acks");
            }
            if aims[0] > 0 {
                let n = aims[0] as usize;
                assert_eq!(kills[0].0, reached[n - 1], "seed {seed}: first kill late");
            }
            checked += 1;
        }
        assert!(checked >= 5, "{checked} seeds with a kill after an ack");
    }

    /// For each kill the run injected, in order: its history index and incarnation.
    fn injected_kills(outcome: &RunOutcome) -> Vec<(usize, crate::history::Incarnation)> {
        let mut kills = outcome.kills.iter();
        outcome
            .history
            .events()
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                matches!(
                    e.kind,
                    EventKind::Fault {
                        kind: FaultKind::Crash | FaultKind::ProcessCrash,
                        ..
                    }
                ) && kills
                    .next()
                    .is_some_and(|k| k.cause != KillCause::Requested)
            })
            .map(|(i, e)| (i, e.incarnation))
            .collect()
    }

    #[test]
    fn a_kill_aimed_at_an_alarm_fires_right_after_as_many_of_its_incarnation() {
        use crate::world::is_alarm_of;
        let mut checked = 0;
        for seed in 0..40 {
            let Some((mut spec, _, _, aimed)) = timed_and_aimed(seed, aimed_at_events) else {
                continue;
            };
            let aims: Vec<Trigger> = aimed
                .iter()
                .filter(|e| e.action.kills())
                .map(|e| e.trigger)
                .collect();
            spec.schedule = Some(aimed);
            let outcome = run(&spec);
            let events = outcome.history.events();
            // Each kill that fired as aimed at an alarm came right after the count-th
            // alarm of that name of its incarnation, in its ms; or, when that alarm
            // came before the entry ahead of it fired, right after that entry.
            for (&aim, &(at, incarnation)) in aims.iter().zip(&injected_kills(&outcome)) {
                let Trigger::AfterAlarm { alarm, count } = aim else {
                    continue;
                };
                let raised: Vec<(usize, &crate::history::Event)> = events[..at]
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.incarnation == incarnation && is_alarm_of(e, alarm))
                    .collect();
                assert!(
                    raised.len() as u64 >= count,
                    "seed {seed}: killed after {} of {count} {}",
                    raised.len(),
                    alarm.as_str()
                );
                let (nth_at, nth) = raised[count as usize - 1];
                let killed_ms = events[at].at_ms;
                let entry_before = events[nth_at..at]
                    .iter()
                    .any(|e| e.at_ms == killed_ms && matches!(e.kind, EventKind::Fault { .. }));
                assert!(
                    nth.at_ms == killed_ms || entry_before,
                    "seed {seed}: the kill at {killed_ms} ms is late for the alarm at {} ms",
                    nth.at_ms
                );
                checked += 1;
            }
        }
        assert!(checked >= 5, "{checked} kills aimed at an alarm");
    }

    #[test]
    fn a_kill_aimed_at_acknowledgements_fires_past_a_heal_cut_below_it() {
        // A shrink cuts the heal below a timed kill's time (which fires past it); a
        // kill aimed at acknowledgements must not give up there while a producer runs.
        let mut checked = 0;
        for seed in 0..30 {
            let Some((mut spec, _, _, aimed)) = timed_and_aimed(seed, aimed_at_acks) else {
                continue;
            };
            let first = aimed.iter().find(|e| e.action.kills()).expect("a kill");
            let Trigger::AfterAcks(n) = first.trigger else {
                continue;
            };
            spec.schedule = Some(aimed);
            spec.profile.heal_ms = 1;
            let outcome = run(&spec);
            let kills = acks_at_kills(&outcome).expect("kills match");
            assert!(
                kills.first().is_some_and(|&(_, c)| c >= n),
                "seed {seed}: the kill after {n} acks never fired"
            );
            checked += 1;
        }
        assert!(
            checked >= 5,
            "{checked} seeds with a first kill after an ack"
        );
    }
}
