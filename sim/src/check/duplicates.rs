//! `bounded_duplicates`: duplicates (one produce id at two offsets) happen only
//! around crashes, and each crash causes at most as many as its hidden tails held.
//!
//! Why a hidden tail explains a duplicate (row `hidden_tail`): records in
//! `[persisted_hwm, durable_tail)` at a crash are hidden by recovery and re-committed by
//! the ingress WAL at fresh offsets, at or past the durable tail; once the HWM passes the
//! hidden copies both are visible. So of the copies of one id, all but one (the
//! original) must each be a re-commit by some crash: one that came before the copy was
//! first delivered and whose hidden tail held another copy of the id, one copy of an id
//! per crash (a replay commits each WAL entry once). The copies of every id are placed
//! at once, as a maximum flow ([`super::flow`]), so no crash's budget goes to a copy
//! another crash could explain while a copy only it explains goes without. A crash
//! explains at most its bound `sum over partitions of (durable_tail -
//! persisted_hwm)`, with the persisted HWM the next open read when that is lower (a
//! flipped `hwm` file hides more), and up to the engine's HWM when an out-of-contract
//! fault left a hole below it. When that open cut the log (its R1/R2 alarm), the
//! re-commits land from the cut on, which may be below the hidden copy.
//!
//! Also explained, each by the event it names: `damaged_copy_recommitted` (the engine
//! skipped the earlier copy's frame as unreadable, or a recorded clamp gave its offset
//! up, before the later copy appeared: the replay's check for visible copies could not
//! see it), `checkpoint_lost` (the later
//! copy first appeared after an open found the WAL checkpoint unreadable and replayed
//! every entry), `out_of_contract` (a fault whose reach names either copy's offset).

use serde::Serialize;
use std::collections::BTreeMap;

use super::accounting::Copy;
use super::excuse::{Excuse, ExcuseKind, Excuses};
use super::facts::{CrashFact, Facts};
use super::flow::Flow;
use super::{Accounting, RecordRef, Violation, list};
use crate::history::{
    Alarm, CrashPartition, EventKind, FileKind, Incarnation, Offset, ProduceId, TopicPartition,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrashBudget {
    pub crash_index: usize,
    pub at_ms: u64,
    pub incarnation: Incarnation,
    /// Sum over partitions of the hidden tail's size (see [`hidden_tail`]).
    pub bound: u64,
    /// Duplicates attributed to this crash.
    pub count: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DuplicatesReport {
    /// Extra copies in the run.
    pub duplicates: u64,
    pub crashes: Vec<CrashBudget>,
    /// Duplicates explained by an excuse other than a single crash's hidden tail.
    pub excused: Vec<(ProduceId, Excuse)>,
    pub violations: Vec<Violation>,
}

/// The hidden tail a crash left on a partition: `[P, durable_tail)`, with `P` the lower
/// of the persisted HWM at the crash and the one the next open read (a flip in `hwm`
/// while the node was down hides more). When an out-of-contract fault before the crash
/// left frames below the engine's HWM undurable (a lost fsync, a misdirected write),
/// the valid extent stops at the hole while records the engine had made visible lie
/// beyond it: the tail then runs to the HWM the engine had. So it does when in-contract
/// damage at rest (a flip, a latent sector) hit the frame the valid extent stops at:
/// the committed frames past it are durable, and an R2 cut hides them too. The HWM the
/// engine had is its in-memory one at the crash, or, where the world could not ask
/// (the partition was refused), the last one it showed.
fn hidden_tail(facts: &Facts<'_>, crash: &CrashFact, p: &CrashPartition) -> (Offset, Offset) {
    // Every view the next open may have read (a flip may land while it runs).
    let read = facts
        .alarms
        .views_before(&p.tp, crash.incarnation + 1, usize::MAX)
        .iter()
        .filter_map(|d| d.persisted_hwm)
        .min()
        .unwrap_or(p.persisted_hwm);
    let start = p.persisted_hwm.min(read);
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
                && matches!(&events[d].kind, EventKind::Fault { kind, .. }
                    if kind
                        .segment_damage()
                        .and_then(|(offsets, _)| offsets)
                        .is_some_and(|o| o.contains(p.durable_tail)))
        })
    });
    let hole = damaged_at_tail
        || facts
            .reaches_before(&p.tp, crash.index)
            .any(|r| r.file == FileKind::Segment && r.offsets.is_none_or(|o| o.start < memory));
    let end = if hole {
        p.durable_tail.max(memory)
    } else {
        p.durable_tail
    };
    (start, end.max(start))
}

