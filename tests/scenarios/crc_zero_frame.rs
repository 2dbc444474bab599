//! A valid frame whose CRC is 0, followed by a zero-filled tail.
//!
//! Why an engine-level case and not a scenario file: the world cannot steer a frame's
//! CRC, and a CRC of exactly 0 comes up once in 2^32 frames. The danger it guards
//! against: a scanner that reads a zero CRC (or a zero-filled region) as "never
//! written", and so either drops a valid acknowledged frame or walks into the zeroed
//! tail as if it held frames. Recovery must keep the frame (it is valid: CRC 0 is a
//! value like any other) and read the zeros after it as the segment's normal end
//! (preallocated space), where the next frame then goes.
//!
//! The frame is forced to CRC 0 by choosing the last 4 bytes of its record's value:
//! CRC32C is linear, so those bytes can steer the register to any final value.

use cafelog_engine::clock::ManualClock;
use cafelog_engine::format::{Codec, Codecs, FRAME_HEADER_LEN, envelope};
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig};

/// CRC32C's reflected polynomial.
const POLY: u32 = 0x82F6_3B78;
/// Where the CRC field sits in the frame header (FORMAT.md).
const CRC_POSITION: usize = 23;
const _: () = assert!(CRC_POSITION + 4 == FRAME_HEADER_LEN);
const WALL_MS: u64 = 1_700_000_000_000;

/// The register value that 32 zero-bit steps turn into `target` (one step inverted at
/// a time: a forward step sets bit 31 exactly when the bit it shifted out was 1).
fn unshift32(mut register: u32) -> u32 {
    for _ in 0..32 {
        register = if register & 0x8000_0000 != 0 {
            ((register ^ POLY) << 1) | 1
        } else {
            register << 1
        };
    }
    register
}

/// The CRC-covered bytes of a frame: header[2..23] and the stored payload.
fn covered(frame: &[u8]) -> Vec<u8> {
    let mut out = frame[2..CRC_POSITION].to_vec();
    out.extend_from_slice(&frame[FRAME_HEADER_LEN..]);
    out
}

/// A frame for offset 0 holding one record whose value ends in 4 chosen bytes, so that
/// the frame's CRC is 0. Returns the frame and the record's value.
fn frame_with_crc_zero() -> (Vec<u8>, Vec<u8>) {
    let mut value = b"crc-zero:----".to_vec();
    let mut record = Vec::new();
    envelope::encode(&mut record, b"key", WALL_MS, &value);
    let mut frame = Vec::new();
    Codecs::default()
        .encode_frame(Codec::None, 0, [record.as_slice()].into_iter(), &mut frame)
        .expect("encodes");
    let data = covered(&frame);
    // The register after everything but the last 4 bytes (crc32c returns it inverted).
    let register = !crc32c::crc32c(&data[..data.len() - 4]);
    // Final CRC 0 means a final register of !0.
    let forced = (register ^ unshift32(!0)).to_le_bytes();
    let end = frame.len();
    frame[end - 4..].copy_from_slice(&forced);
    frame[CRC_POSITION..FRAME_HEADER_LEN].copy_from_slice(&[0; 4]);
    let value_end = value.len();
    value[value_end - 4..].copy_from_slice(&forced);
    assert_eq!(
        crc32c::crc32c(&covered(&frame)),
        0,
        "the CRC is forced to 0"
    );
    (frame, value)
}

#[test]
fn a_valid_frame_whose_crc_is_zero_before_a_zero_filled_tail_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (frame, value) = frame_with_crc_zero();
    let mut segment = frame.clone();
    segment.extend_from_slice(&[0u8; 4096]);
    let segment_path = dir.path().join("00000000000000000000.log");
    std::fs::write(&segment_path, &segment).expect("write segment");
    std::fs::write(dir.path().join("hwm"), 1u64.to_be_bytes()).expect("write hwm");

    let clock = ManualClock::new(WALL_MS);
    let (log, report) = pollster::block_on(Log::open(
        StdFs,
        clock.clone(),
        dir.path(),
        LogConfig::default(),
    ))
    .expect("a CRC of 0 is valid: the partition opens");
    assert_eq!(report.truncation, None, "the zeros are the segment's end");
    assert_eq!((report.hwm, report.tail_offset), (1, 1));
    assert_eq!(report.recorded_loss_records, 0);
    assert_eq!(
        std::fs::metadata(&segment_path).expect("stat").len(),
        segment.len() as u64,
        "the zeros stay, as preallocated space"
    );
    let batch = pollster::block_on(log.read(0, 10)).expect("read");
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records.get(0).unwrap().offset, 0);
    assert_eq!(batch.records.get(0).unwrap().key, &b"key"[..]);
    assert_eq!(batch.records.get(0).unwrap().payload, value);

    // The next frame goes right after the CRC-0 frame, over the zeros.
    let range = pollster::block_on(log.commit([(&b"next"[..], &b"after"[..])])).expect("commit");
    assert_eq!(range, 1..2);
    pollster::block_on(log.close()).expect("close");
    drop(log);
    let on_disk = std::fs::read(&segment_path).expect("read segment");
    assert_eq!(
        &on_disk[..frame.len()],
        &frame[..],
        "the CRC-0 frame is intact"
    );
    let (log, report) =
        pollster::block_on(Log::open(StdFs, clock, dir.path(), LogConfig::default()))
            .expect("reopens");
    assert_eq!((report.truncation, report.tail_offset), (None, 2));
    let batch = pollster::block_on(log.read(0, 10)).expect("read");
    assert_eq!(batch.records.len(), 2);
    assert_eq!(batch.records.get(1).unwrap().payload, &b"after"[..]);
}
