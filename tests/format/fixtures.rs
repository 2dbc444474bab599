//! The committed partitions in `corpus/disk/<case>/` and their generator.
//!
//! The fixtures are binary files committed to the repository so that a change to the
//! format or to the scanner shows up against old bytes (STYLE.md: the format is stable).
//! They are also reproducible: [`committed_fixtures_match_the_generator`] checks the
//! committed bytes against [`CASES`], and rewrites them when
//! `CAFELOG_REGENERATE_FIXTURES=1` is set.

use super::support::{
    Builder, Files, corpus_dir, enveloped, read_files, set_codec_bits, write_files,
};
use cafelog_engine::format::envelope;
use cafelog_engine::format::frame::{Codec, FRAME_HEADER_LEN};

/// One fixture: how to build it and what it was built to show.
pub struct Case {
    pub name: &'static str,
    pub build: fn() -> Files,
    /// Exit code of `verify` (0 opens, 1 refuses).
    pub exit_code: i32,
    /// `R1`/`R2` when recovery truncates.
    pub rule: Option<&'static str>,
    pub hwm: u64,
    pub tail_offset: u64,
}

pub const CASES: &[Case] = &[
    Case {
        name: "clean_two_segments",
        build: clean_two_segments,
        exit_code: 0,
        rule: None,
        hwm: 9,
        tail_offset: 9,
    },
    Case {
        name: "mixed_codecs",
        build: mixed_codecs,
        exit_code: 0,
        rule: None,
        hwm: 14,
        tail_offset: 14,
    },
    Case {
        name: "torn_tail_mid_payload",
        build: torn_tail_mid_payload,
        exit_code: 0,
        rule: Some("R1"),
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "torn_tail_mid_header",
        build: torn_tail_mid_header,
        exit_code: 0,
        rule: Some("R1"),
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "zero_filled_tail",
        build: zero_filled_tail,
        exit_code: 0,
        rule: None,
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "zero_tail_in_sealed_segment",
        build: zero_tail_in_sealed_segment,
        exit_code: 0,
        rule: None,
        hwm: 9,
        tail_offset: 9,
    },
    Case {
        name: "flip_in_sealed_zero_tail",
        build: flip_in_sealed_zero_tail,
        exit_code: 0,
        rule: None,
        hwm: 9,
        tail_offset: 9,
    },
    Case {
        name: "flip_in_zero_tail",
        build: flip_in_zero_tail,
        exit_code: 0,
        rule: Some("R1"),
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "bit_flip_below_hwm",
        build: bit_flip_below_hwm,
        exit_code: 1,
        rule: None,
        hwm: 3,
        tail_offset: 3,
    },
    Case {
        name: "hole_above_hwm",
        build: hole_above_hwm,
        exit_code: 0,
        rule: Some("R2"),
        hwm: 3,
        tail_offset: 3,
    },
    Case {
        name: "hwm_ahead_of_tail",
        build: hwm_ahead_of_tail,
        exit_code: 0,
        rule: None,
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "hwm_behind_tail",
        build: hwm_behind_tail,
        exit_code: 0,
        rule: None,
        hwm: 4,
        tail_offset: 9,
    },
    Case {
        name: "hwm_missing",
        build: hwm_missing,
        exit_code: 0,
        rule: None,
        hwm: 0,
        tail_offset: 6,
    },
    Case {
        name: "hwm_malformed",
        build: hwm_malformed,
        exit_code: 1,
        rule: None,
        hwm: 0,
        tail_offset: 6,
    },
    Case {
        name: "unknown_codec",
        build: unknown_codec,
        exit_code: 1,
        rule: None,
        hwm: 3,
        tail_offset: 3,
    },
    Case {
        name: "bad_envelope_version",
        build: bad_envelope_version,
        exit_code: 0,
        rule: None,
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "misdirected_frame",
        build: misdirected_frame,
        exit_code: 1,
        rule: None,
        hwm: 3,
        tail_offset: 3,
    },
    Case {
        name: "segment_gap_below_hwm",
        build: segment_gap_below_hwm,
        exit_code: 1,
        rule: None,
        hwm: 6,
        tail_offset: 6,
    },
    Case {
        name: "frame_image_inside_torn_frame",
        build: frame_image_inside_torn_frame,
        exit_code: 0,
        rule: Some("R2"),
        hwm: 3,
        tail_offset: 3,
    },
];

/// Two segments, zstd frames, HWM at the tail: opens cleanly, nothing hidden.
fn clean_two_segments() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.hwm(9).files.clone()
}

