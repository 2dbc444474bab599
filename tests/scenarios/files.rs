//! One test per scenario file. A file without a test here fails
//! `every_scenario_file_has_a_test`, so a new scenario cannot be forgotten.

use cafelog_sim::clock::WALL_BASE_MS_DEFAULT;
use cafelog_sim::history::{Alarm, EventKind, FaultKind, FileKind, RequestKind};
use cafelog_sim::scenario::{Scenario, StableReport};
use cafelog_sim::world::{RunOutcome, run};
use std::path::{Path, PathBuf};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// Runs `scenarios/NAME.toml`, asserts its expectation, snapshots its report.
fn run_scenario(name: &str) -> (Scenario, RunOutcome) {
    let path = scenarios_dir().join(format!("{name}.toml"));
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        scenario.story.lines().count() >= 3,
        "{name}: the file must open with a comment telling its story"
    );
    let outcome = run(&scenario.spec());
    let judgement = scenario.judge(&outcome);
    assert!(
        judgement.ok(),
        "{name}: {}\n(replay it with: cafelog scenario run {} --trace)",
        judgement.problems.join("; "),
        path.display()
    );
    insta::assert_json_snapshot!(name, StableReport::of(&outcome));
    (scenario, outcome)
}

/// Declares one test per scenario, and the list `every_scenario_file_has_a_test` checks.
macro_rules! scenarios {
    ($($(#[$attr:meta])* $name:ident $(=> $extra:path)?;)*) => {
        const NAMES: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                let (_scenario, _outcome) = run_scenario(stringify!($name));
                $($extra(&_scenario, &_outcome);)?
            }
        )*
    };
}

scenarios! {
    a_crash_free_run_has_no_duplicates_and_no_loss => crash_free_accounting;
    a_gate_opening_wakes_a_parked_consumer_while_another_takes_one_at_a_time => woken_by_gates;
    a_restart_resumes_consumption_from_the_last_durable_frontier => resumed_from_durable;
    a_write_that_lands_corrupt_is_caught_by_its_verify_and_acknowledges_nothing => corrupt_write_poisoned;
    background_loops_and_settles_dropped_part_way_lose_nothing => loops_and_settles_dropped;
    bad_frame_above_the_hwm_is_truncated;
    bit_flip_below_the_hwm_refuses_to_open;
    crash_between_commit_and_hwm_persist_duplicates_never_loses => duplicates_without_loss;
    crash_during_the_frontier_rename_leaves_the_old_or_the_new_value => old_frontier_recovered;
    delayed_record_survives_a_restart_and_is_not_delivered_early => nothing_delivered_early;
    disk_full_refuses_writes_without_losing_acknowledged_records;
    expired_leases_redeliver_records_the_consumer_dropped => redelivered;
    fsync_error_poisons_the_partition_and_nothing_after_it_is_acknowledged;
    fsync_error_then_process_restart_never_builds_on_pages_the_disk_lacks;
    hwm_file_ahead_of_the_tail_is_clamped => loss_recorded;
    lost_fsync_is_recorded_loss_never_silent => lost_fsync_hit_a_segment;
    parked_consumers_wake_for_commits_nacks_and_expired_leases => woken_by_queue_broadcasts;
    requests_dropped_part_way_acknowledge_nothing_and_poison_nothing;
    retention_deletes_a_segment_while_a_consumer_reads_it => reaped_by_age;
    retention_never_reaps_a_segment_a_replay_still_needs;
    retention_outruns_a_slow_consumer_and_deletes_records_it_never_read => reaped_by_age;
    torn_tail_is_truncated_on_restart;
    torn_write_into_preallocated_space_is_truncated;
    unreadable_sector_below_the_hwm_refuses_to_open;
    wal_and_both_log_copies_damaged_then_an_open_killed_after_its_replay => both_copies_gone;
    wall_clock_steps_backwards_and_commit_times_stay_monotonic;
}

#[test]
fn every_scenario_file_has_a_test() {
    let loaded = Scenario::load_dir(&scenarios_dir()).unwrap_or_else(|e| panic!("{e}"));
    let mut files: Vec<&str> = loaded.iter().map(|s| s.name.as_str()).collect();
    files.sort_unstable();
    let mut tested = NAMES.to_vec();
    tested.sort_unstable();
    assert_eq!(files, tested, "scenarios/ and the tests in files.rs differ");
    assert!(files.len() >= 12, "issue 7 asks for at least 12 scenarios");
}

