//! The reference decoder against the committed disk fixtures (`corpus/disk/`): on
//! every fixture it must agree with the engine's scanner on every field both report,
//! and on a few it must give the outcome FORMAT.md states, independently of either.
#![allow(
    clippy::disallowed_methods,
    reason = "host files: the committed fixtures, and temp dirs for the engine's own scanner"
)]

use cafelog_engine::fs::StdFs;
use cafelog_engine::recovery::{PartitionScan, ScanDepth, TruncationRule, scan_partition};
use cafelog_sim::reference::{DirImage, Rule, decode};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/disk")
}

fn image(dir: &Path) -> DirImage {
    let mut image = DirImage::default();
    for entry in std::fs::read_dir(dir).expect("fixture dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(entry.path()).expect("read");
        if name == "hwm" {
            image.hwm = Some(bytes);
        } else if name.ends_with(".log") {
            image.segments.push((name, bytes));
        }
    }
    image
}

fn engine_rule(scan: &PartitionScan) -> Rule {
    match (&scan.corruption, scan.truncation.as_ref().map(|t| t.rule)) {
        (Some(_), _) => Rule::Refuse,
        (None, Some(TruncationRule::TornTail)) => Rule::TornTail,
        (None, Some(TruncationRule::HoleAboveHwm)) => Rule::Hole,
        (None, None) => Rule::Clean,
    }
}

#[test]
fn the_reference_decoder_agrees_with_the_scanner_on_every_fixture() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("corpus/disk")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 18, "fixtures found: {names:?}");
    for dir in names {
        let what = dir.display().to_string();
        let scan =
            pollster::block_on(scan_partition(&StdFs, &dir, ScanDepth::Frames)).expect("scan");
        let decoded = decode(&image(&dir));
        assert_eq!(decoded.rule(), engine_rule(&scan), "{what}: rule");
        assert_eq!(decoded.persisted_hwm, scan.persisted_hwm, "{what}: P");
        assert_eq!(decoded.log_start, scan.log_start, "{what}: log start");
        assert_eq!(decoded.tail_offset, scan.tail_offset, "{what}: tail");
        assert_eq!(decoded.hwm(), scan.hwm(), "{what}: hwm");
        assert_eq!(
            decoded.recorded_loss(),
            scan.recorded_loss_records(),
            "{what}"
        );
        assert_eq!(decoded.hidden(), scan.hidden_records(), "{what}: hidden");
        assert_eq!(
            decoded.last_committed_at_ms, scan.last_committed_at_ms,
            "{what}: last commit time"
        );
        if let Some(t) = &scan.truncation {
            let bad = decoded.bad.as_ref().expect("a bad region");
            assert_eq!(
                (bad.segment.as_str(), bad.position, bad.offset),
                (t.segment.as_str(), t.position, t.offset),
                "{what}: where the cut starts"
            );
        }
        if let Some(c) = &scan.corruption
            && !decoded.hwm_malformed
        {
            let bad = decoded.bad.as_ref().expect("a bad region");
            assert_eq!(
                (bad.segment.as_str(), bad.position),
                (c.segment.as_str(), c.position),
                "{what}: where the refusal points"
            );
        }
        assert_eq!(
            decoded.extents.len(),
            scan.segments.len(),
            "{what}: extents"
        );
        for (e, s) in decoded.extents.iter().zip(&scan.segments) {
            assert_eq!(
                (&e.name, e.valid_len, e.end_offset, e.zero_tail, e.junk_tail),
                (
                    &s.file_name,
                    s.valid_len,
                    s.end_offset,
                    s.zero_tail,
                    s.junk_tail
                ),
                "{what}: extent"
            );
            let frames: Vec<(u64, u64, u32)> = e
                .frames
                .iter()
                .map(|f| (f.position, f.base_offset, f.record_count))
                .collect();
            let scanned: Vec<(u64, u64, u32)> = s
                .frames
                .iter()
                .map(|f| (f.position, f.base_offset, f.record_count))
                .collect();
            assert_eq!(frames, scanned, "{what}: frames");
        }
    }
}

