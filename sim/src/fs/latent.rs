//! Latent sector errors: sectors of the platter the disk can no longer read.
//!
//! Model (what TigerBeetle's simulated storage and real drives show, reduced to what
//! the engine can see):
//! - a latent sector is injected into a file's durable image at rest (the world does
//!   it at a power loss, when the page cache is empty, so the next read goes to the
//!   platter);
//! - a read that touches a latent sector fails with EIO, unless a write since the last
//!   power loss put that sector in the page cache (`latent_cached`): then the cache
//!   answers, as Linux does for a dirty or written page;
//! - the error lasts until a write of the sector reaches the platter (the drive remaps
//!   it): an fsync that persisted a write touching it, or a power loss that kept one;
//!   a write lost at a crash leaves the sector as bad as it was. Bytes of the sector the
//!   write did not cover keep their old value (the drive read-modify-writes);
//! - images the world decodes (`SimFs::durable_bytes`, `visible_bytes`) show each
//!   unreadable byte as [`UNREADABLE_FILL`], the value the engine's reader gives it,
//!   and `durable_unreadable`, `visible_unreadable` name those bytes: the fill alone
//!   cannot (a byte may have been written as it), and the reference decoder refuses a
//!   frame with an unreadable byte exactly as the engine's reader does.
//!
//! Invariant: every latent sector lies within the durable image (the ones a truncation
//! cut off are dropped when it reaches the platter).

use super::inode::{Inode, Pending, SECTOR_SIZE};
use super::{FsEventKind, State};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What an unreadable byte reads as in the images the world decodes (the engine's
/// `recovery::reader::UNREADABLE_FILL`).
pub const UNREADABLE_FILL: u8 = 0xEE;

/// A sector made unreadable by [`super::SimFs::latent_sector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatentSector {
    /// The durable name of the file.
    pub path: PathBuf,
    /// The sector's first byte and its length (the last sector of a file may be short).
    pub position: u64,
    pub len: u64,
}

/// The sectors `[position, position + len)` touches.
fn sectors(position: u64, len: u64) -> std::ops::Range<u64> {
    if len == 0 {
        return 0..0;
    }
    position / SECTOR_SIZE..(position + len - 1) / SECTOR_SIZE + 1
}

impl Inode {
    /// Whether a read of `[position, position + len)` of the cache fails with EIO.
    pub(crate) fn unreadable(&self, position: u64, len: u64) -> bool {
        let end = (position + len).min(self.cache.len() as u64);
        end > position
            && self
                .latent
                .range(sectors(position, end - position))
                .any(|s| !self.latent_cached.contains(s))
    }

    /// A write of `[position, position + len)` reached the cache.
    pub(crate) fn note_write(&mut self, position: u64, len: u64) {
        let hit: Vec<u64> = self.latent.range(sectors(position, len)).copied().collect();
        self.latent_cached.extend(hit);
    }

    /// The latent sectors a pending write touches: those an fsync that persists the
    /// pending list rewrites.
    pub(crate) fn latent_pending_writes(&self) -> Vec<u64> {
        self.latent
            .iter()
            .copied()
            .filter(|&s| {
                self.pending.iter().any(|op| match op {
                    Pending::Write { position, data } => {
                        sectors(*position, data.len() as u64).contains(&s)
                    }
                    Pending::SetLen(_) => false,
                })
            })
            .collect()
    }

    /// An fsync persisted the pending list, whose writes touched `rewritten`.
    pub(crate) fn latent_persisted(&mut self, rewritten: &[u64]) {
        for s in rewritten {
            self.latent.remove(s);
            self.latent_cached.remove(s);
        }
        self.drop_latent_past_end();
    }

    /// The platter bytes of each latent sector, before a power loss applies the crash
    /// model: a sector whose bytes change was written by a write the crash kept.
    pub(crate) fn latent_bytes(&self) -> BTreeMap<u64, Vec<u8>> {
        self.latent
            .iter()
            .map(|&s| (s, self.sector_of_durable(s).to_vec()))
            .collect()
    }

    /// After a power loss: sectors a kept write reached are readable again, and the
    /// cache, rebuilt from the platter, holds none of the rest.
    pub(crate) fn latent_after_power_loss(&mut self, before: &BTreeMap<u64, Vec<u8>>) {
        for (s, bytes) in before {
            if self.sector_of_durable(*s) != bytes.as_slice() {
                self.latent.remove(s);
            }
        }
        self.latent_cached.clear();
        self.drop_latent_past_end();
    }