fn counts(outcome: &RunOutcome) -> cafelog_sim::check::AccountingCounts {
    outcome
        .report
        .as_ref()
        .expect("the run was judged")
        .accounting
        .counts()
}

fn crash_free_accounting(_: &Scenario, outcome: &RunOutcome) {
    let c = counts(outcome);
    assert_eq!(outcome.paths.crashes, 0);
    assert!(c.acknowledged > 100, "the run must do real work: {c:?}");
    assert_eq!((c.duplicated, c.lost), (0, 0), "{c:?}");
    assert_eq!(c.delivered, c.acknowledged, "{c:?}");
}

fn duplicates_without_loss(_: &Scenario, outcome: &RunOutcome) {
    let c = counts(outcome);
    assert!(c.duplicated > 0, "the hidden tail must come back: {c:?}");
    assert_eq!(c.lost, 0, "{c:?}");
}

/// Some crash lost the frontier's rename: the restart recovered the value written
/// before the last one (the old value), and a directory entry was lost at that crash.
fn old_frontier_recovered(_: &Scenario, outcome: &RunOutcome) {
    let events = outcome.history.events();
    let mut written = Vec::new();
    let mut dir_lost = false;
    let mut old_value_seen = false;
    for event in events {
        match &event.kind {
            EventKind::FrontierWritten { frontier, .. } => written.push(*frontier),
            EventKind::Fault {
                kind:
                    FaultKind::LostWrite {
                        file: FileKind::Directory,
                    },
                tp: Some(_),
                ..
            } => dir_lost = true,
            EventKind::FrontierObserved { frontier, .. } if event.incarnation > 0 => {
                assert!(
                    *frontier == 0 || written.contains(frontier),
                    "recovered frontier {frontier} was never written: {written:?}"
                );
                if dir_lost && written.last().is_some_and(|last| last > frontier) {
                    old_value_seen = true;
                }
                dir_lost = false;
            }
            _ => {}
        }
    }
    assert!(
        old_value_seen,
        "no crash landed in the rename window (old value recovered after a lost entry)"
    );
}

fn nothing_delivered_early(scenario: &Scenario, outcome: &RunOutcome) {
    let delay_ms = scenario.file.topics[0].config.delay_ms;
    assert!(delay_ms > 0);
    assert_eq!(
        outcome.paths.clock_steps, 0,
        "wall time = base + simulated time"
    );
    let mut deliveries = 0;
    for event in outcome.history.events() {
        if let EventKind::Delivery {
            offset,
            committed_at_ms,
            ..
        } = &event.kind
        {
            deliveries += 1;
            let wall_ms = WALL_BASE_MS_DEFAULT + event.at_ms;
            assert!(
                wall_ms >= committed_at_ms + delay_ms,
                "offset {offset} delivered at wall {wall_ms}, committed {committed_at_ms} \
                 with a {delay_ms} ms delay"
            );
        }
    }
    assert!(deliveries > 50, "{deliveries} deliveries");
}

/// Every restart loaded a frontier above 0 and at least the last one persisted before.
fn resumed_from_durable(_: &Scenario, outcome: &RunOutcome) {
    use cafelog_sim::history::Alarm;
    let mut durable = 0;
    let mut resumed = 0;
    for event in outcome.history.events() {
        match &event.kind {
            EventKind::EngineAlarm {
                alarm: Alarm::FrontierPersisted { value },
                ..
            } => durable = *value,
            EventKind::FrontierObserved {
                loaded: Some(loaded),
                ..
            } if event.incarnation > 0 => {
                assert!(
                    *loaded >= durable,
                    "loaded {loaded} below durable {durable}"
                );
                if *loaded > 0 {
                    resumed += 1;
                }
            }
            _ => {}
        }
    }
    assert!(
        resumed >= 3,
        "only {resumed} restarts resumed past offset 0"
    );
    let report = outcome.report.as_ref().expect("checked");
    assert!(report.frontier_durable.held_to_durable >= 3);
}

/// `retention_safe` judged real deletions, each against a commit time seen in it.
fn reaped_by_age(_: &Scenario, outcome: &RunOutcome) {
    let report = outcome.report.as_ref().expect("checked");
    let r = &report.retention_safe;
    assert!(r.reaped > 0, "the reaper deleted nothing");
    assert!(
        r.aged_checked > 0,
        "no deletion was checked against a commit time"
    );
    assert!(r.log_starts > 0);
}

