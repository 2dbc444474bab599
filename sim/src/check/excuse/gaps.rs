//! Rows for offsets whose content may change: a cut at or above the persisted HWM an
//! open read, a gap an out-of-contract fault let a word move across, the last crash's
//! hidden tail, and whether a record seen at an offset may since be another or gone.

use super::*;

impl<'f, 'h> Excuses<'f, 'h> {
    /// `CutAboveHwm`: an open after `after` and before `before` cut `tp` at or below
    /// `offset` while `offset` lay at or above the persisted HWM that open read (the
    /// hidden tail, or beyond it).
    pub fn cut_above_hwm(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        after: usize,
        before: usize,
    ) -> Option<Excuse> {
        let cut = self.facts.alarms.cuts(tp).find(|c| {
            after < c.index
                && c.index < before
                && c.offset <= offset
                && self
                    .facts
                    .alarms
                    .disk_at(tp, c.incarnation)
                    .is_some_and(|d| offset >= d.persisted_hwm.unwrap_or(0))
        })?;
        Some(Excuse::new(
            ExcuseKind::CutAboveHwm,
            vec![cut.index],
            format!("{tp} offsets from {}", cut.offset),
        ))
    }

    /// `OutOfContract`, for a word out of step with the log (an HWM beyond the durable
    /// tail, an HWM or log start that fell): the first out-of-contract fault on a file
    /// of `files` of `tp`, injected before `index` and with its window still open there
    /// (a data file's until the next crash, a word file's as [`Reach::window_end`]
    /// says), whose offsets meet the gap `[low, high)` the word moved across (or are
    /// unknown). Which files can move which word is the caller's to say: a lost segment
    /// frame lowers the tail, only a fault on `hwm` moves the persisted HWM down.
    /// `lasts` says how long a data file's fault keeps the word apart from the log.
    pub fn out_of_contract_gap(
        &self,
        tp: &TopicPartition,
        files: &[FileKind],
        gap: OffsetRange,
        index: usize,
        lasts: GapLasts,
    ) -> Option<Excuse> {
        let r = self.facts.reaches_before(tp, index).find(|r| {
            // A platter-only fault (a lost fsync, a misdirected or torn write) is sealed
            // by the next power loss, not by a process crash: the page cache kept the
            // engine's bytes, so the opens between saw no gap to clamp.
            let sealed = if r.platter_only() && !r.until_crash() {
                self.facts.next_power_loss_after(r.fault_index)
            } else {
                r.window_end
            };
            // The persisted word is the engine's again once it reported a rewrite of a
            // flipped or torn word: neither its window nor `live` reaches past that.
            // Judged at a crash, so is an `hwm` word rewritten before the crash that
            // seals its fault.
            let rewritten = r.rewritten.filter(|&w| match lasts {
                GapLasts::PersistedWord => true,
                GapLasts::UntilHwmRewritten => r.file == FileKind::Hwm && w < r.window_end,
                _ => false,
            });
            let end = match lasts {
                _ if let Some(w) = rewritten => w.min(r.window_end),
                _ if r.until_crash() => r.window_end,
                GapLasts::UntilCrash | GapLasts::PersistedWord => sealed,
                GapLasts::ThroughNextIncarnation => self.facts.next_crash_after(r.window_end),
                // A data file's fault moves the persisted word away from the log at the
                // crash that seals it (`window_end`); `hwm` writes before that crash
                // were built on the frames it lost and do not close the gap.
                GapLasts::UntilHwmRewritten => {
                    if sealed == usize::MAX {
                        usize::MAX
                    } else {
                        crate::check::contract::hwm_rewritten_after_crash(self.facts, tp, sealed)
                            .unwrap_or(usize::MAX)
                    }
                }
            };
            let begun = match lasts {
                // The word is read back from the directory only after the crash that
                // lost its fsync.
                GapLasts::ThroughNextIncarnation => index > r.window_end,
                // A lost fsync of `hwm` leaves the older word: lower, never past the log,
                // unless the write it lost was a clamp's, down across the gap, or the
                // older word was a flip's, which the write would have mended.
                GapLasts::UntilHwmRewritten if r.file == FileKind::Hwm && r.lost_fsync() => {
                    r.offsets.is_some_and(|o| {
                        self.facts.alarms.clamps(tp).any(|c| {
                            c.index < r.fault_index && c.hwm == o.start && c.persisted_hwm == o.end
                        }) || self.kept_flip(tp, r).is_some()
                    })
                }
                GapLasts::UntilHwmRewritten => true,
                GapLasts::UntilCrash | GapLasts::PersistedWord => true,
            };
            // A word a lost fsync or a misdirected write left on the platter is read
            // by every open after the power loss that sealed it, until the engine
            // writes the word again (an open killed before its clamp writes nothing).
            let live = r.until_crash() && rewritten.is_none() && r.live_at(self.facts, index, None);
            // A platter-only fault shows in the page cache only after a power loss.
            // The persisted word (the engine's report, or the word at a crash) shows a
            // platter-only fault only from the power loss on, that crash included.
            let shown = if lasts == GapLasts::PersistedWord {
                !r.platter_only() || self.facts.power_loss_between(r.fault_index, index + 1)
            } else {
                !self.reads_cache
                    || !r.platter_only()
                    || self.facts.power_loss_between(r.fault_index, index)
            };
            r.on(files)
                && begun
                && shown
                && (index <= end || live)
                && self.lowers_tail_to(r, tp, gap, index)
        })?;
        // A lost fsync that kept a flip's word rests on both.
        let causes = match self.kept_flip(tp, r) {
            Some(flip) if r.file == FileKind::Hwm && r.lost_fsync() => vec![flip, r.fault_index],
            _ => vec![r.fault_index],
        };
        Some(Excuse::new(
            ExcuseKind::OutOfContract,
            causes,
            format!(
                "{} reaching {tp} {} across the gap {gap}",
                self.facts.describe_fault(r.fault_index),
                r.offsets
                    .map_or_else(|| "offsets unknown".to_owned(), |o| o.to_string())
            ),
        ))
    }