pub fn check(facts: &Facts<'_>, accounting: &Accounting) -> DuplicatesReport {
    let mut report = DuplicatesReport {
        duplicates: accounting.counts().duplicated,
        crashes: facts
            .crashes
            .iter()
            .map(|c| CrashBudget {
                crash_index: c.index,
                at_ms: c.at_ms,
                incarnation: c.incarnation,
                bound: c
                    .partitions
                    .values()
                    .map(|p| {
                        let (start, end) = hidden_tail(facts, c, p);
                        end - start
                    })
                    .sum(),
                count: 0,
            })
            .collect(),
        ..DuplicatesReport::default()
    };
    let excuses = Excuses::new(facts);
    let placed = place(facts, &report.crashes, &accounting.duplicated);
    let mut leftovers = Vec::new();
    for (id, copies) in &accounting.duplicated {
        let roles = &placed[id];
        for role in roles {
            if let Role::Recommit(slot) = role {
                report.crashes[*slot].count += 1;
            }
        }
        for (k, later) in copies.iter().enumerate() {
            if roles[k] != Role::Unplaced {
                continue;
            }
            // Paired with each other copy in turn, in the accounting's (partition,
            // offset) order: any pair an excuse row covers explains this copy.
            let pairs: Vec<(&Copy, &Copy)> = copies
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .map(|(j, other)| {
                    if j < k {
                        (other, later)
                    } else {
                        (later, other)
                    }
                })
                .collect();
            match pairs
                .iter()
                .find_map(|(earlier, later)| explain(facts, &excuses, *id, earlier, later))
            {
                Some(excuse) => report.excused.push((*id, excuse)),
                None => {
                    let (earlier, later) = pairs[0];
                    leftovers.push((*id, earlier, later));
                }
            }
        }
    }
    for (id, earlier, later) in leftovers {
        let violation = unexplained(facts, &report.crashes, id, earlier, later);
        report.violations.push(violation);
    }
    report
}

/// The HWM the engine last showed on `tp` before history index `before`: the latest
/// sample, an open's HWM, or the in-memory HWM the world read at a crash, whichever came
/// last. A crash's reading counts because a crash can come before the first sample, and
/// a partition refused since then shows nothing newer.
fn last_shown_hwm(facts: &Facts<'_>, tp: &TopicPartition, before: usize) -> Option<Offset> {
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

/// What the placement made of one copy of a duplicated id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The copy the others repeat (one per id).
    Original,
    /// Committed again by the replay after this crash (a slot of the budgets).
    Recommit(usize),
    /// No crash with budget left can have committed it.
    Unplaced,
}

