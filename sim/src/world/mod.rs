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

pub mod alarms;
pub mod cancel;
pub mod damage;
pub mod disk;
pub mod engine_call;
mod latent;
pub mod node;
pub mod observe;
pub mod recorder;
pub mod shape;
pub mod workload;

use crate::check::{CheckConfig, CheckReport, Verdict, check};
use crate::clock::SimClock;
use crate::fs::SimFs;
use crate::fs::dice::Dice;
use crate::fs::plugin::{SimFsPlugin, attach};
use crate::history::{
    DiskView, FaultKind, FileKind, HeldCopy, History, OffsetRange, TopicPartition, TopicSetup,
    encode_payload,
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

/// What the world hands back from inside the runtime.
#[derive(Default)]
struct Captured {
    history: History,
    paths: Paths,
    faults: BTreeMap<String, u64>,
    produced: u64,
    kills: Vec<KillAt>,
    flips: Vec<(u64, FlipAt)>,
}

type Sink = Arc<Mutex<Option<Captured>>>;

/// Sub-seeds, derived from the run's seed so each stream is independent.
fn sub_seed(seed: u64, stream: u64) -> u64 {
    let mut x = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Everything that defines a run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub seed: u64,
    pub profile: Profile,
    pub workload: Workload,
    pub mix: FaultMix,
    /// An explicit fault schedule (scenarios, shrinking). When set, it replaces the
    /// mix's random crashes, flips and clock steps; the mix's disk faults still apply.
    pub schedule: Option<Vec<ScheduledFault>>,
}

/// When a scheduled fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// At this simulated ms.
    AtMs(u64),
    /// At this simulated ns (a shrink repeating a swarm's kill to the nanosecond).
    AtNs(u64),
    /// Right after the entry before, while the node it killed is down (its restart
    /// waits): a second fault at the same kill.
    WhileDown,
    /// Right after the Nth produce acknowledgement (so before the next HWM persist).
    AfterAcks(u64),
}

/// Exactly which bit a flip hit: the durable file, the byte and the bit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlipAt {
    pub path: String,
    pub position: u64,
    pub bit: u8,
}

/// What a scheduled fault does.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Action {
    /// Kill and restart the engine's node (the disk crashes with it: a power loss).
    Crash,
    /// Kill and restart the engine's process only: the page cache survives.
    ProcessCrash,
    /// Kill the node, flip one bit of durable data in a file of this kind (that bit,
    /// when `at` names one), restart.
    CrashWithBitFlip { file: FileKind, at: Option<FlipAt> },
    /// The same after a process crash: the page cache survives.
    ProcessCrashWithBitFlip { file: FileKind, at: Option<FlipAt> },
    /// Flip one bit of durable data (while the node runs, or `while_down`).
    BitFlip { file: FileKind, at: Option<FlipAt> },
    /// Make one sector of a segment unreadable (`while_down` after a power loss).
    LatentSector,
    /// Step the wall clock back by `ms` (`while_down`).
    ClockStep { ms: u64 },
    /// Kill the node, step the wall clock back by `ms`, restart.
    CrashWithClockStep { ms: u64 },
    /// Kill the node, make one sector of a segment unreadable, restart.
    CrashWithLatentSector,
    /// The next fsync with pending data fails with EIO.
    FsyncEio,
    /// The next fsync with pending data returns Ok and persists nothing.
    LostFsync,
}

/// One entry of an explicit schedule.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScheduledFault {
    pub trigger: Trigger,
    pub action: Action,
}

impl RunSpec {
    /// The run a seed means on a profile.
    pub fn from_seed(seed: u64, profile: &Profile) -> RunSpec {
        let mut dice = Dice::new(sub_seed(seed, 1));
        let mut workload = Workload::draw(&mut dice, profile);
        let mut dice = Dice::new(sub_seed(seed, 2));
        let mix = FaultMix::draw(&mut dice, profile);
        let mut dice = Dice::new(sub_seed(seed, 3));
        workload.wal_segment_bytes = workload::draw_wal_segment_bytes(&mut dice);
        RunSpec {
            seed,
            profile: profile.clone(),
            workload,
            mix,
            schedule: None,
        }
    }

    /// The run a seed means on a profile with the fault kinds `without` turned off
    /// (each one of [`crate::swarm::WITHOUT_KINDS`]): how `--without` and a corpus
    /// entry's `without` replay a seed as it ran before the swarm drew those kinds.
    pub fn from_seed_without(
        seed: u64,
        profile: &Profile,
        without: &[String],
    ) -> Result<RunSpec, String> {
        let mut spec = RunSpec::from_seed(seed, profile);
        for kind in without {
            if kind == "wal_roll" {
                spec.workload.wal_segment_bytes = workload::default_wal_segment_bytes();
            } else {
                spec.mix.without(kind)?;
            }
        }
        Ok(spec)
    }
}

