//! The excuse rows for a copy no crash's hidden tail explains: a damaged earlier copy
//! the replay could not see, a lost WAL checkpoint, an out-of-contract fault's reach.

use super::super::alarms::AlarmFact;
use super::tail::{clamped_at, crash_showing, log_ended_at, refused_in};
use super::*;

/// The files whose faults can destroy a log copy that a replay then repeats: a
/// segment's bytes, the directory entry that names a segment (a lost directory fsync is
/// recorded as `Other`), and the `hwm` word, which hides what lies above it. A fault on
/// `consumer.offset` or the WAL leaves every copy where it was.
const DESTROYS_COPIES: &[FileKind] = &[
    FileKind::Segment,
    FileKind::Directory,
    FileKind::Other,
    FileKind::Hwm,
];

/// One row's account of a pair of an id's copies: which of the two it explains as a
/// repeat, and the event it rests on.
pub(super) struct Excusal {
    pub excuse: Excuse,
    /// The copy (an index into the id's copies) the row names as the repeat of the
    /// other.
    pub repeat: usize,
    /// The replay that made the repeat (its partition and incarnation, as the crash
    /// budgets name it): it commits the id once, whatever row or budget explains
    /// it. `None` when no replay can be named.
    pub replay: Option<(TopicPartition, Option<Incarnation>)>,
    /// Without a replay, excusals with the same slot share one place: the causes and
    /// the copy repeated.
    pub slot: (Vec<usize>, usize),
}

/// The crash before the replay that follows the alarm at history index `alarm` (a
/// skip, a clamp, a lost checkpoint): the one that began the alarm's incarnation when
/// its open was still running (an open skips what it reads while it replays), else the
/// next crash after the alarm.
fn crash_before_replay<'f>(facts: &'f Facts<'_>, alarm: usize) -> Option<&'f CrashFact> {
    let incarnation = facts.history.events()[alarm].incarnation;
    let opening = facts
        .opened_at
        .get(&incarnation)
        .is_none_or(|&opened| alarm < opened);
    if opening {
        facts.crash_ending(incarnation.checked_sub(1)?)
    } else {
        facts.crashes.iter().find(|c| c.index > alarm)
    }
}

/// The replay that made `repeat` after the alarm at history index `alarm`, as the crash
/// budgets name it: `Some(None)` when no crash before a replay follows the alarm (the
/// row then has a slot of its own), `None` when no replay of that crash's entries can
/// have made it ([`super::place::replay_writing`]).
fn replay_after(
    facts: &Facts<'_>,
    alarm: usize,
    copies: &[Copy],
    repeat: usize,
) -> Option<Option<(TopicPartition, Option<Incarnation>)>> {
    let Some(crash) = crash_before_replay(facts, alarm) else {
        return Some(None);
    };
    let replay = super::place::replay_writing(facts, crash, copies, repeat)?;
    Some(Some((copies[repeat].tp.clone(), replay)))
}

