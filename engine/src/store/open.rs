//! Opening a store: every topic and partition recovers (with R2's salvage into the
//! WAL), then the WAL is read and every entry past its partition's checkpoint is
//! committed again, before `open` returns (the recovery order in `store`'s header).

use super::consume::persist_frontier_word;
use super::*;

/// The open topics by name.
type Topics<F, C> = BTreeMap<String, Arc<TopicState<F, C>>>;

impl<F: Fs, C: Clock> Store<F, C> {
    /// Opens the store at `root`: partitions recover (salvaging into the WAL what an R2
    /// cut would lose), then the WAL replays.
    pub async fn open(
        fs: F,
        clock: C,
        root: impl Into<PathBuf>,
        config: StoreConfig,
    ) -> Result<(Self, StoreOpenReport), StoreError> {
        let root = root.into();
        let topics_dir = root.join(layout::TOPICS_DIR);
        fs.create_dir_all(&topics_dir)
            .await
            .map_err(|source| StoreError::Io {
                op: "create data root",
                source,
            })?;
        let mut report = StoreOpenReport::default();
        // An R2 cut discards records the WAL is trusted to re-commit; the salvage keeps
        // those whose entry it lost, opening the WAL at the first cut that needs it.
        let mut opening =
            salvage::OpeningWal::new(fs.clone(), root.join("wal"), config.wal_segment_bytes);
        let (topics, refused_topics) =
            open_topics(&fs, &clock, &root, &mut report, &mut opening).await?;
        let salvage::OpenedWal {
            wal,
            checkpoint,
            entries,
            report: wal_report,
            salvaged,
        } = opening.finish().await.map_err(StoreError::Wal)?;
        report.wal = wal_report;
        report.salvaged = salvaged;

        let checkpoint = lower_checkpoint_to_clamps(&topics, &wal, checkpoint).await?;
        // Segments the loaded checkpoint covers outlived a crash between its persist
        // and their unlinks: the first checkpoint persists it again (it may have been
        // read from a page cache the platter lacks) and deletes them.
        let owed = !wal.covered(&checkpoint).is_empty();
        let mut pending: BTreeMap<PartitionId, Pending> = BTreeMap::new();
        for (id, cp) in &checkpoint {
            let p = pending.entry(id.clone()).or_default();
            p.checkpoint = *cp;
            p.seq_end = cp.seq;
        }
        let store = Store {
            inner: Arc::new(Inner {
                fs,
                clock,
                root,
                config,
                topics: Mutex::new(topics),
                refused_topics,
                wal,
                pending: Mutex::new(pending),
                checkpoint_owed: async_lock::Mutex::new(owed),
                metrics: StoreMetrics::default(),
            }),
        };
        for part in store.partitions() {
            part.log
                .set_retention_floor(checkpoint.get(&part.id).map_or(0, |c| c.offset));
        }
        store.expose_if_the_wal_lost_entries(&mut report).await?;
        store.clamp_frontiers_to_hwms().await?;
        report.replayed = store.replay(entries, &checkpoint).await?;
        add(&store.inner.metrics.wal_replayed, report.replayed);
        Ok((store, report))
    }

    /// The WAL has an unreadable region: a torn last group commit (never acknowledged)
    /// looks the same as a damaged acknowledged frame, so assume it lost entries it
    /// cannot name. The hidden tails may hold the only copies: expose them before the
    /// replay, which then skips the entries whose copies became visible.
    async fn expose_if_the_wal_lost_entries(
        &self,
        report: &mut StoreOpenReport,
    ) -> Result<(), StoreError> {
        if report.wal.corrupt_entries == 0 && report.wal.skipped_bytes == 0 {
            return Ok(());
        }
        for part in self.partitions() {
            report.hidden_exposed += part
                .log
                .expose_hidden_tail()
                .await
                .map_err(log_err(&part.id))?;
        }
        Ok(())
    }

    /// The replay commits at the recovered tail, reusing any offsets a cut or clamp took
    /// back. A `consumer.offset` above the recovered HWM (a clamp of damaged frames, or a
    /// damaged `hwm` word) would mark those re-committed records as acknowledged: lowers
    /// it, durably, before anything is committed. This reads the word only to bound it;
    /// the queue state itself still loads on first touch.
    async fn clamp_frontiers_to_hwms(&self) -> Result<(), StoreError> {
        for part in self.partitions() {
            let bound = part.log.hwm();
            let dir = part.log.dir().to_path_buf();
            let stored = self.read_frontier_word(&part).await?;
            if let Ok(Some(value)) = stored
                && value > bound
            {
                crate::alarm::frontier_clamped(&dir, value, bound);
                add(&self.inner.metrics.frontier_clamps, 1);
                persist_frontier_word(&self.inner.fs, &dir, bound).await?;
            }
        }
        Ok(())
    }