/// The result of one run.
#[derive(Debug)]
pub struct RunOutcome {
    pub seed: u64,
    pub profile: &'static str,
    pub verdict: Verdict,
    pub report: Option<CheckReport>,
    pub history: History,
    pub paths: Paths,
    pub faults: BTreeMap<String, u64>,
    pub fault_kinds_on: Vec<&'static str>,
    pub trace_hash: u64,
    pub sim_ms: u64,
    pub records_produced: u64,
    /// Every kill before the heal, in the order of its `Crash`/`ProcessCrash` fault
    /// event: exactly when it came, so a schedule can repeat it (the history keeps ms).
    pub kills: Vec<KillAt>,
    /// Every bit flip, in the order of its `BitFlip` fault event: when (ns) and which
    /// bit, so a schedule can repeat it.
    pub flips: Vec<(u64, FlipAt)>,
}

pub use crate::trace_hash::trace_hash;
pub use recorder::{KillAt, KillCause};

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
    /// Partitions whose segments took damage at rest.
    damaged: Mutex<std::collections::BTreeSet<TopicPartition>>,
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
    let fs = SimFs::new(sub_seed(spec.seed, 3), spec.mix.disk()).expect("fault options are valid");
    let recorder = Shared::new(fs.clone());
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
            })
            .collect();
        let mut rec = recorder.lock();
        let now = rec.now_ms();
        let io_latency_max_ms = spec.mix.disk().latency_max_ms();
        rec.history
            .run_started(now, clock.wall_base_ms(), topics, io_latency_max_ms);
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
        damaged: Mutex::new(std::collections::BTreeSet::new()),
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
    let mut rec = world.recorder.lock();
    add_incarnation_paths(&mut rec, &world);
    let captured = Captured {
        history: std::mem::take(&mut rec.history),
        paths: rec.paths.clone(),
        faults: rec.faults.clone(),
        produced: world.next_id.load(Ordering::SeqCst),
        kills: std::mem::take(&mut rec.kills),
        flips: std::mem::take(&mut rec.flips),
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
        None => run_swarm(world, node).await,
    }
    heal_and_drain(world, node).await;
}

