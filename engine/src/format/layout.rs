//! Names on disk: the partition directory and its files.
//!
//! ```text
//! <root>/topics/<topic>/p%05d/           partition directory
//!     %020d.log                          segment, named by its first record's offset
//!     hwm                                8-byte big-endian high-watermark
//!     consumer.offset                    8-byte big-endian consumer frontier
//!     consumer.offset.tmp                frontier being replaced (temp file + rename)
//! ```

use std::path::{Path, PathBuf};

/// Suffix of segment files.
pub const SEGMENT_SUFFIX: &str = ".log";
/// Digits in a segment name.
pub const SEGMENT_NAME_DIGITS: usize = 20;
/// The persisted high-watermark file.
pub const HWM_FILE: &str = "hwm";
/// The persisted consumer frontier file.
pub const CONSUMER_OFFSET_FILE: &str = "consumer.offset";
/// The temp file the frontier is written to before it is renamed over.
pub const CONSUMER_OFFSET_TMP_FILE: &str = "consumer.offset.tmp";
/// Directory under the data root that holds topics.
pub const TOPICS_DIR: &str = "topics";

/// The file name of the segment whose first record has `base_offset`.
pub fn segment_file_name(base_offset: u64) -> String {
    format!("{base_offset:020}{SEGMENT_SUFFIX}")
}

/// The base offset a segment file name encodes, if `name` is a segment name.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != SEGMENT_NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The directory name of partition `index` (`p%05d`).
pub fn partition_dir_name(index: u32) -> String {
    format!("p{index:05}")
}

/// Parses a partition directory name.
pub fn parse_partition_dir_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix('p')?;
    if digits.len() < 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `<root>/topics/<topic>/p%05d`.
pub fn partition_dir(root: &Path, topic: &str, partition: u32) -> PathBuf {
    root.join(TOPICS_DIR)
        .join(topic)
        .join(partition_dir_name(partition))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip_and_sort_by_offset() {
        assert_eq!(segment_file_name(450_832), "00000000000000450832.log");
        assert_eq!(
            parse_segment_file_name("00000000000000450832.log"),
            Some(450_832)
        );
        assert_eq!(parse_segment_file_name("450832.log"), None);
        assert_eq!(parse_segment_file_name("0000000000000045083x.log"), None);
        assert_eq!(parse_segment_file_name("00000000000000450832.tmp"), None);
        assert!(segment_file_name(9) < segment_file_name(10));
    }

    #[test]
    fn partition_dirs_follow_the_spec() {
        assert_eq!(
            partition_dir(Path::new("/d"), "orders", 3),
            PathBuf::from("/d/topics/orders/p00003")
        );
        assert_eq!(parse_partition_dir_name("p00003"), Some(3));
        assert_eq!(parse_partition_dir_name("p123456"), Some(123_456));
        assert_eq!(parse_partition_dir_name("q00003"), None);
    }
}
