//! The store's salvage for R2 (see [`crate::recovery::Salvage`]): every readable record
//! past an R2 hole is made durable in the WAL before the log is cut, so the cut never
//! leaves a record with fewer copies than it had. A record is written linked to the
//! group of entries that stands for it ([`Link`], `[0x00][root]`, FORMAT.md), so that
//! the replay treats them as one entry and commits one record for all, or as a plain
//! entry when no group in the WAL has its bytes (its entry was damaged or deleted):
//! - a *copy* when the group's root is past the checkpoint (the replay would commit it
//!   anyway). Without the copy, a cut followed by one flip of the WAL entry (before a
//!   replay had re-committed it) would lose a record whose log frame was never damaged;
//! - a *revival* when the checkpoint passed the root. A record below the checkpoint's
//!   offset (its entry passed, counting on the record the cut discards; only a
//!   persisted HWM read lower than the checkpoint, an out-of-contract fault, puts an R2
//!   hole there) revives it; a record of a group a revival keeps live links to it the
//!   same way. The revival is replayed in its own place; the link keeps a replay of
//!   every entry (after the checkpoint is lost) from committing the spent entry and its
//!   revival as two records.
//!
//! The store opens its WAL after the partitions recover; an R2 cut that discards
//! readable records needs it earlier, so [`OpeningWal`] opens it at the first such cut
//! (or after the partitions, when none needed it). Opens without such a cut do the
//! same I/O in the same order as before salvage existed.
//!
//! Invariants:
//! - records match groups by key and payload, each group at most one record, in root
//!   order, a record at or above the checkpoint's offset only a group the replay takes
//!   (see [`Pools`]):
//!   repeated crashes with a lagging persisted HWM leave several
//!   copies of one entry in the log (each replay re-commits the hidden tail), and the
//!   log cannot tell them from distinct produces with equal bytes. A record that no free
//!   group takes but whose bytes an earlier record past the hole had is such a copy
//!   and is not written; of the rest, one per content is written as a plain entry;
//! - every record matched to an entry gets a link from this open, even when the WAL
//!   already shows one: a copy an earlier open wrote and was killed before fsyncing is
//!   readable through the page cache after a process crash, and a power loss takes it.
//!   Opens killed between the salvage and the cut (each finds the hole again) add a
//!   copy each; the replay commits one record per entry however many copies it has;
//! - everything written is durable in the WAL (appended and fsynced) before `keep`
//!   returns, so a crash after the R2 cut finds it in the WAL; a crash before the cut
//!   finds the hole again.

use super::wal::{Checkpoint, Link, PartitionId, Wal, WalEntry, WalError, WalOpenReport};
use crate::fs::Fs;
use crate::recovery::{Kept, Salvage, SalvagedRecord};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io;
use std::path::PathBuf;

/// The WAL as [`Wal::open`] found it.
pub(super) struct OpenedWal<F: Fs> {
    pub wal: Wal<F>,
    pub checkpoint: BTreeMap<PartitionId, Checkpoint>,
    /// Every readable entry, in seq order, the salvaged ones last.
    pub entries: Vec<WalEntry>,
    pub report: WalOpenReport,
    /// Entries the salvage wrote (also in `entries`).
    pub salvaged: u64,
}

/// The store's WAL during an open: opened on first need.
pub(super) struct OpeningWal<F: Fs> {
    fs: F,
    dir: PathBuf,
    segment_bytes: u64,
    opened: Option<OpenedWal<F>>,
}

impl<F: Fs> OpeningWal<F> {
    pub(super) fn new(fs: F, dir: PathBuf, segment_bytes: u64) -> Self {
        OpeningWal {
            fs,
            dir,
            segment_bytes,
            opened: None,
        }
    }

    async fn get(&mut self) -> Result<&mut OpenedWal<F>, WalError> {
        if self.opened.is_none() {
            let (wal, checkpoint, entries, report) =
                Wal::open(self.fs.clone(), self.dir.clone(), self.segment_bytes).await?;
            self.opened = Some(OpenedWal {
                wal,
                checkpoint,
                entries,
                report,
                salvaged: 0,
            });
        }
        Ok(self.opened.as_mut().expect("opened above"))
    }