/// Runs an explicit schedule, in order. A kill's restart waits for the entries that
/// follow it `while_down`.
async fn run_schedule(world: &Arc<World>, node: madsim::task::NodeId, schedule: &[ScheduledFault]) {
    let heal_ms = world.spec.profile.heal_ms;
    let mut dice = Dice::new(sub_seed(world.spec.seed, 4));
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
            Trigger::AfterAcks(n) => loop {
                let listener = world.acked.listen();
                if world.recorder.lock().acked.len() as u64 >= n {
                    break;
                }
                if now_ms(world) >= heal_ms {
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
            if matches!(entry.trigger, Trigger::AfterAcks(_)) {
                world.recorder.lock().paths.crashes_after_commit += 1;
            }
            kill(world, node, kind, KillCause::Injected).await;
            down = true;
        }
        match &entry.action {
            Action::Crash | Action::ProcessCrash => {}
            Action::CrashWithBitFlip { file, at }
            | Action::ProcessCrashWithBitFlip { file, at }
            | Action::BitFlip { file, at } => {
                flip(world, &mut dice, Some(*file), at.as_ref()).await;
            }
            Action::CrashWithClockStep { ms } | Action::ClockStep { ms } => step_clock(world, *ms),
            Action::CrashWithLatentSector | Action::LatentSector => {
                latent::inject(world);
            }
            Action::FsyncEio | Action::LostFsync => arm_fsync_fault(world, &entry.action),
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
        serve_restart(world, node).await;
    }
}

/// Sleeps `ms` of simulated time in short slices, restarting the node whenever it
/// asked for it.
async fn sleep_serving(world: &Arc<World>, node: madsim::task::NodeId, ms: u64) {
    let mut left = ms;
    loop {
        let slice = left.min(RESTART_POLL_MS);
        madsim::time::sleep(Duration::from_millis(slice)).await;
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

/// Makes the disk fail its next fsync once, the way `action` says.
fn arm_fsync_fault(world: &World, action: &Action) {
    let counts = world.fs.event_counts();
    let mut options = world.fs.options();
    match action {
        Action::FsyncEio => {
            let fired = counts
                .get(&crate::fs::FsEventKind::FsyncEio)
                .copied()
                .unwrap_or(0);
            options.fsync_eio_probability = 1.0;
            options.fsync_eio_max = u32::try_from(fired + 1).unwrap_or(u32::MAX);
        }
        _ => {
            let fired = counts
                .get(&crate::fs::FsEventKind::LostFsync)
                .copied()
                .unwrap_or(0);
            options.lost_fsync_probability = 1.0;
            options.lost_fsync_max = u32::try_from(fired + 1).unwrap_or(u32::MAX);
        }
    }
    world
        .fs
        .set_options(options)
        .expect("armed fault options are valid");
}

/// Crashes, flips and clock steps drawn from the fault mix, until the heal.
async fn run_swarm(world: &Arc<World>, node: madsim::task::NodeId) {
    let profile = &world.spec.profile;
    let mix = &world.spec.mix;
    let mut dice = Dice::new(sub_seed(world.spec.seed, 4));
    // A stream of its own, so that runs without process crashes draw as before.
    let mut kinds = Dice::new(sub_seed(world.spec.seed, 5));
    let mut crashes = 0u32;
    let mut flips = 0u32;
    let mut steps = 0u32;
    let mut latents = 0u32;
    let mut latent_dice = Dice::new(sub_seed(world.spec.seed, 7));
    let mut next_flip_ms = next_exp(&mut dice, mix.bit_flips_per_s);
    loop {
        let now = now_ms(world);
        if now >= profile.heal_ms {
            break;
        }
        let gap = mix
            .crash_mean_gap_ms
            .filter(|_| crashes < mix.crashes_max)
            .map_or(profile.heal_ms - now, |mean| exp_ms(&mut dice, mean).max(1));
        let wake = (now + gap)
            .min(profile.heal_ms)
            .min(next_flip_ms.unwrap_or(u64::MAX));
        sleep_serving(world, node, wake.saturating_sub(now).max(1)).await;
        let now = now_ms(world);
        if now >= profile.heal_ms {
            break;
        }
        if next_flip_ms.is_some_and(|at| now >= at) {
            if flips < mix.bit_flips_max && flip(world, &mut dice, None, None).await {
                flips += 1;
            }
            next_flip_ms = next_exp(&mut dice, mix.bit_flips_per_s).map(|d| now + d);
            continue;
        }
        if mix.crash_mean_gap_ms.is_none() || crashes >= mix.crashes_max {
            continue;
        }
        let aimed = dice.chance(mix.crash_after_commit_fraction);
        let cause = if aimed {
            KillCause::AfterAck
        } else {
            KillCause::Injected
        };
        if aimed {
            // The window between a commit and the next HWM persist: crash right after
            // the next acknowledgement.
            let listener = world.acked.listen();
            let _ = madsim::time::timeout(Duration::from_millis(500), listener).await;
            world.recorder.lock().paths.crashes_after_commit += 1;
        }
        let kind = if mix.process_crash_fraction > 0.0 && kinds.chance(mix.process_crash_fraction) {
            Kill::Process
        } else {
            Kill::PowerLoss
        };
        kill(world, node, kind, cause).await;
        if flips < mix.bit_flips_max && dice.chance(0.5) && flip(world, &mut dice, None, None).await
        {
            flips += 1;
        }
        // From a stream of its own, so that runs without latent sectors draw as before.
        if kind == Kill::PowerLoss
            && latents < mix.latent_sectors_max
            && latent_dice.chance(mix.latent_sector_probability)
            && latent::inject(world)
        {
            latents += 1;
        }
        if steps < mix.clock_steps_max && dice.chance(mix.clock_step_probability) {
            let back = dice.range(1..=mix.clock_step_back_ms_max.max(1));
            step_clock(world, back);
            steps += 1;
        }
        restart(world, node);
        crashes += 1;
    }
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
    {
        let mut rec = world.recorder.lock();
        rec.drain_fs();
        world.fs.heal();
        rec.healed = true;
        let now = rec.now_ms();
        rec.history.heal(now);
    }
    // Drain: until a consumer has acked every acknowledged record (so the deliveries
    // consumers drop come back after their leases, for the liveness checkers to time),
    // or the bound passes.
    // And not before `hwm_persisted` has judged a sample on every topic: its bound past
    // the heal, and one more sampling period.
    let judged_ms = world
        .spec
        .workload
        .topics
        .iter()
        .map(|t| u64::try_from(t.config.log.hwm_persist_interval.as_millis()).unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0)
        .saturating_add(crate::check::hwm_persisted::SLACK_MS + 100);
    let end = profile.end_ms();
    loop {
        sleep_serving(world, node, 50).await;
        // Done once every acknowledged record is consumed and the engine is up: the
        // last restart's recovery has run, so the checkers see what it found.
        let up = world.slot().is_some();
        let done = {
            let rec = world.recorder.lock();
            up && world.producers_running.load(Ordering::SeqCst) == 0
                && rec.acked.is_subset(&rec.consumed)
        };
        let now = now_ms(world);
        if (done && now >= profile.heal_ms.saturating_add(judged_ms)) || now >= end {
            return;
        }
    }
}

fn exp_ms(dice: &mut Dice, mean_ms: u64) -> u64 {
    let u = dice.unit().max(1e-9);
    (-(u.ln()) * mean_ms as f64) as u64
}

fn next_exp(dice: &mut Dice, per_s: f64) -> Option<u64> {
    (per_s > 0.0).then(|| exp_ms(dice, (1000.0 / per_s) as u64))
}

/// How a kill ends an incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kill {
    /// The machine loses power: whatever is not durable is lost or torn.
    PowerLoss,
    /// Only the engine's process dies: the page cache and the pending writes survive.
    Process,
}

/// Kills the engine's node and records what the next incarnation will open from.
async fn kill(world: &Arc<World>, node: madsim::task::NodeId, kind: Kill, cause: KillCause) {
    {
        let mut rec = world.recorder.lock();
        add_incarnation_paths(&mut rec, world);
    }
    let memory: BTreeMap<TopicPartition, u64> = world
        .slot()
        .take()
        .map(|store| {
            store
                .partition_statuses()
                .into_iter()
                .map(|((t, p), status, _)| (TopicPartition::new(t, p), status.hwm))
                .collect()
        })
        .unwrap_or_default();
    {
        let mut rec = world.recorder.lock();
        if !rec.healed {
            let fault = match kind {
                Kill::PowerLoss => FaultKind::Crash,
                Kill::Process => FaultKind::ProcessCrash,
            };
            rec.fault(fault, None, None);
            let at_ns = rec.now_ns();
            rec.kills.push(KillAt { at_ns, cause });
        }
    }
    let image = match kind {
        Kill::PowerLoss => {
            madsim::runtime::Handle::current().kill(node);
            disk::Image::Durable
        }
        Kill::Process => {
            crate::fs::plugin::kill_process(node);
            disk::Image::Visible
        }
    };
    let partitions = {
        let damaged = world.damaged.lock().unwrap_or_else(|e| e.into_inner());
        disk::crash_partitions(&world.fs, &partition_dirs(world), &damaged, &memory, image)
    };
    let mut rec = world.recorder.lock();
    rec.drain_fs();
    rec.paths.crashes += 1;
    if kind == Kill::Process {
        rec.paths.process_crashes += 1;
    }
    rec.poisoned_seen.clear();
    let now = rec.now_ms();
    // The receives the kill cut short (their tasks died with the node).
    for (tp, asked) in std::mem::take(&mut rec.receiving).into_values() {
        rec.history.receive_killed(now, &tp, asked);
    }
    match kind {
        Kill::PowerLoss => rec.history.crash(now, partitions),
        Kill::Process => rec.history.process_crash(now, partitions),
    };
    rec.node_down = true;
}

/// Steps the wall clock back by `back_ms` (while the node is down).
fn step_clock(world: &World, back_ms: u64) {
    world
        .clock
        .step_wall(-i64::try_from(back_ms).unwrap_or(i64::MAX));
    let mut rec = world.recorder.lock();
    rec.paths.clock_steps += 1;
    rec.fault(FaultKind::ClockStep { back_ms }, None, None);
}

/// What a restart's open will find on one partition.
struct OpenDisk {
    tp: TopicPartition,
    view: DiskView,
    /// The records of its hidden tail.
    hidden: Vec<HeldCopy>,
    /// When it will replay every WAL entry: the records it can see.
    visible: Option<Vec<HeldCopy>>,
    /// When it will cut at a hole (R2): the readable records past it.
    past_hole: Option<Vec<HeldCopy>>,
}

/// Starts the next incarnation of the engine's node.
fn restart(world: &World, node: madsim::task::NodeId) {
    // What the open will read, before the new incarnation can touch it: each
    // directory as the page cache shows it (after a power loss, the durable image),
    // read once, decoded and with its segment files listed.
    let mut disks: Vec<OpenDisk> = Vec::new();
    // An open that finds the WAL checkpoint unreadable replays every entry, skipping
    // those whose records it can see: list those records too.
    let full_replay = world
        .fs
        .visible_bytes(&node::wal_dir().join(cafelog_engine::store::wal::CHECKPOINT_FILE))
        .is_some_and(|bytes| !crate::reference::wal::checkpoint_readable(&bytes));
    let mut segments: Vec<(TopicPartition, Vec<u64>)> = Vec::new();
    let mut frontiers = BTreeMap::new();
    for (tp, dir) in partition_dirs(world) {
        let frontier = world
            .fs
            .visible_bytes(&dir.join(layout::CONSUMER_OFFSET_FILE))
            .and_then(|bytes| word::decode(&bytes));
        frontiers.insert(tp.clone(), frontier);
        let image = disk::dir_image(&world.fs, &dir, disk::Image::Visible);
        let bases = image.as_ref().map_or_else(Vec::new, |image| {
            image
                .segments
                .iter()
                .filter_map(|(name, _)| crate::reference::partition::segment_base(name))
                .collect()
        });
        if let Some(image) = image {
            let decoded = crate::reference::decode(&image);
            let view = DiskView::from_decoded(&decoded);
            let past_hole = decoded
                .bad
                .as_ref()
                .filter(|_| view.rule == crate::history::OpenRule::Hole)
                .map(|bad| disk::held_past_hole(&image, bad));
            disks.push(OpenDisk {
                tp: tp.clone(),
                hidden: disk::held_in(&image, view.hwm..view.tail),
                visible: full_replay.then(|| disk::held_in(&image, view.log_start..view.hwm)),
                past_hole,
                view,
            });
        }
        segments.push((tp, bases));
    }
    let wal = wal_damage(world);
    madsim::runtime::Handle::current().restart(node);
    let mut rec = world.recorder.lock();
    let now = rec.now_ms();
    rec.history.restart(now);
    for disk in disks {
        let OpenDisk {
            tp,
            view,
            hidden: held,
            visible,
            past_hole,
        } = disk;
        let hidden = view.hwm..view.tail;
        let shown = view.log_start..view.hwm;
        rec.history.disk_at_open(now, &tp, view, false);
        if let Some(visible) = visible {
            rec.history
                .visible_at_open(now, &tp, shown.start, shown.end, visible);
        }
        if !held.is_empty() {
            rec.history
                .hidden_at_open(now, &tp, hidden.start, hidden.end, held);
        }
        if let Some(held) = past_hole {
            rec.history.past_hole_at_open(now, &tp, held);
        }
    }
    for (tp, bases) in segments {
        rec.history.segments_listed(now, &tp, bases);
    }
    rec.history.wal_at_open(now, wal.0, wal.1);
    rec.node_down = false;
    rec.carried.clear();
    rec.durable_frontiers = frontiers;
}

/// The damage the WAL's segment files hold as the open will read them: skipped bytes
/// and corrupt entries, by the reference decoder.
fn wal_damage(world: &World) -> (u64, u64) {
    let dir = node::wal_dir();
    let names = world.fs.visible_names(&dir).unwrap_or_default();
    names
        .iter()
        .filter_map(|name| {
            let base = crate::reference::wal::segment_base(name)?;
            let image = world.fs.visible_bytes(&dir.join(name))?;
            Some(crate::reference::wal::damage(base, &image))
        })
        .fold((0, 0), |(s, c), (ds, dc)| (s + ds, c + dc))
}

/// Adds the dying incarnation's engine counters to the run's paths.
fn add_incarnation_paths(rec: &mut recorder::Recorder, world: &World) {
    let Some(store) = world.store() else {
        return;
    };
    let m = store.metrics();
    rec.paths.leases_expired += m.leases_expired.load(Ordering::Relaxed);
    rec.paths.redeliveries += m.redeliveries.load(Ordering::Relaxed);
    rec.paths.parked_receives_woken += m.parked_receives_woken.load(Ordering::Relaxed);
    rec.paths.delay_gates_held += m.delay_gate_holds.load(Ordering::Relaxed);
    rec.paths.records_skipped += m.records_skipped.load(Ordering::Relaxed);
    rec.paths.wal_segments_deleted += m.wal_segments_deleted.load(Ordering::Relaxed);
    for (_, _, metrics) in store.partition_statuses() {
        rec.paths.records_skipped += metrics.records_skipped;
        rec.paths.segments_reaped += metrics.retention_segments_deleted;
    }
}

/// Every partition directory on the disk, as `(tp, dir)`.
/// Records each partition's segment files as the engine left them, for `layout`.
fn observe_layouts(world: &World) {
    let mut rec = world.recorder.lock();
    let now = rec.now_ms();
    for plan in &world.spec.workload.topics {
        let knobs = shape::knobs(&plan.config.log);
        for p in 0..plan.config.partitions {
            let dir = layout::partition_dir(Path::new(DATA_ROOT), &plan.name, p);
            if let Some(segments) = shape::visible_layout(&world.fs, &dir) {
                let tp = TopicPartition::new(plan.name.clone(), p);
                rec.history.layout_observed(now, &tp, knobs, segments);
            }
        }
    }
}

fn partition_dirs(world: &World) -> Vec<(TopicPartition, PathBuf)> {
    let mut out = Vec::new();
    for plan in &world.spec.workload.topics {
        for p in 0..plan.config.partitions {
            out.push((
                TopicPartition::new(plan.name.clone(), p),
                layout::partition_dir(Path::new(DATA_ROOT), &plan.name, p),
            ));
        }
    }
    out
}

/// Flips one bit of durable data at rest (segments, hwm, consumer.offset, WAL).
/// Flips one bit of a file of kind `file` (drawn when `None`): the bit `at` names, or a
/// random one.
async fn flip(world: &World, dice: &mut Dice, file: Option<FileKind>, at: Option<&FlipAt>) -> bool {
    let kinds = [
        FileKind::Segment,
        FileKind::Segment,
        FileKind::Hwm,
        FileKind::ConsumerOffset,
        FileKind::Wal,
    ];
    let want = file.unwrap_or_else(|| kinds[dice.below(kinds.len() as u64) as usize]);
    // Map frames before the flip: afterwards the decode stops at the damaged frame.
    let mut before = BTreeMap::new();
    let mut images = BTreeMap::new();
    if want == FileKind::Segment {
        for (_, dir) in partition_dirs(world) {
            if let Some(image) = disk::dir_image(&world.fs, &dir, disk::Image::Durable) {
                before.insert(dir.clone(), crate::reference::decode(&image));
                let visible = disk::dir_image(&world.fs, &dir, disk::Image::Visible);
                images.insert(dir, (image, visible));
            }
        }
    }
    let filter = |p: &std::path::Path| recorder::file_kind(p) == want;
    let flipped = match at {
        Some(at) => {
            world
                .fs
                .flip_bit_at(filter, std::path::Path::new(&at.path), at.position, at.bit)
        }
        None => world.fs.flip_random_bit(filter),
    };
    let Some(flip) = flipped else {
        return false;
    };
    let tp = recorder::partition_of(&flip.path);
    if let (Some(tp), FileKind::Segment) = (&tp, want) {
        world
            .damaged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tp.clone());
    }
    // The records of the frame the flip hit, when the durable image placed it.
    let mut held = Vec::new();
    let (offsets, below_hwm) = match (&tp, want) {
        (Some(_), FileKind::Segment) => {
            // Headers are walked in the durable image as it was before the flip.
            let bytes = durable_before_flip(&world.fs, &flip);
            match disk::locate(&before, &flip.path, flip.position, bytes.as_deref()) {
                (Some(range), below) => {
                    // Named only where the engine reads what the platter held: the cache
                    // took the flip and showed the same records there (a pending write,
                    // or a lost fsync's cache, can hold others at those offsets).
                    if let Some((durable, Some(visible))) =
                        flip.path.parent().and_then(|d| images.get(d))
                        && flip.in_cache
                    {
                        let platter = disk::held_in(durable, range.start..range.end);
                        if platter == disk::held_in(visible, range.start..range.end) {
                            held = platter;
                        }
                    }
                    // The cache took the flip too, and may hold another frame at that
                    // byte (a misdirected write left the platter's frames shifted): the
                    // flip damaged that frame for the engine as well.
                    let cached = visible_before_flip(&world.fs, &flip)
                        .filter(|_| flip.in_cache)
                        .and_then(|b| disk::locate_in_image(&flip.path, flip.position, &b));
                    match cached {
                        Some(c) if c != range => {
                            let persisted = before
                                .get(flip.path.parent().unwrap_or(&flip.path))
                                .and_then(|d| d.persisted_hwm)
                                .unwrap_or(0);
                            let union = OffsetRange {
                                start: range.start.min(c.start),
                                end: range.end.max(c.end),
                            };
                            (Some(union), Some(union.start < persisted))
                        }
                        _ => (Some(range), below),
                    }
                }
                // No frame there on the platter, but the cache took the flip too: a lost
                // fsync left frames the platter lacks, and the engine reads those.
                (None, below) if flip.in_cache => {
                    let visible = visible_before_flip(&world.fs, &flip);
                    let range =
                        visible.and_then(|b| disk::locate_in_image(&flip.path, flip.position, &b));
                    (range, below)
                }
                found => found,
            }
        }
        // An 8-byte word: the flip can move what it says anywhere between its value
        // before and after (for `hwm`, the HWM the next open trusts; for
        // `consumer.offset`, the frontier it loads).
        (Some(_), FileKind::Hwm | FileKind::ConsumerOffset) => {
            let before = durable_before_flip(&world.fs, &flip).and_then(|b| word::decode(&b));
            let after = world
                .fs
                .durable_bytes(&flip.path)
                .and_then(|b| word::decode(&b));
            match (before, after) {
                (Some(a), Some(b)) => (
                    Some(OffsetRange {
                        start: a.min(b),
                        end: a.max(b),
                    }),
                    None,
                ),
                _ => (None, None),
            }
        }
        _ => (None, None),
    };
    let mut rec = world.recorder.lock();
    rec.paths.bit_flips += 1;
    let at_ns = rec.now_ns();
    rec.flips.push((
        at_ns,
        FlipAt {
            path: flip.path.display().to_string(),
            position: flip.position,
            bit: flip.bit,
        },
    ));
    let fault_index = rec.fault(
        FaultKind::BitFlip {
            file: want,
            offsets,
            below_hwm,
        },
        tp.as_ref(),
        Some(&flip.path.display().to_string()),
    );
    if let Some(tp) = &tp
        && !held.is_empty()
    {
        let now = rec.now_ms();
        rec.history.damage_held(now, fault_index, tp, held);
    }
    if want == FileKind::Wal
        && let Some(before) = durable_before_flip(&world.fs, &flip)
    {
        // The entries of the frame the flip hit, from the image as it was before.
        let hit = flip.position..flip.position + 1;
        rec.wal_damaged(fault_index, &flip.path, &before, &[hit], true);
    }
    // A flip that lands while the node's open runs may be read by it or not: the open
    // is then held to either view of the disk.
    let opening = !rec.node_down && world.slot().is_none();
    if opening
        && matches!(want, FileKind::Segment | FileKind::Hwm)
        && let Some(tp) = &tp
        && let Some(decoded) = flip
            .path
            .parent()
            .and_then(|d| disk::dir_image(&world.fs, d, disk::Image::Visible))
            .map(|image| crate::reference::decode(&image))
    {
        let now = rec.now_ms();
        rec.history
            .disk_at_open(now, tp, DiskView::from_decoded(&decoded), true);
    }
    true
}

/// The durable image of the file `flip` hit, as it was before the flip. Not the visible
/// file: a segment the reaper has unlinked but not yet made durably gone has no visible
/// name, and a crash brings it back.
fn durable_before_flip(fs: &SimFs, flip: &crate::fs::BitFlip) -> Option<Vec<u8>> {
    let mut bytes = fs.durable_bytes(&flip.path)?;
    if let Some(byte) = bytes.get_mut(flip.position as usize) {
        *byte = flip.before;
    }
    Some(bytes)
}

/// The page cache's image of the file `flip` hit, as it was before the flip (`None`
/// when the file has no visible name).
fn visible_before_flip(fs: &SimFs, flip: &crate::fs::BitFlip) -> Option<Vec<u8>> {
    let mut bytes = fs.visible_bytes(&flip.path)?;
    if flip.in_cache
        && let Some(byte) = bytes.get_mut(flip.position as usize)
    {
        *byte = flip.before;
    }
    Some(bytes)
}

/// Samples the engine: HWMs, log starts, counters, poison.
fn sample(world: &World) {
    let Some(store) = world.store() else {
        return;
    };
    let mut rec = world.recorder.lock();
    let now = rec.now_ms();
    for ((topic, partition), status, metrics) in store.partition_statuses() {
        let tp = TopicPartition::new(topic, partition);
        rec.history
            .hwm_observed(now, &tp, status.hwm, Some(status.persisted_hwm), None);
        // The word on the platter, which `hwm_persisted` judges rather than the
        // engine's own account of it.
        let dir = layout::partition_dir(Path::new(DATA_ROOT), &tp.topic, tp.partition);
        let word = world
            .fs
            .durable_bytes(&dir.join(layout::HWM_FILE))
            .and_then(|bytes| word::decode(&bytes));
        rec.history.hwm_word_observed(now, &tp, word);
        rec.history.log_start_observed(now, &tp, status.log_start);
        rec.history.engine_counters(
            now,
            &tp,
            metrics.recorded_loss_records,
            metrics.records_skipped,
        );
        // Poison is recorded by the node's watchdog, with the HWM it struck at.
    }
}

async fn sampler(world: Arc<World>) {
    loop {
        madsim::time::sleep(Duration::from_millis(100)).await;
        sample(&world);
    }
}

/// How long a client waits for a reply before giving the request up as unknown.
const REPLY_TIMEOUT: Duration = Duration::from_millis(3_000);
// A parked receive answers before its client gives up on it.
const _: () = assert!((workload::PARK_MS_MAX as u128) < REPLY_TIMEOUT.as_millis());

async fn call<T>(
    world: &World,
    make: impl FnOnce(async_channel::Sender<Result<T, String>>) -> Request,
) -> Result<T, String> {
    let (tx, rx) = async_channel::bounded(1);
    if world.requests.send(make(tx)).await.is_err() {
        return Err("request channel closed".into());
    }
    match madsim::time::timeout(REPLY_TIMEOUT, rx.recv()).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err("node crashed before replying".into()),
        Err(_) => Err("no reply in time".into()),
    }
}

