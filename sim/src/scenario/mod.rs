//! Scenario files: one run of the world written down (workload, disk faults, an
//! explicit fault schedule or swarm faults, durations, seed) with the verdict it must
//! end in and the paths it must reach. `scenarios/*.toml` hold them; `cafelog scenario
//! run` and the `scenarios` test binary run them; `cafelog shrink` writes them.
//!
//! Invariants:
//! - parsing is strict: unknown keys, bad values and inconsistent entries are errors
//!   naming the line (toml) or the entry;
//! - [`Scenario::spec`] and [`Scenario::from_spec`] round-trip: a scenario written from
//!   a spec parses back to the same spec (tested below), so `shrink` writes exactly
//!   the run it verified;
//! - a scenario's [`Judgement`] fails when the verdict or its checker differ from the
//!   expectation, or when a path it names in `reaches` (a fault in `injects`) was never
//!   reached (injected): a scenario that silently stops exercising its path fails.

mod file;
mod report;

pub use file::{
    ActionName, CancelSpec, ConsumerSpec, DiskSpec, Expect, FAULT_NAMES, ProducerSpec, ProfileSpec,
    Range, ScenarioFile, ScheduleEntry, StoreSpec, SwarmSpec, TopicSpec, VerdictKind,
};
pub use report::StableReport;

use crate::profile::Profile;
use crate::swarm::FaultMix;
use crate::world::workload::{ConsumerPlan, ProducerPlan, TopicPlan, Workload};
use crate::world::{RunOutcome, RunSpec};
use std::fmt;
use std::path::{Path, PathBuf};

/// A parsed scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The file stem: the scenario's sentence-like name.
    pub name: String,
    /// The opening comment, without the `#` marks.
    pub story: String,
    pub file: ScenarioFile,
}

