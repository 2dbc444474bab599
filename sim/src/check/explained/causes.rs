//! Rule 2 of `alarms_explained`: every alarm has an injected cause that can reach it,
//! one arm per alarm (the list in `mod.rs`), and the fault queries those arms share.

use super::*;

/// The fault events of the run with their index, kind and partition.
fn faults<'a>(
    facts: &'a Facts<'_>,
) -> impl Iterator<
    Item = (
        usize,
        &'a FaultKind,
        Option<&'a TopicPartition>,
        Option<&'a str>,
    ),
> + 'a {
    facts
        .history
        .events()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::Fault { kind, tp, path } => Some((i, kind, tp.as_ref(), path.as_deref())),
            _ => None,
        })
}

/// In-contract damage at rest on `tp`'s segments before `before`, to the frame holding
/// `offset`.
fn damage_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    offset: Offset,
    before: usize,
) -> Option<usize> {
    let events = facts.history.events();
    facts.segment_damage.get(tp)?.iter().copied().find(|d| {
        *d < before
            && facts.damage_readable_at(*d, before)
            && matches!(&events[*d].kind, EventKind::Fault { kind, .. }
                if kind.segment_damage().and_then(|(o, _)| o).is_some_and(|r| r.contains(offset)))
    })
}

/// The history index of `tp`'s last completed open (`LogOpened`) before `before`; 0
/// when none.
fn last_opened_before(facts: &Facts<'_>, tp: &TopicPartition, before: usize) -> usize {
    facts
        .alarms
        .of(tp)
        .iter()
        .filter(|a| a.index < before && matches!(a.alarm, Alarm::LogOpened { .. }))
        .map(|a| a.index)
        .max()
        .unwrap_or(0)
}

/// A corrupt write to `tp`'s segments since its last completed open before `open` (the
/// restart of the cutting open) whose flipped bit landed in the frame holding
/// `offset`: the only alarm besides the poison it explains is a cut of that frame (the
/// verify refused it, so nothing built on it). One before that open is past: the open
/// found its frame whole, or cut it.
fn corrupt_write_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    offset: Offset,
    open: usize,
    before: usize,
) -> Option<usize> {
    let since = last_opened_before(facts, tp, open);
    faults(facts)
        .find(|(i, kind, t, _)| {
            since < *i
                && *i < before
                && *t == Some(tp)
                && matches!(kind, FaultKind::CorruptWrite { offsets: Some(r), .. }
                    if r.contains(offset))
        })
        .map(|(i, ..)| i)
}

/// An out-of-contract fault on a file of `files` of `tp` before `before` reaching
/// `offset` (or of unknown reach). A frame-level alarm (a bad frame, a cut, a skip) is
/// explained only by a fault on the log's own files; a clamp also by one on `hwm`.
fn reach_at(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    files: &[FileKind],
    offset: Offset,
    before: usize,
) -> Option<usize> {
    facts
        .reaches_before(tp, before)
        .find(|r| {
            r.on(files)
                && r.offsets.is_none_or(|o| o.contains(offset))
                && r.live_at(facts, before, Some(offset))
        })
        .map(|r| r.fault_index)
}

