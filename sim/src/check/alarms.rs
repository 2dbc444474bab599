//! The engine's alarms and the oracle's view of the disk at each open, indexed per
//! partition (the input of `alarms_explained` and of every excuse that rests on
//! something the engine recorded).

use std::collections::BTreeMap;

use crate::history::{Alarm, DiskView, EventKind, History, Incarnation, Offset, TopicPartition};

/// One alarm the engine raised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlarmFact {
    /// History index of the `EngineAlarm` event.
    pub index: usize,
    /// The incarnation that raised it.
    pub incarnation: Incarnation,
    pub alarm: Alarm,
}

/// Where an open cut a partition's log, by the engine's account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub index: usize,
    pub incarnation: Incarnation,
    /// The first offset cut away.
    pub offset: Offset,
    /// R1 (`true`) or R2.
    pub torn_tail: bool,
}

/// A recorded clamp: offsets `[hwm, persisted_hwm)` given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClampFact {
    pub index: usize,
    pub incarnation: Incarnation,
    pub persisted_hwm: Offset,
    pub hwm: Offset,
    pub lost: u64,
}

/// Records skipped at consume time: offsets `[base, base + records)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkipFact {
    pub index: usize,
    pub incarnation: Incarnation,
    pub base: Offset,
    pub records: u64,
    /// The whole frame failed its checks (`frame_skipped`), or only envelopes did.
    pub frame: bool,
}

impl SkipFact {
    pub fn contains(&self, offset: Offset) -> bool {
        self.base <= offset && offset < self.base + self.records
    }
}

/// The alarms of a run, per partition, with the disk each open read.
#[derive(Clone, Debug, Default)]
pub struct AlarmIndex {
    pub by_tp: BTreeMap<TopicPartition, Vec<AlarmFact>>,
    /// Alarms not about one partition (the WAL).
    pub store: Vec<AlarmFact>,
    /// `DiskAtOpen` per partition and incarnation: (history index, view), the restart's
    /// first, then one per damage that landed while the open ran.
    pub disks: BTreeMap<(TopicPartition, Incarnation), Vec<(usize, DiskView)>>,
}

impl AlarmIndex {
    pub fn new(history: &History) -> Self {
        let mut index = AlarmIndex::default();
        for (i, event) in history.events().iter().enumerate() {
            match &event.kind {
                EventKind::EngineAlarm {
                    tp,
                    alarm,
                    raised_in,
                } => {
                    let fact = AlarmFact {
                        index: i,
                        incarnation: raised_in.unwrap_or(event.incarnation),
                        alarm: alarm.clone(),
                    };
                    match tp {
                        Some(tp) => index.by_tp.entry(tp.clone()).or_default().push(fact),
                        None => index.store.push(fact),
                    }
                }
                EventKind::DiskAtOpen {
                    tp,
                    disk,
                    while_open,
                } => {
                    let views = index.disks.entry((tp.clone(), event.incarnation));
                    // A view taken while the open ran is an alternative to the restart's,
                    // never the only one (the partition may be new in this open).
                    match views {
                        std::collections::btree_map::Entry::Vacant(v) if !*while_open => {
                            v.insert(vec![(i, disk.clone())]);
                        }
                        std::collections::btree_map::Entry::Occupied(mut o) => {
                            o.get_mut().push((i, disk.clone()));
                        }
                        std::collections::btree_map::Entry::Vacant(_) => {}
                    }
                }
                _ => {}
            }
        }
        index
    }

    /// The alarms of `tp`, in history order.
    pub fn of(&self, tp: &TopicPartition) -> &[AlarmFact] {
        self.by_tp.get(tp).map_or(&[], Vec::as_slice)
    }