    /// Re-commits WAL entries past their partition's checkpoint, in WAL order, except
    /// those with a copy already visible between the checkpoint's offset and the HWM.
    /// An entry and the salvage entries linked to it stand for one record: the first
    /// live one is replayed in its root's place, and all of them then share its offset.
    /// A copy of an entry the checkpoint passed stands for a record below it and is
    /// skipped; a revival of one is live (see [`wal::WalEntry::live_from`]).
    async fn replay(
        &self,
        entries: Vec<wal::WalEntry>,
        checkpoint: &BTreeMap<PartitionId, Checkpoint>,
    ) -> Result<u64, StoreError> {
        let mut by_partition: BTreeMap<PartitionId, BTreeMap<u64, Vec<wal::WalEntry>>> =
            BTreeMap::new();
        for entry in entries {
            let floor = checkpoint
                .get(&entry.partition)
                .copied()
                .unwrap_or_default();
            let live = entry.live_from(floor.seq);
            {
                let mut pending = lock(&self.inner.pending);
                let p = pending.entry(entry.partition.clone()).or_default();
                p.seq_end = p.seq_end.max(entry.seq + 1);
                if live {
                    p.entries.insert(entry.seq, None);
                }
            }
            if live {
                by_partition
                    .entry(entry.partition.clone())
                    .or_default()
                    .entry(entry.root())
                    .or_default()
                    .push(entry);
            }
        }
        let mut replayed = 0u64;
        for (id, roots) in by_partition {
            let Ok(partition) = self.partition(&id.0, id.1) else {
                tracing::error!(topic = %id.0, partition = id.1, entries = roots.len(),
                    "WAL entries for an unavailable partition kept for a later replay");
                continue;
            };
            let from = checkpoint.get(&id).map_or(0, |c| c.offset);
            let mut visible = visible_copies(&partition.log, from)
                .await
                .map_err(log_err(&id))?;
            let mut to_commit = Vec::new();
            {
                let mut pending = lock(&self.inner.pending);
                let p = pending.entry(id.clone()).or_default();
                for (root, mut members) in roots {
                    let seqs: Vec<u64> = members.iter().map(|e| e.seq).collect();
                    debug_assert!(seqs.windows(2).all(|w| w[0] < w[1]));
                    debug_assert!(members.iter().all(|e| e.root() == root));
                    let first = members.swap_remove(0);
                    debug_assert!(
                        members
                            .iter()
                            .all(|e| (&e.key, &e.payload) == (&first.key, &first.payload)),
                        "a copy holds its root's bytes"
                    );
                    let copy = (Bytes::from(first.key), Bytes::from(first.payload));
                    match visible
                        .get_mut(&copy)
                        .and_then(|offsets| offsets.pop_first())
                    {
                        // Already visible below the recovered HWM: covered. It stays
                        // pending at that offset until a checkpoint passes it, so the
                        // checkpoint's offset never rises above its copy while an
                        // earlier entry holds its seq back (a replay of every entry,
                        // after a lost checkpoint, commits old entries at new offsets:
                        // WAL order is then not offset order).
                        Some(offset) => {
                            for seq in seqs {
                                p.entries.insert(seq, Some(offset));
                            }
                        }
                        None => to_commit.push((seqs, copy)),
                    }
                }
            }
            if !to_commit.is_empty() {
                crate::alarm::replay_committing(partition.log.dir(), to_commit.len() as u64);
            }
            for chunk in to_commit.chunks(self.inner.config.replay_batch_records.max(1)) {
                let range = partition
                    .log
                    .commit(chunk.iter().map(|(_, (k, v))| (&k[..], &v[..])))
                    .await
                    .map_err(log_err(&id))?;
                let mut pending = lock(&self.inner.pending);
                let p = pending.entry(id.clone()).or_default();
                for ((seqs, _), offset) in chunk.iter().zip(range) {
                    for &seq in seqs {
                        p.entries.insert(seq, Some(offset));
                    }
                }
                replayed += chunk.len() as u64;
            }
        }
        if replayed > 0 {
            tracing::info!(replayed, "WAL entries re-committed");
        }
        Ok(replayed)
    }
}
/// Opens every topic under the data root, each partition's log through `opening` (so an
/// R2 cut can salvage what the WAL lost). A topic whose `topic.conf` does not read is
/// refused, not the store: its partitions are left untouched and its WAL entries kept.
async fn open_topics<F: Fs, C: Clock>(
    fs: &F,
    clock: &C,
    root: &Path,
    report: &mut StoreOpenReport,
    opening: &mut salvage::OpeningWal<F>,
) -> Result<(Topics<F, C>, BTreeMap<String, String>), StoreError> {
    let topics_dir = root.join(layout::TOPICS_DIR);
    let mut topics = BTreeMap::new();
    let mut refused_topics = BTreeMap::new();
    let names = fs
        .list_dir(&topics_dir)
        .await
        .map_err(|source| StoreError::Io {
            op: "list topics",
            source,
        })?;
    for name in names {
        if validate_topic_name(&name).is_err() {
            continue;
        }
        let conf_path = topics_dir.join(&name).join(topic::TOPIC_CONF_FILE);
        if !fs
            .exists(&conf_path)
            .await
            .map_err(|source| StoreError::Io {
                op: "stat topic.conf",
                source,
            })?
        {
            tracing::warn!(topic = %name, "topic directory without topic.conf ignored");
            continue;
        }
        // An unreadable topic.conf closes that topic, not the store: its partitions
        // are left untouched and its WAL entries kept for a later replay.
        let config = match read_text(fs, &conf_path).await {
            Ok(text) => {
                TopicConfig::decode(&text).map_err(|e| format!("{}: {e}", conf_path.display()))
            }
            Err(StoreError::InvalidConfig(reason)) => Err(reason),
            Err(e) => return Err(e),
        };
        let config = match config {
            Ok(config) => config,
            Err(reason) => {
                crate::alarm::topic_refused(&topics_dir.join(&name), &reason);
                report.refused_topics.push((name.clone(), reason.clone()));
                refused_topics.insert(name, reason);
                continue;
            }
        };
        let state = open_topic(fs, clock, root, &name, config, report, Some(&mut *opening)).await?;
        topics.insert(name, Arc::new(state));
    }
    Ok((topics, refused_topics))
}