/// A fault on `tp`'s `hwm` that an earlier open read while it held the word past
/// `offset`, when that open left the frame at `offset` only in the page cache and the
/// power loss before the refusing open showed it. Recovery writes back only what lies
/// above the HWM (or everything, after a clamp), so an open that read a raised word,
/// found nothing above it and clamped nothing wrote nothing back; a frame that a
/// segment fsync EIO since the last power loss but one had left in the cache alone
/// stayed so after the word was rewritten. Asked besides: no acknowledgement at
/// `offset` before that open (its fsync succeeded), no open between the EIO and it that
/// wrote the frame back, no clamp in any open up to the power loss, and no open
/// completed since the power loss (it would have found the frame whole or not).
fn hwm_raised_at_an_open(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    offset: Offset,
    alarm: &AlarmFact,
) -> Option<usize> {
    let restart = restart_of(facts, alarm.incarnation);
    let power_loss_before = |index: usize| {
        facts
            .crashes
            .iter()
            .rev()
            .find(|c| !c.process && c.index < index)
            .map(|c| c.index)
    };
    let shown = power_loss_before(restart)?;
    let since = power_loss_before(shown).unwrap_or(0);
    let alarms = facts.alarms.of(tp);
    let clamped = |inc: Incarnation| {
        alarms
            .iter()
            .any(|a| a.incarnation == inc && matches!(a.alarm, Alarm::Clamp { .. }))
    };
    let opens: Vec<(&AlarmFact, Offset, Offset)> = alarms
        .iter()
        .filter(|a| since < a.index && a.index < restart)
        .filter_map(|a| match a.alarm {
            Alarm::LogOpened { hwm, tail, .. } => Some((a, hwm, tail)),
            _ => None,
        })
        .collect();
    if opens.iter().any(|(a, ..)| a.index > shown)
        || opens.iter().any(|(a, ..)| clamped(a.incarnation))
    {
        return None;
    }
    // The first segment fsync EIO on the partition since that power loss.
    let eio = faults(facts).find_map(|(i, kind, t, _)| {
        (since < i
            && t == Some(tp)
            && matches!(
                kind,
                FaultKind::FsyncEio {
                    file: FileKind::Segment
                }
            ))
        .then_some(i)
    })?;
    // An acknowledgement at the offset means an fsync of that frame succeeded: no
    // in-contract EIO leaves it in the cache alone.
    let acked_before = |index: usize| {
        facts.history.events()[..index].iter().any(|e| {
            matches!(&e.kind, EventKind::ProduceAck { tp: t, offset: Some(o), .. }
                if t == tp && *o == offset)
        })
    };
    // An open that wrote nothing back at or below the hole: its HWM is above it and no
    // frame lies above its HWM.
    let kept_cached = |hwm: Offset, tail: Offset| hwm > offset && tail <= hwm;
    opens.iter().find_map(|&(a, hwm, tail)| {
        // The fault must come before the open read the word, at its restart (rule 1
        // holds the open's HWM to that word); every open between the EIO and this one
        // must have written nothing back there either.
        let opened = restart_of(facts, a.incarnation);
        if eio >= opened
            || !kept_cached(hwm, tail)
            || acked_before(opened)
            || opens
                .iter()
                .any(|&(b, h, t)| eio < b.index && b.index < a.index && !kept_cached(h, t))
        {
            return None;
        }
        facts
            .reaches_before(tp, opened)
            .find(|r| {
                r.on(HWM_FILE)
                    && r.offsets.is_some_and(|o| o.contains(offset))
                    && r.live_at(facts, opened, None)
            })
            .map(|r| r.fault_index)
    })
}

/// Whether an out-of-contract fault on `tp`'s `hwm` before `before` can have left it
/// of the wrong length. No window: a refused partition rewrites nothing, and a word
/// left too long stays so under every rewrite; but only a power loss since the fault
/// shows it (the page cache keeps the engine's 8 bytes).
fn hwm_malformed_by_fault(facts: &Facts<'_>, tp: &TopicPartition, before: usize) -> bool {
    facts.reaches_before(tp, before).any(|r| {
        r.on(HWM_FILE) && r.can_malform() && facts.power_loss_between(r.fault_index, before)
    })
}

/// The restart that began `incarnation` (the open's alarms must have a cause before it).
fn restart_of(facts: &Facts<'_>, incarnation: Incarnation) -> usize {
    facts.restarts.get(&incarnation).copied().unwrap_or(0)
}

