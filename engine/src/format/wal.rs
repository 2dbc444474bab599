//! The ingress WAL's bytes: segment names, records, salvage entries and the checkpoint
//! file. `store/wal` writes and reads them; `FORMAT.md` holds the same tables.
//!
//! ```text
//! <root>/wal/%020d.wal   frames (format/frame/, codec none); a frame's baseOffset is
//!                        the seq of its first entry, and each entry is a record:
//!
//! record      topicLen    uvarint  >= 1 (a topic name is never empty)
//!             topic       topicLen bytes, UTF-8
//!             partition   4B       big-endian
//!             keyLen      uvarint
//!             key         keyLen bytes
//!             payload     the rest
//!
//! link        mark        1B       0x00 (where a record has topicLen >= 1)
//!             root        8B       big-endian seq of the entry it stands for (< seq);
//!                                  the top bit set marks a revival (see `Link`)
//!             then a record's fields
//!
//! <root>/wal/checkpoint: per partition, in (topic, partition) order,
//!             topicLen    2B       big-endian
//!             topic       topicLen bytes, UTF-8
//!             partition   4B       big-endian
//!             seq         8B       big-endian: replay starts here
//!             offset      8B       big-endian: where the copies of those entries begin
//!         then once, crc32c  4B    big-endian, Castagnoli over every byte before it
//! ```
//!
//! Invariants kept here:
//! - a decoder never reads past its input and answers `None` for anything malformed
//!   (a record with an empty topic, a link without its root, a checkpoint whose CRC
//!   does not match or whose last entry is short);
//! - what the encoders write, the decoders read back unchanged (tested below).

#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use crate::format::envelope::{get_uvarint, put_uvarint};
use std::collections::BTreeMap;

/// A partition's identity: topic and partition index.
pub type PartitionId = (String, u32);

/// File name suffix of WAL segments.
pub const WAL_SUFFIX: &str = ".wal";
/// The checkpoint file.
pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";

/// Where a partition's replay starts: entries with `seq` at or above this were maybe not
/// yet below the persisted HWM; the records at offsets from `offset` are copies of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Checkpoint {
    pub seq: u64,
    pub offset: u64,
}

/// The first byte of a salvage entry's record ([`Link`]), where a plain record has its
/// topic name's length (never 0).
pub const LINK_MARK: u8 = 0x00;
/// Length of a link's root seq.
const LINK_ROOT_LEN: usize = 8;
/// The bit of a link's root word that marks a revival. A copy's word is its root seq as
/// it was before revivals existed, so every WAL written then reads the same; no seq
/// reaches this bit.
const REVIVAL_BIT: u64 = 1 << 63;

/// How a salvage entry stands for an earlier entry, its *root*: the replay commits one
/// record for a root and every entry linked to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Link {
    /// A second copy of an entry past its partition's checkpoint. Once the checkpoint
    /// passes the root, the copy stands for a record below it and is skipped.
    Copy(u64),
    /// A record whose own entry the checkpoint had already passed (spent) when the
    /// salvage wrote it: replayed like a fresh entry while the revival itself is past
    /// the checkpoint. Linked so that a replay of every entry (an unreadable
    /// checkpoint) commits the spent entry and its revivals once, not once each.
    Revival(u64),
}

impl Link {
    /// The seq of the entry this one stands for.
    pub fn root(self) -> u64 {
        match self {
            Link::Copy(root) | Link::Revival(root) => root,
        }
    }
}
/// Length of a partition index (records and checkpoint entries).
const PARTITION_LEN: usize = 4;
/// Lengths of a checkpoint entry's fields and of the file's CRC trailer.
const CHECKPOINT_TOPIC_LEN_LEN: usize = 2;
const CHECKPOINT_SEQ_LEN: usize = 8;
const CHECKPOINT_OFFSET_LEN: usize = 8;
const CHECKPOINT_CRC_LEN: usize = 4;

/// The file name of the WAL segment whose first entry has seq `base`.
pub fn segment_name(base: u64) -> String {
    format!("{base:020}{WAL_SUFFIX}")
}

