//! Placing every copy of every duplicated id at once: one original per id, each other
//! copy a re-commit by a crash whose hidden tail held another copy, within each
//! crash's bound (a maximum flow).

use super::super::flow::EdgeId;
use super::excused::Excusal;
use super::tail::{clamped_at, fresh_from, hidden_tail, log_ended_at, replay_of};
use super::*;

/// What the placement made of one copy of a duplicated id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// The copy the others repeat (one per id).
    Original,
    /// Committed again by the replay after this crash (a slot of the budgets).
    Recommit(usize),
    /// A repeat an excuse row explains (the index of its [`Excusal`] among the id's),
    /// at no crash's cost.
    Excused(usize),
    /// No crash with budget left can have committed it.
    Unplaced,
}

/// Places every copy of every duplicated id at once, as a maximum flow: each id has one
/// original, and each other copy is a re-commit by a crash that [`recommits`] it, at
/// most one copy of an id per replay (a replay commits each WAL entry once; crashes
/// before one replay, with opens killed before they committed anything between them,
/// share it: [`replay_of`]) and at most its bound per crash. Placing pair by pair in a
/// fixed order can spend a crash's budget on a copy another crash explains and then fail
/// one only that crash explains; the flow finds a placement for every copy whenever one
/// exists.
///
/// Within one shared replay the copy goes through one node per (id, replay), which may
/// then charge any crash of that replay that re-commits some copy of the id: the one
/// copy per replay is exact, the split of the replay's copies between its crashes'
/// budgets is not.
///
/// With `excusals` (per id, what the excuse rows say of its pairs of copies), a copy a
/// row names as a repeat may also be [`Role::Excused`], at no crash's cost: through the
/// node of the replay that made it ([`Excusal::replay`]), which passes one copy of the
/// id, or, when no replay can be named, one copy per [`Excusal::slot`]. The excuses then join the
/// placement, so a crash's budget is not spent on a copy an event already explains
/// while one only that crash explains goes without.
pub(super) fn place(
    facts: &Facts<'_>,
    budgets: &[CrashBudget],
    duplicated: &BTreeMap<ProduceId, Vec<Copy>>,
    excusals: Option<&BTreeMap<ProduceId, Vec<Excusal>>>,
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
    // Each crash's hidden tail and fresh offset on a partition, worked out once for every
    // id (they depend on the crash and the partition alone).
    let mut tails: BTreeMap<(usize, &TopicPartition), Option<Tail>> = BTreeMap::new();
    for (&id, copies) in duplicated {
        let original = flow.node();
        flow.edge(original, sink, 1);
        // One node pair per (partition, replay), joined by an edge of capacity 1: a
        // replay commits the id's entry once.
        let mut per_replay: BTreeMap<(&TopicPartition, Option<Incarnation>), (usize, usize)> =
            BTreeMap::new();
        // The edges from a replay's node to the crashes it may charge, once each.
        let mut to_crash: BTreeMap<(usize, usize), EdgeId> = BTreeMap::new();
        let mut of_id = Vec::new();
        // An excusal with a replay gives that replay's node a way out at no budget's
        // cost (the replay still commits the id once); one without, a node per slot,
        // passing one copy on.
        let of_id_excusals = of_id_excusals_of(excusals, &id);
        let mut slots: BTreeMap<&(Vec<usize>, usize), usize> = BTreeMap::new();
        // Per replay node's exit: its free way out and the excusals that give it.
        let mut free: BTreeMap<usize, (EdgeId, Vec<usize>)> = BTreeMap::new();
        let excusal_nodes: Vec<Option<usize>> = of_id_excusals
            .iter()
            .enumerate()
            .map(|(i, e)| match &e.replay {
                Some((tp, replay)) => {
                    let (_, exit) = *per_replay
                        .entry((tp_of(copies, tp), *replay))
                        .or_insert_with(|| {
                            let (entry, exit) = (flow.node(), flow.node());
                            flow.edge(entry, exit, 1);
                            (entry, exit)
                        });
                    free.entry(exit)
                        .or_insert_with(|| (flow.edge(exit, sink, 1), Vec::new()))
                        .1
                        .push(i);
                    None
                }
                None => Some(*slots.entry(&e.slot).or_insert_with(|| {
                    let node = flow.node();
                    flow.edge(node, sink, 1);
                    node
                })),
            })
            .collect();
        for k in 0..copies.len() {
            let node = flow.node();
            flow.edge(source, node, 1);
            let as_original = flow.edge(node, original, 1);
            let mut as_excused: Vec<(usize, EdgeId)> = Vec::new();
            let mut as_recommit: Vec<(usize, EdgeId)> = Vec::new();
            for (i, e) in of_id_excusals.iter().enumerate() {
                if e.repeat != k {
                    continue;
                }
                match (&e.replay, excusal_nodes[i]) {
                    (Some((tp, replay)), _) => {
                        if copies[k].offset >= replay_ceiling(facts, tp, *replay) {
                            continue;
                        }
                        let (entry, exit) = per_replay[&(tp_of(copies, tp), *replay)];
                        if !as_recommit.iter().any(|(x, _)| *x == exit) {
                            as_recommit.push((exit, flow.edge(node, entry, 1)));
                        }
                    }
                    (None, Some(slot_node)) => {
                        as_excused.push((i, flow.edge(node, slot_node, 1)));
                    }
                    (None, None) => unreachable!("an excusal without a replay has a slot"),
                }
            }
            let tp = &copies[k].tp;
            for (slot, crash) in facts.crashes.iter().enumerate() {
                if budgets[slot].bound == 0 {
                    continue;
                }
                let tail = *tails
                    .entry((slot, tp))
                    .or_insert_with(|| tail_at(facts, crash, tp));
                if !tail.is_some_and(|tail| recommits(facts, crash, tail, id, copies, k)) {
                    continue;
                }
                let Some(replay) = replay_writing(facts, crash, copies, k) else {
                    continue;
                };
                if copies[k].offset >= replay_ceiling(facts, tp, replay) {
                    continue;
                }
                let (entry, exit) = *per_replay.entry((tp, replay)).or_insert_with(|| {
                    let (entry, exit) = (flow.node(), flow.node());
                    flow.edge(entry, exit, 1);
                    (entry, exit)
                });
                to_crash
                    .entry((exit, slot))
                    .or_insert_with(|| flow.edge(exit, crash_nodes[slot], 1));
                if !as_recommit.iter().any(|(e, _)| *e == exit) {
                    as_recommit.push((exit, flow.edge(node, entry, 1)));
                }
            }
            of_id.push((as_original, as_excused, as_recommit));
        }
        let charged: Vec<((usize, usize), EdgeId)> = to_crash.into_iter().collect();
        edges.push((of_id, charged, free));
    }
    flow.max_flow(source, sink);
    duplicated
        .keys()
        .zip(edges)
        .map(|(id, (of_id, charged, free))| {
            let of_id_excusals = of_id_excusals_of(excusals, id);
            let mut roles: Vec<Role> = of_id
                .iter()
                .enumerate()
                .map(|(k, (as_original, as_excused, as_recommit))| {
                    if flow.flow(*as_original) == 1 {
                        return Role::Original;
                    }
                    if let Some((i, _)) = as_excused.iter().find(|(_, e)| flow.flow(*e) == 1) {
                        return Role::Excused(*i);
                    }
                    // The replay this copy went through passes one copy on, to the
                    // crash whose budget it charges, or out at no budget's cost by an
                    // excusal of that replay (this copy's, if it has one).
                    let Some((exit, _)) = as_recommit.iter().find(|(_, e)| flow.flow(*e) == 1)
                    else {
                        return Role::Unplaced;
                    };
                    if let Some(((_, slot), _)) = charged
                        .iter()
                        .find(|((from, _), e)| from == exit && flow.flow(*e) == 1)
                    {
                        return Role::Recommit(*slot);
                    }
                    match free.get(exit) {
                        Some((e, given)) if flow.flow(*e) == 1 => Role::Excused(
                            given
                                .iter()
                                .copied()
                                .find(|&i| of_id_excusals[i].repeat == k)
                                .unwrap_or(given[0]),
                        ),
                        _ => Role::Unplaced,
                    }
                })
                .collect();
            // Every copy placed as a re-commit or excused leaves the original's place
            // free: the first delivered takes it, so no budget counts an original.
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

/// The partition `tp` as one of `copies` names it (the placement's maps borrow it
/// from the copies).
fn tp_of<'c>(copies: &'c [Copy], tp: &TopicPartition) -> &'c TopicPartition {
    &copies
        .iter()
        .find(|c| &c.tp == tp)
        .expect("an excusal's replay is on its repeat's partition")
        .tp
}

fn of_id_excusals_of<'e>(
    excusals: Option<&'e BTreeMap<ProduceId, Vec<Excusal>>>,
    id: &ProduceId,
) -> &'e [Excusal] {
    excusals.and_then(|e| e.get(id)).map_or(&[], |e| e)
}

