//! Proof that each checker fires: for every checker a small hand-made history with
//! exactly that violation, asserting that this checker (and only it) fires with a
//! message naming the partition, offsets and produce ids; a clean history with a
//! crash, a hidden tail and its duplicates that passes every checker; and the excuses
//! (recorded loss, lost fsync, refusal, hidden-tail budget) working and running out.

use cafelog_sim::check::loss::LossExcuse;
use cafelog_sim::check::{
    CheckConfig, CheckReport, CheckerName, EXIT_LIVENESS_FAILURE, EXIT_PASS, EXIT_SAFETY_FAILURE,
    EXIT_SIMULATOR_CRASH, Verdict, check,
};
use cafelog_sim::history::{
    CrashPartition, DamagedWalEntry, FaultKind, FileKind, History, Incarnation, OffsetRange,
    ProduceId, TopicPartition, encode_payload,
};

fn tp(partition: u32) -> TopicPartition {
    TopicPartition::new("orders", partition)
}

fn payload(id: ProduceId) -> Vec<u8> {
    encode_payload(id, format!("body of {id}").as_bytes())
}

fn key(id: ProduceId) -> Vec<u8> {
    format!("key-{id}").into_bytes()
}

const CONFIG: CheckConfig = CheckConfig {
    delivery_bound_ms: 1_000,
    context_events: 2,
};

/// A history under construction with its own clock: every event 10 ms after the last.
#[derive(Clone)]
struct Run {
    h: History,
    t: u64,
}

impl Run {
    fn new() -> Self {
        Run {
            h: History::new(),
            t: 0,
        }
    }

    fn now(&mut self) -> u64 {
        self.t += 10;
        self.t
    }

    fn wait(&mut self, ms: u64) -> &mut Self {
        self.t += ms;
        self
    }

    /// Attempt and ack of `id` at `offset` of partition `p`.
    fn produce(&mut self, id: ProduceId, p: u32, offset: u64, commit_ms: u64) -> &mut Self {
        self.attempt(id, p);
        let t = self.now();
        self.h
            .produce_ack(t, id, &tp(p), Some(offset), Some(commit_ms));
        self
    }

    fn attempt(&mut self, id: ProduceId, p: u32) -> &mut Self {
        let t = self.now();
        self.h
            .produce_attempt(t, id, "orders", Some(p), &key(id), &payload(id));
        self
    }

    fn deliver(&mut self, id: ProduceId, p: u32, offset: u64, commit_ms: u64) -> &mut Self {
        self.deliver_raw(p, offset, &payload(id), &key(id), commit_ms, 1)
    }

    fn deliver_raw(
        &mut self,
        p: u32,
        offset: u64,
        payload: &[u8],
        key: &[u8],
        commit_ms: u64,
        attempt: u32,
    ) -> &mut Self {
        let t = self.now();
        self.h
            .delivery(t, &tp(p), offset, key, payload, commit_ms, attempt);
        self
    }

    fn consume(&mut self, p: u32, offset: u64) -> &mut Self {
        let t = self.now();
        self.h.ack(t, &tp(p), offset);
        self
    }

    fn hwm(&mut self, p: u32, hwm: u64, persisted: u64, tail: u64) -> &mut Self {
        let t = self.now();
        self.h
            .hwm_observed(t, &tp(p), hwm, Some(persisted), Some(tail));
        self
    }

    /// `parts`: (partition, persisted_hwm, durable_tail, memory_hwm).
    fn crash(&mut self, parts: &[(u32, u64, u64, u64)]) -> &mut Self {
        let t = self.now();
        let partitions = parts
            .iter()
            .map(|&(p, persisted_hwm, durable_tail, memory)| CrashPartition {
                tp: tp(p),
                persisted_hwm,
                durable_tail,
                memory_hwm: Some(memory),
            })
            .collect();
        self.h.crash(t, partitions);
        self
    }

    fn restart(&mut self) -> &mut Self {
        let t = self.now();
        self.h.restart(t);
        self
    }

    fn counters(&mut self, p: u32, recorded_loss: u64, skipped: u64) -> &mut Self {
        let t = self.now();
        self.h.engine_counters(t, &tp(p), recorded_loss, skipped);
        self
    }

    fn fault(&mut self, kind: FaultKind, p: Option<u32>) -> &mut Self {
        let t = self.now();
        self.h.fault(t, kind, p.map(tp).as_ref(), None);
        self
    }

    /// Ids 1..=n produced at offsets 0..n of orders/0, committed at 1_000 + offset ms.
    fn produced(&mut self, n: u64) -> &mut Self {
        for offset in 0..n {
            self.produce(offset + 1, 0, offset, 1_000 + offset);
        }
        self
    }

    /// The first `n` records of [`Run::produced`] delivered, in order.
    fn delivered(&mut self, n: u64) -> &mut Self {
        for offset in 0..n {
            self.deliver(offset + 1, 0, offset, 1_000 + offset);
        }
        self
    }

    fn with(&mut self, f: impl FnOnce(u64, &mut History)) -> &mut Self {
        let t = self.now();
        f(t, &mut self.h);
        self
    }

    /// A bit flip in the WAL that destroyed the entry `seq` of produce id `id` on
    /// orders/0, first read by the open of incarnation `first_replay`.
    fn wal_entry_flipped(
        &mut self,
        seq: u64,
        id: ProduceId,
        first_replay: Incarnation,
    ) -> &mut Self {
        let (kind, partition) = wal_flip();
        self.fault(kind, partition).with(|t, h| {
            let fault_index = h.len() - 1;
            let entries = vec![DamagedWalEntry { seq, tp: tp(0), id }];
            h.wal_entries_damaged(t, fault_index, first_replay, entries);
        })
    }

    fn report(&self) -> CheckReport {
        check(&self.h, &CONFIG)
    }
}

/// Asserts that `checker` and no other fired; returns its messages.
fn fires_only(report: &CheckReport, checker: CheckerName) -> Vec<String> {
    assert_eq!(
        report.failed_checkers(),
        vec![checker],
        "violations: {:#?}",
        report.violations()
    );
    messages_of(report, checker)
}

/// The messages of `checker`'s violations (other checkers may fire too).
fn messages_of(report: &CheckReport, checker: CheckerName) -> Vec<String> {
    report
        .violations_of(checker)
        .iter()
        .map(|v| v.message.clone())
        .collect()
}

/// Asserts that `bounded_duplicates` explained every duplicate in `report`.
fn assert_duplicates_explained(report: &CheckReport) {
    assert!(
        report.bounded_duplicates.violations.is_empty(),
        "{:?}",
        report.bounded_duplicates.violations
    );
}

fn assert_mentions(messages: &[String], parts: &[&str]) {
    assert!(
        messages.iter().any(|m| parts.iter().all(|p| m.contains(p))),
        "no message contains all of {parts:?}: {messages:#?}"
    );
}

