//! `cafelog-sim`: a deterministic simulation harness that runs the real
//! `cafelog-engine` under madsim on a fault-injecting simulated disk and clock.

#[cfg(not(madsim))]
compile_error!(
    "cafelog-sim needs `--cfg madsim`. The workspace's .cargo/config.toml sets it; a \
     RUSTFLAGS environment variable replaces that setting, so add `--cfg madsim` to it \
     (RUSTFLAGS=\"--cfg madsim ...\")."
);

pub mod check;
pub mod clock;
pub mod corpus;
pub mod deadline;
pub mod fs;
pub mod history;
pub mod profile;
pub mod reference;
pub mod scenario;
pub mod shrink;
pub mod swarm;
pub mod timeline;
pub mod trace_hash;
pub mod world;