/// A recovery clamp (R4) may have cut a partition below its checkpoint's offset: the
/// records it writes there next are copies of entries past the checkpoint, which replay
/// must see. Lowers the offset to the recovered HWM, durably, before anything is
/// committed; returns the checkpoint in force.
async fn lower_checkpoint_to_clamps<F: Fs, C: Clock>(
    topics: &Topics<F, C>,
    wal: &Wal<F>,
    mut checkpoint: BTreeMap<PartitionId, Checkpoint>,
) -> Result<BTreeMap<PartitionId, Checkpoint>, StoreError> {
    let mut lowered = false;
    for state in topics.values() {
        for slot in &state.partitions {
            if let Slot::Open(part) = slot
                && let Some(cp) = checkpoint.get_mut(&part.id)
                && part.log.hwm() < cp.offset
            {
                cp.offset = part.log.hwm();
                lowered = true;
            }
        }
    }
    if lowered {
        wal.checkpoint(&checkpoint).await.map_err(StoreError::Wal)?;
    }
    Ok(checkpoint)
}

pub(super) async fn open_topic<F: Fs, C: Clock>(
    fs: &F,
    clock: &C,
    root: &Path,
    name: &str,
    config: TopicConfig,
    report: &mut StoreOpenReport,
    mut salvage: Option<&mut salvage::OpeningWal<F>>,
) -> Result<TopicState<F, C>, StoreError> {
    let mut partitions = Vec::new();
    for index in 0..config.partitions {
        let dir = layout::partition_dir(root, name, index);
        let id = (name.to_string(), index);
        let (fs, clock, log_config) = (fs.clone(), clock.clone(), config.log.clone());
        let opened = match salvage.as_deref_mut() {
            Some(salvage) => {
                let mut salvage = salvage.partition(&id);
                Log::open_salvaging(fs, clock, &dir, log_config, &mut salvage).await
            }
            None => Log::open(fs, clock, &dir, log_config).await,
        };
        match opened {
            Ok((log, open_report)) => {
                report.partitions_opened += 1;
                report.partitions.insert(id.clone(), open_report);
                partitions.push(Slot::Open(Arc::new(Partition {
                    id,
                    log,
                    queue: async_lock::Mutex::new(None),
                    produce_order: Mutex::new(()),
                })));
            }
            Err(LogError::Corruption(c)) => {
                report.refused.push((id, c.to_string()));
                partitions.push(Slot::Refused(c.to_string()));
            }
            Err(e) => return Err(log_err(&id)(e)),
        }
    }
    Ok(TopicState { config, partitions })
}

/// The offsets of the records in `[from, hwm)`, per (key, payload).
async fn visible_copies<F: Fs, C: Clock>(
    log: &Log<F, C>,
    from: u64,
) -> Result<BTreeMap<(Bytes, Bytes), std::collections::BTreeSet<u64>>, LogError> {
    let mut copies = BTreeMap::new();
    let mut next = from.max(log.log_start());
    loop {
        let batch = log.read(next, 1000).await?;
        if batch.next_offset == next {
            return Ok(copies);
        }
        next = batch.next_offset;
        // Copies, not views: a view would keep its whole frame alive for the rest of the
        // replay, every frame past the checkpoint at once.
        for r in &batch.records {
            copies
                .entry((
                    Bytes::copy_from_slice(r.key),
                    Bytes::copy_from_slice(r.payload),
                ))
                .or_insert_with(std::collections::BTreeSet::new)
                .insert(r.offset);
        }
    }
}

async fn read_text<F: Fs>(fs: &F, path: &Path) -> Result<String, StoreError> {
    let io = |op: &'static str| move |source| StoreError::Io { op, source };
    let file = fs.open(path, OpenMode::Read).await.map_err(io("open"))?;
    let len = file.len().await.map_err(io("stat"))?;
    if len > 1 << 16 {
        return Err(StoreError::InvalidConfig(format!(
            "{} is too large",
            path.display()
        )));
    }
    let mut bytes = vec![0u8; len as usize];
    read_exact_at(&file, &mut bytes, 0)
        .await
        .map_err(io("read"))?;
    String::from_utf8(bytes)
        .map_err(|_| StoreError::InvalidConfig(format!("{} is not UTF-8", path.display())))
}