fn assert_clean(report: &CheckReport) {
    assert_eq!(
        report.failed_checkers(),
        Vec::<CheckerName>::new(),
        "violations: {:#?}",
        report.violations()
    );
}

/// A realistic clean run: two partitions, a crash with a hidden tail of two records
/// that the WAL re-commits (two legitimate duplicates), a backwards clock step the
/// engine absorbs, a bit flip above the HWM, a frontier that survives the crash, a
/// heal and a drain.
fn clean_run() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .produce(3, 0, 2, 1_002)
        .produce(10, 1, 0, 1_002)
        .hwm(0, 3, 1, 3)
        .hwm(1, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .deliver(3, 0, 2, 1_002)
        .deliver(10, 1, 0, 1_002)
        .consume(0, 0)
        .consume(0, 1)
        .consume(1, 0)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 2);
        })
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 2, end: 3 }),
                below_hwm: Some(false),
            },
            Some(0),
        )
        .fault(FaultKind::ClockStep { back_ms: 500 }, None)
        .fault(FaultKind::Crash, None)
        // Offsets 1 and 2 of orders/0 are durable but above the persisted HWM 1.
        .crash(&[(0, 1, 3, 3), (1, 1, 1, 1)])
        .restart()
        .hwm(0, 1, 1, 3)
        .hwm(1, 1, 1, 1)
        .counters(0, 0, 0)
        .counters(1, 0, 0)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 2);
        })
        // The WAL re-commits ids 2 and 3 past the durable tail; a new produce follows.
        .produce(4, 0, 5, 1_004)
        .hwm(0, 6, 6, 6)
        // Offset 2 (unacked before the crash) is redelivered: not a duplicate.
        .deliver_raw(0, 2, &payload(3), &key(3), 1_002, 2)
        .deliver(2, 0, 3, 1_003)
        .deliver(3, 0, 4, 1_003)
        .deliver(4, 0, 5, 1_004);
    for offset in 2..6 {
        r.consume(0, offset);
    }
    r.with(|t, h| {
        h.frontier_written(t, &tp(0), 6);
    })
    .with(|t, h| {
        h.heal(t);
    })
    .produce(5, 1, 1, 1_010)
    .hwm(1, 2, 2, 2)
    .deliver(5, 1, 1, 1_010)
    .consume(1, 1)
    .hwm(0, 6, 6, 6)
    .wait(2_000)
    .counters(0, 0, 0);
    r
}

#[test]
fn clean_history_passes_every_checker() {
    let r = clean_run();
    let report = r.report();
    assert_clean(&report);
    let counts = report.accounting.counts();
    assert_eq!(counts.acknowledged, 6);
    assert_eq!(counts.delivered, 6);
    assert_eq!(counts.lost, 0);
    assert_eq!(counts.duplicated, 2);
    assert_eq!(counts.unexpected, 0);
    assert_eq!(counts.corrupt, 0);
    let crash = &report.bounded_duplicates.crashes[0];
    assert_eq!((crash.bound, crash.count), (2, 2));
    assert_eq!(report.delivered_after_heal.checked, 6);
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict, Verdict::Pass);
    assert_eq!(verdict.exit_code(), EXIT_PASS);
    assert_eq!(verdict.to_string(), "PASS");
}

#[test]
fn clean_history_survives_a_json_round_trip() {
    let r = clean_run();
    let json = serde_json::to_string(&r.h).expect("serialises");
    let back: History = serde_json::from_str(&json).expect("parses");
    assert_eq!(back, r.h);
    assert_clean(&check(&back, &CONFIG));
}

// ---- no_lost_ack ----

#[test]
fn no_lost_ack_fires_on_an_acked_record_never_delivered() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .deliver(1, 0, 0, 1_000);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(
        &messages,
        &["1 acknowledged record(s) on orders/0", "id 2 at offset 1"],
    );
    assert_eq!(
        report.accounting.lost.iter().copied().collect::<Vec<_>>(),
        vec![2]
    );
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict.exit_code(), EXIT_SAFETY_FAILURE);
    assert!(
        verdict
            .to_string()
            .starts_with("SAFETY FAILURE [no_lost_ack] "),
        "{verdict}"
    );
}

/// A bit flip in the last frame below the persisted HWM: recovery truncates it (R1)
/// and clamps the HWM (R4), recording the loss of one record.
fn clamped_run(recorded_loss: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .produce(3, 0, 2, 1_002)
        .hwm(0, 3, 3, 3)
        .deliver(1, 0, 0, 1_000)
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 1, end: 3 }),
                below_hwm: Some(true),
            },
            Some(0),
        )
        .crash(&[(0, 3, 3, 3)])
        .restart()
        .hwm(0, 1, 1, 1)
        .counters(0, recorded_loss, 0);
    r
}

#[test]
fn recorded_loss_excuses_exactly_the_recorded_number_of_records() {
    let report = clamped_run(2).report();
    assert_clean(&report);
    assert_eq!(
        report.no_lost_ack.excuse_of(2),
        Some(&LossExcuse::RecordedLoss)
    );
    assert_eq!(
        report.no_lost_ack.excuse_of(3),
        Some(&LossExcuse::RecordedLoss)
    );
    assert_eq!(report.no_lost_ack.recorded_loss_spent[&tp(0)], (2, 2));

    // One record short: the HWM drop is not covered either.
    let report = clamped_run(1).report();
    assert_eq!(
        report.failed_checkers(),
        vec![CheckerName::NoLostAck, CheckerName::StableOffsets]
    );
    let loss = messages_of(&report, CheckerName::NoLostAck);
    assert_mentions(
        &loss,
        &["id 3 at offset 2", "recorded loss on orders/0 is 1"],
    );
    assert_eq!(
        report.no_lost_ack.excuse_of(2),
        Some(&LossExcuse::RecordedLoss)
    );
}

fn lost_fsync_run(fault_after_crash: bool) -> Run {
    let lost_fsync = FaultKind::LostFsync {
        file: FileKind::Segment,
    };
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000);
    if !fault_after_crash {
        r.fault(lost_fsync.clone(), Some(0));
    }
    r.produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        // The fsync that "covered" offset 1 persisted nothing.
        .crash(&[(0, 1, 1, 2)])
        .restart();
    if fault_after_crash {
        r.fault(lost_fsync, Some(0));
    }
    r.hwm(0, 1, 1, 1).counters(0, 0, 0);
    r
}

#[test]
fn lost_fsync_excuses_loss_of_records_acked_after_it() {
    let report = lost_fsync_run(false).report();
    assert_clean(&report);
    match report.no_lost_ack.excuse_of(2) {
        Some(LossExcuse::OutOfContract { fault, .. }) => assert_eq!(
            *fault,
            FaultKind::LostFsync {
                file: FileKind::Segment
            }
        ),
        other => panic!("expected a lost-fsync excuse, got {other:?}"),
    }
}

