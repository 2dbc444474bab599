//! `frontier_durable` rule 4: an open changes `consumer.offset` only by its clamp to the
//! HWM, as its `frontier_clamped` account says; each replace it begins, and the word it
//! leaves, against the word the restart found.

use super::frontier_lazy::{acked_4_durable_then_reopened, reporting_start};
use super::*;

/// orders/0 holds 6 acked records, frontier 4 durable; a crash; the restart found the
/// word `found`, the open (HWM 6) raised `alarms` and came up leaving the word at
/// `left` (`None`: killed before it came up).
fn opened_with(found: u64, alarms: &[Alarm], left: Option<u64>) -> CheckReport {
    let mut r = reporting_start();
    r.frontier_seen(0, 0).loaded(0, 0);
    acked_4_durable_then_reopened(&mut r);
    for alarm in alarms {
        r.alarm(Some(0), alarm.clone());
    }
    if let Some(left) = left {
        r.with(|t, h| {
            h.frontier_opened(t, &tp(0), Some(found), left);
        });
    }
    r.report()
}

fn clamp(value: u64, clamped: u64) -> Alarm {
    Alarm::FrontierClamped { value, clamped }
}

/// One step of an open's story: a fault injected, or an alarm it raised.
type Step = Result<FaultKind, Alarm>;

fn persisting(value: u64) -> Alarm {
    Alarm::FrontierPersisting { value }
}

#[test]
fn an_open_leaves_the_word_it_found_or_clamps_it_to_the_hwm() {
    // At or below the HWM 6 and left, or above it and clamped to it: nothing.
    for report in [
        opened_with(4, &[], Some(4)),
        opened_with(9, &[clamp(9, 6), persisting(6)], Some(6)),
    ] {
        assert!(
            messages_of(&report, CheckerName::FrontierDurable).is_empty(),
            "{:?}",
            messages_of(&report, CheckerName::FrontierDurable)
        );
        assert_eq!(report.frontier_durable.opens_held, 1);
    }
    for (report, says) in [
        (
            opened_with(4, &[], Some(0)),
            "left it at 0, not 4 (its HWM was 6)",
        ),
        (opened_with(4, &[], Some(5)), "left it at 5, not 4"),
        (opened_with(9, &[], Some(9)), "left it at 9, not 6"),
        (
            opened_with(9, &[clamp(9, 6)], Some(0)),
            "left it at 0, not 6",
        ),
    ] {
        assert_mentions(
            &messages_of(&report, CheckerName::FrontierDurable),
            &["the open at", "inc 1 found consumer.offset at", says],
        );
    }
}

#[test]
fn every_replace_an_open_begins_is_its_clamp_to_the_hwm() {
    // Killed before it came up, or up: each replace is judged by the accounts alone.
    for left in [None, Some(6)] {
        let clean = opened_with(9, &[clamp(9, 6), persisting(6)], left);
        assert!(messages_of(&clean, CheckerName::FrontierDurable).is_empty());
        assert_eq!(clean.frontier_durable.open_replaces_held, 1);
        for (alarms, says) in [
            (
                vec![persisting(0)],
                "no frontier_clamped account came before it",
            ),
            (
                vec![clamp(9, 6), persisting(0)],
                "its frontier_clamped account wrote 6",
            ),
            (
                vec![clamp(9, 2), persisting(2)],
                "it clamped 9 to 2, where its HWM was 6",
            ),
        ] {
            assert_mentions(
                &messages_of(&opened_with(9, &alarms, left), CheckerName::FrontierDurable),
                &["the open of inc 1 began to write frontier", says],
            );
        }
    }
}

/// The open clamped the flipped word 9 to its HWM 6, then a flip during the open moved
/// the clamp's 6 to 7 (fresh quick seed 1022265493000399): the flip excuses the 7; one
/// whose reach misses the clamp's word does not.
#[test]
fn a_flip_after_the_opens_clamp_excuses_the_word_it_left() {
    // A flip 0 -> 7 holds both 7 and the clamp's 6 but moved neither (helper-103: an
    // open clamping to 0, then a flip of that 0).
    for (flip, excused) in [
        (offset_flip(6, 7), true),
        (offset_flip(7, 8), false),
        (offset_flip(0, 7), false),
    ] {
        let mut r = reporting_start();
        r.frontier_seen(0, 0).loaded(0, 0);
        acked_4_durable_then_reopened(&mut r)
            .alarm(Some(0), clamp(9, 6))
            .alarm(Some(0), persisting(6))
            .fault(flip, Some(0))
            .with(|t, h| {
                h.frontier_opened(t, &tp(0), Some(9), 7);
            });
        let report = r.report();
        let fired = messages_of(&report, CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains("found consumer.offset at 9 and left it at 7, not 6"));
        assert_eq!(fired, !excused, "excused {excused}");
    }
}

