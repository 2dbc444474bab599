//! [`SimFsPlugin`]: the madsim simulator plugin that crashes a node's disks when madsim
//! resets the node.
//!
//! Checked in madsim 0.2.34 (`src/sim/task/mod.rs`): `Handle::kill(id)` (and a Ctrl-C to
//! a node without a handler, and a node restarted after a panic with
//! `restart_on_panic`) runs `TaskHandle::kill_id`, which calls `reset_node(id)` on every
//! registered simulator. **`Handle::restart(id)` alone does not**: it swaps the node's
//! task list and re-runs its `init`, but never calls `reset_node`. So a restart that
//! should also be a crash must kill first: [`crash_and_restart`] does exactly
//! `kill(id); restart(id)` (the order madsim's own restart test uses).
//!
//! A kill is a power loss unless announced as a process crash: [`kill_process`] marks
//! the node so that its next reset calls [`SimFs::process_crash`] instead (the page
//! cache survives), then kills it.
//!
//! `reset_node` runs while madsim holds its node table and simulator table locks, so
//! the crash must not call back into madsim's task or plugin APIs; `SimFs::crash` only
//! takes the disk's own lock (and reads simulated time for the event log).

use super::SimFs;
use madsim::Config;
use madsim::plugin::Simulator;
use madsim::rand::GlobalRng;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use madsim::time::TimeHandle;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// Register with `runtime.add_simulator::<SimFsPlugin>()`, then [`attach`] each node's
/// disk(s).
#[derive(Default)]
pub struct SimFsPlugin {
    disks: Mutex<BTreeMap<NodeId, Vec<SimFs>>>,
    /// Nodes whose next reset is a process crash, not a power loss.
    process_only: Mutex<BTreeSet<NodeId>>,
}

impl Simulator for SimFsPlugin {
    fn new(_rand: &GlobalRng, _time: &TimeHandle, _config: &Config) -> Self {
        Self::default()
    }

    fn reset_node(&self, id: NodeId) {
        let process_only = self
            .process_only
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let disks = self.disks.lock().unwrap_or_else(|e| e.into_inner());
        for disk in disks.get(&id).into_iter().flatten() {
            if process_only {
                disk.process_crash();
            } else {
                disk.crash();
            }
        }
    }
}

impl SimFsPlugin {
    /// From now on a reset of `node` crashes `fs`.
    pub fn attach(&self, node: NodeId, fs: &SimFs) {
        self.disks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(node)
            .or_default()
            .push(fs.clone());
    }

    /// The next reset of `node` is a process crash: its disks keep their page cache.
    pub fn announce_process_crash(&self, node: NodeId) {
        self.process_only
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node);
    }

    /// The disks attached to `node`.
    pub fn disks(&self, node: NodeId) -> Vec<SimFs> {
        self.disks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&node)
            .cloned()
            .unwrap_or_default()
    }
}

/// Attaches `fs` to `node` through the current runtime's plugin. Panics (in madsim) if
/// `SimFsPlugin` was not added to the runtime: a harness bug.
pub fn attach(node: NodeId, fs: &SimFs) {
    madsim::plugin::simulator::<SimFsPlugin>().attach(node, fs);
}

/// Kills `node`'s process only: its tasks die, its disks go through
/// [`SimFs::process_crash`] (the page cache survives). Not restarted.
pub fn kill_process(node: NodeId) {
    madsim::plugin::simulator::<SimFsPlugin>().announce_process_crash(node);
    Handle::current().kill(node);
}

/// Kills `node` (crashing its attached disks) and starts it again from its `init`.
pub fn crash_and_restart(node: NodeId) {
    let handle = Handle::current();
    handle.kill(node);
    handle.restart(node);
}