#[test]
fn lost_fsync_after_the_crash_does_not_excuse_earlier_loss() {
    let report = lost_fsync_run(true).report();
    // Without a lost fsync before the crash, an in-memory HWM beyond the durable tail
    // is the engine's own fault too.
    assert_eq!(
        report.failed_checkers(),
        vec![CheckerName::NoLostAck, CheckerName::StableOffsets]
    );
    let messages: Vec<String> = report
        .violations()
        .iter()
        .map(|(_, v)| v.message.clone())
        .collect();
    assert_mentions(
        &messages,
        &[
            "orders/0",
            "id 2 at offset 1",
            "faults outside their window: lost fsync",
        ],
    );
    assert_mentions(
        &messages,
        &["in-memory HWM of orders/0 is 2, beyond the durable tail 1 (at the crash"],
    );
}

#[test]
fn refusal_excuses_loss_and_is_reported_as_refused_by_liveness() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 1, 0, 1_000)
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 0, end: 1 }),
                below_hwm: Some(true),
            },
            Some(0),
        )
        .crash(&[(0, 1, 1, 1), (1, 1, 1, 1)])
        .restart()
        .with(|t, h| {
            h.partition_refused(t, &tp(0), "crc mismatch in 00000000000000000000.log at 0");
            h.heal(t);
        })
        .deliver(2, 1, 0, 1_000)
        .wait(5_000)
        .hwm(1, 1, 1, 1);
    let report = r.report();
    assert_clean(&report);
    assert!(matches!(
        report.no_lost_ack.excuse_of(1),
        Some(LossExcuse::Refused { reason, .. }) if reason.contains("crc mismatch")
    ));
    assert_eq!(report.delivered_after_heal.refused[&tp(0)], vec![1]);
}

/// Ids 1-4 are acknowledged at offsets 0-3 of orders/0 and ids 1 and 2 delivered; then
/// `segment` damage (if any) to the log, and a crash that hides offsets 1-3 (persisted
/// HWM 1, durable tail 4). While the node is down, when `wal_damaged`, a bit flip
/// destroys the WAL frame holding id 3's entry (seq 2), before any open read it. The
/// restart's open completes (its frontier is seen) and id 4 comes back at `id4`
/// (offset, commit time: 1003 is its hidden copy exposed, a later one a replay after
/// a cut); id 3 never does.
fn double_damage_run(segment: Option<FaultKind>, wal_damaged: bool, id4: (u64, u64)) -> Run {
    let mut r = Run::new();
    r.produced(4).hwm(0, 4, 1, 4).delivered(2);
    if let Some(kind) = segment {
        r.fault(kind, Some(0));
    }
    r.crash(&[(0, 1, 4, 4)]);
    if wal_damaged {
        r.wal_entry_flipped(2, 3, 1);
    }
    r.restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .counters(0, 0, 0)
        .deliver(4, 0, id4.0, id4.1);
    r
}

/// A bit flip at rest in the frame at `start` of orders/0, above the persisted HWM.
fn flip_above_hwm(start: u64) -> FaultKind {
    segment_flip(
        OffsetRange {
            start,
            end: start + 1,
        },
        Some(false),
    )
}

/// A misdirected write that landed on the frame at `start` of orders/0 (above the
/// persisted HWM), after every ack.
fn segment_misdirect(start: u64) -> FaultKind {
    FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(OffsetRange {
            start,
            end: start + 1,
        }),
        below_hwm: Some(false),
    }
}

fn assert_both_copies_excused(report: &CheckReport, id: ProduceId, log_copy: &str) {
    assert_clean(report);
    match report.no_lost_ack.excuse_of(id) {
        Some(LossExcuse::BothCopiesDamaged { detail, .. }) => {
            assert!(detail.contains("its WAL entry (seq 2)"), "{detail}");
            assert!(detail.contains(log_copy), "{detail}");
        }
        other => panic!("expected both copies damaged for id {id}, got {other:?}"),
    }
}

#[test]
fn a_record_whose_wal_entry_and_log_frame_were_both_destroyed_is_excused() {
    // Quick seeds 42785, 50529 and 55163, default seed 13174: a flip in the hidden tail
    // lets recovery cut it (R2), and a second flip destroyed the record's WAL frame
    // before the open read the WAL. No engine can bring id 3 back; the replay puts id 4
    // where the cut began.
    let report = double_damage_run(Some(flip_above_hwm(2)), true, (2, 1_100)).report();
    assert_both_copies_excused(
        &report,
        3,
        "above the persisted HWM 1: recovery after the crash at t=",
    );
}

#[test]
fn a_record_whose_wal_entry_alone_was_destroyed_must_still_be_delivered() {
    // Its log copy is intact in the hidden tail, which the engine exposes when the WAL
    // lost entries: losing it is the engine's bug.
    let report = double_damage_run(None, true, (3, 1_003)).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["orders/0", "id 3 at offset 2"]);
    // With the log copy cut as well, the same loss is excused.
    let report = double_damage_run(Some(flip_above_hwm(2)), true, (2, 1_100)).report();
    assert_both_copies_excused(&report, 3, "cut the log there (R2)");
    // And a damaged log copy with an intact WAL entry excuses nothing: replay restores it.
    let report = double_damage_run(Some(flip_above_hwm(2)), false, (2, 1_100)).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
}

#[test]
fn a_flip_above_the_record_does_not_excuse_losing_it() {
    // The flip at offset 3 makes recovery cut the log from 3: id 3's hidden copy at
    // offset 2 survives it (and is exposed, since the WAL lost entries), so losing it is
    // the engine's bug even though its WAL entry is gone.
    let report = double_damage_run(Some(flip_above_hwm(3)), true, (3, 1_100)).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
}

#[test]
fn a_flip_below_the_record_does_not_excuse_losing_it() {
    // Quick seeds 105536 and 115839: the flip at offset 1 makes recovery cut the log
    // from 1 (R2), but id 3's frame at offset 2 is readable and its WAL entry is gone, so
    // the cut salvages it; losing it is the engine's bug.
    let report = double_damage_run(Some(flip_above_hwm(1)), true, (1, 1_100)).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
    // A misdirected write that began below it without reaching its frame, likewise.
    let report = double_damage_run(Some(segment_misdirect(1)), true, (1, 1_100)).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
}

