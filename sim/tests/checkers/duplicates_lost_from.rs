//! `lost_from` lowers where a crash's replay commits to the tail the open found only
//! when an out-of-contract log fault that crash showed can have ended the log there:
//! its reach holds that tail. A reach that ends below the found tail, or an empty one,
//! lowers nothing (helper-55 found both lowering it).
//!
//! Each history: ids 1 and 2 at 0 and 1 (persisted HWM 0, shown and read), id 3 at 2
//! (shown: in-memory HWM 3), then a power loss after which the open finds the log
//! clean and ending at 2 (frame 2 is not on the platter), durable tail 3 as the world
//! counts it (the world's `crash_partitions` lifts it to the in-memory HWM once the
//! partition is in `damaged`: any segment flip/latent sector on it earlier in the run;
//! the cut-down history, like 59841b9's own test, leaves that flip out). The replay
//! commits ids 1, 2, 3 again at 2, 3, 4, which are read.
//!
//! This is `replay_below_a_lost_frame(false)` of 59841b9 with the lost fsync of the
//! frame at 2 (the one fault that explains a clean log ending at 2) replaced by a
//! fault that cannot have removed frame 2. Frame 2 was covered by the HWM the engine
//! showed, so a correct engine had fsynced it, and no fault reached it: the platter
//! holds it, and the open finds the log through 3. A log ending at 2 is the engine's
//! own bug (its HWM ran ahead of what it made durable, or it truncated the segment),
//! and the repeats of ids 1 and 2 at 2 and 3, below the durable tail 3, are no replay
//! of a log the fault shortened.

use super::*;

const MODES: [Mode; 3] = [Mode::Loud, Mode::Quiet, Mode::Unacked];

/// `fault`: what was injected before id 3's produce (`None`: nothing).
fn frame_2_missing(fault: Option<FaultKind>, mode: Mode) -> Run {
    log_ends_at_2(fault, mode, 1)
}

/// The world records a segment lost fsync that left no frame byte undurable (a
/// write-back of bytes the platter already held) as `offsets: Some(0..0)`
/// (`recorder/fs_faults.rs` `lost_fsync_offsets`): it reached no offset
/// (`Reach::meets`: "an empty reach none").
fn empty_lost_fsync() -> FaultKind {
    FaultKind::LostFsync {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 0, end: 0 }),
    }
}

/// A misdirected write whose reach is the frame at 0, nowhere near 2: whatever it did
/// to frame 0 (the open read it valid: a write-back covered it, say), it cannot have
/// removed frame 2, above its reach's end.
fn misdirected_at_0() -> FaultKind {
    FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 0, end: 1 }),
        below_hwm: Some(false),
        parts: None,
    }
}

/// A lost fsync of the partition's directory: the world cannot name offsets
/// (`offsets: None`), so its reach is "acknowledged after it" (2 here, or nothing
/// when id 3's ack was lost). It can lose a segment created before it, so a log
/// ending at 2 is a correct engine's only if a segment began at 2: ambiguous from
/// this history (no segment listing), so a probe, not a claim.
fn directory_lost_fsync() -> FaultKind {
    FaultKind::LostFsync {
        file: FileKind::Directory,
        offsets: None,
    }
}

fn refused(fault: Option<FaultKind>, mode: Mode) -> bool {
    !duplicate_messages(&frame_2_missing(fault, mode)).is_empty()
}

#[test]
fn baseline_without_a_fault_the_repeats_below_the_durable_tail_are_refused() {
    for mode in MODES {
        assert!(refused(None, mode), "{mode:?}");
    }
}

/// Control: 59841b9's own case, the fault reaching the frame at 2: accepted.
#[test]
fn control_a_lost_fsync_of_the_frame_at_the_found_tail_is_accepted() {
    let at_2 = FaultKind::LostFsync {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start: 2, end: 3 }),
    };
    for mode in [Mode::Loud, Mode::Quiet] {
        assert!(!refused(Some(at_2.clone()), mode), "{mode:?}");
    }
}

#[test]
fn a_lost_fsync_that_reached_no_offset_lowers_nothing() {
    for mode in MODES {
        assert!(
            refused(Some(empty_lost_fsync()), mode),
            "{mode:?}: an empty reach cannot have shortened the log (accepted)"
        );
    }
}

#[test]
fn a_reach_ending_below_the_found_tail_lowers_nothing() {
    for mode in MODES {
        assert!(
            refused(Some(misdirected_at_0()), mode),
            "{mode:?}: a fault reaching [0, 1) cannot have ended the log at 2 (accepted)"
        );
    }
}

/// The directory fault lowers to 2 when its reach is 2
/// (id 3 acknowledged after it); with the ack lost it reaches nothing and lowers
/// nothing.
#[test]
fn probe_a_directory_lost_fsync() {
    assert!(!refused(Some(directory_lost_fsync()), Mode::Quiet));
    assert!(refused(Some(directory_lost_fsync()), Mode::Unacked));
}

/// An engine that lost a frame its HWM covered is caught even when id 3's ack is lost
/// (then `bounded_duplicates` is the only checker that can see it).
#[test]
fn a_lost_frame_under_the_hwm_is_caught_with_its_ack_lost() {
    for f in [empty_lost_fsync(), misdirected_at_0()] {
        let report = frame_2_missing(Some(f.clone()), Mode::Unacked).report();
        assert!(
            !report.failed_checkers().is_empty(),
            "{f:?}: the engine lost a frame its HWM covered and no checker fired"
        );
    }
}
