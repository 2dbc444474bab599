//! `alarms_explained`, rule 1's word: an open never issues an `hwm` word below the HWM
//! the disk it read gives (the persisted word, or a clamp's lower HWM). A word the
//! engine lowers itself would start every later crash's hidden tail lower, where the
//! duplicates its replay makes look like that crash's.

use super::*;

/// Ids 1-3 at 0-2, word 3, delivered; a power loss; the open reads `disk` (tail 3 or a
/// cut at 1) and issues the word `word` before its log opens at `hwm`.
fn open_writing(rule: OpenRule, tail: u64, word: u64) -> Run {
    let mut r = Run::new();
    r.produced(3).hwm(0, 3, 3, 3).delivered(3);
    if rule != OpenRule::Clean {
        r.fault(
            segment_flip(OffsetRange { start: 1, end: 3 }, Some(true)),
            Some(0),
        );
    }
    let bad = (rule != OpenRule::Clean).then_some(tail);
    r.crash(&[(0, 3, 3, 3)])
        .restart()
        .disk(0, rule, 3, tail, bad);
    r.with(|t, h| {
        h.hwm_write_issued(t, &tp(0), word);
    });
    r
}

fn word_messages(r: &Run) -> Vec<String> {
    messages_of(&r.report(), CheckerName::AlarmsExplained)
        .into_iter()
        .filter(|m| m.contains("hwm word"))
        .collect()
}

#[test]
fn an_open_that_writes_its_word_lower_than_it_read_is_caught() {
    assert!(word_messages(&open_writing(OpenRule::Clean, 3, 3)).is_empty());
    let m = word_messages(&open_writing(OpenRule::Clean, 3, 2));
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_mentions(&m, &["orders/0", "hwm word 2", "below the HWM 3"]);
}

#[test]
fn a_clamping_open_writes_the_clamped_hwm_and_no_lower() {
    // R1 at 1 below the word 3: the HWM the disk gives is 1.
    assert!(word_messages(&open_writing(OpenRule::TornTail, 1, 1)).is_empty());
    let m = word_messages(&open_writing(OpenRule::TornTail, 1, 0));
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_mentions(&m, &["hwm word 0", "below the HWM 1"]);
}

/// helper-76: only the views taken before the write are what the open read; one taken
/// after it (a flip landing later) does not lower the floor the write is held to.
#[test]
fn a_view_taken_after_the_write_does_not_excuse_it() {
    let mut r = open_writing(OpenRule::Clean, 3, 2);
    r.disk(0, OpenRule::Clean, 2, 3, None);
    let m = word_messages(&r);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_mentions(&m, &["hwm word 2", "below the HWM 3"]);
}

/// A write that falls below a word the engine issued earlier in its incarnation, at
/// any time (the world records it only then): the persisted word only rises.
#[test]
fn a_word_written_below_an_earlier_one_is_caught() {
    let mut r = open_writing(OpenRule::Clean, 3, 3);
    r.hwm(0, 5, 5, 5);
    assert!(word_messages(&r).is_empty());
    r.with(|t, h| {
        h.hwm_write_lowered(t, &tp(0), 2, 5);
    });
    let m = word_messages(&r);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_mentions(&m, &["hwm word 2 after it had written 5", "only rises"]);
}
