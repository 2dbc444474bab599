//! The store's salvage for R2 (see [`crate::recovery::Salvage`]): of the readable
//! records past an R2 hole, keep those whose ingress WAL entry is gone, by writing them
//! into the WAL again before the log is cut. The replay then re-commits them like any
//! entry past the checkpoint.
//!
//! The store opens its WAL after the partitions recover; an R2 cut that discards
//! readable records needs it earlier, so [`OpeningWal`] opens it at the first such cut
//! (or after the partitions, when none needed it). Opens without such a cut do the
//! same I/O in the same order as before salvage existed.
//!
//! Invariants:
//! - a record is kept unless a readable WAL entry of its partition at or past the
//!   checkpoint's seq has the same key and payload, and of several records with the same
//!   key and payload one is kept: repeated crashes with a lagging persisted HWM leave
//!   several copies of one entry in the log (each replay re-commits the hidden tail), and
//!   the log cannot tell them from distinct produces with equal bytes. With no WAL
//!   damage every record past the hole has its entry there, so nothing is kept;
//! - a kept record is durable in the WAL (appended and fsynced) before `keep` returns,
//!   so a crash after the R2 cut finds it in the WAL; a crash before the cut finds the
//!   hole again, and now the WAL entry covers the record, so it is not kept twice.

use super::wal::{Checkpoint, PartitionId, Wal, WalEntry, WalError, WalOpenReport};
use crate::fs::Fs;
use crate::recovery::{Salvage, SalvagedRecord};
use std::collections::{BTreeMap, BTreeSet};
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

impl<F: Fs> OpenedWal<F> {
    /// The (key, payload) of every readable entry of `id` the replay will see.
    fn covered(&self, id: &PartitionId) -> BTreeSet<(&[u8], &[u8])> {
        let from = self.checkpoint.get(id).map_or(0, |c| c.seq);
        self.entries
            .iter()
            .filter(|e| e.partition == *id && e.seq >= from)
            .map(|e| (e.key.as_slice(), e.payload.as_slice()))
            .collect()
    }
}

/// [`OpeningWal`]'s salvage for one partition.
pub(super) struct PartitionSalvage<'s, F: Fs> {
    wal: &'s mut OpeningWal<F>,
    id: PartitionId,
}

impl<F: Fs> Salvage for PartitionSalvage<'_, F> {
    async fn keep(&mut self, records: Vec<SalvagedRecord>) -> io::Result<u64> {
        let opened = self.wal.get().await.map_err(io::Error::other)?;
        // One copy of each content: earlier replays may have left several copies of
        // one entry past the hole.
        let uncovered: Vec<(Vec<u8>, Vec<u8>)> = {
            let covered = opened.covered(&self.id);
            let mut kept = BTreeSet::new();
            let mut uncovered = Vec::new();
            for SalvagedRecord { key, payload, .. } in records {
                if !covered.contains(&(key.as_slice(), payload.as_slice()))
                    && kept.insert((key.clone(), payload.clone()))
                {
                    uncovered.push((key, payload));
                }
            }
            uncovered
        };
        let mut kept = 0u64;
        let mut last_seq = None;
        for (key, payload) in uncovered {
            let seq = opened
                .wal
                .append(&self.id, &key, &payload)
                .map_err(io::Error::other)?;
            assert!(last_seq.is_none_or(|last| last < seq), "WAL seqs increase");
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
            });
            kept += 1;
        }
        if let Some(seq) = last_seq {
            opened.wal.sync_to(seq).await.map_err(io::Error::other)?;
        }
        opened.salvaged += kept;
        Ok(kept)
    }
}
