//! `retention_safe`: the reaper deletes only sealed segments whose latest commit is
//! `retention_ms` old, and the log start moves only to segment bases; `no_lost_ack`
//! forgives retention only inside the segments it deleted.

use super::*;

impl Run {
    /// Topic `orders` keeping segments for `retention_ms`, wall clock starting at 0.
    pub(super) fn with_retention(retention_ms: u64) -> Self {
        let mut r = Run::new();
        let topic = cafelog_sim::history::TopicSetup {
            name: "orders".into(),
            partitions: 2,
            delay_ms: 0,
            lease_ms: 30_000,
            retention_ms: Some(retention_ms),
            hwm_persist_ms: None,
            reaper_interval_ms: None,
        };
        r.h.run_started(0, 0, vec![topic], 0, None, false);
        r
    }

    /// Topic `orders` (see [`Run::with_retention`]) opened with segment 0 holding ids 1
    /// and 2 at offsets 0 and 1, and segment 2 holding id 3 at offset 2.
    pub(super) fn two_segments(retention_ms: u64) -> Self {
        let mut r = Run::with_retention(retention_ms);
        r.segment(0, true)
            .opened(0, 0, 0)
            .committed(1, 0)
            .committed(2, 1)
            .segment(2, true)
            .committed(3, 2);
        r
    }

    /// The engine created (`created`) or the reaper deleted the segment of orders/0
    /// named `base`. A deletion carries what the world would decode from the file: the
    /// last record acknowledged at each offset from `base` up to the next segment's.
    pub(super) fn segment(&mut self, base: u64, created: bool) -> &mut Self {
        let held = if created {
            Vec::new()
        } else {
            self.held_from(base)
        };
        self.with(|t, h| {
            if created {
                h.segment_created(t, &tp(0), base);
            } else {
                h.segment_deleted(t, &tp(0), base, held);
            }
        })
    }

    /// The reaper takes segment `base` of orders/0 out of the log (the engine's
    /// `log_start_moved` to the next segment's base) and unlinks its file.
    pub(super) fn reap(&mut self, base: u64) -> &mut Self {
        let to = self.next_base(base).unwrap_or(base + 1);
        self.move_log_start(base, to).segment(base, false)
    }

    /// The engine says a sweep took `[from, to)` of orders/0 out of the log.
    pub(super) fn move_log_start(&mut self, from: u64, to: u64) -> &mut Self {
        self.alarm(
            Some(0),
            Alarm::LogStartMoved {
                from,
                log_start: to,
            },
        )
    }

    /// The lowest base above `base` of a segment of orders/0 created so far.
    fn next_base(&self, base: u64) -> Option<u64> {
        use cafelog_sim::history::EventKind;
        self.h
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::SegmentCreated { tp: t, base: b } if *t == tp(0) && *b > base => {
                    Some(*b)
                }
                _ => None,
            })
            .min()
    }

    /// The records acknowledged so far on orders/0 in `[base, next base)`.
    fn held_from(&self, base: u64) -> Vec<HeldCopy> {
        use cafelog_sim::history::EventKind;
        let end = self.next_base(base).unwrap_or(u64::MAX);
        let mut held = std::collections::BTreeMap::new();
        for e in self.h.events() {
            if let EventKind::ProduceAck {
                id,
                tp: t,
                offset: Some(offset),
                committed_at_ms,
            } = &e.kind
                && *t == tp(0)
                && (base..end).contains(offset)
            {
                let copy = HeldCopy {
                    offset: *offset,
                    id: *id,
                    committed_at_ms: committed_at_ms.unwrap_or(0),
                };
                held.insert(*offset, copy);
            }
        }
        held.into_values().collect()
    }

    /// Id `id` at `offset` of orders/0, committed as it is acknowledged.
    pub(super) fn committed(&mut self, id: ProduceId, offset: u64) -> &mut Self {
        let commit = self.t + 15;
        self.produce(id, 0, offset, commit)
    }
}

/// Segments 0 (ids 1, 2 at offsets 0, 1, the second committed at 55) and 2 (id 3),
/// the open done; `wait` ms later, segment 0 is reaped and the log start moves to 2.
fn reaped_after(wait: u64) -> Run {
    let mut r = Run::two_segments(1_000);
    r.deliver(1, 0, 0, 35)
        .deliver(2, 0, 1, 55)
        .deliver(3, 0, 2, 85)
        .wait(wait)
        .reap(0)
        .with(|t, h| {
            h.log_start_observed(t, &tp(0), 2);
        });
    r
}

