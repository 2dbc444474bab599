//! The line between the harness and the engine, drawn where a profiler can see it.
//!
//! Every engine future the node polls (the store's open, each request, the background
//! loops) goes through [`EngineCall`], whose `poll` calls [`engine_poll`], a function
//! that is never inlined. In a callgrind profile, the inclusive cost of `engine_poll`
//! is the engine's share of a run (with the simulated disk it calls); the rest is the
//! harness: madsim's scheduler, the clients, fault injection, the history and the
//! checkers. BENCHMARKS.md ("The simulator's ceiling") uses this split.
//!
//! It costs one call per poll and changes nothing else: no scheduling, no randomness.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An engine future, polled through [`engine_poll`].
pub struct EngineCall<F>(F);

/// Boxes `future` (the node keeps its own futures small, since madsim copies a task's
/// whole future when it spawns it) and marks it as the engine's.
pub fn engine<F: Future>(future: F) -> EngineCall<Pin<Box<F>>> {
    EngineCall(Box::pin(future))
}

/// Marks an already pinned engine future (the background loops the store hands out).
pub fn engine_pinned<F: Future + Unpin>(future: F) -> EngineCall<F> {
    EngineCall(future)
}

impl<F: Future + Unpin> Future for EngineCall<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        engine_poll(Pin::new(&mut self.0), cx)
    }
}

/// Where the harness hands control to the engine.
#[inline(never)]
pub fn engine_poll<F: Future + Unpin>(
    future: Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<F::Output> {
    future.poll(cx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_call_yields_what_its_future_yields() {
        let ran = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default())
            .block_on(async {
                let mut polls = 0;
                let value = engine(std::future::poll_fn(|cx| {
                    polls += 1;
                    if polls < 3 {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    } else {
                        Poll::Ready(polls * 7)
                    }
                }))
                .await;
                (value, polls)
            });
        assert_eq!(ran, (21, 3));
    }
}
