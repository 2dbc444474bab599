//! Opening the WAL: the checkpoint, then every entry of every segment in name order,
//! resynchronising past frames that do not read back (each skip counted and raised as
//! `wal_damaged`, never silent); then a fresh segment for this incarnation.

use super::{Wal, WalEntry, WalError, WalIo, WalOpenReport, WalSegment, WalState, wal_io};
use crate::format::frame::{Codecs, split_records};
use crate::format::wal::{
    CHECKPOINT_FILE, Checkpoint, PartitionId, decode_checkpoint, decode_record, parse_segment_name,
    segment_name,
};
use crate::fs::{File, Fs, OpenMode, read_exact_at};
use crate::recovery::SegmentReader;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the open found: the WAL, the checkpoint, every readable entry (by seq, each
/// once) and the report of damage.
type Opened<F> = (
    Wal<F>,
    BTreeMap<PartitionId, Checkpoint>,
    Vec<WalEntry>,
    WalOpenReport,
);

impl<F: Fs> Wal<F> {
    /// Opens the WAL in `dir`: reads the checkpoint and every entry of the existing
    /// segments (resynchronising past corrupt frames), then starts a fresh segment.
    pub async fn open(
        fs: F,
        dir: impl Into<PathBuf>,
        segment_bytes: u64,
    ) -> Result<Opened<F>, WalError> {
        let dir = dir.into();
        fs.create_dir_all(&dir)
            .await
            .map_err(wal_io("create directory"))?;
        let mut report = WalOpenReport::default();
        let checkpoint = read_checkpoint(&fs, &dir, &mut report).await?;
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
            let (segment, end) = read_segment(
                &fs,
                &dir,
                *base,
                name,
                &mut codecs,
                &mut entries,
                &mut report,
            )
            .await?;
            next_seq = next_seq.max(end);
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
        let active_name = segment_name(next_seq);
        let active = open_active(&fs, &dir, &active_name, segments.contains_key(&next_seq)).await?;
        segments.insert(
            next_seq,
            WalSegment {
                name: active_name,
                ends: BTreeMap::new(),
            },
        );
        entries.sort_by_key(|e| e.seq);
        entries.dedup_by_key(|e| e.seq);
        assert!(
            entries.last().is_none_or(|e| e.seq < next_seq),
            "a replayed entry at or past the next seq would be handed out again"
        );
        assert!(
            entries
                .iter()
                .all(|e| e.link.is_none_or(|l| l.root() < e.seq)),
            "read_segment keeps only links to earlier entries"
        );
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
}

/// The checkpoint file's entries: none when there is no file, and none (everything is
/// replayed, `wal_checkpoint_unreadable`) when it does not read back.
async fn read_checkpoint<F: Fs>(
    fs: &F,
    dir: &Path,
    report: &mut WalOpenReport,
) -> Result<BTreeMap<PartitionId, Checkpoint>, WalError> {
    Ok(match read_all(fs, &dir.join(CHECKPOINT_FILE)).await? {
        None => BTreeMap::new(),
        Some(bytes) => decode_checkpoint(&bytes).unwrap_or_else(|| {
            crate::alarm::wal_checkpoint_unreadable();
            report.checkpoint_corrupt = true;
            BTreeMap::new()
        }),
    })
}

/// Reads one old segment: pushes every readable entry onto `entries` and counts what
/// could not be read in `report`. Returns the segment and the least seq the next one
/// may start at.
async fn read_segment<F: Fs>(
    fs: &F,
    dir: &Path,
    base: u64,
    name: &str,
    codecs: &mut Codecs,
    entries: &mut Vec<WalEntry>,
    report: &mut WalOpenReport,
) -> Result<(WalSegment, u64), WalError> {
    let file = fs
        .open(&dir.join(name), OpenMode::Read)
        .await
        .map_err(wal_io("open segment"))?;
    let len = file.len().await.map_err(wal_io("stat segment"))?;
    let mut reader = SegmentReader::new(&file, len);
    let mut segment = WalSegment {
        name: name.to_string(),
        ends: BTreeMap::new(),
    };
    let mut next_seq = base;
    let mut position = 0u64;
    let mut expected = base;
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
                // A link names an earlier entry; one naming itself or a later one is
                // malformed.
                Some((.., Some(link))) if link.root() >= seq => report.corrupt_entries += 1,
                Some((partition, key, value, link)) => {
                    let end = segment.ends.entry(partition.clone()).or_insert(0);
                    *end = (*end).max(seq + 1);
                    entries.push(WalEntry {
                        seq,
                        partition,
                        key: key.to_vec(),
                        payload: value.to_vec(),
                        link,
                    });
                }
                None => report.corrupt_entries += 1,
            }
        }
        expected = expected.max(header.end_offset());
        next_seq = next_seq.max(header.end_offset());
        position += header.frame_len();
        assert!(position <= len, "a probed frame lies inside its segment");
    }
    // A segment with any bytes (readable or not) is never written again: the next one
    // gets a later name, so unreadable evidence is never truncated away.
    next_seq = next_seq.max(if len > 0 { base + 1 } else { base });
    Ok((segment, next_seq))
}

/// The segment this incarnation writes, named `name`, with its directory entry durable.
async fn open_active<F: Fs>(
    fs: &F,
    dir: &Path,
    name: &str,
    exists: bool,
) -> Result<F::File, WalError> {
    let file = if exists {
        // The newest segment is an empty file (created, then a crash before its first
        // write): write into it. After a process crash its directory entry may be in
        // the page cache only (the crash came before the fsync that follows a create):
        // make it durable first, or a power loss takes the segment and every
        // acknowledged entry in it. (No length check here: an extra I/O only in debug
        // builds would change a simulated run between build profiles.)
        fs.open(&dir.join(name), OpenMode::ReadWrite)
            .await
            .map_err(wal_io("open segment"))?
    } else {
        fs.open(&dir.join(name), OpenMode::CreateNew)
            .await
            .map_err(wal_io("create segment"))?
    };
    fs.sync_dir(dir).await.map_err(wal_io("sync directory"))?;
    Ok(file)
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