#[test]
fn retention_safe_fires_when_a_segment_is_reaped_before_its_last_write_aged() {
    let report = reaped_after(500).report();
    assert_mentions(
        &fires_only(&report, CheckerName::RetentionSafe),
        &[
            "segment 0 of orders/0 deleted by retention",
            "before its record at offset 1, committed at 55, was 1000 ms old",
        ],
    );
    let report = reaped_after(1_000).report();
    assert_clean(&report);
    assert_eq!(report.retention_safe.reaped, 1);
    assert_eq!(report.retention_safe.aged_checked, 1);
}

#[test]
fn the_active_segment_and_a_topic_without_retention_keep_their_data() {
    let mut r = Run::with_retention(1_000);
    r.segment(0, true)
        .opened(0, 0, 0)
        .committed(1, 0)
        .wait(2_000)
        .reap(0);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::RetentionSafe),
        &["while it was the active segment"],
    );
    let mut r = Run::with_setup(0, 0, 30_000);
    r.segment(0, true)
        .opened(0, 0, 0)
        .segment(2, true)
        .wait(2_000)
        .reap(0);
    assert_mentions(
        &messages_of(&r.report(), CheckerName::RetentionSafe),
        &["although its topic keeps every segment"],
    );
}

#[test]
fn an_unlink_before_the_open_finished_is_recoverys_and_a_log_start_is_a_base() {
    // Recovery removing segments past a cut is not the reaper.
    let mut r = Run::with_retention(1_000);
    r.segment(0, true)
        .segment(2, true)
        .segment(2, false)
        .opened(0, 0, 0);
    let report = r.report();
    assert!(messages_of(&report, CheckerName::RetentionSafe).is_empty());
    assert_eq!(report.retention_safe.reaped, 0);
    // A log start between segment bases.
    let mut r = reaped_after(1_000);
    r.with(|t, h| {
        h.log_start_observed(t, &tp(0), 3);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::RetentionSafe),
        &["log start of orders/0 reported as 3", "no segment's base"],
    );
}

#[test]
fn the_reaper_unlinks_only_what_a_move_took_out_and_a_second_unlink_reaps_nothing() {
    // Segment 0 unlinked with no move of the log start: readers could still serve it.
    let mut r = Run::two_segments(1_000);
    r.deliver(1, 0, 0, 35)
        .deliver(2, 0, 1, 55)
        .deliver(3, 0, 2, 85)
        .wait(1_000)
        .segment(0, false);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::RetentionSafe),
        &[
            "segment 0 of orders/0 deleted by retention",
            "no move of the log start took it out of the log",
        ],
    );
    // A sweep dropped after its first unlink finishes the list at the next sweep: the
    // file is unlinked twice, reaped once.
    let mut r = reaped_after(1_000);
    r.wait(50).segment(0, false);
    let report = r.report();
    assert_clean(&report);
    assert_eq!(report.retention_safe.reaped, 1);
}

#[test]
fn a_receive_asked_after_a_move_gets_nothing_below_the_new_log_start() {
    // Segment 0 reaped (log start 2); offset 1 delivered again afterwards, to a receive
    // asked `asked` ms after the move.
    let run = |asked: u64| {
        use cafelog_sim::history::EventKind;
        let mut r = reaped_after(1_000);
        let moved_at =
            r.h.events()
                .iter()
                .find(|e| {
                    matches!(
                        e.kind,
                        EventKind::EngineAlarm {
                            alarm: Alarm::LogStartMoved { .. },
                            ..
                        }
                    )
                })
                .map(|e| e.at_ms)
                .unwrap();
        r.wait(20).deliver(2, 0, 1, 55);
        r.h.asked_at(moved_at + asked);
        r.report()
    };
    assert_mentions(
        &fires_only(&run(10), CheckerName::RetentionSafe),
        &[
            "orders/0 offset 1 delivered to a receive asked at",
            "after retention moved the log start to 2",
        ],
    );
    // Asked in the move's ms, the receive may have read before it.
    assert!(messages_of(&run(0), CheckerName::RetentionSafe).is_empty());
    // A later move (of nothing below offset 1) does not hide the earlier one, and a
    // delivery the consumer never claimed counts too.
    let mut r = reaped_after(1_000);
    r.wait(20).segment(3, true).wait(20).move_log_start(2, 3);
    let asked = r.now() - 30;
    r.with(|t, h| {
        h.deliveries_unclaimed(t, &tp(0), vec![1], vec![Some(2)], asked);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::RetentionSafe),
        &[
            "orders/0 offset 1 delivered to a receive asked at",
            "log start to 2",
        ],
    );
}