/// The base sequence number a WAL segment file name carries (`None` for other names).
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(WAL_SUFFIX)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Encodes a WAL record; `link` makes it a salvage entry standing for an earlier one.
pub fn encode_record(
    partition: &PartitionId,
    key: &[u8],
    payload: &[u8],
    link: Option<Link>,
) -> Vec<u8> {
    assert!(!partition.0.is_empty(), "a topic name is never empty");
    // Two uvarints of at most 10 bytes each, beside the fixed fields.
    let fixed = 1 + LINK_ROOT_LEN + PARTITION_LEN + 2 * 10;
    let mut out = Vec::with_capacity(partition.0.len() + key.len() + payload.len() + fixed);
    if let Some(link) = link {
        assert!(
            link.root() < REVIVAL_BIT,
            "a seq never reaches the revival bit"
        );
        let word = match link {
            Link::Copy(root) => root,
            Link::Revival(root) => root | REVIVAL_BIT,
        };
        out.push(LINK_MARK);
        out.extend_from_slice(&word.to_be_bytes());
    }
    put_uvarint(&mut out, partition.0.len() as u64);
    out.extend_from_slice(partition.0.as_bytes());
    out.extend_from_slice(&partition.1.to_be_bytes());
    put_uvarint(&mut out, key.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    debug_assert_eq!(
        decode_record(&out),
        Some((partition.clone(), key, payload, link)),
        "a WAL record reads back as written"
    );
    out
}

/// A decoded WAL record: partition, key, payload, and the entry a salvage entry stands
/// for.
pub type DecodedRecord<'a> = (PartitionId, &'a [u8], &'a [u8], Option<Link>);

/// Decodes a WAL record; `None` when malformed.
pub fn decode_record(bytes: &[u8]) -> Option<DecodedRecord<'_>> {
    let (link, bytes) = match bytes.split_first()? {
        (&LINK_MARK, rest) => {
            let (word, rest) = rest.split_at_checked(LINK_ROOT_LEN)?;
            let word = u64::from_be_bytes(word.try_into().ok()?);
            let link = if word & REVIVAL_BIT == 0 {
                Link::Copy(word)
            } else {
                Link::Revival(word & !REVIVAL_BIT)
            };
            (Some(link), rest)
        }
        _ => (None, bytes),
    };
    let (topic_len, used) = get_uvarint(bytes)?;
    if topic_len == 0 {
        return None;
    }
    let rest = bytes.get(used..)?;
    let (topic, rest) = rest.split_at_checked(usize::try_from(topic_len).ok()?)?;
    let topic = std::str::from_utf8(topic).ok()?.to_string();
    let (partition, rest) = rest.split_at_checked(PARTITION_LEN)?;
    let partition = u32::from_be_bytes(partition.try_into().ok()?);
    let (key_len, used) = get_uvarint(rest)?;
    let rest = rest.get(used..)?;
    let (key, payload) = rest.split_at_checked(usize::try_from(key_len).ok()?)?;
    Some(((topic, partition), key, payload, link))
}

