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

/// One step of an open's story: a flip of the word during it, as the page cache took it
/// (the world's `word_flipped`: from, to) through `consumer.offset` or its temp file
/// (`TmpFlip`), a flip only the platter took, an alarm the open raised, or its replace of
/// the word writing its temp file (`Written`) and returning (`Replaced`: both). A flip
/// after the write hits the file it wrote.
#[derive(Clone, Debug)]
enum Step {
    Flip(u64, u64),
    TmpFlip(u64, u64),
    PlatterFlip(u64, u64),
    Raise(Alarm),
    Written(u64),
    Replaced(u64),
}
use Step::{Flip, PlatterFlip, Raise, Replaced, TmpFlip, Written};

/// The open's clamp of `read` to `to`, as the engine makes it: the account, the replace
/// begun, its write and return.
fn clamped(read: u64, to: u64) -> [Step; 3] {
    [Raise(clamp(read, to)), Raise(persisting(to)), Replaced(to)]
}

fn persisted(value: u64) -> Alarm {
    Alarm::FrontierPersisted { value }
}

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
/// that did not find the clamp's word does not.
#[test]
fn a_flip_after_the_opens_clamp_excuses_the_word_it_left() {
    // A flip 0 -> 7 made 7 but moved no word the open wrote (helper-103: an open
    // clamping to 0, then a flip of that 0).
    for (flip, excused) in [(Flip(6, 7), true), (Flip(7, 8), false), (Flip(0, 7), false)] {
        let steps = [clamped(9, 6).as_slice(), std::slice::from_ref(&flip)].concat();
        assert_eq!(left_excused(9, &steps, 7), excused, "{flip:?}");
    }
}

