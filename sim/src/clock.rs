//! [`SimClock`]: the engine's [`Clock`] over madsim's simulated time.
//!
//! - `now()` is simulated time since the runtime started (monotonic, never steps);
//! - `wall_ms()` is `wall_base_ms + now + offset`, where the offset only moves through
//!   [`SimClock::step_wall`] (e.g. backwards across a restart) and the result is clamped
//!   at 0;
//! - `sleep` is `madsim::time::sleep` (which waits at least 1 ms).
//!
//! Clones share the offset, so the harness keeps one outside the node and steps it.
//! Every method must run inside a madsim runtime: a `SimClock` outside a simulation is a
//! harness bug and panics.

use cafelog_engine::clock::Clock;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// A wall-clock base that looks like a recent date (2023-11-14).
pub const WALL_BASE_MS_DEFAULT: u64 = 1_700_000_000_000;

/// Simulated monotonic and wall time.
#[derive(Clone, Debug)]
pub struct SimClock {
    wall_base_ms: u64,
    wall_offset_ms: Arc<AtomicI64>,
}

impl SimClock {
    /// A clock whose wall time starts at `wall_base_ms` when the runtime starts.
    pub fn new(wall_base_ms: u64) -> Self {
        Self {
            wall_base_ms,
            wall_offset_ms: Arc::new(AtomicI64::new(0)),
        }
    }

    /// Moves wall time by `delta_ms` (negative: backwards). Monotonic time is unchanged.
    pub fn step_wall(&self, delta_ms: i64) {
        self.wall_offset_ms.fetch_add(delta_ms, Ordering::Relaxed);
    }

    /// The wall clock at simulated time 0.
    pub fn wall_base_ms(&self) -> u64 {
        self.wall_base_ms
    }

    /// The total of all steps so far.
    pub fn wall_offset_ms(&self) -> i64 {
        self.wall_offset_ms.load(Ordering::Relaxed)
    }
}

impl Default for SimClock {
    fn default() -> Self {
        Self::new(WALL_BASE_MS_DEFAULT)
    }
}

fn elapsed() -> Duration {
    madsim::time::TimeHandle::try_current()
        .expect("SimClock used outside a madsim runtime")
        .elapsed()
}

impl Clock for SimClock {
    fn now(&self) -> Duration {
        elapsed()
    }

    fn wall_ms(&self) -> u64 {
        let elapsed_ms = i128::try_from(elapsed().as_millis()).unwrap_or(i128::MAX);
        let wall = i128::from(self.wall_base_ms) + elapsed_ms + i128::from(self.wall_offset_ms());
        u64::try_from(wall.max(0)).unwrap_or(u64::MAX)
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        madsim::time::sleep(duration)
    }
}
