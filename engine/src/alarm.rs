//! Alarms: the events by which the engine says that it gave something up, refused, or
//! did something a healthy disk never makes it do, and its account of each open. Each
//! is one `tracing` event (the spec's "error-level event" for recorded loss) with the
//! field `alarm` set to one of the names below and the numeric fields listed, so that an
//! operator's log and a test harness read the same account. Every alarm is raised here
//! and nowhere else.
//!
//! | name | level | fields | when |
//! |---|---|---|---|
//! | `r1_torn_tail` | warn | dir, segment, position, offset, bytes | open truncates a torn tail |
//! | `r2_hole` | warn | dir, segment, position, offset, bytes | open truncates at a hole above the persisted HWM |
//! | `r2_salvaged` | warn | dir, offered, kept, copied, first_seq, end_seq | records past an R2 hole written into the WAL at seqs `[first_seq, end_seq)`: `kept` had no other copy a replay would commit (a plain entry, or a revival of an entry the checkpoint passed), `copied` got a second |
//! | `r3_refused` | error | dir, segment, position | open refuses: damage below the persisted HWM |
//! | `r4_clamp` | error | dir, persisted_hwm, hwm, lost | the persisted HWM passed the recovered tail: recorded loss |
//! | `junk_trimmed` | warn | dir, segment, bytes | damaged unused space after a sealed segment's last frame |
//! | `log_opened` | info | dir, log_start, hwm, tail, hidden | an open finished: its account |
//! | `frame_skipped` | error | dir, base, records | a frame fails its checks at consume time |
//! | `records_skipped` | error | dir, base, records | records of a valid frame whose envelope does not parse |
//! | `poisoned` | error | dir, op | a write or fsync failed, or records in flight were dropped (op [`CANCELLED_OP`]): the partition acknowledges nothing more |
//! | `hidden_exposed` | warn | dir, from, to | the hidden tail made visible (the WAL lost entries) |
//! | `wal_damaged` | error | corrupt_entries, skipped_bytes | the WAL has unreadable regions at open |
//! | `wal_checkpoint_unreadable` | error | | the WAL checkpoint fails its CRC: everything replays |
//! | `wal_poisoned` | error | | a WAL write or fsync failed |
//! | `frontier_reset` | error | dir, log_start | `consumer.offset` unreadable: restart at the log start |
//! | `topic_refused` | error | dir | the topic's `topic.conf` is unreadable: the topic stays closed |
//! | `frontier_clamped` | warn | dir, value, clamped | a recovered frontier outside `[log start, HWM]` |
//! | `frontier_persisting` | debug | dir, value | a `consumer.offset` replace begins (temp file, fsync, rename, directory fsync) |
//! | `frontier_persisted` | debug | dir, value | that replace returned: `value` is durable |
//! | `log_start_moved` | info | dir, from, log_start | a retention sweep took `[from, log_start)` out of the log |
//! | `replay_committing` | info | dir, records | an open's WAL replay begins to commit `records` entries into the partition |
//! | `drain_partial` | debug | dir, base, records, bytes, next_bytes | a drain took `records` records (`bytes` of envelopes) into the frame at `base` and left records buffered, the next of `next_bytes`: the frame was full |
//! | `frontier_loaded` | debug | dir, loaded | the partition's queue state was loaded on first touch, its frontier at `loaded` (after any reset or clamp) |
//!
//! The last six are not alarms but the engine's account: a harness holds a recovered
//! frontier to at least the last value persisted before a crash, and at most one it
//! began to write, at the moment the queue loads it (lazily, on first touch); it learns that records are gone when the reaper forgets them, which
//! is before (a sweep dropped or failed part-way: much before) their files' unlinks;
//! and it learns which open's replay re-committed entries, even one killed before the
//! store came up (two crashes before one replay share that replay's one commit of each
//! entry); and it holds a drain that left records buffered to the frame caps
//! (storage-engine.md: "one frame per drain"), which the bytes on disk cannot show.

use std::path::Path;

