//! Broadcast wake-ups without timers: the long-poll primitive (the spec's `NotifyC`).
//!
//! A waiter takes a [`Listener`] *before* it checks its condition; any
//! [`Notify::notify_all`] after that moment completes the listener. So a notification
//! that races the check is never missed (the equivalent of a waiter seeing an
//! already-closed channel), and there is no timer per waiter.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A broadcast point.
#[derive(Debug, Default)]
pub struct Notify {
    inner: Mutex<NotifyState>,
}

#[derive(Debug, Default)]
struct NotifyState {
    generation: u64,
    wakers: Vec<Waker>,
}

impl Notify {
    /// A listener that completes at the next [`Notify::notify_all`].
    pub fn listen(self: &Arc<Self>) -> Listener {
        let generation = self.lock().generation;
        Listener {
            notify: Arc::clone(self),
            generation,
        }
    }

    /// Wakes every listener taken before this call.
    pub fn notify_all(&self) {
        let wakers = {
            let mut state = self.lock();
            state.generation += 1;
            std::mem::take(&mut state.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, NotifyState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Completes once the [`Notify`] it came from has broadcast since it was taken.
#[derive(Debug)]
pub struct Listener {
    notify: Arc<Notify>,
    generation: u64,
}

impl Future for Listener {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.notify.lock();
        if state.generation != self.generation {
            return Poll::Ready(());
        }
        // Bounded: a waker is registered once per poll, and wakers are drained at every
        // broadcast; replace an equivalent waker instead of growing.
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Which of two futures finished first.
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures and returns the first result (left first when both are ready).
pub async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_after_listen_is_never_missed() {
        let notify = Arc::new(Notify::default());
        let listener = notify.listen();
        notify.notify_all();
        pollster::block_on(listener);
    }

    #[test]
    fn a_listener_taken_after_the_notification_waits_for_the_next() {
        let notify = Arc::new(Notify::default());
        notify.notify_all();
        let listener = notify.listen();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut listener = std::pin::pin!(listener);
        assert!(listener.as_mut().poll(&mut cx).is_pending());
        notify.notify_all();
        assert!(listener.as_mut().poll(&mut cx).is_ready());
    }
}
