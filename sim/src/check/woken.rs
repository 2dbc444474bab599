//! `woken_promptly` (liveness): a receive parked on long-poll answers promptly once a
//! record becomes deliverable to it (the spec's "zero missed wakeups").
//!
//! The moment `X` a record became deliverable is bounded from above by the history:
//! 1. **Commit.** A produce ack at `D` on a topic without a delay gate: the commit
//!    advanced the HWM and broadcast before the ack. `X = D`.
//! 2. **Nack.** A nack the engine accepted at `N` readied the offset and broadcast.
//!    `X = N`.
//! 3. **Expiry.** A lease taken by a delivery (or an answer nobody claimed) at `t`, on
//!    a topic with `lease_ms`, with no ack, nack or delivery of the offset before `X`:
//!    the engine leased no later than `t`, and its ticker expires leases and
//!    broadcasts every `tick_ms`. `X = t + lease_ms + tick_ms + 1`.
//! 4. **Gate.** A record of a delayed topic acked at `D`: its commit time `c` is the
//!    engine's clock at the commit, before `D`, and within an incarnation that clock
//!    advances at least a ms per ms, so the gate is open by `D + delay_ms`; the ticker
//!    broadcasts an opened gate. `X = D + delay_ms + tick_ms + 1`, or earlier when a
//!    delivery in the incarnation tells `c`: the engine's clock never reads below the
//!    wall clock, so the gate is open once the wall clock reads `c + delay_ms`, and
//!    `X = max(D, that moment + tick_ms + 1)`.
//!
//! **Rule.** From `X` until the record is first delivered again (to any consumer) or
//! the engine takes it away (`U`), no receive on its partition waits more than
//! `wake_bound_ms`: a receive asked at `A` and answered at `E` has
//! `min(E, U) <= max(A, X) + wake_bound_ms`. A receive parked before `X` must be woken;
//! one asked after it must find the record at once. The engine takes a record away by
//! a consume-time skip of its frame (with its alarm), a reap of its segment, or a
//! frontier it loaded above it on first touch (a fault on the word can put it there);
//! after a lease, an accepted ack settles it.
//!
//! A receive the kill of the node cut short (`ReceiveKilled`, just before the
//! `Crash`) waited until then; one still waiting at the end of the history is not
//! judged. A crash ends every lease and obligation. A wait is judged from where
//! the disk answers at once: from the start in a run without I/O latency, else from
//! the heal plus twice the longest latency plus a tick (an operation begun before the
//! heal may still sleep that long before and after its effect, and the ticker ticks a
//! tick after its round ends); records that became deliverable before that are counted
//! as not judged, their waits judged from there.
//!
//! A receive's wait comes from the history: each delivery carries its receive's ask,
//! an empty answer (park timeout or error) is `ReceiveEmpty`, an answer to a consumer
//! that had given up is `DeliveriesUnclaimed`, and a receive killed unanswered is
//! `ReceiveKilled`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::engine_clock::ClockBound;
use super::facts::Facts;
use super::{CheckConfig, RecordRef, Violation};
use crate::history::{EventKind, Incarnation, Offset, TopicPartition};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WokenReport {
    pub wake_bound_ms: u64,
    /// Records that became deliverable while a receive on their partition waited,
    /// held to the rule, per cause.
    pub timed_by_cause: BTreeMap<&'static str, u64>,
    /// Their sum.
    pub timed: u64,
    /// Of those, records a skip, a reap or a frontier loaded above them took away
    /// before a delivery.
    pub ended_by_engine: u64,
    /// Records watched by a receive that became deliverable while the disk could still
    /// sleep (slow I/O): their waits are judged only from when it could not.
    pub not_judged: u64,
    pub violations: Vec<Violation>,
}

/// Why a record became deliverable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Commit,
    Nack,
    Expiry,
    Gate,
}

impl Cause {
    fn as_str(self) -> &'static str {
        match self {
            Cause::Commit => "commit",
            Cause::Nack => "nack",
            Cause::Expiry => "expiry",
            Cause::Gate => "gate",
        }
    }
}

/// A record deliverable from `at_ms` on, owed to a waiting receive.
struct Owed {
    tp: TopicPartition,
    offset: Offset,
    cause: Cause,
    /// The event that made it deliverable (the ack, nack or lease).
    event: usize,
    at_ms: u64,
    /// Deliveries after this history index count (`0`: any in the incarnation).
    after: usize,
}

/// What happened to one offset in one incarnation.
#[derive(Clone, Copy)]
enum Touch {
    /// Delivered (or answered to a consumer that had given up): a lease.
    Leased,
    Acked,
    Nacked,
}

/// One touch of an offset: its event, when, and what.
#[derive(Clone, Copy)]
struct Touched {
    index: usize,
    at_ms: u64,
    touch: Touch,
}

