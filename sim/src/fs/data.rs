//! The data path's effect on the model: a write and a `set_len` join the file's pending
//! operations, and `sync_data` makes them durable (or, under a fault, fails or lies).

use super::*;

impl State {
    pub(super) fn write(&mut self, handle: &SimFile, data: &[u8], position: u64) -> io::Result<()> {
        if !handle.writable {
            self.handle_inode(handle)?;
            return Err(os_error(errno::EBADF));
        }
        self.handle_inode(handle)?;
        let end = position
            .checked_add(data.len() as u64)
            .filter(|&end| end <= FILE_SIZE_MAX);
        if end.is_none() {
            return Err(os_error(errno::EFBIG));
        }
        let options = &self.options;
        let (p, max, streak_max) = (
            options.enospc_probability,
            options.enospc_max,
            options.enospc_consecutive_max,
        );
        let streak_ok = self.enospc_streak < streak_max;
        let (mut faults, _, _) = self.faults();
        if streak_ok && faults.fires(FsEventKind::Enospc, p, max) {
            faults.log.record(
                faults.epoch,
                FsEventKind::Enospc,
                handle.path.clone(),
                Some(position),
                Some(data.len() as u64),
                String::from("write refused, nothing written"),
            );
            self.enospc_streak += 1;
            return Err(os_error(errno::ENOSPC));
        }
        self.enospc_streak = 0;
        let corrupt = self.corrupt_write(handle, data, position);
        let inode = self.handle_inode(handle)?;
        inode.write(position, corrupt.as_deref().unwrap_or(data));
        debug_assert!(data.is_empty() || inode.cache.len() as u64 >= position + data.len() as u64);
        Ok(())
    }

    /// The bytes a write stores instead of `data` when it lands corrupt: a log segment's
    /// frame bytes (never the zeros of a preallocation) with one bit flipped. Draws no
    /// dice when the fault is off, so runs without it keep their draws.
    fn corrupt_write(&mut self, handle: &SimFile, data: &[u8], position: u64) -> Option<Vec<u8>> {
        let options = &self.options;
        let (p, max) = (options.corrupt_write_probability, options.corrupt_write_max);
        if max == 0 || p == 0.0 {
            return None;
        }
        let now = madsim::time::TimeHandle::try_current().map(|t| t.elapsed());
        if let (Some(before), Some(now)) = (options.corrupt_write_before, now)
            && now >= before
        {
            return None;
        }
        let segment = handle
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(cafelog_engine::format::layout::parse_segment_file_name)
            .is_some();
        if !segment || data.iter().all(|&b| b == 0) {
            return None;
        }
        let (mut faults, _, _) = self.faults();
        if !faults.fires(FsEventKind::CorruptWrite, p, max) {
            return None;
        }
        let bit_index = faults.dice.below(data.len() as u64 * 8);
        let (index, bit) = (bit_index / 8, (bit_index % 8) as u8);
        let mut stored = data.to_vec();
        stored[index as usize] ^= 1 << bit;
        let byte = position + index;
        faults.log.record(
            faults.epoch,
            FsEventKind::CorruptWrite,
            handle.path.clone(),
            Some(position),
            Some(data.len() as u64),
            format!(
                "bit {bit} of byte {byte}: {:#04x} -> {:#04x}",
                data[index as usize], stored[index as usize]
            ),
        );
        faults.log.corrupted(CorruptedWrite {
            byte,
            bit,
            written: data.to_vec(),
        });
        debug_assert_eq!(
            stored.iter().zip(data).filter(|(a, b)| a != b).count(),
            1,
            "exactly one byte differs"
        );
        Some(stored)
    }

    pub(super) fn set_len(&mut self, handle: &SimFile, len: u64) -> io::Result<()> {
        let inode = self.handle_inode(handle)?;
        if !handle.writable {
            return Err(os_error(errno::EINVAL)); // ftruncate on a read-only fd
        }
        if len > FILE_SIZE_MAX {
            return Err(os_error(errno::EFBIG));
        }
        inode.set_len(len);
        Ok(())
    }

    pub(super) fn sync_data(&mut self, handle: &SimFile) -> io::Result<()> {
        if self.handle_inode(handle)?.pending.is_empty() {
            return Ok(());
        }
        let (mut faults, inodes, ns) = self.faults();
        let inode = inodes.get_mut(&handle.ino).expect("checked above");
        // The name is only needed when a fault is logged: looked up then.
        let path = || path_of(ns, handle.ino, &handle.path);
        let rewritten = inode.latent_pending_writes();
        match faults.sync(inode, &path) {
            SyncOutcome::Persisted => {
                inode.latent_persisted(&rewritten);
                Ok(())
            }
            SyncOutcome::Lost => Ok(()),
            SyncOutcome::Eio => Err(os_error(errno::EIO)),
        }
    }
}
