//! Helpers shared by the format tests.

use cafelog_engine::format::frame::{
    CRC_OFFSET, Codec, Codecs, FLAGS_OFFSET, FRAME_HEADER_LEN, FrameHeader, STORED_SIZE_OFFSET,
};
use cafelog_engine::format::{envelope, layout, word};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files of a partition directory: name -> bytes, ordered.
pub type Files = BTreeMap<String, Vec<u8>>;

/// A deterministic record for `offset`: JSON-ish payloads so that multi-record frames
/// compress, three distinct keys, commit times increasing with the offset.
pub fn record(offset: u64) -> (Vec<u8>, u64, Vec<u8>) {
    let key = format!("customer-{}", offset % 3).into_bytes();
    let at = 1_700_000_000_000 + offset * 7;
    let payload = format!(
        r#"{{"order":{offset},"item":"espresso","qty":{},"note":"double shot, oat milk"}}"#,
        offset % 5 + 1
    )
    .into_bytes();
    (key, at, payload)
}

/// The envelope bytes of [`record`]`(offset)`.
pub fn enveloped(offset: u64) -> Vec<u8> {
    let (key, at, payload) = record(offset);
    let mut out = Vec::new();
    envelope::encode(&mut out, &key, at, &payload);
    out
}

/// Builds a partition's files frame by frame, keeping offsets contiguous unless told not to.
pub struct Builder {
    codecs: Codecs,
    pub files: Files,
    segment: Option<String>,
    pub next_offset: u64,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            // Level 3 with zstd's own hash log, the defaults when the fixtures were made:
            // their bytes are fixed.
            codecs: Codecs::new(3, 0),
            files: Files::new(),
            segment: None,
            next_offset: 0,
        }
    }

    /// Starts a segment named by the next offset.
    pub fn segment(&mut self) -> &mut Self {
        self.segment_named(self.next_offset)
    }

    /// Starts a segment named `base` (which may disagree with the next offset).
    pub fn segment_named(&mut self, base: u64) -> &mut Self {
        let name = layout::segment_file_name(base);
        self.files.insert(name.clone(), Vec::new());
        self.segment = Some(name);
        self
    }

    /// The current segment's bytes.
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        let name = self.segment.clone().expect("a segment was started");
        self.files.get_mut(&name).expect("segment exists")
    }

    /// Appends a frame of `count` generated records at the next offset; returns its
    /// position in the segment.
    pub fn frame(&mut self, codec: Codec, count: u64) -> u64 {
        let base = self.next_offset;
        let records: Vec<Vec<u8>> = (base..base + count).map(enveloped).collect();
        let position = self.raw_frame(codec, base, &records);
        self.next_offset = base + count;
        position
    }

    /// Appends a frame of arbitrary record bytes at `base`, without moving the next offset.
    pub fn raw_frame(&mut self, codec: Codec, base: u64, records: &[Vec<u8>]) -> u64 {
        let mut out = Vec::new();
        self.codecs
            .encode_frame(codec, base, records.iter().map(Vec::as_slice), &mut out)
            .expect("encode frame");
        let bytes = self.bytes();
        let position = bytes.len() as u64;
        bytes.extend_from_slice(&out);
        position
    }

    /// Writes the `hwm` file.
    pub fn hwm(&mut self, value: u64) -> &mut Self {
        self.files
            .insert(layout::HWM_FILE.to_string(), word::encode(value).to_vec());
        self
    }
}

/// Rewrites the flags byte of the frame at `position` in `bytes` and recomputes its CRC,
/// so the frame is CRC-valid with a codec the engine does not know.
pub fn set_codec_bits(bytes: &mut [u8], position: usize, bits: u8) {
    let header_end = position + FRAME_HEADER_LEN;
    let mut head: [u8; FRAME_HEADER_LEN] = bytes[position..header_end].try_into().unwrap();
    head[FLAGS_OFFSET] = bits;
    let stored_size = u32::from_be_bytes(head[STORED_SIZE_OFFSET..CRC_OFFSET].try_into().unwrap());
    let stored = &bytes[header_end..header_end + stored_size as usize];
    let crc = FrameHeader::compute_crc(&head, stored);
    head[CRC_OFFSET..].copy_from_slice(&crc.to_be_bytes());
    bytes[position..header_end].copy_from_slice(&head);
}

/// Writes `files` into `dir` (which must exist).
pub fn write_files(dir: &Path, files: &Files) {
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Every regular file of `dir`, by name.
pub fn read_files(dir: &Path) -> Files {
    let mut files = Files::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        assert!(
            entry.file_type().unwrap().is_file(),
            "{:?} is not a file",
            entry.path()
        );
        files.insert(
            entry.file_name().into_string().unwrap(),
            std::fs::read(entry.path()).unwrap(),
        );
    }
    files
}

/// The result of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cafelog` with `args`.
pub fn cafelog(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_cafelog"))
        .args(args)
        .output()
        .expect("run cafelog");
    Run {
        code: output
            .status
            .code()
            .expect("exited, not killed by a signal"),
        stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
    }
}

/// `cafelog <command> <dir> [extra...]`.
pub fn cafelog_on(command: &str, dir: &Path, extra: &[&str]) -> Run {
    let dir = dir.to_str().unwrap();
    let mut args = vec![command, dir];
    args.extend_from_slice(extra);
    cafelog(&args)
}

/// `dump --json` lines, parsed.
pub fn parse_dump_json(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect()
}

/// The committed fixtures' root.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join("disk")
}