/// Places every copy of every duplicated id at once, as a maximum flow: each id has one
/// original, and each other copy is a re-commit by a crash that [`recommits`] it, at
/// most one copy of an id per crash (its replay commits each WAL entry once) and at most
/// its bound per crash. Placing pair by pair in a fixed order can spend a crash's budget
/// on a copy another crash explains and then fail one only that crash explains; the
/// flow finds a placement for every copy whenever one exists.
fn place(
    facts: &Facts<'_>,
    budgets: &[CrashBudget],
    duplicated: &BTreeMap<ProduceId, Vec<Copy>>,
) -> BTreeMap<ProduceId, Vec<Role>> {
    let mut flow = Flow::default();
    let (source, sink) = (flow.node(), flow.node());
    let crash_nodes: Vec<usize> = budgets
        .iter()
        .map(|b| {
            let node = flow.node();
            flow.edge(node, sink, b.bound);
            node
        })
        .collect();
    // Per copy: its edge to the id's original, and its edge to each crash.
    let mut edges = Vec::new();
    for (&id, copies) in duplicated {
        let original = flow.node();
        flow.edge(original, sink, 1);
        let mut per_crash: BTreeMap<usize, usize> = BTreeMap::new();
        let mut of_id = Vec::new();
        for k in 0..copies.len() {
            let node = flow.node();
            flow.edge(source, node, 1);
            let as_original = flow.edge(node, original, 1);
            let mut as_recommit = Vec::new();
            for (slot, crash) in facts.crashes.iter().enumerate() {
                if budgets[slot].bound == 0 || !recommits(facts, crash, id, copies, k) {
                    continue;
                }
                let pair = *per_crash.entry(slot).or_insert_with(|| {
                    let pair = flow.node();
                    flow.edge(pair, crash_nodes[slot], 1);
                    pair
                });
                as_recommit.push((slot, flow.edge(node, pair, 1)));
            }
            of_id.push((as_original, as_recommit));
        }
        edges.push(of_id);
    }
    flow.max_flow(source, sink);
    duplicated
        .keys()
        .zip(edges)
        .map(|(id, of_id)| {
            let mut roles: Vec<Role> = of_id
                .iter()
                .map(|(as_original, as_recommit)| {
                    if flow.flow(*as_original) == 1 {
                        return Role::Original;
                    }
                    as_recommit
                        .iter()
                        .find(|(_, e)| flow.flow(*e) == 1)
                        .map_or(Role::Unplaced, |(slot, _)| Role::Recommit(*slot))
                })
                .collect();
            // Every copy placed as a re-commit leaves the original's place free: the
            // first delivered takes it, so no budget counts an original.
            if !roles.contains(&Role::Original)
                && !roles.contains(&Role::Unplaced)
                && let Some(k) = (0..roles.len()).min_by_key(|k| duplicated[id][*k].first_delivery)
            {
                roles[k] = Role::Original;
            }
            assert!(
                roles.iter().filter(|r| **r == Role::Original).count() <= 1,
                "one original per id"
            );
            (*id, roles)
        })
        .collect()
}

/// Whether the replay after `crash` can have committed `copies[k]` (of `id`): the crash
/// came before its first delivery, and another copy on the same partition (a WAL entry
/// names its partition) lay in the crash's hidden tail and existed at the crash, with
/// `copies[k]` where that replay commits: past the durable tail, unless the open that
/// re-commits cut the log (its R1/R2 alarm), then from the cut on. A delivered copy
/// existed at the crash if it was delivered before it or lies below where the replay
/// commits; one from there on first seen after the crash is the replay's own (an offset
/// reused after a cut), and cannot be what the replay repeats. A copy never delivered
/// existed at the crash when the world listed it there by identity: damage took it
/// ([`Facts::damage_took_at_crash`]), the next open's R2 cut took it from past the hole
/// ([`Facts::past_hole_at_open`]), or that open found it hidden at another
/// offset than `copies[k]` (a hidden copy can be the one later delivered); and a copy
/// of the id was delivered before the crash.
fn recommits(
    facts: &Facts<'_>,
    crash: &CrashFact,
    id: ProduceId,
    copies: &[Copy],
    k: usize,
) -> bool {
    let later = &copies[k];
    let Some(state) = crash.partitions.get(&later.tp) else {
        return false;
    };
    if crash.index >= later.first_delivery {
        return false;
    }
    let (start, end) = hidden_tail(facts, crash, state);
    let fresh = fresh_from(facts, crash, state);
    // A listed copy is no copy of the flow's: it can be what the replay repeats only
    // beside a copy delivered before the crash, which takes the original's place (else
    // a later copy would, and one crash would explain two delivered copies).
    let delivered_before = copies
        .iter()
        .any(|c| c.tp == later.tp && c.first_delivery < crash.index);
    later.offset >= fresh
        && (copies.iter().enumerate().any(|(j, earlier)| {
            j != k
                && earlier.tp == later.tp
                && start <= earlier.offset
                && earlier.offset < end
                && (earlier.first_delivery < crash.index || earlier.offset < fresh)
        }) || delivered_before
            && facts
                .damage_took_at_crash(&later.tp, crash)
                .chain(
                    facts
                        .past_hole_at_open(&later.tp, crash.incarnation + 1)
                        .unwrap_or(&[]),
                )
                .map(|held| (held, true))
                .chain(
                    facts
                        .held_at_open(&later.tp, crash.incarnation + 1)
                        .iter()
                        .map(|held| (held, false)),
                )
                .any(|(held, taken)| {
                    held.id == id
                        && (taken || held.offset != later.offset)
                        && start <= held.offset
                        && held.offset < end
                }))
}

