//! The shapes the writer gives frames and segments, at their exact edges: a frame is
//! cut where the next record would pass `flush_bytes`, a segment rolls where the next
//! frame would pass `segment_bytes`, zstd starts at `compress_min_bytes`, and the
//! preallocated zeros go where the writer's contract says. The simulator's `layout`
//! checker holds runs to the upper bounds; only a test that sets every size can see
//! an edge moved by one.

use crate::common::*;
use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::Codec;
use cafelog_engine::format::frame::{FRAME_HEADER_LEN, FrameHeader};
use cafelog_engine::log::LogConfig;
use std::path::Path;

fn record(i: u8) -> Vec<u8> {
    vec![b'a' + i % 26; PAYLOAD]
}

/// The headers of the frames of segment `name`, from byte 0 up to the first non-frame.
fn headers(dir: &Path, name: &str) -> Vec<FrameHeader> {
    let bytes = std::fs::read(dir.join(name)).expect("read segment");
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(head) = bytes.get(at..at + FRAME_HEADER_LEN) {
        let Ok(header) = FrameHeader::parse(head.try_into().expect("header length")) else {
            break;
        };
        at += header.frame_len() as usize;
        out.push(header);
    }
    out
}

#[test]
fn the_shared_record_size_is_the_engines() {
    use cafelog_engine::format::envelope::encoded_len;
    assert_eq!(encoded_len(1, PAYLOAD) as u64, ENVELOPE);
}

#[test]
fn a_frame_is_cut_where_the_next_record_would_pass_flush_bytes() {
    let counts = |flush_bytes: usize| {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(WALL_START_MS);
        let config = LogConfig {
            codec: Codec::None,
            flush_bytes,
            ..LogConfig::default()
        };
        let (log, _) = open(dir.path(), &clock, config);
        let records: Vec<Vec<u8>> = (0..7).map(record).collect();
        log.append_batch(records.iter().map(|r| (&b"k"[..], r.as_slice())))
            .unwrap();
        pollster::block_on(log.sync()).unwrap();
        assert_eq!(read_all(&log, 0).len(), 7);
        let name = &segment_files(dir.path())[0];
        headers(dir.path(), name)
            .iter()
            .map(|h| h.record_count)
            .collect::<Vec<_>>()
    };
    // Three records fill flush_bytes exactly: they share a frame.
    assert_eq!(counts(3 * ENVELOPE as usize), [3, 3, 1]);
    assert_eq!(counts(3 * ENVELOPE as usize - 1), [2, 2, 2, 1]);
    // A record larger than flush_bytes is a frame of its own.
    assert_eq!(counts(ENVELOPE as usize - 1), [1; 7]);
}

#[test]
fn a_segment_rolls_only_when_the_next_frame_would_pass_segment_bytes() {
    let frames_per_segment = |segment_bytes: u64| {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(WALL_START_MS);
        let config = LogConfig {
            codec: Codec::None,
            segment_bytes,
            preallocate_bytes: 0,
            ..LogConfig::default()
        };
        let (log, _) = open(dir.path(), &clock, config);
        for i in 0..7 {
            pollster::block_on(log.commit([(&b"k"[..], record(i).as_slice())])).unwrap();
        }
        assert_eq!(read_all(&log, 0).len(), 7);
        segment_files(dir.path())
            .iter()
            .map(|name| {
                let len = std::fs::metadata(dir.path().join(name)).unwrap().len();
                assert_eq!(len % ONE_RECORD_FRAME, 0, "{name} ends at a frame");
                len / ONE_RECORD_FRAME
            })
            .collect::<Vec<_>>()
    };
    // Three frames fill a segment exactly: no roll until the fourth.
    assert_eq!(frames_per_segment(3 * ONE_RECORD_FRAME), [3, 3, 1]);
    assert_eq!(frames_per_segment(3 * ONE_RECORD_FRAME - 1), [2, 2, 2, 1]);
}

#[test]
fn zstd_starts_at_compress_min_bytes() {
    let codec = |compress_min_bytes: usize| {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(WALL_START_MS);
        let config = LogConfig {
            codec: Codec::Zstd,
            compress_min_bytes,
            ..LogConfig::default()
        };
        let (log, _) = open(dir.path(), &clock, config);
        pollster::block_on(log.commit([(&b"k"[..], record(0).as_slice())])).unwrap();
        assert_eq!(read_all(&log, 0)[0].payload, record(0));
        let name = &segment_files(dir.path())[0];
        let header = headers(dir.path(), name)[0];
        assert_eq!(u64::from(header.uncompressed_size), 4 + ENVELOPE);
        header.codec
    };
    // The frame's payload is the length prefix and the envelope.
    let payload = (4 + ENVELOPE) as usize;
    assert_eq!(
        codec(payload),
        Codec::Zstd,
        "a payload of exactly the bound"
    );
    assert_eq!(codec(payload + 1), Codec::None, "one byte short of it");
}
