//! Placing every copy of every duplicated id at once: one original per id, each other
//! copy a re-commit by a crash whose hidden tail held another copy, within each
//! crash's bound (a maximum flow).

use super::tail::fresh_from;
use super::*;

/// What the placement made of one copy of a duplicated id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
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
pub(super) fn place(
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
pub(super) fn recommits(
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
