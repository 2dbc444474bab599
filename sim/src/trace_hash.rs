//! The trace hash: one 64-bit number that two runs share only if their histories are
//! identical, used to check determinism (a replay, a sweep's re-run sample, a shrunk
//! scenario).
//!
//! The history is not hashed as JSON: formatting a default run's megabytes of JSON was
//! 15% of a seed's instructions. [`TraceHasher`] is a `serde` serializer that feeds a
//! compact, unambiguous binary encoding of every field straight into a word-at-a-time
//! hash, so every field an event type serializes is hashed, with no code to keep in
//! step with the event types. The encoding is a stream of 64-bit words:
//! - integers, `bool`, `char`, floats (their bits): one word each;
//! - strings and byte strings: the length, then the bytes eight to a word,
//!   little-endian, the last word zero-padded (the history's keys and payloads
//!   serialize as byte strings, see `history::as_bytes`);
//! - `Option`: `0`, or `1` then the value;
//! - enum variants: the variant index, then the content; unit: nothing;
//! - sequences, tuples, structs: their elements in order (a sequence or map first
//!   gives its length, or, when serde does not know it, a `1` before each element and
//!   a `0` after the last); field names are not hashed (the type fixes them), map keys
//!   are.
//!
//! Each word goes through a multiply-rotate mix, and the state through the splitmix64
//! finaliser at the end. It is not a cryptographic hash: it tells
//! diverging runs apart, not adversaries. Changing the encoding or the mix changes
//! every recorded trace hash (the scenario snapshots pin some);
//! `a_fixed_history_keeps_its_hash` notices when that happens by accident.

use serde::Serialize;
use serde::ser;

use crate::history::History;

/// The history's trace hash: every event, in order, through [`TraceHasher`].
pub fn trace_hash(history: &History) -> u64 {
    let mut hasher = TraceHasher::new();
    for event in history.events() {
        event.serialize(&mut hasher).expect("hashing cannot fail");
    }
    hasher.finish()
}

/// A serde serializer that hashes what it is given (see the module docs).
pub struct TraceHasher {
    state: u64,
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

impl TraceHasher {
    pub fn new() -> Self {
        Self { state: SEED }
    }

    pub fn finish(self) -> u64 {
        splitmix64(self.state)
    }

    fn word(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(MULTIPLIER).rotate_left(29);
    }

    /// The length, then the bytes eight at a time, the last word zero-padded (the
    /// length tells padding from data).
    fn bytes(&mut self, bytes: &[u8]) {
        self.word(bytes.len() as u64);
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.word(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }
}

impl Default for TraceHasher {
    fn default() -> Self {
        Self::new()
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hashing cannot fail; serde still wants an error type.
#[derive(Debug)]
pub struct Never(String);

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Never(msg.to_string())
    }
}

/// Sequence and map state: whether serde gave the length up front.
pub struct Compound<'a> {
    hasher: &'a mut TraceHasher,
    /// `true`: each element is preceded by a `1` byte and the end is a `0` byte.
    marked: bool,
}

impl Compound<'_> {
    fn element(&mut self) {
        if self.marked {
            self.hasher.word(1);
        }
    }

    fn end(self) {
        if self.marked {
            self.hasher.word(0);
        }
    }
}