/// Whether the replay after `crash` can have committed `copies[k]` (of `id`): the crash
/// came before its first delivery, and another copy on the same partition (a WAL entry
/// names its partition) lay in the crash's hidden tail and existed at the crash, with
/// `copies[k]` where that replay commits: past the durable tail, unless the open that
/// re-commits cut the log (its R1/R2 alarm), then from the cut on. A delivered copy
/// existed at the crash if it was delivered before it or lies below where the replay
/// commits and no later cut or crash ended the log at or below it before it was first
/// delivered ([`reopened`]); one from there on first seen after the crash is the
/// replay's own or a later write (an offset reused after a cut), and cannot be what
/// the replay repeats. A copy never delivered
/// existed at the crash when the world listed it there by identity: damage took it
/// ([`Facts::damage_took_at_crash`]), the next open's R2 cut took it from past the hole
/// ([`Facts::past_hole_at_open`]), or that open found it hidden at another
/// offset than `copies[k]` (a hidden copy can be the one later delivered); and a copy
/// of the id was delivered before the crash.
pub(super) fn recommits(
    facts: &Facts<'_>,
    crash: &CrashFact,
    tail: Tail,
    id: ProduceId,
    copies: &[Copy],
    k: usize,
) -> bool {
    let later = &copies[k];
    if crash.index >= later.first_delivery {
        return false;
    }
    let Tail { start, end, fresh } = tail;
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
                && (earlier.first_delivery < crash.index
                    || earlier.offset < fresh && !reopened(facts, crash, earlier))
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

/// Whether the log on `copy`'s partition ended at or below it between `crash` and the
/// copy's first delivery (a later open's cut, or a later crash's durable tail): its
/// offset was then written afresh, and the copy is no sign of one that existed at the
/// crash.
fn reopened(facts: &Facts<'_>, crash: &CrashFact, copy: &Copy) -> bool {
    log_ended_at(
        facts,
        &copy.tp,
        crash.index,
        copy.first_delivery,
        copy.offset,
    )
}

/// A crash's hidden tail `[start, end)` on a partition, and where its replay commits
/// from (`fresh`): what [`recommits`] asks of every copy there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tail {
    start: Offset,
    end: Offset,
    fresh: Offset,
}

