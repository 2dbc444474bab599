//! Swarm testing: each seed draws which fault kinds are on and at what rate, so some
//! seeds hammer one fault and others mix all of them.
//!
//! Caps (so progress stays possible; written down here and enforced by the world):
//! crashes at most `Profile::crashes_max` per run; fsync EIO at most 3 per run (each
//! poisons a partition until the next restart); lost fsyncs at most 2; misdirected
//! writes at most 2; ENOSPC at most 20, never more than 3 in a row; bit flips at most
//! 4; clock steps at most 4, each at most 30 s back. Nothing fires after the heal.
//! A kill is a power loss or, with `process_crash_fraction`, a process crash (the
//! page cache survives); both count against `crashes_max`. With `cancel_probability`,
//! each request before the heal is dropped at one of its await points with that
//! probability (see `world::cancel`). With `latent_sector_probability`, a power
//! loss leaves one sector of a segment unreadable (EIO until written again, see
//! `fs::latent`), at most `latent_sectors_max` (4) per run. Directory fsync EIO at most
//! 2 per run (each fails one `sync_dir`, whose entries stay pending). Corrupt writes
//! at most 2 per run (a segment write of frame bytes stores one bit flipped; the
//! commit path's verify must catch it before anything is acknowledged), none later than
//! a flush and a sync interval before the heal, so its poison comes before the heal.

use crate::fs::FaultOptions;
use crate::fs::dice::Dice;
use crate::profile::Profile;
use std::time::Duration;

/// The least share of disk calls that yield when cancels are on ([`FaultMix::disk`]).
const CANCEL_YIELD_PROBABILITY: f64 = 0.5;

/// The fault kinds [`FaultMix::without`] can turn off.
pub const WITHOUT_KINDS: [&str; 9] = [
    "cancel",
    "corrupt_write",
    "dir_fsync_eio",
    "lazy_frontier",
    "process_crash",
    "latent_sector",
    "loop_drop",
    "settle_drop",
    "wal_roll",
];

/// Which faults a run injects, drawn from its seed.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultMix {
    /// Mean gap between crashes, `None` when crashes are off.
    pub crash_mean_gap_ms: Option<u64>,
    /// Fraction of crashes aimed at the window after a commit, before the next HWM persist.
    pub crash_after_commit_fraction: f64,
    /// Bit flips at rest: expected per second of simulated time (0 = off).
    pub bit_flips_per_s: f64,
    pub bit_flips_max: u32,
    /// Wall clock steps backwards across a restart: probability per restart.
    pub clock_step_probability: f64,
    pub clock_step_back_ms_max: u64,
    pub clock_steps_max: u32,
    /// The disk's own faults (torn writes at crashes, fsync EIO, lost fsync, ENOSPC,
    /// misdirected writes, latency).
    pub fs: FaultOptions,
    pub crashes_max: u32,
    /// Fraction of the swarm's kills that are process crashes, not power losses
    /// (0..=1). A restart after a fatal I/O error is always a process crash.
    pub process_crash_fraction: f64,
    /// Probability that the server drops a request's engine future part-way (0..=1).
    pub cancel_probability: f64,
    /// Whether the engine's background loops are dropped part-way too, each start with
    /// `cancel_probability`, and restarted (no draw of their own: off only to replay a
    /// seed as it ran before loop drops existed, `without loop_drop`).
    pub loop_drops: bool,
    /// Whether acks and nacks are dropped part-way too, each with `cancel_probability`
    /// (their own stream; off only to replay a seed as it ran before settle drops
    /// existed, `without settle_drop`).
    pub settle_drops: bool,
    /// Probability that a power loss leaves one sector of a segment unreadable (0..=1),
    /// at most `latent_sectors_max` times per run.
    pub latent_sector_probability: f64,
    pub latent_sectors_max: u32,
    /// When set, the swarm injects only the faults with these numbers and draws the
    /// others without injecting them (a shrink's cut of the swarm). Every injection
    /// point of the swarm's loop takes the next number, in draw order: a flip between
    /// kills, a kill, and a kill's flip, latent sector and clock step (those three
    /// numbered even when their kill is not injected). The supervisor's own dice are
    /// drawn the same either way, so number `k` is the same draw in every cut (its
    /// time moves by what the cut faults took).
    pub only: Option<Vec<u32>>,
}

