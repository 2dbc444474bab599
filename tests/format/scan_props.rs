//! Property tests of the scanner and of `dump` against damaged partitions.
//!
//! A random valid partition (random records in a few frames of mixed codecs, one or two
//! segments, a random `hwm`) is damaged by truncations, bit flips and appended garbage.
//! Then:
//! - the `scan` fuzz target's body returns: both scans assert their own consistency
//!   (`PartitionScan::assert_consistent`), and no valid frame holds more than was written;
//! - every record `dump --json` prints is below the HWM and has exactly the key, commit
//!   time and payload written at that offset; printed plus skipped records cover the
//!   visible range;
//! - undamaged, `dump` prints every record below the HWM.

use super::support::{cafelog_on, parse_dump_json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use cafelog_engine::format::frame::{Codec, Codecs};
use cafelog_engine::format::{envelope, layout, word};
use cafelog_engine::fs::StdFs;
use cafelog_engine::recovery::{ScanInput, scan_fuzz_input};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
struct Written {
    key: Vec<u8>,
    committed_at_ms: u64,
    payload: Vec<u8>,
}

#[derive(Clone, Debug)]
enum Damage {
    /// Cut segment `segment % n` to `at % (len + 1)` bytes.
    Truncate { segment: usize, at: usize },
    /// Flip bit `bit % (8 * len)` of segment `segment % n`.
    Flip { segment: usize, bit: usize },
    /// Append bytes to segment `segment % n`.
    Append { segment: usize, bytes: Vec<u8> },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(segment, at)| Damage::Truncate { segment, at }),
        (any::<usize>(), any::<usize>()).prop_map(|(segment, bit)| Damage::Flip { segment, bit }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(segment, bytes)| Damage::Append { segment, bytes }),
        // Garbage that starts with the magic, to exercise the hunt.
        (any::<usize>(), prop::collection::vec(any::<u8>(), 0..40)).prop_map(
            |(segment, mut bytes)| {
                bytes.splice(0..0, [0xCA, 0xFE]);
                Damage::Append { segment, bytes }
            }
        ),
    ]
}

fn written_record() -> impl Strategy<Value = Written> {
    (
        prop::collection::vec(any::<u8>(), 0..12),
        0u64..1 << 50,
        // Repetitive payloads so zstd frames really compress.
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..80),
            (any::<u8>(), 0usize..200).prop_map(|(b, n)| vec![b; n]),
        ],
    )
        .prop_map(|(key, committed_at_ms, payload)| Written {
            key,
            committed_at_ms,
            payload,
        })
}

/// A partition: records, frame sizes (each >= 1), per-frame codec, the frame index where
/// a second segment starts (if any), and the hwm (None: no file).
#[derive(Clone, Debug)]
struct Plan {
    records: Vec<Written>,
    frame_sizes: Vec<usize>,
    zstd: Vec<bool>,
    second_segment_at: Option<usize>,
    hwm: Option<u64>,
}

fn plan() -> impl Strategy<Value = Plan> {
    prop::collection::vec(1usize..6, 1..7)
        .prop_flat_map(|frame_sizes| {
            let total: usize = frame_sizes.iter().sum();
            let frames = frame_sizes.len();
            (
                prop::collection::vec(written_record(), total),
                Just(frame_sizes),
                prop::collection::vec(any::<bool>(), frames),
                prop::option::of(1..frames.max(2)),
                prop::option::of(0..total as u64 + 4),
            )
        })
        .prop_map(
            |(records, frame_sizes, zstd, second_segment_at, hwm)| Plan {
                second_segment_at: second_segment_at.filter(|at| *at < frame_sizes.len()),
                records,
                frame_sizes,
                zstd,
                hwm,
            },
        )
}

/// The files of `plan`'s partition.
fn build(plan: &Plan) -> BTreeMap<String, Vec<u8>> {
    let mut codecs = Codecs::default();
    let mut files = BTreeMap::new();
    let mut segment = layout::segment_file_name(0);
    let mut offset = 0u64;
    for (index, size) in plan.frame_sizes.iter().enumerate() {
        if plan.second_segment_at == Some(index) {
            segment = layout::segment_file_name(offset);
        }
        let records: Vec<Vec<u8>> = plan.records[offset as usize..offset as usize + size]
            .iter()
            .map(|r| {
                let mut out = Vec::new();
                envelope::encode(&mut out, &r.key, r.committed_at_ms, &r.payload);
                out
            })
            .collect();
        let codec = if plan.zstd[index] {
            Codec::Zstd
        } else {
            Codec::None
        };
        let out = files.entry(segment.clone()).or_insert_with(Vec::new);
        codecs
            .encode_frame(codec, offset, records.iter().map(Vec::as_slice), out)
            .unwrap();
        offset += *size as u64;
    }
    if let Some(hwm) = plan.hwm {
        files.insert(layout::HWM_FILE.to_string(), word::encode(hwm).to_vec());
    }
    files
}

