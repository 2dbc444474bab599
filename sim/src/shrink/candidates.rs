//! One-step-smaller versions of a run, for the shrink's greedy pass: fewer schedule
//! entries, topics, partitions, producers and consumers; a shorter run with fewer
//! records; knobs back at their defaults; faults switched off; and, when nothing else
//! cuts, kills aimed at acknowledgements instead of times.
//!
//! Invariant: every partition that still exists keeps a consumer. Without one nothing
//! is delivered, and every acknowledged record would look lost: a different failure
//! that only looks like the one being shrunk.

use crate::world::{RunOutcome, RunSpec};
use cafelog_engine::log::LogConfig;
use cafelog_engine::store::TopicConfig;

/// A one-step change, and what it does.
pub type Candidate = (String, RunSpec);

/// Every one-step-smaller version of `spec` (which ran as `outcome`), the biggest cuts
/// first.
pub fn candidates(spec: &RunSpec, outcome: &RunOutcome) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut push = |label: String, f: &dyn Fn(&mut RunSpec)| {
        let mut c = spec.clone();
        f(&mut c);
        if c.schedule != spec.schedule
            || c.workload != spec.workload
            || c.mix != spec.mix
            || c.profile != spec.profile
        {
            out.push((label, c));
        }
    };
    if let Some(schedule) = &spec.schedule {
        for i in (0..schedule.len()).rev() {
            push(format!("drop schedule entry {i}"), &|c| {
                if let Some(s) = &mut c.schedule {
                    s.remove(i);
                }
            });
        }
    } else {
        let m = &spec.mix;
        if let Some(only) = &m.only {
            for (i, n) in only.iter().enumerate().rev() {
                push(format!("drop the swarm's fault {n}"), &|c| {
                    if let Some(o) = &mut c.mix.only {
                        o.remove(i);
                    }
                });
            }
        }
        push("halve crashes_max".into(), &|c| {
            c.mix.crashes_max = m.crashes_max / 2
        });
        push("no bit flips".into(), &|c| c.mix.bit_flips_max = 0);
        push("no clock steps".into(), &|c| c.mix.clock_steps_max = 0);
        push("no aimed crashes".into(), &|c| {
            c.mix.crash_after_commit_fraction = 0.0
        });
        push("no process crashes".into(), &|c| {
            c.mix.process_crash_fraction = 0.0
        });
        push("no latent sectors".into(), &|c| {
            c.mix.latent_sectors_max = 0
        });
    }
    workload(spec, &mut push);
    profile(spec, outcome, &mut push);
    dropping_consumers(spec, &mut push);
    knobs(spec, &mut push);
    disk_caps(spec, outcome, &mut push);
    mix(&mut push);
    // Not smaller, so last: once nothing else cuts, kills aimed at acknowledgements
    // let the cuts above be tried again without moving the kills.
    if let Some(aimed) = spec
        .schedule
        .as_deref()
        .and_then(|s| super::aim::aimed_at_acks(s, outcome))
    {
        push("kills aimed at acknowledgements".into(), &|c| {
            c.schedule = Some(aimed.clone())
        });
    }
    if let Some(aimed) = spec
        .schedule
        .as_deref()
        .and_then(|s| super::aim::aimed_at_events(s, outcome))
    {
        push("kills aimed at acknowledgements and alarms".into(), &|c| {
            c.schedule = Some(aimed.clone())
        });
    }
    out
}

/// The disk's last fault of each capped kind cut off: a cap one below what fired, so
/// the run up to that fault is the same.
fn disk_caps(spec: &RunSpec, outcome: &RunOutcome, push: &mut Push<'_>) {
    type Cap = fn(&mut crate::fs::FaultOptions) -> &mut u32;
    let caps: [(&str, Cap); 4] = [
        ("fsync_eio", |o| &mut o.fsync_eio_max),
        ("lost_fsync", |o| &mut o.lost_fsync_max),
        ("misdirected", |o| &mut o.misdirect_max),
        ("enospc", |o| &mut o.enospc_max),
    ];
    for (name, cap) in caps {
        let fired = outcome.faults.get(name).copied().unwrap_or(0);
        let fired = u32::try_from(fired).unwrap_or(u32::MAX);
        let mut fs = spec.mix.fs.clone();
        if fired == 0 || *cap(&mut fs) < fired {
            continue;
        }
        push(format!("{name}_max {}", fired - 1), &|c| {
            *cap(&mut c.mix.fs) = fired - 1
        });
    }
}

