//! The highest clock the engine may read at each moment of a run, bounded from the
//! run's timeline alone (the wall-clock floor of engine/README.md, which DESIGN.md's
//! contract needs because the wall clock may step backwards).
//!
//! At simulated time `t` in incarnation `i`, `now <= U(t) = max(wall(t), F_i + (t - r_i))`,
//! where `wall(t)` is the simulated wall clock (its base plus `t`, moved back by each
//! clock step so far), `r_i` the restart of `i` (its open came later, so `t - r_i`
//! bounds the monotonic time since the open), and `F_i` bounds the last commit time the
//! open can recover: no engine time before `r_i` exceeded it. `F_0 = 0`; `F_{i+1}` is
//! the highest `U` of incarnation `i`, reached at its crash (the wall clock steps only
//! while the node is down): `max(wall(crash_i), F_i + (crash_i - r_i))`. The bound
//! needs no time the engine reported, so an engine that inflates its clock cannot
//! inflate the bound with it.

use std::collections::BTreeMap;

use crate::history::{Event, EventKind, FaultKind, ProduceId};

/// Slack for whole-millisecond history timestamps, which may trail the engine's reading
/// of the same simulated instant by a fraction.
pub const SLACK_MS: u64 = 1;

/// The bound `U` as the history unfolds: feed it every event after `RunStarted`.
pub struct ClockBound {
    wall_base_ms: u64,
    /// Sum of clock steps back so far.
    stepped_back_ms: u64,
    /// `r_i`, the restart of the current incarnation.
    restart_ms: u64,
    /// `F_i`.
    floor_ms: u64,
    /// Per produce id: the wall clock at its attempt and the steps back by then.
    attempts: BTreeMap<ProduceId, (u64, u64)>,
}

impl ClockBound {
    pub fn new(wall_base_ms: u64) -> Self {
        ClockBound {
            wall_base_ms,
            stepped_back_ms: 0,
            restart_ms: 0,
            floor_ms: 0,
            attempts: BTreeMap::new(),
        }
    }

    /// Moves the bound past `event` (crashes, restarts and clock steps change it).
    pub fn observe(&mut self, event: &Event) {
        let t = event.at_ms;
        match &event.kind {
            EventKind::Crash { .. } => self.floor_ms = self.now_at_most(t),
            EventKind::Restart => self.restart_ms = t,
            EventKind::Fault {
                kind: FaultKind::ClockStep { back_ms },
                ..
            } => self.stepped_back_ms += back_ms,
            EventKind::ProduceAttempt { id, .. } => {
                self.attempts
                    .insert(*id, (self.wall(t), self.stepped_back_ms));
            }
            _ => {}
        }
    }

    /// The least commit time of produce `id` by now: the wall clock at its attempt,
    /// less the steps back since (the engine's clock never reads below the wall clock,
    /// and the commit came after the attempt). `None` for an id never attempted.
    pub fn least_commit(&self, id: ProduceId) -> Option<u64> {
        let &(wall, stepped) = self.attempts.get(&id)?;
        Some(wall.saturating_sub(self.stepped_back_ms - stepped))
    }

    /// The simulated wall clock at `t`.
    pub fn wall(&self, t: u64) -> u64 {
        (self.wall_base_ms + t).saturating_sub(self.stepped_back_ms)
    }

    /// The first simulated ms at which the wall clock reads at least `wall_ms`, given
    /// the steps so far (the clock steps only while the node is down, so within an
    /// incarnation this is exact).
    pub fn first_reading(&self, wall_ms: u64) -> u64 {
        (wall_ms + self.stepped_back_ms).saturating_sub(self.wall_base_ms)
    }

    /// `U(t)`.
    pub fn now_at_most(&self, t: u64) -> u64 {
        self.wall(t)
            .max(self.floor_ms + t.saturating_sub(self.restart_ms))
    }
}