/// How far a reap of segment 0 got before a crash, in
/// [`a_reap_forgives_a_loss_until_a_restart_finds_its_file_again`].
#[derive(Clone, Copy)]
enum Reap {
    /// The move alone (a sweep dropped before its unlink), the run ends there.
    MovedOnly,
    /// The move, then a crash; the restart lists segment 0 again.
    MovedThenCrash,
    /// Move and unlink, then a crash before the directory fsync; listed again.
    UnlinkedThenCrash,
    /// As `MovedThenCrash`, and the next incarnation reaps it again.
    ReapedAgain,
}

#[test]
fn a_reap_forgives_a_loss_until_a_restart_finds_its_file_again() {
    // Id 2 at offset 1 is never delivered; a sweep moved the log start past it.
    let run = |how: Reap| {
        let mut r = Run::two_segments(1_000);
        r.deliver(1, 0, 0, 35).deliver(3, 0, 2, 85).wait(1_000);
        match how {
            Reap::UnlinkedThenCrash => r.reap(0),
            _ => r.move_log_start(0, 2),
        };
        if !matches!(how, Reap::MovedOnly) {
            r.crash(&[(0, 3, 3, 3)])
                .restart()
                .with(|t, h| {
                    h.segments_listed(t, &tp(0), vec![0, 2]);
                })
                .opened(0, 3, 3);
        }
        if matches!(how, Reap::ReapedAgain) {
            r.wait(100).reap(0);
        }
        r.report()
    };
    for how in [Reap::MovedOnly, Reap::ReapedAgain] {
        let report = run(how);
        assert!(messages_of(&report, CheckerName::NoLostAck).is_empty());
        assert!(report.no_lost_ack.excuse_of(2).is_some());
    }
    // The file is back, and the record with it: no excuse.
    for how in [Reap::MovedThenCrash, Reap::UnlinkedThenCrash] {
        assert_mentions(
            &messages_of(&run(how), CheckerName::NoLostAck),
            &["orders/0", "offset 1"],
        );
    }
}

#[test]
fn a_frontier_passes_a_reap_a_restart_undid_only_as_far_as_it_was_written_while_gone() {
    // Offset 1 (id 2) never acked; a sweep moved the log start past it and was dropped,
    // then a crash brought segment 0 back. The next incarnation writes frontier 2.
    let run = |written_while_gone: bool| {
        let mut r = Run::two_segments(1_000);
        r.deliver(1, 0, 0, 35)
            .consume(0, 0)
            .wait(1_000)
            .move_log_start(0, 2);
        if written_while_gone {
            r.with(|t, h| {
                h.frontier_written(t, &tp(0), 2);
            });
        }
        r.crash(&[(0, 3, 3, 3)])
            .restart()
            .with(|t, h| {
                h.segments_listed(t, &tp(0), vec![0, 2]);
            })
            .opened(0, 3, 3)
            .with(|t, h| {
                h.frontier_written(t, &tp(0), 2);
            });
        r.report()
    };
    assert!(messages_of(&run(true), CheckerName::FrontierSafe).is_empty());
    assert_mentions(
        &messages_of(&run(false), CheckerName::FrontierSafe),
        &["written as 2", "inc 1", "passes unacknowledged offset 1"],
    );
}

