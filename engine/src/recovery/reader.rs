//! Bounded-memory reading of a segment file: a window over the file that is refilled in
//! chunks, never larger than `max(WINDOW_BYTES, one frame)`.
//!
//! A read the disk fails with EIO (a latent sector error: persistent until the sector
//! is written again) is narrowed down to the sectors that fail, by halving, and those
//! bytes read as [`UNREADABLE_FILL`]. Invariants:
//! - a frame with an unreadable byte is never returned: [`SegmentReader::probe`] gives
//!   [`FrameError::Unreadable`], which recovery judges like any bad frame (R1, R2 or
//!   R3 by where it lies), never as the end of the log;
//! - unreadable bytes are neither zero nor a frame's magic, so they are never taken
//!   for preallocated space nor hunted as a frame start.

use crate::format::frame::{FRAME_HEADER_LEN, FrameError, FrameHeader, MAGIC, check_stored};
use crate::fs::{File, is_eio, read_exact_at};
use std::io;
use std::ops::Range;

/// What an unreadable byte reads as.
pub const UNREADABLE_FILL: u8 = 0xEE;
const _: () =
    assert!(UNREADABLE_FILL != 0 && UNREADABLE_FILL != MAGIC[0] && UNREADABLE_FILL != MAGIC[1]);

/// The unit a read error is narrowed down to.
const SECTOR: u64 = 512;

/// Bytes read per refill when frames are small.
pub const WINDOW_BYTES: usize = 1 << 20;

/// A window over one file.
pub struct SegmentReader<'f, F: File> {
    file: &'f F,
    file_len: u64,
    window_start: u64,
    /// How many bytes of `window` hold the file from `window_start`; the buffer past
    /// them is stale (another file's, or an earlier fill's).
    window_len: usize,
    window: Vec<u8>,
    /// Byte ranges of the file the disk failed to read, in the order found.
    unreadable: Vec<Range<u64>>,
}

/// A frame that passed every check but offset continuity.
#[derive(Clone, Debug)]
pub struct ProbedFrame {
    pub header: FrameHeader,
    pub stored: Vec<u8>,
}