/// Why a scenario file could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum ScenarioError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The toml crate's message, with line, column and the offending snippet.
    Parse { path: PathBuf, message: String },
    /// A consistency problem across tables (unknown topic, partition out of range, ...).
    Invalid { path: PathBuf, message: String },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ScenarioError::Parse { path, message } => {
                write!(f, "{}: {}", path.display(), message.trim_end())
            }
            ScenarioError::Invalid { path, message } => {
                write!(f, "{}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The profile name scenario runs report.
pub const SCENARIO_PROFILE: &str = "scenario";

impl Scenario {
    /// Reads and parses one file.
    #[allow(
        clippy::disallowed_methods,
        reason = "host I/O outside any run: a scenario file"
    )]
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("scenario")
            .to_owned();
        Scenario::parse(&name, &text).map_err(|e| match e {
            ScenarioError::Parse { message, .. } => ScenarioError::Parse {
                path: path.to_path_buf(),
                message,
            },
            ScenarioError::Invalid { message, .. } => ScenarioError::Invalid {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Every `*.toml` in a directory, sorted by name.
    #[allow(
        clippy::disallowed_methods,
        reason = "host I/O outside any run: a scenario folder"
    )]
    pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
        let io = |source| ScenarioError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        paths.iter().map(|p| Scenario::load(p)).collect()
    }

    /// Parses a scenario's text; `name` is what errors and reports call it.
    pub fn parse(name: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let path = PathBuf::from(format!("{name}.toml"));
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let invalid = |message: String| ScenarioError::Invalid {
            path: path.clone(),
            message,
        };
        validate(&file).map_err(invalid)?;
        let story = text
            .lines()
            .take_while(|l| l.trim_start().starts_with('#'))
            .map(|l| l.trim_start().trim_start_matches('#').trim())
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_owned();
        Ok(Scenario {
            name: name.to_owned(),
            story,
            file,
        })
    }

    /// The run this scenario means.
    pub fn spec(&self) -> RunSpec {
        let f = &self.file;
        let index = |name: &str| {
            f.topics
                .iter()
                .position(|t| t.name == name)
                .expect("validated: producers and consumers name known topics")
        };
        let workload = Workload {
            topics: f
                .topics
                .iter()
                .map(|t| TopicPlan {
                    name: t.name.clone(),
                    config: t.config.clone(),
                })
                .collect(),
            producers: f
                .producers
                .iter()
                .map(|p| ProducerPlan {
                    topic: index(&p.topic),
                    gap_ms: (p.gap_ms.lo, p.gap_ms.hi),
                    burst_probability: p.burst_probability,
                    burst_len_max: p.burst_len_max,
                    payload_bytes: (p.payload_bytes.lo as usize, p.payload_bytes.hi as usize),
                    compressible: p.compressible,
                    keys: p.keys,
                })
                .collect(),
            consumers: f
                .consumers
                .iter()
                .map(|c| ConsumerPlan {
                    topic: index(&c.topic),
                    partition: c.partition,
                    batch_max: c.batch_max,
                    nack_probability: c.nack_probability,
                    drop_probability: c.drop_probability,
                    think_ms: (c.think_ms.lo, c.think_ms.hi),
                    park_ms: c.park_ms,
                })
                .collect(),
            wal_segment_bytes: f.store.wal_segment_bytes,
            frontier_at_open: f.store.frontier_at_open,
        };
        let mut mix = FaultMix::none();
        mix.fs = f.disk.options().expect("validated: disk options");
        if let Some(s) = &f.swarm {
            mix.crash_mean_gap_ms = s.crash_mean_gap_ms;
            mix.crash_after_commit_fraction = s.crash_after_commit_fraction;
            mix.crashes_max = s.crashes_max;
            mix.bit_flips_per_s = s.bit_flips_per_s;
            mix.bit_flips_max = s.bit_flips_max;
            mix.clock_step_probability = s.clock_step_probability;
            mix.clock_step_back_ms_max = s.clock_step_back_ms_max;
            mix.clock_steps_max = s.clock_steps_max;
            mix.process_crash_fraction = s.process_crash_fraction;
            mix.cancel_probability = s.cancel_probability;
            mix.loop_drops = s.loop_drops.unwrap_or(s.cancel_probability > 0.0);
            mix.settle_drops = s.settle_drops.unwrap_or(s.cancel_probability > 0.0);
            mix.latent_sector_probability = s.latent_sector_probability;
            mix.latent_sectors_max = s.latent_sectors_max;
            mix.only = s.only.clone();
        }
        if let Some(c) = &f.cancel {
            mix.cancel_probability = c.probability;
            mix.loop_drops = c.loops.unwrap_or(true);
            mix.settle_drops = c.settles.unwrap_or(true);
        }
        RunSpec {
            seed: f.seed,
            profile: Profile {
                name: SCENARIO_PROFILE,
                produce_ms: f.profile.produce_ms,
                heal_ms: f.profile.heal_ms,
                delivery_bound_ms: f.profile.delivery_bound_ms,
                records_max: f.profile.records_max,
                only_ids: f.profile.only_ids.clone(),
                ..Profile::quick()
            },
            workload,
            mix,
            schedule: match f.swarm {
                Some(_) => None,
                None => Some(f.schedule.iter().map(|e| e.0.clone()).collect()),
            },
        }
    }

    /// The scenario file that means `spec` (the inverse of [`Scenario::spec`]).
    pub fn from_spec(spec: &RunSpec, expect: Expect) -> ScenarioFile {
        let topic_name = |i: usize| spec.workload.topics[i].name.clone();
        let (swarm, schedule) = match &spec.schedule {
            Some(s) => (None, s.iter().cloned().map(ScheduleEntry).collect()),
            None => (Some(SwarmSpec::from(&spec.mix)), Vec::new()),
        };
        let cancel = spec
            .schedule
            .is_some()
            .then(|| CancelSpec::of(&spec.mix))
            .flatten();
        ScenarioFile {
            seed: spec.seed,
            expect,
            profile: ProfileSpec {
                produce_ms: spec.profile.produce_ms,
                heal_ms: spec.profile.heal_ms,
                delivery_bound_ms: spec.profile.delivery_bound_ms,
                records_max: spec.profile.records_max,
                only_ids: spec.profile.only_ids.clone(),
            },
            topics: spec
                .workload
                .topics
                .iter()
                .map(|t| TopicSpec {
                    name: t.name.clone(),
                    config: t.config.clone(),
                })
                .collect(),
            producers: spec
                .workload
                .producers
                .iter()
                .map(|p| ProducerSpec {
                    topic: topic_name(p.topic),
                    gap_ms: Range {
                        lo: p.gap_ms.0,
                        hi: p.gap_ms.1,
                    },
                    burst_probability: p.burst_probability,
                    burst_len_max: p.burst_len_max,
                    payload_bytes: Range {
                        lo: p.payload_bytes.0 as u64,
                        hi: p.payload_bytes.1 as u64,
                    },
                    compressible: p.compressible,
                    keys: p.keys,
                })
                .collect(),
            consumers: spec
                .workload
                .consumers
                .iter()
                .map(|c| ConsumerSpec {
                    topic: topic_name(c.topic),
                    partition: c.partition,
                    batch_max: c.batch_max,
                    nack_probability: c.nack_probability,
                    drop_probability: c.drop_probability,
                    think_ms: Range {
                        lo: c.think_ms.0,
                        hi: c.think_ms.1,
                    },
                    park_ms: c.park_ms,
                })
                .collect(),
            disk: DiskSpec::from(&spec.mix.fs),
            store: StoreSpec {
                wal_segment_bytes: spec.workload.wal_segment_bytes,
                frontier_at_open: spec.workload.frontier_at_open,
            },
            swarm,
            cancel,
            schedule,
        }
    }

    /// Whether `outcome` is what the scenario expects.
    pub fn judge(&self, outcome: &RunOutcome) -> Judgement {
        judge(&self.file.expect, outcome)
    }
}