    /// The R1/R2 cuts on `tp`.
    pub fn cuts<'a>(&'a self, tp: &TopicPartition) -> impl Iterator<Item = Cut> + 'a {
        self.of(tp).iter().filter_map(|a| match &a.alarm {
            Alarm::TornTail { offset, .. } | Alarm::Hole { offset, .. } => Some(Cut {
                index: a.index,
                incarnation: a.incarnation,
                offset: *offset,
                torn_tail: matches!(a.alarm, Alarm::TornTail { .. }),
            }),
            _ => None,
        })
    }

    /// Whether an open of `incarnation` reported the WAL damaged (it replayed it).
    pub fn wal_damaged_in(&self, incarnation: Incarnation) -> bool {
        self.store
            .iter()
            .any(|a| a.incarnation == incarnation && matches!(a.alarm, Alarm::WalDamaged { .. }))
    }

    /// The recorded clamps on `tp`.
    pub fn clamps<'a>(&'a self, tp: &TopicPartition) -> impl Iterator<Item = ClampFact> + 'a {
        self.of(tp).iter().filter_map(|a| match &a.alarm {
            Alarm::Clamp {
                persisted_hwm,
                hwm,
                lost,
            } => Some(ClampFact {
                index: a.index,
                incarnation: a.incarnation,
                persisted_hwm: *persisted_hwm,
                hwm: *hwm,
                lost: *lost,
            }),
            _ => None,
        })
    }

    /// The consume-time skips on `tp`.
    pub fn skips<'a>(&'a self, tp: &TopicPartition) -> impl Iterator<Item = SkipFact> + 'a {
        self.of(tp).iter().filter_map(|a| match &a.alarm {
            Alarm::FrameSkipped { base, records } | Alarm::RecordsSkipped { base, records } => {
                Some(SkipFact {
                    index: a.index,
                    incarnation: a.incarnation,
                    base: *base,
                    records: *records,
                    frame: matches!(a.alarm, Alarm::FrameSkipped { .. }),
                })
            }
            _ => None,
        })
    }

    /// The refusal of `tp` after history index `after` that stands: the first one no
    /// later incarnation opened the partition past. A refused open changes nothing on
    /// disk, so once a later open gets past the damage (a power loss took it back),
    /// what becomes of the records is that open's doing, not the refusal's.
    pub fn refusal_after(&self, tp: &TopicPartition, after: usize) -> Option<&AlarmFact> {
        let reopened = self.last_opened(tp, after);
        self.of(tp).iter().find(|a| {
            a.index > after
                && matches!(a.alarm, Alarm::Refused { .. })
                && reopened.is_none_or(|o| a.incarnation > o)
        })
    }

    /// Whether the open of `incarnation` refused `tp` (R3) or its whole topic (its
    /// `topic.conf` unreadable).
    pub fn refused_in(&self, tp: &TopicPartition, incarnation: Incarnation) -> bool {
        self.refusals(tp).any(|inc| inc == incarnation)
    }

    /// The incarnations whose open refused `tp` or its whole topic.
    fn refusals<'a>(&'a self, tp: &'a TopicPartition) -> impl Iterator<Item = Incarnation> + 'a {
        let own = self
            .of(tp)
            .iter()
            .filter(|a| matches!(a.alarm, Alarm::Refused { .. }));
        let topic = self.store.iter().filter(
            move |a| matches!(&a.alarm, Alarm::TopicRefused { topic } if *topic == tp.topic),
        );
        own.chain(topic).map(|a| a.incarnation)
    }

    /// The last incarnation that raised an alarm of `tp` after history index `after`
    /// without refusing it: one that had `tp` open.
    pub fn last_opened(&self, tp: &TopicPartition, after: usize) -> Option<Incarnation> {
        let refused: Vec<Incarnation> = self.refusals(tp).collect();
        self.of(tp)
            .iter()
            .filter(|a| a.index > after && !refused.contains(&a.incarnation))
            .map(|a| a.incarnation)
            .max()
    }

    /// The disk the open of `incarnation` found for `tp` at the restart.
    pub fn disk_at(&self, tp: &TopicPartition, incarnation: Incarnation) -> Option<&DiskView> {
        self.disks
            .get(&(tp.clone(), incarnation))
            .and_then(|v| v.first())
            .map(|(_, d)| d)
    }

    /// Every view of `tp`'s disk taken for the open of `incarnation` before `index`.
    pub fn views_before(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
        index: usize,
    ) -> Vec<&DiskView> {
        self.disks
            .get(&(tp.clone(), incarnation))
            .map(|v| {
                v.iter()
                    .filter(|(i, _)| *i < index)
                    .map(|(_, d)| d)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The last view of `tp`'s disk taken for the open of `incarnation` before `index`.
    pub fn view_before(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
        index: usize,
    ) -> Option<&DiskView> {
        self.views_before(tp, incarnation, index).last().copied()
    }

    /// The store-wide alarms of one kind's name, with their incarnation.
    pub fn store_alarms<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a AlarmFact> + 'a {
        self.store.iter().filter(move |a| a.alarm.name() == name)
    }
}
