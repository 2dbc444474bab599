//! Damage at rest: a bit flipped in durable data (shown in the page cache too where it
//! holds the same byte), and the file a flip or a latent sector lands in.

use super::*;

/// A bit flipped by [`SimFs::flip_random_bit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitFlip {
    /// The durable name of the file.
    pub path: PathBuf,
    /// The byte's position in the file.
    pub position: u64,
    /// Which bit of the byte (0 = least significant).
    pub bit: u8,
    /// The byte before and after.
    pub before: u8,
    pub after: u8,
    /// The page cache held the same byte and took the flip too (the platter and the
    /// cache disagree only where a write is pending or an fsync lied).
    pub in_cache: bool,
    /// The name that shows the flipped inode now, through which a read reaches its page
    /// cache: `path` itself, or, between a rename and its directory's fsync, the name
    /// the rename gave it. `None` when no name shows it (a rename replaced it and has
    /// not reached the disk): then no read sees its cache, only an open after a power
    /// loss sees the platter.
    pub shown_as: Option<PathBuf>,
    /// The flipped inode, to tell it from another file a name showed or a write went to
    /// ([`SimFs::visible_inode`]).
    pub inode: u64,
}

impl BitFlip {
    /// The name through which a read sees the flip in the page cache now: the cache
    /// took it and a name shows the inode. `None` when only the platter holds it.
    pub fn read_through(&self) -> Option<&Path> {
        self.shown_as.as_deref().filter(|_| self.in_cache)
    }
}

impl SimFs {
    /// Flips one random bit of durable data at rest, in a file whose durable path
    /// satisfies `filter` (e.g. `|p| p.extension() == Some("log".as_ref())`). The page
    /// cache shows the flip too, as if the page had been evicted and re-read, unless a
    /// pending operation decides that byte. Returns `None` (and flips nothing) after
    /// [`SimFs::heal`] or when no matching file has durable bytes.
    pub fn flip_random_bit(&self, filter: impl Fn(&Path) -> bool) -> Option<BitFlip> {
        self.lock().flip_random_bit(&filter, None)
    }

    /// Flips bit `bit` of the byte at `position` of the durable file at `path` (a flip
    /// a shrink repeats), drawing the same dice [`SimFs::flip_random_bit`] would, so the
    /// disk's later draws go on as in the run it repeats. Where that file or byte no
    /// longer exists the random flip is made instead.
    pub fn flip_bit_at(
        &self,
        filter: impl Fn(&Path) -> bool,
        path: &Path,
        position: u64,
        bit: u8,
    ) -> Option<BitFlip> {
        self.lock()
            .flip_random_bit(&filter, Some((path, position, bit)))
    }

    /// Makes one random sector of durable data unreadable (a latent sector error, see
    /// `latent.rs`), in a file whose durable path satisfies `filter`, within its first
    /// `within(path)` bytes when that is given and not zero (where its data lies).
    /// `None` (and nothing changes) after [`SimFs::heal`] or when no matching file has
    /// durable bytes.
    pub fn latent_sector(
        &self,
        filter: impl Fn(&Path) -> bool,
        within: impl Fn(&Path) -> Option<u64>,
    ) -> Option<LatentSector> {
        self.lock().latent_sector(&filter, &within)
    }
}

impl State {
    /// A random durably named file that `filter` accepts and that has durable bytes: where
    /// damage at rest lands. `None` after the heal or when there is none.
    pub(super) fn damage_target(
        &mut self,
        filter: &dyn Fn(&Path) -> bool,
    ) -> Option<(PathBuf, InodeId)> {
        if self.healed {
            return None;
        }
        let candidates: Vec<(PathBuf, InodeId)> = self
            .ns
            .durable_files()
            .into_iter()
            .filter(|(path, ino)| {
                filter(path) && self.inodes.get(ino).is_some_and(|i| !i.durable.is_empty())
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.dice.below(candidates.len() as u64) as usize].clone())
    }

    pub(super) fn flip_random_bit(
        &mut self,
        filter: &dyn Fn(&Path) -> bool,
        target: Option<(&Path, u64, u8)>,
    ) -> Option<BitFlip> {
        let (mut path, mut ino) = self.damage_target(filter)?;
        let len = self.inodes.get(&ino).map_or(0, |i| i.durable.len() as u64);
        let mut position = self.dice.below(len);
        let mut bit = self.dice.below(8) as u8;
        if let Some((at, p, b)) = target
            && let Some(found) = self.ns.durable_files().into_iter().find(|(candidate, i)| {
                candidate == at
                    && self
                        .inodes
                        .get(i)
                        .is_some_and(|inode| p < inode.durable.len() as u64)
            })
        {
            (path, ino) = found;
            position = p;
            bit = b;
        }
        let inode = self.inodes.get_mut(&ino).expect("candidate inode exists");
        let index = position as usize;
        let before = inode.durable[index];
        let after = before ^ (1 << bit);
        inode.durable[index] = after;
        let masked = inode.pending.iter().any(|op| op.masks(position));
        let in_cache = !masked && inode.cache.get(index) == Some(&before);
        if in_cache {
            inode.cache[index] = after;
        }
        let flip = BitFlip {
            shown_as: self.ns.visible_name(&path, ino),
            inode: ino,
            path: path.clone(),
            position,
            bit,
            before,
            after,
            in_cache,
        };
        self.log.record(
            self.epoch,
            FsEventKind::BitFlip,
            path,
            Some(position),
            Some(1),
            format!(
                "bit {bit}: {before:#04x} -> {after:#04x}{}",
                if masked {
                    " (masked by pending write)"
                } else {
                    ""
                }
            ),
        );
        Some(flip)
    }
}