#[test]
fn the_reference_decoder_gives_the_documented_outcomes() {
    let outcome = |name: &str| {
        let d = decode(&image(&fixtures().join(name)));
        (d.rule(), d.hwm(), d.tail_offset, d.recorded_loss())
    };
    // R1: nothing valid after the torn frame; R2: valid frames after a bad one above P;
    // R3: the same below P; R4: P above the tail is clamped and the loss recorded.
    assert_eq!(outcome("torn_tail_mid_payload").0, Rule::TornTail);
    assert_eq!(outcome("hole_above_hwm").0, Rule::Hole);
    assert_eq!(outcome("bit_flip_below_hwm").0, Rule::Refuse);
    assert_eq!(outcome("segment_gap_below_hwm").0, Rule::Refuse);
    assert_eq!(outcome("hwm_malformed").0, Rule::Refuse);
    let (rule, hwm, tail, lost) = outcome("hwm_ahead_of_tail");
    assert_eq!(rule, Rule::Clean);
    assert!(
        hwm == tail && lost > 0,
        "clamped to the tail, loss recorded"
    );
    // Zeros after the last frame are preallocated space, not a torn tail.
    assert_eq!(outcome("zero_filled_tail").0, Rule::Clean);
    assert_eq!(outcome("flip_in_zero_tail").0, Rule::TornTail);
    // A CRC-valid frame at the wrong offset is bad.
    assert_ne!(outcome("misdirected_frame").0, Rule::Clean);
}

#[test]
fn a_segments_held_records_are_its_readable_ones_in_offset_order() {
    use cafelog_engine::format::envelope;
    use cafelog_engine::format::frame::{Codec, Codecs};
    let mut codecs = Codecs::new(1, 0);
    let mut image = Vec::new();
    let mut frame = |codec, base: u64, n: u64, image: &mut Vec<u8>| {
        let records: Vec<Vec<u8>> = (base..base + n)
            .map(|o| {
                let mut out = Vec::new();
                envelope::encode(&mut out, b"k", 1_000 + o, format!("p{o}").as_bytes());
                out
            })
            .collect();
        codecs
            .encode_frame(codec, base, records.iter().map(Vec::as_slice), image)
            .expect("encodes");
    };
    frame(Codec::None, 5, 2, &mut image);
    frame(Codec::Zstd, 7, 3, &mut image);
    let held = |image: &[u8]| -> Vec<(u64, u64, Vec<u8>)> {
        cafelog_sim::reference::held_records(
            "00000000000000000005.log",
            5,
            cafelog_sim::reference::frame::Readable::whole(image),
        )
        .into_iter()
        .map(|r| (r.offset, r.committed_at_ms, r.payload))
        .collect()
    };
    let whole: Vec<(u64, u64, Vec<u8>)> = (5..10)
        .map(|o| (o, 1_000 + o, format!("p{o}").into_bytes()))
        .collect();
    assert_eq!(held(&image), whole);
    // Preallocated zeros add nothing; a frame at the wrong offset (a misdirected
    // write) is no record of this segment.
    let mut padded = image.clone();
    padded.extend([0u8; 64]);
    assert_eq!(held(&padded), whole);
    let mut misplaced = image.clone();
    frame(Codec::None, 20, 1, &mut misplaced);
    assert_eq!(held(&misplaced), whole);
    // A flipped byte in the second frame leaves only the first.
    let mut flipped = image.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x10;
    assert_eq!(held(&flipped), whole[..2].to_vec());
    frame(Codec::None, 10, 1, &mut image);
    assert_eq!(held(&image).len(), 6, "the next offset continues it");
}

mod props {
    //! Random partitions, damaged: the reference decoder and the scanner agree.
    use super::*;
    use cafelog_engine::format::envelope;
    use cafelog_engine::format::frame::{Codec, Codecs};
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Damage {
        Flip { segment: usize, bit: usize },
        Truncate { segment: usize, at: usize },
        Append { segment: usize, bytes: Vec<u8> },
        Zeros { segment: usize, len: usize },
    }

