//! Corrupt writes an open's write-back made and a kill left in place. The write-back
//! rewrites the only copy of frames in place and reads each run back, writing it again
//! while it differs; a kill before that read-back (a process crash keeps the cache, a
//! power loss may keep the corrupt write and lose its repair) leaves the flipped bit
//! for the next open, which the engine could not have prevented. So at each kill the
//! world records every such write still in the image the next open reads as damage at
//! rest (`FaultKind::CorruptWriteLeft`), which excuses what a flip there excuses.
//!
//! Invariants: only a write made while its partition's open ran (no `log_opened` of it
//! in the incarnation) qualifies: a corrupt write of the commit path must be refused by
//! the log's verify before anything is acknowledged, whatever comes after, and one the
//! open made before it returned was read back and repaired. The list is emptied at
//! every kill.

use super::*;

/// One corrupt segment write of the running incarnation: where its flipped byte is,
/// what the engine meant there, and the frame it hit.
pub struct CorruptWriteAt {
    pub tp: TopicPartition,
    pub path: PathBuf,
    pub byte: u64,
    pub meant: u8,
    pub offsets: Option<OffsetRange>,
    pub below_hwm: Option<bool>,
}

impl Recorder {
    /// At a kill, with the disk as the next open will read it (`durable`: after a power
    /// loss), the corrupt writes an open's write-back made and the kill left in place:
    /// the open never returned, so its read-back may not have repaired the frame. Each
    /// is recorded as damage at rest (`CorruptWriteLeft`), which the engine could not
    /// prevent: the write-back rewrites the only copy in place. A corrupt write of the
    /// commit path is not: its verify must refuse the frame before anything is
    /// acknowledged, whatever comes after.
    pub fn corrupt_writes_left(&mut self, fs: &crate::fs::SimFs, durable: bool) {
        let writes = std::mem::take(&mut self.corrupt_writes);
        let events = self.history.events();
        let since = events
            .iter()
            .rposition(|e| matches!(e.kind, EventKind::Restart))
            .unwrap_or(0);
        let opened: BTreeSet<TopicPartition> = events[since..]
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::EngineAlarm {
                    tp: Some(tp),
                    alarm: crate::history::Alarm::LogOpened { .. },
                    ..
                } => Some(tp.clone()),
                _ => None,
            })
            .collect();
        for w in writes {
            if opened.contains(&w.tp) {
                continue;
            }
            let image = if durable {
                fs.durable_bytes(&w.path)
            } else {
                fs.visible_bytes(&w.path)
            };
            let left = image
                .and_then(|b| b.get(usize::try_from(w.byte).ok()?).copied())
                .is_some_and(|b| b != w.meant);
            if left {
                let kind = FaultKind::CorruptWriteLeft {
                    file: FileKind::Segment,
                    offsets: w.offsets,
                    below_hwm: w.below_hwm,
                };
                let path = w.path.display().to_string();
                self.fault(kind, Some(&w.tp), Some(&path));
                self.segment_damaged(&w.tp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FaultOptions;
    use cafelog_engine::fs::{File, Fs};

    const SEGMENT: &str = "/data/topics/orders/p00000/00000000000000000000.log";

    /// Runs `body` in a madsim runtime with a recorder over a disk that corrupts the
    /// first segment write.
    fn with_recorder(body: impl FnOnce(&SimFs, &Shared) + Send + 'static) {
        let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        runtime.block_on(async move {
            let mut options = FaultOptions::none();
            options.corrupt_write_probability = 1.0;
            options.corrupt_write_max = 1;
            let fs = SimFs::new(1, options).expect("options");
            let path = Path::new(SEGMENT);
            fs.create_dir_all(path.parent().unwrap())
                .await
                .expect("mkdir");
            let file = fs
                .open(path, OpenMode::CreateTruncate)
                .await
                .expect("create");
            file.write_at(&[0xAB; 64], 0).await.expect("write");
            let rec = Shared::new(fs.clone());
            rec.lock().drain_fs();
            body(&fs, &rec);
        });
    }

    fn left(rec: &Shared) -> usize {
        rec.lock()
            .history
            .events()
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::Fault {
                        kind: FaultKind::CorruptWriteLeft { .. },
                        ..
                    }
                )
            })
            .count()
    }

    #[test]
    fn a_corrupt_write_still_in_place_while_the_open_ran_is_left_damage() {
        with_recorder(|fs, rec| {
            rec.lock().corrupt_writes_left(fs, false);
            assert_eq!(left(rec), 1);
            assert!(rec.lock().corrupt_writes.is_empty(), "emptied at the kill");
        });
    }

    #[test]
    fn a_repaired_write_or_one_after_the_open_returned_is_not() {
        with_recorder(|fs, rec| {
            // Written again as meant (the read-back's repair).
            let file =
                pollster::block_on(fs.open(Path::new(SEGMENT), OpenMode::ReadWrite)).expect("open");
            pollster::block_on(file.write_at(&[0xAB; 64], 0)).expect("write");
            rec.lock().corrupt_writes_left(fs, false);
            assert_eq!(left(rec), 0);
        });
        with_recorder(|fs, rec| {
            {
                let mut r = rec.lock();
                let tp = TopicPartition::new("orders".to_owned(), 0);
                let opened = crate::history::Alarm::LogOpened {
                    log_start: 0,
                    hwm: 0,
                    tail: 0,
                    hidden: 0,
                };
                r.history.engine_alarm(0, Some(&tp), opened, None);
            }
            rec.lock().corrupt_writes_left(fs, false);
            assert_eq!(left(rec), 0, "the commit path's: its verify's to catch");
        });
        with_recorder(|fs, rec| {
            // A power loss that dropped the unsynced corrupt write.
            rec.lock().corrupt_writes_left(fs, true);
            assert_eq!(left(rec), 0);
        });
    }
}
