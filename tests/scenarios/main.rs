//! Scenario files and the engine-level cases next to them.
//!
//! - `files`: runs every `scenarios/*.toml` (one test each), asserts the verdict, checker
//!   and paths its file expects, a few scenario-specific facts from the history, and
//!   snapshots its stable report with insta (`scenarios/README.md` has the workflow).
//! - `crc_zero_frame`: a valid frame whose CRC is 0 followed by a zero-filled tail, on a
//!   hand-made partition (the world cannot make a CRC come out as 0 on purpose).
//! - `shrink`: the shrinker against deliberately strict predicates.
//! - `records`: the records a run sends (`only_ids`), in files and in the shrink.

mod crc_zero_frame;
mod files;
mod records;
mod shrink;