    /// The WAL, opened now if no salvage needed it.
    pub(super) async fn finish(mut self) -> Result<OpenedWal<F>, WalError> {
        self.get().await?;
        let opened = self.opened.expect("opened above");
        debug_assert!(opened.entries.windows(2).all(|w| w[0].seq < w[1].seq));
        Ok(opened)
    }

    /// The salvage for one partition's log open.
    pub(super) fn partition<'s>(&'s mut self, id: &PartitionId) -> PartitionSalvage<'s, F> {
        PartitionSalvage {
            wal: self,
            id: id.clone(),
        }
    }
}

/// Per (key, payload), the links a salvage can make to the roots (the seqs entries
/// stand for) of one partition's entries in the WAL, lowest root first.
type Roots = BTreeMap<(Vec<u8>, Vec<u8>), VecDeque<Link>>;

/// The roots a salvage links records to, split by whether the replay from the
/// partition's checkpoint takes their group ([`WalEntry::live_from`]: the root is past
/// the checkpoint, or a revival of it is). A record at or above the checkpoint's offset
/// is a copy of a live group's record; one below it belongs to a group the checkpoint
/// passed, or, where none has its bytes, to a live group (an older copy of its record).
struct Pools {
    offset: u64,
    live: Roots,
    spent: Roots,
}

impl Pools {
    /// The link to the first free group a record at `offset` with `content` may stand
    /// for (see [`Pools`]), taken.
    fn take(&mut self, offset: u64, content: &(Vec<u8>, Vec<u8>)) -> Option<Link> {
        let pools = if offset >= self.offset {
            [Some(&mut self.live), None]
        } else {
            [Some(&mut self.spent), Some(&mut self.live)]
        };
        pools
            .into_iter()
            .flatten()
            .find_map(|roots| roots.get_mut(content).and_then(VecDeque::pop_front))
    }
}

impl<F: Fs> OpenedWal<F> {
    /// The roots of the entries of `id` in the WAL, a copy for a root past the
    /// checkpoint and a revival for one it passed.
    fn pools(&self, id: &PartitionId) -> Pools {
        let checkpoint = self.checkpoint.get(id).copied().unwrap_or_default();
        let mut groups: BTreeMap<u64, (&WalEntry, bool)> = BTreeMap::new();
        for e in self.entries.iter().filter(|e| e.partition == *id) {
            let group = groups.entry(e.root()).or_insert((e, false));
            group.1 |= e.live_from(checkpoint.seq);
        }
        let mut pools = Pools {
            offset: checkpoint.offset,
            live: Roots::new(),
            spent: Roots::new(),
        };
        for (root, (first, live)) in groups {
            let link = if root >= checkpoint.seq {
                Link::Copy(root)
            } else {
                Link::Revival(root)
            };
            let pool = if live {
                &mut pools.live
            } else {
                &mut pools.spent
            };
            pool.entry((first.key.clone(), first.payload.clone()))
                .or_default()
                .push_back(link);
        }
        pools
    }
}

/// What the salvage writes for one record: a plain entry, or one linked to a root.
struct Write {
    key: Vec<u8>,
    payload: Vec<u8>,
    link: Option<Link>,
}

/// [`OpeningWal`]'s salvage for one partition.
pub(super) struct PartitionSalvage<'s, F: Fs> {
    wal: &'s mut OpeningWal<F>,
    id: PartitionId,
}

impl<F: Fs> PartitionSalvage<'_, F> {
    /// Matches `records` to the entries that stand for them (see the module's
    /// invariants) and says what to write.
    fn plan(opened: &OpenedWal<F>, id: &PartitionId, records: Vec<SalvagedRecord>) -> Vec<Write> {
        let mut pools = opened.pools(id);
        let mut seen: BTreeSet<(Vec<u8>, Vec<u8>)> = BTreeSet::new();
        let mut out = Vec::new();
        for SalvagedRecord {
            offset,
            key,
            payload,
            ..
        } in records
        {
            let content = (key, payload);
            // A record no free group takes whose bytes an earlier record had is a
            // replay's second copy of that record: it needs no entry of its own.
            let link = pools.take(offset, &content);
            let write = link.is_some() || !seen.contains(&content);
            if write {
                out.push(Write {
                    key: content.0.clone(),
                    payload: content.1.clone(),
                    link,
                });
            }
            seen.insert(content);
        }
        out
    }
}

