//! A deadline for a whole test binary, for mutation testing.
//!
//! A mutant can make a commit or a wait hang forever; cargo-mutants then waits out its
//! whole test timeout (the sweep's budget and more) and judges nothing. With
//! `CAFELOG_TEST_DEADLINE_S` set (`ci/mutants` sets it), the first log or store a test
//! opens starts a watchdog that aborts the binary once it has run that long, so a hang
//! fails in seconds. Unset, nothing is started: a developer's hang stays a hang to
//! debug.

use std::sync::Once;
use std::time::Duration;

/// Starts the watchdog, once per binary, when `CAFELOG_TEST_DEADLINE_S` names a
/// number of seconds.
pub fn start() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let Ok(value) = std::env::var("CAFELOG_TEST_DEADLINE_S") else {
            return;
        };
        let secs: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("CAFELOG_TEST_DEADLINE_S={value}: not a number of seconds"));
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            eprintln!(
                "test binary still running after {secs} s (CAFELOG_TEST_DEADLINE_S): \
                 a test hangs; aborting"
            );
            std::process::abort();
        });
    });
}
