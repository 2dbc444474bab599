//! The `scan` fuzz target's body (`cafelog_engine::recovery::scan_fuzz_input`) run by
//! `cargo test`, so the target cannot rot between campaigns: over every committed
//! fixture, encoded in the target's input layout, and over arbitrary bytes. The
//! generated partitions of [`super::scan_props`] go through it too.

use super::fixtures::CASES;
use super::support::corpus_dir;
use cafelog_engine::fs::StdFs;
use cafelog_engine::recovery::{ScanDepth, ScanInput, scan_fuzz_input, scan_partition};
use proptest::prelude::*;

#[test]
fn every_fixture_is_a_fuzz_input_that_scans_as_the_fixture_does() {
    for case in CASES {
        let fixture = corpus_dir().join(case.name);
        let input = pollster::block_on(ScanInput::read_dir(&StdFs, &fixture))
            .unwrap()
            .unwrap_or_else(|| panic!("{}: the fuzz input layout cannot say it", case.name));
        let bytes = input.encode().unwrap();
        assert_eq!(ScanInput::decode(&bytes), input, "{}", case.name);

        let dir = tempfile::tempdir().unwrap();
        let [records, frames] =
            pollster::block_on(scan_fuzz_input(&StdFs, dir.path(), &bytes)).unwrap();
        let expected = |depth| pollster::block_on(scan_partition(&StdFs, &fixture, depth));
        assert_eq!(
            records,
            expected(ScanDepth::Records).unwrap(),
            "{}",
            case.name
        );
        assert_eq!(
            frames,
            expected(ScanDepth::Frames).unwrap(),
            "{}",
            case.name
        );
    }
}

#[test]
fn inputs_the_layout_cannot_say_are_refused_not_mangled() {
    let segment = |base| (base, vec![0u8; 4]);
    let too_many = ScanInput {
        hwm: None,
        segments: (0..5).map(segment).collect(),
    };
    assert_eq!(too_many.encode(), None);
    let long_hwm = ScanInput {
        hwm: Some(vec![0; 17]),
        segments: vec![segment(0)],
    };
    assert_eq!(long_hwm.encode(), None);
    let long_first = ScanInput {
        hwm: None,
        segments: vec![(0, vec![0; 65_536]), segment(9)],
    };
    assert_eq!(long_first.encode(), None);
    assert_eq!(ScanInput::default().encode(), None);
}

#[test]
fn the_largest_inputs_the_layout_can_say_round_trip() {
    // Four segments and a 16-byte `hwm` file: the bounds `encode` accepts, at the edge
    // (the mutation run found both edges untested).
    let input = ScanInput {
        hwm: Some((1..=16).collect()),
        segments: (0..4).map(|base| (base, vec![base; 3])).collect(),
    };
    let bytes = input
        .encode()
        .expect("four segments and 16 bytes of hwm fit");
    assert_eq!(ScanInput::decode(&bytes), input);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// What a fuzzer starts from: arbitrary bytes, most of them no partition at all.
    #[test]
    fn arbitrary_bytes_scan_without_panicking(data in prop::collection::vec(any::<u8>(), 0..600)) {
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(scan_fuzz_input(&StdFs, dir.path(), &data)).unwrap();
        let input = ScanInput::decode(&data);
        if let Some(bytes) = input.encode() {
            prop_assert_eq!(ScanInput::decode(&bytes), input);
        }
    }
}
