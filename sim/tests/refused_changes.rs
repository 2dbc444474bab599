//! What the world records when the engine changes a partition its incarnation refused
//! (`RefusedPartitionChanged`, which `retention_safe` rule 8 flags): the first change
//! issued under the partition's directory, whether it came before the refusal was known
//! or after, of any kind (helper-112: only segment unlinks were seen), or with no
//! refusal known when the restart's view said the open must refuse and no fault struck
//! since (helper-114 H1: an open killed before its refusal); under a topic refused
//! whole, in its partitions or of its own files (M1); nothing for a partition no open
//! refused, another partition, or a refusal of an earlier incarnation.

use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_sim::history::{EventKind, FaultKind, FileChange, FileKind, TopicPartition};
use cafelog_sim::world::observe::ObservingFs;
use cafelog_sim::world::recorder::{Scope, Shared};
use std::path::Path;

mod common;
use common::{DIR, SEGMENT, with_raw_log};

/// A step a test takes on the disk of a partition log `t/0` at [`DIR`].
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The running incarnation's open refused `t/<partition>`.
    Refused(u32),
    /// The restart's view of `t/<partition>` is R3: its open must refuse it.
    Expected(u32),
    /// A fault strikes `t/0`.
    Struck,
    /// The running incarnation's open refused topic `t` whole.
    TopicRefused,
    /// A replace of topic `t`'s `topic.conf` (a temp file renamed over it).
    ReplaceConf,
    /// The next incarnation starts.
    Restart,
    /// A `set_len` of t/0's segment.
    Truncate,
    /// A `write_at` to t/0's segment.
    Write,
    /// An unlink of t/0's `hwm`.
    UnlinkHwm,
    /// A rename of a new file over t/0's `hwm`.
    ReplaceHwm,
    /// A new file in t/1's directory.
    CreateInOther,
}

/// Runs `steps` through the world's view of the disk; returns the changes it recorded:
/// where (a partition, or `topic t`), the path, the change.
fn recorded(steps: &[Step]) -> Vec<(String, String, FileChange)> {
    let steps = steps.to_vec();
    with_raw_log(1, |fs, log| async move {
        let hwm = Path::new(DIR).join("hwm");
        drop(log);
        let rec = Shared::new(fs.clone());
        let observed = ObservingFs {
            inner: fs.clone(),
            recorder: rec.clone(),
        };
        for step in steps {
            match step {
                Step::Refused(partition) => {
                    let incarnation = rec.lock().history.incarnation();
                    rec.lock().refusal_known(
                        &Scope::Partition(TopicPartition::new("t", partition)),
                        incarnation,
                    );
                }
                Step::Expected(partition) => {
                    rec.lock()
                        .refusal_expected(&TopicPartition::new("t", partition));
                }
                Step::Struck => {
                    let kind = FaultKind::BitFlip {
                        file: FileKind::Segment,
                        offsets: None,
                        below_hwm: None,
                    };
                    rec.lock()
                        .fault(kind, Some(&TopicPartition::new("t", 0)), Some(SEGMENT));
                }
                Step::TopicRefused => {
                    let incarnation = rec.lock().history.incarnation();
                    rec.lock()
                        .refusal_known(&Scope::Topic("t".into()), incarnation);
                }
                Step::ReplaceConf => {
                    let tmp = Path::new("/data/topics/t/topic.conf.tmp");
                    drop(
                        observed
                            .open(tmp, OpenMode::CreateTruncate)
                            .await
                            .expect("tmp"),
                    );
                    observed
                        .rename(tmp, Path::new("/data/topics/t/topic.conf"))
                        .await
                        .expect("renamed");
                }
                Step::Restart => {
                    rec.lock().history.restart(0);
                }
                Step::Truncate | Step::Write => {
                    let file = observed
                        .open(Path::new(SEGMENT), OpenMode::ReadWrite)
                        .await
                        .expect("segment");
                    match step {
                        Step::Truncate => file.set_len(0).await,
                        _ => file.write_at(&[0; 8], 0).await,
                    }
                    .expect("changed");
                }
                Step::UnlinkHwm => observed.remove_file(&hwm).await.expect("unlinked"),
                Step::ReplaceHwm => {
                    let tmp = Path::new(DIR).join("hwm.tmp");
                    drop(observed.open(&tmp, OpenMode::CreateNew).await.expect("tmp"));
                    observed.rename(&tmp, &hwm).await.expect("renamed");
                }
                Step::CreateInOther => {
                    let other = Path::new("/data/topics/t/p00001");
                    observed.create_dir_all(other).await.expect("dir");
                    drop(
                        observed
                            .open(&other.join("x"), OpenMode::CreateNew)
                            .await
                            .expect("created"),
                    );
                }
            }
        }
        let events = rec.lock().history.events().to_vec();
        events
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::RefusedPartitionChanged {
                    tp, path, change, ..
                } => Some((tp.to_string(), path, change)),
                EventKind::RefusedTopicChanged {
                    topic,
                    path,
                    change,
                    ..
                } => Some((format!("topic {topic}"), path, change)),
                _ => None,
            })
            .collect()
    })
}