/// Rule 2, per-partition alarms: why the alarm has no cause, if it has none.
pub(super) fn uncaused(
    facts: &Facts<'_>,
    tp: &TopicPartition,
    alarm: &AlarmFact,
) -> Option<String> {
    // Causes come before the alarm: the open raises it right after reading the file,
    // and damage may land while an open runs (before it reads that file).
    let open = restart_of(facts, alarm.incarnation);
    let before = alarm.index;
    let disk: Option<&DiskView> = facts.alarms.view_before(tp, alarm.incarnation, before);
    let caused_at = |offset: Offset, before: usize| {
        damage_at(facts, tp, offset, before)
            .or_else(|| reach_at(facts, tp, LOG_FILES, offset, before))
    };
    match &alarm.alarm {
        // A refusal naming the `hwm` file (malformed) is that word's fault's to explain.
        Alarm::Refused { segment, .. } if segment == cafelog_engine::format::layout::HWM_FILE => {
            (!hwm_malformed_by_fault(facts, tp, before))
                .then(|| "of a malformed hwm file with no fault on it that could make one".into())
        }
        Alarm::Refused { .. } => {
            let disk = disk?;
            match &disk.bad {
                // Damage where the bad region starts, or a fault on `hwm` that moved the
                // word past it (a hole above the true HWM is R2's to cut, not refuse).
                Some(bad) => (caused_at(bad.offset, before).is_none()
                    && reach_at(facts, tp, HWM_FILE, bad.offset, before).is_none()
                    && hwm_raised_at_an_open(facts, tp, bad.offset, alarm).is_none())
                .then(|| {
                    format!(
                        "with no damage at rest or out-of-contract fault reaching offset {} \
                         (where the bad region starts) before the open",
                        bad.offset
                    )
                }),
                // A malformed `hwm` file: only an out-of-contract fault makes one.
                None => (!hwm_malformed_by_fault(facts, tp, before)).then(|| {
                    "with a malformed hwm file and no fault on it that could make one".into()
                }),
            }
        }
        Alarm::Clamp { hwm, .. } => (caused_at(*hwm, before).is_none()
            && reach_at(facts, tp, HWM_FILE, *hwm, before).is_none())
        .then(|| {
            format!(
                "with no damage at rest to the frame at offset {hwm} and no out-of-contract \
                 fault reaching it before the open: the missing tail has no cause"
            )
        }),
        Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. } => {
            let crash = facts.crash_before(open).and_then(|c| c.partitions.get(tp));
            let durable_tail = crash.map_or(0, |p| p.durable_tail);
            // On a damaged partition the crash's durable tail is a lower bound that rests
            // on the persisted HWM; a fault on `hwm` reaching the cut makes that bound,
            // not the cut, wrong.
            let bound_on_word = crash.is_some_and(|p| {
                p.durable_tail == p.persisted_hwm && p.durable_tail > p.memory_hwm.unwrap_or(0)
            }) && reach_at(facts, tp, HWM_FILE, *offset, before).is_some();
            let corrupt = corrupt_write_at(facts, tp, *offset, open, before).is_some();
            (*offset < durable_tail
                && !bound_on_word
                && !corrupt
                && caused_at(*offset, before).is_none())
            .then(|| {
                format!(
                    "cuts durable data (the crash before left the durable tail at \
                     {durable_tail}) with no damage at rest or out-of-contract fault reaching \
                     offset {offset} before the open"
                )
            })
        }
        Alarm::FrameSkipped { base, records } => {
            let end = base + records;
            // The world decoded the frame right after the alarm: whole there, it was
            // skipped intact, whatever damage once reached it (a write-back may have
            // repaired it since).
            let whole = facts.history.events().get(alarm.index + 1).is_some_and(|e| {
                matches!(&e.kind, EventKind::FrameAtSkip { tp: t, base: b, records: n, whole: true }
                    if t == tp && b == base && n == records)
            });
            if whole {
                return Some(format!(
                    "of a frame the page cache held whole at [{base}, {end}) when it was \
                     skipped (the world's decode found it valid)"
                ));
            }
            let hit = (*base..end).any(|o| caused_at(o, alarm.index).is_some());
            (!hit).then(|| {
                format!("with no damage at rest or out-of-contract fault reaching [{base}, {end})")
            })
        }
        Alarm::RecordsSkipped { base, records } => {
            let end = base + records;
            let hit =
                (*base..end).any(|o| reach_at(facts, tp, LOG_FILES, o, alarm.index).is_some());
            (!hit).then(|| {
                format!(
                    "in a CRC-valid frame with no out-of-contract fault reaching [{base}, {end}) \
                     (no in-contract fault writes such a frame)"
                )
            })
        }
        Alarm::JunkTrimmed { .. } => {
            let caused = faults(facts).any(|(i, kind, t, _)| {
                i < before
                    && t == Some(tp)
                    && facts.damage_readable_at(i, before)
                    && matches!(
                        kind,
                        FaultKind::BitFlip {
                            file: FileKind::Segment,
                            ..
                        } | FaultKind::Misdirected {
                            file: FileKind::Segment,
                            ..
                        } | FaultKind::LatentSector {
                            file: FileKind::Segment,
                            ..
                        } | FaultKind::TornWrite {
                            file: FileKind::Segment
                        } | FaultKind::LostWrite {
                            file: FileKind::Segment
                        } | FaultKind::LostFsync {
                            file: FileKind::Segment,
                            ..
                        }
                    )
            });
            (!caused).then(|| "with no fault on its segments before the open".into())
        }
        // Dropped in-flight records: the kill of the incarnation that raised it dropped
        // the futures carrying them (its tasks go, and raise, after the restart).
        Alarm::Poisoned {
            cancelled: true, ..
        } => {
            let killed = facts
                .crash_ending(alarm.incarnation)
                .is_some_and(|c| c.index < alarm.index);
            (!killed).then(|| {
                "with records in flight dropped and no kill of the incarnation that raised it"
                    .into()
            })
        }
        // An I/O error on the log's files in this incarnation, or damage its
        // verification re-read found (a frame fsynced, then read back bad). Not one on
        // `consumer.offset`: the store persists the frontier, and its failure is the
        // store's error, never the log's poison. A failed directory fsync poisons only
        // a poison that names it, and only one does: the directory is the store's too.
        Alarm::Poisoned {
            cancelled: false,
            directory,
            verify,
        } => {
            let since = restart_of(facts, alarm.incarnation);
            // A corrupt write before the open returned was the write-back's, which reads
            // back what it wrote and repairs it: the log's verify never saw it.
            let opened = last_opened_before(facts, tp, alarm.index).max(since);
            let caused = faults(facts).any(|(i, kind, t, _)| {
                since <= i
                    && i < alarm.index
                    && t == Some(tp)
                    && match kind {
                        FaultKind::FsyncEio {
                            file: FileKind::Directory,
                        } => *directory,
                        FaultKind::FsyncEio { file } | FaultKind::Enospc { file } => {
                            !*directory && *file != FileKind::ConsumerOffset
                        }
                        // A frame the verify re-read found bad.
                        FaultKind::CorruptWrite { .. } => *verify && opened < i,
                        _ => {
                            !*directory
                                && kind.segment_damage().is_some()
                                && facts.damage_readable_at(i, alarm.index)
                        }
                    }
            });
            (!caused).then(|| {
                "with no fsync error or ENOSPC on the log's files, nor damage to its segments, \
                 in this incarnation"
                    .into()
            })
        }
        Alarm::FrontierReset { .. } => {
            // A replace that returned rewrote the file whole: only a fault after the last
            // such one began can have made it unreadable.
            let rewritten = last_replace_begun(facts, tp, alarm.index);
            let caused = faults(facts).any(|(i, kind, t, _)| {
                rewritten < i
                    && i < alarm.index
                    && t == Some(tp)
                    && matches!(
                        kind,
                        FaultKind::BitFlip {
                            file: FileKind::ConsumerOffset,
                            ..
                        } | FaultKind::LostFsync {
                            file: FileKind::ConsumerOffset,
                            ..
                        } | FaultKind::Misdirected { .. }
                            | FaultKind::TornWrite {
                                file: FileKind::ConsumerOffset
                            }
                    )
            });
            (!caused).then(|| {
                "with no fault on its consumer.offset since the last replace of it that \
                 returned began"
                    .into()
            })
        }
        Alarm::FrontierClamped { value, clamped } if value > clamped => {
            // The HWM fell under the frontier: a clamp below it, in this open or an
            // earlier one killed before it loaded the frontier.
            let clamp = facts
                .alarms
                .clamps(tp)
                .any(|c| c.index < alarm.index && c.hwm < *value);
            // Or a fault that moved one of the two apart: lost frames or the `hwm` word
            // (the HWM fell), or `consumer.offset` (the frontier word rose).
            let reach = facts.reaches_before(tp, alarm.index).any(|r| {
                (r.on(LOG_FILES) || r.on(HWM_FILE) || r.file == FileKind::ConsumerOffset)
                    && r.live_at(facts, alarm.index, None)
                    && r.meets(OffsetRange {
                        start: *clamped,
                        end: *value,
                    })
            });
            (!clamp && !reach).then(|| {
                "above the HWM with no clamp below it and no out-of-contract fault on the \
                 partition's log, hwm or consumer.offset reaching the gap"
                    .into()
            })
        }
        Alarm::HiddenExposed { .. } => {
            let wal_damaged = facts.alarms.store.iter().any(|a| {
                a.incarnation == alarm.incarnation
                    && a.index < alarm.index
                    && matches!(a.alarm, Alarm::WalDamaged { .. })
            });
            (!wal_damaged).then(|| "with no WAL damage reported by the same open".into())
        }
        _ => None,
    }
}

