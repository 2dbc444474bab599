//! Cancelled requests: the server drops an engine future at one of its await points,
//! as an async server does when a client times out or disconnects, or a `select!`
//! picks another branch.
//!
//! A request the seed picks (with the mix's `cancel_probability`, before the heal) is
//! dropped right after its `n`-th poll that returned `Pending`, `n` drawn from 1 to
//! [`POLLS_MAX`]: every await point that suspends is one a drop can reach, whether it
//! waits on the disk, a lock or another caller's fsync. Draws come from their own
//! stream, in the order the server accepts requests, so a run replays exactly.
//!
//! Invariants:
//! - a dropped future is never polled again, and the request answers "cancelled": the
//!   client learns nothing of its outcome (a produce is in doubt, never acknowledged;
//!   a settle had no effect, by the engine's contract);
//! - nothing is cancelled after the heal, so the liveness phase measures the engine.

use crate::fs::dice::Dice;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

/// The most `Pending` polls a cancelled request survives.
pub const POLLS_MAX: u32 = 8;

/// The node's cancel plan: which requests to drop, and when.
pub struct Cancels {
    probability: f64,
    dice: Mutex<Dice>,
}

impl Cancels {
    pub fn new(seed: u64, probability: f64) -> Self {
        assert!(
            (0.0..=1.0).contains(&probability),
            "cancel probability {probability} within 0..=1"
        );
        Cancels {
            probability,
            dice: Mutex::new(Dice::new(seed)),
        }
    }

    /// For the next request: after how many `Pending` polls to drop it, if at all.
    /// Draws nothing when cancels are off, so such runs keep every other draw.
    pub fn draw(&self, healed: bool) -> Option<u32> {
        if self.probability == 0.0 || healed {
            return None;
        }
        let mut dice = self.dice.lock().unwrap_or_else(|e| e.into_inner());
        dice.chance(self.probability)
            .then(|| dice.range(1..=u64::from(POLLS_MAX)) as u32)
    }
}

/// `future`, dropped after `after` polls that returned `Pending` (never when `None`),
/// if `armed()` still holds then (the heal disarms a drop drawn before it); resolves to
/// `None` when it was dropped.
pub fn cancel_after<F: Future + Unpin, A: Fn() -> bool>(
    future: F,
    after: Option<u32>,
    armed: A,
) -> Cancel<F, A> {
    assert!(after != Some(0), "a drop comes after at least one poll");
    Cancel {
        future: Some(future),
        left: after,
        armed,
    }
}

pub struct Cancel<F, A> {
    future: Option<F>,
    left: Option<u32>,
    armed: A,
}

impl<F: Future + Unpin, A: Fn() -> bool + Unpin> Future for Cancel<F, A> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let future = this
            .future
            .as_mut()
            .expect("a cancelled future is not polled again");
        if let Poll::Ready(output) = Pin::new(future).poll(cx) {
            this.future = None;
            return Poll::Ready(Some(output));
        }
        match &mut this.left {
            Some(1) if !(this.armed)() => {
                this.left = None;
                Poll::Pending
            }
            Some(1) => {
                // Dropped at the await point it just suspended in.
                this.future = None;
                Poll::Ready(None)
            }
            Some(left) => {
                *left -= 1;
                Poll::Pending
            }
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Pending `n` times (waking itself), then ready; counts its polls and its drop.
    struct Steps {
        n: u32,
        polls: Arc<AtomicU32>,
        dropped: Arc<AtomicU32>,
    }

    impl Future for Steps {
        type Output = u32;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            let polls = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            if polls > self.n {
                return Poll::Ready(polls);
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    impl Drop for Steps {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn run(n: u32, after: Option<u32>) -> (Option<u32>, u32, u32) {
        run_armed(n, after, true)
    }

    fn run_armed(n: u32, after: Option<u32>, armed: bool) -> (Option<u32>, u32, u32) {
        let polls = Arc::new(AtomicU32::new(0));
        let dropped = Arc::new(AtomicU32::new(0));
        let steps = Steps {
            n,
            polls: Arc::clone(&polls),
            dropped: Arc::clone(&dropped),
        };
        let out = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default())
            .block_on(cancel_after(Box::pin(steps), after, move || armed));
        (
            out,
            polls.load(Ordering::SeqCst),
            dropped.load(Ordering::SeqCst),
        )
    }

    #[test]
    fn a_drop_lands_right_after_the_chosen_pending_poll() {
        assert_eq!(run(5, Some(3)), (None, 3, 1));
        assert_eq!(run(5, Some(1)), (None, 1, 1));
    }

    #[test]
    fn a_future_that_finishes_first_or_is_not_chosen_runs_to_the_end() {
        assert_eq!(run(2, Some(3)), (Some(3), 3, 1));
        assert_eq!(run(5, None), (Some(6), 6, 1));
    }

    #[test]
    fn a_drop_disarmed_by_the_time_it_lands_never_happens() {
        assert_eq!(run_armed(5, Some(3), false), (Some(6), 6, 1));
    }

    #[test]
    fn no_draw_is_made_when_cancels_are_off_or_healed() {
        let off = Cancels::new(7, 0.0);
        assert_eq!(off.draw(false), None);
        let on = Cancels::new(7, 1.0);
        assert_eq!(on.draw(true), None);
        let drawn: Vec<u32> = (0..50).filter_map(|_| on.draw(false)).collect();
        assert_eq!(drawn.len(), 50);
        assert!(drawn.iter().all(|n| (1..=POLLS_MAX).contains(n)));
    }
}
