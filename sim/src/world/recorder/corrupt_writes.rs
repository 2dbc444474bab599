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

/// One corrupt segment write of the running incarnation: the frame it hit, where that
/// frame starts in the file and its bytes as the write stored them (the flip in them).
pub struct CorruptWriteAt {
    pub tp: TopicPartition,
    pub path: PathBuf,
    pub frame_at: u64,
    pub stored: Vec<u8>,
    pub offsets: OffsetRange,
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
            // Left: the image holds the frame as the corrupt write stored it, whole (a
            // power loss may have dropped it, and with it the frame).
            let left = image.is_some_and(|b| {
                let start = usize::try_from(w.frame_at).unwrap_or(usize::MAX);
                b.get(start..start.saturating_add(w.stored.len())) == Some(&w.stored[..])
            });
            if left {
                let kind = FaultKind::CorruptWriteLeft {
                    file: FileKind::Segment,
                    offsets: Some(w.offsets),
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
    use cafelog_engine::format::frame::{Codec, Codecs};
    use cafelog_engine::fs::{File, Fs};

    const SEGMENT: &str = "/data/topics/orders/p00000/00000000000000000000.log";

    /// One frame holding one record at offset 0.
    fn frame() -> Vec<u8> {
        let mut out = Vec::new();
        Codecs::default()
            .encode_frame(
                Codec::None,
                0,
                [&b"a record of orders"[..]].into_iter(),
                &mut out,
            )
            .expect("encodes");
        out
    }

    /// Runs `body` in a madsim runtime with a recorder over a disk that corrupts the
    /// first segment write of frame bytes: a durable segment of zeros, then the frame
    /// written over its start (landing corrupt), fsynced when `sync`.
    fn with_recorder(sync: bool, body: impl FnOnce(&SimFs, &Shared) + Send + 'static) {
        let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        runtime.block_on(async move {
            let mut options = FaultOptions::none();
            options.corrupt_write_probability = 1.0;
            options.corrupt_write_max = 1;
            let fs = SimFs::new(1, options).expect("options");
            let path = Path::new(SEGMENT);
            let dir = path.parent().unwrap();
            fs.create_dir_all(dir).await.expect("mkdir");
            let file = fs
                .open(path, OpenMode::CreateTruncate)
                .await
                .expect("create");
            file.write_at(&[0; 256], 0).await.expect("zeros");
            file.sync_data().await.expect("sync");
            fs.sync_dir(dir).await.expect("sync dir");
            file.write_at(&frame(), 0).await.expect("write");
            if sync {
                file.sync_data().await.expect("sync");
            }
            let rec = Shared::new(fs.clone());
            rec.lock().drain_fs();
            let placed: Vec<OffsetRange> = rec
                .lock()
                .corrupt_writes
                .iter()
                .map(|w| w.offsets)
                .collect();
            assert_eq!(placed, vec![OffsetRange { start: 0, end: 1 }]);
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
    fn a_corrupt_write_still_in_the_image_while_the_open_ran_is_left_damage() {
        with_recorder(false, |fs, rec| {
            rec.lock().corrupt_writes_left(fs, false);
            assert_eq!(left(rec), 1, "a process crash keeps the cache");
            assert!(rec.lock().corrupt_writes.is_empty(), "emptied at the kill");
        });
        with_recorder(true, |fs, rec| {
            rec.lock().corrupt_writes_left(fs, true);
            assert_eq!(left(rec), 1, "fsynced, a power loss keeps it");
        });
    }

    #[test]
    fn a_repaired_dropped_or_commit_path_write_is_not() {
        with_recorder(false, |fs, rec| {
            // Written again as meant (the read-back's repair).
            let file =
                pollster::block_on(fs.open(Path::new(SEGMENT), OpenMode::ReadWrite)).expect("open");
            pollster::block_on(file.write_at(&frame(), 0)).expect("write");
            rec.lock().corrupt_writes_left(fs, false);
            assert_eq!(left(rec), 0);
        });
        with_recorder(false, |fs, rec| {
            // A power loss before any fsync: the platter holds the zeros, not the frame.
            rec.lock().corrupt_writes_left(fs, true);
            assert_eq!(left(rec), 0);
        });
        with_recorder(false, |fs, rec| {
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
    }
}