#[test]
fn a_log_copy_lost_after_the_open_that_needed_it_is_not_excused() {
    // Id 3's WAL entry is destroyed before the first open, but its log copy is intact
    // in the hidden tail: that open completes (it must expose the copy). A later crash
    // finds offset 2 gone with no damage at all: the engine dropped it.
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(2)
        .crash(&[(0, 1, 3, 3)])
        .wal_entry_flipped(2, 3, 1)
        .restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .counters(0, 0, 0)
        .crash(&[(0, 1, 2, 2)])
        .restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .counters(0, 0, 0);
    let messages = messages_of(&r.report(), CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
}

#[test]
fn segment_damage_that_names_another_offset_does_not_excuse_the_loss() {
    // Quick seeds 30193 and 34190 have misdirected writes in both the WAL and the
    // segment. Here the segment's misdirected write hit offset 3, above id 3's frame:
    // R2 cuts from 3, id 3's hidden copy survives (and is exposed), so losing it is a
    // bug even though its WAL entry is gone.
    let report = double_damage_run(Some(segment_misdirect(3)), true, (3, 1_100)).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(
        &messages,
        &[
            "id 3 at offset 2",
            "faults outside their window: misdirected write",
        ],
    );
    // The same write landing on id 3's own frame destroyed its second copy.
    let report = double_damage_run(Some(segment_misdirect(2)), true, (2, 1_100)).report();
    assert_both_copies_excused(&report, 3, "misdirected write at t=");
}

/// Ids 1-3 at offsets 0-2, ids 1 and 2 delivered; a crash hides offsets 1-2 and the
/// restart's open (incarnation 1) `completed` or was killed before the world saw its
/// frontier; the crash ending it leaves a durable tail of `tail`. Only then a flip cuts
/// the hidden tail (R2) and another destroys id 3's WAL frame, first read by the open
/// of incarnation 2.
fn wal_damaged_after_an_open_run(completed: bool, tail: u64) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(2)
        .crash(&[(0, 1, 3, 3)])
        .restart();
    if completed {
        r.with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .counters(0, 0, 0);
    }
    r.crash(&[(0, 1, tail, tail)])
        .fault(flip_above_hwm(2), Some(0))
        .wal_entry_flipped(2, 3, 2)
        .restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .counters(0, 0, 0);
    r
}

#[test]
fn a_wal_entry_destroyed_after_an_open_replayed_it_excuses_nothing() {
    // Default seed 13174: the open after the first crash was killed before it finished
    // and nothing became durable; the damage came before the next open read the WAL.
    let report = wal_damaged_after_an_open_run(false, 3).report();
    assert_both_copies_excused(
        &report,
        3,
        "above the persisted HWM 1: recovery after the crash at t=120ms",
    );
    // An open that completed in between replayed id 3 from its intact entry: its fresh
    // copy is not one the damage destroyed.
    let report = wal_damaged_after_an_open_run(true, 3).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
    // A killed open that made records durable on the partition may have replayed it.
    let report = wal_damaged_after_an_open_run(false, 4).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 3 at offset 2"]);
}

// ---- bounded_duplicates ----

#[test]
fn bounded_duplicates_fires_on_any_duplicate_in_a_crash_free_run() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .deliver(1, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@1",
            "a crash-free run has no duplicates",
        ],
    );
}

#[test]
fn redelivery_of_one_offset_is_not_a_duplicate() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver(1, 0, 0, 1_000)
        .with(|t, h| {
            h.nack(t, &tp(0), 0);
        })
        .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2)
        .consume(0, 0);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.accounting.counts().duplicated, 0);
}

#[test]
fn hidden_tail_allows_exactly_its_size_in_duplicates_and_one_more_fails() {
    // clean_run has a hidden tail [1, 3) and both of its records duplicated.
    let mut r = clean_run();
    assert_clean(&r.report());
    // A third duplicate: id 1 (offset 0, below the persisted HWM) shows up again.
    r.deliver(1, 0, 6, 1_020).consume(0, 6);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::BoundedDuplicates);
    assert_mentions(
        &messages,
        &[
            "produce id 1 delivered from orders/0@0",
            "again from orders/0@6",
            "orders/0 hidden tail [1, 3) does not hold offset 0, 2 of bound 2 used",
        ],
    );
    assert_eq!(report.bounded_duplicates.duplicates, 3);
}

// ---- monotonic_commit_time ----

#[test]
fn monotonic_commit_time_fires_when_a_restart_lets_commit_time_go_back() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .fault(FaultKind::ClockStep { back_ms: 200 }, None)
        .produce(2, 0, 1, 900)
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, 1, 900)
        .consume(0, 1);
    let messages = fires_only(&r.report(), CheckerName::MonotonicCommitTime);
    assert_mentions(
        &messages,
        &[
            "orders/0: committed_at_ms decreases along offsets",
            "offset 0 has 1000",
            "offset 1 has 900",
            "inc 1",
        ],
    );
}

// ---- stable_offsets ----

#[test]
fn stable_offsets_fires_when_the_record_at_a_read_offset_changes() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .deliver_raw(0, 0, &payload(2), &key(2), 1_000, 1)
        .attempt(2, 0);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "record at orders/0 offset 0 changed",
            "produce id 1 -> 2",
            "inc 1",
        ],
    );
}

#[test]
fn stable_offsets_excuses_reuse_of_offsets_above_a_recorded_clamp() {
    let mut r = clamped_run(2);
    // Offsets 1 and 2 are reused by new records after the clamp.
    r.produce(4, 0, 1, 1_010)
        .hwm(0, 2, 2, 2)
        .deliver(4, 0, 1, 1_010)
        .consume(0, 0)
        .consume(0, 1);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(
        report.stable_offsets.excused.len(),
        1,
        "{:?}",
        report.stable_offsets.excused
    );
}

#[test]
fn stable_offsets_fires_when_the_hwm_moves_backwards_within_an_incarnation() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .hwm(0, 0, 1, 1)
        .deliver(1, 0, 0, 1_000);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "HWM of orders/0 moved backwards within incarnation 0: 1",
            "then 0",
        ],
    );
}

#[test]
fn stable_offsets_fires_when_the_hwm_restarts_below_the_persisted_one_unrecorded() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 1, 2, 2)
        .counters(0, 0, 0);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "HWM of orders/0 after the restart into incarnation 1 is 1",
            "below the persisted HWM 2",
            "recorded a loss of 0 record(s), 1 needed",
        ],
    );
}

#[test]
fn stable_offsets_fires_when_the_hwm_passes_the_durable_tail() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "in-memory HWM of orders/0 is 2, beyond the durable tail 1",
            "offsets 1..2",
        ],
    );
}

#[test]
fn stable_offsets_fires_when_a_read_offset_vanishes() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        // Offset 1 is below the persisted HWM and durable, yet the engine comes back
        // with HWM 1 and records no loss: offset 1, already read, is gone.
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 1, 1, 2);
    let report = r.report();
    // The restart below the persisted HWM fires too, in the same checker.
    assert_eq!(report.failed_checkers(), vec![CheckerName::StableOffsets]);
    let messages = messages_of(&report, CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "1 read offset(s) of orders/0 vanished: offsets 1",
            "final HWM is 1",
        ],
    );
}