/// Where the replay after `crash` commits on `state`'s partition: past the durable
/// tail, or lower where the log shrank before that replay ran. The replay is the first
/// store open after the crash that completed with the partition open (an open that
/// failed first, after its log opened, replays nothing, and one that refused the
/// partition keeps its WAL entries for a later replay); until then an open's cut (its
/// R1/R2 alarm) or a later crash's shorter tail moves where it commits.
fn fresh_from(facts: &Facts<'_>, crash: &CrashFact, state: &CrashPartition) -> Offset {
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
    [Some(state.durable_tail), cut, shorter]
        .into_iter()
        .flatten()
        .min()
        .expect("the durable tail is always there")
}

/// History index at which the replay after `crash` had run on `tp`: the first store
/// open after it that completed with the partition open (`usize::MAX` when none did).
fn replay_done(facts: &Facts<'_>, crash: &CrashFact, tp: &TopicPartition) -> usize {
    facts
        .opened_at
        .range(crash.incarnation + 1..)
        .find(|(incarnation, _)| !refused_in(facts, tp, **incarnation))
        .map_or(usize::MAX, |(_, &index)| index)
}

/// The excuse rows for a pair no single crash explains.
fn explain(
    facts: &Facts<'_>,
    excuses: &Excuses<'_, '_>,
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
) -> Option<Excuse> {
    damaged_copy(facts, earlier, later)
        .or_else(|| damaged_copy(facts, later, earlier))
        .or_else(|| checkpoint_lost(facts, id, earlier, later))
        .or_else(|| checkpoint_lost(facts, id, later, earlier))
        .or_else(|| {
            [earlier, later].into_iter().find_map(|c| {
                excuses.out_of_contract(
                    &c.tp,
                    Some(c.offset),
                    None,
                    Some(c.first_delivery),
                    usize::MAX,
                )
            })
        })
}