/// Every row's account of every pair of `copies` (of `id`), in pair order.
pub(super) fn excusals(
    facts: &Facts<'_>,
    excuses: &Excuses<'_, '_>,
    id: ProduceId,
    copies: &[Copy],
) -> Vec<Excusal> {
    let mut out = Vec::new();
    for j in 0..copies.len() {
        for k in j + 1..copies.len() {
            let (a, b) = (&copies[j], &copies[k]);
            // (the repeat, the copy it repeats, the row's excuse)
            let directed = [
                (k, j, damaged_copy(facts, a, b)),
                (j, k, damaged_copy(facts, b, a)),
                (k, j, checkpoint_lost(facts, id, a, b)),
                (j, k, checkpoint_lost(facts, id, b, a)),
            ];
            for (repeat, of, excuse) in directed {
                if let Some(excuse) = excuse {
                    let replay = match excuse.causes.first() {
                        Some(&alarm) => match replay_after(facts, alarm, copies, repeat) {
                            Some(replay) => replay,
                            None => continue,
                        },
                        None => None,
                    };
                    let slot = (excuse.causes.clone(), of);
                    out.push(Excusal {
                        excuse,
                        repeat,
                        replay,
                        slot,
                    });
                }
            }
            // An out-of-contract fault makes no copy itself: it destroys one (the copy
            // its reach names, delivered before the crash that first showed the fault
            // to an open, a power loss for a fault only the platter holds), and the
            // replay after that crash repeats it as the other copy of the pair, first
            // delivered after that crash, where that replay commits. Its node passes
            // one copy of the id whatever explains it. The replay commits on the
            // destroyed copy's partition (a WAL entry names it), so a fault excuses a
            // pair on one partition only; a fault after the later copy's first
            // delivery made no part of it (helper-48); and a copy the replay wrote
            // where the reach lies is no copy the fault destroyed (helper-49); only a
            // fault on [`DESTROYS_COPIES`] can destroy one (helper-68 F5).
            if a.tp != b.tp {
                continue;
            }
            let before = a.first_delivery.max(b.first_delivery);
            for (destroyed, repeat) in [(j, k), (k, j)] {
                let c = &copies[destroyed];
                let acked = acked_here(facts, id, c);
                for excuse in excuses.out_of_contract_each_on(
                    DESTROYS_COPIES,
                    &c.tp,
                    Some(c.offset),
                    None,
                    Some(c.first_delivery),
                    before,
                ) {
                    // A reach of unknown offsets (a lost fsync of the partition's
                    // directory) names the records acknowledged after the fault: not a
                    // copy acknowledged in place before it and first read after it.
                    let fault = excuse.causes[0];
                    let reaches: Vec<_> = facts
                        .reaches
                        .iter()
                        .filter(|r| r.fault_index == fault)
                        .collect();
                    let by_ack = reaches
                        .iter()
                        .all(|r| !r.until_crash() && r.offsets.is_none());
                    if by_ack && acked.is_some_and(|a| a < fault) {
                        continue;
                    }
                    let Some(first) = crash_showing(facts, fault) else {
                        continue;
                    };
                    // A lowered `hwm` word stays wrong until the engine writes another value
                    // (an open that read it writes the same word back, whether a flip or a
                    // lost fsync left it), and every open while it lasts finds what lies
                    // above it unacknowledged: a later open's R2 cut below it salvages it and
                    // that replay re-commits it, not only the first open's replay. Only what
                    // that open was offered counts: the destroyed copy itself, listed past its
                    // hole (`PastHoleAtOpen`) by an open from the crash up to the replay; its
                    // spent WAL entry gives no replay anything else (helper-68). Only the
                    // named fault's own reach on the word opens the later crashes: another
                    // fault's (a raised flip beside a segment fault) is tried as its own
                    // excuse, under its own name (helper-72 F3).
                    let word = reaches.iter().find(|r| r.file == FileKind::Hwm);
                    let later = facts
                        .crashes
                        .iter()
                        .filter(|crash| word.is_some() && crash.index > first.index);
                    let listed = |crash: &CrashFact, replay: Option<Incarnation>| {
                        (crash.incarnation + 1..=replay.unwrap_or(Incarnation::MAX))
                            .take_while(|inc| facts.restarts.contains_key(inc))
                            .any(|inc| {
                                facts.past_hole_at_open(&c.tp, inc).is_some_and(|held| {
                                    held.iter().any(|h| h.id == id && h.offset == c.offset)
                                })
                            })
                    };
                    // The `hwm` word the open after `crash` read (`None`: no view of it).
                    let read = |crash: &CrashFact, replay: Option<Incarnation>| {
                        replay
                            .and_then(|inc| facts.alarms.disk_at(&c.tp, inc))
                            .or_else(|| facts.alarms.disk_at(&c.tp, crash.incarnation + 1))
                            .map(|v| v.persisted_hwm)
                    };
                    // A fault on the `hwm` word destroys a copy only by hiding it: the open
                    // after the crash read a word at or below the copy (helper-70: a flip
                    // that raised the word over the copy showed it, and the replay skips a
                    // visible copy). At a later crash that word is still one the fault
                    // left: the low end of its reach (a lowering flip's value, a lost
                    // fsync's durable old one), or of a later word fault that took the word
                    // on down from there (helper-79: a word lowered in two steps). A word
                    // the engine wrote since is its own, and an earlier fault it
                    // overwrote explains nothing (helper-78 H1), whether or not the
                    // engine's word has the fault's value (helper-79): each low end
                    // carries the report of the engine's rewrite of a flipped word.
                    let left: Option<Vec<(Offset, Option<usize>)>> = word.and_then(|word| {
                        let mut chain = vec![(word.offsets?.start, word.rewritten)];
                        let mut after: Vec<_> = facts
                            .reaches
                            .iter()
                            .filter(|r| {
                                r.file == FileKind::Hwm
                                    && r.tp.as_ref() == Some(&c.tp)
                                    && r.fault_index > word.fault_index
                            })
                            .filter_map(|r| Some((r.fault_index, r.offsets?, r.rewritten)))
                            .collect();
                        after.sort_unstable_by_key(|&(index, _, _)| index);
                        for (_, o, rewritten) in after {
                            if chain.last().map(|&(low, _)| low) == Some(o.end) {
                                chain.push((o.start, rewritten));
                            }
                        }
                        Some(chain)
                    });
                    let hid = |showing: bool, read: Option<Option<Offset>>, crash: usize| {
                        let Some(word) = word else {
                            return true;
                        };
                        let Some(p) = read else {
                            return true;
                        };
                        let standing =
                            |rewritten: Option<usize>| rewritten.is_none_or(|w| crash < w);
                        p.is_none_or(|p| p <= c.offset)
                            && if showing {
                                standing(word.rewritten)
                            } else {
                                left.as_ref().is_none_or(|left| {
                                    left.iter()
                                        .any(|&(low, rw)| low == p.unwrap_or(0) && standing(rw))
                                })
                            }
                    };
                    // The repeat lies where that replay commits (helper-50: a copy below the
                    // log the crash left was there before it).
                    let placed = std::iter::once((true, first))
                        .chain(later.map(|crash| (false, crash)))
                        .find_map(|(showing, crash)| {
                            let fresh = crash
                                .partitions
                                .get(&c.tp)
                                .map_or(0, |p| super::tail::fresh_from(facts, crash, p));
                            if c.first_delivery > crash.index
                                || copies[repeat].first_delivery < crash.index
                                || copies[repeat].offset < fresh
                            {
                                return None;
                            }
                            let replay =
                                super::place::replay_writing(facts, crash, copies, repeat)?;
                            if !hid(showing, read(crash, replay), crash.index) {
                                return None;
                            }
                            // Any other fault destroys a copy by taking its frame: an open
                            // that listed the copy itself past its hole found it whole, so
                            // the fault did not take it (helper-78 H2).
                            let listed = listed(crash, replay);
                            if word.is_none() && listed {
                                return None;
                            }
                            (showing || listed).then_some(replay)
                        });
                    let Some(replay) = placed else {
                        continue;
                    };
                    out.push(Excusal {
                        slot: (excuse.causes.clone(), repeat),
                        excuse,
                        repeat,
                        replay: Some((c.tp.clone(), replay)),
                    });
                    break;
                }
            }
        }
    }
    out
}