#[test]
fn the_log_start_account_moves_in_step_and_leaves_no_file_below_it() {
    // Rule 6: a move from 1 when the log started at 0.
    let mut r = Run::two_segments(1_000);
    r.deliver(1, 0, 0, 35)
        .deliver(2, 0, 1, 55)
        .deliver(3, 0, 2, 85)
        .wait(1_000)
        .move_log_start(1, 2)
        .segment(0, false);
    assert_mentions(
        &fires_only(&r.report(), CheckerName::RetentionSafe),
        &["moved the log start of orders/0 from 1", "it stood at 0"],
    );
    // Rule 7: the engine reports durable log start 2 while segment 0 was never
    // unlinked (a sweep that forgot a dropped sweep's pending unlinks).
    let run = |unlinked: bool| {
        let mut r = Run::two_segments(1_000);
        r.deliver(1, 0, 0, 35)
            .deliver(2, 0, 1, 55)
            .deliver(3, 0, 2, 85)
            .wait(1_000)
            .move_log_start(0, 2);
        if unlinked {
            r.segment(0, false);
        }
        r.with(|t, h| {
            h.log_start_observed(t, &tp(0), 2);
        });
        r.report()
    };
    assert_clean(&run(true));
    assert_mentions(
        &fires_only(&run(false), CheckerName::RetentionSafe),
        &[
            "log start of orders/0 reported as 2",
            "segment file 0 below it still exists",
        ],
    );
}

#[test]
fn no_lost_ack_forgives_retention_only_inside_a_reaped_segment() {
    // Id 2 at offset 1 is never delivered: inside the reaped segment it is retention's;
    // at a log start the engine reports without deleting anything, it is lost.
    let run = |reap: bool| {
        let mut r = Run::two_segments(1_000);
        r.deliver(1, 0, 0, 35).deliver(3, 0, 2, 85).wait(1_000);
        if reap {
            r.reap(0);
        }
        r.with(|t, h| {
            h.log_start_observed(t, &tp(0), 2);
        });
        r.report()
    };
    let report = run(true);
    assert!(messages_of(&report, CheckerName::NoLostAck).is_empty());
    assert_eq!(report.no_lost_ack.excused.len(), 1);
    assert_mentions(
        &messages_of(&run(false), CheckerName::NoLostAck),
        &["orders/0", "offset 1"],
    );
}

#[test]
fn a_cut_between_the_ack_and_the_reap_leaves_the_loss_unexcused() {
    // Id 2 at offset 1 was cut away before its segment aged out: the file the reaper
    // deleted no longer held it (the world's decode at the unlink has id 1 alone).
    let mut r = Run::with_retention(1_000);
    r.segment(0, true)
        .opened(0, 0, 0)
        .committed(1, 0)
        .committed(2, 1)
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 100,
                offset: 1,
                bytes: 10,
            },
        )
        .segment(2, true)
        .committed(3, 2)
        .deliver(1, 0, 0, 35)
        .deliver(3, 0, 2, 95)
        .wait(1_000)
        .with(|t, h| {
            let held = vec![HeldCopy {
                offset: 0,
                id: 1,
                committed_at_ms: 15,
            }];
            h.segment_deleted(t, &tp(0), 0, held);
            h.log_start_observed(t, &tp(0), 2);
        });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