fn apply(files: &mut BTreeMap<String, Vec<u8>>, damage: &[Damage]) {
    let segments: Vec<String> = files
        .keys()
        .filter(|n| n.ends_with(".log"))
        .cloned()
        .collect();
    for d in damage {
        match d {
            Damage::Truncate { segment, at } => {
                let bytes = files.get_mut(&segments[segment % segments.len()]).unwrap();
                bytes.truncate(at % (bytes.len() + 1));
            }
            Damage::Flip { segment, bit } => {
                let bytes = files.get_mut(&segments[segment % segments.len()]).unwrap();
                if !bytes.is_empty() {
                    let bit = bit % (bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
            }
            Damage::Append {
                segment,
                bytes: garbage,
            } => {
                files
                    .get_mut(&segments[segment % segments.len()])
                    .unwrap()
                    .extend_from_slice(garbage);
            }
        }
    }
}

/// Scans the partition through the fuzz target's body (which asserts the scan's own
/// invariants) and dumps it; checks the dump; returns the dumped offsets.
fn check(plan: &Plan, files: &BTreeMap<String, Vec<u8>>) -> Result<(Vec<u64>, u64), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let input = ScanInput {
        hwm: files.get(layout::HWM_FILE).cloned(),
        segments: files
            .iter()
            .filter_map(|(name, bytes)| {
                let base = layout::parse_segment_file_name(name)?;
                Some((u8::try_from(base).unwrap(), bytes.clone()))
            })
            .collect(),
    };
    let data = input.encode().unwrap();
    let [scan, _] = pollster::block_on(scan_fuzz_input(&StdFs, dir.path(), &data)).unwrap();
    prop_assert_eq!(&super::support::read_files(dir.path()), files);
    let hwm = scan.hwm();
    // Nothing beyond what was written can be in a valid frame.
    prop_assert!(scan.tail_offset <= plan.records.len() as u64);

    let run = cafelog_on("dump", dir.path(), &["--json"]);
    prop_assert_eq!(
        run.code,
        if scan.corruption.is_some() { 1 } else { 0 },
        "{}",
        run.stderr
    );
    let mut dumped = Vec::new();
    for line in parse_dump_json(&run.stdout) {
        let offset = line["offset"].as_u64().unwrap();
        prop_assert!(offset < hwm, "offset {} not below hwm {}", offset, hwm);
        let written = &plan.records[offset as usize];
        prop_assert_eq!(
            BASE64.decode(line["key_b64"].as_str().unwrap()).unwrap(),
            written.key.clone()
        );
        prop_assert_eq!(
            line["committed_at_ms"].as_u64(),
            Some(written.committed_at_ms)
        );
        prop_assert_eq!(
            BASE64
                .decode(line["payload_b64"].as_str().unwrap())
                .unwrap(),
            written.payload.clone()
        );
        prop_assert!(
            dumped.last().is_none_or(|last| *last < offset),
            "offsets ascend"
        );
        dumped.push(offset);
    }
    // Every visible offset was either printed or skipped (and the skip was reported).
    let skipped = scan.skipped_records();
    prop_assert_eq!(dumped.len() as u64 + skipped, hwm - scan.log_start);
    prop_assert_eq!(
        skipped > 0,
        run.stderr.contains("skipped"),
        "{}",
        run.stderr
    );
    Ok((dumped, hwm))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn undamaged_partitions_dump_every_record_below_the_hwm(plan in plan()) {
        let files = build(&plan);
        let (dumped, hwm) = check(&plan, &files)?;
        let total = plan.records.len() as u64;
        prop_assert_eq!(hwm, plan.hwm.unwrap_or(0).min(total));
        prop_assert_eq!(dumped, (0..hwm).collect::<Vec<_>>());
    }

    #[test]
    fn damaged_partitions_never_serve_wrong_bytes(
        plan in plan(),
        damage in prop::collection::vec(damage(), 1..4),
    ) {
        let mut files = build(&plan);
        apply(&mut files, &damage);
        check(&plan, &files)?;
    }
}
