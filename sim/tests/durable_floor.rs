//! The world's durable tail at a crash on a damaged partition (`Recorder::durable_floor`):
//! the decoded extent ends at the damage, so the tail is a lower bound, and the tail
//! certain at the kill before is carried across every incarnation that neither cut the
//! partition nor showed an HWM for it.

use cafelog_sim::history::{CrashPartition, EventKind};
use cafelog_sim::scenario::Scenario;
use cafelog_sim::world::run;

/// A schedule action's target: a flip of bit 0 in frame 0 of orders/0, below any HWM.
const FRAME_0: &str = r#"file = "segment"
path = "/data/topics/orders/p00000/00000000000000000000.log"
position = 40
bit = 0"#;

/// One partition written with a lagging `hwm` word (persisted every 100 ms, fsync per
/// write), the `schedule` entries, then a power loss at 2.5 s. Returns each crash's
/// partition as recorded, with whether it was a process crash.
fn crashes(schedule: &str) -> Vec<(bool, CrashPartition)> {
    let text = format!(
        r#"
seed = 5
[expect]
verdict = "pass"

[[topics]]
name = "orders"
codec = "none"
fsync = "per_write"
flush_records = 3
flush_interval_ms = 5
hwm_persist_interval_ms = 100

[[producers]]
topic = "orders"
gap_ms = [2, 10]
payload_bytes = [300, 300]

[[consumers]]
topic = "orders"

[disk]
latency_probability = 1.0
latency_min_us = 1000
latency_max_us = 2000

{schedule}

[[schedule]]
at_ms = 2500
action = "crash"
"#
    );
    let spec = Scenario::parse("durable_floor", &text)
        .expect("parses")
        .spec();
    let outcome = run(&spec);
    let mut out: Vec<(bool, CrashPartition)> = Vec::new();
    for event in outcome.history.events() {
        match &event.kind {
            EventKind::Crash {
                partitions,
                process,
            } => {
                println!(
                    "t={} inc {} crash process={process} {partitions:?}",
                    event.at_ms, event.incarnation
                );
                out.extend(partitions.iter().map(|p| (*process, p.clone())));
            }
            EventKind::EngineAlarm { tp, alarm, .. } => {
                println!(
                    "t={} inc {} alarm {tp:?} {alarm:?}",
                    event.at_ms, event.incarnation
                )
            }
            EventKind::PartitionRefused { .. } | EventKind::Restart => {
                println!(
                    "t={} inc {} {:?}",
                    event.at_ms, event.incarnation, event.kind
                )
            }
            _ => {}
        }
    }
    println!("verdict {}", outcome.verdict);
    out
}

/// The HWM the engine had at the first crash, checked to lie above the `hwm` word then
/// (so the persisted word alone understates the durable tail).
fn first_memory(crashes: &[(bool, CrashPartition)]) -> u64 {
    let first = &crashes[0].1;
    let memory = first.memory_hwm.expect("the engine had the partition open");
    assert!(
        first.persisted_hwm < memory,
        "the word lags the HWM at the first crash"
    );
    memory
}

/// helper-69 on e62f233: an open that refused the partition (its `r3_refused` alarm
/// raised, nothing written to the partition) and was then killed before it returned
/// must carry the floor as one that returned does. A flip in frame 0 at the first
/// crash makes every later open refuse; in `control` the second crash comes after the
/// refusing open returned, in the other run right after its `r3_refused` alarm. The
/// disk is the same in both, so the power loss's durable tail must be too: the HWM the
/// engine had at the first crash.
#[test]
fn a_refusing_open_killed_before_it_returned_keeps_the_carried_tail() {
    let flip_then = |second: &str| {
        crashes(&format!(
            r#"[[schedule]]
after_acks = 60
action = "process_crash_with_bit_flip"
{FRAME_0}

[[schedule]]
{second}
action = "process_crash""#
        ))
    };
    let control = flip_then("at_ms = 1500");
    println!("----");
    let killed = flip_then("after_alarm = \"r3_refused\"");
    assert_eq!(control.len(), 3, "three crashes of one partition");
    assert_eq!(killed.len(), 3, "three crashes of one partition");
    let memory = first_memory(&control);
    assert_eq!(killed[0].1, control[0].1, "the same first crash");
    assert_eq!(
        control[2].1.durable_tail, memory,
        "control: the refused-only incarnations carry the first crash's HWM"
    );
    assert_eq!(
        killed[2].1.durable_tail, control[2].1.durable_tail,
        "an open killed after refusing the partition changed nothing on its disk"
    );
}