    fn sector_of_durable(&self, s: u64) -> &[u8] {
        let start = (s * SECTOR_SIZE) as usize;
        let end = (start + SECTOR_SIZE as usize).min(self.durable.len());
        self.durable.get(start..end).unwrap_or_default()
    }

    fn drop_latent_past_end(&mut self) {
        let sectors_held = (self.durable.len() as u64).div_ceil(SECTOR_SIZE);
        self.latent.retain(|&s| s < sectors_held);
        self.latent_cached.retain(|&s| s < sectors_held);
    }

    /// `image` (the durable image, or the cache when `cache`) with every byte a read
    /// would fail on shown as [`UNREADABLE_FILL`].
    pub(crate) fn mask_unreadable(&self, mut image: Vec<u8>, cache: bool) -> Vec<u8> {
        for range in self.unreadable_ranges(image.len() as u64, cache) {
            if let Some(bytes) = image.get_mut(range.start as usize..range.end as usize) {
                bytes.fill(UNREADABLE_FILL);
            }
        }
        image
    }

    /// The byte ranges of an image `len` bytes long (the durable one, or the cache when
    /// `cache`) that a read fails on, in order: each latent sector not answered by the
    /// cache, cut at `len`.
    pub(crate) fn unreadable_ranges(&self, len: u64, cache: bool) -> Vec<Range<u64>> {
        self.latent
            .iter()
            .filter(|s| !(cache && self.latent_cached.contains(s)))
            .map(|&s| s * SECTOR_SIZE..((s + 1) * SECTOR_SIZE).min(len))
            .filter(|r| !r.is_empty())
            .collect()
    }
}

impl State {
    /// Makes one random sector of durable data unreadable, in a file whose durable path
    /// satisfies `filter`, within its first `within(path)` bytes when given and not
    /// zero. `None` after the heal or when no such file has durable bytes.
    pub(super) fn latent_sector(
        &mut self,
        filter: &dyn Fn(&Path) -> bool,
        within: &dyn Fn(&Path) -> Option<u64>,
    ) -> Option<LatentSector> {
        let (path, ino) = self.damage_target(filter)?;
        let inode = self.inodes.get_mut(&ino).expect("candidate inode exists");
        let durable_len = inode.durable.len() as u64;
        let span = within(&path)
            .filter(|&n| n > 0)
            .map_or(durable_len, |n| n.min(durable_len));
        let sector = self.dice.below(span.div_ceil(SECTOR_SIZE));
        inode.latent.insert(sector);
        inode.latent_cached.remove(&sector);
        let position = sector * SECTOR_SIZE;
        let len = SECTOR_SIZE.min(durable_len - position);
        self.log.record(
            self.epoch,
            FsEventKind::LatentSector,
            path.clone(),
            Some(position),
            Some(len),
            String::from("sector unreadable until written again"),
        );
        Some(LatentSector {
            path,
            position,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(bytes: usize) -> Inode {
        Inode {
            durable: vec![1; bytes],
            cache: vec![1; bytes],
            ..Inode::default()
        }
    }

    #[test]
    fn a_latent_sector_fails_reads_until_a_write_of_it_reaches_the_platter() {
        let mut i = inode(2048);
        i.latent.insert(1);
        assert!(i.unreadable(600, 1));
        assert!(i.unreadable(0, 2048));
        assert!(!i.unreadable(0, 512) && !i.unreadable(1024, 1024));
        // A write puts the sector in the cache: readable there, still bad on the platter.
        i.write(700, &[2; 4]);
        assert!(!i.unreadable(512, 512));
        let before = i.latent_bytes();
        // A power loss that lost the write: bad again.
        i.pending.clear();
        i.cache.clone_from(&i.durable);
        i.latent_after_power_loss(&before);
        assert!(i.unreadable(512, 1));
        // An fsync that persisted a write of it: remapped.
        i.write(512, &[3; 8]);
        let rewritten = i.latent_pending_writes();
        assert_eq!(rewritten, vec![1]);
        i.durable = i.replay();
        i.pending.clear();
        i.latent_persisted(&rewritten);
        assert!(!i.unreadable(0, 2048));
        assert!(i.latent.is_empty());
    }

    #[test]
    fn images_show_unreadable_bytes_as_the_engine_reads_them() {
        let mut i = inode(1100);
        i.latent.insert(2);
        let image = i.mask_unreadable(i.durable.clone(), false);
        assert!(image[1024..].iter().all(|&b| b == UNREADABLE_FILL));
        assert!(image[..1024].iter().all(|&b| b == 1));
        // A truncation that reached the platter drops the sector with the bytes.
        i.durable.truncate(1000);
        i.latent_persisted(&[]);
        assert!(i.latent.is_empty());
    }
}