impl ScenarioFile {
    /// The file's text: `story` as the opening comment, then the TOML.
    pub fn to_toml(&self, story: &str) -> Result<String, String> {
        let body = toml::to_string(self).map_err(|e| e.to_string())?;
        let mut out = String::new();
        for line in story.lines() {
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str("# ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push('\n');
        out.push_str(&body);
        Ok(out)
    }
}

fn validate(f: &ScenarioFile) -> Result<(), String> {
    if f.topics.is_empty() {
        return Err("a scenario needs at least one [[topics]] entry".into());
    }
    if f.store.wal_segment_bytes == 0 {
        return Err("[store]: wal_segment_bytes must be at least 1".into());
    }
    if let Some(ids) = &f.profile.only_ids
        && let Some(w) = ids.windows(2).find(|w| w[0] >= w[1])
    {
        return Err(format!(
            "[profile]: only_ids must ascend without repeats ({} then {})",
            w[0], w[1]
        ));
    }
    if let Some(c) = &f.cancel {
        if f.swarm.is_some() {
            return Err(
                "[cancel] is for an explicit schedule: a [swarm] has its own \
                        cancel_probability"
                    .into(),
            );
        }
        if !(0.0..=1.0).contains(&c.probability) {
            return Err(format!(
                "[cancel]: probability = {} must be within 0..=1",
                c.probability
            ));
        }
    }
    if let Some(s) = &f.swarm {
        for (name, value) in [
            ("process_crash_fraction", s.process_crash_fraction),
            ("cancel_probability", s.cancel_probability),
            ("latent_sector_probability", s.latent_sector_probability),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("[swarm]: {name} = {value} must be within 0..=1"));
            }
        }
    }
    for (i, t) in f.topics.iter().enumerate() {
        if f.topics[..i].iter().any(|u| u.name == t.name) {
            return Err(format!("topics[{i}]: topic {:?} is defined twice", t.name));
        }
    }
    let partitions = |name: &str| {
        f.topics
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.config.partitions)
    };
    let known = || {
        f.topics
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (i, p) in f.producers.iter().enumerate() {
        if partitions(&p.topic).is_none() {
            return Err(format!(
                "producers[{i}]: unknown topic {:?} (known: {})",
                p.topic,
                known()
            ));
        }
        if p.burst_len_max == 0 {
            return Err(format!("producers[{i}]: burst_len_max must be at least 1"));
        }
        if p.keys == 0 {
            return Err(format!("producers[{i}]: keys must be at least 1"));
        }
        if !(0.0..=1.0).contains(&p.burst_probability) {
            return Err(format!(
                "producers[{i}]: burst_probability is not in [0, 1]"
            ));
        }
    }
    for (i, c) in f.consumers.iter().enumerate() {
        let Some(count) = partitions(&c.topic) else {
            return Err(format!(
                "consumers[{i}]: unknown topic {:?} (known: {})",
                c.topic,
                known()
            ));
        };
        if c.partition >= count {
            return Err(format!(
                "consumers[{i}]: partition {} of {:?}, which has {count}",
                c.partition, c.topic
            ));
        }
        if c.batch_max == 0 {
            return Err(format!("consumers[{i}]: batch_max must be at least 1"));
        }
        if !(1..=crate::world::workload::PARK_MS_MAX).contains(&c.park_ms) {
            return Err(format!(
                "consumers[{i}]: park_ms {} is not in [1, {}] (a longer park outlasts \
                 the client's reply timeout)",
                c.park_ms,
                crate::world::workload::PARK_MS_MAX
            ));
        }
        for (field, p) in [
            ("nack_probability", c.nack_probability),
            ("drop_probability", c.drop_probability),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("consumers[{i}]: {field} is not in [0, 1]"));
            }
        }
    }
    f.disk.options()?;
    if f.swarm.is_some() && !f.schedule.is_empty() {
        return Err("a scenario has either [swarm] or [[schedule]] entries, not both".into());
    }
    Ok(())
}