#[test]
fn only_a_fault_on_the_word_while_the_open_ran_excuses_what_it_left() {
    for during_open in [true, false] {
        let mut r = Run::new();
        r.produced(6).hwm(0, 6, 6, 6);
        if !during_open {
            r.fault(offset_flip(2, 4), Some(0));
        }
        r.crash(&[(0, 6, 6, 6)]).restart().open_clean(0, 6, 6);
        if during_open {
            r.fault(offset_flip(2, 4), Some(0));
        }
        r.with(|t, h| {
            h.frontier_opened(t, &tp(0), Some(4), 2);
        });
        let report = r.report();
        let fired = messages_of(&report, CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains("found consumer.offset at 4 and left it at 2"));
        assert_eq!(fired, !during_open, "during the open: {during_open}");
        assert_eq!(
            report
                .frontier_durable
                .excused
                .iter()
                .any(|e| e.covers.contains("word 4 left as 2")),
            during_open
        );
    }
}

/// A flip during the open, before its clamp read the word (4 -> 9 over the HWM 6):
/// the open clamped the flip's 9 to 6, which the flip excuses; a 5 it does not.
#[test]
fn a_flip_before_the_opens_clamp_excuses_the_clamped_word() {
    for (left, excused) in [(6, true), (5, false)] {
        let mut r = reporting_start();
        r.frontier_seen(0, 0).loaded(0, 0);
        acked_4_durable_then_reopened(&mut r)
            .fault(offset_flip(4, 9), Some(0))
            .with(|t, h| {
                h.frontier_opened(t, &tp(0), Some(4), left);
            });
        let fired = messages_of(&r.report(), CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains(&format!("found consumer.offset at 4 and left it at {left}")));
        assert_eq!(fired, !excused, "left {left}");
    }
}

/// Two flips during one open (fresh default seed 3908571737): the first moved the word
/// the restart found (4) to 9 before the clamp read it, the clamp wrote the HWM 6, and
/// the second moved that 6 to 7. The second flip excuses the 7 only when the first
/// explains the word the clamp read.
#[test]
fn a_flip_of_the_word_a_clamp_of_a_flip_wrote_excuses_the_word_it_left() {
    for (first, second, excused) in [
        (Some(offset_flip(4, 9)), offset_flip(6, 7), true),
        (None, offset_flip(6, 7), false),
        (Some(offset_flip(4, 10)), offset_flip(6, 7), false),
        (Some(offset_flip(4, 9)), offset_flip(7, 8), false),
    ] {
        let mut r = reporting_start();
        r.frontier_seen(0, 0).loaded(0, 0);
        acked_4_durable_then_reopened(&mut r);
        if let Some(first) = &first {
            r.fault(first.clone(), Some(0));
        }
        r.alarm(Some(0), clamp(9, 6))
            .alarm(Some(0), persisting(6))
            .fault(second.clone(), Some(0))
            .with(|t, h| {
                h.frontier_opened(t, &tp(0), Some(4), 7);
            });
        let fired = messages_of(&r.report(), CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains("found consumer.offset at 4 and left it at 7, not 4"));
        assert_eq!(fired, !excused, "first {first:?}, second {second:?}");
    }
}