/// `damaged_copy_recommitted`: after `copy` was first delivered and before `other`
/// was, the engine gave `copy` up as unreadable: it skipped its frame, or an open's
/// recorded clamp gave up its offset and `other` lies where the replay after it
/// commits (from the clamped HWM on, on the same partition, first delivered before
/// the crash that ends the first open from the clamp's on that completed, which is the
/// one whose replay re-commits what the clamp gave up, or in the log that crash left;
/// a later incarnation's copy is its own replay's).
fn damaged_copy(facts: &Facts<'_>, copy: &Copy, other: &Copy) -> Option<Excuse> {
    let until = other.first_delivery;
    let skip = facts
        .alarms
        .skips(&copy.tp)
        .find(|s| {
            s.frame
                && s.index > copy.first_delivery
                && s.index < until
                && s.contains(copy.offset)
                // Only a replay re-commits the skipped records (it reads the visible
                // copies it would skip, before or after the skip was counted), and only
                // on their own partition (a WAL entry names it): a restart must come
                // between the two copies.
                && other.tp == copy.tp
                && facts
                    .restarts
                    .values()
                    .any(|&restart| copy.first_delivery < restart && restart < until)
        })
        .map(|s| (s.index, format!("{} offset {}", copy.tp, copy.offset)));
    // The first open from `from` on that completed: its replay re-commits what a clamp
    // of `from` gave up.
    let replayer = |from: crate::history::Incarnation| {
        (from..)
            .take_while(|i| facts.restarts.contains_key(i) || *i == from)
            .find(|i| facts.opened.contains(i))
    };
    // The clamp's replay window: the first open from the clamp's on that completed,
    // and the lowest HWM a clamp, or offset a cut, left up to it (its replay commits at
    // or past that). When a later open cut at or below that floor (damage took what
    // the replay wrote), nothing of it is left and that open's replay commits the
    // record again: the window goes on from there. A log merely ending there proves nothing: a completed
    // replay's commits are durable, so it wrote none, and the WAL no longer held the
    // entry.
    // Returns (the floor, the crash that ends the window).
    let replay_window = |c: &super::alarms::ClampFact| {
        let lowest = |from: Incarnation, to: Incarnation| {
            let within = |inc: Incarnation| from <= inc && inc <= to;
            facts
                .alarms
                .clamps(&copy.tp)
                .filter(|k| within(k.incarnation) && k.index >= c.index)
                .map(|k| k.hwm)
                .chain(
                    facts
                        .alarms
                        .cuts(&copy.tp)
                        .filter(|k| within(k.incarnation) && k.index > c.index)
                        .map(|k| k.offset),
                )
                .fold(c.hwm, Offset::min)
        };
        let mut from = c.incarnation;
        let mut floor = c.hwm;
        loop {
            let Some(last) = replayer(from) else {
                return (lowest(c.incarnation, Incarnation::MAX), usize::MAX);
            };
            floor = floor.min(lowest(c.incarnation, last));
            // The first later open that cut at or below the floor: opens before it
            // found the replay's copy in place, so their replays committed nothing.
            let wiped = facts
                .alarms
                .cuts(&copy.tp)
                .filter(|k| k.incarnation > last && k.offset <= floor)
                .map(|k| k.incarnation)
                .min();
            if let Some(next) = wiped {
                from = next;
                continue;
            }
            let end = facts.crash_ending(last).map_or(usize::MAX, |k| k.index);
            return (floor, end);
        }
    };
    // Whether `other` was in the log before the crash at history index `end`: first
    // delivered before it, or below the tail that crash left, with nothing cutting or
    // clamping at or below its offset until its delivery (the clamp's open cut the log
    // at its HWM, so a frame there was written after the clamp).
    let committed_by = |end: usize| {
        until < end
            || facts
                .crashes
                .iter()
                .find(|k| k.index == end)
                .is_some_and(|k| {
                    k.partitions
                        .get(&other.tp)
                        .is_some_and(|p| other.offset < p.durable_tail)
                        && !facts
                            .alarms
                            .cuts(&other.tp)
                            .any(|x| end < x.index && x.index < until && x.offset <= other.offset)
                        && !facts
                            .alarms
                            .clamps(&other.tp)
                            .any(|x| end < x.index && x.index < until && x.hwm <= other.offset)
                        // No later crash lost the frame (a power loss after a process
                        // crash drops what only the page cache held).
                        && !facts.crashes.iter().any(|x| {
                            end < x.index
                                && x.index < until
                                && x.partitions
                                    .get(&other.tp)
                                    .is_some_and(|p| p.durable_tail <= other.offset)
                        })
                })
    };
    let clamp = || {
        facts
            .alarms
            .clamps(&copy.tp)
            .find(|c| {
                c.index > copy.first_delivery
                    && c.index < until
                    && c.hwm <= copy.offset
                    && copy.offset < c.persisted_hwm
                    && other.tp == copy.tp
                    // Committed by the replay after it: at or past its floor, seen
                    // before the crash that ends its window (a killed open replays
                    // nothing for certain), or found in the log by that crash.
                    && {
                        let (floor, end) = replay_window(c);
                        other.offset >= floor && committed_by(end)
                    }
            })
            .map(|c| {
                (
                    c.index,
                    format!(
                        "{} offset {} (clamped away, re-committed at {})",
                        copy.tp, copy.offset, other.offset
                    ),
                )
            })
    };
    let (cause, covers) = skip.or_else(clamp)?;
    Some(Excuse {
        kind: ExcuseKind::DamagedCopyRecommitted,
        causes: vec![cause],
        covers,
    })
}