    fn damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            (any::<usize>(), any::<usize>())
                .prop_map(|(segment, bit)| Damage::Flip { segment, bit }),
            (any::<usize>(), any::<usize>())
                .prop_map(|(segment, at)| Damage::Truncate { segment, at }),
            (any::<usize>(), prop::collection::vec(any::<u8>(), 1..48)).prop_map(
                |(segment, mut bytes)| {
                    bytes.splice(0..0, [0xCA, 0xFE]);
                    Damage::Append { segment, bytes }
                }
            ),
            (any::<usize>(), 1usize..600).prop_map(|(segment, len)| Damage::Zeros { segment, len }),
        ]
    }

    /// Frames of 1-5 records (`sizes`), codecs alternating by `zstd`, split into two
    /// segments at frame `split` (if inside), an `hwm` of `hwm` (None: no file).
    fn build(sizes: &[usize], zstd: &[bool], split: usize, hwm: Option<u64>) -> DirImage {
        let mut codecs = Codecs::new(1, 0);
        let mut segments: Vec<(String, Vec<u8>)> = Vec::new();
        let mut offset = 0u64;
        for (i, size) in sizes.iter().enumerate() {
            if i == 0 || i == split {
                segments.push((format!("{offset:020}.log"), Vec::new()));
            }
            let records: Vec<Vec<u8>> = (0..*size)
                .map(|r| {
                    let mut out = Vec::new();
                    let body = vec![b'a' + (r % 7) as u8; 20 + 30 * r];
                    envelope::encode(&mut out, b"k", 1_000 + offset + r as u64, &body);
                    out
                })
                .collect();
            let codec = if zstd[i % zstd.len()] {
                Codec::Zstd
            } else {
                Codec::None
            };
            let last = segments.last_mut().expect("a segment");
            codecs
                .encode_frame(
                    codec,
                    offset,
                    records.iter().map(Vec::as_slice),
                    &mut last.1,
                )
                .expect("encodes");
            offset += *size as u64;
        }
        DirImage {
            segments,
            hwm: hwm.map(|h| h.min(offset + 2).to_be_bytes().to_vec()),
            ..DirImage::default()
        }
    }

    fn apply(image: &mut DirImage, damage: &Damage) {
        let n = image.segments.len();
        match damage {
            Damage::Flip { segment, bit } => {
                let bytes = &mut image.segments[segment % n].1;
                if !bytes.is_empty() {
                    let bit = bit % (8 * bytes.len());
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
            }
            Damage::Truncate { segment, at } => {
                let bytes = &mut image.segments[segment % n].1;
                let at = at % (bytes.len() + 1);
                bytes.truncate(at);
            }
            Damage::Append { segment, bytes } => image.segments[segment % n].1.extend(bytes),
            Damage::Zeros { segment, len } => image.segments[segment % n]
                .1
                .extend(std::iter::repeat_n(0, *len)),
        }
    }

    fn write(image: &DirImage, dir: &Path) {
        for (name, bytes) in &image.segments {
            std::fs::write(dir.join(name), bytes).expect("write segment");
        }
        if let Some(hwm) = &image.hwm {
            std::fs::write(dir.join("hwm"), hwm).expect("write hwm");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(192))]
        #[test]
        fn reference_and_scanner_agree_on_damaged_partitions(
            sizes in prop::collection::vec(1usize..6, 1..7),
            zstd in prop::collection::vec(any::<bool>(), 1..4),
            split in 0usize..8,
            hwm in prop::option::of(0u64..40),
            damages in prop::collection::vec(damage(), 0..3),
        ) {
            let mut image = build(&sizes, &zstd, split, hwm);
            for d in &damages {
                apply(&mut image, d);
            }
            let dir = tempfile::tempdir().expect("tempdir");
            write(&image, dir.path());
            let scan = pollster::block_on(scan_partition(&StdFs, dir.path(), ScanDepth::Frames))
                .expect("scan");
            let decoded = decode(&image);
            prop_assert_eq!(decoded.rule(), engine_rule(&scan));
            prop_assert_eq!(decoded.tail_offset, scan.tail_offset);
            prop_assert_eq!(decoded.hwm(), scan.hwm());
            prop_assert_eq!(decoded.recorded_loss(), scan.recorded_loss_records());
            prop_assert_eq!(decoded.last_committed_at_ms, scan.last_committed_at_ms);
            let extents: Vec<(u64, u64, u64, u64)> = decoded
                .extents
                .iter()
                .map(|e| (e.valid_len, e.end_offset, e.zero_tail, e.junk_tail))
                .collect();
            let scanned: Vec<(u64, u64, u64, u64)> = scan
                .segments
                .iter()
                .map(|s| (s.valid_len, s.end_offset, s.zero_tail, s.junk_tail))
                .collect();
            prop_assert_eq!(extents, scanned);
        }
    }
}
