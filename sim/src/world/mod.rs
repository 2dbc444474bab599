//! The simulated world: one seed → one run of the real engine under madsim.
//!
//! - The engine's node runs a store on a [`SimFs`] with the engine's background loops
//!   ([`node`]); killing it crashes the disk (the `SimFsPlugin` hook): a power loss, or
//!   a process crash that leaves the page cache to the next incarnation ([`Kill`]).
//! - Producers and consumers run outside that node, so they survive its crashes and
//!   keep the record of what was acknowledged and delivered ([`recorder`]).
//! - A supervisor injects crashes (some aimed right after a commit, before the next HWM
//!   persist), bit flips at rest and wall-clock steps, and heals the world at the
//!   profile's heal time; the run then drains so the checkers can demand convergence.
//!
//! Everything random comes from the seed: madsim's scheduler, the workload and the
//! fault mix (ChaCha streams derived from it), and the disk's own dice.
//!
//! Rooms: this file runs a world (the supervisor, the schedule, the swarm, the heal and
//! drain); `spec` says what a run is, `inject` how faults are made, `restart` what the
//! world reads of the disk at each restart, `swarm` the faults drawn from the mix,
//! `clients` the producers, consumers and sampler; `node` is the engine's side.

pub mod alarms;
pub mod cancel;
mod clients;
pub mod damage;
pub mod disk;
pub mod engine_call;
mod inject;
mod latent;
pub mod node;
pub mod observe;
pub mod recorder;
mod restart;
pub mod shape;
mod spec;
mod swarm;
pub mod workload;

use crate::check::{CheckConfig, CheckReport, Verdict, check};
use crate::clock::SimClock;
use crate::fs::SimFs;
use crate::fs::dice::Dice;
use crate::fs::plugin::{SimFsPlugin, attach};
use crate::history::{
    DiskView, FaultKind, FileKind, HeldCopy, History, OffsetRange, TopicPartition, TopicSetup,
    WalSegmentAtEnd, encode_payload,
};
use crate::profile::Profile;
use crate::swarm::FaultMix;
use cafelog_engine::format::{layout, word};
use cafelog_engine::log::Notify;
use cafelog_engine::store::StoreConfig;
use node::{DATA_ROOT, NodeContext, Request, SimStore};
use observe::ObservingFs;
use recorder::{Paths, Shared};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use workload::Workload;

use clients::*;
use inject::*;
use restart::*;
use spec::sub_seed;
pub use spec::{Action, AlarmName, FlipAt, RunOutcome, RunSpec, ScheduledFault, Trigger};

/// What the world hands back from inside the runtime.
#[derive(Default)]
struct Captured {
    history: History,
    paths: Paths,
    faults: BTreeMap<String, u64>,
    produced: u64,
    kills: Vec<KillAt>,
    flips: Vec<(u64, FlipAt)>,
    idle_wakes: Vec<IdleWake>,
    swarm_faults: Vec<u32>,
}

type Sink = Arc<Mutex<Option<Captured>>>;

pub use crate::trace_hash::trace_hash;
pub use recorder::{IdleWake, KillAt, KillCause};

