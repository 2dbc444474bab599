//! Fuzz target `scan`: arbitrary bytes as a partition directory, scanned by the recovery
//! scanner at both depths.
//!
//! The body is one call, so it cannot drift from the engine: the input layout is
//! `cafelog_engine::recovery::ScanInput` and the checks are the ones every scan asserts
//! (`PartitionScan::assert_consistent`) plus the comparison of the two depths in
//! `scan_fuzz_input`. `cargo test` runs the same function over every committed fixture
//! and over generated partitions (`tests/format/scan_props.rs`).

#![no_main]

use cafelog_engine::fs::StdFs;
use cafelog_engine::recovery::scan_fuzz_input;
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

/// One directory for the whole run: creating a tempdir per input would dominate.
fn dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir")).path()
}

fuzz_target!(|data: &[u8]| {
    pollster::block_on(scan_fuzz_input(&StdFs, dir(), data)).expect("the scan reads its files");
});
