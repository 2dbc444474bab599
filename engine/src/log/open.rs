//! Opening a log: recovery (R1-R4, with a salvage before an R2 cut), the write-back of
//! what it cannot prove durable, and the files a log keeps open (`hwm`, the active
//! segment).

use super::*;
use crate::recovery::PartitionScan;

impl<F: Fs, C: Clock> Log<F, C> {
    /// Opens (or creates) the partition in `dir`, running recovery (R1-R4): torn tails
    /// and holes above the persisted HWM are truncated and fsynced, a clamp is recorded
    /// and persisted, and damaged acknowledged data refuses to open. The frames kept
    /// above the HWM are written back and fsynced, and the directory fsynced, so that
    /// nothing a crashed process left only in the page cache is built on.
    pub async fn open(
        fs: F,
        clock: C,
        dir: impl Into<PathBuf>,
        config: LogConfig,
    ) -> Result<(Self, OpenReport), LogError> {
        Self::open_salvaging(fs, clock, dir, config, &mut recovery::Discard).await
    }

    /// [`Log::open`], handing the records an R2 truncation would discard to `salvage`
    /// before the truncation runs (see [`recovery::Salvage`]): the store keeps those its
    /// WAL no longer holds.
    pub async fn open_salvaging(
        fs: F,
        clock: C,
        dir: impl Into<PathBuf>,
        config: LogConfig,
        salvage: &mut impl recovery::Salvage,
    ) -> Result<(Self, OpenReport), LogError> {
        config.validate().map_err(LogError::InvalidConfig)?;
        let dir = dir.into();
        fs.create_dir_all(&dir)
            .await
            .map_err(LogError::io("create partition directory"))?;
        let mut scan = recovery::scan_partition(&fs, &dir, ScanDepth::Frames)
            .await
            .map_err(LogError::io("scan partition"))?;
        if let Some(corruption) = scan.corruption.clone() {
            crate::alarm::refused(
                &dir,
                &corruption.segment,
                corruption.position,
                &corruption.reason,
            );
            return Err(LogError::Corruption(corruption));
        }
        let metrics = LogMetrics::default();
        let mut report = OpenReport::default();
        announce_scan(&dir, &scan, &metrics, &mut report);
        let discarded = recovery::read_discarded(&fs, &dir, &scan)
            .await
            .map_err(LogError::io("read the frames R2 discards"))?;
        if !discarded.is_empty() {
            report.salvage_offered = discarded.len() as u64;
            let kept = salvage
                .keep(discarded)
                .await
                .map_err(LogError::io("salvage before R2"))?;
            report.salvaged = kept.kept;
            report.salvage_copied = kept.copied;
            assert!(kept.kept + kept.copied <= report.salvage_offered);
            crate::alarm::salvaged(&dir, report.salvage_offered, &kept);
        }
        recovery::apply(&fs, &dir, &mut scan)
            .await
            .map_err(LogError::io("truncate during recovery"))?;
        report.written_back_bytes = recovery::persist_unproven(&fs, &dir, &scan)
            .await
            .map_err(LogError::io("write back what recovery found above the HWM"))?;
        let hwm = scan.hwm();
        report.hwm = hwm;
        report.tail_offset = scan.tail_offset;
        report.recorded_loss_records = scan.recorded_loss_records();
        report.hidden_records = scan.hidden_records();
        if report.recorded_loss_records > 0 {
            crate::alarm::clamp(&dir, scan.persisted_hwm.unwrap_or(0), hwm);
        }
        add(&metrics.recorded_loss_records, report.recorded_loss_records);
        add(&metrics.hidden_records_at_open, report.hidden_records);

        let hwm_file = open_hwm_file(&fs, &dir, hwm).await?;

        let mut segments = segments_of(&scan);
        if segments.is_empty() {
            let base = scan.tail_offset;
            create_segment_file(&fs, &dir, base).await?;
            segments.insert(base, Segment::empty(base));
        }
        let (&active_base, active_segment) = segments
            .last_key_value()
            .expect("at least one segment exists");
        let active = Arc::new(
            fs.open(&dir.join(&active_segment.name), OpenMode::ReadWrite)
                .await
                .map_err(LogError::io("open active segment"))?,
        );

        let tail = scan.tail_offset;
        let now = clock.now();
        let state = recovered_state(&scan, hwm, segments, &config, now);
        state.check_invariants();
        let allocated = scan
            .segments
            .last()
            .filter(|s| s.base_offset == active_base)
            .map_or(0, |s| s.file_len);
        let io = write::Io::new(active, active_base, allocated);
        let log = Log {
            inner: Arc::new(Inner {
                fs,
                clock,
                dir,
                config,
                state: Mutex::new(state),
                encoded_ready: Arc::new(Notify::default()),
                io: async_lock::Mutex::new(io),
                hwm_file: async_lock::Mutex::new(hwm_file),
                notify: Arc::new(Notify::default()),
                flush_wanted: Arc::new(Notify::default()),
                gathered: Arc::new(Notify::default()),
                metrics,
                retention_floor: std::sync::atomic::AtomicU64::new(u64::MAX),
                wall_floor: (scan.last_committed_at_ms.unwrap_or(0), now),
            }),
        };
        crate::alarm::log_opened(log.dir(), scan.log_start, hwm, tail);
        Ok((log, report))
    }
}