/// Runs one seed to its verdict. Panics in the engine or the world become
/// [`Verdict::SimulatorCrash`].
pub fn run(spec: &RunSpec) -> RunOutcome {
    let spec_inner = spec.clone();
    let captured: Sink = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&captured);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let mut rt = madsim::runtime::Runtime::with_seed_and_config(
            spec_inner.seed,
            madsim::Config::default(),
        );
        rt.add_simulator::<SimFsPlugin>();
        rt.set_time_limit(Duration::from_millis(spec_inner.profile.end_ms() + 60_000));
        // The engine's alarms reach the history through this run's subscriber.
        alarms::keep_alarm_interest();
        let slot = alarms::RecorderSlot::default();
        let subscriber = alarms::AlarmSubscriber::new(Arc::clone(&slot));
        tracing::subscriber::with_default(subscriber, || rt.block_on(world(spec_inner, sink, slot)))
    }));
    let Captured {
        history,
        paths,
        faults,
        produced,
        kills,
        flips,
        idle_wakes,
        swarm_faults,
    } = captured
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default();
    let config = CheckConfig {
        delivery_bound_ms: spec.profile.delivery_bound_ms,
        redelivery_bound_ms: spec.profile.redelivery_bound_ms,
        wake_bound_ms: spec.profile.wake_bound_ms,
        tick_ms: tick_ms(),
        context_events: 4,
    };
    let (verdict, report) = match result {
        // A checker that panics is the harness's failure: this seed's verdict, like a
        // panic in the run, never lost with the seed.
        Ok(()) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let report = check(&history, &config);
            (report.verdict(&history, &config), report)
        })) {
            Ok((verdict, report)) => (verdict, Some(report)),
            Err(panic) => (Verdict::checker_panic(&*panic), None),
        },
        Err(panic) => (Verdict::from_panic(&*panic), None),
    };
    let mut paths = paths;
    if let Some(r) = &report {
        paths.duplicates_exposed = r.accounting.counts().duplicated;
        paths.delayed_delivered = r.delay_gate.gated_deliveries;
        paths.frontiers_recovered = r.frontier_durable.held_to_durable;
        paths.wakeups_timed = r.woken_promptly.timed;
        paths.rolls_judged = r.layout.rolls_judged;
        paths.partial_drains_judged = r.layout.drains_judged;
        paths.wal_ends_judged = u64::from(r.wal_progress.judged);
        paths.retention_ends_judged = r.retention_progress.sealed;
        paths.frontier_words_judged = r.frontier_progress.checked as u64;
    }
    RunOutcome {
        seed: spec.seed,
        profile: spec.profile.name,
        verdict,
        report,
        trace_hash: trace_hash(&history),
        sim_ms: history.end_ms(),
        history,
        paths,
        faults,
        fault_kinds_on: spec.mix.kinds_on(),
        records_produced: produced,
        kills,
        flips,
        idle_wakes,
        swarm_faults,
    }
}

/// The store ticker's period in ms: how late a lease expiry or an opened delay gate
/// may be noticed.
fn tick_ms() -> u64 {
    u64::try_from(StoreConfig::default().tick_interval.as_millis()).unwrap_or(u64::MAX)
}

/// Shared between the world's tasks.
struct World {
    spec: RunSpec,
    recorder: Shared,
    fs: SimFs,
    clock: SimClock,
    requests: async_channel::Sender<Request>,
    current: Arc<Mutex<Option<SimStore>>>,
    next_id: AtomicU64,
    producers_running: AtomicU64,
    acked: Arc<Notify>,
    /// Set by the node after a fatal I/O error (see [`serve_restart`]).
    restart_requested: Arc<std::sync::atomic::AtomicBool>,
}

impl World {
    /// The running incarnation's store slot (`None` while the node is down).
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<SimStore>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A handle to the running incarnation's store, if the node is up.
    fn store(&self) -> Option<SimStore> {
        self.slot().clone()
    }
}