/// Offset 2 is read, a crash hides it (persisted HWM 1), the restart comes back with
/// HWM 2, and a later crash hides nothing: offset 2 is gone at the end. With damage at
/// rest in the first crash's hidden tail, R2 cut it there and the replay (which skips
/// records already visible) refilled fewer offsets: excused. Without damage it is a
/// vanished read (the last crash's hidden tail does not hold it).
fn vanished_after_an_earlier_damaged_hidden_tail(damaged: bool) -> Run {
    let mut r = Run::new();
    r.produced(3)
        .hwm(0, 3, 1, 3)
        .delivered(3)
        .crash(&[(0, 1, 3, 3)]);
    if damaged {
        r.fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 2, end: 3 }),
                below_hwm: Some(false),
            },
            Some(0),
        );
    }
    r.restart()
        .hwm(0, 2, 2, 2)
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 2, 2, 2);
    r
}

#[test]
fn a_read_offset_cut_from_an_earlier_damaged_hidden_tail_may_vanish_and_not_otherwise() {
    let report = vanished_after_an_earlier_damaged_hidden_tail(true).report();
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    let report = vanished_after_an_earlier_damaged_hidden_tail(false).report();
    let messages = messages_of(&report, CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &["1 read offset(s) of orders/0 vanished: offsets 2"],
    );
}

#[test]
fn stable_offsets_fires_when_the_log_start_moves_backwards() {
    let mut r = Run::new();
    r.with(|t, h| {
        h.log_start_observed(t, &tp(0), 5);
    })
    .with(|t, h| {
        h.log_start_observed(t, &tp(0), 3);
    });
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &["log start of orders/0 moved backwards from 5", "to 3"],
    );
}

#[test]
fn stable_offsets_fires_when_the_persisted_hwm_moves_backwards() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .hwm(0, 2, 1, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    let messages = fires_only(&r.report(), CheckerName::StableOffsets);
    assert_mentions(
        &messages,
        &[
            "persisted HWM of orders/0 moved backwards from 2",
            "to 1",
            "at least 1 records",
        ],
    );
}

// ---- no_corrupt_delivery ----

#[test]
fn no_corrupt_delivery_fires_on_wrong_payload_bytes() {
    let mut bad = payload(1);
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .deliver_raw(0, 0, &bad, &key(1), 1_000, 1)
        .deliver_raw(0, 0, &payload(1), &key(1), 1_000, 2);
    let messages = fires_only(&r.report(), CheckerName::NoCorruptDelivery);
    assert_mentions(
        &messages,
        &[
            "corrupt delivery of orders/0 offset 0 (attempt 1",
            "payload differs from the one produced as id 1",
        ],
    );
}

#[test]
fn no_corrupt_delivery_fires_on_a_payload_without_id_and_on_a_wrong_key() {
    let mut r = Run::new();
    r.attempt(1, 0)
        .deliver_raw(0, 0, b"not a cafelog payload", &key(1), 1_000, 1)
        .deliver_raw(0, 1, &payload(1), b"other key", 1_000, 1);
    let messages = fires_only(&r.report(), CheckerName::NoCorruptDelivery);
    assert_mentions(
        &messages,
        &["orders/0 offset 0", "payload carries no produce id"],
    );
    assert_mentions(
        &messages,
        &[
            "orders/0 offset 1",
            "key differs from the one produced as id 1",
        ],
    );
}

#[test]
fn no_corrupt_delivery_fires_on_a_record_never_produced() {
    let mut r = Run::new();
    r.deliver(77, 0, 0, 1_000);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::NoCorruptDelivery);
    assert_mentions(
        &messages,
        &[
            "delivered produce id 77 was never produced",
            "orders/0 offset 0",
        ],
    );
    assert_eq!(report.accounting.counts().unexpected, 1);
}

/// Two records produced and delivered, then a bit flip at rest in the frame of offset 0.
fn flipped(below_hwm: Option<bool>) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 0, end: 1 }),
                below_hwm,
            },
            Some(0),
        );
    r
}

fn flip_run(detected: bool, below_hwm: Option<bool>) -> Run {
    let mut r = flipped(below_hwm);
    r.crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 2, 2, 2)
        .counters(0, 0, u64::from(detected));
    r
}

#[test]
fn no_corrupt_delivery_fires_on_a_bit_flip_scanned_but_never_detected() {
    let messages = fires_only(
        &flip_run(false, Some(true)).report(),
        CheckerName::NoCorruptDelivery,
    );
    assert_mentions(
        &messages,
        &[
            "bit flip injected at t=",
            "into a segment of orders/0 (offsets [0, 1), below the persisted HWM)",
            "never detected",
        ],
    );
    // An unplaced flip is judged the same way.
    let messages = fires_only(
        &flip_run(false, None).report(),
        CheckerName::NoCorruptDelivery,
    );
    assert_mentions(
        &messages,
        &["position relative to the persisted HWM unknown"],
    );
}

#[test]
fn a_restart_whose_open_failed_scanned_nothing() {
    // The flip, then a restart whose store open failed (no counters, no refusal: the
    // world restarts the node after a fatal error) and a crash: nothing has scanned the
    // flip yet, so nothing is owed.
    let mut r = flipped(Some(true));
    r.crash(&[(0, 2, 2, 2)]).restart().crash(&[(0, 2, 2, 2)]);
    let failed_open = r.clone();
    assert_clean(&failed_open.report());
    // A later restart that opens the partition and misses the flip is judged.
    r.restart().hwm(0, 2, 2, 2).counters(0, 0, 0);
    let messages = fires_only(&r.report(), CheckerName::NoCorruptDelivery);
    assert_mentions(&messages, &["never detected"]);
}

#[test]
fn a_flipped_segment_retention_deleted_before_the_scan_owes_nothing() {
    // Retention deleted the flipped segment after the last sample and before the crash:
    // only the log start the next open found (recorded with its counters) shows it.
    let tp = TopicPartition::new("orders", 0);
    let mut r = flipped(Some(true));
    r.crash(&[(0, 2, 2, 2)]).restart();
    let mut deleted = r.clone();
    deleted
        .with(|at, h| {
            h.log_start_observed(at, &tp, 1);
        })
        .counters(0, 0, 0);
    assert_clean(&deleted.report());
    // The same open, with the segment still there, missed the flip.
    let mut kept = r.clone();
    kept.with(|at, h| {
        h.log_start_observed(at, &tp, 0);
    })
    .counters(0, 0, 0);
    let messages = fires_only(&kept.report(), CheckerName::NoCorruptDelivery);
    assert_mentions(&messages, &["never detected"]);
}

#[test]
fn a_deletion_sampled_before_a_crash_that_undid_it_excuses_nothing() {
    // A sample saw the log start move past the flipped segment, but the unlink was not
    // durable: the crash brought the segment back, the open scanned it (log start 0)
    // and missed the flip.
    let tp = TopicPartition::new("orders", 0);
    let mut r = flipped(Some(true));
    r.with(|at, h| {
        h.log_start_observed(at, &tp, 1);
    })
    .crash(&[(0, 2, 2, 2)])
    .restart()
    .with(|at, h| {
        h.log_start_observed(at, &tp, 0);
    })
    .counters(0, 0, 0);
    // (stable_offsets also fires: the log start moved backwards.)
    let messages = messages_of(&r.report(), CheckerName::NoCorruptDelivery);
    assert_mentions(&messages, &["never detected"]);
}