/// helper-106: the open's clamp replaced the word (its replace returned, or the open
/// would not have come up), so a flip before the clamp explains no word the open left:
/// not the flip the clamp read (its write never landed, the 9 stayed), not a flip of the
/// clamp's own word made before it; and a clamp that is not to the HWM of a word above
/// it lends its word to no excuse.
#[test]
fn a_flip_before_the_opens_clamp_explains_no_word_it_left() {
    let persisted = |value| Alarm::FrontierPersisted { value };
    let cases: [(Vec<Step>, u64); 4] = [
        (
            vec![
                Ok(offset_flip(4, 9)),
                Err(clamp(9, 6)),
                Err(persisting(6)),
                Err(persisted(6)),
            ],
            9,
        ),
        (
            vec![
                Ok(offset_flip(4, 9)),
                Ok(offset_flip(6, 7)),
                Err(clamp(9, 6)),
                Err(persisting(6)),
                Err(persisted(6)),
            ],
            7,
        ),
        (
            vec![
                Ok(offset_flip(4, 9)),
                Err(clamp(9, 5)),
                Err(persisting(5)),
                Ok(offset_flip(5, 7)),
            ],
            7,
        ),
        (
            vec![Err(clamp(4, 6)), Err(persisting(6)), Ok(offset_flip(6, 7))],
            7,
        ),
    ];
    for (steps, left) in cases {
        assert_mentions(
            &open_story(&steps, left),
            &[&format!("found consumer.offset at 4 and left it at {left}")],
        );
    }
}

/// Two flips during one open compose (fresh quick seed 3968266141, helper-109): the
/// open read the word the restart found (4, at or below the HWM 6) and wrote nothing;
/// a flip then moved the 4 to 4 + 2^23 and a second that word to 4 + 2^23 + 2^30, the
/// word it left. Flips chain only through their words, in the order they landed.
#[test]
fn flips_during_the_open_chain() {
    let (a, b) = (4 | 1 << 23, 4 | 1 << 23 | 1 << 30);
    for (flips, excused) in [
        (vec![offset_flip(4, a), offset_flip(a, b)], true),
        // Out of order, or not through one word: no chain from 4 to the word left.
        (vec![offset_flip(a, b), offset_flip(4, a)], false),
        (vec![offset_flip(4, a), offset_flip(a + 1, b)], false),
        (vec![offset_flip(a, b)], false),
    ] {
        let mut r = reporting_start();
        r.frontier_seen(0, 0).loaded(0, 0);
        acked_4_durable_then_reopened(&mut r);
        for flip in &flips {
            r.fault(flip.clone(), Some(0));
        }
        r.with(|t, h| {
            h.frontier_opened(t, &tp(0), Some(4), b);
        });
        let report = r.report();
        let fired = messages_of(&report, CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains(&format!("found consumer.offset at 4 and left it at {b}")));
        assert_eq!(fired, !excused, "flips {flips:?}");
    }
}

/// With a clamp: flips before it chain from the word found to the word it read, flips
/// after it from the word it wrote (its replace returned) to the word left; never from
/// the word found past the clamp.
#[test]
fn flips_chain_to_the_opens_clamp_and_from_its_word() {
    let cases: [(Vec<Step>, u64, bool); 3] = [
        (
            vec![
                Ok(offset_flip(4, 5)),
                Ok(offset_flip(5, 13)),
                Err(clamp(13, 6)),
                Err(persisting(6)),
                Ok(offset_flip(6, 14)),
            ],
            14,
            true,
        ),
        (
            vec![
                Ok(offset_flip(4, 12)),
                Err(clamp(12, 6)),
                Err(persisting(6)),
                Ok(offset_flip(6, 7)),
                Ok(offset_flip(7, 15)),
            ],
            15,
            true,
        ),
        (
            vec![
                Ok(offset_flip(4, 9)),
                Err(clamp(9, 6)),
                Err(persisting(6)),
                Ok(offset_flip(4, 12)),
                Ok(offset_flip(12, 28)),
            ],
            28,
            false,
        ),
    ];
    for (steps, left, excused) in cases {
        let fired = open_story(&steps, left)
            .iter()
            .any(|m| m.contains(&format!("found consumer.offset at 4 and left it at {left}")));
        assert_eq!(fired, !excused, "{steps:?}");
    }
}

/// `frontier_durable`'s messages when orders/0's open (frontier 4 durable, HWM 6) takes
/// `steps` and comes up leaving the word at `left`.
fn open_story(steps: &[Step], left: u64) -> Vec<String> {
    let mut r = reporting_start();
    r.frontier_seen(0, 0).loaded(0, 0);
    acked_4_durable_then_reopened(&mut r);
    for step in steps {
        match step {
            Ok(fault) => r.fault(fault.clone(), Some(0)),
            Err(alarm) => r.alarm(Some(0), alarm.clone()),
        };
    }
    r.with(|t, h| {
        h.frontier_opened(t, &tp(0), Some(4), left);
    });
    messages_of(&r.report(), CheckerName::FrontierDurable)
}
