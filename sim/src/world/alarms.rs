//! The engine's own account, read from the engine: a `tracing` subscriber, installed for
//! the length of one run, that turns every alarm event the engine raises
//! (`cafelog_engine::alarm`) into an [`EventKind::EngineAlarm`] in the history, at the
//! moment it is raised (before the engine acts on it: a clamp is recorded before the
//! clamped HWM is written, even if the node dies in between).
//!
//! Every task of the node runs [`tagged`] with its incarnation, so an alarm carries the
//! incarnation that raised it, even when a killed incarnation's futures are dropped
//! (and raise it) after the next one started.
//!
//! Invariants:
//! - only events from the engine's crate with an `alarm` field are looked at; every other
//!   callsite is never enabled, so the rest of the engine's logging costs nothing;
//! - an alarm whose fields do not build an [`Alarm`] panics: the engine and the harness
//!   disagree on the account, which is a harness bug to fix, not a run to judge.
//!
//! [`EventKind::EngineAlarm`]: crate::history::EventKind::EngineAlarm

use super::recorder::{Scope, Shared, partition_of};
use crate::history::Alarm;
use crate::history::Incarnation;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// A dispatch that lives as long as the process, so that tracing never takes its
/// one-dispatch shortcut. With exactly one live dispatch, tracing-core caches a cold
/// callsite's interest from whichever thread hits it first (tokio-rs/tracing#3611): an
/// engine future of a finished run, dropped outside any run's scope on a test thread,
/// would cache `never` for an alarm and hide it from every run after it in the process.
/// With two or more, interest is the union over every live dispatch, and this one is
/// interested in every alarm (an [`AlarmSubscriber`] with no recorder, never any thread's
/// default, so it sees no events). Each run's own dispatch, on registering, rebuilds the
/// cache.
static KEEP_GENERAL_PATH: std::sync::LazyLock<tracing::Dispatch> = std::sync::LazyLock::new(|| {
    tracing::Dispatch::new(AlarmSubscriber::new(RecorderSlot::default()))
});

/// Makes sure [`KEEP_GENERAL_PATH`] is registered; call before a run installs its own
/// subscriber.
pub fn keep_alarm_interest() {
    std::sync::LazyLock::force(&KEEP_GENERAL_PATH);
}

thread_local! {
    /// The incarnation whose node task is being polled or dropped on this thread.
    static RAISING: Cell<Option<Incarnation>> = const { Cell::new(None) };
}

/// The incarnation whose node task is running on this thread, if a tagged one is.
pub(super) fn running_incarnation() -> Option<Incarnation> {
    RAISING.get()
}

/// A node task, tagged with the incarnation it belongs to.
pub struct Tagged<F> {
    incarnation: Incarnation,
    /// Boxed so that `Tagged` is `Unpin` and drops it in `drop`; `None` once dropped.
    future: Option<Pin<Box<F>>>,
}

/// Runs `future` as a task of `incarnation`: alarms raised while it is polled, or while
/// it is dropped (a kill), are that incarnation's.
pub fn tagged<F: Future>(incarnation: Incarnation, future: F) -> Tagged<F> {
    Tagged {
        incarnation,
        future: Some(Box::pin(future)),
    }
}

impl<F: Future> Future for Tagged<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let previous = RAISING.replace(Some(self.incarnation));
        let future = self.future.as_mut().expect("polled after drop");
        let result = future.as_mut().poll(cx);
        RAISING.set(previous);
        result
    }
}

impl<F> Drop for Tagged<F> {
    fn drop(&mut self) {
        let previous = RAISING.replace(Some(self.incarnation));
        drop(self.future.take());
        RAISING.set(previous);
    }
}

/// Where the subscriber finds the run's recorder (set once the world made it).
pub type RecorderSlot = Arc<Mutex<Option<Shared>>>;

/// The subscriber of one run.
pub struct AlarmSubscriber {
    recorder: RecorderSlot,
}

impl AlarmSubscriber {
    pub fn new(recorder: RecorderSlot) -> Self {
        AlarmSubscriber { recorder }
    }
}

fn is_alarm(meta: &Metadata<'_>) -> bool {
    meta.is_event()
        && meta.target().starts_with("cafelog_engine")
        && meta.fields().field("alarm").is_some()
}