type Push<'a> = dyn FnMut(String, &dyn Fn(&mut RunSpec)) + 'a;

/// Topics, partitions, producers and consumers.
fn workload(spec: &RunSpec, push: &mut Push<'_>) {
    let w = &spec.workload;
    for t in (0..w.topics.len()).rev() {
        // A topic goes only if a producer is left elsewhere: without producers a run
        // cannot fail in any interesting way.
        if w.topics.len() > 1 && w.producers.iter().any(|p| p.topic != t) {
            push(format!("drop topic {}", w.topics[t].name), &|c| {
                drop_topic(c, t)
            });
        }
        if w.topics[t].config.partitions > 1 {
            push(
                format!("one partition fewer in {}", w.topics[t].name),
                &|c| {
                    let last = c.workload.topics[t].config.partitions - 1;
                    c.workload.topics[t].config.partitions = last;
                    c.workload
                        .consumers
                        .retain(|k| !(k.topic == t && k.partition == last));
                },
            );
        }
    }
    if w.producers.len() > 1 {
        for i in (0..w.producers.len()).rev() {
            push(format!("drop producer {i}"), &|c| {
                c.workload.producers.remove(i);
            });
        }
    }
    for (i, k) in w.consumers.iter().enumerate().rev() {
        let others = w
            .consumers
            .iter()
            .filter(|o| o.topic == k.topic && o.partition == k.partition)
            .count();
        if others > 1 {
            push(format!("drop consumer {i}"), &|c| {
                c.workload.consumers.remove(i);
            });
        }
    }
}

/// Removes topic `t` with its producers and consumers; later topics shift down.
fn drop_topic(spec: &mut RunSpec, t: usize) {
    let w = &mut spec.workload;
    w.topics.remove(t);
    w.producers.retain(|p| p.topic != t);
    w.consumers.retain(|c| c.topic != t);
    for p in &mut w.producers {
        if p.topic > t {
            p.topic -= 1;
        }
    }
    for c in &mut w.consumers {
        if c.topic > t {
            c.topic -= 1;
        }
    }
}

/// A shorter run with fewer records: producing stops just past the last event the
/// violation names, or at half the time.
fn profile(spec: &RunSpec, outcome: &RunOutcome, push: &mut Push<'_>) {
    let p = &spec.profile;
    let named = outcome.verdict.failure().and_then(|f| {
        f.context
            .iter()
            .filter(|c| c.focus)
            .map(|c| c.event.at_ms)
            .max()
    });
    if let Some(at) = named.map(|t| t + 50).filter(|&t| t < p.produce_ms) {
        push(
            format!("produce_ms {at} (the violation's last event + 50)"),
            &|c| c.profile.produce_ms = at,
        );
    }
    // With only some ids sent, the cap can fall to the last of them at once.
    if let Some(&last) = p.only_ids.as_ref().and_then(|ids| ids.last())
        && last + 1 < p.records_max
    {
        push(
            format!("records_max {} (past the last id sent)", last + 1),
            &|c| c.profile.records_max = last + 1,
        );
    }
    for records in [p.records_max / 2, p.records_max * 3 / 4, p.records_max - 1] {
        if records >= 1 && records < p.records_max {
            push(format!("records_max {records}"), &|c| {
                c.profile.records_max = records
            });
        }
    }
    if p.produce_ms > 100 {
        push(format!("produce_ms {}", p.produce_ms / 2), &|c| {
            c.profile.produce_ms = p.produce_ms / 2
        });
    }
    if p.heal_ms > 100 {
        push(format!("heal_ms {}", p.heal_ms / 2), &|c| {
            c.profile.heal_ms = p.heal_ms / 2
        });
    }
}

