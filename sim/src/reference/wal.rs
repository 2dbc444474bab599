//! Ingress WAL segments decoded from bytes, as FORMAT.md states them ("The ingress
//! WAL"): frames of the log's frame format, one per group commit, whose base offset is
//! the WAL sequence number of their first entry, each entry
//! `[topicLen:uvarint][topic][partition:4BE][keyLen:uvarint][key][payload]`, a salvage
//! entry linked to the entry `root` with `[0x00][root:8BE]` before it, a revival when
//! the root word's top bit is set and a copy otherwise (`root` below its own seq, or the
//! entry is malformed).
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
    /// For a salvage entry, the entry it stands for.
    pub link: Option<Link>,
}

/// How a salvage entry stands for an earlier entry (FORMAT.md, "Record, salvage entry").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// A copy of a root past the checkpoint: replayed as one with it.
    Copy(u64),
    /// A record whose root the checkpoint had passed: replayed in its own right.
    Revival(u64),
}

impl Entry {
    /// The entries a replay from a readable checkpoint commits as one record with this
    /// one: a root and its copies, or the revivals of one spent root (the spent root
    /// itself is not replayed while the checkpoint reads; only a replay of every entry,
    /// after a lost checkpoint, takes the two groups as one).
    pub fn group(&self) -> Group {
        match self.link {
            Some(Link::Copy(root)) => Group::Root(root),
            Some(Link::Revival(root)) => Group::Revivals(root),
            None => Group::Root(self.seq),
        }
    }

    /// Whether a replay from a checkpoint at seq `floor` takes this entry (FORMAT.md):
    /// it is past the checkpoint, and so is the root of a copy.
    pub fn live_from(&self, floor: u64) -> bool {
        self.seq >= floor
            && match self.link {
                Some(Link::Copy(root)) => root >= floor,
                Some(Link::Revival(_)) | None => true,
            }
    }
}

/// See [`Entry::group`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Root(u64),
    Revivals(u64),
}

/// One readable frame: its bytes in the file, the sequence number of its first entry,
/// how many entries it holds, and those that parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalFrame {
    pub position: Range<u64>,
    pub base: u64,
    pub records: u64,
    pub entries: Vec<Entry>,
}

/// What the damage of one WAL segment image named `base` costs an open, as FORMAT.md's
/// reader counts it: bytes in unreadable regions (from where a frame fails to the next
/// readable one, or to the end), and entries lost (sequence numbers a readable frame
/// skips past the ones before it, from `base`, and entries of a readable frame that do
/// not parse). Returns `(skipped_bytes, corrupt_entries)`.
pub fn damage(base: u64, image: &[u8]) -> (u64, u64) {
    let (mut skipped, mut corrupt) = (0, 0);
    let (mut at, mut expected) = (0, base);
    for f in frames(image) {
        skipped += f.position.start - at;
        corrupt += f.base.saturating_sub(expected);
        corrupt += f.records - f.entries.len() as u64;
        expected = expected.max(f.base + f.records);
        at = f.position.end;
    }
    skipped += (image.len() as u64).saturating_sub(at);
    (skipped, corrupt)
}

/// The base of a WAL segment file named `name` (twenty digits and the suffix). The
/// reference's own reading of the name, not the engine's `parse_segment_name`, so that
/// a fault in the engine's cannot change what the world expects.
pub fn segment_base(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(cafelog_engine::store::wal::WAL_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// One parsed WAL record: topic, partition, key, payload, and what a salvage entry
/// stands for.
pub type Record<'a> = (String, u32, &'a [u8], &'a [u8], Option<Link>);

/// Parses one WAL record.
pub fn record(bytes: &[u8]) -> Option<Record<'_>> {
    let (link, bytes) = match bytes.split_first()? {
        (0, rest) => {
            let (word, rest) = rest.split_first_chunk::<8>()?;
            let word = u64::from_be_bytes(*word);
            let root = word & !(1 << 63);
            let link = if word == root {
                Link::Copy(root)
            } else {
                Link::Revival(root)
            };
            (Some(link), rest)
        }
        _ => (None, bytes),
    };
    let (topic_len, used) = frame::uvarint(bytes)?;
    if topic_len == 0 {
        return None;
    }
    let rest = bytes.get(used..)?;
    let (topic, rest) = rest.split_at_checked(usize::try_from(topic_len).ok()?)?;
    let topic = std::str::from_utf8(topic).ok()?.to_owned();
    let (partition, rest) = rest.split_at_checked(4)?;
    let partition = u32::from_be_bytes(partition.try_into().ok()?);
    let (key_len, used) = frame::uvarint(rest)?;
    let rest = rest.get(used..)?;
    let (key, payload) = rest.split_at_checked(usize::try_from(key_len).ok()?)?;
    Some((topic, partition, key, payload, link))
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
                let (topic, partition, key, payload, link) = record(r)?;
                let seq = header.base_offset + index as u64;
                if let Some(Link::Copy(root) | Link::Revival(root)) = link
                    && root >= seq
                {
                    return None;
                }
                Some(Entry {
                    seq,
                    topic,
                    partition,
                    key: key.to_vec(),
                    payload: payload.to_vec(),
                    link,
                })
            })
            .collect();
        let end = at + header.frame_len();
        out.push(WalFrame {
            position: at..end,
            base: header.base_offset,
            records: records.len() as u64,
            entries,
        });
        at = end;
    }
    out
}

