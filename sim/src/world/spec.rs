//! What defines a run (`RunSpec`: the seed, the profile, the workload, the fault mix
//! and any fixed schedule) and what one hands back (`RunOutcome`).

use super::*;

/// Sub-seeds, derived from the run's seed so each stream is independent.
pub(super) fn sub_seed(seed: u64, stream: u64) -> u64 {
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
    /// The swarm's aimed kill repeated: sleep to this simulated ns, then right after
    /// the next produce acknowledgement, or 500 ms later if none comes, as the swarm
    /// waits.
    NextAckAfterNs(u64),
    /// Right after the `count`th engine alarm named `alarm` (any partition, or none)
    /// of the incarnation running when the entry is reached: a kill in the middle of an
    /// open stays in the same step of it when a cut moves every time after it.
    AfterAlarm { alarm: AlarmName, count: u64 },
}

/// One of the engine's alarm names (`cafelog_engine::alarm::ALL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlarmName(&'static str);

impl Trigger {
    /// Whether it fires at a time of the run's own (a shrink may aim it at an event
    /// instead).
    pub fn is_timed(self) -> bool {
        matches!(
            self,
            Trigger::AtMs(_) | Trigger::AtNs(_) | Trigger::NextAckAfterNs(_)
        )
    }
}

impl AlarmName {
    /// The engine's alarm named `name`; `None` when the engine has none by that name.
    pub fn parse(name: &str) -> Option<AlarmName> {
        cafelog_engine::alarm::ALL
            .iter()
            .find(|&&a| a == name)
            .map(|&a| AlarmName(a))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl serde::Serialize for AlarmName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for AlarmName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        AlarmName::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("no engine alarm is named {name}")))
    }
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
    /// Nothing: the supervisor wakes and sleeps again. The swarm woke there without
    /// injecting (a flip that found nothing to flip, a fault a shrink cut), and every
    /// wake moves the scheduler's later draws, so a schedule repeating the swarm wakes
    /// there too.
    Wake,
    /// Step the wall clock back by `ms` (`while_down`).
    ClockStep { ms: u64 },
    /// Kill the node, step the wall clock back by `ms`, restart.
    CrashWithClockStep { ms: u64 },
    /// Kill the node, make one sector of a segment unreadable, restart.
    CrashWithLatentSector,
    /// The next fsync with pending data (of the file `path`, when set) fails with EIO.
    FsyncEio { path: Option<String> },
    /// The next fsync with pending data (of the file `path`, when set) returns Ok and
    /// persists nothing.
    LostFsync { path: Option<String> },
}

impl Action {
    /// Whether it kills the node.
    pub fn kills(&self) -> bool {
        matches!(
            self,
            Action::Crash
                | Action::ProcessCrash
                | Action::CrashWithBitFlip { .. }
                | Action::ProcessCrashWithBitFlip { .. }
                | Action::CrashWithClockStep { .. }
                | Action::CrashWithLatentSector
        )
    }
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
        let mut dice = Dice::new(sub_seed(seed, 9));
        workload.frontier_at_open = workload::draw_frontier_at_open(&mut dice);
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
            } else if kind == "lazy_frontier" {
                spec.workload.frontier_at_open = true;
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
    /// event: when the supervisor woke for it, so a schedule can repeat it (the history
    /// keeps ms).
    pub kills: Vec<KillAt>,
    /// Every bit flip, in the order of its `BitFlip` fault event: when the supervisor
    /// woke for it (ns) and which bit, so a schedule can repeat it.
    pub flips: Vec<(u64, FlipAt)>,
    /// The swarm's wakes that injected nothing, in order: a schedule repeating the
    /// swarm wakes there too.
    pub idle_wakes: Vec<IdleWake>,
    /// The numbers of the swarm's faults that were injected (`FaultMix::only`), in
    /// order; empty for an explicit schedule.
    pub swarm_faults: Vec<u32>,
}