/// zstd and none frames alternating, a one-record frame (stored raw although zstd was
/// asked for: it does not shrink), an empty key and payload, and a 200-byte key
/// (two-byte uvarint).
fn mixed_codecs() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 4);
    b.frame(Codec::None, 2);
    b.frame(Codec::Zstd, 1);
    let mut empty = Vec::new();
    envelope::encode(&mut empty, b"", 1_700_000_001_000, b"");
    let mut long_key = Vec::new();
    envelope::encode(&mut long_key, &[b'k'; 200], 1_700_000_001_001, b"long key");
    b.raw_frame(Codec::None, 7, &[empty, long_key]);
    b.next_offset = 9;
    b.frame(Codec::Zstd, 5);
    b.hwm(14).files.clone()
}

/// Three frames, the third cut in the middle of its payload (a crash mid-write): R1.
fn torn_tail_mid_payload() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    let torn = b.frame(Codec::Zstd, 3) as usize;
    let bytes = b.bytes();
    let keep = torn + FRAME_HEADER_LEN + (bytes.len() - torn - FRAME_HEADER_LEN) / 2;
    bytes.truncate(keep);
    b.hwm(6).files.clone()
}

/// Three frames, the third cut 10 bytes into its header: R1.
fn torn_tail_mid_header() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    let torn = b.frame(Codec::Zstd, 3) as usize;
    b.bytes().truncate(torn + 10);
    b.hwm(6).files.clone()
}

/// Two frames followed by a zeroed 4 KiB block: space the writer preallocated (or a
/// file that grew while its data never reached the disk). All zeros hold no frame, so
/// this is the segment's normal end: nothing is truncated, and the writer goes on
/// overwriting the zeros.
fn zero_filled_tail() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    b.bytes().extend_from_slice(&[0; 4096]);
    b.hwm(6).files.clone()
}

/// A sealed segment that still has its preallocated zeros (the process crashed before
/// the trim at sealing was durable), then the next segment, which starts where the
/// first one's frames end: nothing is lost, nothing is corrupt, and opening trims the
/// zeros. Without the zero-tail rule this would look like damage below the HWM with
/// valid frames after it (R3).
fn zero_tail_in_sealed_segment() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    b.bytes().extend_from_slice(&[0; 4096]);
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.hwm(9).files.clone()
}

/// A sealed segment left with its preallocated zeros, one bit flipped in them, then the
/// segment that starts at the first one's end offset. Not zeros, so not a zero tail; but
/// no frame follows in that segment and offsets continue in the next, so nothing is
/// missing: damaged unused space, trimmed at open. (Read as a bad region it would be
/// an R3 refusal below the HWM with every record intact.)
fn flip_in_sealed_zero_tail() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    let mut zeros = vec![0; 4096];
    zeros[3096] = 0x20;
    b.bytes().extend_from_slice(&zeros);
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.hwm(9).files.clone()
}

/// Preallocated zeros with one bit flipped in them: no longer all zero, so not the
/// normal end; no valid frame follows, so the garbage is a torn tail (R1).
fn flip_in_zero_tail() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    let mut zeros = vec![0; 4096];
    zeros[1000] = 0x04;
    b.bytes().extend_from_slice(&zeros);
    b.hwm(6).files.clone()
}

/// A bit flipped in the payload of the second frame, below the persisted HWM, with a
/// valid third frame after it: acknowledged data is damaged, R3 refuses.
fn bit_flip_below_hwm() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    let second = b.frame(Codec::Zstd, 3) as usize;
    b.frame(Codec::Zstd, 3);
    b.bytes()[second + FRAME_HEADER_LEN + 5] ^= 0x10;
    b.hwm(9).files.clone()
}

/// A bad frame at the persisted HWM with a valid frame after it in the same segment and
/// a whole segment after that: unsynced writes landed out of order, R2 truncates the
/// first segment at the bad frame and removes the second.
fn hole_above_hwm() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    let second = b.frame(Codec::Zstd, 2) as usize;
    b.frame(Codec::Zstd, 1);
    b.bytes()[second + FRAME_HEADER_LEN + 3] ^= 0x01;
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.hwm(3).files.clone()
}

/// The `hwm` file says 10 but only 6 records survived: R4 clamps to 6 and records the
/// loss of 4 acknowledged records.
fn hwm_ahead_of_tail() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    b.hwm(10).files.clone()
}

/// The `hwm` file says 4 and 9 records are on disk: 5 stay hidden (the hidden tail).
fn hwm_behind_tail() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 4);
    b.frame(Codec::Zstd, 5);
    b.hwm(4).files.clone()
}

/// No `hwm` file: the HWM is 0 and every record is hidden.
fn hwm_missing() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    b.files.clone()
}