pub const TORN_TAIL: &str = "r1_torn_tail";
pub const HOLE: &str = "r2_hole";
pub const SALVAGED: &str = "r2_salvaged";
pub const REFUSED: &str = "r3_refused";
pub const CLAMP: &str = "r4_clamp";
pub const JUNK_TRIMMED: &str = "junk_trimmed";
pub const LOG_OPENED: &str = "log_opened";
pub const FRAME_SKIPPED: &str = "frame_skipped";
pub const RECORDS_SKIPPED: &str = "records_skipped";
pub const POISONED: &str = "poisoned";
pub const HIDDEN_EXPOSED: &str = "hidden_exposed";
pub const WAL_DAMAGED: &str = "wal_damaged";
pub const WAL_CHECKPOINT_UNREADABLE: &str = "wal_checkpoint_unreadable";
pub const WAL_POISONED: &str = "wal_poisoned";
pub const FRONTIER_RESET: &str = "frontier_reset";
pub const FRONTIER_CLAMPED: &str = "frontier_clamped";
pub const TOPIC_REFUSED: &str = "topic_refused";
pub const FRONTIER_PERSISTING: &str = "frontier_persisting";
pub const FRONTIER_PERSISTED: &str = "frontier_persisted";
pub const LOG_START_MOVED: &str = "log_start_moved";
pub const REPLAY_COMMITTING: &str = "replay_committing";
pub const DRAIN_PARTIAL: &str = "drain_partial";
pub const FRONTIER_LOADED: &str = "frontier_loaded";

/// The `op` of a poison that no I/O error caused: records in flight were dropped (a
/// cancelled `sync`, or a panic) before they reached the file.
pub const CANCELLED_OP: &str = "records in flight dropped";

/// The `op` of a poison raised by a failed fsync of the partition's directory after a
/// segment create (the directory is shared with the store's `consumer.offset`, so a
/// checker tells the log's failure from the store's by it).
pub const SYNC_DIR_OP: &str = "sync directory after segment create";

/// The `op` of a poison raised when the re-read after an fsync found a frame that does
/// not read back as written.
pub const VERIFY_AFTER_FSYNC_OP: &str = "verify frame after fsync";

/// The `op` of a poison raised when a frame an fsync left in doubt did not read back as
/// written before it was rewritten.
pub const VERIFY_BEFORE_REWRITE_OP: &str = "verify frame before rewriting it";

/// Every alarm name, for a consumer that wants to know them all.
pub const ALL: [&str; 23] = [
    TORN_TAIL,
    HOLE,
    SALVAGED,
    REFUSED,
    CLAMP,
    JUNK_TRIMMED,
    LOG_OPENED,
    FRAME_SKIPPED,
    RECORDS_SKIPPED,
    POISONED,
    HIDDEN_EXPOSED,
    WAL_DAMAGED,
    WAL_CHECKPOINT_UNREADABLE,
    WAL_POISONED,
    FRONTIER_RESET,
    FRONTIER_CLAMPED,
    TOPIC_REFUSED,
    FRONTIER_PERSISTING,
    FRONTIER_PERSISTED,
    LOG_START_MOVED,
    REPLAY_COMMITTING,
    DRAIN_PARTIAL,
    FRONTIER_LOADED,
];

/// Which rule a truncation followed.
pub(crate) fn truncated(
    dir: &Path,
    torn_tail: bool,
    segment: &str,
    position: u64,
    offset: u64,
    bytes: u64,
    reason: &str,
) {
    let alarm = if torn_tail { TORN_TAIL } else { HOLE };
    tracing::warn!(alarm, dir = %dir.display(), segment, position, offset, bytes, reason,
        "truncating");
}

pub(crate) fn salvaged(dir: &Path, offered: u64, kept: &crate::recovery::Kept) {
    let crate::recovery::Kept {
        kept,
        copied,
        first_seq,
        end_seq,
    } = *kept;
    tracing::warn!(alarm = SALVAGED, dir = %dir.display(), offered, kept, copied, first_seq,
        end_seq, "records past an R2 hole written into the WAL before the cut");
}

pub(crate) fn refused(dir: &Path, segment: &str, position: u64, reason: &str) {
    tracing::error!(alarm = REFUSED, dir = %dir.display(), segment, position, reason,
        "refusing to open partition");
}

pub(crate) fn clamp(dir: &Path, persisted_hwm: u64, hwm: u64) {
    tracing::error!(alarm = CLAMP, dir = %dir.display(), persisted_hwm, hwm,
        lost = persisted_hwm - hwm,
        "persisted HWM ahead of the recovered tail: recorded loss (R4 clamp)");
}

