//! Shared by the disk-level tests (`mod common;`): a partition log on a fresh simulated
//! disk, its frames stored raw so a test can find records in the segment's bytes.

use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::log::{Log, LogConfig};
use cafelog_sim::fs::{FaultOptions, SimFs};
use std::future::Future;

/// The partition directory the log lives in.
pub const DIR: &str = "/data/topics/t/p00000";
/// Its first segment.
pub const SEGMENT: &str = "/data/topics/t/p00000/00000000000000000000.log";

/// Runs `test` in a madsim runtime of `seed` with the disk (no faults set) and a log
/// opened at [`DIR`] on it, codec none.
pub fn with_raw_log<T, F>(seed: u64, test: impl FnOnce(SimFs, Log<SimFs, ManualClock>) -> F) -> T
where
    F: Future<Output = T>,
{
    let fs = SimFs::new(seed, FaultOptions::none()).expect("options");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.block_on(async move {
        let config = LogConfig {
            codec: Codec::None,
            ..LogConfig::default()
        };
        let (log, _) = Log::open(fs.clone(), ManualClock::new(0), DIR, config)
            .await
            .expect("open");
        test(fs, log).await
    })
}