/// One answered receive: when it was asked, when answered, and the answer's event.
#[derive(Clone, Copy)]
struct Receive {
    asked_ms: u64,
    answered_ms: u64,
    index: usize,
}

type Key = (TopicPartition, Offset);

/// One incarnation's receives, offset histories and obligations.
#[derive(Default)]
struct IncarnationLog {
    incarnation: Incarnation,
    /// The history index of its first event.
    start: usize,
    receives: BTreeMap<TopicPartition, Vec<Receive>>,
    /// Per offset, its touches in history order.
    /// (By partition, then offset: one string comparison per partition, not per offset.)
    touches: BTreeMap<TopicPartition, BTreeMap<Offset, Vec<Touched>>>,
    owed: Vec<Owed>,
    /// Gated records acked here: `(tp, offset, ack index, ack ms, delay_ms)`.
    gated: Vec<(TopicPartition, Offset, usize, u64, u64)>,
    /// Per gated offset, the simulated ms at which the wall clock reads its gate open,
    /// from the commit time its first delivery here reported.
    gate_opens: BTreeMap<Key, u64>,
    /// Per partition, the incarnation's frontier load: `(index, loaded)`.
    loads: BTreeMap<TopicPartition, (usize, Offset)>,
}

struct Setup {
    delays: BTreeMap<String, u64>,
    leases: BTreeMap<String, u64>,
    /// Windows opening before this moment are not judged (the disk may still sleep).
    calm_from_ms: u64,
}

pub fn check(facts: &Facts<'_>, config: &CheckConfig) -> WokenReport {
    let mut report = WokenReport {
        wake_bound_ms: config.wake_bound_ms,
        ..WokenReport::default()
    };
    let events = facts.history.events();
    let mut setup: Option<Setup> = None;
    let mut clock: Option<ClockBound> = None;
    let mut current = IncarnationLog::default();
    let mut incarnation: Incarnation = 0;
    // Between a crash and the restart nothing is served.
    let mut down = false;
    for (index, event) in events.iter().enumerate() {
        if event.incarnation != incarnation {
            incarnation = event.incarnation;
            current = IncarnationLog {
                incarnation,
                start: index,
                ..IncarnationLog::default()
            };
            down = false;
        }
        let t = event.at_ms;
        if let Some(c) = clock.as_mut() {
            c.observe(event);
        }
        if down {
            continue;
        }
        match &event.kind {
            EventKind::RunStarted {
                wall_base_ms,
                topics,
                io_latency_max_ms,
                ..
            } => {
                let heal_ms = facts.heal.map_or(u64::MAX, |(_, ms)| ms);
                setup = Some(Setup {
                    delays: topics
                        .iter()
                        .map(|t| (t.name.clone(), t.delay_ms))
                        .collect(),
                    leases: topics
                        .iter()
                        .map(|t| (t.name.clone(), t.lease_ms))
                        .collect(),
                    // An operation draws its sleeps before and after its effect when it
                    // starts: one begun just before the heal ends by twice the longest,
                    // and the ticker, which sleeps a tick after each round, ticks again
                    // a tick later.
                    calm_from_ms: if *io_latency_max_ms == 0 {
                        0
                    } else {
                        heal_ms.saturating_add(2 * io_latency_max_ms + config.tick_ms)
                    },
                });
                clock = Some(ClockBound::new(*wall_base_ms));
            }
            EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                ..
            } => {
                let Some(s) = &setup else { continue };
                match s.delays.get(&tp.topic) {
                    Some(0) => current.owed.push(Owed {
                        tp: tp.clone(),
                        offset: *offset,
                        cause: Cause::Commit,
                        event: index,
                        at_ms: t,
                        after: 0,
                    }),
                    Some(&delay) => current.gated.push((tp.clone(), *offset, index, t, delay)),
                    None => {}
                }
            }
            EventKind::FrontierObserved {
                tp,
                loaded: Some(loaded),
                ..
            } => {
                current.loads.entry(tp.clone()).or_insert((index, *loaded));
            }
            EventKind::Delivery {
                tp,
                offset,
                committed_at_ms,
                asked_at_ms,
                ..
            } => {
                if let Some(asked) = asked_at_ms {
                    current.answered(tp, *asked, t, index);
                }
                current.touch(tp, *offset, index, t, Touch::Leased);
                if let (Some(s), Some(c)) = (&setup, &clock)
                    && let Some(&delay) = s.delays.get(&tp.topic)
                    && delay > 0
                {
                    current
                        .gate_opens
                        .entry((tp.clone(), *offset))
                        .or_insert_with(|| c.first_reading(committed_at_ms.saturating_add(delay)));
                }
            }
            EventKind::DeliveriesUnclaimed {
                tp,
                offsets,
                asked_at_ms,
                ..
            } => {
                if let Some(asked) = asked_at_ms {
                    current.answered(tp, *asked, t, index);
                }
                for offset in offsets {
                    current.touch(tp, *offset, index, t, Touch::Leased);
                }
            }
            EventKind::ReceiveEmpty {
                tp, asked_at_ms, ..
            }
            | EventKind::ReceiveKilled { tp, asked_at_ms } => {
                current.answered(tp, *asked_at_ms, t, index)
            }
            EventKind::Ack { tp, offset } => current.touch(tp, *offset, index, t, Touch::Acked),
            EventKind::Nack { tp, offset } => {
                current.touch(tp, *offset, index, t, Touch::Nacked);
                current.owed.push(Owed {
                    tp: tp.clone(),
                    offset: *offset,
                    cause: Cause::Nack,
                    event: index,
                    at_ms: t,
                    after: index,
                });
            }
            _ => {}
        }
        let crashed = matches!(event.kind, EventKind::Crash { .. });
        if (crashed || index + 1 == events.len())
            && let Some(s) = &setup
        {
            down = crashed;
            let mut log = std::mem::take(&mut current);
            log.owe_expiries(s, config);
            log.owe_gates(config);
            log.judge(facts, s, config, &mut report);
        }
    }
    report.timed = report.timed_by_cause.values().sum();
    report
}