async fn producer(world: Arc<World>, index: usize, plan: workload::ProducerPlan) {
    let profile = &world.spec.profile;
    let mut dice = Dice::new(sub_seed(world.spec.seed, 100 + index as u64));
    let topic = world.spec.workload.topics[plan.topic].name.clone();
    let mut burst = 0u32;
    loop {
        if burst == 0 {
            madsim::time::sleep(Duration::from_millis(
                dice.range(plan.gap_ms.0..=plan.gap_ms.1).max(1),
            ))
            .await;
            if dice.chance(plan.burst_probability) {
                burst = dice.range(1..=u64::from(plan.burst_len_max)) as u32;
            }
        } else {
            burst -= 1;
        }
        if now_ms(&world) >= profile.produce_ms {
            break;
        }
        let id = world.next_id.fetch_add(1, Ordering::SeqCst);
        if id >= profile.records_max {
            break;
        }
        let key = format!("key-{}", dice.below(u64::from(plan.keys))).into_bytes();
        let len = dice.range(plan.payload_bytes.0 as u64..=plan.payload_bytes.1 as u64) as usize;
        let body = Workload::body(&mut dice, plan.compressible, id, len);
        let payload = encode_payload(id, &body);
        {
            let mut rec = world.recorder.lock();
            let now = rec.now_ms();
            rec.history
                .produce_attempt(now, id, &topic, None, &key, &payload);
        }
        let result = call(&world, |reply| Request::Produce {
            id,
            topic: topic.clone(),
            key,
            payload,
            reply,
        })
        .await;
        match result {
            // The node recorded the ack when it sent it.
            Ok(_) => world.acked.notify_all(),
            Err(e) => {
                let mut rec = world.recorder.lock();
                let now = rec.now_ms();
                rec.history.produce_failed(now, id, &e);
            }
        }
    }
    world.producers_running.fetch_sub(1, Ordering::SeqCst);
}