impl FaultMix {
    /// No faults at all (crash outcomes still apply if a scenario crashes by hand).
    pub fn none() -> Self {
        FaultMix {
            crash_mean_gap_ms: None,
            crash_after_commit_fraction: 0.0,
            bit_flips_per_s: 0.0,
            bit_flips_max: 0,
            clock_step_probability: 0.0,
            clock_step_back_ms_max: 0,
            clock_steps_max: 0,
            fs: FaultOptions::none(),
            crashes_max: 0,
            process_crash_fraction: 0.0,
            cancel_probability: 0.0,
            loop_drops: false,
            settle_drops: false,
            latent_sector_probability: 0.0,
            latent_sectors_max: 0,
            only: None,
        }
    }

    /// Draws a mix for one seed.
    pub fn draw(dice: &mut Dice, profile: &Profile) -> Self {
        let mut mix = FaultMix::none();
        let on = |dice: &mut Dice, p: f64| dice.chance(p);
        if on(dice, 0.8) {
            mix.crash_mean_gap_ms = Some(dice.range(profile.crash_mean_gap_ms.clone()));
            mix.crash_after_commit_fraction = [0.0, 0.3, 0.7][dice.below(3) as usize];
            mix.crashes_max = profile.crashes_max;
        }
        // Crash outcomes for pending writes: from gentle to brutal.
        let lost = dice.unit() * 0.6;
        mix.fs.crash_write_lost_probability = lost;
        mix.fs.crash_write_torn_probability = dice.unit() * (1.0 - lost) * 0.8;
        mix.fs.crash_set_len_lost_probability = dice.unit();
        if on(dice, 0.25) {
            mix.fs.fsync_eio_probability = 0.002 + dice.unit() * 0.02;
            mix.fs.fsync_eio_max = 3;
        }
        if on(dice, 0.15) {
            mix.fs.lost_fsync_probability = 0.002 + dice.unit() * 0.02;
            mix.fs.lost_fsync_max = 2;
        }
        if on(dice, 0.25) {
            mix.fs.enospc_probability = 0.002 + dice.unit() * 0.02;
            mix.fs.enospc_max = 20;
            mix.fs.enospc_consecutive_max = 3;
        }
        if on(dice, 0.1) {
            mix.fs.misdirect_probability = 0.002 + dice.unit() * 0.01;
            mix.fs.misdirect_max = 2;
            mix.fs.misdirect_shift_sectors_max = 8;
        }
        if on(dice, 0.5) {
            mix.fs.latency_probability = dice.unit() * 0.5;
            mix.fs.latency_min = Duration::from_micros(100);
            mix.fs.latency_max = Duration::from_millis(dice.range(1..=20));
            mix.fs.latency_after_probability = dice.unit() * 0.3;
            mix.fs.yield_probability = dice.unit() * 0.5;
        }
        if on(dice, 0.3) {
            mix.bit_flips_per_s = 0.1 + dice.unit();
            mix.bit_flips_max = 4;
        }
        if on(dice, 0.3) {
            mix.clock_step_probability = 0.3 + dice.unit() * 0.7;
            mix.clock_step_back_ms_max = dice.range(100..=30_000);
            mix.clock_steps_max = 4;
        }
        // Drawn last, so that the draws above keep the values they had before it existed.
        if mix.crash_mean_gap_ms.is_some() && on(dice, 0.6) {
            mix.process_crash_fraction = [0.3, 0.6, 1.0][dice.below(3) as usize];
        }
        // Drawn after it, for the same reason.
        if on(dice, 0.3) {
            mix.cancel_probability = [0.02, 0.1, 0.3][dice.below(3) as usize];
            mix.loop_drops = profile.loop_drops;
            mix.settle_drops = true;
        }
        // And after that one.
        if mix.crash_mean_gap_ms.is_some() && on(dice, 0.3) {
            mix.latent_sector_probability = [0.2, 0.5][dice.below(2) as usize];
            mix.latent_sectors_max = 4;
        }
        // And after that one.
        if on(dice, 0.25) {
            mix.fs.dir_fsync_eio_probability = 0.01 + dice.unit() * 0.1;
            mix.fs.dir_fsync_eio_max = 2;
        }
        // And after that one. Rare per write, so the two shots spread over the run.
        if on(dice, 0.3) {
            mix.fs.corrupt_write_probability = 0.0005 + dice.unit() * 0.005;
            mix.fs.corrupt_write_max = 2;
        }
        mix
    }