/// A bit flip in partition `hwm` file (8 bare bytes: undetectable).
fn hwm_flip() -> FaultKind {
    FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: None,
        below_hwm: None,
    }
}

/// A bit flip at rest in a segment, in the frames of `offsets`.
fn segment_flip(offsets: OffsetRange, below_hwm: Option<bool>) -> FaultKind {
    FaultKind::BitFlip {
        file: FileKind::Segment,
        offsets: Some(offsets),
        below_hwm,
    }
}

/// The `flipped` prefix (a flip below the HWM at offset 0), then a flip in `hwm` before
/// the crash, which records `crash_hwm` as the persisted HWM (the flipped value, or the
/// true 2 if a persist rewrote the file), then maybe another `hwm` flip after the crash,
/// then the restart that scans without detecting anything.
fn flipped_under_hwm_flip_run(crash_hwm: u64, flip_after_crash: bool) -> Run {
    let mut r = flipped(Some(true));
    r.fault(hwm_flip(), Some(0)).crash(&[(0, crash_hwm, 2, 2)]);
    if flip_after_crash {
        r.fault(hwm_flip(), Some(0));
    }
    r.restart().hwm(0, 2, 2, 2).counters(0, 0, 0);
    r
}

#[test]
fn a_flip_above_the_hwm_the_scan_read_owes_no_detection() {
    // The segment flip sat below the HWM when injected; a flip in `hwm` (undetectable)
    // then lowered it to 0 at the crash, so the scan saw the damage above its HWM and R2
    // truncated it as designed.
    let messages = messages_of(
        &flipped_under_hwm_flip_run(0, false).report(),
        CheckerName::NoCorruptDelivery,
    );
    assert!(messages.is_empty(), "{messages:?}");
    // A flip in `hwm` after the crash: the scan may have read a value the crash record
    // does not show.
    let messages = messages_of(
        &flipped_under_hwm_flip_run(2, true).report(),
        CheckerName::NoCorruptDelivery,
    );
    assert!(messages.is_empty(), "{messages:?}");
    // The `hwm` flip was rewritten before the crash (persisted HWM 2 there): the scan
    // read 2, the damage was below it, and nothing detected it.
    let messages = messages_of(
        &flipped_under_hwm_flip_run(2, false).report(),
        CheckerName::NoCorruptDelivery,
    );
    assert_mentions(&messages, &["never detected"]);
    // An `hwm` flip from an incarnation before the crash that preceded the scan excuses
    // nothing either.
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .fault(hwm_flip(), Some(0))
        .crash(&[(0, 1, 1, 1)])
        .restart()
        .hwm(0, 1, 1, 1)
        .counters(0, 0, 0)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, 1, 1_001)
        .fault(
            segment_flip(OffsetRange { start: 0, end: 1 }, Some(true)),
            Some(0),
        )
        .crash(&[(0, 2, 2, 2)])
        .restart()
        .hwm(0, 2, 2, 2)
        .counters(0, 0, 0);
    let messages = messages_of(&r.report(), CheckerName::NoCorruptDelivery);
    assert_mentions(&messages, &["never detected"]);
}

#[test]
fn bit_flip_detected_by_a_skip_counter_or_above_the_hwm_passes() {
    assert_clean(&flip_run(true, Some(true)).report());
    assert_clean(&flip_run(false, Some(false)).report());
}

// ---- frontier_safe ----

#[test]
fn frontier_safe_fires_when_the_frontier_passes_an_unacked_offset() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001)
        .consume(0, 0)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 2);
        })
        .consume(0, 1);
    let messages = fires_only(&r.report(), CheckerName::FrontierSafe);
    assert_mentions(
        &messages,
        &[
            "frontier of orders/0 written as 2",
            "passes unacknowledged offset 1",
        ],
    );
}

fn frontier_recovered_as(value: u64) -> Run {
    let mut r = Run::new();
    for (id, offset) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
        r.produce(id, 0, offset, 1_000 + offset)
            .deliver(id, 0, offset, 1_000 + offset)
            .consume(0, offset);
        if offset % 2 == 1 {
            r.with(|t, h| {
                h.frontier_written(t, &tp(0), offset + 1);
            });
        }
    }
    r.hwm(0, 4, 4, 4)
        .crash(&[(0, 4, 4, 4)])
        .restart()
        .hwm(0, 4, 4, 4)
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), value);
        });
    r
}

#[test]
fn frontier_safe_accepts_an_old_or_new_value_and_fires_on_a_torn_one() {
    assert_clean(&frontier_recovered_as(2).report());
    assert_clean(&frontier_recovered_as(4).report());
    assert_clean(&frontier_recovered_as(0).report());
    let messages = fires_only(
        &frontier_recovered_as(3).report(),
        CheckerName::FrontierSafe,
    );
    assert_mentions(
        &messages,
        &[
            "frontier of orders/0 recovered as 3",
            "was never written (torn?)",
            "[2, 4]",
        ],
    );
    // A torn high word: never written and far past any ack.
    let torn = (1 << 32) | 2;
    let messages = fires_only(
        &frontier_recovered_as(torn).report(),
        CheckerName::FrontierSafe,
    );
    assert_mentions(
        &messages,
        &["recovered as 4294967298", "passes unacknowledged offset 4"],
    );
    assert_mentions(&messages, &["recovered as 4294967298", "never written"]);
}

// ---- poison_acks_nothing ----

fn poison_run(restart_before_ack: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .attempt(2, 0)
        .fault(
            FaultKind::FsyncEio {
                file: FileKind::Segment,
            },
            Some(0),
        )
        .with(|t, h| {
            h.partition_poisoned(t, &tp(0));
        });
    if restart_before_ack {
        r.crash(&[(0, 1, 2, 1)]).restart().hwm(0, 1, 1, 2);
    }
    let t = r.now();
    r.h.produce_ack(t, 2, &tp(0), Some(1), Some(1_001));
    r.hwm(0, 2, 2, 2)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 1_001);
    r
}

#[test]
fn poison_acks_nothing_fires_on_an_ack_and_hwm_advance_after_poison() {
    let messages = fires_only(&poison_run(false).report(), CheckerName::PoisonAcksNothing);
    assert_mentions(
        &messages,
        &[
            "orders/0 acknowledged produce id 2 at offset 1",
            "after it was poisoned",
            "incarnation 0",
        ],
    );
    assert_mentions(
        &messages,
        &[
            "HWM of orders/0 advanced from 1 to 2",
            "after it was poisoned",
        ],
    );
}

