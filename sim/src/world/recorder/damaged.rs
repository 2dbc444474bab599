//! The partitions whose segments took damage at rest (a bit flip, a latent sector) that
//! no completed scan has passed since. A crash lifts such a partition's durable tail to
//! its persisted word (the frames under the word may be the damaged ones, which the
//! durable image's walk stops at), so the set must not outlive the damage's reach.
//!
//! Invariants:
//! - a partition is in the set from the damage until a `log_opened` of a *later*
//!   incarnation: that open scanned past the damage, cut it, and fsynced its cut and its
//!   word before the alarm, so a later crash's tail is the image's walk again;
//! - an open of the incarnation the damage hit does not clear it: that open ran before
//!   the damage (a flip lands on a running incarnation's files).

use crate::history::{Incarnation, TopicPartition};
use std::collections::BTreeMap;

/// See the module docs.
#[derive(Debug, Default)]
pub struct Damaged {
    /// The incarnation each partition was last damaged in.
    last: BTreeMap<TopicPartition, Incarnation>,
}

impl Damaged {
    /// Damage at rest reached a segment of `tp` while `incarnation` ran.
    pub fn hit(&mut self, tp: &TopicPartition, incarnation: Incarnation) {
        self.last.insert(tp.clone(), incarnation);
    }

    /// The open of `tp` by `incarnation` completed (its `log_opened` alarm).
    pub fn opened(&mut self, tp: &TopicPartition, incarnation: Incarnation) {
        if self.last.get(tp).is_some_and(|&d| d < incarnation) {
            self.last.remove(tp);
        }
    }

    /// The partitions a crash now must lift.
    pub fn partitions(&self) -> impl Iterator<Item = &TopicPartition> {
        self.last.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(partition: u32) -> TopicPartition {
        TopicPartition {
            topic: "orders".into(),
            partition,
        }
    }

    fn listed(d: &Damaged) -> Vec<u32> {
        d.partitions().map(|t| t.partition).collect()
    }

    #[test]
    fn a_later_incarnations_open_clears_only_its_partition() {
        let mut d = Damaged::default();
        d.hit(&tp(0), 1);
        d.hit(&tp(1), 1);
        d.opened(&tp(0), 2);
        assert_eq!(listed(&d), vec![1]);
    }

    #[test]
    fn an_open_of_the_damaged_incarnation_keeps_it() {
        let mut d = Damaged::default();
        d.hit(&tp(0), 3);
        d.opened(&tp(0), 3);
        assert_eq!(listed(&d), vec![0]);
        d.opened(&tp(0), 2);
        assert_eq!(
            listed(&d),
            vec![0],
            "an older incarnation's open never clears"
        );
    }

    #[test]
    fn damage_after_an_open_is_kept_until_the_next_incarnations_open() {
        let mut d = Damaged::default();
        d.hit(&tp(0), 1);
        d.opened(&tp(0), 2);
        d.hit(&tp(0), 2);
        d.opened(&tp(0), 2);
        assert_eq!(listed(&d), vec![0]);
        d.opened(&tp(0), 3);
        assert!(listed(&d).is_empty());
    }
}