    /// The disk's options as the world runs them. A drop lands only where a future
    /// suspends, and the disk suspends only where it yields: with cancels on, a disk
    /// call yields at least half the time, so each is an await point a drop can reach.
    pub fn disk(&self) -> FaultOptions {
        let mut fs = self.fs.clone();
        if self.cancel_probability > 0.0 {
            fs.yield_probability = fs.yield_probability.max(CANCEL_YIELD_PROBABILITY);
        }
        fs
    }

    /// Turns off the fault kind `name` (one of [`WITHOUT_KINDS`]). Kinds drawn after
    /// every other draw leave the rest of the mix as it was, so a seed without one runs
    /// exactly as it did before the kind existed: how a corpus entry keeps the run it
    /// was recorded for.
    pub fn without(&mut self, name: &str) -> Result<(), String> {
        match name {
            "cancel" => self.cancel_probability = 0.0,
            "loop_drop" => self.loop_drops = false,
            "settle_drop" => self.settle_drops = false,
            "process_crash" => self.process_crash_fraction = 0.0,
            "dir_fsync_eio" => {
                self.fs.dir_fsync_eio_probability = 0.0;
                self.fs.dir_fsync_eio_max = 0;
            }
            "latent_sector" => {
                self.latent_sector_probability = 0.0;
                self.latent_sectors_max = 0;
            }
            "corrupt_write" => {
                self.fs.corrupt_write_probability = 0.0;
                self.fs.corrupt_write_max = 0;
            }
            // A workload knob, reset by `RunSpec::from_seed_without`; nothing in the mix.
            "wal_roll" | "lazy_frontier" => {}
            other => {
                return Err(format!(
                    "cannot turn off fault kind {other:?}: one of {}",
                    WITHOUT_KINDS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The fault kinds this mix turns on, for reports.
    pub fn kinds_on(&self) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        if self.crash_mean_gap_ms.is_some() {
            kinds.push("crash");
        }
        if self.crash_mean_gap_ms.is_some() && self.process_crash_fraction > 0.0 {
            kinds.push("process_crash");
        }
        if self.cancel_probability > 0.0 {
            kinds.push("cancel");
        }
        if self.fs.fsync_eio_max > 0 {
            kinds.push("fsync_eio");
        }
        if self.fs.lost_fsync_max > 0 {
            kinds.push("lost_fsync");
        }
        if self.fs.dir_fsync_eio_max > 0 {
            kinds.push("dir_fsync_eio");
        }
        if self.fs.enospc_max > 0 {
            kinds.push("enospc");
        }
        if self.fs.misdirect_max > 0 {
            kinds.push("misdirected_write");
        }
        if self.fs.corrupt_write_max > 0 {
            kinds.push("corrupt_write");
        }
        if self.fs.latency_probability > 0.0 {
            kinds.push("latency");
        }
        if self.bit_flips_max > 0 {
            kinds.push("bit_flip");
        }
        if self.latent_sectors_max > 0 && self.latent_sector_probability > 0.0 {
            kinds.push("latent_sector");
        }
        if self.clock_steps_max > 0 {
            kinds.push("clock_step");
        }
        kinds
    }
}