/// The history index at which `id` was acknowledged at `c`'s own offset, when no cut,
/// clamp or crash ended the log at or below it before `c` was first delivered (so `c`
/// is the acknowledged frame).
fn acked_here(facts: &Facts<'_>, id: ProduceId, c: &Copy) -> Option<usize> {
    let &ack = facts.acks.get(&id)?;
    match &facts.history.events()[ack].kind {
        EventKind::ProduceAck {
            tp,
            offset: Some(o),
            ..
        } if *tp == c.tp && *o == c.offset => {}
        _ => return None,
    }
    (!log_ended_at(facts, &c.tp, ack, c.first_delivery, c.offset)
        && !clamped_at(facts, &c.tp, ack, c.first_delivery, c.offset))
    .then_some(ack)
}

/// `damaged_copy_recommitted`: after `copy` was first delivered and before `other`
/// was, the engine gave `copy` up as unreadable: it skipped its frame, or an open's
/// recorded clamp gave up its offset and `other` lies where the replay after it
/// commits (from the clamped HWM on, on the same partition, first delivered before
/// the crash that ends the first open from the clamp's on that completed, which is the
/// one whose replay re-commits what the clamp gave up, or in the log that crash left;
/// a later incarnation's copy is its own replay's; when a later open cut at or below
/// the floor, also first delivered from that open's restart on, under the same rule).
pub(super) fn damaged_copy(facts: &Facts<'_>, copy: &Copy, other: &Copy) -> Option<Excuse> {
    let until = other.first_delivery;
    let skip = facts
        .alarms
        .skips(&copy.tp)
        .find(|s| {
            s.frame
                && s.index > copy.first_delivery
                && s.index < until
                && s.contains(copy.offset)
                // Only a replay re-commits the skipped records (it reads the visible
                // copies it would skip, before or after the skip was counted), and only
                // on their own partition (a WAL entry names it): a restart must come
                // between the two copies.
                && other.tp == copy.tp
                && facts
                    .restarts
                    .values()
                    .any(|&restart| copy.first_delivery < restart && restart < until)
                // And `other` is that replay's: first delivered after the crash before
                // it (helper-46: a consume-time skip's replay follows the next crash),
                // at or past where it commits (helper-45: a copy the engine wrote
                // before, first delivered after the skip, passed as its repeat).
                && crash_before_replay(facts, s.index).is_some_and(|c| {
                    c.index < until
                        && c.partitions.get(&copy.tp).is_some_and(|p| {
                            other.offset >= super::tail::fresh_from(facts, c, p)
                        })
                })
        })
        .map(|s| (s.index, format!("{} offset {}", copy.tp, copy.offset)));
    // The first open from `from` on that completed: its replay re-commits what a clamp
    // of `from` gave up.
    let replayer = |from: crate::history::Incarnation| {
        (from..)
            .take_while(|i| facts.restarts.contains_key(i) || *i == from)
            .find(|i| facts.opened.contains(i))
    };
    // The clamp's replay windows. The first: the first open from the clamp's on that
    // completed, and the lowest HWM a clamp, or offset a cut, left up to it (its replay
    // commits at or past that). When a later open cut at or below that floor (damage
    // took what the replay wrote), nothing of it is left and that open's replay commits
    // the record again: a window of its own, from that open's restart on (the opens in
    // between found the replay's copy in place and replayed nothing: helper-52). A log
    // merely ending there proves nothing: a completed replay's commits are durable, so
    // it wrote none, and the WAL no longer held the entry.
    // Each window: (its floor, the history index it starts after, the crash that ends
    // it).
    let replay_windows = |c: &crate::check::alarms::ClampFact| {
        let lowest = |from: Incarnation, to: Incarnation| {
            let within = |inc: Incarnation| from <= inc && inc <= to;
            facts
                .alarms
                .clamps(&copy.tp)
                .filter(|k| within(k.incarnation) && k.index >= c.index)
                .map(|k| k.hwm)
                .chain(
                    facts
                        .alarms
                        .cuts(&copy.tp)
                        .filter(|k| within(k.incarnation) && k.index > c.index)
                        .map(|k| k.offset),
                )
                .fold(c.hwm, Offset::min)
        };
        let mut windows = Vec::new();
        let mut from = c.incarnation;
        let mut start = c.index;
        let mut floor = c.hwm;
        loop {
            let Some(last) = replayer(from) else {
                windows.push((lowest(c.incarnation, Incarnation::MAX), start, usize::MAX));
                return windows;
            };
            floor = floor.min(lowest(c.incarnation, last));
            let end = facts.crash_ending(last).map_or(usize::MAX, |k| k.index);
            windows.push((floor, start, end));
            // The first later open that cut at or below the floor: opens before it
            // found the replay's copy in place, so their replays committed nothing.
            let wiped = facts
                .alarms
                .cuts(&copy.tp)
                .filter(|k| k.incarnation > last && k.offset <= floor)
                .map(|k| k.incarnation)
                .min();
            let Some(next) = wiped else {
                return windows;
            };
            from = next;
            start = facts.restarts.get(&next).copied().unwrap_or(end);
        }
    };
    // Whether `other` was in the log before the crash at history index `end`: first
    // delivered before it, or below the tail that crash left, with nothing cutting or
    // clamping at or below its offset until its delivery (the clamp's open cut the log
    // at its HWM, so a frame there was written after the clamp).
    let committed_by = |end: usize| {
        until < end
            || facts
                .crashes
                .iter()
                .find(|k| k.index == end)
                .is_some_and(|k| {
                    k.partitions
                        .get(&other.tp)
                        .is_some_and(|p| other.offset < p.durable_tail)
                        // No later cut, clamp or crash took the frame.
                        && !log_ended_at(facts, &other.tp, end, until, other.offset)
                        && !clamped_at(facts, &other.tp, end, until, other.offset)
                })
    };
    let clamp = || {
        facts
            .alarms
            .clamps(&copy.tp)
            .find(|c| {
                c.index > copy.first_delivery
                    && c.index < until
                    && c.hwm <= copy.offset
                    && copy.offset < c.persisted_hwm
                    && other.tp == copy.tp
                    // Committed by the replay of one of its windows: at or past its
                    // floor, first delivered after the window began and before the
                    // crash that ends it (a killed open replays nothing for
                    // certain), or found in the log by that crash.
                    && replay_windows(c).into_iter().any(|(floor, start, end)| {
                        other.offset >= floor && start < until && committed_by(end)
                    })
            })
            .map(|c| {
                (
                    c.index,
                    format!(
                        "{} offset {} (clamped away, re-committed at {})",
                        copy.tp, copy.offset, other.offset
                    ),
                )
            })
    };
    let (cause, covers) = skip.or_else(clamp)?;
    Some(Excuse {
        kind: ExcuseKind::DamagedCopyRecommitted,
        causes: vec![cause],
        covers,
    })
}

