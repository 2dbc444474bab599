//! The reference decoder and the engine's scanner on a simulated disk with a latent
//! sector: a frame with a byte the disk cannot read is bad to both, whatever that
//! byte was written as. The images the world decodes show unreadable bytes as the
//! engine's fill, so a frame whose unreadable bytes were written as the fill passes
//! its CRC there; only the unreadable ranges the image carries tell it apart.

use cafelog_engine::format::envelope;
use cafelog_engine::format::frame::{Codec, Codecs};
use cafelog_engine::fs::{File, Fs, OpenMode};
use cafelog_engine::recovery::{ScanDepth, TruncationRule, scan_partition};
use cafelog_sim::fs::{FaultOptions, SECTOR_SIZE, SimFs, UNREADABLE_FILL};
use cafelog_sim::reference::{self, Rule};
use cafelog_sim::world::disk;
use std::path::Path;

const DIR: &str = "/d/topic-0/p00000";
const SEGMENT: &str = "00000000000000000000.log";

/// One enveloped record committed at `at_ms` whose envelope is `len` bytes and ends
/// in `last`.
fn record(at_ms: u64, len: usize, last: u8) -> Vec<u8> {
    let payload_len = (0..len)
        .find(|&n| envelope::encoded_len(1, n) == len)
        .expect("an envelope of that length");
    let mut payload = vec![b'p'; payload_len];
    *payload.last_mut().expect("a byte") = last;
    let mut out = Vec::new();
    envelope::encode(&mut out, b"k", at_ms, &payload);
    assert_eq!(out.last(), Some(&last));
    out
}

/// Two one-record frames, the second ending one byte into the third sector with that
/// byte written as the fill; and where the second starts.
fn frames_ending_on_the_fill() -> (Vec<u8>, u64) {
    let mut codecs = Codecs::default();
    let mut image = Vec::new();
    codecs
        .encode_frame(
            Codec::None,
            0,
            [&record(1_000, 500, b'x')[..]].into_iter(),
            &mut image,
        )
        .expect("encodes");
    let second = image.len() as u64;
    // Header 27 bytes, length prefix 4, then the record: the frame ends at byte 1025.
    let len = (2 * SECTOR_SIZE + 1 - second) as usize - 27 - 4;
    codecs
        .encode_frame(
            Codec::None,
            1,
            [&record(1_001, len, UNREADABLE_FILL)[..]].into_iter(),
            &mut image,
        )
        .expect("encodes");
    assert_eq!(image.len() as u64, 2 * SECTOR_SIZE + 1);
    (image, second)
}

/// A disk holding the segment durably with its third sector unreadable (the seed is
/// drawn until the latent sector lands there).
fn disk_with_the_last_byte_unreadable(image: &[u8]) -> SimFs {
    for seed in 0..64 {
        let fs = SimFs::new(seed, FaultOptions::none()).expect("valid options");
        pollster::block_on(async {
            fs.create_dir_all(Path::new(DIR)).await.expect("mkdir");
            let file = fs
                .open(&Path::new(DIR).join(SEGMENT), OpenMode::CreateTruncate)
                .await
                .expect("create");
            file.write_at(image, 0).await.expect("write");
            file.sync_data().await.expect("sync");
            fs.sync_dir(Path::new(DIR)).await.expect("sync dir");
        });
        let sector = fs
            .latent_sector(|_| true, |_| None)
            .expect("a file to damage");
        if sector.position == 2 * SECTOR_SIZE {
            return fs;
        }
    }
    panic!("no seed below 64 put the latent sector on the third sector");
}

#[test]
fn a_frame_with_an_unreadable_byte_written_as_the_fill_is_cut_by_both() {
    let (image, second) = frames_ending_on_the_fill();
    let fs = disk_with_the_last_byte_unreadable(&image);
    let dir = Path::new(DIR);
    let durable = disk::durable_image(&fs, dir).expect("the directory is durable");
    assert_eq!(
        durable.segments[0].1, image,
        "the masked image reads as written: the unreadable byte was the fill"
    );

    let decoded = reference::decode(&durable);
    let scan = pollster::block_on(scan_partition(&fs, dir, ScanDepth::Frames)).expect("scan");
    let cut = scan.truncation.as_ref().expect("the engine cuts");
    assert_eq!(cut.rule, TruncationRule::TornTail);
    assert_eq!((cut.position, cut.offset), (second, 1));
    let bad = decoded.bad.as_ref().expect("the reference cuts too");
    assert_eq!(decoded.rule(), Rule::TornTail);
    assert_eq!(
        (bad.segment.as_str(), bad.position, bad.offset),
        (SEGMENT, second, 1)
    );
    assert_eq!(decoded.tail_offset, scan.tail_offset);

    // The same bytes without the ranges they carry: the frame passes its CRC.
    let mut blind = durable.clone();
    blind.unreadable.clear();
    assert_eq!(reference::decode(&blind).rule(), Rule::Clean);
}

#[test]
fn a_reader_holds_no_record_of_a_frame_it_cannot_read() {
    let (image, _) = frames_ending_on_the_fill();
    let fs = disk_with_the_last_byte_unreadable(&image);
    let durable = disk::durable_image(&fs, Path::new(DIR)).expect("durable");
    let readable = durable.readable(SEGMENT, &durable.segments[0].1);
    let times = |image| -> Vec<(u64, u64)> {
        reference::held_records(SEGMENT, 0, image)
            .iter()
            .map(|r| (r.offset, r.committed_at_ms))
            .collect()
    };
    assert_eq!(times(readable), [(0, 1_000)]);
    let blind = reference::frame::Readable::whole(readable.bytes);
    assert_eq!(
        times(blind),
        [(0, 1_000), (1, 1_001)],
        "the bytes alone hold both"
    );
    let (extent, damaged) = reference::partition::walk_segment(SEGMENT, 0, readable, None);
    assert!(damaged);
    assert_eq!(extent.end_offset, 1, "only the first frame is kept");
    // The reader's frame checks, one by one: the second frame's CRC holds over the
    // bytes, but a byte of it does not read, and no hunt finds it.
    let second = extent.valid_len;
    assert!(reference::frame::valid_at(readable.bytes, second).is_some());
    assert!(readable.unreadable_in(second, 1025 - second));
    assert_eq!(readable.valid_at(second), None);
    assert_eq!(readable.hunt(0), None);
    assert_eq!(blind.hunt(0), Some(second));
}
