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
//! A WAL record (inside a frame's `[len:4BE][record]` entries):
//! `[topicLen:uvarint][topic][partition:4BE][keyLen:uvarint][key][payload]`, or, for a
//! *salvage copy* (see `salvage`), `[0x00][root:8BE]` followed by the same fields: a
//! second copy of the entry with sequence number `root`, written when an R2 cut
//! discards the log's copy. A topic name is never empty, so a plain record never
//! starts with `0x00`.
//!
//! Invariants:
//! - an entry is acknowledged to nobody before the fsync that covers it returned `Ok`;
//! - each incarnation writes a fresh segment; older segments are only read (replay) and
//!   deleted once every entry in them is checkpointed, so a torn tail or a corrupt frame
//!   in an old segment is skipped, never written over;
//! - the checkpoint only moves forward and only up to a persisted HWM (the caller's
//!   duty, see `store`), and it is durable before any segment it covers is deleted;
//! - an fsync error poisons the WAL: nothing more is acknowledged.

use crate::format::envelope::{get_uvarint, put_uvarint};
use crate::format::frame::{Codec, Codecs, split_records};
use crate::fs::{File, Fs, OpenMode, create_or_reuse_empty, read_exact_at};
use crate::recovery::SegmentReader;
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A partition's identity: topic and partition index.
pub type PartitionId = (String, u32);

/// File name suffix of WAL segments.
pub const WAL_SUFFIX: &str = ".wal";
/// The checkpoint file.
pub const CHECKPOINT_FILE: &str = "checkpoint";
const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";

/// Where a partition's replay starts: entries with `seq` at or above this were maybe not
/// yet below the persisted HWM; the records at offsets from `offset` are copies of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Checkpoint {
    pub seq: u64,
    pub offset: u64,
}

/// One WAL entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalEntry {
    pub seq: u64,
    pub partition: PartitionId,
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
    /// For a salvage copy, the seq of the entry it copies (always lower than `seq`).
    pub copy_of: Option<u64>,
}

impl WalEntry {
    /// The entry this one stands for: the replay commits one record per root.
    pub fn root(&self) -> u64 {
        self.copy_of.unwrap_or(self.seq)
    }
}

/// The first byte of a salvage copy's record, where a plain record has its topic
/// name's length (never 0).
const COPY_MARK: u8 = 0x00;

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

fn wal_io(op: &'static str) -> impl FnOnce(io::Error) -> WalError {
    move |source| WalError::Io { op, source }
}

pub fn segment_name(base: u64) -> String {
    format!("{base:020}{WAL_SUFFIX}")
}

/// The base sequence number a WAL segment file name carries (`None` for other names).
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(WAL_SUFFIX)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Encodes a WAL record; `copy_of` makes it a salvage copy of that seq's entry.
pub fn encode_record(
    partition: &PartitionId,
    key: &[u8],
    payload: &[u8],
    copy_of: Option<u64>,
) -> Vec<u8> {
    assert!(!partition.0.is_empty(), "a topic name is never empty");
    let mut out = Vec::with_capacity(partition.0.len() + key.len() + payload.len() + 25);
    if let Some(root) = copy_of {
        out.push(COPY_MARK);
        out.extend_from_slice(&root.to_be_bytes());
    }
    put_uvarint(&mut out, partition.0.len() as u64);
    out.extend_from_slice(partition.0.as_bytes());
    out.extend_from_slice(&partition.1.to_be_bytes());
    put_uvarint(&mut out, key.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    out
}

/// A decoded WAL record: partition, key, payload, and the seq a salvage copy copies.
pub type DecodedRecord<'a> = (PartitionId, &'a [u8], &'a [u8], Option<u64>);

/// Decodes a WAL record; `None` when malformed.
pub fn decode_record(bytes: &[u8]) -> Option<DecodedRecord<'_>> {
    let (copy_of, bytes) = match bytes.split_first()? {
        (&COPY_MARK, rest) => {
            let (root, rest) = rest.split_at_checked(8)?;
            (Some(u64::from_be_bytes(root.try_into().ok()?)), rest)
        }
        _ => (None, bytes),
    };
    let (topic_len, used) = get_uvarint(bytes)?;
    if topic_len == 0 {
        return None;
    }
    let rest = bytes.get(used..)?;
    let (topic, rest) = rest.split_at_checked(usize::try_from(topic_len).ok()?)?;
    let topic = std::str::from_utf8(topic).ok()?.to_string();
    let (partition, rest) = rest.split_at_checked(4)?;
    let partition = u32::from_be_bytes(partition.try_into().ok()?);
    let (key_len, used) = get_uvarint(rest)?;
    let rest = rest.get(used..)?;
    let (key, payload) = rest.split_at_checked(usize::try_from(key_len).ok()?)?;
    Some(((topic, partition), key, payload, copy_of))
}