impl IncarnationLog {
    fn touch(&mut self, tp: &TopicPartition, offset: Offset, index: usize, t: u64, touch: Touch) {
        let offsets = match self.touches.get_mut(tp) {
            Some(offsets) => offsets,
            None => self.touches.entry(tp.clone()).or_default(),
        };
        offsets.entry(offset).or_default().push(Touched {
            index,
            at_ms: t,
            touch,
        });
    }

    fn answered(&mut self, tp: &TopicPartition, asked_ms: u64, answered_ms: u64, index: usize) {
        let receive = Receive {
            asked_ms,
            answered_ms,
            index,
        };
        self.receives.entry(tp.clone()).or_default().push(receive);
    }

    /// Expiry (3 above): every lease whose offset nothing touched again before it can
    /// have expired.
    fn owe_expiries(&mut self, setup: &Setup, config: &CheckConfig) {
        for (tp, offsets) in &self.touches {
            let Some(&lease_ms) = setup.leases.get(&tp.topic) else {
                continue;
            };
            for (i, t, touches, offset) in offsets
                .iter()
                .flat_map(|(o, ts)| ts.iter().enumerate().map(move |(i, t)| (i, t, ts, o)))
            {
                if !matches!(t.touch, Touch::Leased) {
                    continue;
                }
                let expired_ms = t.at_ms + lease_ms + config.tick_ms + 1;
                if touches.get(i + 1).is_some_and(|n| n.at_ms < expired_ms) {
                    continue;
                }
                self.owed.push(Owed {
                    tp: tp.clone(),
                    offset: *offset,
                    cause: Cause::Expiry,
                    event: t.index,
                    at_ms: expired_ms,
                    after: t.index,
                });
            }
        }
    }

    /// Gate (4 above): every gated record acked here.
    fn owe_gates(&mut self, config: &CheckConfig) {
        let slack = config.tick_ms + 1;
        for (tp, offset, index, acked_ms, delay_ms) in std::mem::take(&mut self.gated) {
            let by_ack = acked_ms + delay_ms + slack;
            let by_commit = self
                .gate_opens
                .get(&(tp.clone(), offset))
                .map(|&open_ms| acked_ms.max(open_ms + slack));
            self.owed.push(Owed {
                tp,
                offset,
                cause: Cause::Gate,
                event: index,
                at_ms: by_commit.map_or(by_ack, |c| c.min(by_ack)),
                after: 0,
            });
        }
    }