/// Fresh quick 3421823981001164, cut down: a clean open (nothing to cut: no alarm but
/// `log_opened`) killed before the store's open returned has no HWM to show, and left
/// every durable frame in place. The floor must outlive it: here a flip in frame 0 at
/// that kill makes the next open refuse, and the power loss after that finds the
/// extent ending at 0, so without the carried floor its durable tail falls back to the
/// lagging word, and the hidden tail misses the frames the engine had acknowledged
/// above it (their replayed copies then had no duplicate budget).
#[test]
fn a_clean_open_killed_before_it_returned_keeps_the_carried_tail() {
    let killed = crashes(&format!(
        r#"[[schedule]]
after_acks = 60
action = "process_crash"

[[schedule]]
after_alarm = "log_opened"
action = "process_crash_with_bit_flip"
{FRAME_0}"#
    ));
    assert_eq!(killed.len(), 3, "three crashes of one partition");
    let memory = first_memory(&killed);
    assert_eq!(
        killed[1].1.memory_hwm, None,
        "the second kill lands before the store's open returned"
    );
    assert_eq!(
        killed[2].1.durable_tail, memory,
        "the killed clean open and the refusing one after it carry the first crash's HWM"
    );
}

/// helper-75: with damage at rest, a crash's durable tail takes the `hwm` word as a
/// lower bound, so a flip that raised the word raises the floor. The next open clamps
/// (R4: the log ends below the word) and is killed right after its log opened; the
/// floor must not outlive that clamp, or the crash after it hides offsets the disk
/// never had.
#[test]
fn a_clamping_open_killed_before_it_returned_drops_the_floor() {
    let c = crashes(&format!(
        r#"[[schedule]]
after_acks = 3
action = "crash_with_bit_flip"
{FRAME_0}

[[schedule]]
at_ms = 1000
action = "bit_flip"
file = "hwm"
path = "/data/topics/orders/p00000/hwm"
position = 4
bit = 0

[[schedule]]
at_ms = 1000
action = "crash"

[[schedule]]
after_alarm = "log_opened"
action = "crash""#
    ));
    for (process, p) in &c {
        println!("process={process} {p:?}");
    }
    let raised = c
        .iter()
        .position(|(_, p)| p.persisted_hwm >= 1 << 24)
        .expect("a power loss reads the raised word");
    let (_, after) = &c[raised + 1];
    assert_eq!(
        after.memory_hwm, None,
        "killed before the store's open returned"
    );
    assert!(
        after.persisted_hwm < 1 << 24,
        "the clamping open wrote the word back below the flip"
    );
    assert_eq!(
        after.durable_tail, after.persisted_hwm,
        "the clamp dropped the floor the raised word had set"
    );
}

/// The floor rests on what the disk saw, not only on the alarms: a segment the engine
/// shortens or unlinks in an incarnation may lose frames (a silent cut by a killed open
/// raises no R1/R2 alarm), so the partition's floor is not carried past it. Lengthening
/// a segment (preallocation) or shortening another file keeps it.
#[test]
fn a_segment_shortened_or_unlinked_drops_the_floor() {
    use cafelog_engine::fs::{File, Fs, OpenMode};
    use cafelog_sim::fs::{FaultOptions, SimFs};
    use cafelog_sim::history::TopicPartition;
    use cafelog_sim::world::recorder::Shared;
    use std::path::Path;
    let fs = SimFs::new(1, FaultOptions::none()).expect("options");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    runtime.block_on(async move {
        let dir = Path::new("/data/topics/orders/p00000");
        fs.create_dir_all(dir).await.expect("mkdir");
        let segment = dir.join("00000000000000000000.log");
        let file = fs
            .open(&segment, OpenMode::CreateNew)
            .await
            .expect("create");
        file.write_at(&[7u8; 100], 0).await.expect("write");
        let orders = TopicPartition::new("orders", 0);
        let shared = Shared::new(fs.clone());
        let mut rec = shared.lock();
        rec.segment_set_len(&segment, 200);
        rec.segment_set_len(&segment, 100);
        rec.segment_set_len(&dir.join("hwm"), 0);
        assert!(rec.cut_now.is_empty(), "nothing shortened a segment");
        rec.segment_set_len(&segment, 50);
        assert!(rec.cut_now.contains(&orders), "a shortened segment");
        rec.cut_now.clear();
        rec.segment_unlinking(&segment);
        assert!(rec.cut_now.contains(&orders), "an unlinked segment");
    });
}
