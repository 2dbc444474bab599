//! The `format` integration tests: the on-disk format as the inspection commands see it.
//!
//! - [`support`]: building partitions byte by byte, running the `cafelog` binary.
//! - [`fixtures`]: the committed partitions in `corpus/disk/`, their generator, and the
//!   check that the committed bytes are what the generator produces
//!   (`CAFELOG_REGENERATE_FIXTURES=1` rewrites them).
//! - [`verify_snapshots`]: `verify --json` on every fixture, exit code included, as insta
//!   snapshots; plus the rule/HWM each fixture was built to show.
//! - [`dump_output`]: `dump --json` snapshots, record bytes against the generator,
//!   skipped records on stderr, `--from`, and a closed stdout pipe.
//! - [`exit_codes`]: 0/1/2 including usage and I/O errors, and that neither command
//!   changes the directory.
//! - [`fuzz_inputs`]: the `scan` fuzz target's body over every fixture and arbitrary bytes.
//! - [`scan_props`]: property tests: random partitions, truncated, bit-flipped and
//!   extended with garbage; the scanner never panics and `dump` never returns a byte
//!   that was not written at that offset.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod dump_output;
mod exit_codes;
mod fixtures;
mod fuzz_inputs;
mod scan_props;
mod support;
mod verify_snapshots;
