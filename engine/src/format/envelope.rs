//! The keyed record envelope: the bytes of one record inside a frame payload.
//!
//! ```text
//! [version:1B = 0x02][keyLen:uvarint][key][committedAtUnixMs:8B BE][payload]
//! ```
//!
//! `keyLen` is an unsigned LEB128 varint (Go's `binary.Uvarint`), at most 10 bytes and
//! in its shortest form; the payload runs to the end of the record. The commit time is
//! assigned under the partition lock, so it never decreases along offsets.

#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use std::fmt;

/// The only envelope version.
pub const ENVELOPE_VERSION: u8 = 0x02;
/// Bytes a uvarint may take.
pub const UVARINT_LEN_MAX: usize = 10;
/// Bytes of the commit time field.
pub const COMMITTED_AT_LEN: usize = 8;

/// A decoded envelope, borrowing from the record bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub key: &'a [u8],
    pub committed_at_ms: u64,
    pub payload: &'a [u8],
}

/// Why record bytes are not an envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvelopeError {
    Empty,
    BadVersion { found: u8 },
    BadKeyLength,
    KeyPastEnd { key_len: u64, available: usize },
    NoCommitTime,
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvelopeError::Empty => write!(f, "empty record"),
            EnvelopeError::BadVersion { found } => {
                write!(f, "bad envelope version {found:#04x} (expected 0x02)")
            }
            EnvelopeError::BadKeyLength => write!(f, "malformed key length varint"),
            EnvelopeError::KeyPastEnd { key_len, available } => {
                write!(
                    f,
                    "key of {key_len} bytes but only {available} bytes follow"
                )
            }
            EnvelopeError::NoCommitTime => write!(f, "record ends before its commit time"),
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// Appends the uvarint encoding of `value` to `out`.
pub fn put_uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Decodes a shortest-form uvarint; returns the value and the bytes it took.
#[inline]
pub fn get_uvarint(bytes: &[u8]) -> Option<(u64, usize)> {
    // One byte, the common case (a key shorter than 128 bytes): no loop.
    if let Some(&byte) = bytes.first()
        && byte < 0x80
    {
        return Some((u64::from(byte), 1));
    }
    let mut value = 0u64;
    for (index, byte) in bytes.iter().take(UVARINT_LEN_MAX).enumerate() {
        let low = u64::from(byte & 0x7F);
        if index == UVARINT_LEN_MAX - 1 && *byte > 1 {
            return None; // overflows 64 bits
        }
        value |= low << (7 * index);
        if byte & 0x80 == 0 {
            // Reject non-shortest forms (a trailing zero group) so one value has one encoding.
            if index > 0 && *byte == 0 {
                return None;
            }
            return Some((value, index + 1));
        }
    }
    None
}

/// Bytes the envelope of `key` and `payload` takes.
pub fn encoded_len(key_len: usize, payload_len: usize) -> usize {
    1 + uvarint_len(key_len as u64) + key_len + COMMITTED_AT_LEN + payload_len
}

/// Bytes `put_uvarint` writes for `value`: one per started group of 7 bits.
fn uvarint_len(value: u64) -> usize {
    let bits = (u64::BITS - value.leading_zeros()).max(1) as usize;
    bits.div_ceil(7)
}

/// Appends the envelope of a record to `out`.
pub fn encode(out: &mut Vec<u8>, key: &[u8], committed_at_ms: u64, payload: &[u8]) {
    out.reserve(encoded_len(key.len(), payload.len()));
    out.push(ENVELOPE_VERSION);
    put_uvarint(out, key.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(&committed_at_ms.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Decodes record bytes as an envelope.
#[inline]
pub fn decode(record: &[u8]) -> Result<Envelope<'_>, EnvelopeError> {
    let (&version, rest) = record.split_first().ok_or(EnvelopeError::Empty)?;
    if version != ENVELOPE_VERSION {
        return Err(EnvelopeError::BadVersion { found: version });
    }
    let (key_len, used) = get_uvarint(rest).ok_or(EnvelopeError::BadKeyLength)?;
    let rest = rest.get(used..).unwrap_or_default();
    let key_end = usize::try_from(key_len)
        .ok()
        .filter(|len| *len <= rest.len())
        .ok_or(EnvelopeError::KeyPastEnd {
            key_len,
            available: rest.len(),
        })?;
    let (key, rest) = rest.split_at(key_end);
    let (time, payload) = rest
        .split_at_checked(COMMITTED_AT_LEN)
        .ok_or(EnvelopeError::NoCommitTime)?;
    let mut word = [0u8; COMMITTED_AT_LEN];
    word.copy_from_slice(time);
    Ok(Envelope {
        key,
        committed_at_ms: u64::from_be_bytes(word),
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn envelopes_round_trip(
            key in proptest::collection::vec(any::<u8>(), 0..300),
            payload in proptest::collection::vec(any::<u8>(), 0..2000),
            at in any::<u64>(),
        ) {
            let mut out = Vec::new();
            encode(&mut out, &key, at, &payload);
            prop_assert_eq!(out.len(), encoded_len(key.len(), payload.len()));
            let env = decode(&out).unwrap();
            prop_assert_eq!(env.key, &key[..]);
            prop_assert_eq!(env.payload, &payload[..]);
            prop_assert_eq!(env.committed_at_ms, at);
        }

        #[test]
        fn uvarints_round_trip(value in any::<u64>()) {
            let mut out = Vec::new();
            put_uvarint(&mut out, value);
            prop_assert_eq!(get_uvarint(&out), Some((value, out.len())));
        }

        #[test]
        fn uvarint_len_is_what_put_uvarint_writes(value in any::<u64>()) {
            let mut out = Vec::new();
            put_uvarint(&mut out, value);
            prop_assert_eq!(uvarint_len(value), out.len());
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }
    }

    #[test]
    fn uvarint_len_at_the_group_edges() {
        for (value, len) in [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (u64::MAX, 10),
        ] {
            assert_eq!(uvarint_len(value), len, "{value}");
        }
    }

    #[test]
    fn long_keys_use_multi_byte_lengths() {
        let key = vec![b'k'; 70_000];
        let mut out = Vec::new();
        encode(&mut out, &key, 5, b"p");
        assert_eq!(out[1..4], [0xF0, 0xA2, 0x04]);
        assert_eq!(decode(&out).unwrap().key.len(), 70_000);
    }

    #[test]
    fn malformed_envelopes_are_typed_errors() {
        assert_eq!(decode(&[]), Err(EnvelopeError::Empty));
        assert_eq!(decode(&[1, 0]), Err(EnvelopeError::BadVersion { found: 1 }));
        assert_eq!(decode(&[2, 0x80]), Err(EnvelopeError::BadKeyLength));
        assert_eq!(
            decode(&[2, 5, 1]),
            Err(EnvelopeError::KeyPastEnd {
                key_len: 5,
                available: 1
            })
        );
        assert_eq!(decode(&[2, 0, 1, 2]), Err(EnvelopeError::NoCommitTime));
        assert_eq!(get_uvarint(&[0x80, 0x00]), None, "non-shortest form");
    }
}