/// The [`Tail`] of `crash` on `tp`; `None` when the crash did not record it.
fn tail_at(facts: &Facts<'_>, crash: &CrashFact, tp: &TopicPartition) -> Option<Tail> {
    let state = crash.partitions.get(tp)?;
    let (start, end) = hidden_tail(facts, crash, state);
    Some(Tail {
        start,
        end,
        fresh: fresh_from(facts, crash, state),
    })
}

/// Where the replay of incarnation `replay` on `tp` stopped committing, at the latest:
/// below the lowest offset acknowledged there to a produce of that incarnation (the
/// store returns from its open, and takes produces, only once its replay is done:
/// helper-51). `Offset::MAX` when none was acknowledged (an open killed first has
/// none), or for no replay.
fn replay_ceiling(facts: &Facts<'_>, tp: &TopicPartition, replay: Option<Incarnation>) -> Offset {
    replay
        .and_then(|i| facts.first_acked.get(&(tp.clone(), i)))
        .copied()
        .unwrap_or(Offset::MAX)
}

/// The replay that can have written `copies[k]` after `crash`: [`replay_of`], passed on
/// to the next one while that is an open never seen complete whose ending crash left
/// the log on the copy's partition at or below it (its account came before a commit
/// that never reached the disk, or before the chunk that held the entry), or one that
/// completed and whose ending crash, before the copy was first delivered, left the log
/// at or below it, or was followed by a cut there before the next replay. `None` when
/// no replay of the crash's entries can have: a completed replay that did not write the
/// copy, while another copy of the id it delivered lasted into the next open
/// ([`kept_by`]), so the next replay found the entry done (helper-48, helper-49).
pub(super) fn replay_writing(
    facts: &Facts<'_>,
    crash: &CrashFact,
    copies: &[Copy],
    k: usize,
) -> Option<Option<Incarnation>> {
    let copy = &copies[k];
    let mut replay = replay_of(facts, crash, &copy.tp);
    while let Some(i) = replay {
        let Some(end) = facts.crash_ending(i) else {
            break;
        };
        let next = replay_of(facts, end, &copy.tp);
        // A cut at or below `offset` before the next replay took what this one wrote
        // there (helper-46; helper-47 for a killed open).
        let cut_below = |offset: Offset| {
            facts.alarms.cuts(&copy.tp).any(|c| {
                c.incarnation > i
                    && next.is_none_or(|n| c.incarnation <= n)
                    && c.index < copy.first_delivery
                    && c.offset <= offset
            })
        };
        let cut_took = || cut_below(copy.offset);
        let moved = if !facts.opened.contains(&i) {
            let tail = end
                .partitions
                .get(&copy.tp)
                .map_or(Offset::MAX, |p| hidden_tail(facts, end, p).1);
            copy.offset >= tail || cut_took()
        } else {
            // A completed replay's commits are durable: it wrote nothing the crash
            // ending it did not leave in the log.
            let moved = end.index < copy.first_delivery
                && (end
                    .partitions
                    .get(&copy.tp)
                    .is_some_and(|p| p.durable_tail <= copy.offset)
                    || cut_took());
            // But while a copy of the id it delivered lasted, the next open found it
            // (visible, so its replay skips the entry; or hidden, and that crash's
            // budget answers for a repeat): no later replay commits the entry again.
            if moved && kept_by(facts, i, end, next, copies, k) {
                return None;
            }
            moved
        };
        if !moved {
            break;
        }
        replay = next;
    }
    Some(replay)
}

