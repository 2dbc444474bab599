//! Kills: a power loss (each pending write lost, kept or torn by sector; a prefix of
//! the pending directory operations survives) and a process crash (the page cache
//! survives; handles go stale). The rules are in `mod.rs`'s durability model.

use super::*;

impl State {
    pub(super) fn crash(&mut self) {
        let ended = self.epoch;
        let paths = self.ns.inode_paths();
        let (mut faults, inodes, ns) = self.faults();
        let mut files = 0u64;
        let mut pending_ops = 0u64;
        for (ino, inode) in inodes.iter_mut() {
            if !inode.pending.is_empty() {
                files += 1;
                pending_ops += inode.pending.len() as u64;
            }
            let unnamed = PathBuf::from(format!("<unnamed inode {ino}>"));
            let latent = inode.latent_bytes();
            faults.crash(inode, paths.get(ino).unwrap_or(&unnamed));
            inode.latent_after_power_loss(&latent);
        }
        let (kept, lost) = ns.crash(faults.dice);
        for (kind, ops) in [
            (FsEventKind::CrashDirOpKept, &kept),
            (FsEventKind::CrashDirOpLost, &lost),
        ] {
            for op in ops {
                faults
                    .log
                    .record(ended, kind, op.path(), None, None, op.describe());
            }
        }
        faults.log.record(
            ended,
            FsEventKind::Crash,
            PathBuf::new(),
            None,
            None,
            format!(
                "epoch {ended} ended: {pending_ops} pending file operations in {files} files, \
                 {} directory operations kept, {} lost",
                kept.len(),
                lost.len()
            ),
        );
        self.epoch += 1;
        self.enospc_streak = 0;
        // The visible namespace is now the durable one: recount links, free the rest.
        for inode in self.inodes.values_mut() {
            inode.visible_links = 0;
        }
        let mut named = Vec::new();
        for dir in self.ns.dirs.values() {
            named.extend(dir.visible.values().copied());
        }
        for ino in named {
            if let Some(inode) = self.inodes.get_mut(&ino) {
                inode.visible_links += 1;
            }
        }
        self.inodes.retain(|_, inode| inode.visible_links > 0);
    }

    pub(super) fn process_crash(&mut self) {
        let ended = self.epoch;
        let files = self
            .inodes
            .values()
            .filter(|i| !i.pending.is_empty())
            .count();
        let pending_ops: usize = self.inodes.values().map(|i| i.pending.len()).sum();
        let dir_ops = self.ns.pending.len();
        self.log.record(
            ended,
            FsEventKind::ProcessCrash,
            PathBuf::new(),
            None,
            None,
            format!(
                "epoch {ended} ended by a process crash: {pending_ops} pending file \
                 operations in {files} files and {dir_ops} directory operations stay pending"
            ),
        );
        self.epoch += 1;
        self.enospc_streak = 0;
        // The dead process's handles closed with it: an unlinked file no name refers to
        // any more is freed, as the kernel frees it at the last close.
        let inodes: Vec<InodeId> = self.inodes.keys().copied().collect();
        for ino in inodes {
            if let Some(inode) = self.inodes.get_mut(&ino) {
                inode.open_handles = 0;
            }
            self.collect(ino);
        }
    }
}
