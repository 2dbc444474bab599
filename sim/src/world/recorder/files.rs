//! What a path on the simulated disk is: a partition's segment, `hwm`, `consumer.offset`,
//! the WAL, a directory.

use super::*;

/// The components of `path` after its `/data/topics/` (the topic's name first).
fn under_topics(path: &Path) -> Option<Vec<&str>> {
    let mut parts = path
        .components()
        .map(|c| c.as_os_str().to_str().unwrap_or(""));
    parts.by_ref().find(|part| *part == layout::TOPICS_DIR)?;
    Some(parts.collect())
}

/// The partition a path inside `/data/topics/<topic>/p%05d/` belongs to.
pub fn partition_of(path: &Path) -> Option<TopicPartition> {
    match under_topics(path)?.as_slice() {
        [topic, dir, ..] => Some(TopicPartition::new(
            *topic,
            layout::parse_partition_dir_name(dir)?,
        )),
        _ => None,
    }
}

/// The topic whose directory `/data/topics/<topic>/` holds a file at `path` outside any
/// partition's directory (its `topic.conf`, say).
pub(super) fn topic_file_of(path: &Path) -> Option<String> {
    match under_topics(path)?.as_slice() {
        [topic, _file] => Some((*topic).to_owned()),
        _ => None,
    }
}

/// What kind of file a path names.
pub fn file_kind(path: &Path) -> FileKind {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(layout::SEGMENT_SUFFIX) {
        FileKind::Segment
    } else if name == layout::HWM_FILE {
        FileKind::Hwm
    } else if name.starts_with(layout::CONSUMER_OFFSET_FILE) {
        FileKind::ConsumerOffset
    } else if path.components().any(|c| c.as_os_str() == "wal") {
        FileKind::Wal
    } else {
        FileKind::Other
    }
}

/// The partition and base of the segment file at `path`, if it is one.
pub(super) fn segment_of(path: &Path) -> Option<(TopicPartition, u64)> {
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(layout::parse_segment_file_name)?;
    Some((partition_of(path)?, base))
}
