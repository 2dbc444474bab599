//! The listing the world takes when a flip makes the WAL checkpoint unreadable while an
//! open runs, before that open read it (`VisibleAtOpen` right after the flip). The open
//! then replays every entry whose record it cannot see, and `checkpoint_lost` trusts
//! the listing for what it could see: a listing smaller than the open's view excuses an
//! engine that repeated a record it could see. So the listing is held to the engine's
//! own answers: its `log_opened` account of each partition and the records it delivers.

use cafelog_sim::history::{
    Alarm, Event, EventKind, HeldCopy, Incarnation, TopicPartition, parse_payload_id,
};
use cafelog_sim::profile::Profile;
use cafelog_sim::world::{RunSpec, run};
use std::collections::{BTreeMap, BTreeSet};

/// The seeds of quick 0..5000 and default 0..1500 whose runs take such a listing, run
/// without the kinds drawn after they were first picked (re-scanned when recovery's
/// write-back began to read back what it wrote, which moved the runs).
const QUICK: [u64; 16] = [
    397, 617, 629, 817, 895, 1099, 1397, 1537, 1564, 3127, 3199, 3276, 3573, 3706, 3724, 4025,
];
const DEFAULT: [u64; 5] = [222, 242, 397, 700, 1490];

/// One mid-open listing: where it sits in the history, its incarnation, and per
/// partition the range and copies listed.
struct Listing {
    index: usize,
    incarnation: Incarnation,
    parts: BTreeMap<TopicPartition, (u64, u64, Vec<HeldCopy>)>,
}

fn is_checkpoint_flip(event: &Event) -> bool {
    matches!(&event.kind, EventKind::Fault { path: Some(p), .. } if p.ends_with("/wal/checkpoint"))
}

/// Every listing taken right after a checkpoint flip (a restart's own listing follows
/// the restart instead).
fn mid_open_listings(events: &[Event]) -> Vec<Listing> {
    let mut out = Vec::new();
    for (index, event) in events.iter().enumerate() {
        if !is_checkpoint_flip(event) {
            continue;
        }
        let parts: BTreeMap<_, _> = events[index + 1..]
            .iter()
            .map_while(|e| match &e.kind {
                EventKind::VisibleAtOpen { tp, from, to, held } => {
                    Some((tp.clone(), (*from, *to, held.clone())))
                }
                _ => None,
            })
            .collect();
        if !parts.is_empty() {
            out.push(Listing {
                index,
                incarnation: event.incarnation,
                parts,
            });
        }
    }
    out
}

/// What the listing promises, against the engine: the partitions with no fault since
/// the restart are listed, the others not; a listed partition's open, when nothing
/// struck it between the listing and its end, reports the listed range as its log
/// start and HWM; and every record it delivers in that incarnation inside the range is
/// the listed one. Returns how many partitions had their range and records compared.
fn check(events: &[Event], listing: &Listing, what: &str) -> usize {
    let restart = events[..listing.index]
        .iter()
        .rposition(|e| matches!(e.kind, EventKind::Restart))
        .unwrap_or(0);
    let struck_since = |from: usize, to: usize| -> BTreeSet<TopicPartition> {
        events[from..to]
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Fault { tp: Some(tp), .. } => Some(tp.clone()),
                _ => None,
            })
            .collect()
    };
    let damaged = struck_since(restart, listing.index);
    let same: Vec<(usize, &Event)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.incarnation == listing.incarnation)
        .collect();
    let opened: BTreeMap<TopicPartition, (usize, u64, u64)> = same
        .iter()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::EngineAlarm {
                tp: Some(tp),
                alarm: Alarm::LogOpened { log_start, hwm, .. },
                raised_in: None,
            } => Some((tp.clone(), (*i, *log_start, *hwm))),
            _ => None,
        })
        .collect();
    for tp in &damaged {
        assert!(
            !listing.parts.contains_key(tp),
            "{what}: {tp} was struck since the restart, yet listed"
        );
    }
    for tp in opened.keys().filter(|tp| !damaged.contains(*tp)) {
        assert!(
            listing.parts.contains_key(tp),
            "{what}: {tp} opened, was not struck, and was not listed"
        );
    }
    let mut compared = 0;
    for (tp, (from, to, held)) in &listing.parts {
        let Some(&(at, log_start, hwm)) = opened.get(tp) else {
            continue; // the open was killed before it reached this partition
        };
        let (first, last) = (at.min(listing.index), at.max(listing.index));
        if struck_since(first, last).contains(tp) {
            continue; // damage between the listing and the open's account
        }
        assert_eq!(
            (*from, *to),
            (log_start, hwm),
            "{what}: {tp} listed [{from}, {to}), its open reported [{log_start}, {hwm})"
        );
        let listed: BTreeMap<u64, u64> = held.iter().map(|c| (c.offset, c.id)).collect();
        assert!(
            listed.keys().all(|o| (from..to).contains(&o)),
            "{what}: {tp} lists a copy outside [{from}, {to}): {listed:?}"
        );
        for (_, e) in &same {
            if let EventKind::Delivery {
                tp: t,
                offset,
                payload,
                ..
            } = &e.kind
                && t == tp
                && (from..to).contains(&offset)
            {
                let id = parse_payload_id(payload).expect("a produced payload");
                assert_eq!(
                    listed.get(offset),
                    Some(&id),
                    "{what}: {tp}@{offset} delivered id {id}, listed {:?}",
                    listed.get(offset)
                );
            }
        }
        compared += 1;
    }
    compared
}

#[test]
fn a_mid_open_listing_is_what_the_open_reports_and_serves() {
    let mut listings = 0;
    let mut compared = 0;
    let mut held = 0;
    let mut withheld = 0;
    for (profile, seeds) in [
        (Profile::quick(), &QUICK[..]),
        (Profile::by_name("default").unwrap(), &DEFAULT[..]),
    ] {
        for &seed in seeds {
            // As the seeds ran when they were picked for their listings.
            let without = [
                "corrupt_write".into(),
                "dir_fsync_eio".into(),
                "lazy_frontier".into(),
            ];
            let spec = RunSpec::from_seed_without(seed, &profile, &without)
                .expect("a kind the swarm draws");
            let outcome = run(&spec);
            let events = outcome.history.events();
            let found = mid_open_listings(events);
            assert!(
                !found.is_empty(),
                "{} seed {seed} took no mid-open listing",
                profile.name
            );
            for listing in &found {
                let what = format!("{} seed {seed} listing at #{}", profile.name, listing.index);
                compared += check(events, listing, &what);
                held += listing.parts.values().map(|p| p.2.len()).sum::<usize>();
                withheld += usize::from(
                    events[listing.index..]
                        .iter()
                        .take_while(|e| e.incarnation == listing.incarnation)
                        .any(|e| matches!(&e.kind, EventKind::EngineAlarm { tp: Some(tp), alarm: Alarm::LogOpened { .. }, raised_in: None } if !listing.parts.contains_key(tp))),
                );
            }
            listings += found.len();
        }
    }
    // Not vacuous: the seeds list records and hold some partitions back.
    assert!(listings >= 20, "{listings} listings");
    assert!(compared >= 40, "{compared} partitions compared");
    assert!(held >= 100, "{held} copies listed");
    assert!(withheld >= 1, "no partition was held back from a listing");
}