impl<'a> ser::Serializer for &'a mut TraceHasher {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Never> {
        self.word(u64::from(v));
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Never> {
        self.word(v as u64);
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Never> {
        self.word(v as u64);
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Never> {
        self.word(v as u64);
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Never> {
        self.word(v as u64);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Never> {
        self.word(u64::from(v));
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Never> {
        self.word(u64::from(v));
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Never> {
        self.word(u64::from(v));
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Never> {
        self.word(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Never> {
        self.word(u64::from(v.to_bits()));
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Never> {
        self.word(v.to_bits());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Never> {
        self.word(u64::from(u32::from(v)));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Never> {
        self.serialize_bytes(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Never> {
        self.bytes(v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Never> {
        self.word(0);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Never> {
        self.word(1);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<(), Never> {
        self.serialize_u32(index)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        self.serialize_u32(index)?;
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a>, Never> {
        if let Some(len) = len {
            self.word(len as u64);
        }
        Ok(Compound {
            hasher: self,
            marked: len.is_none(),
        })
    }
    fn serialize_tuple(self, _len: usize) -> Result<Compound<'a>, Never> {
        Ok(Compound {
            hasher: self,
            marked: false,
        })
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Never> {
        self.serialize_tuple(0)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Never> {
        self.serialize_u32(index)?;
        self.serialize_tuple(0)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a>, Never> {
        self.serialize_seq(len)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'a>, Never> {
        self.serialize_tuple(0)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Never> {
        self.serialize_u32(index)?;
        self.serialize_tuple(0)
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Never> {
        self.element();
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Compound::end(self);
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Never> {
        self.element();
        key.serialize(&mut *self.hasher)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Compound::end(self);
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(&mut *self.hasher)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{CrashPartition, TopicPartition, encode_payload};

    fn history(payload_tail: &[u8], offset: u64) -> History {
        let tp = TopicPartition::new("orders", 1);
        let mut payload = encode_payload(7, b"hello");
        payload.extend_from_slice(payload_tail);
        let mut h = History::new();
        h.produce_attempt(1, 7, "orders", Some(1), b"k", &payload)
            .produce_ack(2, 7, &tp, Some(offset), Some(2))
            .delivery(3, &tp, offset, b"k", &payload, 2, 1)
            .crash(
                4,
                vec![CrashPartition {
                    tp: tp.clone(),
                    persisted_hwm: offset,
                    durable_tail: offset + 1,
                    memory_hwm: None,
                }],
            )
            .restart(5)
            .heal(6);
        h
    }

    #[test]
    fn a_fixed_history_keeps_its_hash() {
        // Pinned: if this changes, every recorded trace hash changed with it. Change it
        // only on purpose, together with the scenario snapshots.
        assert_eq!(trace_hash(&history(b"", 0)), 0x61a8_9c45_bcb2_a9f3);
    }

    #[test]
    fn equal_histories_hash_equal_and_any_change_shows() {
        let base = trace_hash(&history(b"", 0));
        assert_eq!(base, trace_hash(&history(b"", 0)));
        assert_ne!(base, trace_hash(&history(b"", 1)), "an offset");
        assert_ne!(base, trace_hash(&history(b"!", 0)), "a payload byte");
        assert_ne!(base, trace_hash(&history(b"\0", 0)), "a zero byte appended");
        let mut shorter = history(b"", 0);
        shorter.restart(7);
        assert_ne!(base, trace_hash(&shorter), "an event appended");
        assert_ne!(trace_hash(&History::new()), base);
    }

    #[test]
    fn every_field_of_a_wal_damage_event_is_hashed() {
        use crate::history::{DamagedWalEntry, FaultKind, FileKind};
        let damaged = |fault_index: usize, first_replay: u32, seq: u64, id: u64| {
            let mut h = History::new();
            let flip = FaultKind::BitFlip {
                file: FileKind::Wal,
                offsets: None,
                below_hwm: None,
            };
            let entry = DamagedWalEntry {
                seq,
                tp: TopicPartition::new("orders", 1),
                id,
            };
            h.fault(7, flip.clone(), None, None)
                .fault(7, flip, None, None)
                .wal_entries_damaged(8, fault_index, first_replay, vec![entry]);
            trace_hash(&h)
        };
        let base = damaged(0, 2, 0, 7);
        assert_eq!(base, damaged(0, 2, 0, 7));
        assert_ne!(base, damaged(1, 2, 0, 7), "fault_index");
        assert_ne!(base, damaged(0, 3, 0, 7), "first_replay");
        assert_ne!(base, damaged(0, 2, 1, 7), "seq");
        assert_ne!(base, damaged(0, 2, 0, 8), "id");
    }

    #[test]
    fn field_boundaries_are_unambiguous() {
        // The same bytes split differently between key and payload must differ.
        let tp = TopicPartition::new("t", 0);
        let mut a = History::new();
        a.delivery(1, &tp, 0, b"ab", b"c", 0, 1);
        let mut b = History::new();
        b.delivery(1, &tp, 0, b"a", b"bc", 0, 1);
        assert_ne!(trace_hash(&a), trace_hash(&b));
    }
}