thread_local! {
    /// The last dropped reader's window, for the next reader on this thread: an open
    /// scans every segment of every partition, and zero-filling a fresh megabyte for
    /// each cost as much as reading it.
    static SPARE_WINDOW: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl<'f, F: File> SegmentReader<'f, F> {
    pub fn new(file: &'f F, file_len: u64) -> Self {
        SegmentReader {
            file,
            file_len,
            // Nothing is cached yet (`window_len` 0): only the buffer is reused.
            window_start: 0,
            window_len: 0,
            window: SPARE_WINDOW.take(),
            unreadable: Vec::new(),
        }
    }

    /// Whether a byte of `[position, position + len)` could not be read.
    fn unreadable_in(&self, position: u64, len: u64) -> Option<FrameError> {
        let end = position + len;
        self.unreadable
            .iter()
            .any(|r| r.start < end && position < r.end)
            .then_some(FrameError::Unreadable { position, len })
    }

    /// Fills `window[..fill]` with the file from `position`; sectors the disk fails
    /// with EIO read as [`UNREADABLE_FILL`] and are remembered. Other errors end the
    /// read. One bad sector costs about `2 log2(fill / SECTOR)` reads.
    async fn fill(&mut self, position: u64, fill: usize) -> io::Result<()> {
        // Ranges still to read, the next one last.
        let mut ranges: Vec<Range<u64>> = Vec::with_capacity(32);
        ranges.push(position..position + fill as u64);
        while let Some(range) = ranges.pop() {
            let from = (range.start - position) as usize;
            let to = (range.end - position) as usize;
            let buf = self.window.get_mut(from..to).unwrap_or_default();
            match read_exact_at(self.file, buf, range.start).await {
                Ok(()) => {}
                Err(e) if !is_eio(&e) => return Err(e),
                Err(_) => {
                    // Split at a sector boundary; one sector (or less) is the answer.
                    let mid = (range.start + (range.end - range.start) / 2) / SECTOR * SECTOR;
                    let mid = if mid <= range.start {
                        (range.start / SECTOR + 1) * SECTOR
                    } else {
                        mid
                    };
                    if mid >= range.end {
                        buf.fill(UNREADABLE_FILL);
                        self.unreadable.push(range);
                    } else {
                        ranges.push(mid..range.end);
                        ranges.push(range.start..mid);
                    }
                }
            }
        }
        Ok(())
    }

    /// The bytes `[position, position + len)`; the caller has checked they are in the file.
    async fn bytes(&mut self, position: u64, len: usize) -> io::Result<&[u8]> {
        let end = position + len as u64;
        assert!(end <= self.file_len, "read past the scanned file length");
        let window_end = self.window_start + self.window_len as u64;
        if position < self.window_start || end > window_end {
            let fill = (len.max(WINDOW_BYTES) as u64).min(self.file_len - position) as usize;
            // The buffer only grows (growth is zero-filled once); the read overwrites
            // the `fill` bytes the window then holds, and nothing past them is read.
            if self.window.len() < fill {
                self.window.resize(fill, 0);
            }
            self.window_len = 0;
            self.fill(position, fill).await?;
            self.window_start = position;
            self.window_len = fill;
        }
        let from = (position - self.window_start) as usize;
        Ok(self
            .window
            .get(from..from + len)
            .filter(|_| from + len <= self.window_len)
            .unwrap_or_default())
    }

    /// Reads and checks the frame at `position`: header, bounds against the file length
    /// (before allocating the payload), and CRC.
    pub async fn probe(&mut self, position: u64) -> io::Result<Result<ProbedFrame, FrameError>> {
        let available = self.file_len.saturating_sub(position);
        if available < FRAME_HEADER_LEN as u64 {
            return Ok(Err(FrameError::Truncated {
                needed: FRAME_HEADER_LEN as u64,
                available,
            }));
        }
        let mut head = [0u8; FRAME_HEADER_LEN];
        head.copy_from_slice(self.bytes(position, FRAME_HEADER_LEN).await?);
        if let Some(e) = self.unreadable_in(position, FRAME_HEADER_LEN as u64) {
            return Ok(Err(e));
        }
        let header = match FrameHeader::parse(&head) {
            Ok(h) => h,
            Err(e) => return Ok(Err(e)),
        };
        if header.frame_len() > available {
            return Ok(Err(FrameError::Truncated {
                needed: header.frame_len(),
                available,
            }));
        }
        let stored = self
            .bytes(
                position + FRAME_HEADER_LEN as u64,
                header.stored_size as usize,
            )
            .await?
            .to_vec();
        if let Some(e) = self.unreadable_in(position, header.frame_len()) {
            return Ok(Err(e));
        }
        assert!(
            position + header.frame_len() <= self.file_len,
            "a probed frame lies in its file"
        );
        assert_eq!(
            stored.len() as u64,
            u64::from(header.stored_size),
            "the whole payload is read"
        );
        Ok(check_stored(&header, &stored).map(|()| ProbedFrame { header, stored }))
    }

    /// Whether every byte from `position` to the end of the file is zero: the
    /// preallocated space after a segment's last frame. The whole rest is checked, never
    /// one field: a valid frame's CRC (or any other field) may be zero, but its magic
    /// never is, so an all-zero remainder holds no frame and no part of one.
    pub async fn zero_from(&mut self, position: u64) -> io::Result<bool> {
        let mut cursor = position;
        while cursor < self.file_len {
            let chunk_len = ((self.file_len - cursor) as usize).min(WINDOW_BYTES);
            if !all_zero(self.bytes(cursor, chunk_len).await?) {
                return Ok(false);
            }
            cursor += chunk_len as u64;
        }
        Ok(true)
    }

    /// The position of the first CRC-valid frame starting after `position`, if any.
    pub async fn hunt(&mut self, position: u64) -> io::Result<Option<u64>> {
        let mut cursor = position + 1;
        while cursor + 1 < self.file_len {
            let chunk_len = ((self.file_len - cursor) as usize).min(WINDOW_BYTES);
            let found = {
                let chunk = self.bytes(cursor, chunk_len).await?;
                chunk.windows(2).position(|w| w == MAGIC)
            };
            match found {
                Some(at) => {
                    let candidate = cursor + at as u64;
                    if self.probe(candidate).await?.is_ok() {
                        assert!(candidate > position, "the hunt moves forward");
                        return Ok(Some(candidate));
                    }
                    cursor = candidate + 1;
                }
                // Keep the last byte: the magic may straddle two chunks.
                None => cursor += (chunk_len as u64).saturating_sub(1).max(1),
            }
        }
        Ok(None)
    }
}

impl<F: File> Drop for SegmentReader<'_, F> {
    fn drop(&mut self) {
        let window = std::mem::take(&mut self.window);
        if window.capacity() <= 2 * WINDOW_BYTES {
            SPARE_WINDOW.set(window);
        }
    }
}