    /// Holds every obligation of this incarnation to the rule.
    fn judge(
        &self,
        facts: &Facts<'_>,
        setup: &Setup,
        config: &CheckConfig,
        report: &mut WokenReport,
    ) {
        let bound = config.wake_bound_ms;
        // Per partition, the smallest `asked_ms` from each receive on: with the answers
        // in time order, "some receive from here on was asked by U" is one lookup.
        let earliest_asked: BTreeMap<&TopicPartition, Vec<u64>> = self
            .receives
            .iter()
            .map(|(tp, rs)| {
                assert!(
                    rs.windows(2).all(|w| w[0].answered_ms <= w[1].answered_ms),
                    "receives are answered in history order"
                );
                let mut min = u64::MAX;
                let mut suffix: Vec<u64> = rs
                    .iter()
                    .rev()
                    .map(|r| {
                        min = min.min(r.asked_ms);
                        min
                    })
                    .collect();
                suffix.reverse();
                (tp, suffix)
            })
            .collect();
        for o in &self.owed {
            let touches = self
                .touches
                .get(&o.tp)
                .and_then(|offsets| offsets.get(&o.offset))
                .map_or(&[][..], Vec::as_slice);
            // `U`: the record stops being owed at its first delivery since, or an ack
            // the engine accepted (of an earlier delivery: settled), or when the engine
            // takes it away.
            let settled = touches.iter().find(|t| t.index > o.after);
            let delivered_ms = settled.map(|t| t.at_ms);
            let taken_ms = self.taken_by_engine(facts, &o.tp, o.offset);
            let until_ms = delivered_ms
                .unwrap_or(u64::MAX)
                .min(taken_ms.unwrap_or(u64::MAX));
            let receives = self.receives.get(&o.tp).map_or(&[][..], Vec::as_slice);
            // A receive watched the record if it waited at some moment from when the
            // record became deliverable (or was delivered, if that came first: `X` is
            // an upper bound) until `U`: one answered since then, asked by `U`.
            let since = receives.partition_point(|r| r.answered_ms < o.at_ms.min(until_ms));
            let watched = earliest_asked
                .get(&o.tp)
                .and_then(|m| m.get(since))
                .is_some_and(|&asked| asked <= until_ms);
            if !watched {
                continue;
            }
            if o.at_ms < setup.calm_from_ms {
                report.not_judged += 1;
            } else {
                *report.timed_by_cause.entry(o.cause.as_str()).or_insert(0) += 1;
                if taken_ms.is_some_and(|t| delivered_ms.is_none_or(|d| t < d)) {
                    report.ended_by_engine += 1;
                }
            }
            // Each receive's wait while the record was owed and the disk calm,
            // `[max(A, X, calm), min(E, U)]`, must not exceed the bound. None can when
            // `U` comes within the bound, and none answered within it of `max(X, calm)`.
            let floor = o.at_ms.max(setup.calm_from_ms).saturating_add(bound);
            if until_ms <= floor {
                continue;
            }
            let first = receives.partition_point(|r| r.answered_ms <= floor);
            let Some((from, late)) = receives[first..].iter().find_map(|r| {
                let from = r.asked_ms.max(o.at_ms).max(setup.calm_from_ms);
                (r.answered_ms.min(until_ms) > from + bound).then_some((from, r))
            }) else {
                continue;
            };
            let (asked, answered) = (late.asked_ms, late.answered_ms);
            let outcome = match settled {
                Some(t) if matches!(t.touch, Touch::Acked) => {
                    format!("acked only at t={}ms", t.at_ms)
                }
                Some(t) if t.at_ms <= answered => format!("delivered only at t={}ms", t.at_ms),
                Some(t) => format!("not delivered before t={}ms", t.at_ms),
                None if taken_ms.is_some() => "taken away by the engine later".to_owned(),
                None => "not delivered since".to_owned(),
            };
            report.violations.push(Violation {
                message: format!(
                    "{} offset {} deliverable from t={}ms ({}); a receive asked at t={asked}ms \
                     waited until t={answered}ms, {outcome}: more than {bound} ms (the wake \
                     bound) after t={from}ms",
                    o.tp,
                    o.offset,
                    o.at_ms,
                    describe(o.cause, facts.at_ms(o.event)),
                ),
                records: vec![RecordRef::new(&o.tp, Some(o.offset), None)],
                events: vec![o.event, late.index],
            });
        }
    }

    /// When the engine took `offset` away in this incarnation, if it did: a
    /// consume-time skip of its frame (with its alarm), a reap of its segment, or a load
    /// on first touch of a frontier above it (settled: whether the load may pass the
    /// offset is `frontier_durable`'s rule 2 to judge).
    fn taken_by_engine(
        &self,
        facts: &Facts<'_>,
        tp: &TopicPartition,
        offset: Offset,
    ) -> Option<u64> {
        let skips = facts
            .alarms
            .skips(tp)
            .filter(|s| s.incarnation == self.incarnation && s.contains(offset))
            .map(|s| s.index);
        let reaps = facts
            .reaped
            .iter()
            .filter(|r| &r.tp == tp && r.contains(offset) && r.index >= self.start)
            .map(|r| r.index);
        let load = self
            .loads
            .get(tp)
            .filter(|&&(_, loaded)| offset < loaded)
            .map(|&(index, _)| index);
        skips
            .chain(reaps)
            .chain(load)
            .min()
            .map(|index| facts.at_ms(index))
    }
}

fn describe(cause: Cause, at_ms: u64) -> String {
    match cause {
        Cause::Commit => format!("committed, acked at t={at_ms}ms"),
        Cause::Nack => format!("nacked at t={at_ms}ms"),
        Cause::Expiry => format!("its lease from t={at_ms}ms expired"),
        Cause::Gate => format!("its delay gate open, acked at t={at_ms}ms"),
    }
}
