//! The listing the world takes at an R3 refusal (`HeldAtRefusal`): what the refused
//! open could see, which bounds the records the `refused` excuse covers. A listing
//! smaller than the open's view makes a false alarm; one larger, or a bad offset too
//! low, lets a record lost before the refusal pass. Held to the engine's answers: where
//! its alarm says it refused, and the records it delivered or acknowledged before the
//! crash.

use cafelog_sim::history::{Alarm, Event, EventKind, parse_payload_id};
use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunSpec, run};

/// Checks every listing of one run; returns (listings, records held to it).
fn check(events: &[Event], seed: u64) -> (usize, usize) {
    let (mut listings, mut held) = (0, 0);
    for (i, e) in events.iter().enumerate() {
        let EventKind::HeldAtRefusal {
            tp,
            bad_offset,
            log,
            ..
        } = &e.kind
        else {
            continue;
        };
        listings += 1;
        let inc = e.incarnation;
        // Right after the engine's refusal of the same partition.
        let EventKind::EngineAlarm {
            tp: Some(t),
            alarm: Alarm::Refused { segment, position },
            raised_in: None,
        } = &events[i - 1].kind
        else {
            panic!("seed {seed} #{i}: a listing not right after a refusal");
        };
        assert_eq!(t, tp, "seed {seed} #{i}");
        // The bad region listed is the one the engine names.
        let views: Vec<_> = events[..i]
            .iter()
            .filter(|v| v.incarnation == inc)
            .filter_map(|v| match &v.kind {
                EventKind::DiskAtOpen { tp: t, disk, .. } if t == tp => Some(disk),
                _ => None,
            })
            .collect();
        // A refusal of a malformed `hwm` file names that file, not a frame.
        if let Some(bad) = bad_offset.filter(|_| segment != "hwm") {
            assert!(
                views.iter().any(|d| d.bad.as_ref().is_some_and(|b| {
                    b.segment == *segment && b.position == *position && b.offset == bad
                })),
                "seed {seed} #{i}: {tp} listed bad at {bad}, the engine refused at \
                 {segment}@{position}; views {views:?}"
            );
        }
        // What the engine delivered or acknowledged in the incarnation before, below
        // the HWM the crash left persisted and the bad region, and at or past its log
        // start: durable and intact, so the refused open could see it.
        let restart = events[..i]
            .iter()
            .rposition(|v| matches!(v.kind, EventKind::Restart))
            .expect("a restart before the refusal");
        let Some(persisted) = events[..restart].iter().rev().find_map(|v| match &v.kind {
            EventKind::Crash { partitions, .. } => partitions
                .iter()
                .find(|p| &p.tp == tp)
                .map(|p| p.persisted_hwm),
            _ => None,
        }) else {
            continue;
        };
        let bound = persisted.min(bad_offset.unwrap_or(u64::MAX));
        let before: Vec<&Event> = events[..restart]
            .iter()
            .filter(|v| v.incarnation + 1 == inc)
            .collect();
        // Retention may have reaped what was delivered early in that incarnation.
        let log_start = before
            .iter()
            .filter_map(|v| match &v.kind {
                EventKind::EngineAlarm {
                    tp: Some(t),
                    alarm: Alarm::LogStartMoved { log_start, .. },
                    raised_in: None,
                } if t == tp => Some(*log_start),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        for v in before {
            let (t, offset, id) = match &v.kind {
                EventKind::Delivery {
                    tp,
                    offset,
                    payload,
                    ..
                } => (
                    tp,
                    *offset,
                    parse_payload_id(payload).expect("a produced payload"),
                ),
                EventKind::ProduceAck {
                    tp,
                    offset: Some(offset),
                    id,
                    ..
                } => (tp, *offset, *id),
                _ => continue,
            };
            if t == tp && log_start <= offset && offset < bound {
                assert!(
                    log.contains(&id),
                    "seed {seed} #{i}: {tp}@{offset} id {id} delivered or acknowledged in \
                     inc {} below {bound}, not listed",
                    inc - 1
                );
                held += 1;
            }
        }
    }
    (listings, held)
}

#[test]
fn a_refusal_listing_holds_what_the_engine_served_and_names_its_bad_region() {
    let profile = Profile::quick();
    let (mut listings, mut held, mut wal) = (0, 0, 0);
    for seed in 0..300 {
        let outcome = run(&RunSpec::from_seed(seed, &profile));
        let events = outcome.history.events();
        let (l, h) = check(events, seed);
        listings += l;
        held += h;
        wal += events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::HeldAtRefusal { wal, .. } if !wal.is_empty()))
            .count();
    }
    assert!(listings >= 50, "{listings} listings");
    assert!(held >= 200, "{held} deliveries held to a listing");
    assert!(wal >= 5, "{wal} listings with WAL entries");
}
