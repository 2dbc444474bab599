//! The random part of the model: what `sync_data` and a crash do to one file's pending
//! operations, and where injected faults (fsync EIO, lost fsync, misdirected writes)
//! strike. Everything draws from the `SimFs`'s [`Dice`] and is logged.

use super::dice::Dice;
use super::events::{FsEventKind, FsEventLog, Overwritten};
use super::inode::{FILE_SIZE_MAX, Inode, Pending, SECTOR_SIZE, set_len_of, write_into};
use super::options::FaultOptions;
use std::path::{Path, PathBuf};

/// What a fault decision needs: randomness, the rates and caps, and the log.
pub(crate) struct Faults<'a> {
    pub(crate) dice: &'a mut Dice,
    pub(crate) options: &'a FaultOptions,
    pub(crate) healed: bool,
    pub(crate) log: &'a mut FsEventLog,
    pub(crate) epoch: u64,
}

/// How `sync_data` ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SyncOutcome {
    Persisted,
    Eio,
    Lost,
}

impl Faults<'_> {
    /// Whether an injected fault of `kind` fires now: never after heal or past its cap.
    pub(crate) fn fires(&mut self, kind: FsEventKind, probability: f64, max: u32) -> bool {
        !self.healed && self.log.count(kind) < u64::from(max) && self.dice.chance(probability)
    }

    fn record(&mut self, kind: FsEventKind, path: &Path, position: u64, len: u64, detail: String) {
        self.log.record(
            self.epoch,
            kind,
            path.to_owned(),
            Some(position),
            Some(len),
            detail,
        );
    }

    /// Whether `sync_dir` of `dir`, with `pending` operations to commit, fails with EIO.
    /// The caller commits nothing then: the operations stay pending, as after a journal
    /// commit that never completed, for a later `sync_dir` or a power loss to decide.
    pub(crate) fn sync_dir_fails(&mut self, dir: &Path, pending: usize) -> bool {
        let options = self.options;
        let fails = self.fires(
            FsEventKind::DirFsyncEio,
            options.dir_fsync_eio_probability,
            options.dir_fsync_eio_max,
        );
        if fails {
            self.record(
                FsEventKind::DirFsyncEio,
                dir,
                0,
                0,
                format!("{pending} pending directory operations left pending"),
            );
        }
        fails
    }

    /// `sync_data` of a file with pending operations. `path` names the file for the
    /// log; it is called only when a fault is logged (a name lookup is not free).
    pub(crate) fn sync(&mut self, inode: &mut Inode, path: &dyn Fn() -> PathBuf) -> SyncOutcome {
        let pending_bytes: u64 = inode
            .pending
            .iter()
            .map(|op| match op {
                Pending::Write { data, .. } => data.len() as u64,
                Pending::SetLen(_) => 0,
            })
            .sum();
        let count = inode.pending.len();
        let options = self.options;
        let aimed_here = options
            .fsync_fault_path
            .as_ref()
            .is_none_or(|aim| *aim == path());
        if aimed_here
            && self.fires(
                FsEventKind::FsyncEio,
                options.fsync_eio_probability,
                options.fsync_eio_max,
            )
        {
            // Linux: the failed pages are marked clean; the error is reported once and
            // the data never reaches the disk, though the cache still shows it. A
            // truncation is journaled metadata, not a page: it stays pending, and a
            // later fsync commits it (ext4 and xfs never drop it while later
            // metadata of the file commits).
            inode.pending.retain(|op| matches!(op, Pending::SetLen(_)));
            let dropped = count - inode.pending.len();
            inode.diverged |= dropped > 0;
            self.record(
                FsEventKind::FsyncEio,
                &path(),
                0,
                pending_bytes,
                format!("{dropped} pending writes dropped from the durable image"),
            );
            return SyncOutcome::Eio;
        }
        if aimed_here
            && self.fires(
                FsEventKind::LostFsync,
                options.lost_fsync_probability,
                options.lost_fsync_max,
            )
        {
            let durable_len = inode.durable.len() as u64;
            let lost: Vec<std::ops::Range<u64>> = inode
                .pending
                .drain(..)
                .map(|op| match op {
                    Pending::Write { position, data } => position..position + data.len() as u64,
                    Pending::SetLen(len) => len.min(durable_len)..len.max(durable_len),
                })
                .collect();
            inode.diverged = true;
            self.record(
                FsEventKind::LostFsync,
                &path(),
                0,
                pending_bytes,
                format!("reported success, persisted none of {count} pending operations"),
            );
            self.log.lost(lost);
            return SyncOutcome::Lost;
        }
        for op in std::mem::take(&mut inode.pending) {
            match op {
                Pending::Write { position, data } => {
                    let len = data.len() as u64;
                    let shift = self.misdirect_shift(position, len);
                    if shift != 0 {
                        inode.diverged = true;
                        let at = shifted(position, shift);
                        let before = inode.durable.clone();
                        self.record_misdirect(
                            &path(),
                            position,
                            len,
                            shift,
                            std::iter::once(at..at + len).collect(),
                            before,
                        );
                    }
                    write_into(&mut inode.durable, shifted(position, shift), &data);
                }
                Pending::SetLen(len) => set_len_of(&mut inode.durable, len),
            }
        }
        SyncOutcome::Persisted
    }

    /// A crash: each pending write is lost, kept whole, or torn at sector granularity;
    /// each pending `set_len` is kept or lost; in order. Then the cache is rebuilt from
    /// the durable image.
    pub(crate) fn crash(&mut self, inode: &mut Inode, path: &Path) {
        let options = self.options;
        for op in std::mem::take(&mut inode.pending) {
            match op {
                Pending::Write { position, data } => {
                    let len = data.len() as u64;
                    let first = position / SECTOR_SIZE;
                    let last = (position + len - 1) / SECTOR_SIZE;
                    let sectors = last - first + 1;
                    let roll = self.dice.unit();
                    let kept: Vec<bool> = if roll < options.crash_write_lost_probability {
                        vec![false; sectors as usize]
                    } else if roll
                        < options.crash_write_lost_probability
                            + options.crash_write_torn_probability
                    {
                        self.torn_mask(sectors)
                    } else {
                        vec![true; sectors as usize]
                    };
                    let kept_count = kept.iter().filter(|&&k| k).count() as u64;
                    let kind = if kept_count == 0 {
                        FsEventKind::CrashWriteLost
                    } else if kept_count == sectors {
                        FsEventKind::CrashWriteKept
                    } else {
                        FsEventKind::CrashWriteTorn
                    };
                    let shift = if kept_count == 0 {
                        0
                    } else {
                        self.misdirect_shift(position, len)
                    };
                    // Runs of kept sectors, and the bytes of the write each one holds.
                    let mut runs: Vec<(u64, u64)> = Vec::new();
                    for (index, _) in kept.iter().enumerate().filter(|(_, k)| **k) {
                        let sector = first + index as u64;
                        match runs.last_mut() {
                            Some((_, run_end)) if *run_end == sector => *run_end = sector + 1,
                            _ => runs.push((sector, sector + 1)),
                        }
                    }
                    let run_bytes = |&(a, b): &(u64, u64)| {
                        (a * SECTOR_SIZE).max(position)..(b * SECTOR_SIZE).min(position + len)
                    };
                    if shift != 0 {
                        let landed = runs
                            .iter()
                            .map(run_bytes)
                            .map(|r| shifted(r.start, shift)..shifted(r.end, shift))
                            .collect();
                        let before = inode.durable.clone();
                        self.record_misdirect(path, position, len, shift, landed, before);
                    }
                    for run in &runs {
                        let bytes = run_bytes(run);
                        let data = &data
                            [(bytes.start - position) as usize..(bytes.end - position) as usize];
                        write_into(&mut inode.durable, shifted(bytes.start, shift), data);
                    }
                    let detail = if kind == FsEventKind::CrashWriteTorn {
                        let runs: Vec<String> =
                            runs.iter().map(|(a, b)| format!("{a}..{b}")).collect();
                        format!(
                            "kept {kept_count} of {sectors} sectors {first}..{}: {}",
                            last + 1,
                            runs.join(",")
                        )
                    } else {
                        format!("{sectors} sectors {first}..{}", last + 1)
                    };
                    self.record(kind, path, position, len, detail);
                }
                Pending::SetLen(new_len) => {
                    let kind = if self.dice.chance(options.crash_set_len_lost_probability) {
                        FsEventKind::CrashSetLenLost
                    } else {
                        set_len_of(&mut inode.durable, new_len);
                        FsEventKind::CrashSetLenKept
                    };
                    self.record(kind, path, new_len, 0, format!("set_len({new_len})"));
                }
            }
        }
        inode.cache.clone_from(&inode.durable);
        inode.diverged = false;
        inode.open_handles = 0;
    }

    /// A random proper, non-empty subset of `sectors` sectors (`sectors >= 2`); a
    /// one-sector write cannot tear, so it is kept or lost with even odds.
    fn torn_mask(&mut self, sectors: u64) -> Vec<bool> {
        if sectors == 1 {
            return vec![self.dice.chance(0.5)];
        }
        let mut mask = Vec::with_capacity(sectors as usize);
        let mut bits = 0u64;
        for index in 0..sectors {
            if index % 64 == 0 {
                bits = self.dice.next_u64();
            }
            mask.push(bits & 1 == 1);
            bits >>= 1;
        }
        let kept = mask.iter().filter(|&&k| k).count() as u64;
        if kept == 0 || kept == sectors {
            let index = self.dice.below(sectors) as usize;
            mask[index] = !mask[index];
        }
        mask
    }

    /// The shift, in bytes, of a misdirected write (0 when the fault does not fire or no
    /// shift keeps the write inside `0..FILE_SIZE_MAX`). A non-zero shift must be logged
    /// with [`Faults::record_misdirect`] before the write lands (the cap counts logs).
    fn misdirect_shift(&mut self, position: u64, len: u64) -> i64 {
        let options = self.options;
        if !self.fires(
            FsEventKind::MisdirectedWrite,
            options.misdirect_probability,
            options.misdirect_max,
        ) {
            return 0;
        }
        let sectors = 1 + self
            .dice
            .below(u64::from(options.misdirect_shift_sectors_max));
        let bytes = sectors * SECTOR_SIZE;
        let up_fits = position + bytes + len <= FILE_SIZE_MAX;
        let down_fits = position >= bytes;
        let up = match (up_fits, down_fits) {
            (true, true) => self.dice.chance(0.5),
            (true, false) => true,
            (false, true) => false,
            (false, false) => return 0,
        };
        if up { bytes as i64 } else { -(bytes as i64) }
    }

    /// Logs a misdirected write of `len` bytes meant for `position`, with the ranges it
    /// `landed` on and the durable image `before` it landed.
    fn record_misdirect(
        &mut self,
        path: &Path,
        position: u64,
        len: u64,
        shift: i64,
        landed: Vec<std::ops::Range<u64>>,
        before: Vec<u8>,
    ) {
        assert!(
            shift != 0,
            "a write that landed where it was meant is not misdirected"
        );
        debug_assert!(landed.iter().all(|r| r.start < r.end), "{landed:?}");
        self.log.record(
            self.epoch,
            FsEventKind::MisdirectedWrite,
            path.to_owned(),
            Some(position),
            Some(len),
            format!(
                "landed at {} (shift {shift:+} bytes)",
                shifted(position, shift)
            ),
        );
        self.log.overwrote(Overwritten {
            landed,
            durable_before: before,
        });
    }
}

fn shifted(position: u64, shift: i64) -> u64 {
    position
        .checked_add_signed(shift)
        .expect("shift keeps the position non-negative")
}