/// Rule 2, store-wide alarms.
pub(super) fn store_uncaused(facts: &Facts<'_>, alarm: &AlarmFact) -> Option<String> {
    let open = restart_of(facts, alarm.incarnation);
    let wal_fault = |i: usize, kind: &FaultKind| {
        i < alarm.index
            && matches!(
                kind,
                FaultKind::TornWrite {
                    file: FileKind::Wal
                } | FaultKind::LostWrite {
                    file: FileKind::Wal
                } | FaultKind::BitFlip {
                    file: FileKind::Wal,
                    ..
                } | FaultKind::Misdirected {
                    file: FileKind::Wal,
                    ..
                } | FaultKind::LostFsync {
                    file: FileKind::Wal,
                    ..
                } | FaultKind::FsyncEio {
                    file: FileKind::Wal
                }
            )
    };
    match &alarm.alarm {
        Alarm::TopicRefused { topic } => facts
            .reaches
            .iter()
            .all(|r| r.fault_index > alarm.index || r.topic.as_deref() != Some(topic.as_str()))
            .then(|| format!("no out-of-contract fault hit the topic.conf of {topic} before it")),
        Alarm::WalDamaged { .. } => faults(facts)
            .all(|(i, kind, _, _)| !wal_fault(i, kind))
            .then(|| "no fault hit a WAL file before it".into()),
        // A flip of the file the open read, which it could meet, or an out-of-contract
        // fault on the checkpoint's files; not a temp file's flip no rename made the
        // checkpoint (helper-113). A checkpoint the world read whole at the restart
        // takes its damage while the open runs (helper-114 H2: a stale fault on either
        // name explained a refusal of a sound file). Histories that name no read file:
        // any flip of either.
        Alarm::WalCheckpointUnreadable => {
            use crate::check::contract::{
                checkpoint_damage, checkpoint_out_of_contract, checkpoint_read_flips,
            };
            let read_whole = facts
                .checkpoint_at_open(alarm.incarnation)
                .is_some_and(|floors| floors.is_some());
            let since = if read_whole { open } else { 0 };
            let caused = match checkpoint_read_flips(facts, alarm.index, alarm.incarnation) {
                Some(flips) => {
                    flips.iter().any(|&f| f > since)
                        || checkpoint_out_of_contract(facts, alarm.index).is_some_and(|f| f > since)
                }
                None => checkpoint_damage(facts, alarm.index).is_some(),
            };
            (!caused).then(|| {
                "no flip of the checkpoint file the open read, and no out-of-contract fault on \
                 the WAL checkpoint, before it"
                    .into()
            })
        }
        Alarm::WalPoisoned => {
            // The WAL's directory fsync after a segment create fails its write too.
            let wal_dir = |path: Option<&str>| {
                path.is_some_and(|p| std::path::Path::new(p).file_name() == Some("wal".as_ref()))
            };
            let caused = faults(facts).any(|(i, kind, _, path)| {
                open <= i
                    && i < alarm.index
                    && match kind {
                        FaultKind::FsyncEio {
                            file: FileKind::Directory,
                        } => wal_dir(path),
                        FaultKind::FsyncEio {
                            file: FileKind::Wal,
                        }
                        | FaultKind::Enospc {
                            file: FileKind::Wal,
                        } => true,
                        _ => false,
                    }
            });
            (!caused).then(|| "no fsync error or ENOSPC on a WAL file in this incarnation".into())
        }
        _ => None,
    }
}

/// The history index where the last `consumer.offset` replace of `tp` that returned
/// before `before` began (0 when none did).
fn last_replace_begun(facts: &Facts<'_>, tp: &TopicPartition, before: usize) -> usize {
    let mut begun = 0;
    let mut last = 0;
    for a in facts.alarms.of(tp).iter().take_while(|a| a.index < before) {
        match a.alarm {
            Alarm::FrontierPersisting { .. } => begun = a.index,
            Alarm::FrontierPersisted { .. } => last = begun,
            _ => {}
        }
    }
    last
}