pub(crate) fn junk_trimmed(dir: &Path, segment: &str, bytes: u64, reason: &str) {
    tracing::warn!(alarm = JUNK_TRIMMED, dir = %dir.display(), segment, bytes, reason,
        "damaged unused space after a sealed segment's last frame; trimming it");
}

pub(crate) fn log_opened(dir: &Path, log_start: u64, hwm: u64, tail: u64) {
    tracing::info!(alarm = LOG_OPENED, dir = %dir.display(), log_start, hwm, tail,
        hidden = tail - hwm, "partition log opened");
}

pub(crate) fn replay_committing(dir: &Path, records: u64) {
    tracing::info!(alarm = REPLAY_COMMITTING, dir = %dir.display(), records,
        "WAL replay committing entries");
}

pub(crate) fn drain_partial(
    dir: &Path,
    base: u64,
    records: usize,
    bytes: usize,
    next_bytes: usize,
) {
    tracing::debug!(alarm = DRAIN_PARTIAL, dir = %dir.display(), base, records, bytes,
        next_bytes, "a full frame drained; records left buffered");
}

/// `position`: where in its segment the reader looked for the frame, so an observer can
/// read the same bytes.
pub(crate) fn frame_skipped(dir: &Path, base: u64, records: u64, position: u64) {
    tracing::error!(alarm = FRAME_SKIPPED, dir = %dir.display(), base, records, position,
        "frame unreadable at consume time; records skipped");
}

pub(crate) fn records_skipped(dir: &Path, base: u64, records: u64) {
    tracing::error!(alarm = RECORDS_SKIPPED, dir = %dir.display(), base, records,
        "records whose envelope does not parse skipped at consume time");
}

pub(crate) fn poisoned(dir: &Path, op: &str, reason: &str) {
    tracing::error!(alarm = POISONED, dir = %dir.display(), op, reason, "partition poisoned");
}

pub(crate) fn hidden_exposed(dir: &Path, from: u64, to: u64) {
    tracing::warn!(alarm = HIDDEN_EXPOSED, dir = %dir.display(), from, to,
        exposed = to - from, "hidden tail exposed");
}

pub(crate) fn wal_damaged(corrupt_entries: u64, skipped_bytes: u64) {
    tracing::error!(
        alarm = WAL_DAMAGED,
        corrupt_entries,
        skipped_bytes,
        "unreadable WAL regions skipped"
    );
}

pub(crate) fn wal_checkpoint_unreadable() {
    tracing::error!(
        alarm = WAL_CHECKPOINT_UNREADABLE,
        "WAL checkpoint unreadable; replaying every entry"
    );
}

pub(crate) fn wal_poisoned(reason: &str) {
    tracing::error!(alarm = WAL_POISONED, reason, "ingress WAL poisoned");
}

pub(crate) fn frontier_reset(dir: &Path, log_start: u64, reason: &str) {
    tracing::error!(alarm = FRONTIER_RESET, dir = %dir.display(), log_start, reason,
        "consumer.offset unreadable; restarting at the log start");
}

pub(crate) fn frontier_clamped(dir: &Path, value: u64, clamped: u64) {
    tracing::warn!(alarm = FRONTIER_CLAMPED, dir = %dir.display(), value, clamped,
        "consumer frontier outside [log start, HWM] clamped");
}

pub(crate) fn topic_refused(dir: &Path, reason: &str) {
    tracing::error!(alarm = TOPIC_REFUSED, dir = %dir.display(), reason,
        "topic.conf unreadable; the topic stays closed");
}

pub(crate) fn frontier_persisting(dir: &Path, value: u64) {
    tracing::debug!(alarm = FRONTIER_PERSISTING, dir = %dir.display(), value,
        "persisting the consumer frontier");
}

pub(crate) fn frontier_persisted(dir: &Path, value: u64) {
    tracing::debug!(alarm = FRONTIER_PERSISTED, dir = %dir.display(), value,
        "consumer frontier persisted");
}

pub(crate) fn frontier_loaded(dir: &Path, loaded: u64) {
    tracing::debug!(alarm = FRONTIER_LOADED, dir = %dir.display(), loaded,
        "consumer frontier loaded");
}

pub(crate) fn log_start_moved(dir: &Path, from: u64, log_start: u64) {
    tracing::info!(alarm = LOG_START_MOVED, dir = %dir.display(), from, log_start,
        "retention moved the log start");
}