#[test]
fn a_restart_clears_the_poison() {
    assert_clean(&poison_run(true).report());
}

// ---- delivered_after_heal ----

fn late_run(delivered_after_heal_ms: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .with(|t, h| {
            h.heal(t);
        })
        .wait(delivered_after_heal_ms)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0);
    r
}

#[test]
fn delivered_after_heal_fires_on_a_delivery_later_than_the_bound() {
    assert_clean(&late_run(500).report());
    let r = late_run(1_500);
    let report = r.report();
    let messages = fires_only(&report, CheckerName::DeliveredAfterHeal);
    assert_mentions(
        &messages,
        &[
            "1 acknowledged record(s) on orders/0 not delivered within 1000 ms of the heal",
            "id 1 at offset 0",
            "delivered t=",
        ],
    );
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict.exit_code(), EXIT_LIVENESS_FAILURE);
    assert!(
        verdict
            .to_string()
            .starts_with("LIVENESS FAILURE [delivered_after_heal] ")
    );
}

#[test]
fn delivered_after_heal_is_inconclusive_when_the_history_ends_early() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000).with(|t, h| {
        h.heal(t);
    });
    let report = r.report();
    // The record is lost at the end (no_lost_ack), but liveness cannot call it a hang.
    assert_eq!(report.failed_checkers(), vec![CheckerName::NoLostAck]);
    assert_eq!(report.delivered_after_heal.inconclusive, vec![1]);
}

// ---- verdicts ----

#[test]
fn safety_failure_wins_over_liveness_and_shows_events_around_it() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .with(|t, h| {
            h.heal(t);
        })
        .wait(5_000)
        .counters(0, 0, 0)
        .counters(0, 0, 0);
    let report = r.report();
    assert_eq!(
        report.failed_checkers(),
        vec![CheckerName::NoLostAck, CheckerName::DeliveredAfterHeal]
    );
    let verdict = report.verdict(&r.h, &CONFIG);
    assert_eq!(verdict.exit_code(), EXIT_SAFETY_FAILURE);
    let line = verdict.to_string();
    assert!(!line.contains('\n'), "{line}");
    assert!(line.ends_with("(+1 more violations)"), "{line}");
    let failure = verdict.failure().expect("a failure");
    assert_eq!(failure.checker, CheckerName::NoLostAck);
    // Focus on the ack (#1) with two events either side: #0..=#3.
    let indices: Vec<usize> = failure.context.iter().map(|c| c.index).collect();
    assert_eq!(indices, vec![0, 1, 2, 3]);
    let focus: Vec<usize> = failure
        .context
        .iter()
        .filter(|c| c.focus)
        .map(|c| c.index)
        .collect();
    assert_eq!(focus, vec![1]);
    assert!(
        failure
            .context_lines()
            .contains("> #1 t=20ms inc=0 produce_ack id=1 orders/0 offset=0")
    );
}

#[test]
fn simulator_crash_is_its_own_verdict() {
    let payload = std::panic::catch_unwind(|| {
        History::new()
            .heal(1)
            .fault(2, FaultKind::ClockStep { back_ms: 1 }, None, None);
    })
    .expect_err("a fault after heal panics");
    let verdict = Verdict::from_panic(payload.as_ref());
    assert_eq!(verdict.exit_code(), EXIT_SIMULATOR_CRASH);
    assert!(
        verdict
            .to_string()
            .starts_with("SIMULATOR CRASH: fault injected after heal"),
        "{verdict}"
    );
    let codes = [
        EXIT_PASS,
        EXIT_SAFETY_FAILURE,
        EXIT_LIVENESS_FAILURE,
        EXIT_SIMULATOR_CRASH,
    ];
    for (i, a) in codes.iter().enumerate() {
        for b in &codes[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn checker_names_are_stable_snake_case() {
    let names: Vec<&str> = CheckerName::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "no_lost_ack",
            "bounded_duplicates",
            "monotonic_commit_time",
            "stable_offsets",
            "no_corrupt_delivery",
            "frontier_safe",
            "poison_acks_nothing",
            "delivered_after_heal",
        ]
    );
    for checker in CheckerName::ALL {
        assert_eq!(
            serde_json::to_string(&checker).expect("serialises"),
            format!("\"{checker}\"")
        );
    }
}

// ---- excuses added from sweeps ----

fn retention_run(log_start: u64) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .produce(3, 0, 2, 1_002)
        .deliver(3, 0, 2, 1_002)
        .consume(0, 2)
        .with(|t, h| {
            h.log_start_observed(t, &tp(0), log_start);
        });
    r
}

#[test]
fn retention_excuses_acked_records_it_deleted_before_delivery_and_nothing_above_the_log_start() {
    // The reaper deleted offsets 0 and 1 by age before any consumer read them.
    let report = retention_run(2).report();
    assert_clean(&report);
    assert!(matches!(
        report.no_lost_ack.excuse_of(1),
        Some(LossExcuse::Retention { log_start: 2 })
    ));
    // With the log start at 1, offset 1 was not retention's to delete.
    let report = retention_run(1).report();
    let messages = fires_only(&report, CheckerName::NoLostAck);
    assert_mentions(&messages, &["id 2 at offset 1"]);
}

fn consumer_offset_flip_run(flip: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 1_001)
        .produce(3, 0, 2, 1_002)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .with(|t, h| {
            h.frontier_written(t, &tp(0), 1);
        })
        .crash(&[(0, 3, 3, 3)]);
    if flip {
        r.fault(
            FaultKind::BitFlip {
                file: FileKind::ConsumerOffset,
                offsets: None,
                below_hwm: None,
            },
            Some(0),
        );
    }
    // The frontier comes back as 3 (a flipped bit of 1): offsets 1 and 2 are skipped.
    r.restart().with(|t, h| {
        h.frontier_observed(t, &tp(0), 3);
    });
    r
}

#[test]
fn a_flip_in_consumer_offset_is_attributed_and_without_it_the_jump_fails() {
    let report = consumer_offset_flip_run(true).report();
    assert!(
        report.frontier_safe.violations.is_empty(),
        "{:?}",
        report.frontier_safe.violations
    );
    assert!(report.no_lost_ack.violations.is_empty());
    let report = consumer_offset_flip_run(false).report();
    assert!(
        report
            .frontier_safe
            .violations
            .iter()
            .any(|v| v.message.contains("recovered as 3")),
        "{:?}",
        report.frontier_safe.violations
    );
    assert!(!report.no_lost_ack.violations.is_empty());
}