/// Whether every byte is zero, sixteen bytes at a time (a preallocated megabyte is
/// checked at every open).
fn all_zero(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(16);
    let mut acc = 0u128;
    for word in &mut words {
        acc |= u128::from_ne_bytes(word.try_into().expect("16 bytes"));
    }
    acc == 0 && words.remainder().iter().all(|b| *b == 0)
}

#[cfg(test)]
mod tests {
    use super::{SegmentReader, WINDOW_BYTES, all_zero};
    use crate::format::frame::{Codec, Codecs};
    use crate::fs::{Fs, OpenMode, StdFs};
    use std::time::Duration;

    const W: u64 = WINDOW_BYTES as u64;

    /// One raw frame at `base` holding one record of `len` bytes.
    fn frame(base: u64, len: usize) -> Vec<u8> {
        let record = vec![0x5a; len];
        let mut out = Vec::new();
        Codecs::default()
            .encode_frame(Codec::None, base, [record.as_slice()].into_iter(), &mut out)
            .expect("encode");
        out
    }

    /// Runs `test` on another thread, failing if it does not return within seconds: a
    /// reader that loops is a failure here, not a hang.
    fn within(test: impl FnOnce() + Send + 'static) {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            test();
            let _ = done.send(());
        });
        match finished.recv_timeout(Duration::from_secs(20)) {
            Ok(()) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the reader loops"),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the check failed"),
        }
    }

    /// Runs `check` on a reader over a file of `bytes`, [`within`] bounded time.
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes its file behind the engine's back"
    )]
    fn with_reader(
        bytes: Vec<u8>,
        check: impl FnOnce(&mut SegmentReader<'_, <StdFs as Fs>::File>) + Send + 'static,
    ) {
        within(move || {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("segment");
            std::fs::write(&path, &bytes).expect("write");
            pollster::block_on(async {
                let file = StdFs.open(&path, OpenMode::Read).await.expect("open");
                let mut reader = SegmentReader::new(&file, bytes.len() as u64);
                check(&mut reader);
            });
        });
    }

    #[test]
    fn hunt_finds_a_frame_whose_magic_straddles_two_chunks_and_only_after_its_start() {
        // hunt(10) reads its first chunk from byte 11; the frame's magic starts on that
        // chunk's last byte. A lone magic before it starts no frame.
        let at = 11 + W - 1;
        let mut bytes = vec![0x11; at as usize];
        bytes[100..102].copy_from_slice(&super::MAGIC);
        bytes.extend(frame(7, 100));
        bytes.extend(vec![0x11; 100]);
        with_reader(bytes, move |r| {
            let hunt = |r: &mut SegmentReader<'_, _>, from| pollster::block_on(r.hunt(from));
            assert_eq!(hunt(r, 10).expect("hunt"), Some(at));
            assert_eq!(hunt(r, at - 1).expect("hunt"), Some(at));
            assert_eq!(hunt(r, 0).expect("hunt"), Some(at));
            assert_eq!(
                hunt(r, at).expect("hunt"),
                None,
                "a frame at the start is not after it"
            );
        });
    }

    #[test]
    fn a_read_before_the_window_refills_it() {
        let mut bytes = frame(0, 100);
        bytes.resize(2 * W as usize, 0x11);
        bytes.extend(frame(9, 200));
        bytes.resize(3 * W as usize, 0);
        with_reader(bytes, |r| {
            let far = pollster::block_on(r.probe(2 * W))
                .expect("read")
                .expect("frame");
            assert_eq!(far.header.base_offset, 9);
            let near = pollster::block_on(r.probe(0))
                .expect("read")
                .expect("frame");
            assert_eq!(near.header.base_offset, 0);
            assert_eq!(near.stored.len(), 104);
        });
    }

    #[test]
    fn zero_from_reads_every_window_to_the_end() {
        let len = 2 * W as usize + W as usize / 2;
        with_reader(vec![0u8; len], |r| {
            assert!(pollster::block_on(r.zero_from(0)).expect("read"));
            assert!(pollster::block_on(r.zero_from(W + 1)).expect("read"));
        });
        for set in [0, W as usize - 1, W as usize, len - 1] {
            let mut bytes = vec![0u8; len];
            bytes[set] = 1;
            with_reader(bytes, move |r| {
                assert!(
                    !pollster::block_on(r.zero_from(0)).expect("read"),
                    "byte {set}"
                );
            });
        }
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes its two files behind the engine's back"
    )]
    fn a_reused_window_never_serves_the_previous_files_bytes() {
        within(|| {
            pollster::block_on(async {
                let dir = tempfile::tempdir().expect("temp dir");
                let (a, b) = (dir.path().join("a"), dir.path().join("b"));
                std::fs::write(&a, vec![0xaa; 4096]).expect("write a");
                std::fs::write(&b, vec![0u8; 64]).expect("write b");
                let file_a = StdFs.open(&a, OpenMode::Read).await.expect("open a");
                let mut reader = SegmentReader::new(&file_a, 4096);
                assert!(!reader.zero_from(0).await.expect("read a"));
                drop(reader);
                // The next reader gets a's 4096-byte buffer; b holds 64 zero bytes.
                let file_b = StdFs.open(&b, OpenMode::Read).await.expect("open b");
                let mut reader = SegmentReader::new(&file_b, 64);
                assert!(reader.zero_from(0).await.expect("read b"));
                assert_eq!(reader.bytes(0, 64).await.expect("bytes"), &[0u8; 64][..]);
            })
        });
    }

    #[test]
    fn an_unreadable_range_touches_only_the_frames_it_overlaps() {
        with_reader(vec![0u8; 2048], |r| {
            r.unreadable.push(512..1024);
            // Ending where the bad sector starts, or starting where it ends: readable.
            assert!(r.unreadable_in(0, 512).is_none());
            assert!(r.unreadable_in(1024, 100).is_none());
            assert!(r.unreadable_in(500, 13).is_some());
            assert!(r.unreadable_in(1023, 1).is_some());
            assert!(r.unreadable_in(0, 2048).is_some());
        });
    }

    #[test]
    fn a_read_error_other_than_eio_ends_the_read_instead_of_marking_sectors() {
        // The file is shorter than the length the reader was given (it shrank under
        // the scan): reading past its end fails with UnexpectedEof, which is no bad
        // sector and must not read as one.
        with_reader(vec![0x11; 64], |r| {
            r.file_len = 4096;
            let err = pollster::block_on(r.bytes(0, 4096)).expect_err("past the end");
            assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof, "{err}");
            assert!(r.unreadable.is_empty(), "{:?}", r.unreadable);
        });
    }

    #[test]
    fn all_zero_sees_one_set_bit_anywhere() {
        assert!(all_zero(&[]));
        for len in [1, 15, 16, 17, 100, 4096] {
            let mut bytes = vec![0u8; len];
            assert!(all_zero(&bytes));
            for at in [0, len / 2, len - 1] {
                bytes[at] = 0x10;
                assert!(!all_zero(&bytes), "len {len}, byte {at}");
                bytes[at] = 0;
            }
        }
    }
}
