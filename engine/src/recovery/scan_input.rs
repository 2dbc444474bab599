//! Arbitrary bytes as a partition directory, for the scanner's fuzz target and the tests
//! that run the same checks over the committed fixtures and generated partitions.
//!
//! Layout (chosen so that a fuzzer controls the `hwm` file and the segment boundaries):
//! ```text
//! byte 0            control: bit 0 = an hwm file follows; bits 1-2 = segment count - 1
//! [1 byte n]        the hwm file's length (n % 17, so up to 16 bytes: malformed ones too)
//! [n bytes]         the hwm file's contents                           (when bit 0 is set)
//! per segment:
//!   [1 byte]        its base offset (the file is named after it)
//!   [2 bytes BE]    its length, for every segment but the last (cut at the input's end)
//!   [bytes]         its contents; the last segment takes the rest of the input
//! ```
//! Every input decodes to some directory, so no fuzzing time is spent on rejected inputs.
//!
//! Invariant: [`ScanInput::encode`] and [`ScanInput::decode`] are inverses for every
//! directory `encode` accepts.

use super::{PartitionScan, ScanDepth, scan_partition};
use crate::format::layout;
use crate::fs::{File, Fs, OpenMode};
use std::io;
use std::path::Path;

const HWM_LEN_MAX: usize = 16;
const SEGMENTS_MAX: usize = 4;

/// A partition directory's files: an optional `hwm` file and up to four segments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanInput {
    pub hwm: Option<Vec<u8>>,
    /// `(base offset, bytes)` in the order they are written.
    pub segments: Vec<(u8, Vec<u8>)>,
}

impl ScanInput {
    /// Reads arbitrary bytes as a directory (never fails: short inputs give short files).
    pub fn decode(data: &[u8]) -> ScanInput {
        let mut input = ScanInput::default();
        let Some((&control, mut rest)) = data.split_first() else {
            return input;
        };
        if control & 1 != 0 {
            let (len, tail) = rest.split_first().map_or((0, rest), |(n, t)| (*n, t));
            let len = usize::from(len) % (HWM_LEN_MAX + 1);
            let (hwm, tail) = tail.split_at(len.min(tail.len()));
            input.hwm = Some(hwm.to_vec());
            rest = tail;
        }
        let count = usize::from((control >> 1) & 3) + 1;
        for index in 0..count {
            let Some((&base, tail)) = rest.split_first() else {
                break;
            };
            rest = tail;
            let len = if index + 1 == count {
                rest.len()
            } else {
                let (len, tail) = rest.split_at(2.min(rest.len()));
                rest = tail;
                let mut be = [0u8; 2];
                be[..len.len()].copy_from_slice(len);
                usize::from(u16::from_be_bytes(be)).min(rest.len())
            };
            let (bytes, tail) = rest.split_at(len);
            input.segments.push((base, bytes.to_vec()));
            rest = tail;
        }
        input
    }

    /// The bytes that decode to this directory; `None` when the layout cannot say it (more
    /// than four segments, none at all, an `hwm` file over 16 bytes, a segment but the last
    /// over 65,535 bytes).
    pub fn encode(&self) -> Option<Vec<u8>> {
        let count = self.segments.len();
        if count == 0 || count > SEGMENTS_MAX {
            return None;
        }
        let segments_bits = u8::try_from(count - 1).ok()? << 1;
        let mut data = vec![u8::from(self.hwm.is_some()) | segments_bits];
        if let Some(hwm) = &self.hwm {
            if hwm.len() > HWM_LEN_MAX {
                return None;
            }
            data.push(u8::try_from(hwm.len()).ok()?);
            data.extend_from_slice(hwm);
        }
        for (index, (base, bytes)) in self.segments.iter().enumerate() {
            data.push(*base);
            if index + 1 < count {
                data.extend_from_slice(&u16::try_from(bytes.len()).ok()?.to_be_bytes());
            }
            data.extend_from_slice(bytes);
        }
        debug_assert_eq!(&ScanInput::decode(&data), self);
        Some(data)
    }

    /// Reads a partition directory's `hwm` file and segments; `None` when a segment's base
    /// offset does not fit the layout's one byte, or the layout cannot say it.
    pub async fn read_dir<F: Fs>(fs: &F, dir: &Path) -> io::Result<Option<ScanInput>> {
        let mut input = ScanInput::default();
        for name in fs.list_dir(dir).await? {
            let path = dir.join(&name);
            if name == layout::HWM_FILE {
                input.hwm = Some(read_all(fs, &path).await?);
            } else if let Some(base) = layout::parse_segment_file_name(&name) {
                let Ok(base) = u8::try_from(base) else {
                    return Ok(None);
                };
                input.segments.push((base, read_all(fs, &path).await?));
            }
        }
        Ok(input.encode().map(|_| input))
    }

    /// Replaces every file in `dir` with this directory's.
    pub async fn write_dir<F: Fs>(&self, fs: &F, dir: &Path) -> io::Result<()> {
        for name in fs.list_dir(dir).await? {
            fs.remove_file(&dir.join(name)).await?;
        }
        if let Some(hwm) = &self.hwm {
            write_all(fs, &dir.join(layout::HWM_FILE), hwm).await?;
        }
        for (base, bytes) in &self.segments {
            let name = layout::segment_file_name(u64::from(*base));
            write_all(fs, &dir.join(name), bytes).await?;
        }
        Ok(())
    }
}

/// The fuzz target's whole body: writes `data` as a partition into `dir` (emptied first),
/// scans it at both depths, and returns the scans. Each scan asserts its own consistency
/// ([`PartitionScan::assert_consistent`]); a panic here is a finding.
pub async fn scan_fuzz_input<F: Fs>(
    fs: &F,
    dir: &Path,
    data: &[u8],
) -> io::Result<[PartitionScan; 2]> {
    ScanInput::decode(data).write_dir(fs, dir).await?;
    let records = scan_partition(fs, dir, ScanDepth::Records).await?;
    let frames = scan_partition(fs, dir, ScanDepth::Frames).await?;
    // The deeper scan decodes more, so it can only stop earlier, never later.
    assert!(
        records.tail_offset <= frames.tail_offset,
        "{records:?}\n{frames:?}"
    );
    assert_eq!(records.log_start, frames.log_start);
    assert_eq!(records.persisted_hwm, frames.persisted_hwm);
    Ok([records, frames])
}

async fn read_all<F: Fs>(fs: &F, path: &Path) -> io::Result<Vec<u8>> {
    let file = fs.open(path, OpenMode::Read).await?;
    let len = usize::try_from(file.len().await?).map_err(io::Error::other)?;
    let mut bytes = vec![0u8; len];
    crate::fs::read_exact_at(&file, &mut bytes, 0).await?;
    Ok(bytes)
}

async fn write_all<F: Fs>(fs: &F, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let file = fs.open(path, OpenMode::CreateTruncate).await?;
    file.write_at(bytes, 0).await
}
