//! WAL checkpoints: per partition, advanced only to entries below the persisted HWM,
//! and the WAL segments every partition's checkpoint has passed deleted.
//!
//! Invariants: a checkpoint that failed (to persist, or to delete what it covers) is
//! retried at the next call even if no partition's checkpoint moved since, and so is
//! the first call after an open that found sealed segments the loaded checkpoint
//! covers (a crash between its persist and its unlinks): it persists the checkpoint
//! again, as it may have been read from a page cache, before deleting them. And so
//! is a call that finds a sealed segment the checkpoint covers though nothing moved:
//! the log may commit a record (its flusher) before the WAL writes the entry, and that
//! write may roll, sealing a segment the checkpoint had already passed.

use super::*;

impl<F: Fs, C: Clock> Store<F, C> {
    /// Advances every partition's WAL checkpoint over the entries below its persisted
    /// HWM, persists it when it moved, and deletes WAL segments it fully covers.
    pub async fn checkpoint_wal(&self) -> Result<(), StoreError> {
        let mut owed = self.inner.checkpoint_owed.lock().await;
        let parts = self.partitions();
        let persisted: BTreeMap<PartitionId, u64> = parts
            .iter()
            .map(|p| (p.id.clone(), p.log.persisted_hwm()))
            .collect();
        let (checkpoint, moved) = {
            let mut pending = lock(&self.inner.pending);
            let mut moved = false;
            for (id, p) in pending.iter_mut() {
                let Some(&hwm) = persisted.get(id) else {
                    continue;
                };
                // Only a prefix of the WAL can be dropped: the checkpoint names one seq.
                // Entries behind an uncovered one stay pending even when covered.
                while let Some((&seq, &offset)) = p.entries.first_key_value() {
                    if offset.is_some_and(|o| o < hwm) {
                        p.entries.remove(&seq);
                    } else {
                        break;
                    }
                }
                // The replay looks for copies of the entries past the checkpoint from its
                // offset up: none of their known copies may lie below it.
                let lowest_copy = p.entries.values().flatten().copied().min();
                let next = Checkpoint {
                    seq: p.entries.keys().next().copied().unwrap_or(p.seq_end),
                    offset: lowest_copy.map_or(hwm, |o| o.min(hwm)),
                };
                if next.seq > p.checkpoint.seq || next.offset > p.checkpoint.offset {
                    p.checkpoint = Checkpoint {
                        seq: next.seq.max(p.checkpoint.seq),
                        offset: next.offset.max(p.checkpoint.offset),
                    };
                    moved = true;
                }
            }
            let checkpoint: BTreeMap<PartitionId, Checkpoint> = pending
                .iter()
                .map(|(id, p)| (id.clone(), p.checkpoint))
                .collect();
            (checkpoint, moved)
        };
        // Nothing moved and nothing owed: still, a roll since the last checkpoint may
        // have sealed a segment it had already passed (the log committed the entry's
        // record before the WAL wrote it).
        if !moved && !*owed && self.inner.wal.covered(&checkpoint).is_empty() {
            return Ok(());
        }
        // Owed until it succeeds: the in-memory checkpoint has already moved.
        *owed = true;
        let deleted = self
            .inner
            .wal
            .checkpoint(&checkpoint)
            .await
            .map_err(StoreError::Wal)?;
        *owed = false;
        // Retention may now delete up to the durable checkpoint's offset, no further:
        // replay reads the copies above it.
        for part in &parts {
            if let Some(cp) = checkpoint.get(&part.id) {
                part.log.set_retention_floor(cp.offset);
            }
        }
        add(&self.inner.metrics.wal_checkpoints, 1);
        add(
            &self.inner.metrics.wal_segments_deleted,
            deleted.len() as u64,
        );
        Ok(())
    }

    /// Commits the records of produces abandoned after their appends (the caller
    /// dropped the future before its sync): nothing else commits them until the
    /// partition's next produce, and their WAL entries hold its checkpoint back, and
    /// with it the deletion of every WAL segment that holds one, until then. A record
    /// counts as abandoned when the previous look found the same first entry past the
    /// HWM (a produce in flight commits within a checkpoint period).
    pub async fn commit_abandoned(&self) {
        let parts = self.partitions();
        let due: Vec<(Arc<Partition<F, C>>, u64)> = {
            let mut pending = lock(&self.inner.pending);
            parts
                .iter()
                .filter_map(|part| {
                    let p = pending.get_mut(&part.id)?;
                    let hwm = part.log.hwm();
                    let first = p
                        .entries
                        .iter()
                        .find(|(_, offset)| offset.is_some_and(|o| o >= hwm))
                        .map(|(&seq, _)| seq);
                    let seen = std::mem::replace(&mut p.uncommitted, first);
                    let seq = first.filter(|_| first == seen)?;
                    Some((Arc::clone(part), seq))
                })
                .collect()
        };
        for (part, seq) in due {
            // The WAL first, as a produce does: the record is never committed before
            // its entry is durable.
            if let Err(e) = self.inner.wal.sync_to(seq).await {
                tracing::error!(error = %e, "WAL sync for an abandoned produce failed");
                continue;
            }
            if let Err(e) = part.log.sync().await {
                tracing::error!(error = %e, topic = %part.id.0, partition = part.id.1,
                    "committing an abandoned produce failed");
            }
        }
    }

