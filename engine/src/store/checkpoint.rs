//! WAL checkpoints: per partition, advanced only to entries below the persisted HWM,
//! and the WAL segments every partition's checkpoint has passed deleted.

use super::*;

impl<F: Fs, C: Clock> Store<F, C> {
    /// Advances every partition's WAL checkpoint over the entries below its persisted
    /// HWM, persists it when it moved, and deletes WAL segments it fully covers.
    pub async fn checkpoint_wal(&self) -> Result<(), StoreError> {
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
        if !moved {
            return Ok(());
        }
        let deleted = self
            .inner
            .wal
            .checkpoint(&checkpoint)
            .await
            .map_err(StoreError::Wal)?;
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

    /// Persists every partition's HWM now (what the HWM persister does on its cadence).
    pub async fn persist_hwms(&self) -> Result<(), StoreError> {
        for part in self.partitions() {
            part.log.persist_hwm().await.map_err(log_err(&part.id))?;
        }
        Ok(())
    }
}
