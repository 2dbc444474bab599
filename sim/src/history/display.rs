//! How an event reads in a trace: one line each, `kind key=value ...`, the form
//! `cafelog replay --trace` prints and the corpus and issue notes quote.

use super::*;

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ms inc={} ", self.at_ms, self.incarnation)?;
        match &self.kind {
            EventKind::ProduceAttempt {
                id,
                topic,
                partition,
                ..
            } => match partition {
                Some(p) => write!(f, "produce_attempt id={id} {topic}/{p}"),
                None => write!(f, "produce_attempt id={id} {topic}"),
            },
            EventKind::ProduceAck {
                id,
                tp,
                offset,
                committed_at_ms,
            } => write!(
                f,
                "produce_ack id={id} {tp} offset={} committed_at_ms={}",
                opt(offset),
                opt(committed_at_ms)
            ),
            EventKind::ProduceFailed { id, error } => {
                write!(f, "produce_failed id={id} error={error:?}")
            }
            EventKind::Delivery {
                tp,
                offset,
                payload,
                committed_at_ms,
                attempt,
                ..
            } => write!(
                f,
                "delivery {tp} offset={offset} id={} committed_at_ms={committed_at_ms} \
                 attempt={attempt}",
                parse_payload_id(payload).map_or_else(|e| e.to_string(), |id| id.to_string())
            ),
            EventKind::Ack { tp, offset } => write!(f, "ack {tp} offset={offset}"),
            EventKind::Nack { tp, offset } => write!(f, "nack {tp} offset={offset}"),
            EventKind::HwmWriteIssued { tp, word } => {
                write!(f, "hwm_write_issued {tp} word={word}")
            }
            EventKind::HwmWriteLowered { tp, word, highest } => {
                write!(f, "hwm_write_lowered {tp} word={word} highest={highest}")
            }
            EventKind::FrontierWritten { tp, frontier } => {
                write!(f, "frontier_written {tp} frontier={frontier}")
            }
            EventKind::FrontierObserved {
                tp,
                frontier,
                loaded,
                found,
            } => {
                write!(f, "frontier_observed {tp} frontier={frontier}")?;
                if let Some(w) = found {
                    write!(f, " found={w}")?;
                }
                match loaded {
                    Some(l) => write!(f, " loaded={l}"),
                    None => Ok(()),
                }
            }
            EventKind::Crash {
                partitions,
                process,
            } => {
                write!(f, "{}:", if *process { "process_crash" } else { "crash" })?;
                for p in partitions {
                    write!(
                        f,
                        " {} persisted_hwm={} durable_tail={} memory_hwm={};",
                        p.tp,
                        p.persisted_hwm,
                        p.durable_tail,
                        opt(&p.memory_hwm)
                    )?;
                }
                Ok(())
            }
            EventKind::Restart => write!(f, "restart"),
            EventKind::PartitionRefused { tp, reason } => {
                write!(f, "partition_refused {tp} reason={reason:?}")
            }
            EventKind::RefusedPartitionChanged {
                tp,
                path,
                change,
                changed_ms,
            } => write!(
                f,
                "refused_partition_changed {tp}: {change} {path} at {changed_ms}ms"
            ),
            EventKind::RefusedTopicChanged {
                topic,
                path,
                change,
                changed_ms,
            } => write!(
                f,
                "refused_topic_changed {topic}: {change} {path} at {changed_ms}ms"
            ),
            EventKind::PartitionPoisoned { tp } => write!(f, "partition_poisoned {tp}"),
            EventKind::DeliveriesUnclaimed {
                tp, offsets, ids, ..
            } => {
                write!(f, "deliveries_unclaimed {tp} offsets={offsets:?}")?;
                if !ids.is_empty() {
                    let ids: Vec<String> = ids
                        .iter()
                        .map(|id| id.map_or_else(|| "?".to_owned(), |id| id.to_string()))
                        .collect();
                    write!(f, " ids=[{}]", ids.join(", "))?;
                }
                Ok(())
            }
            EventKind::DamageHeld {
                fault_index,
                tp,
                held,
            } => write!(
                f,
                "damage_held by event #{fault_index}: {tp} records={}",
                held.len()
            ),
            EventKind::ReachHeld {
                fault_index,
                tp,
                held,
            } => write!(
                f,
                "reach_held by event #{fault_index}: {tp} records={}",
                held.len()
            ),
            EventKind::HiddenAtOpen { tp, from, to, held } => write!(
                f,
                "hidden_at_open {tp} [{from}, {to}) records={}",
                held.len()
            ),
            EventKind::ReceiveKilled { tp, asked_at_ms } => {
                write!(f, "receive_killed {tp} asked_at_ms={asked_at_ms}")
            }
            EventKind::PastHoleAtOpen { tp, held } => {
                write!(f, "past_hole_at_open {tp} records={}", held.len())
            }
            EventKind::FrameAtSkip {
                tp,
                base,
                records,
                whole,
            } => write!(
                f,
                "frame_at_skip {tp} [{base}, {}) {}",
                base + records,
                if *whole { "whole" } else { "damaged" }
            ),
            EventKind::HeldAtRefusal {
                tp,
                bad_offset,
                log,
                wal,
            } => write!(
                f,
                "held_at_refusal {tp} bad_offset={} log_records={} wal_entries={}",
                bad_offset.map_or_else(|| "none".to_owned(), |o| o.to_string()),
                log.len(),
                wal.len()
            ),
            EventKind::WalAtEnd {
                opened_ms,
                segments,
                checkpoint,
                active,
                segment_bytes,
                floors,
            } => {
                write!(
                    f,
                    "wal_at_end opened_ms={opened_ms} active={active} \
                     segment_bytes={segment_bytes} checkpoint="
                )?;
                match checkpoint {
                    None => write!(f, "none")?,
                    Some(c) => {
                        for (tp, seq) in c {
                            write!(f, "{tp}@{seq},")?;
                        }
                    }
                }
                if !floors.is_empty() {
                    write!(f, " floors=")?;
                    for (tp, offset) in floors {
                        write!(f, "{tp}@{offset},")?;
                    }
                }
                write!(f, " segments:")?;
                for s in segments {
                    write!(f, " {} ({} entries:", s.base, s.entries)?;
                    for (tp, end) in &s.ends {
                        write!(f, " {tp} to {end}")?;
                    }
                    if let Some(at) = s.last_frame_at {
                        write!(f, ", last frame at {at}")?;
                    }
                    write!(f, ");")?;
                }
                Ok(())
            }
            EventKind::WalKeptAtPowerLoss { entries } => {
                write!(f, "wal_kept_at_power_loss:")?;
                for e in entries {
                    write!(f, " {} id={} seq={};", e.tp, e.id, e.seq)?;
                }
                Ok(())
            }
            EventKind::WalDurableAtKill { entries } => {
                write!(f, "wal_durable_at_kill:")?;
                for e in entries {
                    write!(f, " {} id={} seq={};", e.tp, e.id, e.seq)?;
                }
                Ok(())
            }
            EventKind::WalCachedAtKill { entries } => {
                write!(f, "wal_cached_at_kill:")?;
                for e in entries {
                    write!(f, " {} id={} seq={};", e.tp, e.id, e.seq)?;
                }
                Ok(())
            }
            EventKind::VisibleAtOpen { tp, from, to, held } => write!(
                f,
                "visible_at_open {tp} [{from}, {to}) records={}",
                held.len()
            ),
            EventKind::SalvageWrote { tp, kept, copied } => {
                write!(f, "salvage_wrote {tp} kept={kept:?} copied={copied:?}")
            }
            EventKind::LayoutObserved { tp, segments, .. } => write!(
                f,
                "layout_observed {tp} segments={} frames={}",
                segments.len(),
                segments.iter().map(|s| u64::from(s.frames)).sum::<u64>()
            ),
            EventKind::FrontierSkipped { tp, from, to, held } => write!(
                f,
                "frontier_skipped {tp} [{from}, {to}) records={}",
                held.len()
            ),
            EventKind::ReceiveEmpty {
                tp,
                asked_at_ms,
                error,
            } => {
                write!(f, "receive_empty {tp} asked_at_ms={asked_at_ms}")?;
                match error {
                    Some(e) => write!(f, " error={e:?}"),
                    None => Ok(()),
                }
            }
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm,
                durable_tail,
            } => write!(
                f,
                "hwm_observed {tp} hwm={hwm} persisted_hwm={} durable_tail={}",
                opt(persisted_hwm),
                opt(durable_tail)
            ),
            EventKind::HwmWordObserved { tp, word } => {
                write!(f, "hwm_word_observed {tp} word={}", opt(word))
            }
            EventKind::FrontierWordObserved { tp, word } => {
                write!(f, "frontier_word_observed {tp} word={}", opt(word))
            }
            EventKind::LogStartObserved { tp, log_start } => {
                write!(f, "log_start_observed {tp} log_start={log_start}")
            }
            EventKind::SegmentCreated { tp, base } => {
                write!(f, "segment_created {tp} base={base}")
            }
            EventKind::SegmentDeleted { tp, base, held } => {
                write!(f, "segment_deleted {tp} base={base} records={}", held.len())
            }
            EventKind::SegmentsListed { tp, bases } => {
                write!(f, "segments_listed {tp} bases={bases:?}")
            }
            EventKind::WalAtOpen {
                skipped_bytes,
                corrupt_entries,
            } => write!(
                f,
                "wal_at_open skipped_bytes={skipped_bytes} corrupt_entries={corrupt_entries}"
            ),
            EventKind::CheckpointAtOpen { floors: None, .. } => {
                write!(f, "checkpoint_at_open unreadable")
            }
            EventKind::CheckpointAtOpen {
                floors: Some(floors),
                ..
            } => {
                write!(f, "checkpoint_at_open")?;
                write_floors(f, floors)
            }
            EventKind::CheckpointDamaged {
                fault_index,
                floors: None,
                ..
            } => write!(
                f,
                "checkpoint_damaged by #{fault_index}: unreadable before it"
            ),
            EventKind::CheckpointDamaged {
                fault_index,
                floors: Some(floors),
                ..
            } => {
                write!(f, "checkpoint_damaged by #{fault_index}: held")?;
                write_floors(f, floors)
            }
            EventKind::FlipMissedCache { fault_index } => {
                write!(f, "flip_missed_cache by #{fault_index}: the platter's only")
            }
            EventKind::WordFlipped {
                fault_index,
                read_as,
                from,
                to,
                written,
            } => write!(
                f,
                "word_flipped by #{fault_index}: {read_as} reads {from} -> {to}{}",
                if *written {
                    " (the file last written)"
                } else {
                    ""
                }
            ),
            EventKind::EngineCounters {
                tp,
                recorded_loss_records,
                skipped_records,
            } => write!(
                f,
                "engine_counters {tp} recorded_loss_records={recorded_loss_records} \
                 skipped_records={skipped_records}"
            ),
            EventKind::Fault { kind, tp, path } => {
                write!(f, "fault {kind:?}")?;
                if let Some(tp) = tp {
                    write!(f, " on {tp}")?;
                }
                if let Some(path) = path {
                    write!(f, " file {path}")?;
                }
                Ok(())
            }
            EventKind::Heal => write!(f, "heal"),
            EventKind::RunStarted {
                wall_base_ms,
                topics,
                io_latency_max_ms,
                frontier_persist_ms,
                ..
            } => {
                write!(f, "run_started wall_base_ms={wall_base_ms}")?;
                if *io_latency_max_ms > 0 {
                    write!(f, " io_latency_max_ms={io_latency_max_ms}")?;
                }
                if let Some(ms) = frontier_persist_ms {
                    write!(f, " frontier_persist_ms={ms}")?;
                }
                for t in topics {
                    write!(
                        f,
                        "; {} partitions={} delay_ms={} lease_ms={}",
                        t.name, t.partitions, t.delay_ms, t.lease_ms
                    )?;
                }
                Ok(())
            }
            EventKind::WalEntriesDamaged {
                fault_index,
                first_replay,
                entries,
            } => {
                write!(
                    f,
                    "wal_entries_damaged by event #{fault_index} (first replay inc \
                     {first_replay}):"
                )?;
                for e in entries {
                    write!(f, " {} id={} seq={};", e.tp, e.id, e.seq)?;
                }
                Ok(())
            }
            EventKind::DiskAtOpen {
                tp,
                disk,
                while_open,
            } => {
                let when = if *while_open {
                    " (damage while opening)"
                } else {
                    ""
                };
                write!(f, "disk_at_open {tp} {disk}{when}")
            }
            EventKind::EngineAlarm {
                tp,
                alarm,
                raised_in,
            } => {
                match tp {
                    Some(tp) => write!(f, "engine_alarm {tp} {alarm}")?,
                    None => write!(f, "engine_alarm {alarm}")?,
                }
                match raised_in {
                    Some(inc) => write!(f, " (raised by incarnation {inc})"),
                    None => Ok(()),
                }
            }
        }
    }
}

fn opt(value: &Option<u64>) -> String {
    value.map_or_else(|| "?".to_owned(), |v| v.to_string())
}

/// A checkpoint's floors, each as ` tp seq=S offset=O`.
fn write_floors(f: &mut fmt::Formatter<'_>, floors: &[CheckpointFloor]) -> fmt::Result {
    for CheckpointFloor { tp, seq, offset } in floors {
        write!(f, " {tp} seq={seq} offset={offset}")?;
    }
    Ok(())
}