/// Raises the alarms for what the scan found and will be cut or trimmed (a torn tail or
/// a hole, junk after a sealed segment) and counts it in `metrics` and `report`.
fn announce_scan(dir: &Path, scan: &PartitionScan, metrics: &LogMetrics, report: &mut OpenReport) {
    if let Some(t) = &scan.truncation {
        crate::alarm::truncated(
            dir,
            t.rule == TruncationRule::TornTail,
            &t.segment,
            t.position,
            t.offset,
            t.bytes,
            &t.reason,
        );
        match t.rule {
            TruncationRule::TornTail => add(&metrics.truncations_torn_tail, 1),
            TruncationRule::HoleAboveHwm => add(&metrics.truncations_hole, 1),
        }
        add(&metrics.truncated_bytes, t.bytes);
        report.truncation = Some((t.rule, t.bytes));
    }
    report.zero_tail_bytes = scan.zero_tail_bytes();
    for s in scan.segments.iter().filter(|s| s.junk_tail > 0) {
        crate::alarm::junk_trimmed(
            dir,
            &s.file_name,
            s.junk_tail,
            s.junk_reason.as_deref().unwrap_or(""),
        );
    }
    add(&metrics.zero_tail_bytes_at_open, report.zero_tail_bytes);
}

/// The log's segments as the scan left them (after its cuts).
fn segments_of<F: Fs>(scan: &PartitionScan) -> BTreeMap<u64, Segment<F>> {
    scan.segments
        .iter()
        .map(|s| {
            (
                s.base_offset,
                Segment {
                    name: s.file_name.clone(),
                    frames: s.frames.clone(),
                    len: s.valid_len,
                    end_offset: s.end_offset,
                    last_committed_at_ms: s.last_committed_at_ms,
                    reader: None,
                },
            )
        })
        .collect()
}

/// The state a log opens with: everything up to the scan's tail written and durable,
/// the HWM persisted at `hwm`, nothing buffered.
fn recovered_state<F: Fs>(
    scan: &PartitionScan,
    hwm: u64,
    segments: BTreeMap<u64, Segment<F>>,
    config: &LogConfig,
    now: Duration,
) -> State<F> {
    let tail = scan.tail_offset;
    State {
        buffer: Buffer::default(),
        buffer_bytes: 0,
        in_flight_bytes: 0,
        oldest_buffered_at: None,
        in_flight: 0,
        queue: queue::EncodeQueue::new(Codecs::new(config.zstd_level, config.zstd_hash_log)),
        next_offset: tail,
        written_end: tail,
        durable_end: tail,
        hwm,
        persisted_hwm: hwm,
        log_start: scan.log_start,
        durable_log_start: scan.log_start,
        last_commit_ms: scan.last_committed_at_ms.unwrap_or(0),
        segments,
        poisoned: None,
        hwm_at_poison: None,
        closing: false,
        closed: false,
        unsynced_bytes: 0,
        last_sync_at: now,
        reads: read::ReadState::new(config.frame_cache_frames),
        unlink_pending: Vec::new(),
        gather: Default::default(),
    }
}

/// Creates a segment file and makes its directory entry durable.
async fn create_segment_file<F: Fs>(fs: &F, dir: &Path, base: u64) -> Result<F::File, LogError> {
    let file = fs
        .open(
            &dir.join(layout::segment_file_name(base)),
            OpenMode::CreateNew,
        )
        .await
        .map_err(LogError::io("create segment"))?;
    fs.sync_dir(dir)
        .await
        .map_err(LogError::io("sync directory after segment create"))?;
    Ok(file)
}

/// Opens the `hwm` file (creating it durably when absent), writes `hwm` into it and
/// fsyncs it, whether or not recovery changed the value.
async fn open_hwm_file<F: Fs>(fs: &F, dir: &Path, hwm: u64) -> Result<F::File, LogError> {
    let path = dir.join(layout::HWM_FILE);
    let exists = fs.exists(&path).await.map_err(LogError::io("stat hwm"))?;
    let file = fs
        .open(
            &path,
            if exists {
                OpenMode::ReadWrite
            } else {
                OpenMode::CreateNew
            },
        )
        .await
        .map_err(LogError::io("open hwm"))?;
    // Written even when unchanged: the value read may sit only in the page cache of a
    // crashed process (a failed fsync leaves it there, clean), and this open builds on it.
    file.write_at(&word::encode(hwm), 0)
        .await
        .map_err(LogError::io("write hwm"))?;
    file.sync_data().await.map_err(LogError::io("sync hwm"))?;
    if !exists {
        fs.sync_dir(dir)
            .await
            .map_err(LogError::io("sync directory after hwm create"))?;
    }
    Ok(file)
}
