//! Proof that each checker fires: for every checker a small hand-made history with
//! exactly that violation, asserting that this checker (and only it) fires with a
//! message naming the partition, offsets and produce ids; a clean history with a
//! crash, a hidden tail and its duplicates that passes every checker; and the excuses
//! (recorded loss, lost fsync, refusal, hidden-tail budget) working and running out.
use cafelog_sim::check::{
    CheckConfig, CheckReport, CheckerName, EXIT_LIVENESS_FAILURE, EXIT_PASS, EXIT_SAFETY_FAILURE,
    EXIT_SIMULATOR_CRASH, Verdict, check,
};
use cafelog_sim::history::{
    Alarm, BadAt, CheckpointFloor, CrashPartition, DamagedWalEntry, DiskView, EventKind, FaultKind,
    FileChange, FileKind, HeldCopy, History, Incarnation, OffsetRange, OpenRule, ProduceId,
    TopicPartition, encode_payload,
};

/// How the record acknowledged at 2 in [`log_ends_at_2`] was seen before the crash.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Acknowledged at 2 and read there before the crash (59841b9's shape).
    Loud,
    /// Acknowledged at 2 but not read before the crash; the consumer wrote its
    /// frontier; the replay's commits carry their own commit times.
    Quiet,
    /// As `Quiet`, and id 3's acknowledgement never reached the client (it timed
    /// out): nothing but the HWM the engine showed names offset 2 before the crash.
    Unacked,
}

/// Ids 1 and 2 at 0 and 1 on orders/0, read; `fault` injected (`None`: nothing); ids
/// 3.. (`after` of them) acknowledged at 2.., HWM shown over them. A power loss; the
/// open finds the log clean ending at 2, and the replay re-commits ids 1.. at 2..,
/// repeating ids 1 and 2 below the durable tail. Whether anything may end the log at 2
/// is the question the histories built on it ask.
fn log_ends_at_2(fault: Option<FaultKind>, mode: Mode, after: u64) -> Run {
    let loud = matches!(mode, Mode::Loud);
    let mut r = Run::new();
    r.produced(2)
        .hwm(0, 2, 0, 2)
        .delivered(2)
        .consume(0, 0)
        .consume(0, 1);
    if !loud {
        r.frontier_written(0, 2);
    }
    if let Some(kind) = fault {
        r.fault(kind, Some(0));
    }
    for k in 0..after {
        match mode {
            Mode::Unacked if k == 0 => r.attempt(3, 0),
            _ => r.produce(3 + k, 0, 2 + k, 1_002 + k),
        };
    }
    let tail = 2 + after;
    r.hwm(0, tail, 0, tail);
    if loud {
        for k in 0..after {
            r.deliver(3 + k, 0, 2 + k, 1_002 + k).consume(0, 2 + k);
        }
    }
    r.crash(&[(0, 0, tail, tail)]).restart().open_clean(0, 0, 2);
    r.frontier_seen(0, 2);
    let c = if loud { 0 } else { 10 };
    r.hwm(0, 2 + tail, 2 + tail, 2 + tail);
    for id in 1..=tail {
        r.deliver(id, 0, id + 1, 1_000 + id - 1 + c);
    }
    if !loud {
        for offset in 2..2 + tail {
            r.consume(0, offset);
        }
    }
    r
}

/// Ids 1..=`n` on orders/0 delivered, and offsets `0..n` each read.
fn delivered_and_read(r: &mut Run, n: u64) {
    r.delivered(n);
    for o in 0..n {
        r.consume(0, o);
    }
}

/// An open's replay on orders/0 commits `ids` from offset 4 on; each is delivered.
fn replay_commits(r: &mut Run, ids: &[u64]) {
    r.alarm(
        Some(0),
        Alarm::ReplayCommitting {
            records: ids.len() as u64,
        },
    );
    let end = 4 + ids.len() as u64;
    r.hwm(0, end, end, end);
    for (k, id) in ids.iter().enumerate() {
        r.deliver(*id, 0, 4 + k as u64, 1_000 + id - 1);
    }
}

/// A disk view: `rule`, persisted HWM, tail, the bad region's offset (and a segment
/// name for it).
fn disk_view(rule: OpenRule, persisted: u64, tail: u64, bad: Option<u64>) -> DiskView {
    DiskView {
        rule,
        persisted_hwm: Some(persisted),
        log_start: 0,
        tail,
        hwm: persisted.min(tail),
        bad: bad.map(|offset| BadAt {
            segment: "00000000000000000000.log".to_owned(),
            position: offset * 100,
            offset,
        }),
    }
}