    /// The flip of `tp`'s `hwm` word, before the lost fsync `r` of it, that left the
    /// older word `r` kept on the platter (one end of the flip is that word; the write
    /// whose fsync was lost would have replaced it). The flip's word must still have
    /// been on the platter then: no write of the word the engine reported between the
    /// two (its fsync returned; the one `r` lost reports only after `r`).
    fn kept_flip(&self, tp: &TopicPartition, r: &Reach) -> Option<usize> {
        let kept = r.offsets?.end;
        self.facts
            .reaches_before(tp, r.fault_index)
            .filter(|f| {
                f.file == FileKind::Hwm
                    && matches!(f.kind, crate::history::FaultKind::BitFlip { .. })
                    && f.rewritten.is_none_or(|w| w > r.fault_index)
            })
            .filter(|f| f.offsets.is_some_and(|w| w.start == kept || w.end == kept))
            .map(|f| f.fault_index)
            .last()
    }

    /// Whether `r` can account for the gap `[low, high)` at `index`. A fault on a log
    /// file loses frames from its own first offset on, so the durable tail (`low`)
    /// lies in the part of its reach the engine has not written again since: a cut at or
    /// below an offset removed the fault's frame there (once its open finished), and
    /// for a platter-only fault every open that began since wrote back and fsynced the
    /// frames at and above the HWM it recovered. A word file's fault only needs to meet
    /// the gap.
    fn lowers_tail_to(
        &self,
        r: &Reach,
        tp: &TopicPartition,
        gap: OffsetRange,
        index: usize,
    ) -> bool {
        if !r.meets(gap) {
            return false;
        }
        if !r.on(LOG_FILES) {
            return true;
        }
        let Some(range) = r.offsets else {
            return true;
        };
        let cut = r.cut_by(self.facts, index);
        let written_back = self
            .facts
            .alarms
            .of(tp)
            .iter()
            .filter(|a| {
                // An open that began after the fault: the write-back of one running at
                // the fault may be the very write the fault sent astray.
                r.platter_only()
                    && a.index < index
                    && self
                        .facts
                        .restarts
                        .get(&a.incarnation)
                        .is_some_and(|&restart| restart > r.fault_index)
            })
            .filter_map(|a| match a.alarm {
                Alarm::LogOpened { hwm, .. } => Some(hwm),
                _ => None,
            });
        let end = cut.chain(written_back).fold(range.end, Offset::min);
        range.start <= gap.start && gap.start < end
    }

    /// `LastHiddenTail`: `offset`, read at `read_index`, lies in the hidden tail the
    /// last crash before `final_index` left on `tp`.
    pub fn last_hidden_tail(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        read_index: usize,
        final_index: usize,
    ) -> Option<Excuse> {
        let crash = self.facts.crash_before(final_index)?;
        let p = crash.partitions.get(tp)?;
        (crash.index > read_index && p.hidden_tail().contains(offset)).then(|| {
            Excuse::new(
                ExcuseKind::LastHiddenTail,
                vec![crash.index],
                format!("{tp} hidden tail {}", p.hidden_tail()),
            )
        })
    }

    /// Whether the record at `offset` of `tp`, observed at `index`, may since hold
    /// another record or be gone, legitimately: a clamp, a cut above the HWM, or an
    /// out-of-contract fault reaching it, after the observation.
    pub fn superseded(&self, tp: &TopicPartition, offset: Offset, index: usize) -> Option<Excuse> {
        self.clamped(tp, offset, index, usize::MAX)
            .or_else(|| self.cut_above_hwm(tp, offset, index, usize::MAX))
            .or_else(|| self.out_of_contract(tp, Some(offset), None, Some(index), usize::MAX))
    }
}