fn t0(path: &str, change: FileChange) -> Vec<(String, String, FileChange)> {
    vec![("t/0".to_string(), path.to_string(), change)]
}

#[test]
fn a_change_to_a_refused_partition_is_recorded_whenever_the_refusal_is_known() {
    use Step::*;
    let hwm = &format!("{DIR}/hwm");
    // After the refusal, or before it within the same incarnation (an open that changed
    // the partition, then refused it): each kind of change, the first one only.
    assert_eq!(
        recorded(&[Refused(0), Truncate, Write]),
        t0(SEGMENT, FileChange::SetLen)
    );
    assert_eq!(
        recorded(&[Write, Refused(0)]),
        t0(SEGMENT, FileChange::Write)
    );
    assert_eq!(
        recorded(&[UnlinkHwm, Truncate, Refused(0)]),
        t0(hwm, FileChange::Unlink)
    );
    assert_eq!(
        recorded(&[Refused(0), ReplaceHwm]),
        t0(&format!("{DIR}/hwm.tmp"), FileChange::Create)
    );
}

#[test]
fn a_change_no_refusal_of_its_incarnation_covers_is_not_recorded() {
    use Step::*;
    // No refusal; another partition refused; a refusal of the incarnation before.
    assert_eq!(recorded(&[Truncate, UnlinkHwm, ReplaceHwm]), []);
    assert_eq!(recorded(&[Refused(1), Truncate, Write, UnlinkHwm]), []);
    assert_eq!(recorded(&[Refused(0), Restart, Truncate, UnlinkHwm]), []);
    assert_eq!(recorded(&[Write, Restart, Refused(0)]), []);
    // A change to another partition's directory is that partition's.
    assert_eq!(
        recorded(&[Refused(1), CreateInOther]),
        vec![(
            "t/1".to_string(),
            "/data/topics/t/p00001/x".to_string(),
            FileChange::Create
        )]
    );
}

#[test]
fn a_change_to_a_partition_the_open_must_refuse_is_recorded_unless_a_fault_struck_it() {
    use Step::*;
    // Killed before its refusal: the view at the restart said R3.
    assert_eq!(
        recorded(&[Expected(0), Truncate, Restart]),
        t0(SEGMENT, FileChange::SetLen)
    );
    // A fault since the restart may have turned R3 into a cut: the refusal must be known.
    assert_eq!(recorded(&[Expected(0), Struck, Truncate, Restart]), []);
    assert_eq!(
        recorded(&[Expected(0), Struck, Truncate, Refused(0)]),
        t0(SEGMENT, FileChange::SetLen)
    );
    // Another partition's view, or the incarnation before's.
    assert_eq!(recorded(&[Expected(1), Truncate]), []);
    assert_eq!(recorded(&[Expected(0), Restart, Truncate]), []);
}

#[test]
fn a_change_under_a_topic_refused_whole_is_recorded() {
    use Step::*;
    let conf = "/data/topics/t/topic.conf.tmp";
    assert_eq!(
        recorded(&[TopicRefused, Truncate]),
        t0(SEGMENT, FileChange::SetLen)
    );
    assert_eq!(
        recorded(&[ReplaceConf, Write, TopicRefused]),
        vec![
            ("t/0".to_string(), SEGMENT.to_string(), FileChange::Write),
            ("topic t".to_string(), conf.to_string(), FileChange::Create),
        ]
    );
    assert_eq!(recorded(&[ReplaceConf, Write]), []);
    assert_eq!(recorded(&[TopicRefused, Restart, ReplaceConf, Write]), []);
}