/// Encodes the checkpoint file body with its CRC trailer.
fn encode_checkpoint(checkpoint: &BTreeMap<PartitionId, Checkpoint>) -> Vec<u8> {
    let mut out = Vec::new();
    for ((topic, partition), Checkpoint { seq, offset }) in checkpoint {
        let len = u16::try_from(topic.len()).expect("topic names are bounded");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
        out.extend_from_slice(&partition.to_be_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn decode_checkpoint(bytes: &[u8]) -> Option<BTreeMap<PartitionId, Checkpoint>> {
    let (mut body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32c::crc32c(body).to_be_bytes() != crc {
        return None;
    }
    let mut out = BTreeMap::new();
    while !body.is_empty() {
        let (len, rest) = body.split_at_checked(2)?;
        let len = u16::from_be_bytes(len.try_into().ok()?) as usize;
        let (topic, rest) = rest.split_at_checked(len)?;
        let (partition, rest) = rest.split_at_checked(4)?;
        let (seq, rest) = rest.split_at_checked(8)?;
        let (offset, rest) = rest.split_at_checked(8)?;
        out.insert(
            (
                std::str::from_utf8(topic).ok()?.to_string(),
                u32::from_be_bytes(partition.try_into().ok()?),
            ),
            Checkpoint {
                seq: u64::from_be_bytes(seq.try_into().ok()?),
                offset: u64::from_be_bytes(offset.try_into().ok()?),
            },
        );
        body = rest;
    }
    Some(out)
}

impl<F: Fs> Wal<F> {
    /// Opens the WAL in `dir`: reads the checkpoint and every entry of the existing
    /// segments (resynchronising past corrupt frames), then starts a fresh segment.
    pub async fn open(
        fs: F,
        dir: impl Into<PathBuf>,
        segment_bytes: u64,
    ) -> Result<
        (
            Self,
            BTreeMap<PartitionId, Checkpoint>,
            Vec<WalEntry>,
            WalOpenReport,
        ),
        WalError,
    > {
        let dir = dir.into();
        fs.create_dir_all(&dir)
            .await
            .map_err(wal_io("create directory"))?;
        let mut report = WalOpenReport::default();
        let checkpoint = match read_all(&fs, &dir.join(CHECKPOINT_FILE)).await? {
            None => BTreeMap::new(),
            Some(bytes) => decode_checkpoint(&bytes).unwrap_or_else(|| {
                crate::alarm::wal_checkpoint_unreadable();
                report.checkpoint_corrupt = true;
                BTreeMap::new()
            }),
        };
        let names: Vec<(u64, String)> = fs
            .list_dir(&dir)
            .await
            .map_err(wal_io("list"))?
            .into_iter()
            .filter_map(|n| parse_segment_name(&n).map(|b| (b, n)))
            .collect();
        let mut entries = Vec::new();
        let mut segments = BTreeMap::new();
        let mut next_seq = names.first().map_or(0, |(b, _)| *b);
        let mut codecs = Codecs::default();
        for (base, name) in &names {
            let file = fs
                .open(&dir.join(name), OpenMode::Read)
                .await
                .map_err(wal_io("open segment"))?;
            let len = file.len().await.map_err(wal_io("stat segment"))?;
            let mut reader = SegmentReader::new(&file, len);
            let mut segment = WalSegment {
                name: name.clone(),
                ends: BTreeMap::new(),
            };
            let mut position = 0u64;
            let mut expected = *base;
            while position < len {
                let frame = reader
                    .probe(position)
                    .await
                    .map_err(wal_io("read segment"))?;
                let decoded = frame.ok().and_then(|f| {
                    let payload = codecs.decode_payload(&f.header, &f.stored).ok()?;
                    let ranges = split_records(&payload, f.header.record_count).ok()?;
                    Some((f.header, payload, ranges))
                });
                let Some((header, payload, ranges)) = decoded else {
                    // Resynchronise: the next valid frame, if any, continues the scan.
                    match reader
                        .hunt(position)
                        .await
                        .map_err(wal_io("read segment"))?
                    {
                        Some(next) => {
                            report.skipped_bytes += next - position;
                            position = next;
                            continue;
                        }
                        None => {
                            report.skipped_bytes += len - position;
                            break;
                        }
                    }
                };
                if header.base_offset > expected {
                    report.corrupt_entries += header.base_offset - expected;
                }
                for (index, range) in ranges.into_iter().enumerate() {
                    let seq = header.base_offset + index as u64;
                    match payload.get(range).and_then(decode_record) {
                        // A copy names an earlier entry; one naming itself or a later
                        // one is malformed.
                        Some((.., Some(root))) if root >= seq => report.corrupt_entries += 1,
                        Some((partition, key, value, copy_of)) => {
                            let end = segment.ends.entry(partition.clone()).or_insert(0);
                            *end = (*end).max(seq + 1);
                            entries.push(WalEntry {
                                seq,
                                partition,
                                key: key.to_vec(),
                                payload: value.to_vec(),
                                copy_of,
                            });
                        }
                        None => report.corrupt_entries += 1,
                    }
                }
                expected = expected.max(header.end_offset());
                next_seq = next_seq.max(header.end_offset());
                position += header.frame_len();
            }
            // A segment with any bytes (readable or not) is never written again: the
            // next one gets a later name, so unreadable evidence is never truncated away.
            next_seq = next_seq.max(if len > 0 { *base + 1 } else { *base });
            segments.insert(*base, segment);
        }
        // Never hand out a seq the checkpoint has passed: entries a checkpoint covered
        // (their records committed through the log) may never have reached the WAL's
        // disk (a failed WAL fsync), and a reused seq below a checkpoint's would be
        // skipped by the next replay: an acknowledged record lost.
        next_seq = next_seq.max(checkpoint.values().map(|c| c.seq).max().unwrap_or(0));
        report.segments = segments.len();
        report.entries = entries.len() as u64;
        if report.corrupt_entries > 0 || report.skipped_bytes > 0 {
            crate::alarm::wal_damaged(report.corrupt_entries, report.skipped_bytes);
        }
        // A fresh segment for this incarnation.
        let active_name = segment_name(next_seq);
        let active = if segments.contains_key(&next_seq) {
            // The newest segment is an empty file (created, then a crash before its first
            // write): write into it. After a process crash its directory entry may be
            // in the page cache only (the crash came before the fsync that follows a
            // create): make it durable first, or a power loss takes the segment and
            // every acknowledged entry in it.
            let file = fs
                .open(&dir.join(&active_name), OpenMode::ReadWrite)
                .await
                .map_err(wal_io("open segment"))?;
            fs.sync_dir(&dir).await.map_err(wal_io("sync directory"))?;
            // (No length check here: an extra I/O only in debug builds would change a
            // simulated run between build profiles.)
            file
        } else {
            let file = fs
                .open(&dir.join(&active_name), OpenMode::CreateNew)
                .await
                .map_err(wal_io("create segment"))?;
            fs.sync_dir(&dir).await.map_err(wal_io("sync directory"))?;
            file
        };
        segments.insert(
            next_seq,
            WalSegment {
                name: active_name,
                ends: BTreeMap::new(),
            },
        );
        entries.sort_by_key(|e| e.seq);
        entries.dedup_by_key(|e| e.seq);
        let wal = Wal {
            fs,
            dir,
            segment_bytes,
            state: Mutex::new(WalState {
                next_seq,
                written_seq: next_seq,
                durable_seq: next_seq,
                buffer: Vec::new(),
                poisoned: None,
                segments,
                active_base: next_seq,
                active_len: 0,
            }),
            io: async_lock::Mutex::new(WalIo {
                active,
                codecs: Codecs::default(),
                frame_buf: Vec::new(),
                dir_unsynced: false,
            }),
            checkpoint_lock: async_lock::Mutex::new(()),
        };
        Ok((wal, checkpoint, entries, report))
    }

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

    /// Buffers a salvage copy of the entry `root` (see `salvage`); returns its seq.
    pub fn append_copy(
        &self,
        partition: &PartitionId,
        key: &[u8],
        payload: &[u8],
        root: u64,
    ) -> Result<u64, WalError> {
        let record = encode_record(partition, key, payload, Some(root));
        let seq = self.append_record(partition, record)?;
        assert!(root < seq, "a copy follows the entry it copies");
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
        let (base, count, position) = {
            let st = self.state();
            let base = st.written_seq;
            assert_eq!(
                st.buffer.first().map(|r| r.0),
                st.buffer.first().map(|_| base),
                "the buffer starts at the first entry not written"
            );
            io.frame_buf.clear();
            io.codecs
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
            (base, st.buffer.len(), st.active_len)
        };
        assert!(
            count > 0,
            "only a writer holding the lock drains the buffer"
        );
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
        Ok(())
    }

    /// Persists `checkpoint` (temp file, fsync, rename, directory fsync), then deletes
    /// the old segments every entry of which it covers. Returns the segments deleted.
    pub async fn checkpoint(
        &self,
        checkpoint: &BTreeMap<PartitionId, Checkpoint>,
    ) -> Result<Vec<String>, WalError> {
        let _guard = self.checkpoint_lock.lock().await;
        let tmp = self.dir.join(CHECKPOINT_TMP_FILE);
        let file = self
            .fs
            .open(&tmp, OpenMode::CreateTruncate)
            .await
            .map_err(wal_io("create checkpoint"))?;
        file.write_at(&encode_checkpoint(checkpoint), 0)
            .await
            .map_err(wal_io("write checkpoint"))?;
        file.sync_data().await.map_err(wal_io("sync checkpoint"))?;
        self.fs
            .rename(&tmp, &self.dir.join(CHECKPOINT_FILE))
            .await
            .map_err(wal_io("rename checkpoint"))?;
        self.fs
            .sync_dir(&self.dir)
            .await
            .map_err(wal_io("sync directory"))?;
        let deletable: Vec<(u64, String)> = {
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
        };
        for (_, name) in &deletable {
            self.fs
                .remove_file(&self.dir.join(name))
                .await
                .map_err(wal_io("delete segment"))?;
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

async fn read_all<F: Fs>(fs: &F, path: &Path) -> Result<Option<Vec<u8>>, WalError> {
    if !fs.exists(path).await.map_err(wal_io("stat"))? {
        return Ok(None);
    }
    let file = fs
        .open(path, OpenMode::Read)
        .await
        .map_err(wal_io("open"))?;
    let len = file.len().await.map_err(wal_io("stat"))?;
    let mut bytes = vec![0u8; usize::try_from(len.min(1 << 24)).unwrap_or(0)];
    read_exact_at(&file, &mut bytes, 0)
        .await
        .map_err(wal_io("read"))?;
    Ok(Some(bytes))
}

/// Shared handle.
pub type SharedWal<F> = Arc<Wal<F>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;

    fn pid(p: u32) -> PartitionId {
        ("orders".to_string(), p)
    }

    #[test]
    fn records_and_checkpoints_round_trip() {
        let record = encode_record(&pid(3), b"key", b"payload", None);
        assert_eq!(
            decode_record(&record),
            Some((pid(3), &b"key"[..], &b"payload"[..], None))
        );
        let copy = encode_record(&pid(3), b"key", b"payload", Some(41));
        assert_eq!(copy[0], COPY_MARK, "a copy is marked by its first byte");
        assert_eq!(copy[9..], record[..], "then reads as the plain record");
        assert_eq!(
            decode_record(&copy),
            Some((pid(3), &b"key"[..], &b"payload"[..], Some(41)))
        );
        assert_eq!(decode_record(&copy[..8]), None, "a short root is malformed");
        assert_eq!(
            decode_record(&[COPY_MARK; 12]),
            None,
            "an empty topic is malformed"
        );
        let mut checkpoint = BTreeMap::new();
        checkpoint.insert(pid(0), Checkpoint { seq: 7, offset: 3 });
        checkpoint.insert(
            pid(9),
            Checkpoint {
                seq: 70,
                offset: 30,
            },
        );
        let mut bytes = encode_checkpoint(&checkpoint);
        assert_eq!(decode_checkpoint(&bytes), Some(checkpoint));
        bytes[3] ^= 1;
        assert_eq!(
            decode_checkpoint(&bytes),
            None,
            "a flip is caught by the CRC"
        );
    }

    #[test]
    fn entries_survive_reopen_and_checkpointed_segments_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(async {
            let (wal, cp, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
            assert!(cp.is_empty() && entries.is_empty());
            for i in 0..5u64 {
                let seq = wal
                    .append(&pid((i % 2) as u32), b"k", &i.to_be_bytes())
                    .unwrap();
                wal.sync_to(seq).await.unwrap();
            }
            drop(wal);
            let (wal, _, entries, report) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
            assert_eq!(entries.len(), 5);
            assert_eq!(report.corrupt_entries, 0);
            assert_eq!(entries[4].payload, 4u64.to_be_bytes());
            assert_eq!(entries[4].partition, pid(0));
            let before = wal.segment_count();
            assert!(before >= 2);
            let mut cp = BTreeMap::new();
            cp.insert(pid(0), Checkpoint { seq: 5, offset: 3 });
            cp.insert(pid(1), Checkpoint { seq: 5, offset: 2 });
            let deleted = wal.checkpoint(&cp).await.unwrap();
            assert_eq!(deleted.len(), before - 1, "all but the active segment");
            assert_eq!(wal.segment_count(), 1, "the deleted segments are forgotten");
            assert!(wal.checkpoint(&cp).await.unwrap().is_empty());
            drop(wal);
            let (_, cp2, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
            assert_eq!(cp2, cp);
            assert!(entries.is_empty());
        });
    }

    #[test]
    fn seqs_a_checkpoint_passed_are_never_handed_out_again() {
        // Entries whose records were committed through the log are covered and a
        // checkpoint passes them, even when their WAL write never became durable (here:
        // never synced). After a reopen, a new entry must get a seq above the
        // checkpoint's, or the next replay would skip it as covered.
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(async {
            let (wal, _, _, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
            for i in 0..3u64 {
                wal.append(&pid(0), b"k", &[i as u8; 40]).unwrap();
            }
            let mut cp = BTreeMap::new();
            cp.insert(pid(0), Checkpoint { seq: 3, offset: 3 });
            wal.checkpoint(&cp).await.unwrap();
            drop(wal);
            let (wal, cp2, entries, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
            assert_eq!(cp2, cp);
            assert!(
                entries.is_empty(),
                "the unsynced entries never reached the disk"
            );
            let seq = wal.append(&pid(0), b"k", b"new").unwrap();
            assert!(seq >= 3, "seq {seq} reused below the checkpoint's 3");
            wal.sync_to(seq).await.unwrap();
            drop(wal);
            let (_, cp3, entries, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
            assert_eq!(entries.len(), 1);
            assert!(entries[0].seq >= cp3[&pid(0)].seq, "replay would skip it");
        });
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test corrupts a file behind the engine's back"
    )]
    fn a_corrupt_frame_in_an_old_segment_is_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(async {
            let (wal, _, _, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
            for i in 0..3u64 {
                let seq = wal.append(&pid(0), b"k", &[i as u8; 40]).unwrap();
                wal.sync_to(seq).await.unwrap();
            }
            drop(wal);
            let path = dir.path().join(segment_name(0));
            let mut bytes = std::fs::read(&path).unwrap();
            let frame_len = bytes.len() / 3;
            bytes[frame_len + 30] ^= 0x10;
            std::fs::write(&path, &bytes).unwrap();
            let (_, _, entries, report) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
            assert_eq!(
                entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
                vec![0, 2]
            );
            assert_eq!(report.corrupt_entries, 1);
        });
    }

    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "the test writes a segment no engine path can write"
    )]
    fn a_copy_that_names_itself_or_a_later_entry_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        // Seqs 4..8 in one CRC-valid frame: a copy of 2 (fine), a plain entry, copies
        // naming seq 6 (itself) and 9 (later), and a copy of 5.
        let records = [
            encode_record(&pid(0), b"k", b"a", Some(2)),
            encode_record(&pid(0), b"k", b"b", None),
            encode_record(&pid(0), b"k", b"c", Some(6)),
            encode_record(&pid(0), b"k", b"d", Some(9)),
            encode_record(&pid(0), b"k", b"b", Some(5)),
        ];
        let mut frame = Vec::new();
        Codecs::default()
            .encode_frame(
                Codec::None,
                4,
                records.iter().map(Vec::as_slice),
                &mut frame,
            )
            .unwrap();
        std::fs::write(dir.path().join(segment_name(4)), &frame).unwrap();
        let (_, _, entries, report) =
            pollster::block_on(Wal::open(StdFs, dir.path(), 1 << 20)).unwrap();
        let read: Vec<(u64, Option<u64>)> = entries.iter().map(|e| (e.seq, e.copy_of)).collect();
        assert_eq!(read, [(4, Some(2)), (5, None), (8, Some(5))]);
        assert_eq!(report.corrupt_entries, 2);
    }

    #[test]
    fn only_twenty_digits_and_the_suffix_name_a_segment() {
        assert_eq!(parse_segment_name(&segment_name(42)), Some(42));
        assert_eq!(parse_segment_name("00000000000000000042.wal"), Some(42));
        // A stray file in the WAL's directory is never taken for a segment.
        for name in [
            "42.wal",
            "0000000000000000004x.wal",
            "00000000000000000042.log",
            "",
        ] {
            assert_eq!(parse_segment_name(name), None, "{name:?}");
        }
    }

    #[test]
    fn an_error_says_what_failed_and_why() {
        let poisoned = WalError::Poisoned("fsync failed".into()).to_string();
        assert_eq!(poisoned, "ingress WAL poisoned: fsync failed");
        let io = WalError::Io {
            op: "open segment",
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        assert!(
            io.to_string()
                .starts_with("ingress WAL open segment failed: "),
            "{io}"
        );
    }

    /// Entries 0-3 of partition 0 and entry 4 of partition 1, synced one by one into
    /// 64-byte segments: two entries a segment, so 2 and 3 share one.
    async fn five_entries(dir: &std::path::Path) -> Wal<StdFs> {
        let (wal, _, _, _) = Wal::open(StdFs, dir, 64).await.unwrap();
        for i in 0..5u64 {
            let seq = wal
                .append(&pid(u32::from(i == 4)), b"k", &i.to_be_bytes())
                .unwrap();
            assert_eq!(seq, i);
            wal.sync_to(seq).await.unwrap();
        }
        wal
    }

    #[test]
    fn a_segment_outlives_a_checkpoint_that_has_not_passed_its_last_entry() {
        // A checkpoint at seq 3 for partition 0 covers its entries 0-2: the segment
        // holding entry 3 must stay, whether its ends were counted at append or by the
        // open that found it (partition 1's checkpoint covers everything).
        for reopened in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            pollster::block_on(async {
                let mut wal = five_entries(dir.path()).await;
                if reopened {
                    drop(wal);
                    wal = Wal::open(StdFs, dir.path(), 64).await.unwrap().0;
                }
                let mut cp = BTreeMap::new();
                cp.insert(pid(0), Checkpoint { seq: 3, offset: 3 });
                cp.insert(pid(1), Checkpoint { seq: 5, offset: 1 });
                wal.checkpoint(&cp).await.unwrap();
                drop(wal);
                let (_, _, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
                let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
                assert!(seqs.contains(&3), "reopened={reopened}: {seqs:?}");
            });
        }
    }

    #[test]
    // The test plants a stray file and reads it back behind the engine's back.
    #[allow(clippy::disallowed_methods)]
    fn a_segment_with_bytes_but_no_frame_is_never_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join(segment_name(7));
        std::fs::write(&junk, [0xAB; 10]).unwrap();
        pollster::block_on(async {
            let (wal, _, entries, report) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
            assert!(entries.is_empty());
            assert_eq!(report.skipped_bytes, 10);
            let seq = wal.append(&pid(0), b"k", b"v").unwrap();
            assert!(seq > 7, "seq {seq} reuses the junk segment's name");
            wal.sync_to(seq).await.unwrap();
            drop(wal);
            assert_eq!(std::fs::read(&junk).unwrap(), [0xAB; 10]);
            let (_, _, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
            assert_eq!(entries.len(), 1);
            assert_eq!(entries[0].seq, seq);
        });
    }
}