/// `checkpoint_lost`: both copies of `id` on one partition, `earlier` delivered before an
/// open found the WAL checkpoint unreadable and `later` after it, where a replay that
/// loss left blind commits: the open could see no copy of `id`, and `later` lies from
/// the tail it found up to where its replay stopped ([`replay_reach`]: the open
/// completed with the partition open, or was killed after its replay began committing
/// there). What it could see is what the world listed at its restart (`VisibleAtOpen`,
/// and the hidden tail when the open exposed it); without that listing, `earlier` counts
/// as seen when its offset lies from the log start to the HWM.
///
/// The blind replay is the one of the open that found the checkpoint unreadable, or,
/// where that open refused the partition (it keeps the partition's entries, and its
/// checkpoint for it stays where the loss left it), of each later open up to the first
/// that completed with the partition open ([`blind_replays`]).
pub(super) fn checkpoint_lost(
    facts: &Facts<'_>,
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
) -> Option<Excuse> {
    // A WAL entry names its partition: its replay commits there.
    if earlier.tp != later.tp {
        return None;
    }
    let tp = &later.tp;
    facts
        .alarms
        .store
        .iter()
        .filter(|a| {
            matches!(a.alarm, Alarm::WalCheckpointUnreadable)
                && earlier.first_delivery < a.index
                && a.index < later.first_delivery
        })
        .find_map(|alarm| {
            blind_replays(facts, tp, alarm, later.first_delivery)
                .into_iter()
                .find_map(|incarnation| blind_commit(facts, id, earlier, later, alarm, incarnation))
        })
}