async fn world(spec: RunSpec, sink: Sink, alarms: alarms::RecorderSlot) {
    let fs =
        SimFs::new(sub_seed(spec.seed, 3), disk_options(&spec)).expect("fault options are valid");
    let recorder = Shared::new(fs.clone());
    // A `default` run records up to about six events per record its profile allows.
    recorder
        .lock()
        .history
        .reserve(usize::try_from(spec.profile.records_max.saturating_mul(6)).unwrap_or(0));
    *alarms.lock().unwrap_or_else(|e| e.into_inner()) = Some(recorder.clone());
    let clock = SimClock::default();
    {
        let topics = spec
            .workload
            .topics
            .iter()
            .map(|t| TopicSetup {
                name: t.name.clone(),
                partitions: t.config.partitions,
                delay_ms: t.config.delay_ms,
                lease_ms: t.config.lease_ms,
                retention_ms: t.config.log.retention_ms,
                hwm_persist_ms: Some(
                    u64::try_from(t.config.log.hwm_persist_interval.as_millis())
                        .unwrap_or(u64::MAX),
                ),
                reaper_interval_ms: Some(
                    u64::try_from(t.config.log.reaper_interval.as_millis()).unwrap_or(u64::MAX),
                ),
            })
            .collect();
        let mut rec = recorder.lock();
        let now = rec.now_ms();
        let io_latency_max_ms = spec.mix.disk().latency_max_ms();
        rec.history.run_started(
            now,
            clock.wall_base_ms(),
            topics,
            io_latency_max_ms,
            Some(node::FRONTIER_PERSIST_MS),
            true,
        );
    }
    let (tx, rx) = async_channel::unbounded();
    let current = Arc::new(Mutex::new(None));
    let restart_requested = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ctx = NodeContext {
        restart_requested: Arc::clone(&restart_requested),
        fs: ObservingFs {
            inner: fs.clone(),
            recorder: recorder.clone(),
        },
        clock: clock.clone(),
        recorder: recorder.clone(),
        requests: rx,
        workload: Arc::new(spec.workload.clone()),
        current: Arc::clone(&current),
        cancels: Arc::new(cancel::Cancels::new(
            sub_seed(spec.seed, 6),
            spec.mix.cancel_probability,
        )),
        loop_drops: Arc::new(cancel::Cancels::new(
            sub_seed(spec.seed, 7),
            if spec.mix.loop_drops {
                spec.mix.cancel_probability
            } else {
                0.0
            },
        )),
        settle_drops: Arc::new(cancel::Cancels::new(
            sub_seed(spec.seed, 8),
            if spec.mix.settle_drops {
                spec.mix.cancel_probability
            } else {
                0.0
            },
        )),
    };
    let handle = madsim::runtime::Handle::current();
    let node = handle
        .create_node()
        .name("engine")
        .init(move || node::run(ctx.clone()))
        .build();
    attach(node.id(), &fs);
    let world = Arc::new(World {
        spec,
        recorder: recorder.clone(),
        fs,
        clock,
        requests: tx,
        current,
        next_id: AtomicU64::new(0),
        producers_running: AtomicU64::new(0),
        acked: Arc::new(Notify::default()),
        restart_requested,
    });

    let mut tasks = Vec::new();
    for (index, plan) in world.spec.workload.producers.iter().enumerate() {
        world.producers_running.fetch_add(1, Ordering::SeqCst);
        tasks.push(madsim::task::spawn(producer(
            Arc::clone(&world),
            index,
            plan.clone(),
        )));
    }
    for (index, plan) in world.spec.workload.consumers.iter().enumerate() {
        tasks.push(madsim::task::spawn(consumer(
            Arc::clone(&world),
            index,
            plan.clone(),
        )));
    }
    tasks.push(madsim::task::spawn(sampler(Arc::clone(&world))));
    supervise(&world, node.id()).await;
    for task in tasks {
        task.abort();
    }
    sample(&world);
    observe_layouts(&world);
    restart::observe_wal_at_end(&world);
    let mut rec = world.recorder.lock();
    add_incarnation_paths(&mut rec, &world);
    // Records sent, not ids drawn: a producer draws one id past `records_max` (and
    // the ids `only_ids` leaves out) without sending it.
    let produced = rec
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, crate::history::EventKind::ProduceAttempt { .. }))
        .count() as u64;
    let captured = Captured {
        history: std::mem::take(&mut rec.history),
        paths: rec.paths.clone(),
        faults: rec.faults.clone(),
        produced,
        kills: std::mem::take(&mut rec.kills),
        flips: std::mem::take(&mut rec.flips),
        idle_wakes: std::mem::take(&mut rec.idle_wakes),
        swarm_faults: std::mem::take(&mut rec.swarm_faults),
    };
    *sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(captured);
}

fn now_ms(world: &World) -> u64 {
    world.recorder.lock().now_ms()
}

/// Injects faults until the heal (from the schedule, or drawn from the mix), heals,
/// then waits for the drain.
async fn supervise(world: &Arc<World>, node: madsim::task::NodeId) {
    match world.spec.schedule.clone() {
        Some(schedule) => run_schedule(world, node, &schedule).await,
        None => swarm::run_swarm(world, node).await,
    }
    heal_and_drain(world, node).await;
}

