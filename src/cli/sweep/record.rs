//! One seed's result as a sweep keeps it (and writes it as a JSON line): verdict,
//! faults, stats, paths and excuses.

use super::*;

/// One seed's result, as written to `--json` and read back by `cafelog merge`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeedRecord {
    pub seed: u64,
    pub profile: String,
    /// The `--without` flags the seed ran with (empty when none); `with` in JSON
    /// written when profiles differed in the kinds they drew.
    #[serde(default, alias = "with", skip_serializing_if = "String::is_empty")]
    pub flags: String,
    /// pass, safety_failure, liveness_failure, simulator_crash, or hang (no verdict:
    /// the run did not finish within the sweep's `--seed-timeout`).
    pub verdict: String,
    pub checker: Option<String>,
    pub message: String,
    pub faults: BTreeMap<String, u64>,
    pub stats: Stats,
    pub paths: BTreeMap<String, u64>,
    /// How many times each excuse row of the checkers fired in this seed (absent in
    /// JSON written before excuses were counted).
    #[serde(default)]
    pub excuses: BTreeMap<String, u64>,
    pub trace_hash: String,
    pub sim_ms: u64,
    pub wall_ms: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub acknowledged: u64,
    pub delivered: u64,
    pub duplicated: u64,
    pub lost: u64,
    pub recorded_loss: u64,
    pub crashes: u64,
}

/// The verdict of a seed that did not finish.
const HUNG: &str = "hang";

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::SafetyFailure(_) => "safety_failure",
        Verdict::LivenessFailure(_) => "liveness_failure",
        Verdict::SimulatorCrash { .. } => "simulator_crash",
    }
}

impl SeedRecord {
    /// The record of a seed whose run panicked past `run`'s own guard.
    pub(super) fn escaped_panic(
        seed: u64,
        profile: &str,
        panic: &(dyn std::any::Any + Send),
        wall: Duration,
    ) -> SeedRecord {
        let verdict = Verdict::from_panic(panic);
        SeedRecord::without_outcome(
            seed,
            profile,
            verdict_name(&verdict),
            verdict.to_string(),
            wall,
        )
    }

    /// The record of a seed still running at the sweep's limit.
    pub(super) fn hung(seed: u64, profile: &str, limit: Duration) -> SeedRecord {
        let message = crate::cli::deadline::hung_message(limit);
        SeedRecord::without_outcome(seed, profile, HUNG, message, limit)
    }

    /// A seed whose run gave no outcome: nothing but its verdict and message.
    fn without_outcome(
        seed: u64,
        profile: &str,
        verdict: &str,
        message: String,
        wall: Duration,
    ) -> SeedRecord {
        SeedRecord {
            seed,
            profile: profile.to_string(),
            flags: String::new(),
            verdict: verdict.to_string(),
            checker: None,
            message,
            faults: BTreeMap::new(),
            stats: Stats::default(),
            paths: BTreeMap::new(),
            excuses: BTreeMap::new(),
            trace_hash: String::new(),
            sim_ms: 0,
            wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
        }
    }

    pub(super) fn is_hung(&self) -> bool {
        self.verdict == HUNG
    }

    pub(super) fn from_outcome(o: &RunOutcome, wall: Duration) -> SeedRecord {
        let counts = o
            .report
            .as_ref()
            .map(|r| r.accounting.counts())
            .unwrap_or_default();
        SeedRecord {
            seed: o.seed,
            profile: o.profile.to_string(),
            flags: String::new(),
            verdict: verdict_name(&o.verdict).to_string(),
            checker: o.verdict.failure().map(|f| f.checker.to_string()),
            message: o.verdict.to_string(),
            faults: o.faults.clone(),
            stats: Stats {
                acknowledged: counts.acknowledged,
                delivered: counts.delivered,
                duplicated: counts.duplicated,
                lost: counts.lost,
                recorded_loss: counts.recorded_loss,
                crashes: o.paths.crashes,
            },
            paths: o
                .paths
                .entries()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            excuses: o
                .report
                .as_ref()
                .map(|r| {
                    r.excuses_used()
                        .into_iter()
                        .map(|(k, v)| (k.name().to_string(), v))
                        .collect()
                })
                .unwrap_or_default(),
            trace_hash: format!("{:016x}", o.trace_hash),
            sim_ms: o.sim_ms,
            wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
        }
    }

    pub(super) fn passed(&self) -> bool {
        self.verdict == "pass"
    }

    pub(super) fn kind(&self) -> String {
        match &self.checker {
            Some(c) => format!("{} [{c}]", self.verdict),
            None => self.verdict.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hung_seed_is_a_failing_seed_named_as_hung() {
        let record = SeedRecord::hung(9, "long", Duration::from_secs(60));
        assert!(!record.passed() && record.is_hung());
        assert_eq!((record.verdict.as_str(), record.wall_ms), ("hang", 60_000));
        assert!(record.message.starts_with("HANG"), "{}", record.message);
    }

    #[test]
    fn a_panic_that_escapes_a_run_is_a_failing_seed_not_a_missing_one() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("attempt to add with overflow");
        let record = SeedRecord::escaped_panic(7, "quick", &*payload, Duration::from_millis(3));
        assert!(!record.passed());
        assert_eq!(record.verdict, "simulator_crash");
        assert_eq!((record.seed, record.profile.as_str()), (7, "quick"));
        assert!(
            record.message.contains("attempt to add with overflow"),
            "{}",
            record.message
        );
    }
}