/// The incarnations whose opens replayed `tp`'s entries still blind from the lost
/// checkpoint `alarm` names, before `until`: from the alarm's own, each whose open did
/// not refuse the partition, up to and with the first that completed with it open
/// (its checkpoints then advance over what its replay committed). An open that refused
/// it (or its topic) persists no checkpoint for it, and a killed open persists none at
/// all past a lowering to a clamp; so each later open reads a checkpoint that knows
/// nothing of `tp` ([`knows_nothing_of`]), unless a power loss dropped a flip only the
/// page cache held before any was persisted: the chain ends there.
fn blind_replays(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    alarm: &AlarmFact,
    until: usize,
) -> Vec<Incarnation> {
    let mut out = Vec::new();
    // The alarm's own incarnation first (incarnation 0 has no restart), then each later
    // one while its checkpoint read leaves the partition blind.
    let later = facts
        .restarts
        .range(alarm.incarnation + 1..)
        .take_while(|&(&incarnation, &restart)| {
            restart < until && knows_nothing_of(facts, tp, incarnation)
        })
        .map(|(&incarnation, _)| incarnation);
    for incarnation in std::iter::once(alarm.incarnation).chain(later) {
        if refused_in(facts, tp, incarnation) {
            continue;
        }
        out.push(incarnation);
        if facts.opened_at.contains_key(&incarnation) {
            break;
        }
    }
    out
}

/// Whether the WAL checkpoint the world read at the restart of `incarnation` (the one its
/// open replays from) gives `tp` no floor
/// ([`crate::history::CheckpointFloor::replays_every_entry`]). `false` without a read.
fn knows_nothing_of(facts: &Facts<'_>, tp: &TopicPartition, incarnation: Incarnation) -> bool {
    facts
        .checkpoint_at_open(incarnation)
        .is_some_and(|floors| crate::history::CheckpointFloor::replays_every_entry(floors, tp))
}

