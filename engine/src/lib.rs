//! `cafelog-engine`: the per-partition storage engine of a message queue, as
//! `spec/storage-engine.md` describes it.
//!
//! - [`format`]: the on-disk structures, byte for byte (also in `FORMAT.md`).
//! - [`recovery`]: the scanner that turns segment files and a persisted HWM into a
//!   recovery plan (rules R1-R4), and the code that carries it out.
//! - [`alarm`]: the events by which the engine reports what it gave up or refused.
//! - [`fs`] and [`clock`]: the seams. The engine reaches the OS only through them, so
//!   the simulator can substitute a crashing disk and a simulated clock. `clippy.toml`
//!   forbids direct use of `std::fs` and the OS clocks elsewhere.

#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod alarm;
pub mod clock;
pub mod format;
pub mod fs;
pub mod log;
pub mod recovery;
pub mod store;