/// Half the records, with one consumer dropping every delivery it gets. A record that
/// a rare drop left unacknowledged (a lease or redelivery story) otherwise needs every
/// record a low drop rate takes to reach it; the pair is only kept when the shorter run
/// still fails, so a story that needs acks loses nothing.
fn dropping_consumers(spec: &RunSpec, push: &mut Push<'_>) {
    let records = spec.profile.records_max / 2;
    if records == 0 {
        return;
    }
    for (i, k) in spec.workload.consumers.iter().enumerate().rev() {
        if k.drop_probability < 1.0 {
            push(
                format!("consumer {i} drops every delivery; records_max {records}"),
                &|c| {
                    c.workload.consumers[i].drop_probability = 1.0;
                    c.profile.records_max = records;
                },
            );
        }
    }
}

/// A topic knob: its name, and a setter that puts it back to its default.
type Knob = (&'static str, fn(&mut TopicConfig, &TopicConfig));

/// Every knob a topic's configuration has, each settable to its default.
const KNOBS: &[Knob] = &[
    ("delay_ms", |c, d| c.delay_ms = d.delay_ms),
    ("lease_ms", |c, d| c.lease_ms = d.lease_ms),
    ("codec", |c, d| c.log.codec = d.log.codec),
    ("zstd_level", |c, d| c.log.zstd_level = d.log.zstd_level),
    ("zstd_hash_log", |c, d| {
        c.log.zstd_hash_log = d.log.zstd_hash_log
    }),
    ("compress_min_bytes", |c, d| {
        c.log.compress_min_bytes = d.log.compress_min_bytes
    }),
    ("segment_bytes", |c, d| {
        c.log.segment_bytes = d.log.segment_bytes
    }),
    ("preallocate_bytes", |c, d| {
        c.log.preallocate_bytes = d.log.preallocate_bytes
    }),
    ("flush_bytes", |c, d| c.log.flush_bytes = d.log.flush_bytes),
    ("flush_records", |c, d| {
        c.log.flush_records = d.log.flush_records
    }),
    ("flush_interval", |c, d| {
        c.log.flush_interval = d.log.flush_interval
    }),
    ("fsync", |c, d| c.log.fsync = d.log.fsync),
    ("sync_interval", |c, d| {
        c.log.sync_interval = d.log.sync_interval
    }),
    ("sync_bytes", |c, d| c.log.sync_bytes = d.log.sync_bytes),
    ("hwm_persist_interval", |c, d| {
        c.log.hwm_persist_interval = d.log.hwm_persist_interval
    }),
    ("retention_ms", |c, d| {
        c.log.retention_ms = d.log.retention_ms
    }),
    ("reaper_interval", |c, d| {
        c.log.reaper_interval = d.log.reaper_interval
    }),
];

/// Knobs that differ from their defaults in `config`.
pub fn changed_knobs(config: &TopicConfig) -> impl Iterator<Item = &'static str> + '_ {
    let default = default_config();
    KNOBS.iter().filter_map(move |(name, set)| {
        let mut c = config.clone();
        set(&mut c, &default);
        (c != *config).then_some(*name)
    })
}

fn default_config() -> TopicConfig {
    TopicConfig {
        log: LogConfig::default(),
        ..TopicConfig::default()
    }
}

/// Each topic knob back to its default, one at a time, and the store's.
fn knobs(spec: &RunSpec, push: &mut Push<'_>) {
    push("the WAL segment size to its default".into(), &|c| {
        c.workload.wal_segment_bytes = crate::world::workload::default_wal_segment_bytes()
    });
    push("every frontier loaded at the open".into(), &|c| {
        c.workload.frontier_at_open = true
    });
    let default = default_config();
    for (t, topic) in spec.workload.topics.iter().enumerate() {
        for (name, set) in KNOBS {
            push(format!("{} {name} to its default", topic.name), &|c| {
                set(&mut c.workload.topics[t].config, &default)
            });
        }
    }
}

/// Turns one fault off.
type SwitchOff = fn(&mut RunSpec);

/// The disk's and the server's faults, one at a time.
fn mix(push: &mut Push<'_>) {
    let offs: [(&str, SwitchOff); 15] = [
        ("no fsync EIO", |c| c.mix.fs.fsync_eio_max = 0),
        ("no directory fsync EIO", |c| c.mix.fs.dir_fsync_eio_max = 0),
        ("no lost fsync", |c| c.mix.fs.lost_fsync_max = 0),
        ("no ENOSPC", |c| c.mix.fs.enospc_max = 0),
        ("no misdirected writes", |c| c.mix.fs.misdirect_max = 0),
        ("no corrupt writes", |c| c.mix.fs.corrupt_write_max = 0),
        ("no latency", |c| {
            c.mix.fs.latency_probability = 0.0;
            c.mix.fs.latency_after_probability = 0.0;
        }),
        ("no yields", |c| c.mix.fs.yield_probability = 0.0),
        ("no torn writes at crashes", |c| {
            c.mix.fs.crash_write_torn_probability = 0.0
        }),
        ("no lost writes at crashes", |c| {
            c.mix.fs.crash_write_lost_probability = 0.0
        }),
        ("no lost truncations at crashes", |c| {
            c.mix.fs.crash_set_len_lost_probability = 0.0
        }),
        ("no cancelled requests", |c| c.mix.cancel_probability = 0.0),
        ("no dropped loops", |c| c.mix.loop_drops = false),
        ("no dropped settles", |c| c.mix.settle_drops = false),
        ("no latent sector draws", |c| {
            c.mix.latent_sector_probability = 0.0
        }),
    ];
    for (label, off) in offs {
        push(label.into(), &|c| off(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use crate::world::run;

    /// Whether every partition of `spec` has a consumer.
    fn every_partition_consumed(spec: &RunSpec) -> bool {
        let w = &spec.workload;
        w.topics.iter().enumerate().all(|(t, topic)| {
            (0..topic.config.partitions)
                .all(|p| w.consumers.iter().any(|k| k.topic == t && k.partition == p))
        })
    }

    #[test]
    fn no_candidate_leaves_a_partition_without_a_consumer() {
        let mut checked = 0;
        for seed in 0..40 {
            let spec = RunSpec::from_seed(seed, &Profile::quick());
            if !every_partition_consumed(&spec) {
                continue;
            }
            for (label, candidate) in candidates(&spec, &run(&spec)) {
                assert!(every_partition_consumed(&candidate), "seed {seed}: {label}");
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked} candidates checked");
    }

    #[test]
    fn a_dropping_consumer_comes_only_with_half_the_records() {
        let spec = RunSpec::from_seed(7, &Profile::quick());
        let half = spec.profile.records_max / 2;
        let dropping: Vec<Candidate> = candidates(&spec, &run(&spec))
            .into_iter()
            .filter(|(label, _)| label.contains("drops every delivery"))
            .collect();
        let droppers = spec
            .workload
            .consumers
            .iter()
            .filter(|k| k.drop_probability < 1.0)
            .count();
        assert!(droppers > 0);
        assert_eq!(dropping.len(), droppers);
        for (label, c) in dropping {
            assert_eq!(c.profile.records_max, half, "{label}");
            let changed: Vec<usize> = (0..c.workload.consumers.len())
                .filter(|&i| c.workload.consumers[i] != spec.workload.consumers[i])
                .collect();
            assert_eq!(changed.len(), 1, "{label}");
            assert_eq!(c.workload.consumers[changed[0]].drop_probability, 1.0);
        }
    }

    #[test]
    fn every_knob_has_a_candidate_that_resets_it() {
        let spec = RunSpec::from_seed(7, &Profile::quick());
        let topic = &spec.workload.topics[0];
        let changed: Vec<&str> = changed_knobs(&topic.config).collect();
        assert!(changed.len() >= 5, "{changed:?}");
        let labels: Vec<String> = candidates(&spec, &run(&spec))
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        for knob in changed {
            let label = format!("{} {knob} to its default", topic.name);
            assert!(labels.contains(&label), "{label}");
        }
    }
}
