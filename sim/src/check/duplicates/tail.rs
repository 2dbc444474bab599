//! Where a crash hid copies and where its replay commits: each crash's hidden tail
//! (with the HWM the engine last showed when damage ended the decoded log below it),
//! the offset its replay commits from, and the open that ran that replay.

use super::*;
use crate::check::contract::LOG_FILES;

/// The hidden tail a crash left on a partition: `[P, durable_tail)`, with `P` the
/// persisted HWM the next open read (the lowest of its views), else the one at the
/// crash (a flip in `hwm` while the node was down hides more or less). When an out-of-contract fault before the crash
/// left frames below the engine's HWM undurable (a lost fsync, a misdirected write),
/// the valid extent stops at the hole while records the engine had made visible lie
/// beyond it: the tail then runs to the HWM the engine had. So it does when in-contract
/// damage at rest (a flip, a latent sector) hit the frame the valid extent stops at:
/// the committed frames past it are durable, and an R2 cut hides them too. The HWM the
/// engine had is its in-memory one at the crash, or, where the world could not ask
/// (the partition was refused), the last one it showed.
pub(super) fn hidden_tail(
    facts: &Facts<'_>,
    crash: &CrashFact,
    p: &CrashPartition,
) -> (Offset, Offset) {
    // Every view the next open may have read (a flip may land while it runs). The open
    // hid from the word it read: lower than the crash's when a flip lowered it while
    // the node was down, higher when one raised it (helper-70: the copies between were
    // shown, and a replay that commits them again is not the crash's doing).
    let start = facts
        .alarms
        .views_before(
            &p.tp,
            crash.incarnation + 1,
            read_until(facts, &p.tp, crash.incarnation + 1),
        )
        .iter()
        .filter_map(|d| d.persisted_hwm)
        .min()
        .unwrap_or(p.persisted_hwm);
    // A copy the replaying open read below its word was shown to it, whatever an open
    // killed before it read: the replay skips it (helper-72).
    let start = replay_of(facts, crash, &p.tp)
        .filter(|&inc| inc > crash.incarnation + 1)
        .and_then(|inc| {
            facts
                .alarms
                .views_before(&p.tp, inc, read_until(facts, &p.tp, inc))
                .iter()
                .filter_map(|d| d.persisted_hwm)
                .min()
        })
        .map_or(start, |read| start.max(read));
    // The last shown HWM widens this crash's tail only past what the crash before it
    // already hid, when no open completed in between (the one replay after both
    // re-commits those entries once): up to the shown HWM when that crash's tail ends
    // below it; else, when that crash was a process crash and this one a power loss, up
    // to where that tail begins (the `hwm` word the page cache held never reached the
    // platter, so this tail may begin lower).
    let memory = p
        .memory_hwm
        .or_else(|| {
            let shown = last_shown_hwm(facts, &p.tp, crash.index)?;
            let prev = (!facts.opened.contains(&crash.incarnation))
                .then(|| facts.crash_before(crash.index))
                .flatten()
                .and_then(|prev| {
                    prev.partitions
                        .get(&p.tp)
                        .map(|q| (prev.process, hidden_tail(facts, prev, q)))
                });
            match prev {
                Some((_, (_, prev_end))) if prev_end < shown => Some(shown),
                // Only a power loss after a process crash drops a word the page cache
                // held: then this tail may begin below the one before.
                Some((true, (prev_start, _))) if !crash.process => Some(shown.min(prev_start)),
                Some(_) => None,
                None => Some(shown),
            }
        })
        .unwrap_or(0);
    let events = facts.history.events();
    let damaged_at_tail = facts.segment_damage.get(&p.tp).is_some_and(|damage| {
        damage.iter().any(|&d| {
            d < crash.index
                && facts.damage_readable_at(d, crash.index + 1)
                && matches!(&events[d].kind, EventKind::Fault { kind, .. }
                    if kind
                        .segment_damage()
                        .and_then(|(offsets, _)| offsets)
                        .is_some_and(|o| o.contains(p.durable_tail)))
        })
    });
    let hole = damaged_at_tail
        || facts.reaches_before(&p.tp, crash.index).any(|r| {
            r.file == FileKind::Segment
                && r.offsets
                    .is_none_or(|o| o.start < o.end && o.start < memory)
        });
    let end = if hole {
        p.durable_tail.max(memory)
    } else {
        p.durable_tail
    };
    (start, end.max(start))
}

