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
    let s = summarise(&image, None);
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

/// An envelope around `payload` (key `k`).
fn record_of(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    envelope::encode(&mut out, b"k", 1_700_000_000_000, payload);
    out
}

/// One raw frame at `base` holding `records`.
fn raw_frame(codecs: &mut Codecs, base: u64, records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    codecs
        .encode_frame(
            Codec::None,
            base,
            records.iter().map(Vec::as_slice),
            &mut out,
        )
        .expect("encode");
    out
}

#[test]
fn a_raw_frame_zstd_would_shrink_is_noted_in_a_zstd_topic() {
    use cafelog_engine::log::LogConfig;
    use cafelog_sim::world::shape::ZstdSettings;
    let zstd = ZstdSettings::of(&LogConfig::default()).expect("zstd by default");
    let mut codecs = Codecs::default();
    // Three compressible records (312 payload bytes, over compress_min_bytes 256),
    // after a lone one under it; then a segment of one record of noise.
    let small = raw_frame(&mut codecs, 0, &[record(89)]);
    let big = raw_frame(&mut codecs, 1, &[record(89), record(89), record(89)]);
    let mut seg0 = small.clone();
    seg0.extend_from_slice(&big);
    let mut noise = 0x9e37_79b9_7f4a_7c15u64;
    let noisy: Vec<u8> = (0..300)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            noise as u8
        })
        .collect();
    let seg4 = raw_frame(&mut codecs, 4, &[record_of(&noisy)]);
    let image = DirImage {
        segments: vec![
            ("00000000000000000000.log".into(), seg0),
            ("00000000000000000004.log".into(), seg4),
        ],
        ..DirImage::default()
    };
    let s = summarise(&image, Some(zstd));
    let (position, payload, zstd_len) = s[0].compressible_raw.expect("the big frame");
    assert_eq!((position, payload), (small.len() as u64, 3 * 104));
    assert!(zstd_len < payload / 2, "{zstd_len}");
    assert_eq!(s[1].compressible_raw, None, "noise does not shrink");
    // The small frame alone is under compress_min_bytes; a raw topic asks nothing.
    let lone = DirImage {
        segments: vec![("00000000000000000000.log".into(), small)],
        ..DirImage::default()
    };
    assert_eq!(summarise(&lone, Some(zstd))[0].compressible_raw, None);
    assert!(
        summarise(&image, None)
            .iter()
            .all(|s| s.compressible_raw.is_none())
    );
}
