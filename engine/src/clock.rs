//! The time seam: the engine reads time only through [`Clock`].
//!
//! Two kinds of time, never mixed: monotonic time ([`Clock::now`]) drives intervals
//! (flush, sync, HWM persist, reaper, leases); wall-clock milliseconds
//! ([`Clock::wall_ms`]) become record commit times and retention ages. Wall time may
//! step backwards (NTP, a restart on another clock); the log keeps commit times
//! monotonic on its own.

#![expect(
    clippy::disallowed_methods,
    reason = "SystemClock is the one place the engine may read the OS clock"
)]

use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of time and sleeps.
pub trait Clock: Clone + Send + Sync + 'static {
    /// Monotonic time since an arbitrary origin fixed for the clock's life.
    fn now(&self) -> Duration;
    /// Wall-clock time in milliseconds since the Unix epoch. May step backwards.
    fn wall_ms(&self) -> u64;
    /// Completes once `duration` of monotonic time has passed.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send;
}

/// The operating system's clocks; sleeps are served by one shared timer thread so the
/// engine needs no async runtime.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        origin().elapsed()
    }

    fn wall_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        TimerSleep {
            deadline: Instant::now() + duration,
            fired: Arc::new(Mutex::new(false)),
        }
    }
}

struct TimerEntry {
    deadline: Instant,
    waker: Waker,
    fired: Arc<Mutex<bool>>,
}

impl PartialEq for TimerEntry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}
impl Eq for TimerEntry {}
impl PartialOrd for TimerEntry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for TimerEntry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Min-heap on deadline.
        other.deadline.cmp(&self.deadline)
    }
}

struct Timer {
    heap: Mutex<BinaryHeap<TimerEntry>>,
    wake: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            heap: Mutex::new(BinaryHeap::new()),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("cafelog-timer".into())
            .spawn(move || timer_loop(timer))
            .expect("spawn the timer thread");
        timer
    })
}

fn timer_loop(timer: &'static Timer) {
    let mut heap = timer.heap.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        while heap.peek().is_some_and(|e| e.deadline <= now) {
            if let Some(entry) = heap.pop() {
                *entry.fired.lock().unwrap_or_else(|e| e.into_inner()) = true;
                entry.waker.wake();
            }
        }
        heap = match heap.peek().map(|e| e.deadline) {
            Some(deadline) => {
                let wait = deadline.saturating_duration_since(now);
                timer
                    .wake
                    .wait_timeout(heap, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => timer.wake.wait(heap).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

struct TimerSleep {
    deadline: Instant,
    fired: Arc<Mutex<bool>>,
}

impl Future for TimerSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline || *self.fired.lock().unwrap_or_else(|e| e.into_inner())
        {
            return Poll::Ready(());
        }
        // Register (again) with the current waker; a stale entry only causes a spurious poll.
        let timer = timer();
        timer
            .heap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(TimerEntry {
                deadline: self.deadline,
                waker: cx.waker().clone(),
                fired: Arc::clone(&self.fired),
            });
        timer.wake.notify_one();
        Poll::Pending
    }
}

/// A clock the caller moves by hand, for tests: time stands still until
/// [`ManualClock::advance`] or [`ManualClock::set_wall_ms`].
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualState>>,
}

#[derive(Debug, Default)]
struct ManualState {
    now: Duration,
    wall_ms: u64,
    sleepers: Vec<(Duration, Waker)>,
}

impl ManualClock {
    /// A clock at monotonic zero and the given wall time.
    pub fn new(wall_ms: u64) -> Self {
        let clock = Self::default();
        clock.lock().wall_ms = wall_ms;
        clock
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManualState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves both clocks forward by `by` and wakes the sleepers that are due.
    pub fn advance(&self, by: Duration) {
        let due: Vec<Waker> = {
            let mut state = self.lock();
            state.now += by;
            state.wall_ms += u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
            let now = state.now;
            let (due, waiting) = std::mem::take(&mut state.sleepers)
                .into_iter()
                .partition(|(deadline, _)| *deadline <= now);
            state.sleepers = waiting;
            due.into_iter().map(|(_, w)| w).collect()
        };
        due.into_iter().for_each(Waker::wake);
    }

    /// Sets the wall clock (it may go backwards); monotonic time is unchanged.
    pub fn set_wall_ms(&self, wall_ms: u64) {
        self.lock().wall_ms = wall_ms;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        self.lock().now
    }

    fn wall_ms(&self) -> u64 {
        self.lock().wall_ms
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        let deadline = self.now() + duration;
        let clock = self.clone();
        std::future::poll_fn(move |cx| {
            let mut state = clock.lock();
            if state.now >= deadline {
                Poll::Ready(())
            } else {
                state.sleepers.push((deadline, cx.waker().clone()));
                Poll::Pending
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_sleep_waits_at_least_the_duration() {
        let clock = SystemClock;
        let start = clock.now();
        pollster::block_on(clock.sleep(Duration::from_millis(20)));
        assert!(clock.now() - start >= Duration::from_millis(20));
    }

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now(), Duration::ZERO);
        clock.advance(Duration::from_millis(250));
        assert_eq!(clock.now(), Duration::from_millis(250));
        assert_eq!(clock.wall_ms(), 1_250);
        clock.set_wall_ms(10);
        assert_eq!(clock.wall_ms(), 10);
        assert_eq!(clock.now(), Duration::from_millis(250));
    }
}
