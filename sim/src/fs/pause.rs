//! Latency and scheduling points: the pauses drawn before and after each operation
//! (slow I/O until the heal, and a yield so concurrent tasks interleave).

use super::*;

/// A point where an operation waits for the scheduler.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pause {
    None,
    Yield,
    Sleep(Duration),
}

pub(super) async fn pause(pause: Pause) {
    match pause {
        Pause::None => {}
        Pause::Yield => {
            if madsim::time::TimeHandle::try_current().is_some() {
                YieldNow { yielded: false }.await;
            }
        }
        Pause::Sleep(duration) => {
            if let Some(time) = madsim::time::TimeHandle::try_current() {
                time.sleep(duration).await;
            }
        }
    }
}

/// Returns `Pending` once after waking itself: the task goes back to madsim's ready
/// queue, from which madsim picks tasks in random order.
pub(super) struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            Poll::Ready(())
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

impl State {
    pub(super) fn draw_pauses(&mut self) -> (Pause, Pause) {
        let options = &self.options;
        let dice = &mut self.dice;
        let before = if dice.chance(options.latency_probability) {
            Pause::Sleep(dice.duration(options.latency_min, options.latency_max))
        } else if dice.chance(options.yield_probability) {
            Pause::Yield
        } else {
            Pause::None
        };
        let after = if dice.chance(options.latency_after_probability) {
            Pause::Sleep(dice.duration(options.latency_min, options.latency_max))
        } else {
            Pause::None
        };
        // After the heal slow I/O stops like every other fault (the liveness bounds
        // assume it); the dice are drawn alike, so the run before the heal is unchanged.
        if self.healed {
            let calm = |p: Pause| match p {
                Pause::Sleep(_) => Pause::Yield,
                other => other,
            };
            return (calm(before), calm(after));
        }
        (before, after)
    }
}