#[test]
fn only_a_fault_on_the_word_while_the_open_ran_excuses_what_it_left() {
    for during_open in [true, false] {
        let mut r = Run::new();
        r.produced(6).hwm(0, 6, 6, 6);
        if !during_open {
            word_flip(&mut r, WORD, (4, 2), false);
        }
        r.crash(&[(0, 6, 6, 6)]).restart().open_clean(0, 6, 6);
        if during_open {
            word_flip(&mut r, WORD, (4, 2), false);
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

/// A flip during the open, after it read the word it kept (4, at or below the HWM 6),
/// excuses the word it made (9, above the HWM: the open had read the 4); an open that
/// found 9 and kept a word the flips made of it never read one it could keep.
#[test]
fn a_flip_after_the_open_read_its_word_excuses_the_word_it_made() {
    for (found, flip, left, excused) in [
        (4, Flip(4, 9), 9, true),
        (4, Flip(4, 5), 5, true),
        (9, Flip(9, 13), 13, false),
    ] {
        assert_eq!(
            left_excused(found, std::slice::from_ref(&flip), left),
            excused,
            "found {found}, {flip:?}"
        );
    }
}

/// Two flips during one open (fresh default seed 3908571737): the first moved the word
/// the restart found (4) to 9 before the clamp read it, the clamp wrote the HWM 6, and
/// the second moved that 6 to 7. The second flip excuses the 7 only when the first
/// explains the word the clamp read.
#[test]
fn a_flip_of_the_word_a_clamp_of_a_flip_wrote_excuses_the_word_it_left() {
    for (first, second, excused) in [
        (Some(Flip(4, 9)), Flip(6, 7), true),
        (None, Flip(6, 7), false),
        (Some(Flip(4, 10)), Flip(6, 7), false),
        (Some(Flip(4, 9)), Flip(7, 8), false),
    ] {
        let mut steps: Vec<Step> = first.iter().cloned().collect();
        steps.extend(clamped(9, 6));
        steps.push(second.clone());
        assert_eq!(
            left_excused(4, &steps, 7),
            excused,
            "first {first:?}, second {second:?}"
        );
    }
}

/// helper-106: the open's clamp replaced the word (its replace returned, or the open
/// would not have come up), so a flip before the clamp explains no word the open left:
/// not the flip the clamp read (its write never landed, the 9 stayed), not a flip of the
/// clamp's own word made before it; and a clamp that is not to the HWM of a word above
/// it lends its word to no excuse.
#[test]
fn a_flip_before_the_opens_clamp_explains_no_word_it_left() {
    let cases: [(Vec<Step>, u64); 4] = [
        ([&[Flip(4, 9)], clamped(9, 6).as_slice()].concat(), 9),
        (
            [&[Flip(4, 9), Flip(6, 7)], clamped(9, 6).as_slice()].concat(),
            7,
        ),
        (
            [&[Flip(4, 9)], clamped(9, 5).as_slice(), &[Flip(5, 7)]].concat(),
            7,
        ),
        ([clamped(4, 6).as_slice(), &[Flip(6, 7)]].concat(), 7),
    ];
    for (steps, left) in cases {
        assert_mentions(
            &open_story(4, &steps, left),
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
        (vec![Flip(4, a), Flip(a, b)], true),
        // Out of order, or not through one word: no chain from 4 to the word left.
        (vec![Flip(a, b), Flip(4, a)], false),
        (vec![Flip(4, a), Flip(a + 1, b)], false),
        (vec![Flip(a, b)], false),
        // A move runs one way: the flip that made `a` of `b` did not make `b` of `a`.
        (vec![Flip(4, a), Flip(b, a)], false),
    ] {
        assert_eq!(left_excused(4, &flips, b), excused, "flips {flips:?}");
    }
}

/// With a clamp: flips before it chain from the word found through the word it read,
/// flips after it from the word it wrote (its replace returned) to the word left; never
/// from the word found past the clamp.
#[test]
fn flips_chain_to_the_opens_clamp_and_from_its_word() {
    let story = |before: &[Step], read: u64, after: &[Step]| {
        [before, clamped(read, 6).as_slice(), after].concat()
    };
    let cases: [(Vec<Step>, u64, bool); 4] = [
        (
            story(&[Flip(4, 5), Flip(5, 13)], 13, &[Flip(6, 14)]),
            14,
            true,
        ),
        (
            story(&[Flip(4, 12)], 12, &[Flip(6, 7), Flip(7, 15)]),
            15,
            true,
        ),
        (
            story(&[Flip(4, 9)], 9, &[Flip(4, 12), Flip(12, 28)]),
            28,
            false,
        ),
        // helper-110's race: the clamp read 9, a flip moved that 9 before its alarm,
        // its rename overwrote both; a flip then moved its 6.
        (story(&[Flip(4, 9), Flip(9, 8)], 9, &[Flip(6, 7)]), 7, true),
    ];
    for (steps, left, excused) in cases {
        assert_eq!(left_excused(4, &steps, left), excused, "{steps:?}");
    }
}

/// The clamp writes its word to the temp file and renames it in (helper-111): a flip of
/// the temp file once the clamp's write returned moved the word the open left, before
/// the rename as after it; a flip of a temp file a crash left, before that write, moved
/// nothing the open read, nor did the old word's flips between the clamp and the
/// replace's return (the rename discards that file).
#[test]
fn a_flip_of_the_clamps_temp_file_excuses_the_word_it_left() {
    let (persisting, replaced) = (Raise(persisting(6)), Replaced(6));
    let clamp = Raise(clamp(9, 6));
    for (steps, left, excused) in [
        (
            vec![
                clamp.clone(),
                persisting.clone(),
                TmpFlip(6, 7),
                replaced.clone(),
            ],
            7,
            false,
        ),
        (
            vec![
                clamp.clone(),
                persisting.clone(),
                replaced.clone(),
                TmpFlip(6, 7),
            ],
            7,
            true,
        ),
        (vec![TmpFlip(4, 5)], 5, false),
        // The old file's flips: 9 moved to the HWM 6, then that 6 to 14, the rename still
        // to come.
        (
            vec![
                clamp.clone(),
                persisting.clone(),
                Flip(9, 6),
                Flip(6, 14),
                replaced.clone(),
            ],
            14,
            false,
        ),
        (
            vec![clamp.clone(), persisting.clone(), replaced, Flip(6, 14)],
            14,
            true,
        ),
        // helper-112: the clamp's file, renamed over the word and made durable by the
        // directory's fsync, flipped before that fsync returned.
        (
            vec![
                clamp,
                persisting,
                Written(6),
                Flip(6, 7),
                Raise(persisted(6)),
            ],
            7,
            true,
        ),
    ] {
        assert_eq!(left_excused(9, &steps, left), excused, "{steps:?}");
    }
}

/// helper-111: the open reads the word once every log is open, after its HWM account; a
/// flip before that account moved the word before the open read it. An open that found
/// 4 (at or below the HWM 6), whose word a flip moved to 9 before its account, owed a
/// clamp of the 9; one whose word moved after the account had read and kept the 4.
#[test]
fn the_open_reads_its_word_after_its_hwm_account() {
    for before_account in [true, false] {
        let mut r = reporting_start();
        r.frontier_seen(0, 0)
            .loaded(0, 0)
            .produced(6)
            .hwm(0, 6, 6, 6);
        for offset in 0..6 {
            r.deliver(offset + 1, 0, offset, 1_000 + offset)
                .consume(0, offset);
        }
        r.replaced(4).crash(&[(0, 6, 6, 6)]).restart();
        if before_account {
            word_flip(&mut r, WORD, (4, 9), false);
        }
        r.open_clean(0, 6, 6);
        if !before_account {
            word_flip(&mut r, WORD, (4, 9), false);
        }
        r.with(|t, h| {
            h.frontier_opened(t, &tp(0), Some(4), 9);
        });
        let fired = messages_of(&r.report(), CheckerName::FrontierDurable)
            .iter()
            .any(|m| m.contains("found consumer.offset at 4 and left it at 9"));
        assert_eq!(
            fired, before_account,
            "before the account: {before_account}"
        );
    }
}

/// helper-110: a flip excuses only the move the page cache made. One only the platter
/// took (a pending write masked the byte, or no name shows the inode it hit: the world
/// then records no move) moved nothing the open read; a flip whose words the world could
/// not read excuses no word; a clamp account lends its read word only to a clamp.
#[test]
fn a_flip_excuses_only_the_move_the_open_could_read() {
    // The platter's move alone: the open after a process crash rolled back to it.
    assert!(!left_excused(4, &[PlatterFlip(4, 5)], 5));
    // No clamp reported, the word found flipped to 9 above the HWM, the HWM left
    // (helper-110 H5); a clamp account, then the found word's flip after it (H4).
    assert!(!left_excused(4, &[Flip(4, 9)], 6));
    assert!(!left_excused(
        9,
        &[clamped(9, 6).as_slice(), &[Flip(9, 11)]].concat(),
        11
    ));
    // A flip of unknown words during the open (H6).
    let mut r = reporting_start();
    r.frontier_seen(0, 0).loaded(0, 0);
    acked_4_durable_then_reopened(&mut r).fault(
        FaultKind::BitFlip {
            file: FileKind::ConsumerOffset,
            offsets: None,
            below_hwm: None,
        },
        Some(0),
    );
    r.with(|t, h| {
        h.frontier_opened(t, &tp(0), Some(4), 5);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::FrontierDurable),
        &["found consumer.offset at 4 and left it at 5"],
    );
}

const WORD: &str = "consumer.offset";

/// A flip of orders/0's word file `name` (its durable name and the name a read sees it
/// through) from `from` to `to`, of the file the engine last wrote the frontier to when
/// `written`: the fault (its reach the two words) and the world's reading of the move,
/// at one instant.
fn word_flip(r: &mut Run, name: &str, (from, to): (u64, u64), written: bool) {
    r.with(|t, h| {
        let path = format!("/data/orders/0/{name}");
        h.fault(
            t,
            offset_flip(from.min(to), from.max(to)),
            Some(&tp(0)),
            Some(&path),
        );
        let fault = h.len() - 1;
        h.word_flipped(t, fault, name, (from, to), written);
    });
}

/// Whether `frontier_durable` excused the word `left` the open of [`open_story`] left.
fn left_excused(found: u64, steps: &[Step], left: u64) -> bool {
    let says = format!("found consumer.offset at {found} and left it at {left}");
    !open_story(found, steps, left)
        .iter()
        .any(|m| m.contains(&says))
}

/// `frontier_durable`'s messages when orders/0's open (frontier 4 durable, HWM 6; the
/// restart found `found`) takes `steps` and comes up leaving the word at `left`.
fn open_story(found: u64, steps: &[Step], left: u64) -> Vec<String> {
    let mut r = reporting_start();
    r.frontier_seen(0, 0).loaded(0, 0);
    acked_4_durable_then_reopened(&mut r);
    let mut written = false;
    for step in steps {
        match step {
            Flip(from, to) => word_flip(&mut r, WORD, (*from, *to), written),
            TmpFlip(from, to) => word_flip(&mut r, "consumer.offset.tmp", (*from, *to), written),
            PlatterFlip(from, to) => {
                r.with(|t, h| {
                    h.fault(
                        t,
                        offset_flip(*from.min(to), *from.max(to)),
                        Some(&tp(0)),
                        None,
                    );
                    let fault = h.len() - 1;
                    h.flip_missed_cache(t, fault);
                });
            }
            Raise(alarm) => {
                r.alarm(Some(0), alarm.clone());
            }
            Written(value) => {
                r.frontier_written(0, *value);
                written = true;
            }
            Replaced(value) => {
                r.frontier_written(0, *value)
                    .alarm(Some(0), Alarm::FrontierPersisted { value: *value });
                written = true;
            }
        }
    }
    r.with(|t, h| {
        h.frontier_opened(t, &tp(0), Some(found), left);
    });
    messages_of(&r.report(), CheckerName::FrontierDurable)
}