impl<F: Fs> Salvage for PartitionSalvage<'_, F> {
    async fn keep(&mut self, records: Vec<SalvagedRecord>) -> io::Result<Kept> {
        let opened = self.wal.get().await.map_err(io::Error::other)?;
        let writes = Self::plan(opened, &self.id, records);
        let mut kept = Kept::default();
        let mut last_seq = None;
        for Write { key, payload, link } in writes {
            let seq = match link {
                Some(link) => opened.wal.append_linked(&self.id, &key, &payload, link),
                None => opened.wal.append(&self.id, &key, &payload),
            }
            .map_err(io::Error::other)?;
            assert!(
                last_seq.is_none_or(|last| last + 1 == seq),
                "a salvage's entries take consecutive seqs: nothing else appends during an open"
            );
            assert!(
                opened.entries.last().is_none_or(|e| e.seq < seq),
                "a salvaged entry follows every entry read"
            );
            last_seq = Some(seq);
            opened.entries.push(WalEntry {
                seq,
                partition: self.id.clone(),
                key,
                payload,
                link,
            });
            // A revival is the only entry the replay will commit for its record.
            match link {
                Some(Link::Copy(_)) => kept.copied += 1,
                Some(Link::Revival(_)) | None => kept.kept += 1,
            }
        }
        if let Some(seq) = last_seq {
            opened.wal.sync_to(seq).await.map_err(io::Error::other)?;
            kept.end_seq = seq + 1;
            kept.first_seq = kept.end_seq - (kept.kept + kept.copied);
        }
        opened.salvaged += kept.kept + kept.copied;
        Ok(kept)
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests damage files at rest with std::fs, as a flip on the platter would"
)]
pub(super) mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::fs::StdFs;
    use crate::log::Log;
    use crate::store::{Store, StoreConfig, StoreOpenReport, TopicConfig};
    use std::path::Path;

    fn block<T>(f: impl Future<Output = T>) -> T {
        pollster::block_on(f)
    }

    fn record(offset: u64, text: &str) -> SalvagedRecord {
        SalvagedRecord {
            offset,
            committed_at_ms: 0,
            key: b"k".to_vec(),
            payload: text.as_bytes().to_vec(),
        }
    }

    fn entry(seq: u64, text: &str, link: Option<Link>) -> WalEntry {
        WalEntry {
            seq,
            partition: ("t".to_string(), 0),
            key: b"k".to_vec(),
            payload: text.as_bytes().to_vec(),
            link,
        }
    }

    /// The WAL of an empty directory, as an open found it, with `entries` read.
    fn opened(dir: &Path, entries: Vec<WalEntry>) -> OpenedWal<StdFs> {
        let (wal, checkpoint, _, report) = block(Wal::open(StdFs, dir, 1 << 20)).unwrap();
        OpenedWal {
            wal,
            checkpoint,
            entries,
            report,
            salvaged: 0,
        }
    }

    fn plan(
        opened: &OpenedWal<StdFs>,
        records: Vec<SalvagedRecord>,
    ) -> Vec<(String, Option<Link>)> {
        PartitionSalvage::<StdFs>::plan(opened, &("t".to_string(), 0), records)
            .into_iter()
            .map(|w| (String::from_utf8(w.payload).unwrap(), w.link))
            .collect()
    }

    #[test]
    fn each_record_past_the_hole_gets_a_copy_or_a_plain_entry_once() {
        let dir = tempfile::tempdir().unwrap();
        // Entries 3 (a), 4 (b), 5 (a again: a distinct produce with equal bytes); no
        // entry for c.
        let wal = opened(
            dir.path(),
            vec![
                entry(3, "a", None),
                entry(4, "b", None),
                entry(5, "a", None),
            ],
        );
        let records = vec![
            record(7, "a"),
            record(8, "b"),
            record(9, "c"),
            record(10, "a"),
            record(11, "b"), // a replay's second copy of entry 4
            record(12, "c"), // a second copy of c: one plain entry is enough
        ];
        assert_eq!(
            plan(&wal, records),
            vec![
                ("a".into(), Some(Link::Copy(3))),
                ("b".into(), Some(Link::Copy(4))),
                ("c".into(), None),
                ("a".into(), Some(Link::Copy(5))),
            ]
        );
    }

    #[test]
    fn an_entry_that_already_has_a_copy_gets_another() {
        let dir = tempfile::tempdir().unwrap();
        // An open killed between its salvage and its cut wrote copy 9 of entry 3, maybe
        // only into the page cache; the next open finds the same hole and makes its own
        // copy durable. Entry 4 lost its own entry; copy 10 stands for it.
        let wal = opened(
            dir.path(),
            vec![
                entry(3, "a", None),
                entry(9, "a", Some(Link::Copy(3))),
                entry(10, "b", Some(Link::Copy(4))),
            ],
        );
        assert_eq!(
            plan(&wal, vec![record(7, "a"), record(8, "b")]),
            vec![
                ("a".into(), Some(Link::Copy(3))),
                ("b".into(), Some(Link::Copy(4)))
            ]
        );
    }

    #[test]
    fn a_record_below_the_checkpoint_offset_revives_the_entry_it_passed() {
        let dir = tempfile::tempdir().unwrap();
        // Entries 2 (a) with a copy, 3 (b) and 4 (c) below the checkpoint's seq 5, whose
        // records lie below its offset 9; entries 6 (c again: a distinct produce with
        // equal bytes) and 7 (d) past it.
        let mut wal = opened(
            dir.path(),
            vec![
                entry(2, "a", None),
                entry(3, "b", None),
                entry(4, "c", None),
                entry(6, "c", None),
                entry(7, "d", None),
                entry(12, "a", Some(Link::Copy(2))),
            ],
        );
        wal.checkpoint.insert(
            ("t".to_string(), 0),
            crate::store::Checkpoint { seq: 5, offset: 9 },
        );
        // Below offset 9 the cut discards records the checkpoint counted on: each is
        // revived, linked to its spent entry. From 9 on, records belong to entries past
        // the checkpoint: c is a copy of 6, not a revival of the spent 4, and d of 7.
        assert_eq!(
            plan(
                &wal,
                vec![
                    record(7, "a"),
                    record(8, "b"),
                    record(9, "c"),
                    record(10, "d")
                ]
            ),
            vec![
                ("a".into(), Some(Link::Revival(2))),
                ("b".into(), Some(Link::Revival(3))),
                ("c".into(), Some(Link::Copy(6))),
                ("d".into(), Some(Link::Copy(7))),
            ]
        );
        // A record above the offset whose entry is gone is written plain, even when a
        // spent entry has its bytes: linking it there would let that entry's own log
        // copy cover it after a lost checkpoint.
        let wal = {
            let mut wal = opened(dir.path(), vec![entry(4, "c", None)]);
            wal.checkpoint.insert(
                ("t".to_string(), 0),
                crate::store::Checkpoint { seq: 5, offset: 9 },
            );
            wal
        };
        assert_eq!(plan(&wal, vec![record(9, "c")]), vec![("c".into(), None)]);
        // A record below the offset with no spent entry of its bytes is an older copy of
        // a live entry's record: a copy of it, as before revivals.
        let wal = {
            let mut wal = opened(dir.path(), vec![entry(7, "e", None)]);
            wal.checkpoint.insert(
                ("t".to_string(), 0),
                crate::store::Checkpoint { seq: 5, offset: 9 },
            );
            wal
        };
        assert_eq!(
            plan(&wal, vec![record(8, "e")]),
            vec![("e".into(), Some(Link::Copy(7)))]
        );
    }

    type TestStore = Store<StdFs, ManualClock>;

    fn open_store(root: &Path, clock: &ManualClock) -> TestStore {
        open_reporting(root, clock).0
    }

    fn open_reporting(root: &Path, clock: &ManualClock) -> (TestStore, StoreOpenReport) {
        block(Store::open(
            StdFs,
            clock.clone(),
            root,
            StoreConfig::default(),
        ))
        .expect("open store")
    }

    /// Every payload below the HWM of `t/0`, in offset order.
    fn payloads(store: &TestStore) -> Vec<String> {
        let part = store.partition("t", 0).unwrap();
        let batch = block(part.log.read(0, 1000)).unwrap();
        batch
            .records
            .into_iter()
            .map(|r| String::from_utf8(r.payload.to_vec()).unwrap())
            .collect()
    }

    /// Flips one bit of the first occurrence of `needle` in the file at `path`.
    pub(in crate::store) fn flip_inside(path: &Path, needle: &[u8]) {
        let mut bytes = std::fs::read(path).unwrap();
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {}", path.display()));
        bytes[at + needle.len() - 1] ^= 0x01;
        std::fs::write(path, &bytes).unwrap();
    }

    /// A store with topic `t` and ids 0..6 acknowledged on `t/0`.
    fn six_produced(root: &Path, clock: &ManualClock) -> TestStore {
        let store = open_store(root, clock);
        block(store.create_topic("t", TopicConfig::default())).unwrap();
        for id in 0..6 {
            let payload = format!("id:{id}");
            block(store.produce("t", Some(0), b"k", payload.as_bytes())).unwrap();
        }
        store
    }

    /// After `damage` of `t/0`'s directory, a flip in the frame of `id:1` and an open of
    /// the log that salvages into the WAL and cuts (R2), killed before any replay.
    fn cut_at_id_1(
        root: &Path,
        clock: &ManualClock,
        damage: impl FnOnce(&Path),
    ) -> crate::log::OpenReport {
        let part = root.join("topics/t/p00000");
        damage(&part);
        flip_inside(&part.join("00000000000000000000.log"), b"id:1");
        let mut opening = OpeningWal::new(StdFs, root.join("wal"), 8 << 20);
        let id = ("t".to_string(), 0);
        block(Log::open_salvaging(
            StdFs,
            clock.clone(),
            &part,
            TopicConfig::default().log,
            &mut opening.partition(&id),
        ))
        .unwrap()
        .1
    }

    /// Six acknowledged records above the persisted HWM 0, a crash, and a flip in the
    /// frame of `id:1`: an R2 hole with the readable frames of ids 2..6 past it. Then an
    /// open that salvages and cuts, and is killed before its replay.
    fn cut_and_killed(root: &Path, clock: &ManualClock) {
        let store = six_produced(root, clock);
        drop(store);
        let report = cut_at_id_1(root, clock, |_| {});
        assert_eq!(
            (
                report.tail_offset,
                report.salvage_offered,
                report.salvaged,
                report.salvage_copied
            ),
            (1, 4, 0, 4),
            "cut at 1; ids 2..6 keep their entries and get a copy each"
        );
        // Killed here: the WAL holds the copies, the log ends at the hole.
    }

    #[test]
    fn a_record_cut_past_a_hole_survives_the_loss_of_its_wal_entry() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        cut_and_killed(dir.path(), &clock);
        // A flip destroys id 4's entry (in the first segment; its copy is in a later one).
        flip_inside(&dir.path().join("wal/00000000000000000000.wal"), b"id:4");
        let store = open_store(dir.path(), &clock);
        // The WAL damage exposes id 0's hidden copy; id 4's copy is replayed in its
        // entry's place, so the order of the produces is kept.
        assert_eq!(
            payloads(&store),
            ["id:0", "id:1", "id:2", "id:3", "id:4", "id:5"]
        );
    }

    #[test]
    fn an_entry_and_its_copy_are_replayed_once() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        cut_and_killed(dir.path(), &clock);
        let store = open_store(dir.path(), &clock);
        // Id 0's hidden copy below the hole shows once the replay moves the HWM over it
        // (a crash's usual duplicate); ids 1..6 are committed once each.
        assert_eq!(
            payloads(&store),
            ["id:0", "id:0", "id:1", "id:2", "id:3", "id:4", "id:5"]
        );
        // The copies' seqs were settled with their entries': nothing is pending past a
        // checkpoint once the HWM is persisted, so the next open replays nothing.
        block(store.persist_hwms()).unwrap();
        block(store.checkpoint_wal()).unwrap();
        drop(store);
        let (store, report) = open_reporting(dir.path(), &clock);
        assert_eq!(report.replayed, 0);
        assert_eq!(payloads(&store).len(), 7);
    }

    #[test]
    fn a_copy_of_an_entry_the_checkpoint_passed_is_not_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let store = open_store(dir.path(), &clock);
        block(store.create_topic("t", TopicConfig::default())).unwrap();
        for id in 0..3 {
            let payload = format!("id:{id}");
            block(store.produce("t", Some(0), b"k", payload.as_bytes())).unwrap();
        }
        block(store.persist_hwms()).unwrap();
        block(store.checkpoint_wal()).unwrap();
        drop(store);
        // A copy of entry 1, which the checkpoint passed (its record is below the
        // persisted HWM), past the checkpoint's seq: an open killed after a salvage
        // that copied it before the checkpoint moved.
        let (wal, checkpoint, _, _) =
            block(Wal::open(StdFs, dir.path().join("wal"), 8 << 20)).unwrap();
        assert!(checkpoint[&("t".to_string(), 0)].seq > 1);
        let seq = wal
            .append_linked(&("t".to_string(), 0), b"k", b"id:1", Link::Copy(1))
            .unwrap();
        block(wal.sync_to(seq)).unwrap();
        drop(wal);
        let (store, report) = open_reporting(dir.path(), &clock);
        assert_eq!(report.replayed, 0);
        assert_eq!(payloads(&store), ["id:0", "id:1", "id:2"]);
    }

    /// Six records the checkpoint passed (their entries spent, still in the WAL), then
    /// an `hwm` word that reads 0, as a flip of it leaves it, and a flip in the frame of
    /// `id:1`: an R2 hole above the word with ids 2..6 past it. Then an open that
    /// salvages and cuts, and is killed before its replay.
    fn revived_and_killed(root: &Path, clock: &ManualClock) {
        let store = six_produced(root, clock);
        block(store.persist_hwms()).unwrap();
        block(store.checkpoint_wal()).unwrap();
        drop(store);
        let report = cut_at_id_1(root, clock, |part| {
            std::fs::write(
                part.join(crate::format::layout::HWM_FILE),
                crate::format::word::encode(0),
            )
            .unwrap()
        });
        assert_eq!(
            (report.tail_offset, report.salvaged, report.salvage_copied),
            (1, 4, 0),
            "cut at 1; ids 2..6 had no live entry"
        );
        let (_, checkpoint, entries, _) =
            block(Wal::open(StdFs, root.join("wal"), 8 << 20)).unwrap();
        let links: Vec<Option<Link>> = entries.iter().map(|e| e.link).collect();
        assert_eq!(
            links,
            [None, None, None, None, None, None]
                .into_iter()
                .chain((2..6).map(|root| Some(Link::Revival(root))))
                .collect::<Vec<_>>(),
            "the spent entries are still in the WAL, so each record is revived"
        );
        assert_eq!(
            checkpoint[&("t".to_string(), 0)].seq,
            6,
            "the checkpoint passed every entry"
        );
    }

    #[test]
    fn a_revival_is_replayed_past_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        revived_and_killed(dir.path(), &clock);
        let store = open_store(dir.path(), &clock);
        // Id 1's frame was damaged and its entry spent: lost to the out-of-contract
        // flip of the word. Ids 2..6 are committed again once each, and id 0's hidden
        // copy shows once the HWM moves over it.
        assert_eq!(payloads(&store), ["id:0", "id:2", "id:3", "id:4", "id:5"]);
    }

    #[test]
    fn a_revival_and_its_spent_entry_are_replayed_once_when_the_checkpoint_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        revived_and_killed(dir.path(), &clock);
        let checkpoint = dir.path().join("wal/checkpoint");
        let mut bytes = std::fs::read(&checkpoint).unwrap();
        bytes[0] ^= 0x01;
        std::fs::write(&checkpoint, &bytes).unwrap();
        let (store, report) = open_reporting(dir.path(), &clock);
        assert!(report.wal.checkpoint_corrupt);
        // Every entry is replayed, and no copy is visible (the word reads 0): each id
        // once, ids 2..6 for their spent entry and its revival together.
        assert_eq!(
            payloads(&store),
            ["id:0", "id:0", "id:1", "id:2", "id:3", "id:4", "id:5"]
        );
    }

    #[test]
    fn a_replayed_revival_cut_again_is_linked_to_its_group_not_written_plain() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let root = dir.path();
        revived_and_killed(root, &clock);
        // The replay commits ids 2..6 at 1..4, at or above the checkpoint's offset,
        // which the open lowered to the recovered HWM; the word stays 0.
        let store = open_store(root, &clock);
        assert_eq!(payloads(&store), ["id:0", "id:2", "id:3", "id:4", "id:5"]);
        drop(store);
        // A flip at rest in id 0's frame (at or above the word): an R2 hole with the
        // replayed records past it. Their groups are the live revivals: each record is
        // linked to its group (helper-73), so the replay commits it once more, not twice.
        let part = root.join("topics/t/p00000");
        flip_inside(&part.join("00000000000000000000.log"), b"id:0");
        let (store, report) = open_reporting(root, &clock);
        assert_eq!(report.replayed, 4);
        assert_eq!(payloads(&store), ["id:2", "id:3", "id:4", "id:5"]);
    }
}