#[test]
fn an_open_that_trusted_an_hwm_at_the_acked_offset_leaves_the_loss_unexcused() {
    // Id 2, acknowledged at offset 1, persisted HWM 3; a crash, and the open trusts
    // `trusted` with no cut or clamp alarm. At 1 the offset is past what the engine
    // trusted, and it commits id 3 there: the file the reaper deleted no longer held id
    // 2, and only an open that kept the offset below its HWM leaves it the record's.
    let run = |trusted: u64| {
        let mut r = Run::with_retention(1_000);
        r.segment(0, true)
            .opened(0, 0, 0)
            .committed(1, 0)
            .committed(2, 1)
            .hwm(0, 2, 2, 2)
            .crash(&[(0, 2, 2, 2)])
            .restart()
            .opened(0, trusted, trusted);
        if trusted == 1 {
            r.committed(3, 1);
        }
        r.segment(2, true)
            .committed(4, 2)
            .hwm(0, 3, 3, 3)
            .deliver(1, 0, 0, 35)
            .deliver(4, 0, 2, 95)
            .wait(1_000)
            .reap(0)
            .with(|t, h| {
                h.log_start_observed(t, &tp(0), 2);
            });
        r.report()
    };
    assert!(messages_of(&run(2), CheckerName::NoLostAck).is_empty());
    assert_mentions(
        &messages_of(&run(1), CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

#[test]
fn an_open_that_hid_the_acked_offset_in_its_tail_keeps_the_retention_excuse() {
    // Id 2, acknowledged at offset 1; a crash with the persisted HWM at 1 and the
    // durable tail at `tail`. With the tail at 2 the open hides offset 1 and commits id
    // 3 past it, at 2 (storage-engine.md: "new commits append past the hidden tail"), so
    // the reaped file still held id 2 at 1, shown once the HWM passed it. With the tail
    // at 1 the offset is gone and id 3 takes it: the reap excuses nothing. The world's
    // decode of the file at the unlink names no copy (as when damage stops it short),
    // so only the acknowledged offset can excuse; when `other` it names id 3 at the
    // acknowledged offset (an open that reported the tail and wrote there anyway).
    let run_with = |tail: u64, other: bool| {
        let mut r = Run::with_retention(1_000);
        r.segment(0, true)
            .opened(0, 0, 0)
            .committed(1, 0)
            .committed(2, 1)
            .hwm(0, 2, 1, 2)
            .crash(&[(0, 1, tail, 2)])
            .restart()
            .opened(0, 1, tail)
            .committed(3, tail)
            .hwm(0, tail + 1, tail + 1, tail + 1)
            .segment(3, true)
            .committed(4, 3)
            .hwm(0, 4, 4, 4)
            .deliver(1, 0, 0, 35)
            .deliver(4, 0, 3, 95)
            .wait(1_000)
            .move_log_start(0, 3)
            .with(move |t, h| {
                let held = if other {
                    vec![HeldCopy {
                        offset: 1,
                        id: 3,
                        committed_at_ms: 0,
                    }]
                } else {
                    Vec::new()
                };
                h.segment_deleted(t, &tp(0), 0, held);
                h.log_start_observed(t, &tp(0), 3);
            });
        r.report()
    };
    let run = |tail: u64| run_with(tail, false);
    let kept = run(2);
    assert!(messages_of(&kept, CheckerName::NoLostAck).is_empty());
    assert_mentions(
        &[kept
            .no_lost_ack
            .excuse_of(2)
            .expect("excused")
            .covers
            .clone()],
        &["offsets [0, 3) in a reaped segment"],
    );
    assert_mentions(
        &messages_of(&run(1), CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    assert_mentions(
        &messages_of(&run_with(2, true), CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

/// Id 2, acknowledged at offset 1, cut away by a torn tail there, its copy re-committed
/// at offset 3 in segment 0 and the HWM shown at `shown`; segment 0 (held: ids 1, 3, 2
/// at offsets 0, 1, 3 when `copy`) reaped a second later.
fn copy_reaped(copy: bool, shown: u64) -> CheckReport {
    copy_reaped_after(copy, shown, |_| {})
}

/// [`copy_reaped`], with `damage` run after the deliveries, before the reap.
fn copy_reaped_after(copy: bool, shown: u64, damage: impl FnOnce(&mut Run)) -> CheckReport {
    let mut r = Run::with_retention(1_000);
    r.segment(0, true)
        .opened(0, 0, 0)
        .committed(1, 0)
        .committed(2, 1)
        .alarm(
            Some(0),
            Alarm::TornTail {
                segment: "00000000000000000000.log".into(),
                position: 100,
                offset: 1,
                bytes: 10,
            },
        )
        .committed(3, 1)
        .hwm(0, shown, 0, 4)
        .segment(4, true)
        .deliver(1, 0, 0, 35)
        .deliver(3, 0, 1, 95);
    damage(&mut r);
    r.wait(1_000);
    let mut held = vec![
        HeldCopy {
            offset: 0,
            id: 1,
            committed_at_ms: 35,
        },
        HeldCopy {
            offset: 1,
            id: 3,
            committed_at_ms: 95,
        },
    ];
    if copy {
        held.push(HeldCopy {
            offset: 3,
            id: 2,
            committed_at_ms: 120,
        });
    }
    r.with(|t, h| {
        h.segment_deleted(t, &tp(0), 0, held);
        h.log_start_observed(t, &tp(0), 4);
    });
    r.report()
}

#[test]
fn a_visible_copy_in_a_reaped_segment_is_what_retention_excuses_after_a_cut() {
    // The copy, below the HWM the engine showed: consumers could have read it.
    let report = copy_reaped(true, 4);
    assert!(messages_of(&report, CheckerName::NoLostAck).is_empty());
    assert_mentions(
        &[report.no_lost_ack.excused[0].excuse.covers.clone()],
        &["copy at offset 3 in reaped segment 0"],
    );
    // A copy in the hidden tail (the HWM never reached it), or no copy at all: lost.
    for report in [copy_reaped(true, 3), copy_reaped(false, 4)] {
        assert_mentions(
            &messages_of(&report, CheckerName::NoLostAck),
            &["id 2 at offset 1"],
        );
    }
}

/// A flip on segment `file` that named id 2's copy at offset 3 (committed at
/// `committed_at_ms`) by identity, then `after` (an alarm) when given.
fn flipped_copy(
    file: &'static str,
    committed_at_ms: u64,
    after: Option<Alarm>,
) -> impl FnOnce(&mut Run) {
    move |r: &mut Run| {
        r.with(|t, h| {
            let flip = FaultKind::BitFlip {
                file: FileKind::Segment,
                offsets: Some(OffsetRange { start: 3, end: 4 }),
                below_hwm: Some(true),
            };
            let index = h.len();
            h.fault(t, flip, Some(&tp(0)), Some(file));
            let copy = HeldCopy {
                offset: 3,
                id: 2,
                committed_at_ms,
            };
            h.damage_held(t, index, &tp(0), vec![copy]);
        });
        if let Some(alarm) = after {
            r.alarm(Some(0), alarm);
        }
    }
}

const SEGMENT_0: &str = "/data/topics/orders/p00000/00000000000000000000.log";

#[test]
fn a_damage_named_copy_counts_only_without_a_cut_or_clamp_since_and_ages_its_file() {
    // A cut or a clamp at or below the copy between the damage and the reap may have
    // taken it before retention did: the loss is not retention's.
    let cut = Alarm::TornTail {
        segment: "00000000000000000000.log".into(),
        position: 300,
        offset: 3,
        bytes: 10,
    };
    let clamp = Alarm::Clamp {
        persisted_hwm: 4,
        hwm: 3,
        lost: 1,
    };
    // (The clamp is an excuse of its own: it names itself, not the reap.)
    for alarm in [cut, clamp] {
        let report = copy_reaped_after(false, 4, flipped_copy(SEGMENT_0, 120, Some(alarm)));
        assert!(
            report
                .no_lost_ack
                .excused
                .iter()
                .all(|e| !e.excuse.covers.contains("damage at rest hid")),
            "{:#?}",
            report.no_lost_ack.excused
        );
    }
    // The named copy ages the file too: committed at 900, it was not 1,000 ms old at a
    // reap a little past t=1,100.
    let report = copy_reaped_after(false, 4, flipped_copy(SEGMENT_0, 900, None));
    assert_mentions(
        &messages_of(&report, CheckerName::RetentionSafe),
        &[
            "segment 0 of orders/0 deleted by retention",
            "offset 3, committed at 900",
        ],
    );
    // Unless a cut at or below it took it before the reap: the engine ages the file by
    // what the cut left (helper-93).
    let cut = Alarm::Hole {
        segment: "00000000000000000000.log".into(),
        position: 300,
        offset: 3,
        bytes: 10,
    };
    let report = copy_reaped_after(false, 4, flipped_copy(SEGMENT_0, 900, Some(cut)));
    let messages = messages_of(&report, CheckerName::RetentionSafe);
    assert!(
        messages.iter().all(|m| !m.contains("committed at 900")),
        "{messages:#?}"
    );
}

#[test]
fn a_copy_damage_hid_from_the_unlinks_decode_is_retentions_only_in_that_file() {
    // A flip on segment `file` named id 2's copy at offset 3 by identity; the decode at
    // the unlink of segment 0 could not read it.
    let flipped = |file: &'static str| flipped_copy(file, 120, None);
    let report = copy_reaped_after(
        false,
        4,
        flipped("/data/topics/orders/p00000/00000000000000000000.log"),
    );
    assert!(messages_of(&report, CheckerName::NoLostAck).is_empty());
    assert_mentions(
        &[report.no_lost_ack.excused[0].excuse.covers.clone()],
        &["copy at offset 3 in reaped segment 0", "damage at rest hid"],
    );
    // The damage named a copy in another file: the reap of segment 0 did not take it.
    let report = copy_reaped_after(
        false,
        4,
        flipped("/data/topics/orders/p00000/00000000000000000004.log"),
    );
    assert_mentions(
        &messages_of(&report, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    // Above the HWM the engine showed: consumers could not have read it.
    let report = copy_reaped_after(
        false,
        3,
        flipped("/data/topics/orders/p00000/00000000000000000000.log"),
    );
    assert_mentions(
        &messages_of(&report, CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
}

#[test]
fn retention_safe_ages_a_segment_by_the_last_record_its_file_held() {
    // No commit in segment 0 was ever observed; the file's last record was committed
    // at 600, so a deletion at 1,250 came before it was 1,000 ms old.
    let run = |last_commit: u64| {
        let mut r = Run::with_retention(1_000);
        r.segment(0, true)
            .opened(0, 0, 0)
            .segment(2, true)
            .wait(1_200)
            .move_log_start(0, 2);
        r.with(|t, h| {
            let held = (0..2)
                .map(|o| HeldCopy {
                    offset: o,
                    id: 10 + o,
                    committed_at_ms: last_commit - 10 * (1 - o),
                })
                .collect();
            h.segment_deleted(t, &tp(0), 0, held);
        });
        r.report()
    };
    assert_mentions(
        &fires_only(&run(600), CheckerName::RetentionSafe),
        &["before its record at offset 1, committed at 600, was 1000 ms old"],
    );
    let report = run(200);
    assert!(messages_of(&report, CheckerName::RetentionSafe).is_empty());
    assert_eq!(report.retention_safe.aged_checked, 1);
}

#[test]
fn a_record_the_engine_never_showed_again_is_not_retentions_when_its_segment_goes() {
    // Id 2, acknowledged at offset 1, lies in the hidden tail after a crash (persisted
    // HWM 1); a replay that never re-commits it loses it, whatever the reaper deletes
    // later: the file held it only above the HWM the engine showed.
    let run = |shown_again: bool| {
        let mut r = Run::two_segments(10);
        r.deliver(1, 0, 0, 15)
            .crash(&[(0, 1, 3, 3)])
            .restart()
            .opened(0, 1, 3);
        if shown_again {
            r.hwm(0, 3, 3, 3);
        }
        r.wait(100).reap(0).with(|t, h| {
            h.log_start_observed(t, &tp(0), 2);
        });
        r.report()
    };
    assert_mentions(
        &messages_of(&run(false), CheckerName::NoLostAck),
        &["id 2 at offset 1"],
    );
    // Shown again (the HWM moved over it), it was the reaper's to delete.
    assert!(run(true).no_lost_ack.excuse_of(2).is_some());
}

/// helper-104 F3, helper-112: an open that refused a partition (R3) changes nothing
/// under its directory; the world records the first change it issued there
/// (`RefusedPartitionChanged`, whose record `refused_changes.rs` tests), an unlink of a
/// segment or any other, and rule 8 flags each.
#[test]
fn an_open_that_refused_a_partition_changes_nothing_under_it() {
    const SEGMENT_2: &str = "/data/topics/orders/p00000/00000000000000000002.log";
    for change in [None, Some(FileChange::Unlink), Some(FileChange::SetLen)] {
        let mut r = Run::two_segments(1_000);
        r.crash(&[(0, 3, 3, 3)]).restart();
        r.alarm(Some(0), refused_alarm(200));
        if let Some(change) = change {
            r.with(|t, h| {
                h.refused_partition_changed(t, &tp(0), SEGMENT_2, change, t);
            });
        }
        let messages = messages_of(&r.report(), CheckerName::RetentionSafe);
        let fired: Vec<_> = messages
            .iter()
            .filter(|m| m.contains("had to refuse) orders/0"))
            .collect();
        match change {
            Some(change) => assert_mentions(&messages, &[&format!("{change} of {SEGMENT_2}")]),
            None => assert!(fired.is_empty(), "{fired:?}"),
        }
    }
    // A topic refused whole: a change of its own files (helper-114 M1).
    let mut r = Run::two_segments(1_000);
    r.crash(&[(0, 3, 3, 3)]).restart().with(|t, h| {
        let conf = "/data/topics/orders/topic.conf";
        h.refused_topic_changed(t, "orders", conf, FileChange::Rename, t);
    });
    assert_mentions(
        &messages_of(&r.report(), CheckerName::RetentionSafe),
        &["rename of /data/topics/orders/topic.conf", "topic orders"],
    );
}