/// A 7-byte `hwm` file (not a value): recovery refuses rather than guess.
fn hwm_malformed() -> Files {
    let mut files = hwm_missing();
    files.insert("hwm".to_string(), vec![0, 0, 0, 0, 0, 0, 6]);
    files
}

/// A CRC-valid frame with codec 5 (perhaps from a newer engine) between valid frames,
/// below the HWM: recovery refuses instead of discarding it.
fn unknown_codec() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    let odd = b.frame(Codec::None, 2) as usize;
    b.frame(Codec::Zstd, 2);
    set_codec_bits(b.bytes(), odd, 5);
    b.hwm(7).files.clone()
}

/// A valid frame holding a record with envelope version 0x03 (offset 4) and an empty
/// record (offset 5): both skipped and counted, the rest served.
fn bad_envelope_version() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    let mut wrong_version = enveloped(4);
    wrong_version[0] = 0x03;
    b.raw_frame(Codec::None, 3, &[enveloped(3), wrong_version, Vec::new()]);
    b.hwm(6).files.clone()
}

/// A CRC-valid frame for offsets 7..9 where offsets 3..5 belong (a misdirected write),
/// with a valid frame after it, below the HWM: R3 refuses.
fn misdirected_frame() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    let records: Vec<Vec<u8>> = (7..9).map(enveloped).collect();
    b.raw_frame(Codec::Zstd, 7, &records);
    b.next_offset = 5;
    b.frame(Codec::Zstd, 2);
    b.hwm(7).files.clone()
}

/// Segments for offsets 0..6 and 9..12: offsets 6..9 are missing below the HWM, R3.
fn segment_gap_below_hwm() -> Files {
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.frame(Codec::Zstd, 3);
    b.next_offset = 9;
    b.segment();
    b.frame(Codec::Zstd, 3);
    b.hwm(12).files.clone()
}

/// A torn last frame whose record payload is itself the image of a valid frame (a
/// message queue may carry anything). The hunt for a following valid frame finds the
/// image, so the scan reports R2 rather than R1; the outcome is the same truncation.
fn frame_image_inside_torn_frame() -> Files {
    let mut inner = Builder::new();
    inner.segment();
    inner.frame(Codec::None, 2);
    let image = inner.bytes().clone();
    let mut b = Builder::new();
    b.segment();
    b.frame(Codec::Zstd, 3);
    // The message is the image followed by a trailer, so that cutting the carrier
    // frame's last byte leaves the image whole.
    let mut message = image.clone();
    message.extend_from_slice(b"<trailer>");
    let mut carrier = Vec::new();
    envelope::encode(&mut carrier, b"frames", 1_700_000_002_000, &message);
    let torn = b.raw_frame(Codec::None, 3, &[carrier]) as usize;
    let len = b.bytes().len();
    b.bytes().truncate(len - 1);
    // Header, record length prefix, version, key length, key, commit time, then the image.
    let image_end = torn + FRAME_HEADER_LEN + 4 + 1 + 1 + 6 + 8 + image.len();
    assert!(image_end < len, "the image survives the tear");
    b.hwm(3).files.clone()
}

#[test]
fn committed_fixtures_match_the_generator() {
    let root = corpus_dir();
    let regenerate = std::env::var_os("CAFELOG_REGENERATE_FIXTURES").is_some_and(|v| v == "1");
    for case in CASES {
        let dir = root.join(case.name);
        let files = (case.build)();
        if regenerate {
            if dir.exists() {
                std::fs::remove_dir_all(&dir).unwrap();
            }
            std::fs::create_dir_all(&dir).unwrap();
            write_files(&dir, &files);
        }
        assert!(
            dir.is_dir(),
            "fixture {} missing: run with CAFELOG_REGENERATE_FIXTURES=1",
            case.name
        );
        let committed = read_files(&dir);
        assert_eq!(
            committed.keys().collect::<Vec<_>>(),
            files.keys().collect::<Vec<_>>(),
            "files of fixture {}",
            case.name
        );
        for (name, bytes) in &files {
            assert!(
                committed[name] == *bytes,
                "{}/{name} differs from the generator ({} vs {} bytes); regenerate with \
                 CAFELOG_REGENERATE_FIXTURES=1 if the change is intended",
                case.name,
                committed[name].len(),
                bytes.len()
            );
        }
    }
    // No stale fixture without a generator (and so without a snapshot).
    for entry in std::fs::read_dir(&root).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            let name = entry.file_name().into_string().unwrap();
            assert!(
                CASES.iter().any(|c| c.name == name),
                "corpus/disk/{name} has no generator"
            );
        }
    }
}

#[test]
fn case_names_are_unique() {
    let mut names: Vec<_> = CASES.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), CASES.len());
}