/// Whether a WAL checkpoint file's bytes read as FORMAT.md states them ("Ingress
/// WAL"): entries `[topicLen:2][topic][partition:4][seq:8][offset:8]`, then a CRC32C of
/// them. An open that finds it unreadable replays every entry.
pub fn checkpoint_readable(bytes: &[u8]) -> bool {
    checkpoint(bytes).is_some()
}

/// The entries of a readable WAL checkpoint: (topic, partition, seq, offset), each
/// partition's replay floor. `None` when it does not read (see
/// [`checkpoint_readable`]).
pub fn checkpoint(bytes: &[u8]) -> Option<Vec<(String, u32, u64, u64)>> {
    let split = bytes.len().checked_sub(4)?;
    let (mut body, crc) = bytes.split_at(split);
    if crc32c::crc32c(body).to_be_bytes() != crc {
        return None;
    }
    let mut out = Vec::new();
    while !body.is_empty() {
        let (len, rest) = body.split_at_checked(2)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let (topic, rest) = rest.split_at_checked(len)?;
        let topic = std::str::from_utf8(topic).ok()?;
        let (partition, rest) = rest.split_first_chunk::<4>()?;
        let (seq, rest) = rest.split_first_chunk::<8>()?;
        let (offset, rest) = rest.split_first_chunk::<8>()?;
        out.push((
            topic.to_owned(),
            u32::from_be_bytes(*partition),
            u64::from_be_bytes(*seq),
            u64::from_be_bytes(*offset),
        ));
        body = rest;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(entries: &[(&str, u32, u64, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (topic, partition, seq, offset) in entries {
            out.extend_from_slice(&(topic.len() as u16).to_be_bytes());
            out.extend_from_slice(topic.as_bytes());
            out.extend_from_slice(&partition.to_be_bytes());
            out.extend_from_slice(&seq.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    #[test]
    fn a_checkpoint_reads_unless_its_crc_or_shape_fails() {
        let good = checkpoint(&[("orders", 0, 7, 3), ("t", 9, 70, 30)]);
        assert!(checkpoint_readable(&good));
        assert_eq!(
            super::checkpoint(&good),
            Some(vec![("orders".into(), 0, 7, 3), ("t".into(), 9, 70, 30)])
        );
        assert!(checkpoint_readable(&checkpoint(&[])), "no partitions yet");
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            assert!(!checkpoint_readable(&bad), "a flip at {at} is caught");
        }
        assert!(!checkpoint_readable(&[]), "an empty file has no CRC");
        // A body the CRC covers but that does not split into entries.
        let mut short = good[..good.len() - 4 - 3].to_vec();
        let crc = crc32c::crc32c(&short);
        short.extend_from_slice(&crc.to_be_bytes());
        assert!(!checkpoint_readable(&short));
    }

    /// The record bytes FORMAT.md gives, written out by hand: a link's mark and root
    /// word, then a plain record of topic `t`, partition 2, key `k`, payload `p`.
    fn linked(word: u64) -> Vec<u8> {
        let mut out = vec![0x00];
        out.extend_from_slice(&word.to_be_bytes());
        out.extend_from_slice(&[1, b't', 0, 0, 0, 2, 1, b'k', b'p']);
        out
    }

    #[test]
    fn a_salvage_entry_reads_as_a_copy_or_a_revival() {
        let read = |bytes: &[u8]| {
            record(bytes).map(|(t, p, k, v, link)| ((t, p, k.to_vec(), v.to_vec()), link))
        };
        let expect = |link| Some((("t".to_owned(), 2, b"k".to_vec(), b"p".to_vec()), link));
        assert_eq!(read(&linked(7)), expect(Some(Link::Copy(7))));
        assert_eq!(read(&linked(7 | 1 << 63)), expect(Some(Link::Revival(7))));
        assert_eq!(read(&linked(7)[..8]), None, "a short root is malformed");
        // The engine writes the same bytes.
        use cafelog_engine::store::wal::{Link as EngineLink, encode_record};
        for (word, link) in [
            (7, EngineLink::Copy(7)),
            (7 | 1 << 63, EngineLink::Revival(7)),
        ] {
            assert_eq!(
                encode_record(&("t".to_owned(), 2), b"k", b"p", Some(link)),
                linked(word)
            );
        }
    }
}
