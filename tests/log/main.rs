//! Behaviour of the partition log on real temporary directories.
//!
//! - `write_path`: append, commit, flush thresholds, fsync policies, segment roll,
//!   commit-time monotonicity, poison.
//! - `recovery`: reopen after close and after a drop without close; torn tails, holes,
//!   refusals, clamps, hidden tails.
//! - `read_path`: reads below the HWM, cache, skips of corrupt frames, log-start errors.
//! - `retention`: the reaper with a clock the test controls.
//! - `long_poll`: waiters wake on commit and on notify, with no missed wake-up.
//! - `crash`: a child process appends and commits until SIGKILL; every acknowledged
//!   record survives.

mod common;
mod crash;
mod long_poll;
mod read_path;
mod recovery;
mod retention;
mod write_path;
