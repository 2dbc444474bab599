//! What an incarnation changed under a partition or topic it refused: an open only reads
//! a partition before it decides to refuse it (R3), a store never touches a refused
//! partition, and a topic refused whole (its `topic.conf` unreadable) keeps its files as
//! they are, so any write, truncation, creation, unlink or rename there destroys what
//! the refusal keeps for the operator (`RefusedPartitionChanged`,
//! `RefusedTopicChanged`, which `retention_safe` rule 8 flags).
//!
//! The change is tagged with the incarnation that issued it (a killed one's futures may
//! still run), and the refusal with the one that raised it. A refusal counts once the
//! world knows of it (its record, the engine's alarm) or, for a partition with no fault
//! on it or a store-wide file since the restart, once the restart's view of the disk
//! says R3: an open killed or failed before it refused changed nothing either
//! (helper-114 H1).

use super::*;
use crate::history::FileChange;

/// Where a change lands, and what a refusal covers: a partition's directory, or a
/// topic's own files (a refusal of the topic covers its partitions too).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Partition(TopicPartition),
    Topic(String),
}

impl Scope {
    /// The scope of a file at `path`: its partition's directory, else its topic's.
    pub fn of(path: &Path) -> Option<Scope> {
        partition_of(path)
            .map(Scope::Partition)
            .or_else(|| files::topic_file_of(path).map(Scope::Topic))
    }

    fn topic(&self) -> &str {
        match self {
            Scope::Partition(tp) => &tp.topic,
            Scope::Topic(topic) => topic,
        }
    }
}

/// What the running incarnation changed and refused.
#[derive(Default)]
pub struct RefusalWatch {
    incarnation: Incarnation,
    /// The first change the engine issued in each scope: its path, kind and time; `None`
    /// once reported.
    first_change: BTreeMap<Scope, Option<(PathBuf, FileChange, u64)>>,
    refused: BTreeSet<TopicPartition>,
    refused_topics: BTreeSet<String>,
    /// The partitions the open must refuse: R3 in the world's view of the disk at the
    /// restart.
    expected: BTreeSet<TopicPartition>,
}

impl RefusalWatch {
    /// Forgets an earlier incarnation's account once `incarnation` acts.
    fn at(&mut self, incarnation: Incarnation) -> bool {
        if incarnation > self.incarnation {
            *self = RefusalWatch {
                incarnation,
                ..RefusalWatch::default()
            };
        }
        incarnation == self.incarnation
    }
}

impl Recorder {
    /// Before the engine issues `change` to `path`, a file in `scope`.
    pub fn engine_changes(&mut self, scope: &Scope, path: &Path, change: FileChange) {
        let incarnation = self.issuing_incarnation();
        let now = self.now_ms();
        let watch = &mut self.refusal_watch;
        if !watch.at(incarnation) || watch.first_change.contains_key(scope) {
            return;
        }
        watch
            .first_change
            .insert(scope.clone(), Some((path.to_path_buf(), change, now)));
        let refused = watch.refused_topics.contains(scope.topic())
            || match scope {
                Scope::Partition(tp) => {
                    watch.refused.contains(tp)
                        || watch.expected.contains(tp) && !self.struck_now(tp)
                }
                Scope::Topic(_) => false,
            };
        if refused {
            self.report_refused_change(scope);
        }
    }

    /// At a restart, after `Restart`: the world's view of `tp` at it is R3, so its open
    /// must refuse it unless a fault strikes it (or a store-wide file) before.
    pub fn refusal_expected(&mut self, tp: &TopicPartition) {
        let incarnation = self.history.incarnation();
        let watch = &mut self.refusal_watch;
        if watch.at(incarnation) {
            watch.expected.insert(tp.clone());
        }
    }

    /// When the world learns that `incarnation`'s open refused `scope` (its own record,
    /// or the engine's alarm): a partition, or a topic whole.
    pub fn refusal_known(&mut self, scope: &Scope, incarnation: Incarnation) {
        let watch = &mut self.refusal_watch;
        let new = watch.at(incarnation)
            && match scope {
                Scope::Partition(tp) => watch.refused.insert(tp.clone()),
                Scope::Topic(topic) => watch.refused_topics.insert(topic.clone()),
            };
        if !new {
            return;
        }
        let covered: Vec<Scope> = watch
            .first_change
            .keys()
            .filter(|s| match scope {
                Scope::Partition(_) => *s == scope,
                Scope::Topic(topic) => s.topic() == topic,
            })
            .cloned()
            .collect();
        for scope in covered {
            self.report_refused_change(&scope);
        }
    }

    fn report_refused_change(&mut self, scope: &Scope) {
        let Some(first) = self.refusal_watch.first_change.get_mut(scope) else {
            return;
        };
        let Some((path, change, changed_ms)) = first.take() else {
            return;
        };
        let now = self.now_ms();
        let path = path.to_string_lossy();
        match scope {
            Scope::Partition(tp) => {
                self.history
                    .refused_partition_changed(now, tp, &path, change, changed_ms);
            }
            Scope::Topic(topic) => {
                self.history
                    .refused_topic_changed(now, topic, &path, change, changed_ms);
            }
        }
    }

    /// The incarnation whose task is issuing a call: the running one outside any node
    /// task.
    fn issuing_incarnation(&self) -> Incarnation {
        crate::world::alarms::running_incarnation().unwrap_or(self.history.incarnation())
    }
}