/// History index up to which the open of `incarnation` may still read `tp`'s `hwm`
/// word: its `log_opened` (the scan read the word before it, and the open wrote its own
/// back), `usize::MAX` when the log never opened. A view taken after it (a flip while
/// the store's open, e.g. its WAL replay, still ran) is one no open read.
fn read_until(facts: &Facts<'_>, tp: &TopicPartition, incarnation: Incarnation) -> usize {
    facts
        .alarms
        .of(tp)
        .iter()
        .find(|a| a.incarnation == incarnation && matches!(a.alarm, Alarm::LogOpened { .. }))
        .map_or(usize::MAX, |a| a.index)
}

/// The HWM the engine last showed on `tp` before history index `before`: the latest
/// sample, an open's HWM, or the in-memory HWM the world read at a crash, whichever came
/// last. A crash's reading counts because a crash can come before the first sample, and
/// a partition refused since then shows nothing newer.
pub(super) fn last_shown_hwm(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    before: usize,
) -> Option<Offset> {
    facts.history.events()[..before]
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::HwmObserved { tp: t, hwm, .. } if t == tp => Some(*hwm),
            EventKind::Crash { partitions, .. } => partitions
                .iter()
                .find(|p| &p.tp == tp)
                .and_then(|p| p.memory_hwm),
            EventKind::EngineAlarm {
                tp: Some(t),
                alarm: Alarm::LogOpened { hwm, .. },
                ..
            } if t == tp => Some(*hwm),
            _ => None,
        })
}

/// Where the replay after `crash` commits on `state`'s partition: past the durable
/// tail, or lower where the log shrank before that replay ran. The replay is the first
/// store open after the crash that completed with the partition open (an open that
/// failed first, after its log opened, replays nothing, and one that refused the
/// partition keeps its WAL entries for a later replay); until then an open's cut (its
/// R1/R2 alarm) or a later crash's shorter tail moves where it commits.
pub(super) fn fresh_from(facts: &Facts<'_>, crash: &CrashFact, state: &CrashPartition) -> Offset {
    let done = replay_done(facts, crash, &state.tp);
    let cut = facts
        .alarms
        .cuts(&state.tp)
        .filter(|c| c.index > crash.index && c.index < done)
        .map(|c| c.offset)
        .min();
    let shorter = facts
        .crashes
        .iter()
        .filter(|c| c.index > crash.index && c.index < done)
        .filter_map(|c| c.partitions.get(&state.tp))
        .map(|p| p.durable_tail)
        .min();
    [
        Some(state.durable_tail),
        cut,
        shorter,
        lost_from(facts, crash, &state.tp),
    ]
    .into_iter()
    .flatten()
    .min()
    .expect("the durable tail is always there")
}

/// The crash that first showed the out-of-contract fault at history index `fault` to
/// an open: the next power loss for a fault only the platter holds (a process crash
/// keeps the page cache, which shows the engine's bytes), else the next crash; for a
/// fault injected while the node was down (after the crash ending its incarnation, as
/// a crash with a bit flip records it), that crash when it qualifies.
pub(super) fn crash_showing<'f>(facts: &'f Facts<'_>, fault: usize) -> Option<&'f CrashFact> {
    let platter = facts
        .reaches
        .iter()
        .find(|r| r.fault_index == fault)
        .is_none_or(|r| r.platter_only());
    let down = facts
        .crash_ending(facts.history.events()[fault].incarnation)
        .filter(|c| c.index < fault);
    down.into_iter()
        .chain(facts.crashes.iter().filter(|c| c.index > fault))
        .find(|c| !(platter && c.process))
}