/// The world dropped a background loop and a settle, and the reaper still judged.
fn loops_and_settles_dropped(scenario: &Scenario, outcome: &RunOutcome) {
    let dropped = |request: RequestKind| {
        outcome.history.events().iter().any(|e| {
            matches!(&e.kind, EventKind::Fault { kind: FaultKind::Cancel { request: r }, .. } if *r == request)
        })
    };
    assert!(dropped(RequestKind::Loop), "no background loop was dropped");
    assert!(dropped(RequestKind::Settle), "no settle was dropped");
    reaped_by_age(scenario, outcome);
}

fn redelivered(_: &Scenario, outcome: &RunOutcome) {
    let again = outcome
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Delivery { attempt, .. } if attempt > 1))
        .count();
    assert!(again > 0, "no delivery was a redelivery");
}

/// `woken_promptly` timed waits for records that `causes` made deliverable.
fn woken_by(outcome: &RunOutcome, causes: &[&str]) {
    let report = outcome.report.as_ref().expect("checked");
    let timed = &report.woken_promptly.timed_by_cause;
    for cause in causes {
        assert!(
            timed.get(cause).is_some_and(|n| *n > 0),
            "no wake-up by {cause} was timed: {timed:?}"
        );
    }
}

fn woken_by_queue_broadcasts(_: &Scenario, outcome: &RunOutcome) {
    woken_by(outcome, &["commit", "nack", "expiry"]);
}

fn woken_by_gates(_: &Scenario, outcome: &RunOutcome) {
    woken_by(outcome, &["gate"]);
}

fn loss_recorded(_: &Scenario, outcome: &RunOutcome) {
    let recorded: u64 = outcome
        .history
        .events()
        .iter()
        .map(|e| match e.kind {
            EventKind::EngineCounters {
                recorded_loss_records,
                ..
            } => recorded_loss_records,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    assert!(recorded > 0, "the clamp must be counted as recorded loss");
}

fn both_copies_gone(_: &Scenario, outcome: &RunOutcome) {
    let report = outcome.report.as_ref().expect("the run was judged");
    let excuse = report.no_lost_ack.excuse_of(0).map(|e| e.kind);
    assert_eq!(
        excuse,
        Some(cafelog_sim::check::excuse::ExcuseKind::BothCopiesDamaged),
        "id 0 is lost with both copies"
    );
    // The kill came right after the open's replay committed, before it completed.
    let events = outcome.history.events();
    let killed_after_replay = events.windows(2).any(|w| {
        matches!(
            &w[0].kind,
            EventKind::EngineAlarm {
                alarm: cafelog_sim::history::Alarm::ReplayCommitting { .. },
                ..
            }
        ) && matches!(
            w[1].kind,
            EventKind::Fault {
                kind: FaultKind::ProcessCrash,
                ..
            }
        )
    });
    assert!(killed_after_replay, "no process crash right after a replay");
}

/// The corrupt write was a commit's: the partition it hit was poisoned after it, in the
/// same incarnation, and no record of the frame it hit was acknowledged there.
fn corrupt_write_poisoned(_: &Scenario, outcome: &RunOutcome) {
    let events = outcome.history.events();
    let (index, tp, incarnation, frame) = events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match &e.kind {
            EventKind::Fault {
                kind: FaultKind::CorruptWrite { offsets, .. },
                tp: Some(tp),
                ..
            } => Some((i, tp.clone(), e.incarnation, *offsets)),
            _ => None,
        })
        .expect("a corrupt write");
    let frame = frame.expect("the world named the frame it hit");
    let same = || {
        events[index..]
            .iter()
            .filter(|e| e.incarnation == incarnation)
    };
    let by_verify = same().any(|e| {
        matches!(&e.kind, EventKind::EngineAlarm { tp: Some(t), alarm: Alarm::Poisoned { verify: true, .. }, .. }
            if *t == tp)
    });
    assert!(
        by_verify,
        "{tp} was not poisoned by its verify after the corrupt write"
    );
    let acked = same().any(|e| {
        matches!(&e.kind, EventKind::ProduceAck { tp: t, offset: Some(o), .. }
            if *t == tp && frame.contains(*o))
    });
    assert!(
        !acked,
        "a record of the corrupt frame [{}, {}) was acknowledged",
        frame.start, frame.end
    );
}

fn lost_fsync_hit_a_segment(_: &Scenario, outcome: &RunOutcome) {
    let on_segment = outcome.history.events().iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Fault {
                kind: FaultKind::LostFsync {
                    file: FileKind::Segment,
                    ..
                },
                ..
            }
        )
    });
    assert!(on_segment, "no lost fsync hit a segment");
}
