//! Behaviour of the partition log on real temporary directories.
//!
//! - `flusher`: the background drain and batched fsync thresholds.
//! - `write_path`: append, commit, fsync policies, segment roll,
//!   commit-time monotonicity, poison.
//! - `recovery`: reopen after close and after a drop without close; torn tails, holes,
//!   refusals, clamps, hidden tails.
//! - `recovery_durable`: what recovery changed is durable when it returns.
//! - `read_path`: reads below the HWM, cache, skips of corrupt frames, log-start errors.
//! - `frame_cache`: which decoded frames the read cache keeps.
//! - `group_commit`: the gather before an fsync never stalls a producer left alone.
//! - `latent`: reads the disk fails (latent sector errors) and short reads.
//! - `retention`: the reaper with a clock the test controls.
//! - `long_poll`: waiters wake on commit and on notify, with no missed wake-up.
//! - `shape`: frame cuts, segment rolls and the codec choice at their exact edges.
//! - `preallocate`: where the writer's preallocated zeros go (speed only, so unseen by
//!   the simulator).
//! - `verify`: the read-back before a commit rejects a frame read from elsewhere.
//! - `crash`: a child process appends and commits until SIGKILL; every acknowledged
//!   record survives.

mod cancel;
mod common;
mod crash;
mod flusher;
mod frame_cache;
mod group_commit;
mod latent;
mod long_poll;
mod preallocate;
mod read_path;
mod recovery;
mod recovery_durable;
mod retention;
mod shape;
mod verify;
mod wal;
mod write_path;