/// How many engine alarms named `alarm` the running incarnation has raised.
fn alarms_this_incarnation(world: &World, alarm: AlarmName) -> u64 {
    let rec = world.recorder.lock();
    let events = rec.history.events();
    let incarnation = events.last().map_or(0, |e| e.incarnation);
    events
        .iter()
        .rev()
        .take_while(|e| e.incarnation == incarnation)
        .filter(|e| is_alarm_of(e, alarm))
        .count() as u64
}

/// Whether `event` is an engine alarm named `alarm` raised by the incarnation it was
/// recorded in (not by a killed one's future, dropped after the restart).
pub(crate) fn is_alarm_of(event: &crate::history::Event, alarm: AlarmName) -> bool {
    matches!(
        &event.kind,
        crate::history::EventKind::EngineAlarm { alarm: a, raised_in: None, .. }
            if a.name() == alarm.as_str()
    )
}

/// Runs an explicit schedule, in order. A kill's restart waits for the entries that
/// follow it `while_down`.
async fn run_schedule(world: &Arc<World>, node: madsim::task::NodeId, schedule: &[ScheduledFault]) {
    let heal_ms = world.spec.profile.heal_ms;
    let mut down = false;
    for entry in schedule {
        if entry.trigger == Trigger::WhileDown {
            if !down {
                continue;
            }
        } else if std::mem::take(&mut down) {
            restart(world, node);
        }
        match entry.trigger {
            Trigger::AtMs(at) => {
                let now = now_ms(world);
                if at >= heal_ms {
                    break;
                }
                sleep_serving(world, node, at.saturating_sub(now)).await;
            }
            // A swarm's kill repeated: its own time, even past the heal (an aimed
            // crash waits for the next acknowledgement).
            Trigger::AtNs(at) => sleep_serving_until_ns(world, node, at).await,
            Trigger::NextAckAfterNs(at) => {
                sleep_serving_until_ns(world, node, at).await;
                wait_for_next_ack(world).await;
            }
            Trigger::AfterAcks(n) => loop {
                let listener = world.acked.listen();
                if world.recorder.lock().acked_count() as u64 >= n {
                    break;
                }
                // Past the heal (a shrink may have cut it below the kill's time), it
                // waits while a producer runs: the acknowledgement may still come.
                let producing = world.producers_running.load(Ordering::SeqCst) > 0;
                if now_ms(world) >= heal_ms && !producing {
                    return;
                }
                let _ = madsim::time::timeout(Duration::from_millis(50), listener).await;
                serve_restart(world, node).await;
            },
            Trigger::AfterAlarm { alarm, count } => loop {
                let listener = world.recorder.lock().alarm_raised.clone().listen();
                if alarms_this_incarnation(world, alarm) >= count {
                    break;
                }
                // Past the heal (a repeated kill may come after it), it waits while
                // the store opens, where the alarms a kill is aimed at come from.
                if now_ms(world) >= heal_ms && world.recorder.lock().store_open {
                    return;
                }
                let _ = madsim::time::timeout(Duration::from_millis(50), listener).await;
                serve_restart(world, node).await;
            },
            Trigger::WhileDown => {}
        }
        let kills = match &entry.action {
            Action::Crash
            | Action::CrashWithBitFlip { .. }
            | Action::CrashWithClockStep { .. }
            | Action::CrashWithLatentSector => Some(Kill::PowerLoss),
            Action::ProcessCrash | Action::ProcessCrashWithBitFlip { .. } => Some(Kill::Process),
            _ => None,
        };
        if let Some(kind) = kills {
            if matches!(
                entry.trigger,
                Trigger::AfterAcks(_) | Trigger::NextAckAfterNs(_)
            ) {
                world.recorder.lock().paths.crashes_after_commit += 1;
            }
            let cause = match entry.trigger {
                Trigger::NextAckAfterNs(_) => KillCause::AfterAck,
                _ => KillCause::Injected,
            };
            kill(world, node, kind, cause).await;
            down = true;
        }
        match &entry.action {
            Action::Crash | Action::ProcessCrash | Action::Wake => {}
            Action::CrashWithBitFlip { file, at }
            | Action::ProcessCrashWithBitFlip { file, at }
            | Action::BitFlip { file, at } => {
                flip(world, *file, at.as_ref()).await;
            }
            Action::CrashWithClockStep { ms } | Action::ClockStep { ms } => step_clock(world, *ms),
            Action::CrashWithLatentSector | Action::LatentSector => {
                latent::inject(world);
            }
            Action::FsyncEio { .. } | Action::LostFsync { .. } => {
                arm_fsync_fault(world, &entry.action)
            }
        }
    }
    if down {
        restart(world, node);
    }
    // Faults stop at the heal, not at the last entry: the run goes on as the swarm's
    // would until then.
    let now = now_ms(world);
    if now < heal_ms {
        sleep_serving(world, node, heal_ms - now).await;
    }
}

