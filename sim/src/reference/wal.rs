//! Ingress WAL segments decoded from bytes, as FORMAT.md states them ("The ingress
//! WAL"): frames of the log's frame format, one per group commit, whose base offset is
//! the WAL sequence number of their first entry, each entry
//! `[topicLen:uvarint][topic][partition:4BE][keyLen:uvarint][key][payload]`.
//!
//! Invariant: a frame is one CRC unit, so an unreadable frame loses all of its entries;
//! past one, the next readable frame is found by the same hunt the log uses.

use super::frame;
use std::ops::Range;

/// One entry of a readable WAL frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    pub topic: String,
    pub partition: u32,
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
}

/// One readable frame: its bytes in the file and its entries (those that parse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalFrame {
    pub position: Range<u64>,
    pub entries: Vec<Entry>,
}

/// Parses one WAL record.
pub fn record(bytes: &[u8]) -> Option<(String, u32, &[u8], &[u8])> {
    let (topic_len, used) = frame::uvarint(bytes)?;
    let rest = bytes.get(used..)?;
    let (topic, rest) = rest.split_at_checked(usize::try_from(topic_len).ok()?)?;
    let topic = std::str::from_utf8(topic).ok()?.to_owned();
    let (partition, rest) = rest.split_at_checked(4)?;
    let partition = u32::from_be_bytes(partition.try_into().ok()?);
    let (key_len, used) = frame::uvarint(rest)?;
    let rest = rest.get(used..)?;
    let (key, payload) = rest.split_at_checked(usize::try_from(key_len).ok()?)?;
    Some((topic, partition, key, payload))
}

/// Every readable frame of a WAL segment image, from byte 0 and, past an unreadable
/// region, from the next `0xCAFE` that starts a valid frame.
pub fn frames(image: &[u8]) -> Vec<WalFrame> {
    let mut out = Vec::new();
    let mut at = 0u64;
    let len = image.len() as u64;
    while at < len {
        let readable = frame::valid_at(image, at).and_then(|h| {
            let records = frame::records_at(image, at, &h)?;
            Some((h, records))
        });
        let Some((header, records)) = readable else {
            match frame::hunt(image, at) {
                Some(next) => {
                    at = next;
                    continue;
                }
                None => break,
            }
        };
        let entries = records
            .iter()
            .enumerate()
            .filter_map(|(index, r)| {
                let (topic, partition, key, payload) = record(r)?;
                Some(Entry {
                    seq: header.base_offset + index as u64,
                    topic,
                    partition,
                    key: key.to_vec(),
                    payload: payload.to_vec(),
                })
            })
            .collect();
        let end = at + header.frame_len();
        out.push(WalFrame {
            position: at..end,
            entries,
        });
        at = end;
    }
    out
}