/// Whether a copy of the id other than `copies[k]`, on its partition, lasted from the
/// completed open of incarnation `i` into the replay after `end` (the crash ending
/// `i`; that replay is `next`), below the durable tail `end` left: delivered after that open and before `end`
/// (also a copy first delivered earlier, at an offset the replay wrote again:
/// helper-49), with nothing taking it from the log between that delivery and the next
/// replay's open (helper-50: a later skip came after the replay had seen it); or
/// delivered after `end` with nothing taking it between `end` and that delivery (it was
/// in the log at `end`: helper-50). Taking it: a cut at or below it, a clamp that gave
/// its offset up, a skip of its frame, or a crash that left the log at or below it.
fn kept_by(
    facts: &Facts<'_>,
    i: Incarnation,
    end: &CrashFact,
    next: Option<Incarnation>,
    copies: &[Copy],
    k: usize,
) -> bool {
    let (copy, Some(&opened)) = (&copies[k], facts.opened_at.get(&i)) else {
        return false;
    };
    let Some(tail) = end.partitions.get(&copy.tp).map(|p| p.durable_tail) else {
        return false;
    };
    let tp = &copy.tp;
    // The next replay's open has run by its completion; one never seen complete, by the
    // copy's first delivery.
    let horizon = next
        .and_then(|n| facts.opened_at.get(&n).copied())
        .unwrap_or(usize::MAX)
        .min(copy.first_delivery);
    // Whether anything took the copy at `offset` from the log between two indices.
    let taken = |after: usize, before: usize, offset: Offset| {
        log_ended_at(facts, tp, after, before, offset)
            || clamped_at(facts, tp, after, before, offset)
            || facts
                .alarms
                .skips(tp)
                .any(|s| after < s.index && s.index < before && s.contains(offset))
    };
    copies.iter().enumerate().any(|(j, y)| {
        j != k
            && y.tp == *tp
            && y.offset < tail
            && y.deliveries.iter().any(|&d| {
                if opened < d && d < end.index {
                    !taken(d, horizon, y.offset)
                } else {
                    d > end.index && !taken(end.index, d, y.offset)
                }
            })
    })
}