/// How a run compares with a scenario's expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// One line per mismatch; empty when the run is what the scenario expects.
    pub problems: Vec<String>,
}

impl Judgement {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Compares `outcome` with `expect`.
pub fn judge(expect: &Expect, outcome: &RunOutcome) -> Judgement {
    let mut problems = Vec::new();
    let kind = VerdictKind::of(&outcome.verdict);
    let checker = outcome.verdict.failure().map(|f| f.checker);
    if kind != expect.verdict || checker != expect.checker {
        let want = match expect.checker {
            Some(c) => format!("{} [{c}]", expect.verdict.as_str()),
            None => expect.verdict.as_str().to_owned(),
        };
        problems.push(format!("expected {want}, got {}", outcome.verdict));
    }
    let paths = outcome.paths.entries();
    for want in &expect.reaches {
        let count = paths
            .iter()
            .find(|(name, _)| name == want)
            .map_or(0, |(_, n)| *n);
        if count == 0 {
            problems.push(format!("path {want} was never reached"));
        }
    }
    for want in &expect.injects {
        if outcome.faults.get(want).copied().unwrap_or(0) == 0 {
            problems.push(format!("fault {want} was never injected"));
        }
    }
    Judgement { problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"# A story.
# Second line.
seed = 7

[expect]
verdict = "pass"
reaches = ["crashes"]

[[topics]]
name = "orders"
partitions = 2
flush_interval_ms = 5

[[producers]]
topic = "orders"

[[consumers]]
topic = "orders"
partition = 1

[[schedule]]
at_ms = 500
action = "crash"

[[schedule]]
after_acks = 20
action = "crash_with_bit_flip"
file = "segment"
"#;

    #[test]
    fn a_minimal_file_parses_with_defaults_and_its_story() {
        let s = Scenario::parse("minimal", MINIMAL).expect("parses");
        assert_eq!(s.story, "A story.\nSecond line.");
        assert_eq!(s.file.topics[0].config.partitions, 2);
        assert_eq!(
            s.file.topics[0].config.log.flush_interval,
            std::time::Duration::from_millis(5)
        );
        let spec = s.spec();
        assert_eq!(spec.workload.consumers[0].partition, 1);
        assert_eq!(spec.schedule.as_ref().map(Vec::len), Some(2));
        assert_eq!(spec.profile.produce_ms, Profile::quick().produce_ms);
    }

    /// An expectation of a pass, nothing more.
    fn pass() -> Expect {
        Expect {
            verdict: VerdictKind::Pass,
            checker: None,
            reaches: vec![],
            injects: vec![],
        }
    }

    #[test]
    fn spec_round_trips_through_the_file_text() {
        let original = RunSpec::from_seed(3, &Profile::quick());
        let text = Scenario::from_spec(&original, pass())
            .to_toml("from seed 3")
            .expect("serialises");
        let back = Scenario::parse("round_trip", &text).expect("parses back");
        let spec = back.spec();
        assert_eq!(spec.workload, original.workload);
        assert_eq!(spec.mix, original.mix);
        assert_eq!(spec.schedule, None);
        assert_eq!(back.story, "from seed 3");
    }

    #[test]
    fn exact_kills_and_flips_round_trip_through_the_file_text() {
        use crate::history::FileKind;
        use crate::world::{Action, FlipAt, ScheduledFault, Trigger};
        let at = FlipAt {
            path: "/data/topics/orders/p00000/00000000000000000000.log".into(),
            position: 200,
            bit: 4,
        };
        let mut original = RunSpec::from_seed(3, &Profile::quick());
        original.schedule = Some(vec![
            ScheduledFault {
                trigger: Trigger::AtNs(55_000_150),
                action: Action::ProcessCrashWithBitFlip {
                    file: FileKind::Segment,
                    at: Some(at.clone()),
                },
            },
            ScheduledFault {
                trigger: Trigger::AtNs(2_360_006_018),
                action: Action::BitFlip {
                    file: FileKind::Segment,
                    at: Some(at),
                },
            },
            ScheduledFault {
                trigger: Trigger::AtMs(700),
                action: Action::CrashWithBitFlip {
                    file: FileKind::Hwm,
                    at: None,
                },
            },
            ScheduledFault {
                trigger: Trigger::WhileDown,
                action: Action::LatentSector,
            },
            ScheduledFault {
                trigger: Trigger::WhileDown,
                action: Action::ClockStep { ms: 40 },
            },
            ScheduledFault {
                trigger: Trigger::AtMs(900),
                action: Action::FsyncEio {
                    path: Some("/data/wal/00000000000000000000.wal".into()),
                },
            },
            ScheduledFault {
                trigger: Trigger::AtMs(950),
                action: Action::LostFsync { path: None },
            },
            ScheduledFault {
                trigger: Trigger::AfterAlarm {
                    alarm: crate::world::AlarmName::parse("replay_committing").expect("named"),
                    count: 1,
                },
                action: Action::ProcessCrash,
            },
            ScheduledFault {
                trigger: Trigger::AfterAlarm {
                    alarm: crate::world::AlarmName::parse("r1_torn_tail").expect("named"),
                    count: 3,
                },
                action: Action::Crash,
            },
            ScheduledFault {
                trigger: Trigger::AtNs(1_100_000_000),
                action: Action::Wake,
            },
            ScheduledFault {
                trigger: Trigger::NextAckAfterNs(1_200_000_050),
                action: Action::CrashWithLatentSector,
            },
            ScheduledFault {
                trigger: Trigger::NextAckAfterNs(1_300_000_100),
                action: Action::Wake,
            },
        ]);
        let text = Scenario::from_spec(&original, pass())
            .to_toml("exact")
            .expect("serialises");
        assert!(text.contains("at_ns = 55000150"), "{text}");
        assert!(
            text.contains("next_ack_after_ns = 1200000050\naction = \"crash_with_latent_sector\"")
                && text.contains("next_ack_after_ns = 1300000100\naction = \"wake\""),
            "{text}"
        );
        assert!(
            text.contains("after_alarm = \"replay_committing\"\naction")
                && text.contains("after_alarm = \"r1_torn_tail\"\nalarm_count = 3"),
            "{text}"
        );
        let back = Scenario::parse("exact", &text).expect("parses back");
        assert_eq!(back.spec().schedule, original.schedule);
    }

    fn parse_error(text: &str) -> String {
        Scenario::parse("bad", text)
            .expect_err("must be rejected")
            .to_string()
    }

    #[test]
    fn bad_files_are_rejected_with_a_position_or_the_entry() {
        let unknown = MINIMAL.replace("partitions = 2", "partitions = 2\npartitoins = 3");
        let e = parse_error(&unknown);
        assert!(e.contains("line 12") && e.contains("partitoins"), "{e}");
        let both = MINIMAL.replace("at_ms = 500", "at_ms = 500\nafter_acks = 3");
        let e = parse_error(&both);
        assert!(
            e.contains("exactly one of at_ms, at_ns, next_ack_after_ns, after_acks, after_alarm or while_down"),
            "{e}"
        );
        assert!(e.contains("line 2"), "{e}");
        let aimed_flip = MINIMAL.replace("at_ms = 500", "next_ack_after_ns = 5");
        let aimed_flip = aimed_flip.replacen(
            "action = \"crash\"",
            "action = \"clock_step\"\nback_ms = 3",
            1,
        );
        let e = parse_error(&aimed_flip);
        assert!(
            e.contains("next_ack_after_ns takes a kill"),
            "{aimed_flip}: {e}"
        );
        for (entry, error) in [
            (
                "after_alarm = \"torn\"",
                "the engine's alarms are r1_torn_tail, r2_hole",
            ),
            ("alarm_count = 2", "alarm_count goes with after_alarm"),
            (
                "after_alarm = \"wal_damaged\"\nalarm_count = 0",
                "alarm_count counts from 1",
            ),
        ] {
            let e = parse_error(&MINIMAL.replace("at_ms = 500", entry));
            assert!(e.contains(error), "{entry}: {e}");
        }
        for trigger in ["at_ms = 500", "after_acks = 3", "at_ns = 5"] {
            let running = MINIMAL.replace(
                "at_ms = 500\naction = \"crash\"",
                &format!("{trigger}\naction = \"latent_sector\""),
            );
            assert!(running.contains("\"latent_sector\""));
            let e = parse_error(&running);
            assert!(
                e.contains("latent_sector takes while_down = true"),
                "{trigger}: {e}"
            );
        }
        let down = MINIMAL.replace(
            "at_ms = 500\naction = \"crash\"",
            "at_ms = 500\naction = \"crash\"\n\n[[schedule]]\nwhile_down = true\naction = \"latent_sector\"",
        );
        Scenario::parse("down", &down).expect("a latent sector while down parses");
        let swarm_and_cancel =
            format!("{MINIMAL}\n[swarm]\ncrashes_max = 1\n\n[cancel]\nprobability = 0.1\n");
        let e = parse_error(&swarm_and_cancel);
        assert!(e.contains("[cancel] is for an explicit schedule"), "{e}");
        let half_a_bit = MINIMAL.replace("file = \"segment\"", "file = \"segment\"\nposition = 3");
        let e = parse_error(&half_a_bit);
        assert!(
            e.contains("path, position and bit (0-7) go together"),
            "{e}"
        );
        let no_file = MINIMAL.replace("file = \"segment\"", "");
        assert!(parse_error(&no_file).contains("needs file"));
        let topic = MINIMAL.replace("topic = \"orders\"\npartition = 1", "topic = \"x\"");
        assert!(parse_error(&topic).contains("consumers[0]: unknown topic \"x\""));
        let partition = MINIMAL.replace("partition = 1", "partition = 2");
        assert!(parse_error(&partition).contains("which has 2"));
        let checker = MINIMAL.replace("verdict = \"pass\"", "verdict = \"safety_failure\"");
        assert!(parse_error(&checker).contains("must name its checker"));
        let path = MINIMAL.replace("[\"crashes\"]", "[\"crashez\"]");
        assert!(parse_error(&path).contains("unknown path \"crashez\""));
        let value = MINIMAL.replace("partitions = 2", "partitions = -2");
        assert!(parse_error(&value).contains("line 11"));
        let range = MINIMAL.replace(
            "[[producers]]\ntopic = \"orders\"",
            "[[producers]]\ntopic = \"orders\"\ngap_ms = [9, 1]",
        );
        assert!(parse_error(&range).contains("inverted"));
    }
}
