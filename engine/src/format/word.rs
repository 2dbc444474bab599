//! The 8-byte files: `hwm` and `consumer.offset`.
//!
//! ```text
//! offset 0   value   8B   big-endian unsigned
//! ```
//!
//! `hwm` is rewritten in place with one 8-byte write at position 0 and an fsync (one
//! sector, so it is atomic on the disks the contract covers); `consumer.offset` is
//! replaced by writing a temp file, fsyncing it, renaming it over and fsyncing the
//! directory. A missing `hwm` means 0. A file of any other length is not a value.

/// Length of the files.
pub const WORD_FILE_LEN: usize = 8;

/// The bytes of `value`.
pub fn encode(value: u64) -> [u8; WORD_FILE_LEN] {
    value.to_be_bytes()
}

/// The value of a file's full contents, or `None` when it is not exactly 8 bytes.
pub fn decode(bytes: &[u8]) -> Option<u64> {
    <[u8; WORD_FILE_LEN]>::try_from(bytes)
        .ok()
        .map(u64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_big_endian_and_exactly_eight_bytes() {
        assert_eq!(encode(0x0102), [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(decode(&encode(u64::MAX)), Some(u64::MAX));
        assert_eq!(decode(&[0; 7]), None);
        assert_eq!(decode(&[0; 9]), None);
    }
}