/// Where the log the open after `crash` found on `tp` ended, when an out-of-contract
/// fault that `crash` showed can have ended it there with no cut (a lost fsync or a
/// misdirected write loses frames the world counts as durable): that open's tail, when
/// it is where the fault's reach starts (or, for a fault whose offsets the world cannot
/// name, a lost fsync of the directory, at or past the lowest offset acknowledged on
/// `tp` after the fault and before the crash). `None` when no such fault, or no view
/// of that open.
fn lost_from(facts: &Facts<'_>, crash: &CrashFact, tp: &TopicPartition) -> Option<Offset> {
    // A fault ends the log at the first frame it lost or damaged, which is where its
    // reach starts: a lost fsync's reach is the hull of the frames it left undurable,
    // and a misdirected write's, when the world could not split it into the frames it
    // landed on and those it was meant for, the hull of both, so an offset inside a
    // hull may be untouched. An empty reach reaches nothing; a misdirected write of
    // unknown reach hit no frame the world could name. No view of that open: nothing
    // found, nothing lowered.
    let found = facts.alarms.disk_at(tp, crash.incarnation + 1)?.tail;
    facts
        .reaches
        .iter()
        .filter(|r| r.tp.as_ref() == Some(tp) && r.on(LOG_FILES) && r.fault_index < crash.index)
        .filter(|r| crash_showing(facts, r.fault_index).is_some_and(|c| c.index == crash.index))
        .any(|r| match r.offsets {
            Some(range) => range.start == found && found < range.end,
            None if matches!(r.kind, crate::history::FaultKind::Misdirected { .. }) => false,
            None => facts.history.events()[r.fault_index..crash.index]
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::ProduceAck {
                        tp: t,
                        offset: Some(offset),
                        ..
                    } if t == tp => Some(*offset),
                    _ => None,
                })
                .min()
                .is_some_and(|reach| reach <= found),
        })
        .then_some(found)
}

/// Whether, strictly between history indices `after` and `before`, `tp`'s log ended at
/// or below `offset`: an open cut it there, or a crash left its durable tail there (a
/// power loss after a process crash drops what only the page cache held). A copy at
/// `offset` seen after that was written afresh.
pub(super) fn log_ended_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    after: usize,
    before: usize,
    offset: Offset,
) -> bool {
    let between = |index: usize| after < index && index < before;
    facts
        .alarms
        .cuts(tp)
        .any(|c| between(c.index) && c.offset <= offset)
        || facts.crashes.iter().any(|c| {
            between(c.index)
                && c.partitions
                    .get(tp)
                    .is_some_and(|p| p.durable_tail <= offset)
        })
}

/// Whether, strictly between history indices `after` and `before`, an open's recorded
/// clamp gave `tp`'s `offset` up (its HWM at or below it).
pub(super) fn clamped_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    after: usize,
    before: usize,
    offset: Offset,
) -> bool {
    facts
        .alarms
        .clamps(tp)
        .any(|c| after < c.index && c.index < before && c.hwm <= offset)
}

/// History index at which the replay after `crash` had run on `tp`: the first store
/// open after it that completed with the partition open (`usize::MAX` when none did).
pub(super) fn replay_done(facts: &Facts<'_>, crash: &CrashFact, tp: &TopicPartition) -> usize {
    facts
        .opened_at
        .range(crash.incarnation + 1..)
        .find(|(incarnation, _)| !refused_in(facts, tp, **incarnation))
        .map_or(usize::MAX, |(_, &index)| index)
}

/// The incarnation whose open ran the replay after `crash` on `tp`: the first after it
/// whose open began committing WAL entries there (its `replay_committing` account, also
/// when that open was killed before the store came up), or that came up with the
/// partition open and so found nothing to commit; `None` when no replay ran before the
/// run ended. Crashes with the same one share that replay, and it commits each WAL
/// entry once.
pub(super) fn replay_of(
    facts: &Facts<'_>,
    crash: &CrashFact,
    tp: &TopicPartition,
) -> Option<Incarnation> {
    let committing = facts
        .alarms
        .of(tp)
        .iter()
        .filter(|a| {
            a.incarnation > crash.incarnation && matches!(a.alarm, Alarm::ReplayCommitting { .. })
        })
        .map(|a| a.incarnation)
        .min();
    let opened = facts
        .opened_at
        .range(crash.incarnation + 1..)
        .find(|(incarnation, _)| !refused_in(facts, tp, **incarnation))
        .map(|(incarnation, _)| *incarnation);
    [committing, opened].into_iter().flatten().min()
}

/// Whether the open of `incarnation` refused `tp` (or its topic): it replayed nothing
/// there, and kept the partition's WAL entries for a later replay.
pub(super) fn refused_in(facts: &Facts<'_>, tp: &TopicPartition, incarnation: Incarnation) -> bool {
    facts
        .alarms
        .of(tp)
        .iter()
        .any(|a| a.incarnation == incarnation && matches!(a.alarm, Alarm::Refused { .. }))
        || facts.alarms.store.iter().any(|a| {
            a.incarnation == incarnation
                && matches!(&a.alarm, Alarm::TopicRefused { topic } if *topic == tp.topic)
        })
}