/// An event's fields: numbers and text.
#[derive(Default)]
struct Fields {
    numbers: BTreeMap<&'static str, u64>,
    text: BTreeMap<&'static str, String>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.numbers.insert(field.name(), value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.numbers.insert(field.name(), value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.text.insert(field.name(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.text.insert(field.name(), format!("{value:?}"));
    }
}

impl Subscriber for AlarmSubscriber {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if is_alarm(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        is_alarm(meta)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(name) = fields.text.get("alarm").cloned() else {
            return;
        };
        let alarm = Alarm::from_fields(
            &name,
            |f| fields.numbers.get(f).copied(),
            |f| fields.text.get(f).cloned(),
        )
        .unwrap_or_else(|| panic!("engine alarm {name} with fields the harness cannot read"));
        let tp = fields
            .text
            .get("dir")
            .and_then(|d| partition_of(Path::new(d)));
        let slot = self.recorder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(recorder) = slot.as_ref() {
            let mut rec = recorder.lock();
            let now = rec.now_ms();
            let salvaged = match (&alarm, &tp) {
                (
                    Alarm::Salvaged {
                        first_seq, end_seq, ..
                    },
                    Some(tp),
                ) if first_seq < end_seq => Some((tp.clone(), *first_seq..*end_seq)),
                _ => None,
            };
            if let (Alarm::Hole { .. }, Some(tp)) = (&alarm, &tp) {
                rec.holes_announced.insert(tp.clone());
            }
            // The open raises a cut before it truncates, so a kill after the truncation
            // finds it here (from any incarnation: a dropped future's alarm only narrows
            // what the world carries). A clamp counts too: it shows the word the floor
            // may have come from was above the log (helper-75: a raised flip of it).
            if let (Alarm::TornTail { .. } | Alarm::Hole { .. } | Alarm::Clamp { .. }, Some(tp)) =
                (&alarm, &tp)
            {
                rec.cut_now.insert(tp.clone());
            }
            // Only the running incarnation's: a killed one's futures may still raise as
            // they are dropped, after the next open rewrote the disk.
            let current = RAISING.get().is_none_or(|i| i == rec.history.incarnation());
            // An open that scanned past damage from before its restart has cut it.
            if let (Alarm::LogOpened { .. }, Some(tp), true) = (&alarm, &tp, current) {
                let incarnation = rec.history.incarnation();
                rec.damaged.opened(tp, incarnation);
            }
            let skipped = match (&alarm, &tp, fields.text.get("dir")) {
                (Alarm::FrameSkipped { base, records }, Some(tp), Some(dir)) if current => {
                    let position = fields.numbers.get("position").copied();
                    Some((tp.clone(), PathBuf::from(dir), *base, *records, position))
                }
                _ => None,
            };
            let loaded = match (&alarm, &tp) {
                (Alarm::FrontierLoaded { loaded }, Some(tp)) if current => {
                    Some((tp.clone(), *loaded))
                }
                _ => None,
            };
            let refused = match (&alarm, &tp, fields.text.get("dir")) {
                (Alarm::Refused { .. }, Some(tp), Some(dir)) if current => {
                    Some((tp.clone(), PathBuf::from(dir)))
                }
                _ => None,
            };
            let refusal = match (&alarm, &tp) {
                (Alarm::Refused { .. }, Some(tp)) => Some(Scope::Partition(tp.clone())),
                (Alarm::TopicRefused { topic }, _) => Some(Scope::Topic(topic.clone())),
                _ => None,
            };
            rec.history
                .engine_alarm(now, tp.as_ref(), alarm, RAISING.get());
            if let Some(scope) = refusal {
                let raised_in = RAISING.get().unwrap_or(rec.history.incarnation());
                rec.refusal_known(&scope, raised_in);
            }
            if let Some((tp, dir, base, records, position)) = skipped {
                rec.frame_at_skip(&dir, &tp, base, records, position);
            }
            if let Some((tp, loaded)) = loaded {
                rec.frontier_load_reported(&tp, loaded);
            }
            if let Some((tp, dir)) = refused {
                rec.held_at_refusal(&dir, &tp);
            }
            if let Some((tp, seqs)) = salvaged {
                rec.salvage_wrote(&tp, seqs);
            }
            rec.alarm_raised.notify_all();
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