/// The swarm's aimed kill waits for the next produce acknowledgement, at most 500 ms
/// (the window between a commit and the next HWM persist).
async fn wait_for_next_ack(world: &World) {
    let listener = world.acked.listen();
    let _ = madsim::time::timeout(Duration::from_millis(500), listener).await;
}

/// Sleeps until `at` ns of simulated time, in the same short slices as
/// [`sleep_serving`], restarting the node whenever it asked for it.
async fn sleep_serving_until_ns(world: &Arc<World>, node: madsim::task::NodeId, at: u64) {
    loop {
        let now = world.recorder.lock().now_ns();
        if now >= at {
            return;
        }
        let slice = (at - now).min(RESTART_POLL_MS * 1_000_000);
        madsim::time::sleep(Duration::from_nanos(slice)).await;
        world.recorder.lock().supervisor_woke_ns = now + slice;
        serve_restart(world, node).await;
    }
}

/// Sleeps `ms` of simulated time in short slices, restarting the node whenever it
/// asked for it.
async fn sleep_serving(world: &Arc<World>, node: madsim::task::NodeId, ms: u64) {
    let mut left = ms;
    loop {
        let slice = left.min(RESTART_POLL_MS);
        let due = world.recorder.lock().now_ns() + slice * 1_000_000;
        madsim::time::sleep(Duration::from_millis(slice)).await;
        world.recorder.lock().supervisor_woke_ns = due;
        serve_restart(world, node).await;
        left -= slice;
        if left == 0 {
            return;
        }
    }
}

/// How often the supervisor looks for a restart request.
const RESTART_POLL_MS: u64 = 20;

/// The engine treats an fsync error as fatal to its process (its data files cannot be
/// trusted through the same page cache again, see DESIGN.md): the node asks to be
/// restarted, and the supervisor restarts the process as an operator would. The kernel
/// lives on, and with it the pages a failed fsync left in the cache without writing
/// them (Linux), which the next incarnation reads as if they were durable.
async fn serve_restart(world: &Arc<World>, node: madsim::task::NodeId) {
    if world.restart_requested.swap(false, Ordering::SeqCst) {
        world.recorder.lock().paths.restarts_after_fatal_error += 1;
        kill(world, node, Kill::Process, KillCause::Requested).await;
        restart(world, node);
    }
}

/// Slack after a topic's flush and sync intervals for a corrupt write's verify to run.
const CORRUPT_WRITE_SLACK_MS: u64 = 250;

/// The disk's options for `spec`: the mix's, with corrupt writes stopped early enough
/// that the verify of the last one (at a sync, a flush and a sync interval later at
/// most) poisons before the heal, as every other fault's consequence comes.
fn disk_options(spec: &RunSpec) -> crate::fs::FaultOptions {
    let mut options = spec.mix.disk();
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let verify_ms = spec
        .workload
        .topics
        .iter()
        .map(|t| ms(t.config.log.flush_interval).saturating_add(ms(t.config.log.sync_interval)))
        .max()
        .unwrap_or(0)
        .saturating_add(CORRUPT_WRITE_SLACK_MS);
    options.corrupt_write_before = Some(Duration::from_millis(
        spec.profile.heal_ms.saturating_sub(verify_ms),
    ));
    options
}

