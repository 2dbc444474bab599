//! The produce path: a record is appended to the WAL and fsynced (group commit), then
//! committed into its partition's log; only then is it acknowledged.

use super::*;

impl<F: Fs, C: Clock> Store<F, C> {
    /// The partition a key maps to (CRC32C of the key modulo the partition count).
    pub fn partition_for_key(&self, topic: &str, key: &[u8]) -> Result<u32, StoreError> {
        let partitions = self.topic(topic)?.config.partitions;
        Ok(crc32c::crc32c(key) % partitions)
    }

    /// Produces one record: WAL append + fsync, then a durable commit into the partition.
    /// `Ok` is the acknowledgement.
    pub async fn produce(
        &self,
        topic: &str,
        partition: Option<u32>,
        key: &[u8],
        payload: &[u8],
    ) -> Result<Produced, StoreError> {
        let index = match partition {
            Some(p) => p,
            None => self.partition_for_key(topic, key)?,
        };
        let part = self.partition(topic, index)?;
        let max = part.log.config().record_bytes_max();
        let size = crate::format::envelope::encoded_len(key.len(), payload.len());
        if size > max {
            return Err(StoreError::RecordTooLarge { size, max });
        }
        let (seq, appended) = self.append_both(&part, key, payload)?;
        // A failed log append leaves the WAL entry pending: a later replay commits it.
        let offset = appended.map_err(log_err(&part.id))?;
        self.inner.wal.sync_to(seq).await.map_err(StoreError::Wal)?;
        part.log.sync().await.map_err(log_err(&part.id))?;
        let range = offset..offset + 1;
        assert!(
            part.log.hwm() > offset,
            "acknowledging offset {offset} above the HWM"
        );
        add(&self.inner.metrics.produced, 1);
        Ok(Produced {
            partition: index,
            offset: range.start,
            wal_seq: seq,
        })
    }

    /// A produce's appends, to the WAL and to the partition's log buffer, with its
    /// entry registered as pending: its seq, and the log append's offset or error.
    pub(super) fn append_both(
        &self,
        part: &Partition<F, C>,
        key: &[u8],
        payload: &[u8],
    ) -> Result<(u64, Result<u64, LogError>), StoreError> {
        // One lock across both appends: WAL order is offset order in this partition.
        let _order = lock(&part.produce_order);
        let mut pending = lock(&self.inner.pending);
        let seq = self
            .inner
            .wal
            .append(&part.id, key, payload)
            .map_err(StoreError::Wal)?;
        let appended = part.log.append(key, payload);
        let p = pending.entry(part.id.clone()).or_default();
        // Registered before anything is durable, so a checkpoint can never pass it.
        p.entries.insert(seq, appended.as_ref().ok().copied());
        p.seq_end = p.seq_end.max(seq + 1);
        Ok((seq, appended))
    }
}
