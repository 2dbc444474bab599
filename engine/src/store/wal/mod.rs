//! The ingress WAL: every produced record is made durable here, with group commit,
//! before it is committed into its partition log.
//!
//! ```text
//! <root>/wal/%020d.wal     segments of frames (the frame format of the log), one frame
//!                          per group commit; a frame's base offset is the WAL sequence
//!                          number of its first entry
//! <root>/wal/checkpoint    per partition, a [`Checkpoint`]: every entry of that
//!                          partition below `seq` is at an offset below `offset`, and
//!                          `offset` is at most the partition's persisted HWM
//! ```
//!
//! The bytes (records, salvage entries, the checkpoint file) are `format/wal.rs`'s; the
//! open (reading every segment back, resynchronising past damage) is `open.rs`.
//!
//! Invariants:
//! - an entry is acknowledged to nobody before the fsync that covers it returned `Ok`;
//! - each incarnation writes a fresh segment; older segments are only read (replay) and
//!   deleted once every entry in them is checkpointed, so a torn tail or a corrupt frame
//!   in an old segment is skipped, never written over;
//! - the checkpoint's seq only moves forward and only up to a persisted HWM (the
//!   caller's duty, see `store`; an open lowers its offset to a recovered HWM that a
//!   clamp or cut put below it), and it is durable before any segment it covers is
//!   deleted;
//! - an fsync error poisons the WAL: nothing more is acknowledged.

use crate::format::frame::{Codec, Codecs, assert_frame_is};
pub use crate::format::wal::{
    CHECKPOINT_FILE, Checkpoint, DecodedRecord, Link, PartitionId, WAL_SUFFIX, decode_record,
    encode_record, parse_segment_name, segment_name,
};
use crate::format::wal::{CHECKPOINT_TMP_FILE, encode_checkpoint};
use crate::fs::{File, Fs, create_or_reuse_empty, replace_atomically};
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

mod open;
#[cfg(test)]
mod tests;

/// One WAL entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalEntry {
    pub seq: u64,
    pub partition: PartitionId,
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
    /// For a salvage entry, the entry it stands for (always lower than `seq`).
    pub link: Option<Link>,
}

impl WalEntry {
    /// The entry this one stands for: the replay commits one record per root.
    pub fn root(&self) -> u64 {
        self.link.map_or(self.seq, Link::root)
    }

    /// Whether a replay from a checkpoint at `floor` commits (or covers) this entry: it
    /// is past the checkpoint, and so is its root, unless it revives a spent root.
    pub fn live_from(&self, floor: u64) -> bool {
        self.seq >= floor && (self.root() >= floor || matches!(self.link, Some(Link::Revival(_))))
    }
}

/// What opening the WAL found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalOpenReport {
    pub segments: usize,
    pub entries: u64,
    /// Entries lost to corrupt frames in old segments (recorded, never silent).
    pub corrupt_entries: u64,
    /// Bytes of unreadable regions skipped.
    pub skipped_bytes: u64,
    /// Whether the checkpoint file was unreadable (then everything is replayed).
    pub checkpoint_corrupt: bool,
}

struct WalSegment {
    name: String,
    /// Per partition, one past the highest sequence number it holds.
    ends: BTreeMap<PartitionId, u64>,
}

struct WalState {
    next_seq: u64,
    written_seq: u64,
    durable_seq: u64,
    buffer: Vec<(u64, Vec<u8>)>,
    poisoned: Option<String>,
    segments: BTreeMap<u64, WalSegment>,
    active_base: u64,
    active_len: u64,
}

impl WalState {
    /// What every change keeps: each write is fsynced before the state moves, so what is
    /// written is durable; the buffer holds exactly the entries from the written end to
    /// the next seq, in order; the active segment is the newest kept one and starts at
    /// or below the written end.
    fn check_invariants(&self) {
        assert_eq!(
            self.durable_seq, self.written_seq,
            "a WAL write is durable before it counts"
        );
        assert!(
            self.written_seq <= self.next_seq,
            "written past the seqs handed out"
        );
        assert_eq!(
            self.buffer.len() as u64,
            self.next_seq - self.written_seq,
            "the buffer does not hold exactly the unwritten entries"
        );
        assert_eq!(
            self.buffer.first().map(|(seq, _)| *seq),
            self.buffer.first().map(|_| self.written_seq),
            "the buffer starts at the first entry not written"
        );
        assert!(
            self.active_base <= self.written_seq,
            "the active segment starts past the log"
        );
        assert_eq!(
            self.segments.last_key_value().map(|(base, _)| *base),
            Some(self.active_base),
            "the active segment is the newest"
        );
        debug_assert!(
            self.buffer.windows(2).all(|w| w[0].0 + 1 == w[1].0),
            "buffered seqs have a gap"
        );
    }
}

struct WalIo<F: Fs> {
    active: F::File,
    codecs: Codecs,
    frame_buf: Vec<u8>,
    /// A segment was created and its directory entry is not yet known durable (the
    /// call that created it was dropped before the directory fsync).
    dir_unsynced: bool,
}