mod alarms;
mod both_copies_twice;
mod causes;
mod checkpoint_read;
mod clamped;
mod clean;
mod commit_time;
mod corrupt_write;
mod corruption;
mod corruption_while_open;
mod delay_gate;
mod duplicates;
mod duplicates_carried_tail;
mod duplicates_checkpoint_reach;
mod duplicates_hwm_word;
mod duplicates_lost_from;
mod duplicates_reach;
mod duplicates_refused_replay;
mod duplicates_replaying_open;
mod duplicates_replays;
mod duplicates_rows;
mod duplicates_word_direction;
mod excuses;
mod explain;
mod flip_window;
mod frontier;
mod frontier_durable;
mod frontier_lazy;
mod frontier_open_clamp;
mod frontier_progress;
mod hwm_persisted;
mod layout;
mod lease_exclusive;
mod liveness;
mod loss;
mod lowered_word;
mod offsets;
mod persisted_word;
mod poison;
mod reach_and_cuts;
mod recommitted;
mod redelivery;
mod refused;
mod replayed;
mod retention_progress;
mod retention_safe;
mod salvaged_entry;
mod showed;
mod skipped;
mod sweep_regressions;
mod timeline;
mod verdicts;
mod wal_progress;
mod woken;

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
    redelivery_bound_ms: 100,
    wake_bound_ms: 50,
    tick_ms: 10,
    context_events: 2,
};
/// A history under construction with its own clock: every event 10 ms after the last.
#[derive(Clone)]
struct Run {
    h: History,
    t: u64,
}
/// Topic `orders` (2 partitions) with `delay_ms` and `lease_ms`, no retention.
fn orders_topic(delay_ms: u64, lease_ms: u64) -> cafelog_sim::history::TopicSetup {
    cafelog_sim::history::TopicSetup {
        name: "orders".into(),
        partitions: 2,
        delay_ms,
        lease_ms,
        retention_ms: None,
        hwm_persist_ms: None,
        reaper_interval_ms: None,
    }
}

impl Run {
    fn new() -> Self {
        Run {
            h: History::new(),
            t: 0,
        }
    }

