//! The consume side: receive (leases, the delay gate, long-poll), ack and nack, the
//! ticker's lease expiry, and the consumer frontier with its atomic persist.

use super::*;
use crate::log::Record;

impl<F: Fs, C: Clock> Store<F, C> {
    /// The partition's `consumer.offset` word: `Ok(None)` when absent, `Err(reason)`
    /// when unreadable as a word, empty included: the file only ever appears by
    /// renaming a temp file fsynced with its 8 bytes, so an empty one means that fsync
    /// was lost (the zero-length-after-rename bug class), and the restart at the log
    /// start it forces must be reported.
    pub(super) async fn read_frontier_word(
        &self,
        part: &Partition<F, C>,
    ) -> Result<Result<Option<u64>, String>, StoreError> {
        let path = part.log.dir().join(layout::CONSUMER_OFFSET_FILE);
        crate::recovery::read_replaced_word_file(&self.inner.fs, &path)
            .await
            .map_err(|source| StoreError::Io {
                op: "read consumer.offset",
                source,
            })
    }

    /// Loads the partition's queue state from `consumer.offset` on first touch.
    async fn queue<'a>(
        &self,
        part: &'a Partition<F, C>,
    ) -> Result<async_lock::MutexGuard<'a, Option<Queue>>, StoreError> {
        let mut guard = part.queue.lock().await;
        if guard.is_none() {
            let stored = self.read_frontier_word(part).await?;
            let status = part.log.status();
            let value = match stored {
                Ok(v) => v.unwrap_or(status.log_start),
                Err(reason) => {
                    crate::alarm::frontier_reset(part.log.dir(), status.log_start, &reason);
                    add(&self.inner.metrics.frontier_clamps, 1);
                    status.log_start
                }
            };
            let clamped = value.clamp(status.log_start, status.hwm);
            if clamped != value {
                crate::alarm::frontier_clamped(part.log.dir(), value, clamped);
                add(&self.inner.metrics.frontier_clamps, 1);
            }
            let mut q = Queue::new(clamped);
            q.persisted_frontier = value;
            crate::alarm::frontier_loaded(part.log.dir(), clamped);
            *guard = Some(q);
        }
        Ok(guard)
    }

    /// Up to `max` deliverable records of one partition, each leased for the topic's
    /// `lease_ms`: nacked and expired ones first, then new ones up to the HWM, stopping
    /// at the first record whose delay gate is closed. Does not wait.
    pub async fn receive(
        &self,
        topic: &str,
        partition: u32,
        max: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let config = self.topic(topic)?.config.clone();
        let part = self.partition(topic, partition)?;
        let mut guard = self.queue(&part).await?;
        let q = guard.as_mut().expect("queue loaded");
        let now = self.inner.clock.now();
        let wall_ms = part.log.wall_ms();
        let deadline = now + Duration::from_millis(config.lease_ms);
        let log_start = part.log.log_start();
        q.drop_below(log_start);
        let expired = q.expire(now);
        if expired > 0 {
            add(&self.inner.metrics.leases_expired, expired);
        }
        // Every read comes before any lease: a caller that drops this future (a client
        // that gave up waiting) leaves no lease behind on a record it never returned.
        let ready: Vec<u64> = q.ready.iter().take(max).copied().collect();
        let (redelivered, mut settle) = read_ready(&part, ready).await?;
        let Scanned {
            fresh,
            skips,
            gate,
            scanned_to_end,
            next_scan,
        } = scan_fresh(
            &part,
            q,
            &config,
            wall_ms,
            max - redelivered.len(),
            &mut settle,
        )
        .await?;
        // No await below: the queue changes all at once, or not at all.
        // A scan that stopped at `max` saw neither the gate nor the end of the log: it
        // keeps the gate receivers parked on (the ticker then wakes them, at worst once
        // too early) instead of clearing it.
        if gate.is_some() || scanned_to_end {
            q.gate_opens_at_ms = gate;
        }
        if gate.is_some() {
            add(&self.inner.metrics.delay_gate_holds, 1);
        }
        q.next_scan = next_scan;
        for offset in settle {
            q.settle(offset);
        }
        add(&self.inner.metrics.records_skipped, skips);
        let mut out = Vec::with_capacity(redelivered.len() + fresh.len());
        for record in redelivered {
            let attempt = q.lease(record.offset, deadline);
            add(&self.inner.metrics.redeliveries, 1);
            out.push(self.delivery(&part.id, record, attempt));
        }
        for record in fresh {
            let attempt = q.lease(record.offset, deadline);
            out.push(self.delivery(&part.id, record, attempt));
        }
        add(&self.inner.metrics.deliveries, out.len() as u64);
        // Leases this receive expired and left for others (it stopped at `max`) are news
        // to receivers parked on the partition: the ticker will find nothing left to
        // expire, so tell them here.
        if expired > 0 && !q.ready.is_empty() {
            part.log.notify_all();
        }
        Ok(out)
    }

    fn delivery(&self, id: &PartitionId, record: crate::log::Record, attempt: u32) -> Delivery {
        Delivery {
            topic: id.0.clone(),
            partition: id.1,
            offset: record.offset,
            key: record.key,
            payload: record.payload,
            committed_at_ms: record.committed_at_ms,
            attempt,
        }
    }

    /// Like [`Store::receive`], but parks until at least one record is deliverable.
    /// Waiters are woken by commits, nacks, lease expiry and opening delay gates (all
    /// broadcast on the partition log); there is no timer per waiter.
    pub async fn receive_wait(
        &self,
        topic: &str,
        partition: u32,
        max: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let part = self.partition(topic, partition)?;
        let mut parked = false;
        loop {
            let listener = part.log.listen();
            let out = self.receive(topic, partition, max).await?;
            if !out.is_empty() {
                if parked {
                    add(&self.inner.metrics.parked_receives_woken, 1);
                }
                return Ok(out);
            }
            if part.log.status().closed {
                return Ok(out);
            }
            listener.await;
            parked = true;
        }
    }

    /// Settles a delivered record.
    pub async fn ack(&self, topic: &str, partition: u32, offset: u64) -> Result<(), StoreError> {
        let part = self.partition(topic, partition)?;
        let mut guard = self.queue(&part).await?;
        let q = guard.as_mut().expect("queue loaded");
        if !q.is_outstanding(offset) {
            return Err(StoreError::NotOutstanding {
                topic: topic.to_string(),
                partition,
                offset,
            });
        }
        q.settle(offset);
        add(&self.inner.metrics.acks, 1);
        Ok(())
    }

    /// Makes a delivered record deliverable again at once and wakes receivers.
    pub async fn nack(&self, topic: &str, partition: u32, offset: u64) -> Result<(), StoreError> {
        let part = self.partition(topic, partition)?;
        {
            let mut guard = self.queue(&part).await?;
            let q = guard.as_mut().expect("queue loaded");
            if !q.leased.contains_key(&offset) {
                return Err(StoreError::NotOutstanding {
                    topic: topic.to_string(),
                    partition,
                    offset,
                });
            }
            q.leased.remove(&offset);
            q.ready.insert(offset);
        }
        add(&self.inner.metrics.nacks, 1);
        part.log.notify_all();
        Ok(())
    }

    /// The consumer frontier of a partition (loading it if needed).
    pub async fn frontier(&self, topic: &str, partition: u32) -> Result<u64, StoreError> {
        let part = self.partition(topic, partition)?;
        let guard = self.queue(&part).await?;
        Ok(guard.as_ref().map_or(0, |q| q.frontier))
    }

    /// One ticker step: expire leases and wake receivers when a lease expired or a
    /// delay gate opened.
    pub async fn tick(&self) {
        let now = self.inner.clock.now();
        for part in self.partitions() {
            let wall_ms = part.log.wall_ms();
            let wake = {
                let mut guard = part.queue.lock().await;
                let Some(q) = guard.as_mut() else { continue };
                let expired = q.expire(now);
                add(&self.inner.metrics.leases_expired, expired);
                let gate_open = q.gate_opens_at_ms.is_some_and(|at| at <= wall_ms);
                if gate_open {
                    q.gate_opens_at_ms = None;
                }
                expired > 0 || gate_open
            };
            if wake {
                part.log.notify_all();
            }
        }
    }

    /// Persists every loaded frontier that moved: temp file, fsync, rename over,
    /// directory fsync. Never past the partition's persisted HWM. Every partition is
    /// tried; the first failure is returned.
    pub async fn persist_frontiers(&self) -> Result<(), StoreError> {
        // A partition whose write fails keeps its old word (the next round retries it)
        // and does not stop the round: one bad directory must not hold every other
        // partition's frontier back. The first failure is returned.
        let mut failed = None;
        for part in self.partitions() {
            let mut guard = part.queue.lock().await;
            let Some(q) = guard.as_mut() else { continue };
            let value = q.frontier.min(part.log.persisted_hwm());
            if value == q.persisted_frontier {
                continue;
            }
            let dir = part.log.dir().to_path_buf();
            match persist_frontier_word(&self.inner.fs, &dir, value).await {
                Ok(()) => {
                    q.persisted_frontier = value;
                    add(&self.inner.metrics.frontier_persists, 1);
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Replaces the partition's `consumer.offset` with `value`, between the two events of
/// the engine's account: begun, and (only once the directory fsync returned) durable.
pub(super) async fn persist_frontier_word<F: Fs>(
    fs: &F,
    dir: &Path,
    value: u64,
) -> Result<(), StoreError> {
    crate::alarm::frontier_persisting(dir, value);
    write_word_atomically(
        fs,
        dir,
        layout::CONSUMER_OFFSET_FILE,
        layout::CONSUMER_OFFSET_TMP_FILE,
        value,
    )
    .await?;
    crate::alarm::frontier_persisted(dir, value);
    Ok(())
}

/// Replaces `dir/name` with an 8-byte value (see [`replace_atomically`]).
async fn write_word_atomically<F: Fs>(
    fs: &F,
    dir: &Path,
    name: &str,
    tmp_name: &str,
    value: u64,
) -> Result<(), StoreError> {
    const STEPS: [&str; 5] = [
        "create temp file",
        "write temp file",
        "sync temp file",
        "rename",
        "sync directory",
    ];
    replace_atomically(fs, dir, name, tmp_name, &word::encode(value))
        .await
        .map_err(|(step, source)| StoreError::Io {
            op: step.named(&STEPS),
            source,
        })
}

/// The records at the ready offsets (nacked or expired), for redelivery; an offset no
/// longer readable (deleted by retention, or skipped) goes to `settle` instead.
async fn read_ready<F: Fs, C: Clock>(
    part: &Partition<F, C>,
    ready: Vec<u64>,
) -> Result<(Vec<Record>, Vec<u64>), StoreError> {
    let mut redelivered = Vec::new();
    let mut settle = Vec::new();
    for offset in ready {
        let batch = match part.log.read(offset, 1).await {
            Ok(b) => b,
            Err(LogError::OffsetBeforeLogStart { .. }) => {
                settle.push(offset);
                continue;
            }
            Err(e) => return Err(log_err(&part.id)(e)),
        };
        match batch.records.into_iter().next() {
            Some(record) if record.offset == offset => redelivered.push(record),
            _ => settle.push(offset),
        }
    }
    Ok((redelivered, settle))
}

/// What a scan for fresh records found.
struct Scanned {
    fresh: Vec<Record>,
    /// Unreadable records passed over (each also in `settle`).
    skips: u64,
    /// The commit time plus delay at which the first held record opens.
    gate: Option<u64>,
    /// The scan reached the HWM.
    scanned_to_end: bool,
    /// Where the next scan starts.
    next_scan: u64,
}

/// Reads up to `want` records from the queue's scan position, stopping at the HWM or at
/// the first record the delay gate holds (commit times never decrease, so nothing after
/// it is open either). Skipped offsets go to `settle`. Changes the queue only to forget
/// what retention deleted.
async fn scan_fresh<F: Fs, C: Clock>(
    part: &Partition<F, C>,
    q: &mut Queue,
    config: &TopicConfig,
    wall_ms: u64,
    want: usize,
    settle: &mut Vec<u64>,
) -> Result<Scanned, StoreError> {
    let mut fresh = Vec::new();
    let mut skips = 0u64;
    let mut gate = None;
    let mut scanned_to_end = false;
    let mut next_scan = q.next_scan;
    while fresh.len() < want {
        let batch = match part.log.read(next_scan, want - fresh.len()).await {
            Ok(b) => b,
            Err(LogError::OffsetBeforeLogStart { log_start, .. }) => {
                // Forgetting what retention deleted loses no delivery.
                q.drop_below(log_start);
                next_scan = next_scan.max(q.next_scan);
                continue;
            }
            Err(e) => return Err(log_err(&part.id)(e)),
        };
        if batch.next_offset == next_scan {
            scanned_to_end = true;
            break;
        }
        let mut gated = false;
        let mut skipped = batch.skipped.iter().peekable();
        for record in batch.records {
            while let Some(s) = skipped.next_if(|s| **s < record.offset) {
                next_scan = *s + 1;
                settle.push(*s);
                skips += 1;
            }
            let opens_at = record.committed_at_ms.saturating_add(config.delay_ms);
            if config.delay_ms > 0 && opens_at > wall_ms {
                gate = Some(opens_at);
                gated = true;
                break;
            }
            next_scan = record.offset + 1;
            fresh.push(record);
        }
        if gated {
            break;
        }
        for s in skipped {
            next_scan = *s + 1;
            settle.push(*s);
            skips += 1;
        }
        next_scan = next_scan.max(batch.next_offset);
    }
    Ok(Scanned {
        fresh,
        skips,
        gate,
        scanned_to_end,
        next_scan,
    })
}