/// The ingress WAL of a store.
pub struct Wal<F: Fs> {
    fs: F,
    dir: PathBuf,
    segment_bytes: u64,
    state: Mutex<WalState>,
    io: async_lock::Mutex<WalIo<F>>,
    checkpoint_lock: async_lock::Mutex<()>,
}

/// Why a WAL operation failed.
#[derive(Debug)]
pub enum WalError {
    Poisoned(String),
    Io { op: &'static str, source: io::Error },
}

impl std::fmt::Display for WalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalError::Poisoned(reason) => write!(f, "ingress WAL poisoned: {reason}"),
            WalError::Io { op, source } => write!(f, "ingress WAL {op} failed: {source}"),
        }
    }
}

impl std::error::Error for WalError {}

pub(super) fn wal_io(op: &'static str) -> impl FnOnce(io::Error) -> WalError {
    move |source| WalError::Io { op, source }
}

impl<F: Fs> Wal<F> {
    fn state(&self) -> MutexGuard<'_, WalState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers an entry; returns its sequence number. Durable after [`Wal::sync_to`].
    pub fn append(
        &self,
        partition: &PartitionId,
        key: &[u8],
        payload: &[u8],
    ) -> Result<u64, WalError> {
        self.append_record(partition, encode_record(partition, key, payload, None))
    }

    /// Buffers a salvage entry standing for `link`'s root (see `salvage`); returns its
    /// seq.
    pub fn append_linked(
        &self,
        partition: &PartitionId,
        key: &[u8],
        payload: &[u8],
        link: Link,
    ) -> Result<u64, WalError> {
        let record = encode_record(partition, key, payload, Some(link));
        let seq = self.append_record(partition, record)?;
        assert!(
            link.root() < seq,
            "a salvage entry follows the entry it stands for"
        );
        Ok(seq)
    }

