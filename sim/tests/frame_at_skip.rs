//! What the world records when the engine skips a frame at consume time: whether the
//! page cache holds that frame whole (`FrameAtSkip`), so `alarms_explained` can refuse a
//! skip of a good frame. A frame after an earlier bad one in its segment lies past the
//! valid extent the walk from byte 0 reaches; it is judged at the position the engine
//! says it read (helper-57), so a skip of it is not taken for damage.

use cafelog_sim::history::{EventKind, TopicPartition, encode_payload};
use cafelog_sim::world::damage::segment_headers;
use cafelog_sim::world::recorder::Shared;
use std::path::Path;

mod common;
use common::{DIR, SEGMENT, with_raw_log};

/// Three one-record frames at offsets 0, 1, 2 with a bit of frame 1's payload flipped
/// at rest; then the world's record of a skip of frame `skipped` as the engine reports
/// it (`position` given or not). Returns the `whole` it recorded.
fn whole_at_skip(skipped: u64, with_position: bool) -> bool {
    with_raw_log(1, |fs, log| async move {
        for o in 0..3u64 {
            let payload = encode_payload(o + 1, &[b'a'; 100]);
            log.commit([(&b"k"[..], &payload[..])])
                .await
                .expect("commit");
        }
        let image = fs.visible_bytes(Path::new(SEGMENT)).expect("segment");
        let frames: Vec<(u64, u64)> = segment_headers(&image, 0, 0)
            .map(|(at, h)| (h.base_offset, at))
            .collect();
        assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), [0, 1, 2]);
        // A byte in the middle of frame 1 (past its 27-byte header).
        fs.flip_bit_at(|_| true, Path::new(SEGMENT), frames[1].1 + 60, 3)
            .expect("flipped");
        let rec = Shared::new(fs.clone());
        let position = frames[skipped as usize].1;
        let tp = TopicPartition::new("t", 0);
        rec.lock().frame_at_skip(
            Path::new(DIR),
            &tp,
            skipped,
            1,
            with_position.then_some(position),
        );
        let events = rec.lock().history.events().to_vec();
        events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::FrameAtSkip { whole, .. } => Some(*whole),
                _ => None,
            })
            .expect("a FrameAtSkip")
    })
}

#[test]
fn a_whole_frame_past_a_bad_one_is_judged_where_the_engine_read_it() {
    // The flipped frame is not whole, wherever the engine says it read it.
    assert!(!whole_at_skip(1, true));
    // Frame 0 is in the valid extent: whole either way.
    assert!(whole_at_skip(0, false));
    assert!(whole_at_skip(0, true));
    // Frame 2 lies past the bad frame: the walk from byte 0 never reaches it, but at its
    // position it is whole.
    assert!(!whole_at_skip(2, false));
    assert!(whole_at_skip(2, true));
}
