//! The paired checks of the write side: a frame is checked after it is read back
//! (header, CRC, offsets; before it is written, by `format::frame::assert_frame_is`),
//! and the frames an fsync vouches for are contiguous.

use crate::format::frame::check_frame;
use crate::fs::{File, read_exact_at};
use crate::recovery::FrameEntry;

/// Re-reads one frame into `bytes` and checks its header and CRC (the paired check of
/// the write).
pub(super) async fn verify_frame<Fl: File>(
    file: &Fl,
    entry: &FrameEntry,
    bytes: &mut Vec<u8>,
) -> Result<(), String> {
    assert!(entry.frame_len > 0, "verify a frame, not nothing");
    // Stale bytes from an earlier frame are overwritten in full by the exact read below.
    bytes.resize(entry.frame_len as usize, 0);
    read_exact_at(file, bytes, entry.position)
        .await
        .map_err(|e| e.to_string())?;
    let (header, _) = check_frame(bytes).map_err(|e| e.to_string())?;
    if header.base_offset != entry.base_offset || header.record_count != entry.record_count {
        return Err(format!(
            "frame at {} reads back as offsets {}+{}, wrote {}+{}",
            entry.position,
            header.base_offset,
            header.record_count,
            entry.base_offset,
            entry.record_count
        ));
    }
    Ok(())
}

/// Frames of one segment in a row: each starts where the previous one ends, in offsets
/// and in bytes.
pub(super) fn assert_contiguous(frames: &[FrameEntry]) {
    for pair in frames.windows(2) {
        assert_eq!(
            pair[0].end_offset(),
            pair[1].base_offset,
            "frame offsets out of step"
        );
        assert_eq!(
            pair[0].end_position(),
            pair[1].position,
            "frame positions out of step"
        );
    }
}