    fn append_record(&self, partition: &PartitionId, record: Vec<u8>) -> Result<u64, WalError> {
        let mut st = self.state();
        if let Some(reason) = &st.poisoned {
            return Err(WalError::Poisoned(reason.clone()));
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        st.buffer.push((seq, record));
        st.check_invariants();
        let active = st.active_base;
        if let Some(segment) = st.segments.get_mut(&active) {
            let end = segment.ends.entry(partition.clone()).or_insert(0);
            *end = (*end).max(seq + 1);
        }
        Ok(seq)
    }

    /// Makes every entry up to and including `seq` durable; concurrent callers share
    /// one write and fsync (group commit).
    ///
    /// Cancel-safe: the buffered entries leave the buffer only once their frame is
    /// written and fsynced, and a new segment is recorded as soon as it exists, so a
    /// call dropped at any await leaves the state as a later call can finish it: the
    /// same entries written again at the same position, in the same segment, whose
    /// directory entry is fsynced before anything in it is reported durable.
    pub async fn sync_to(&self, seq: u64) -> Result<(), WalError> {
        if self.durable(seq)? {
            return Ok(());
        }
        let mut io = self.io.lock().await;
        if self.durable(seq)? {
            return Ok(());
        }
        let result = self.write_buffered(&mut io).await;
        let mut st = self.state();
        match result {
            Ok(()) => Ok(()),
            Err(e) => {
                st.poisoned.get_or_insert_with(|| e.to_string());
                crate::alarm::wal_poisoned(&e.to_string());
                Err(e)
            }
        }
    }

    fn durable(&self, seq: u64) -> Result<bool, WalError> {
        let st = self.state();
        if let Some(reason) = &st.poisoned {
            return Err(WalError::Poisoned(reason.clone()));
        }
        Ok(st.durable_seq > seq)
    }

    /// Writes every buffered entry as one frame and fsyncs it, rolling to a new segment
    /// first when the active one is full; only then takes the entries off the buffer.
    async fn write_buffered(&self, io: &mut WalIo<F>) -> Result<(), WalError> {
        let (empty, full) = {
            let st = self.state();
            (st.buffer.is_empty(), st.active_len >= self.segment_bytes)
        };
        if empty {
            return Ok(());
        }
        if full {
            self.roll(io).await?;
        }
        if io.dir_unsynced {
            self.fs
                .sync_dir(&self.dir)
                .await
                .map_err(wal_io("sync directory"))?;
            io.dir_unsynced = false;
        }
        let (base, count, position, header) = {
            let st = self.state();
            let base = st.written_seq;
            assert_eq!(
                st.buffer.first().map(|r| r.0),
                st.buffer.first().map(|_| base),
                "the buffer starts at the first entry not written"
            );
            io.frame_buf.clear();
            let header = io
                .codecs
                .encode_frame(
                    Codec::None,
                    base,
                    st.buffer.iter().map(|(_, r)| r.as_slice()),
                    &mut io.frame_buf,
                )
                .map_err(|e| WalError::Io {
                    op: "encode frame",
                    source: io::Error::other(e),
                })?;
            (base, st.buffer.len(), st.active_len, header)
        };
        assert!(
            count > 0,
            "only a writer holding the lock drains the buffer"
        );
        assert_eq!(header.base_offset, base, "WAL frame at the wrong seq");
        assert_eq!(
            header.record_count as usize, count,
            "WAL frame holds the wrong entries"
        );
        assert_frame_is(&io.frame_buf, &header);
        io.active
            .write_at(&io.frame_buf, position)
            .await
            .map_err(wal_io("write"))?;
        io.active.sync_data().await.map_err(wal_io("fsync"))?;
        let mut st = self.state();
        assert_eq!(st.written_seq, base, "one writer at a time");
        assert_eq!(
            st.active_len, position,
            "the segment did not move under the write"
        );
        st.buffer.drain(..count);
        st.active_len = position + io.frame_buf.len() as u64;
        st.written_seq = base + count as u64;
        st.durable_seq = st.written_seq;
        st.check_invariants();
        Ok(())
    }

    /// Starts a new segment named by the next entry's seq. The state records it as the
    /// active one in the same step as the handle arrives (no await between); a call
    /// dropped before that leaves at most an empty file, which the next one reuses. Its
    /// directory entry is fsynced by [`Wal::write_buffered`] before anything is written
    /// to it.
    async fn roll(&self, io: &mut WalIo<F>) -> Result<(), WalError> {
        let base = self.state().written_seq;
        let name = segment_name(base);
        let file = create_or_reuse_empty(&self.fs, &self.dir.join(&name))
            .await
            .map_err(wal_io("create segment"))?;
        io.active = file;
        io.dir_unsynced = true;
        let mut st = self.state();
        // Entries buffered for this frame were attributed to the old segment; move them.
        let old = st.active_base;
        let moved = st
            .segments
            .get(&old)
            .map(|s| s.ends.clone())
            .unwrap_or_default();
        st.segments.insert(base, WalSegment { name, ends: moved });
        st.active_base = base;
        st.active_len = 0;
        st.check_invariants();
        Ok(())
    }

    /// Persists `checkpoint` (temp file, fsync, rename, directory fsync), then deletes
    /// the old segments every entry of which it covers. Returns the segments deleted.
    pub async fn checkpoint(
        &self,
        checkpoint: &BTreeMap<PartitionId, Checkpoint>,
    ) -> Result<Vec<String>, WalError> {
        let _guard = self.checkpoint_lock.lock().await;
        const STEPS: [&str; 5] = [
            "create checkpoint",
            "write checkpoint",
            "sync checkpoint",
            "rename checkpoint",
            "sync directory",
        ];
        replace_atomically(
            &self.fs,
            &self.dir,
            CHECKPOINT_FILE,
            CHECKPOINT_TMP_FILE,
            &encode_checkpoint(checkpoint),
        )
        .await
        .map_err(|(step, source)| WalError::Io {
            op: step.named(&STEPS),
            source,
        })?;
        assert!(
            checkpoint.values().all(|c| c.seq <= self.state().next_seq),
            "a checkpoint covers only seqs handed out"
        );
        self.delete_covered(checkpoint).await
    }

    /// Deletes the sealed segments every entry of which `checkpoint`, durable now,
    /// covers, with the checkpoint lock held. Returns the segments deleted.
    async fn delete_covered(
        &self,
        checkpoint: &BTreeMap<PartitionId, Checkpoint>,
    ) -> Result<Vec<String>, WalError> {
        let deletable = self.covered(checkpoint);
        for (_, name) in &deletable {
            // A segment already gone was unlinked by an earlier checkpoint whose
            // directory fsync failed: this one's fsync makes that unlink durable.
            match self.fs.remove_file(&self.dir.join(name)).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(wal_io("delete segment")(e)),
            }
        }
        if !deletable.is_empty() {
            self.fs
                .sync_dir(&self.dir)
                .await
                .map_err(wal_io("sync directory"))?;
            let mut st = self.state();
            for (base, _) in &deletable {
                st.segments.remove(base);
            }
        }
        Ok(deletable.into_iter().map(|(_, n)| n).collect())
    }

    /// Sequence numbers assigned so far: `[first retained, next)`.
    pub fn seq_range(&self) -> Range<u64> {
        let st = self.state();
        st.segments.keys().next().copied().unwrap_or(st.next_seq)..st.next_seq
    }

    /// The sealed segments every entry of which `checkpoint` covers: base and name.
    pub fn covered(&self, checkpoint: &BTreeMap<PartitionId, Checkpoint>) -> Vec<(u64, String)> {
        let st = self.state();
        st.segments
            .iter()
            .filter(|(base, _)| **base != st.active_base)
            .filter(|(_, s)| {
                s.ends
                    .iter()
                    .all(|(p, end)| checkpoint.get(p).is_some_and(|c| c.seq >= *end))
            })
            .map(|(b, s)| (*b, s.name.clone()))
            .collect()
    }

    /// The base of the segment written to now.
    pub fn active_base(&self) -> u64 {
        self.state().active_base
    }

    /// Segment files currently kept.
    pub fn segment_count(&self) -> usize {
        self.state().segments.len()
    }

    pub fn poisoned(&self) -> Option<String> {
        self.state().poisoned.clone()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Shared handle.
pub type SharedWal<F> = Arc<Wal<F>>;