/// The excuse for `later` when the open of `incarnation`, blind from the lost checkpoint
/// `alarm` names, replayed `id` without seeing `earlier` (see [`checkpoint_lost`]).
fn blind_commit(
    facts: &Facts<'_>,
    id: ProduceId,
    earlier: &Copy,
    later: &Copy,
    alarm: &AlarmFact,
    incarnation: Incarnation,
) -> Option<Excuse> {
    let tp = &later.tp;
    let upto = replay_reach(facts, tp, alarm, incarnation, later.first_delivery)?;
    let view = facts.alarms.disk_at(tp, incarnation)?;
    let visible = match facts.visible_at_open(tp, incarnation) {
        Some(shown) => {
            let exposed = facts.alarms.of(tp).iter().any(|a| {
                a.incarnation == incarnation && matches!(a.alarm, Alarm::HiddenExposed { .. })
            });
            let hidden = facts.held_at_open(tp, incarnation);
            shown.iter().any(|c| c.id == id) || exposed && hidden.iter().any(|c| c.id == id)
        }
        None => view.log_start <= earlier.offset && earlier.offset < view.hwm,
    };
    let tail = view.tail;
    if visible || later.offset < tail || upto <= later.offset {
        return None;
    }
    // The fault that made the checkpoint unreadable: the excuse rests on it too. A copy
    // retention took must lie below the floor it destroyed (helper-104 F2: else a reap
    // above the durable floor hides in any run that also loses the checkpoint); a copy
    // a cut or damage took can lie above it, as the engine lowers the floor's offset to
    // a cut and keeps its seq (fresh quick seed 3968282518).
    let damage =
        crate::check::contract::checkpoint_damage_read(facts, alarm.index, alarm.incarnation)?;
    let floor = crate::check::contract::checkpoint_floor_lost(facts, damage, tp);
    let reaped = earlier.offset < view.log_start;
    if reaped && floor.is_some_and(|floor| earlier.offset >= floor) {
        return None;
    }
    let below = match floor {
        Some(floor) if reaped => format!(", a reaped copy below the lost floor {floor}"),
        _ => String::new(),
    };
    Some(Excuse {
        kind: ExcuseKind::CheckpointLost,
        causes: vec![alarm.index, damage],
        covers: format!(
            "{tp} offsets [{tail}, {upto}) (the replay of incarnation {incarnation}{below})"
        ),
    })
}

/// Where the replay of the open of `incarnation`, blind from the lost checkpoint `alarm`
/// names, stopped committing on `tp`: the first HWM that incarnation shows after its open
/// completed with the partition open (else the tail the crash ending it left); or, for
/// an open killed first whose replay had begun committing
/// there (its `replay_committing` account after the alarm), the tail the crash ending it
/// left. `None` when that open replayed nothing on `tp`.
fn replay_reach(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    alarm: &AlarmFact,
    incarnation: Incarnation,
    until: usize,
) -> Option<Offset> {
    if let Some(&done) = facts.opened_at.get(&incarnation) {
        // Its replay's commits are durable before the open returns: under the first HWM
        // that incarnation shows, or, killed before it showed one, the tail its crash
        // left (helper-104: not an HWM a later incarnation showed).
        let shown = facts.history.events()[done..]
            .iter()
            .take_while(|e| e.incarnation == incarnation)
            .find_map(|e| match &e.kind {
                EventKind::HwmObserved { tp: t, hwm, .. } if t == tp => Some(*hwm),
                _ => None,
            });
        let left = || {
            let crash = facts.crash_ending(incarnation)?;
            Some(crash.partitions.get(tp)?.durable_tail)
        };
        return Some(shown.or_else(left).unwrap_or(Offset::MAX));
    }
    let of = facts.alarms.of(tp);
    let records = of.iter().find_map(|a| match a.alarm {
        Alarm::ReplayCommitting { records }
            if a.incarnation == incarnation && a.index > alarm.index =>
        {
            Some(records)
        }
        _ => None,
    })?;
    // The replay commits `records` from the tail its open recovered.
    let wrote = of
        .iter()
        .find_map(|a| match a.alarm {
            Alarm::LogOpened { tail, .. } if a.incarnation == incarnation => Some(tail + records),
            _ => None,
        })
        .unwrap_or(Offset::MAX);
    let ending = facts.crash_ending(incarnation)?;
    let mut upto = ending.partitions.get(tp)?.durable_tail.min(wrote);
    // What of it lasted until `until`: no later crash dropped it (a power loss after a
    // process crash drops what only the page cache held), no cut or clamp took it back.
    for c in facts
        .crashes
        .iter()
        .filter(|c| ending.index < c.index && c.index < until)
    {
        if let Some(p) = c.partitions.get(tp) {
            upto = upto.min(p.durable_tail);
        }
    }
    for k in facts
        .alarms
        .cuts(tp)
        .filter(|k| ending.index < k.index && k.index < until)
    {
        upto = upto.min(k.offset);
    }
    for k in facts
        .alarms
        .clamps(tp)
        .filter(|k| ending.index < k.index && k.index < until)
    {
        upto = upto.min(k.hwm);
    }
    Some(upto)
}
