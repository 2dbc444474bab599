//! The builders for what the world read of the engine and the disk: opens, alarms,
//! samples of the HWM and its word, segments, listings by identity, poison.

use super::*;

impl History {
    pub fn partition_refused(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        reason: &str,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::PartitionRefused {
                tp: tp.clone(),
                reason: reason.to_owned(),
            },
        )
    }

    pub fn hidden_at_open(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        from: Offset,
        to: Offset,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::HiddenAtOpen {
                tp: tp.clone(),
                from,
                to,
                held,
            },
        )
    }

    pub fn damage_held(
        &mut self,
        at_ms: u64,
        fault_index: usize,
        tp: &TopicPartition,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::DamageHeld {
                fault_index,
                tp: tp.clone(),
                held,
            },
        )
    }

    pub fn reach_held(
        &mut self,
        at_ms: u64,
        fault_index: usize,
        tp: &TopicPartition,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::ReachHeld {
                fault_index,
                tp: tp.clone(),
                held,
            },
        )
    }

    pub fn wal_cached_at_kill(&mut self, at_ms: u64, entries: Vec<DamagedWalEntry>) -> &mut Self {
        self.record(at_ms, EventKind::WalCachedAtKill { entries })
    }

    pub fn wal_durable_at_kill(&mut self, at_ms: u64, entries: Vec<DamagedWalEntry>) -> &mut Self {
        self.record(at_ms, EventKind::WalDurableAtKill { entries })
    }

    pub fn frame_at_skip(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        base: Offset,
        records: u64,
        whole: bool,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::FrameAtSkip {
                tp: tp.clone(),
                base,
                records,
                whole,
            },
        )
    }

    pub fn held_at_refusal(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        bad_offset: Option<Offset>,
        log: Vec<ProduceId>,
        wal: Vec<ProduceId>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::HeldAtRefusal {
                tp: tp.clone(),
                bad_offset,
                log,
                wal,
            },
        )
    }

    pub fn wal_at_end(
        &mut self,
        at_ms: u64,
        opened_ms: u64,
        segments: Vec<WalSegmentAtEnd>,
        checkpoint: Option<Vec<(TopicPartition, u64, u64)>>,
        active: u64,
        segment_bytes: u64,
    ) -> &mut Self {
        // The checkpoint's (partition, seq, offset): seqs for `wal_progress`, offsets
        // (retention's floors) for `retention_progress`.
        let floors = checkpoint
            .iter()
            .flatten()
            .map(|(tp, _, offset)| (tp.clone(), *offset))
            .collect();
        let checkpoint = checkpoint.map(|c| c.into_iter().map(|(tp, seq, _)| (tp, seq)).collect());
        self.record(
            at_ms,
            EventKind::WalAtEnd {
                opened_ms,
                segments,
                checkpoint,
                active,
                segment_bytes,
                floors,
            },
        )
    }

    pub fn wal_kept_at_power_loss(
        &mut self,
        at_ms: u64,
        entries: Vec<DamagedWalEntry>,
    ) -> &mut Self {
        self.record(at_ms, EventKind::WalKeptAtPowerLoss { entries })
    }

    pub fn past_hole_at_open(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::PastHoleAtOpen {
                tp: tp.clone(),
                held,
            },
        )
    }

    pub fn visible_at_open(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        from: Offset,
        to: Offset,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::VisibleAtOpen {
                tp: tp.clone(),
                from,
                to,
                held,
            },
        )
    }

    pub fn salvage_wrote(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        kept: Vec<ProduceId>,
        copied: Vec<ProduceId>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::SalvageWrote {
                tp: tp.clone(),
                kept,
                copied,
            },
        )
    }

    pub fn layout_observed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        knobs: LayoutKnobs,
        segments: Vec<SegmentLayout>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::LayoutObserved {
                tp: tp.clone(),
                knobs,
                segments,
            },
        )
    }

    pub fn refused_partition_changed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        path: &str,
        change: FileChange,
        changed_ms: u64,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::RefusedPartitionChanged {
                tp: tp.clone(),
                path: path.to_owned(),
                change,
                changed_ms,
            },
        )
    }

    pub fn refused_topic_changed(
        &mut self,
        at_ms: u64,
        topic: &str,
        path: &str,
        change: FileChange,
        changed_ms: u64,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::RefusedTopicChanged {
                topic: topic.to_owned(),
                path: path.to_owned(),
                change,
                changed_ms,
            },
        )
    }

    pub fn partition_poisoned(&mut self, at_ms: u64, tp: &TopicPartition) -> &mut Self {
        self.record(at_ms, EventKind::PartitionPoisoned { tp: tp.clone() })
    }

    pub fn hwm_observed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        hwm: Offset,
        persisted_hwm: Option<Offset>,
        durable_tail: Option<Offset>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::HwmObserved {
                tp: tp.clone(),
                hwm,
                persisted_hwm,
                durable_tail,
            },
        )
    }

    pub fn hwm_word_observed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        word: Option<Offset>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::HwmWordObserved {
                tp: tp.clone(),
                word,
            },
        )
    }

    pub fn frontier_word_observed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        word: Option<Offset>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::FrontierWordObserved {
                tp: tp.clone(),
                word,
            },
        )
    }

    pub fn log_start_observed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        log_start: Offset,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::LogStartObserved {
                tp: tp.clone(),
                log_start,
            },
        )
    }

    pub fn segment_created(&mut self, at_ms: u64, tp: &TopicPartition, base: Offset) -> &mut Self {
        self.record(
            at_ms,
            EventKind::SegmentCreated {
                tp: tp.clone(),
                base,
            },
        )
    }

    pub fn segment_deleted(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        base: Offset,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::SegmentDeleted {
                tp: tp.clone(),
                base,
                held,
            },
        )
    }

    pub fn wal_at_open(
        &mut self,
        at_ms: u64,
        skipped_bytes: u64,
        corrupt_entries: u64,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::WalAtOpen {
                skipped_bytes,
                corrupt_entries,
            },
        )
    }

    /// `flipped`: the last flip of the file read, if any.
    pub fn checkpoint_at_open(
        &mut self,
        at_ms: u64,
        floors: Option<Vec<CheckpointFloor>>,
        flipped: Option<usize>,
    ) -> &mut Self {
        self.record(at_ms, EventKind::CheckpointAtOpen { floors, flipped })
    }

    pub fn flip_missed_cache(&mut self, at_ms: u64, fault_index: usize) -> &mut Self {
        self.record(at_ms, EventKind::FlipMissedCache { fault_index })
    }

    pub fn word_flipped(
        &mut self,
        at_ms: u64,
        fault_index: usize,
        read_as: &str,
        (from, to): (Offset, Offset),
        written: bool,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::WordFlipped {
                fault_index,
                read_as: read_as.to_owned(),
                from,
                to,
                written,
            },
        )
    }

    /// `earlier`: the flip before it of the same file, if any; `read`: it hit the file
    /// the running open read at its restart.
    pub fn checkpoint_damaged(
        &mut self,
        at_ms: u64,
        fault_index: usize,
        floors: Option<Vec<CheckpointFloor>>,
        (earlier, read): (Option<usize>, bool),
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::CheckpointDamaged {
                fault_index,
                floors,
                earlier,
                read,
            },
        )
    }

    pub fn segments_listed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        bases: Vec<Offset>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::SegmentsListed {
                tp: tp.clone(),
                bases,
            },
        )
    }

    pub fn engine_counters(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        recorded_loss_records: u64,
        skipped_records: u64,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::EngineCounters {
                tp: tp.clone(),
                recorded_loss_records,
                skipped_records,
            },
        )
    }

    /// An alarm the engine raised; `raised_in` is the incarnation whose task raised it
    /// (recorded only when it differs from the current one).
    pub fn engine_alarm(
        &mut self,
        at_ms: u64,
        tp: Option<&TopicPartition>,
        alarm: Alarm,
        raised_in: Option<Incarnation>,
    ) -> &mut Self {
        let raised_in = raised_in.filter(|inc| *inc != self.incarnation);
        self.record(
            at_ms,
            EventKind::EngineAlarm {
                tp: tp.cloned(),
                alarm,
                raised_in,
            },
        )
    }

    pub fn disk_at_open(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        disk: DiskView,
        while_open: bool,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::DiskAtOpen {
                tp: tp.clone(),
                disk,
                while_open,
            },
        )
    }

    pub fn wal_entries_damaged(
        &mut self,
        at_ms: u64,
        fault_index: usize,
        first_replay: Incarnation,
        entries: Vec<DamagedWalEntry>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::WalEntriesDamaged {
                fault_index,
                first_replay,
                entries,
            },
        )
    }
}