    /// A run that starts with its setup: topic `orders` (2 partitions) with `delay_ms`
    /// and `lease_ms`, and a wall clock reading `wall_base_ms` at time 0.
    fn with_setup(wall_base_ms: u64, delay_ms: u64, lease_ms: u64) -> Self {
        let mut r = Run::new();
        let topic = orders_topic(delay_ms, lease_ms);
        r.h.run_started(0, wall_base_ms, vec![topic], 0, None, false);
        r
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

    /// A power loss. `parts`: (partition, persisted_hwm, durable_tail, memory_hwm).
    fn crash(&mut self, parts: &[(u32, u64, u64, u64)]) -> &mut Self {
        let t = self.now();
        self.h.crash(t, crash_partitions(parts));
        self
    }

    /// A process crash (the page cache survives); `parts` as for [`Run::crash`].
    fn process_crash(&mut self, parts: &[(u32, u64, u64, u64)]) -> &mut Self {
        let t = self.now();
        self.h.process_crash(t, crash_partitions(parts));
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

    /// A misdirected write of the store file at `path` (a `topic.conf`, say).
    fn misdirected_store_file(&mut self, path: &str) -> &mut Self {
        let t = self.now();
        let kind = FaultKind::Misdirected {
            file: FileKind::Other,
            offsets: None,
            below_hwm: None,
            parts: None,
        };
        self.h.fault(t, kind, None, Some(path));
        self
    }

    /// An alarm the engine raised on orders/`p` (`None`: store-wide).
    /// An R2 salvage on orders/`p` that wrote `kept` as plain WAL entries and `copied` as
    /// salvage copies (produce ids), at seqs from 9: its alarm and what the world found.
    fn salvaged(&mut self, p: u32, kept: Vec<u64>, copied: Vec<u64>) -> &mut Self {
        let written = (kept.len() + copied.len()) as u64;
        self.alarm(
            Some(p),
            Alarm::Salvaged {
                offered: written,
                kept: kept.len() as u64,
                copied: copied.len() as u64,
                first_seq: 9,
                end_seq: 9 + written,
            },
        );
        if written > 0 {
            self.with(|t, h| {
                h.salvage_wrote(t, &tp(p), kept, copied);
            });
        }
        self
    }

    fn alarm(&mut self, p: Option<u32>, alarm: Alarm) -> &mut Self {
        let t = self.now();
        self.h.engine_alarm(t, p.map(tp).as_ref(), alarm, None);
        self
    }

    /// What the reference decoder read on orders/`p` at the restart: rule, persisted
    /// HWM, tail, and the bad region's offset when the rule is not clean.
    fn disk(
        &mut self,
        p: u32,
        rule: OpenRule,
        persisted: u64,
        tail: u64,
        bad: Option<u64>,
    ) -> &mut Self {
        let t = self.now();
        let view = disk_view(rule, persisted, tail, bad);
        self.h.disk_at_open(t, &tp(p), view, false);
        self
    }

    /// The engine's account of a finished open of orders/`p`: log start 0, `hwm`, `tail`.
    fn opened(&mut self, p: u32, hwm: u64, tail: u64) -> &mut Self {
        self.alarm(
            Some(p),
            Alarm::LogOpened {
                log_start: 0,
                hwm,
                tail,
                hidden: tail - hwm,
            },
        )
    }

    /// A clean open of orders/`p` whose disk and account agree: persisted HWM `hwm`,
    /// tail `tail`.
    fn open_clean(&mut self, p: u32, hwm: u64, tail: u64) -> &mut Self {
        self.disk(p, OpenRule::Clean, hwm, tail, None)
            .opened(p, hwm, tail)
    }

    /// The engine wrote frontier `value` of orders/`p` (to its temp file).
    fn frontier_written(&mut self, p: u32, value: u64) -> &mut Self {
        let t = self.now();
        self.h.frontier_written(t, &tp(p), value);
        self
    }

    /// A power loss with `hwm` records of orders/0 durable and persisted; a flip takes
    /// every frame, and the next open cuts at 0 (R1), clamps `hwm` to 0 (R4), gives up
    /// the `hwm` records and comes up empty.
    fn flipped_and_clamped(&mut self, hwm: u64) -> &mut Self {
        self.crash(&[(0, hwm, hwm, hwm)])
            .fault(
                segment_flip(OffsetRange { start: 0, end: hwm }, Some(true)),
                Some(0),
            )
            .restart()
            .disk(0, OpenRule::TornTail, hwm, 0, Some(0))
            .alarm(
                Some(0),
                Alarm::TornTail {
                    segment: "00000000000000000000.log".into(),
                    position: 0,
                    offset: 0,
                    bytes: 200,
                },
            )
            .alarm(Some(0), clamp(hwm, 0))
            .counters(0, hwm, 0)
            .opened(0, 0, 0)
    }

    /// A consumer of orders/`p` was shown frontier `value`.
    fn frontier_seen(&mut self, p: u32, value: u64) -> &mut Self {
        let t = self.now();
        self.h.frontier_observed(t, &tp(p), value);
        self
    }

    /// An open read frontier `read` of orders/`p` above its HWM `to`, clamped it, and
    /// the queue came up there.
    fn frontier_clamped(&mut self, p: u32, read: u64, to: u64) -> &mut Self {
        self.alarm(
            Some(p),
            Alarm::FrontierClamped {
                value: read,
                clamped: to,
            },
        );
        let t = self.now();
        self.h.frontier_observed(t, &tp(p), to);
        self
    }

    /// The world's read of the WAL checkpoint at a restart: orders/0's floor (seq,
    /// offset), or `None` when the file did not read (the last flip of `checkpoint`,
    /// if any, being the file's: the world names it).
    fn checkpoint_read(&mut self, floor: Option<(u64, u64)>) -> &mut Self {
        let flipped = floor
            .is_none()
            .then(|| last_checkpoint_flip(&self.h))
            .flatten();
        self.with(|t, h| {
            let floors = floor.map(|(seq, offset)| {
                vec![cafelog_sim::history::CheckpointFloor {
                    tp: tp(0),
                    seq,
                    offset,
                }]
            });
            h.checkpoint_at_open(t, floors, flipped);
        })
    }

    /// The open reports one WAL entry destroyed, 100 bytes skipped.
    fn wal_damaged(&mut self) -> &mut Self {
        self.alarm(
            None,
            Alarm::WalDamaged {
                corrupt_entries: 1,
                skipped_bytes: 100,
            },
        )
    }

    fn checkpoint_flipped(&mut self) -> &mut Self {
        let (kind, _) = wal_flip();
        self.with(|t, h| {
            h.fault(t, kind, None, Some("/data/wal/checkpoint"));
        })
    }

    /// A flip of the WAL checkpoint, as the world records it: the floors of orders the
    /// file held before it, (partition, seq, offset); `None` when it did not read.
    fn checkpoint_flipped_holding(&mut self, held: Option<&[(u32, u64, u64)]>) -> &mut Self {
        let floors = held.map(|held| {
            held.iter()
                .map(|&(p, seq, offset)| CheckpointFloor {
                    tp: tp(p),
                    seq,
                    offset,
                })
                .collect()
        });
        let (kind, _) = wal_flip();
        self.with(|t, h| {
            h.fault(t, kind, None, Some("/data/wal/checkpoint"));
            let fault = h.len() - 1;
            h.checkpoint_damaged(t, fault, floors, (None, false));
        })
    }

    fn report(&self) -> CheckReport {
        check(&self.h, &CONFIG)
    }
}
/// The history index of the last bit flip of `/data/wal/checkpoint` in `h`.
fn last_checkpoint_flip(h: &History) -> Option<usize> {
    h.events().iter().rposition(|e| {
        matches!(&e.kind, EventKind::Fault { kind: FaultKind::BitFlip { .. }, path: Some(p), .. }
            if p == "/data/wal/checkpoint")
    })
}

/// The messages of `bounded_duplicates`'s violations.
fn duplicate_messages(r: &Run) -> Vec<String> {
    let d = r.report().bounded_duplicates;
    d.violations.iter().map(|v| v.message.clone()).collect()
}

/// The engine skipped the one-record frame at `base` as unreadable.
fn frame_skipped(base: u64) -> Alarm {
    Alarm::FrameSkipped { base, records: 1 }
}

/// A copy of `id` at `offset`, as the world lists one (damage took it, or an open found
/// it hidden).
fn held(offset: u64, id: ProduceId) -> HeldCopy {
    HeldCopy {
        offset,
        id,
        committed_at_ms: 1_000 + offset,
    }
}

fn crash_partitions(parts: &[(u32, u64, u64, u64)]) -> Vec<CrashPartition> {
    parts
        .iter()
        .map(|&(p, persisted_hwm, durable_tail, memory)| CrashPartition {
            tp: tp(p),
            persisted_hwm,
            durable_tail,
            memory_hwm: Some(memory),
        })
        .collect()
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
fn assert_mentions(messages: &[String], parts: &[&str]) {
    assert!(
        messages.iter().any(|m| parts.iter().all(|p| m.contains(p))),
        "no message contains all of {parts:?}: {messages:#?}"
    );
}
/// Every engine alarm of the run had a cause (`alarms_explained` passed).
fn assert_alarms_explained(report: &CheckReport) {
    assert!(
        report.alarms_explained.violations.is_empty(),
        "{:?}",
        report.alarms_explained.violations
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
/// A bit flip in the last frame below the persisted HWM: recovery truncates it (R1)
/// and clamps the HWM (R4), recording the loss of one record.
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
/// A latent sector below the HWM over the frames of `[start, end)` of a segment.
fn latent_below_hwm(start: u64, end: u64) -> FaultKind {
    FaultKind::LatentSector {
        file: FileKind::Segment,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: Some(true),
    }
}
/// An R1 cut of segment 0 at `offset` (100 bytes per frame).
fn torn_tail(offset: u64) -> Alarm {
    Alarm::TornTail {
        segment: "00000000000000000000.log".into(),
        position: 100 * offset,
        offset,
        bytes: 100,
    }
}
/// An R3 refusal at byte `position` of orders' first segment.
fn refused_alarm(position: u64) -> Alarm {
    Alarm::Refused {
        segment: "00000000000000000000.log".into(),
        position,
    }
}
/// An R4 clamp of the persisted HWM `persisted_hwm` down to `hwm`.
fn clamp(persisted_hwm: u64, hwm: u64) -> Alarm {
    Alarm::Clamp {
        persisted_hwm,
        hwm,
        lost: persisted_hwm - hwm,
    }
}
/// A misdirected write of a segment above the HWM, split by the world into one part:
/// the frames of `part`.
fn misdirected_segment(part: OffsetRange) -> FaultKind {
    FaultKind::Misdirected {
        file: FileKind::Segment,
        offsets: Some(part),
        below_hwm: Some(false),
        parts: Some(vec![part]),
    }
}

/// A bit flip in partition `hwm` file (8 bare bytes: undetectable).
/// A flip of orders' `consumer.offset` between `start` and `end`.
fn offset_flip(start: u64, end: u64) -> FaultKind {
    FaultKind::BitFlip {
        file: FileKind::ConsumerOffset,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: None,
    }
}

/// A bit flip of the `hwm` word, recorded as the range between its two values.
fn hwm_flip_between(start: u64, end: u64) -> FaultKind {
    FaultKind::BitFlip {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start, end }),
        below_hwm: None,
    }
}

/// A lost fsync of the `hwm` word: the platter keeps `start` where `end` was written.
fn hwm_lost_fsync(start: u64, end: u64) -> FaultKind {
    FaultKind::LostFsync {
        file: FileKind::Hwm,
        offsets: Some(OffsetRange { start, end }),
    }
}

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