/// Offsets 1 and 2 are read (commit times 2000 and 2001), then a crash hides them (the
/// persisted HWM is 1) and, when `damaged`, a bit flip lets recovery truncate the hidden
/// tail (R2); the WAL re-commits id 2 at offset 1 with a later commit time, 2500, while
/// offset 2's old observation (2001) is never seen again: along offsets, 2500 > 2001.
fn truncated_hidden_tail_run(damaged: bool) -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 2_000)
        .produce(3, 0, 2, 2_001)
        .hwm(0, 3, 1, 3)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 2_000)
        .deliver(3, 0, 2, 2_001)
        .crash(&[(0, 1, 3, 3)]);
    if damaged {
        r.fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 1, end: 2 }),
                below_hwm: Some(false),
            },
            Some(0),
        );
    }
    r.restart().hwm(0, 2, 2, 2).deliver(2, 0, 1, 2_500);
    r
}

/// The flip lands after the restart event, while the new incarnation's recovery is
/// still scanning (as seen in default seed 196): the same excuse applies.
#[test]
fn damage_landing_while_recovery_runs_excuses_the_truncated_hidden_tail_too() {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .produce(2, 0, 1, 2_000)
        .produce(3, 0, 2, 2_001)
        .hwm(0, 3, 1, 3)
        .deliver(1, 0, 0, 1_000)
        .deliver(2, 0, 1, 2_000)
        .deliver(3, 0, 2, 2_001)
        .crash(&[(0, 1, 3, 3)])
        .restart()
        .fault(
            FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 1, end: 2 }),
                below_hwm: Some(false),
            },
            Some(0),
        )
        .hwm(0, 2, 2, 2)
        .deliver(2, 0, 1, 2_500);
    let report = r.report();
    assert!(
        report.stable_offsets.violations.is_empty(),
        "{:?}",
        report.stable_offsets.violations
    );
    assert!(report.monotonic_commit_time.violations.is_empty());
}

#[test]
fn commit_times_superseded_by_an_r2_truncation_after_damage_are_left_out_and_not_otherwise() {
    let report = truncated_hidden_tail_run(true).report();
    assert!(
        report.monotonic_commit_time.violations.is_empty(),
        "{:?}",
        report.monotonic_commit_time.violations
    );
    assert!(report.monotonic_commit_time.superseded > 0);
    let report = truncated_hidden_tail_run(false).report();
    assert!(
        !report.stable_offsets.violations.is_empty(),
        "without damage the changed records are violations"
    );
    assert!(
        !report.monotonic_commit_time.violations.is_empty(),
        "without damage 2500 at offset 1 before 2001 at offset 2 is a violation"
    );
}

/// Id 1 committed at offset 0, delivered and acknowledged, then a crash with no hidden
/// tail.
fn delivered_then_crashed() -> Run {
    let mut r = Run::new();
    r.produce(1, 0, 0, 1_000)
        .hwm(0, 1, 1, 1)
        .deliver(1, 0, 0, 1_000)
        .consume(0, 0)
        .crash(&[(0, 1, 1, 1)]);
    r
}

/// Id 1 is committed at offset 0 and delivered; a crash with no hidden tail (so it
/// explains no duplicate) follows, then `damage` (when given), then the restart, and
/// the WAL commits id 1 again at offset 1.
fn recommitted_after_crash_run(damage: Option<(FaultKind, Option<u32>)>) -> Run {
    let mut r = delivered_then_crashed();
    if let Some((kind, partition)) = damage {
        r.fault(kind, partition);
    }
    r.restart()
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1);
    r
}

/// A bit flip in the WAL (say its checkpoint: replay then re-commits every entry it
/// still holds).
fn wal_flip() -> (FaultKind, Option<u32>) {
    (
        FaultKind::BitFlip {
            file: FileKind::Wal,
            offsets: None,
            below_hwm: None,
        },
        None,
    )
}

/// A bit flip at rest in the copy at offset 0: the restart's replay finds no readable
/// copy of id 1 and commits it again.
fn visible_copy_flip() -> (FaultKind, Option<u32>) {
    (
        FaultKind::BitFlip {
            file: FileKind::Segment,
            offsets: Some(OffsetRange { start: 0, end: 1 }),
            below_hwm: Some(true),
        },
        Some(0),
    )
}

#[test]
fn duplicates_after_damage_to_the_wal_are_not_held_to_the_hidden_tails() {
    // A bit flip in the WAL (say its checkpoint: replay then re-commits every entry it
    // still holds) lets a copy come back past an empty hidden tail.
    let report = recommitted_after_crash_run(Some(wal_flip())).report();
    assert_duplicates_explained(&report);
    assert_eq!(report.bounded_duplicates.duplicates, 1);
    // Without the damage the same copy is an unexplained duplicate.
    let messages = fires_only(
        &recommitted_after_crash_run(None).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}

#[test]
fn a_duplicate_of_a_copy_damaged_at_rest_is_explained_and_not_otherwise() {
    let report = recommitted_after_crash_run(Some(visible_copy_flip())).report();
    assert_duplicates_explained(&report);
    assert_eq!(report.bounded_duplicates.after_damage, 1);
    let messages = fires_only(
        &recommitted_after_crash_run(None).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}

/// Id 1 committed at offset 0 and delivered, a crash with no hidden tail, the restart,
/// then a flip in `hwm` of `flipped` (before the open read it: opens take time), and
/// the WAL commits id 1 again at offset 1.
fn hwm_flipped_after_restart_run(flipped: u32) -> Run {
    let mut r = delivered_then_crashed();
    r.restart()
        .fault(hwm_flip(), Some(flipped))
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1);
    r
}

#[test]
fn an_hwm_flip_the_open_did_not_read_explains_no_duplicate() {
    // The open recorded what it found before the flip, and the copy came back before the
    // flip too: the flip changed neither.
    let mut r = delivered_then_crashed();
    r.restart()
        .with(|t, h| {
            h.frontier_observed(t, &tp(0), 0);
        })
        .counters(0, 0, 0)
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1)
        .fault(hwm_flip(), Some(0));
    let messages = messages_of(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
    // A flip in `consumer.offset` only redelivers offsets: it explains no duplicate.
    let mut r = delivered_then_crashed();
    r.restart()
        .fault(
            FaultKind::BitFlip {
                file: FileKind::ConsumerOffset,
                offsets: None,
                below_hwm: None,
            },
            Some(0),
        )
        .hwm(0, 2, 2, 2)
        .deliver(1, 0, 1, 1_100)
        .consume(0, 1);
    let messages = messages_of(&r.report(), CheckerName::BoundedDuplicates);
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}

#[test]
fn a_duplicate_after_a_flipped_hwm_the_open_read_is_explained() {
    // The open read a lower HWM and replayed from further back than the crash's (empty)
    // hidden tail.
    let report = hwm_flipped_after_restart_run(0).report();
    assert_duplicates_explained(&report);
    assert_eq!(report.bounded_duplicates.duplicates, 1);
    // The same flip on another partition explains nothing here.
    let messages = messages_of(
        &hwm_flipped_after_restart_run(1).report(),
        CheckerName::BoundedDuplicates,
    );
    assert_mentions(&messages, &["produce id 1 delivered from orders/0@0"]);
}