/// Encodes the checkpoint file body with its CRC trailer.
pub fn encode_checkpoint(checkpoint: &BTreeMap<PartitionId, Checkpoint>) -> Vec<u8> {
    let mut out = Vec::new();
    for ((topic, partition), Checkpoint { seq, offset }) in checkpoint {
        let len = u16::try_from(topic.len()).expect("topic names are bounded");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
        out.extend_from_slice(&partition.to_be_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    // Checked before it is written: a checkpoint is small and written rarely.
    assert_eq!(
        decode_checkpoint(&out).as_ref(),
        Some(checkpoint),
        "the checkpoint reads back as written"
    );
    out
}

/// Decodes the checkpoint file body; `None` when its CRC or any entry is bad.
pub fn decode_checkpoint(bytes: &[u8]) -> Option<BTreeMap<PartitionId, Checkpoint>> {
    let (mut body, crc) = bytes.split_at_checked(bytes.len().checked_sub(CHECKPOINT_CRC_LEN)?)?;
    if crc32c::crc32c(body).to_be_bytes() != crc {
        return None;
    }
    let mut out = BTreeMap::new();
    while !body.is_empty() {
        let (len, rest) = body.split_at_checked(CHECKPOINT_TOPIC_LEN_LEN)?;
        let len = u16::from_be_bytes(len.try_into().ok()?) as usize;
        let (topic, rest) = rest.split_at_checked(len)?;
        let (partition, rest) = rest.split_at_checked(PARTITION_LEN)?;
        let (seq, rest) = rest.split_at_checked(CHECKPOINT_SEQ_LEN)?;
        let (offset, rest) = rest.split_at_checked(CHECKPOINT_OFFSET_LEN)?;
        out.insert(
            (
                std::str::from_utf8(topic).ok()?.to_string(),
                u32::from_be_bytes(partition.try_into().ok()?),
            ),
            Checkpoint {
                seq: u64::from_be_bytes(seq.try_into().ok()?),
                offset: u64::from_be_bytes(offset.try_into().ok()?),
            },
        );
        body = rest;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pid(p: u32) -> PartitionId {
        ("orders".to_string(), p)
    }

    #[test]
    fn records_and_checkpoints_round_trip() {
        let record = encode_record(&pid(3), b"key", b"payload", None);
        assert_eq!(
            decode_record(&record),
            Some((pid(3), &b"key"[..], &b"payload"[..], None))
        );
        for link in [Link::Copy(41), Link::Revival(41)] {
            let linked = encode_record(&pid(3), b"key", b"payload", Some(link));
            assert_eq!(linked[0], LINK_MARK, "a link is marked by its first byte");
            assert_eq!(linked[9..], record[..], "then reads as the plain record");
            assert_eq!(
                decode_record(&linked),
                Some((pid(3), &b"key"[..], &b"payload"[..], Some(link)))
            );
            assert_eq!(
                decode_record(&linked[..8]),
                None,
                "a short root is malformed"
            );
        }
        // The bytes a copy had before revivals existed, written out by hand, still read
        // as that copy; a revival differs from it only in the root word's top bit.
        let mut old_copy = vec![0x00, 0, 0, 0, 0, 0, 0, 0, 41];
        old_copy.extend_from_slice(&record);
        assert_eq!(
            decode_record(&old_copy),
            Some((pid(3), &b"key"[..], &b"payload"[..], Some(Link::Copy(41))))
        );
        old_copy[1] = 0x80;
        assert_eq!(
            decode_record(&old_copy),
            Some((
                pid(3),
                &b"key"[..],
                &b"payload"[..],
                Some(Link::Revival(41))
            ))
        );
        assert_eq!(
            decode_record(&[LINK_MARK; 12]),
            None,
            "an empty topic is malformed"
        );
        let mut checkpoint = BTreeMap::new();
        checkpoint.insert(pid(0), Checkpoint { seq: 7, offset: 3 });
        checkpoint.insert(
            pid(9),
            Checkpoint {
                seq: 70,
                offset: 30,
            },
        );
        let mut bytes = encode_checkpoint(&checkpoint);
        assert_eq!(decode_checkpoint(&bytes), Some(checkpoint));
        bytes[3] ^= 1;
        assert_eq!(
            decode_checkpoint(&bytes),
            None,
            "a flip is caught by the CRC"
        );
    }

    #[test]
    fn a_checkpoint_is_as_long_as_its_table_says_and_nothing_shorter_reads() {
        let checkpoint = BTreeMap::from([
            (pid(7), Checkpoint { seq: 3, offset: 9 }),
            (("a".to_string(), 0), Checkpoint { seq: 1, offset: 2 }),
        ]);
        let bytes = encode_checkpoint(&checkpoint);
        let entry = |topic: usize| {
            CHECKPOINT_TOPIC_LEN_LEN
                + topic
                + PARTITION_LEN
                + CHECKPOINT_SEQ_LEN
                + CHECKPOINT_OFFSET_LEN
        };
        assert_eq!(bytes.len(), entry(6) + entry(1) + CHECKPOINT_CRC_LEN);
        assert_eq!(decode_checkpoint(&bytes[..3]), None, "shorter than the CRC");
        assert_eq!(decode_record(&[]), None);
        assert_eq!(
            decode_checkpoint(&encode_checkpoint(&BTreeMap::new())),
            Some(BTreeMap::new()),
            "an empty checkpoint is its CRC alone"
        );
    }
}