/// Heals the world, then runs until every acknowledged record is delivered, or the
/// delivery bound passes.
async fn heal_and_drain(world: &Arc<World>, node: madsim::task::NodeId) {
    let profile = &world.spec.profile;
    // A fatal error from before the heal (noticed or not yet) is served first: the
    // restart it needs is a crash, and no crash happens after the heal.
    let poisoned = world.store().is_some_and(|store| {
        store.wal().poisoned().is_some()
            || store
                .partition_statuses()
                .iter()
                .any(|(_, s, _)| s.poisoned.is_some())
    });
    if poisoned {
        world.restart_requested.store(true, Ordering::SeqCst);
    }
    serve_restart(world, node).await;
    let healed_ms = {
        let mut rec = world.recorder.lock();
        rec.drain_fs();
        world.fs.heal();
        rec.healed = true;
        let now = rec.now_ms();
        rec.history.heal(now);
        now
    };
    // Drain: until a consumer has acked every acknowledged record (so the deliveries
    // consumers drop come back after their leases, for the liveness checkers to time),
    // or the bound passes.
    // And not before `hwm_persisted` has judged a sample on every topic: its bound past
    // the heal, and one more sampling period.
    let persist_ms = world
        .spec
        .workload
        .topics
        .iter()
        .map(|t| u64::try_from(t.config.log.hwm_persist_interval.as_millis()).unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0);
    let judged_ms = persist_ms.saturating_add(crate::check::hwm_persisted::SLACK_MS + 100);
    let latency_ms = world.spec.mix.disk().latency_max_ms();
    let wal_bound_ms = crate::check::wal_progress::bound_ms(persist_ms, latency_ms);
    // And, with retention, a reaper's sweep past that: `retention_progress` judges
    // what the reaper left once the floor has settled.
    let reap_bound_ms = world
        .spec
        .workload
        .topics
        .iter()
        .filter(|t| t.config.log.retention_ms.is_some())
        .map(|t| {
            let reaper_ms =
                u64::try_from(t.config.log.reaper_interval.as_millis()).unwrap_or(u64::MAX);
            crate::check::retention_progress::bound_ms(reaper_ms, latency_ms)
        })
        .max()
        .unwrap_or(0);
    let end = profile.end_ms();
    let mut layouts_observed = false;
    loop {
        sleep_serving(world, node, 50).await;
        // Done once every acknowledged record is consumed and the engine is up: the
        // last restart's recovery has run, so the checkers see what it found.
        let up = world.slot().is_some();
        let done = {
            let rec = world.recorder.lock();
            up && world.producers_running.load(Ordering::SeqCst) == 0 && rec.all_acked_consumed()
        };
        let now = now_ms(world);
        // And not before `wal_progress` can judge the WAL: quiet for its bound.
        let quiet_from = (done && now >= profile.heal_ms.saturating_add(judged_ms))
            .then(|| wal_quiet_from(world, healed_ms).saturating_add(wal_bound_ms));
        // `layout` judges the segments as they stand once quiet: retention's wait below
        // only deletes some.
        if quiet_from.is_some_and(|q| now >= q) && !layouts_observed {
            restart::observe_layouts(world);
            layouts_observed = true;
        }
        let judged = quiet_from.is_some_and(|q| now >= q.saturating_add(reap_bound_ms));
        if judged || now >= end {
            return;
        }
    }
}

/// When the running incarnation last wrote its WAL, as `wal_progress` reads it: the
/// heal (at `healed_ms`), its store open's return, or its last produce.
fn wal_quiet_from(world: &World, healed_ms: u64) -> u64 {
    let rec = world.recorder.lock();
    let incarnation = rec.history.incarnation();
    let produced = rec
        .history
        .events()
        .iter()
        .rev()
        .take_while(|e| e.incarnation == incarnation)
        .find(|e| {
            matches!(
                e.kind,
                crate::history::EventKind::ProduceAttempt { .. }
                    | crate::history::EventKind::ProduceAck { .. }
            )
        })
        .map_or(0, |e| e.at_ms);
    healed_ms.max(rec.store_opened_ms).max(produced)
}
