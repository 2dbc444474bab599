//! Background loops as plain futures: the embedder runs them on any executor, or hands
//! them to a [`Spawn`]. Each returns when the log is closed or poisoned.

use super::notify::race;
use super::{FsyncPolicy, Log, LogError};
use crate::clock::Clock;
use crate::fs::Fs;
use std::future::Future;
use std::pin::Pin;

/// A background loop's future.
pub type LoopFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Starts a background loop: each call makes a fresh future of it. A loop keeps what it
/// must not forget in the log (or store) it runs for, never in the future alone, so a
/// loop dropped at any await and started again carries on where the shared state says.
pub type LoopStart = Box<dyn Fn() -> LoopFuture + Send + Sync + 'static>;

/// Something that runs a future to completion in the background.
pub trait Spawn {
    fn spawn(&self, future: LoopFuture);

    /// Runs the background loop `name`. The default starts it once; an embedder whose
    /// tasks can be dropped (a supervisor that restarts a failed task, a simulator that
    /// cancels one) may call `start` again whenever the last future is gone.
    fn spawn_loop(&self, name: &'static str, start: LoopStart) {
        let _ = name;
        self.spawn(start());
    }
}

impl<F: Fs, C: Clock> Log<F, C> {
    fn stopped(&self) -> bool {
        let st = self.state();
        st.closed || st.poisoned.is_some()
    }

    /// One flusher step: drain the buffer when a threshold is reached, then fsync when
    /// the policy says so (per write, or batched on `sync_interval` / `sync_bytes`).
    pub async fn flush_tick(&self) -> Result<(), LogError> {
        let config = &self.inner.config;
        let now = self.inner.clock.now();
        let (flush_due, sync_due) = {
            let st = self.state();
            let flush_due = !st.buffer.is_empty()
                && (st.buffer_bytes >= config.flush_bytes
                    || st.buffer.len() >= config.flush_records
                    || st
                        .oldest_buffered_at
                        .is_some_and(|at| now.saturating_sub(at) >= config.flush_interval));
            let sync_due = st.written_end > st.durable_end
                && (st.unsynced_bytes >= config.sync_bytes
                    || now.saturating_sub(st.last_sync_at) >= config.sync_interval);
            (flush_due, sync_due)
        };
        if !flush_due && !sync_due {
            return Ok(());
        }
        if flush_due {
            while self.encode_frame(u64::MAX).await? {}
        }
        let mut io = self.inner.io.lock().await;
        self.write_encoded(&mut io, config.fsync == FsyncPolicy::PerWrite)
            .await?;
        let sync_due = {
            let st = self.state();
            st.written_end > st.durable_end
                && (st.unsynced_bytes >= config.sync_bytes
                    || self.inner.clock.now().saturating_sub(st.last_sync_at)
                        >= config.sync_interval)
        };
        if sync_due {
            self.sync_locked(&mut io).await?;
        }
        Ok(())
    }

    /// The flusher: wakes on a buffer threshold or every `flush_interval`.
    pub async fn run_flusher(self) {
        while !self.stopped() {
            let wanted = self.inner.flush_wanted.listen();
            race(
                wanted,
                self.inner.clock.sleep(self.inner.config.flush_interval),
            )
            .await;
            if self.flush_tick().await.is_err() {
                return;
            }
        }
    }

    /// The HWM persister: persists the HWM every `hwm_persist_interval` when it moved.
    pub async fn run_hwm_persister(self) {
        while !self.stopped() {
            self.inner
                .clock
                .sleep(self.inner.config.hwm_persist_interval)
                .await;
            if self.persist_hwm().await.is_err() {
                return;
            }
        }
    }

    /// The reaper: one retention sweep every `reaper_interval`.
    pub async fn run_reaper(self) {
        while !self.stopped() {
            self.inner
                .clock
                .sleep(self.inner.config.reaper_interval)
                .await;
            if let Err(e) = self.reap_once().await {
                tracing::error!(error = %e, "retention sweep failed");
            }
        }
    }

    /// Hands the flusher, HWM persister and reaper to `spawner`.
    pub fn spawn_background(&self, spawner: &impl Spawn) {
        let log = self.clone();
        spawner.spawn_loop(
            "flusher",
            Box::new(move || Box::pin(log.clone().run_flusher())),
        );
        let log = self.clone();
        spawner.spawn_loop(
            "hwm_persister",
            Box::new(move || Box::pin(log.clone().run_hwm_persister())),
        );
        let log = self.clone();
        spawner.spawn_loop(
            "reaper",
            Box::new(move || Box::pin(log.clone().run_reaper())),
        );
    }
}