    /// Persists every partition's HWM now (what the HWM persister does on its cadence).
    pub async fn persist_hwms(&self) -> Result<(), StoreError> {
        for part in self.partitions() {
            part.log.persist_hwm().await.map_err(log_err(&part.id))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::clock::ManualClock;
    use crate::fs::StdFs;
    use crate::store::salvage::tests::flip_inside;
    use crate::store::{Store, StoreConfig, TopicConfig};

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        pollster::block_on(f)
    }

    #[test]
    fn an_abandoned_produce_is_committed_at_the_second_look() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let (store, _) = block(Store::open(
            StdFs,
            clock,
            dir.path(),
            StoreConfig::default(),
        ))
        .unwrap();
        let topic = TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        };
        block(store.create_topic("t", topic)).unwrap();
        let part = store.partition("t", 0).unwrap();
        // A produce dropped after its appends, before its sync.
        let (_, appended) = store.append_both(&part, b"k", b"v").unwrap();
        let offset = appended.unwrap();
        assert_eq!(part.log.hwm(), offset);
        block(store.commit_abandoned());
        assert_eq!(part.log.hwm(), offset, "the first look only notes it");
        block(store.commit_abandoned());
        assert_eq!(part.log.hwm(), offset + 1, "the second commits it");
        // Committed, its entry no longer holds the checkpoint back.
        block(store.persist_hwms()).unwrap();
        block(store.checkpoint_wal()).unwrap();
        assert!(
            super::lock(&store.inner.pending)[&part.id]
                .entries
                .is_empty()
        );
    }

    #[test]
    fn a_segment_sealed_after_the_checkpoint_passed_it_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let config = StoreConfig {
            wal_segment_bytes: 1,
            ..StoreConfig::default()
        };
        let (store, _) = block(Store::open(StdFs, clock, dir.path(), config)).unwrap();
        let topic = TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        };
        block(store.create_topic("t", topic)).unwrap();
        block(store.produce("t", Some(0), b"k", b"fills segment 0")).unwrap();
        let part = store.partition("t", 0).unwrap();
        // Appended, unwritten; the log commits its record before the WAL writes it.
        let (seq, _) = store.append_both(&part, b"k", b"v").unwrap();
        block(part.log.sync()).unwrap();
        block(store.persist_hwms()).unwrap();
        block(store.checkpoint_wal()).unwrap();
        let before = store.wal().segment_count();
        // The write rolls, sealing the segment the checkpoint already passed.
        block(store.wal().sync_to(seq)).unwrap();
        assert_eq!(store.wal().segment_count(), before + 1);
        block(store.checkpoint_wal()).unwrap();
        assert_eq!(
            store.wal().segment_count(),
            1,
            "only the active one is left"
        );
    }

    /// A WAL entry does not say where its record went, so a lost checkpoint leaves the
    /// store unable to tell the entry of a record retention reaped from that of a
    /// record never committed: it replays every entry of a partition. One refused by the
    /// open that lost the checkpoint keeps its entries for later, and the checkpoint
    /// that open persists holds nothing for it: the first open that brings it back
    /// replays all of them, as blind as the open that lost the checkpoint.
    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "the test damages files at rest with std::fs, as a flip on the platter would"
    )]
    fn a_partition_refused_when_the_checkpoint_is_lost_stays_unchecked_until_it_opens() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let clock = ManualClock::new(1_700_000_000_000);
        let open = || {
            block(Store::open(
                StdFs,
                clock.clone(),
                root,
                StoreConfig::default(),
            ))
        };
        let t1 = ("t".to_string(), 1);
        let checkpoint = root.join("wal").join(crate::format::wal::CHECKPOINT_FILE);
        let read_checkpoint = || {
            crate::format::wal::decode_checkpoint(&std::fs::read(&checkpoint).unwrap())
                .expect("a readable checkpoint")
        };
        {
            let (store, _) = open().unwrap();
            let topic = TopicConfig {
                partitions: 2,
                ..TopicConfig::default()
            };
            block(store.create_topic("t", topic)).unwrap();
            for id in 0..4 {
                let payload = format!("id:{id}");
                block(store.produce("t", Some(1), b"k", payload.as_bytes())).unwrap();
            }
            block(store.persist_hwms()).unwrap();
            block(store.checkpoint_wal()).unwrap();
            assert_eq!(read_checkpoint()[&t1].seq, 4, "past all four entries");
        }
        // The checkpoint lost, and a flip below t/1's persisted HWM with frames after it.
        let segment = root.join("topics/t/p00001/00000000000000000000.log");
        let intact = std::fs::read(&segment).unwrap();
        let mut bytes = std::fs::read(&checkpoint).unwrap();
        bytes[0] ^= 0x01;
        std::fs::write(&checkpoint, &bytes).unwrap();
        flip_inside(&segment, b"id:1");
        {
            let (store, report) = open().unwrap();
            assert!(report.wal.checkpoint_corrupt);
            assert_eq!(report.refused.len(), 1, "{:?}", report.refused);
            assert_eq!(report.refused[0].0, t1);
            block(store.produce("t", Some(0), b"k", b"moves t/0")).unwrap();
            block(store.persist_hwms()).unwrap();
            block(store.checkpoint_wal()).unwrap();
            let persisted = read_checkpoint();
            assert_eq!(persisted.get(&t1).map_or(0, |c| c.seq), 0, "{persisted:?}");
            assert!(
                root.join("wal/00000000000000000000.wal").exists(),
                "t/1's entries kept"
            );
        }
        // The segment mended, t/1 opens and replays every entry, each visible at its
        // offset: nothing committed twice here, only because retention kept them all.
        std::fs::write(&segment, intact).unwrap();
        let (store, report) = open().unwrap();
        assert!(report.refused.is_empty() && !report.wal.checkpoint_corrupt);
        assert_eq!(report.replayed, 0);
        let part = store.partition("t", 1).unwrap();
        assert_eq!(part.log.hwm(), 4);
        block(store.persist_hwms()).unwrap();
        block(store.checkpoint_wal()).unwrap();
        assert_eq!(
            read_checkpoint()[&t1].seq,
            4,
            "checked again once it opened"
        );
    }
}
