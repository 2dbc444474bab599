//! [`Inode`]: one file's bytes as the page cache shows them, as the disk holds them, and
//! the ordered pending operations between the two.
//!
//! Invariant (unless `diverged`): `cache == replay(durable, pending)`. An injected fault
//! that drops or misplaces data (fsync EIO, lost fsync, misdirected write) breaks it on
//! purpose and sets `diverged` until the next crash rebuilds the cache.

use std::collections::BTreeSet;

/// Torn-write granularity: writes reach the disk in whole, aligned 512-byte sectors.
pub const SECTOR_SIZE: u64 = 512;

/// Largest file the simulator holds (a bound on memory; the engine's segments are
/// capped at 64 MiB).
pub const FILE_SIZE_MAX: u64 = 1 << 30;

const _: () = assert!(FILE_SIZE_MAX.is_multiple_of(SECTOR_SIZE));
const _: () = assert!(FILE_SIZE_MAX <= usize::MAX as u64);

/// A write or truncation the page cache shows but the disk may not hold yet.
#[derive(Clone, Debug)]
pub(crate) enum Pending {
    Write { position: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Pending {
    /// Whether this operation decides the byte at `position` in the replayed image.
    pub(crate) fn masks(&self, position: u64) -> bool {
        match self {
            Pending::Write { position: p, data } => {
                (*p..*p + data.len() as u64).contains(&position)
            }
            Pending::SetLen(len) => *len <= position,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Inode {
    pub(crate) durable: Vec<u8>,
    pub(crate) cache: Vec<u8>,
    pub(crate) pending: Vec<Pending>,
    /// Visible directory entries naming this inode (0 or 1: no hard links).
    pub(crate) visible_links: u32,
    /// Handles of the current incarnation that are still open.
    pub(crate) open_handles: u32,
    /// The cache no longer equals `durable + pending` because of an injected fault.
    pub(crate) diverged: bool,
    /// Sectors of the durable image the disk cannot read (latent sector errors), by
    /// index; see `latent.rs`.
    pub(crate) latent: BTreeSet<u64>,
    /// Of them, those a write since the last power loss put in the page cache: reads
    /// see the cache there.
    pub(crate) latent_cached: BTreeSet<u64>,
    /// The bytes reads of the running incarnation returned.
    pub(crate) reads: super::reads::ReadMarks,
}

impl Inode {
    pub(crate) fn read(&self, buf: &mut [u8], position: u64) -> usize {
        let Ok(start) = usize::try_from(position) else {
            return 0;
        };
        let Some(available) = self.cache.get(start..) else {
            return 0;
        };
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        count
    }

    /// The caller has checked `position + data.len() <= FILE_SIZE_MAX`.
    pub(crate) fn write(&mut self, position: u64, data: &[u8]) {
        if data.is_empty() {
            return; // POSIX: a zero-length write changes nothing, not even the length.
        }
        write_into(&mut self.cache, position, data);
        self.note_write(position, data.len() as u64);
        self.pending.push(Pending::Write {
            position,
            data: data.to_vec(),
        });
    }

    /// The caller has checked `len <= FILE_SIZE_MAX`.
    pub(crate) fn set_len(&mut self, len: u64) {
        set_len_of(&mut self.cache, len);
        self.pending.push(Pending::SetLen(len));
    }

    /// The durable image after every pending operation reaches the disk intact.
    pub(crate) fn replay(&self) -> Vec<u8> {
        let mut image = self.durable.clone();
        for op in &self.pending {
            match op {
                Pending::Write { position, data } => write_into(&mut image, *position, data),
                Pending::SetLen(len) => set_len_of(&mut image, *len),
            }
        }
        image
    }
}

/// Writes `data` at `position`, zero-filling any gap past the current end.
pub(crate) fn write_into(image: &mut Vec<u8>, position: u64, data: &[u8]) {
    let end = position + data.len() as u64;
    assert!(
        end <= FILE_SIZE_MAX,
        "write past FILE_SIZE_MAX reached the model"
    );
    let (start, end) = (position as usize, end as usize);
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

pub(crate) fn set_len_of(image: &mut Vec<u8>, len: u64) {
    assert!(
        len <= FILE_SIZE_MAX,
        "set_len past FILE_SIZE_MAX reached the model"
    );
    image.resize(len as usize, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_matches_cache_after_writes_and_truncations() {
        let mut inode = Inode {
            durable: vec![1; 10],
            cache: vec![1; 10],
            ..Inode::default()
        };
        inode.write(20, &[7; 5]);
        inode.set_len(22);
        inode.write(3, &[9; 2]);
        inode.set_len(30);
        assert_eq!(inode.replay(), inode.cache);
        assert_eq!(inode.cache.len(), 30);
        assert_eq!(&inode.cache[10..20], &[0; 10]);
        assert_eq!(&inode.cache[20..22], &[7; 2]);
        assert_eq!(&inode.cache[22..30], &[0; 8]);
        assert!(inode.pending[1].masks(25));
        assert!(!inode.pending[1].masks(21));
    }
}
