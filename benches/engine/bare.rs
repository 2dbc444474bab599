//! Baselines: what this disk and these codecs do with no engine in the way. Each is the
//! least work that gives the same durability as the engine path it stands beside.

use crate::workload::Record;
use cafelog_engine::format::envelope;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

const BLOCK_BYTES: usize = 4096;

fn create(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .expect("create baseline file")
}

/// A 4 KiB `write_all_at` + `fdatasync` into fresh space at the end of a growing file:
/// every write changes the file size (and allocates a block), so the fsync commits
/// metadata too.
pub struct FreshBlock {
    file: File,
    position: u64,
    block: Vec<u8>,
}

impl FreshBlock {
    pub fn new(path: &Path) -> Self {
        FreshBlock {
            file: create(path),
            position: 0,
            block: vec![0x5A; BLOCK_BYTES],
        }
    }

    pub fn once(&mut self) -> Duration {
        let started = Instant::now();
        self.file
            .write_all_at(&self.block, self.position)
            .expect("write");
        self.file.sync_data().expect("fdatasync");
        self.position += BLOCK_BYTES as u64;
        started.elapsed()
    }
}

/// A 4 KiB `write_all_at` + `fdatasync` over space already written and synced: the file
/// size and the block map do not change, so the fsync is data only.
pub struct OverwriteBlock {
    file: File,
    blocks: u64,
    next: u64,
    block: Vec<u8>,
}

impl OverwriteBlock {
    pub fn new(path: &Path, blocks: u64) -> Self {
        let file = create(path);
        let chunk = vec![0u8; 256 * BLOCK_BYTES];
        let total = blocks * BLOCK_BYTES as u64;
        let mut written = 0u64;
        while written < total {
            let n = chunk.len().min((total - written) as usize);
            file.write_all_at(&chunk[..n], written).expect("prefill");
            written += n as u64;
        }
        file.sync_all().expect("fsync prefill");
        OverwriteBlock {
            file,
            blocks,
            next: 0,
            block: vec![0xA5; BLOCK_BYTES],
        }
    }

    pub fn once(&mut self) -> Duration {
        let position = (self.next % self.blocks) * BLOCK_BYTES as u64;
        let started = Instant::now();
        self.file
            .write_all_at(&self.block, position)
            .expect("write");
        self.file.sync_data().expect("fdatasync");
        self.next += 1;
        started.elapsed()
    }
}

/// Appends `[len:4BE][envelope]` for each record to `out`: the frame payload layout,
/// built exactly as the engine builds it.
fn length_prefixed(out: &mut Vec<u8>, records: &[Record], committed_at_ms: u64) {
    for r in records {
        let len = envelope::encoded_len(r.key.len(), r.payload.len());
        out.extend_from_slice(&(len as u32).to_be_bytes());
        envelope::encode(out, &r.key, committed_at_ms, &r.payload);
    }
}

/// Pipeline (a): the batch's records length-prefixed, uncompressed, no header and no
/// CRC, appended to a file and fdatasynced.
pub struct RawPipeline {
    file: File,
    position: u64,
    buf: Vec<u8>,
}

impl RawPipeline {
    pub fn new(path: &Path) -> Self {
        RawPipeline {
            file: create(path),
            position: 0,
            buf: Vec::new(),
        }
    }

    pub fn commit(&mut self, records: &[Record], committed_at_ms: u64) {
        self.buf.clear();
        length_prefixed(&mut self.buf, records, committed_at_ms);
        self.file
            .write_all_at(&self.buf, self.position)
            .expect("write");
        self.file.sync_data().expect("fdatasync");
        self.position += self.buf.len() as u64;
    }

    pub fn bytes_written(&self) -> u64 {
        self.position
    }
}

/// Pipeline (b): the batch length-prefixed, compressed with zstd (level 3, one reused
/// context) into one frame with a 27-byte header and a CRC32C, appended and
/// fdatasynced. No verification read-back, no index, no locking.
pub struct ZstdPipeline {
    file: File,
    position: u64,
    payload: Vec<u8>,
    frame: Vec<u8>,
    compressor: zstd::bulk::Compressor<'static>,
}

impl ZstdPipeline {
    pub fn new(path: &Path, level: i32) -> Self {
        ZstdPipeline {
            file: create(path),
            position: 0,
            payload: Vec::new(),
            frame: Vec::new(),
            compressor: zstd::bulk::Compressor::new(level).expect("zstd context"),
        }
    }

    pub fn commit(&mut self, records: &[Record], committed_at_ms: u64) {
        self.payload.clear();
        length_prefixed(&mut self.payload, records, committed_at_ms);
        self.frame.clear();
        self.frame
            .reserve(27 + zstd::zstd_safe::compress_bound(self.payload.len()));
        self.frame.resize(27, 0);
        // Compress straight after the header: a cursor positioned past it.
        let mut cursor = std::io::Cursor::new(&mut self.frame);
        cursor.set_position(27);
        let n = self
            .compressor
            .compress_to_buffer(&self.payload, &mut cursor)
            .expect("compress");
        assert_eq!(self.frame.len(), 27 + n);
        let (head, stored) = self.frame.split_at_mut(27);
        head[0..2].copy_from_slice(&[0xCA, 0xFE]);
        head[2] = 1;
        head[3..7].copy_from_slice(&(records.len() as u32).to_be_bytes());
        head[15..19].copy_from_slice(&(self.payload.len() as u32).to_be_bytes());
        head[19..23].copy_from_slice(&(n as u32).to_be_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&head[2..23]), stored);
        head[23..27].copy_from_slice(&crc.to_be_bytes());
        self.file
            .write_all_at(&self.frame, self.position)
            .expect("write");
        self.file.sync_data().expect("fdatasync");
        self.position += self.frame.len() as u64;
    }

    pub fn bytes_written(&self) -> u64 {
        self.position
    }
}

/// Bare decompression of every zstd frame in `segment` (the bytes of a segment file):
/// walk the headers, decompress each payload into one reused buffer with one reused
/// context. No CRC, no record split, no envelope decode. Returns (records, time).
pub fn decompress_frames(segment: &[u8]) -> (u64, Duration) {
    let mut decompressor = zstd::bulk::Decompressor::new().expect("zstd context");
    let mut out = Vec::new();
    let mut records = 0u64;
    let started = Instant::now();
    let mut at = 0usize;
    while at + 27 <= segment.len() {
        let word = |i: usize| u32::from_be_bytes(segment[at + i..at + i + 4].try_into().unwrap());
        let count = word(3);
        let uncompressed = word(15) as usize;
        let stored = word(19) as usize;
        let payload = &segment[at + 27..at + 27 + stored];
        if segment[at + 2] == 1 {
            out.clear();
            out.reserve(uncompressed);
            let n = decompressor
                .decompress_to_buffer(payload, &mut out)
                .expect("decompress");
            assert_eq!(n, uncompressed);
        }
        std::hint::black_box(&out);
        records += u64::from(count);
        at += 27 + stored;
    }
    (records, started.elapsed())
}
