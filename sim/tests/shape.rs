//! The world's reading of what the engine wrote (`world::shape::summarise`), on images
//! built with the engine's own frame encoder: every field the `layout` checker judges.

use cafelog_engine::format::{Codec, Codecs, envelope};
use cafelog_sim::reference::DirImage;
use cafelog_sim::world::shape::summarise;

/// An envelope of `len` payload bytes (11 bytes of envelope around it, key `k`).
fn record(len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    envelope::encode(&mut out, b"k", 1_700_000_000_000, &vec![b'x'; len]);
    out
}

/// One frame at `base` of `records` records of `len` payload bytes.
fn frame(codecs: &mut Codecs, codec: Codec, base: u64, records: usize, len: usize) -> Vec<u8> {
    let records: Vec<Vec<u8>> = (0..records).map(|_| record(len)).collect();
    let mut out = Vec::new();
    codecs
        .encode_frame(codec, base, records.iter().map(Vec::as_slice), &mut out)
        .expect("encode");
    out
}

#[test]
fn segments_are_summarised_from_their_valid_frames() {
    let mut codecs = Codecs::default();
    // Segment 0: a raw frame of 1 record, a zstd frame of 3, then 16 zeros.
    let first = frame(&mut codecs, Codec::None, 0, 1, 89);
    let second = frame(&mut codecs, Codec::Zstd, 1, 3, 89);
    let mut seg0 = first.clone();
    seg0.extend_from_slice(&second);
    let valid = seg0.len() as u64;
    seg0.extend_from_slice(&[0; 16]);
    // Segment 4: a raw frame of 2 records, then a damaged frame.
    let third = frame(&mut codecs, Codec::None, 4, 2, 10);
    let mut bad = frame(&mut codecs, Codec::None, 6, 1, 10);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let mut seg4 = third.clone();
    seg4.extend_from_slice(&bad);
    // Segment 7, after the damage: still walked and summarised.
    let seg7 = frame(&mut codecs, Codec::None, 7, 1, 10);
    let image = DirImage {
        segments: vec![
            ("00000000000000000004.log".into(), seg4),
            ("00000000000000000000.log".into(), seg0),
            ("00000000000000000007.log".into(), seg7.clone()),
        ],
        ..DirImage::default()
    };
    let s = summarise(&image);
    assert_eq!(s.len(), 3);
    assert_eq!((s[0].base, s[0].end), (0, 4));
    assert_eq!((s[0].valid_len, s[0].file_len), (valid, valid + 16));
    assert_eq!(s[0].frames, 2);
    assert_eq!(s[0].first_frame_len, first.len() as u64);
    assert_eq!(s[0].records_max, 3);
    assert_eq!(s[0].multi_record_bytes_max, 3 * 100);
    assert_eq!(s[0].zstd_payload_min, Some(3 * 104));
    assert!(!s[0].damaged);
    assert_eq!((s[1].base, s[1].end, s[1].frames), (4, 6, 1));
    assert_eq!(s[1].valid_len, third.len() as u64);
    assert_eq!(s[1].multi_record_bytes_max, 2 * 21);
    assert_eq!(s[1].zstd_payload_min, None);
    assert!(s[1].damaged);
    assert_eq!((s[2].base, s[2].end, s[2].frames), (7, 8, 1));
    assert_eq!(s[2].valid_len, seg7.len() as u64);
    assert!(!s[2].damaged);
}