/// The least share of deliveries a consumer drops after the heal.
const HEALED_DROP_PROBABILITY: f64 = 0.03;

async fn consumer(world: Arc<World>, index: usize, plan: workload::ConsumerPlan) {
    let mut dice = Dice::new(sub_seed(world.spec.seed, 10_000 + index as u64));
    let topic = world.spec.workload.topics[plan.topic].name.clone();

    loop {
        let result = call(&world, |reply| Request::Receive {
            topic: topic.clone(),
            partition: plan.partition,
            max: plan.batch_max,
            park: Duration::from_millis(plan.park_ms),
            reply,
        })
        .await;
        let deliveries = match result {
            Ok(d) => d,
            Err(_) => {
                madsim::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        // After the heal every consumer drops a few deliveries: `redelivered_after_expiry`
        // then sees leases expire in nearly every run, not only where the plan drew drops.
        let drop_probability = if world.recorder.lock().healed {
            plan.drop_probability.max(HEALED_DROP_PROBABILITY)
        } else {
            plan.drop_probability
        };
        for d in deliveries {
            // The node recorded the delivery when it sent it.
            let ack = if dice.chance(drop_probability) {
                continue;
            } else {
                !dice.chance(plan.nack_probability)
            };
            let offset = d.offset;
            // The node records the ack or nack when the engine accepts it.
            let _ = call(&world, |reply| Request::Settle {
                topic: topic.clone(),
                partition: plan.partition,
                offset,
                ack,
                reply,
            })
            .await;
        }
        // After the heal the consumer drains without thinking: the run now measures
        // whether every acknowledged record comes back within the delivery bound, and
        // a think time chosen for the faulty phase must not decide that.
        let healed = world.recorder.lock().healed;
        if plan.think_ms.1 > 0 && !healed {
            madsim::time::sleep(Duration::from_millis(
                dice.range(plan.think_ms.0..=plan.think_ms.1).max(1),
            ))
            .await;
        }
    }
}