/// Whether the open of `incarnation` refused `tp` (or its topic): it replayed nothing
/// there, and kept the partition's WAL entries for a later replay.
fn refused_in(facts: &Facts<'_>, tp: &TopicPartition, incarnation: Incarnation) -> bool {
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

/// `checkpoint_lost`: both copies of `id` on one partition, `earlier` delivered before an
/// open found the WAL checkpoint unreadable and `later` after it, where that open's
/// replay commits: the open completed with the partition open, could see no copy of
/// `id`, and `later` lies from the tail it found up to the first HWM shown after it.
/// What it could see is what the world listed at its restart (`VisibleAtOpen`, and the
/// hidden tail when the open exposed it); without that listing, `earlier` counts as
/// seen when its offset lies from the log start to the HWM.
fn checkpoint_lost(
    facts: &Facts<'_>,
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
) -> Option<Excuse> {
    // A WAL entry names its partition: its replay commits there.
    if earlier.tp != later.tp {
        return None;
    }
    let tp = &later.tp;
    // Each open that found the checkpoint unreadable, completed and had the partition
    // open, replayed what it could not see there (below the log start, or at or above
    // its HWM), from the tail it found up, before it returned: so under the first HWM
    // shown after it.
    facts
        .alarms
        .store
        .iter()
        .filter(|a| {
            matches!(a.alarm, Alarm::WalCheckpointUnreadable)
                && earlier.first_delivery < a.index
                && a.index < later.first_delivery
                && !refused_in(facts, tp, a.incarnation)
        })
        .find_map(|alarm| {
            let done = *facts.opened_at.get(&alarm.incarnation)?;
            let view = facts.alarms.disk_at(tp, alarm.incarnation)?;
            let visible = match facts.visible_at_open(tp, alarm.incarnation) {
                Some(shown) => {
                    let exposed = facts.alarms.of(tp).iter().any(|a| {
                        a.incarnation == alarm.incarnation
                            && matches!(a.alarm, Alarm::HiddenExposed { .. })
                    });
                    let hidden = facts.held_at_open(tp, alarm.incarnation);
                    shown.iter().any(|c| c.id == id) || exposed && hidden.iter().any(|c| c.id == id)
                }
                None => view.log_start <= earlier.offset && earlier.offset < view.hwm,
            };
            let shown = facts.history.events()[done..]
                .iter()
                .find_map(|e| match &e.kind {
                    EventKind::HwmObserved { tp: t, hwm, .. } if t == tp => Some(*hwm),
                    _ => None,
                })
                .unwrap_or(Offset::MAX);
            let tail = view.tail;
            (!visible && tail <= later.offset && later.offset < shown).then(|| Excuse {
                kind: ExcuseKind::CheckpointLost,
                causes: vec![alarm.index],
                covers: format!("{tp} offsets [{tail}, {shown})"),
            })
        })
}

fn unexplained(
    facts: &Facts<'_>,
    budgets: &[CrashBudget],
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
) -> Violation {
    // The crashes whose hidden tail holds the earlier copy first: those are the ones a
    // reader needs to see.
    let mut tails: Vec<(bool, String)> = facts
        .crashes
        .iter()
        .zip(budgets)
        .filter_map(|(crash, budget)| {
            crash.partitions.get(&earlier.tp).map(|state| {
                let (start, end) = hidden_tail(facts, crash, state);
                let holds = start <= earlier.offset && earlier.offset < end;
                (
                    !holds,
                    format!(
                        "crash t={}ms: {} hidden tail [{start}, {end}) {} offset {}, {} of bound \
                         {} used",
                        crash.at_ms,
                        earlier.tp,
                        if holds { "holds" } else { "does not hold" },
                        earlier.offset,
                        budget.count,
                        budget.bound
                    ),
                )
            })
        })
        .collect();
    tails.sort_by_key(|(not_holding, _)| *not_holding);
    let tails: Vec<String> = tails.into_iter().map(|(_, t)| t).collect();
    let why = if facts.crashes.is_empty() {
        "a crash-free run has no duplicates".to_owned()
    } else if tails.is_empty() {
        format!("no crash reported the state of {}", earlier.tp)
    } else {
        format!(
            "no crash before it hid the earlier copy with budget left ({})",
            list(&tails, 4)
        )
    };
    Violation {
        message: format!(
            "produce id {id} delivered from {}@{} (first t={}ms) and again from {}@{} \
             (first t={}ms): {why}",
            earlier.tp,
            earlier.offset,
            facts.at_ms(earlier.first_delivery),
            later.tp,
            later.offset,
            facts.at_ms(later.first_delivery),
        ),
        records: vec![
            RecordRef::new(&earlier.tp, Some(earlier.offset), Some(id)),
            RecordRef::new(&later.tp, Some(later.offset), Some(id)),
        ],
        events: vec![earlier.first_delivery, later.first_delivery],
    }
}
