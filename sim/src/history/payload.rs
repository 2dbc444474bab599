//! The payload layout the world writes, so a delivery can be matched to its produce
//! without trusting the engine's metadata.

use super::ProduceId;
use serde::{Deserialize, Serialize};
use std::fmt;

// Payload layout: the produce id travels inside the payload so any delivery can be
// matched to its produce without trusting the engine's metadata.
//
// offset 0   magic     4B   b"cafe"
// offset 4   id        8B   big-endian u64
// offset 12  body_len  4B   big-endian u32, bytes after the header
// offset 16  body      body_len bytes (filler chosen by the world)
pub const PAYLOAD_MAGIC: [u8; 4] = *b"cafe";
pub const PAYLOAD_MAGIC_OFFSET: usize = 0;
pub const PAYLOAD_ID_OFFSET: usize = PAYLOAD_MAGIC_OFFSET + 4;
pub const PAYLOAD_BODY_LEN_OFFSET: usize = PAYLOAD_ID_OFFSET + 8;
pub const PAYLOAD_HEADER_LEN: usize = PAYLOAD_BODY_LEN_OFFSET + 4;
const _: () = assert!(PAYLOAD_HEADER_LEN == 16);

/// Why a payload carries no produce id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PayloadError {
    TooShort { len: usize },
    BadMagic { found: [u8; 4] },
    BodyLenMismatch { header: u32, actual: usize },
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadError::TooShort { len } => write!(f, "payload too short ({len} bytes)"),
            PayloadError::BadMagic { found } => write!(f, "payload magic {found:02x?}"),
            PayloadError::BodyLenMismatch { header, actual } => {
                write!(
                    f,
                    "payload body length {header} in header, {actual} present"
                )
            }
        }
    }
}

/// Builds the payload of produce `id`: the 16-byte header, then `body`.
pub fn encode_payload(id: ProduceId, body: &[u8]) -> Vec<u8> {
    let body_len = u32::try_from(body.len()).expect("payload body fits in u32");
    let mut out = Vec::with_capacity(PAYLOAD_HEADER_LEN + body.len());
    out.extend_from_slice(&PAYLOAD_MAGIC);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&body_len.to_be_bytes());
    out.extend_from_slice(body);
    assert_eq!(parse_payload_id(&out), Ok(id));
    out
}

/// The produce id of a payload built by [`encode_payload`].
pub fn parse_payload_id(payload: &[u8]) -> Result<ProduceId, PayloadError> {
    let header: &[u8; PAYLOAD_HEADER_LEN] = payload
        .first_chunk()
        .ok_or(PayloadError::TooShort { len: payload.len() })?;
    let (magic, rest) = header.split_first_chunk::<4>().expect("16 > 4");
    let (id, body_len) = rest.split_first_chunk::<8>().expect("12 > 8");
    if *magic != PAYLOAD_MAGIC {
        return Err(PayloadError::BadMagic { found: *magic });
    }
    let body_len = u32::from_be_bytes(*body_len.first_chunk::<4>().expect("4 bytes"));
    let actual = payload.len() - PAYLOAD_HEADER_LEN;
    if usize::try_from(body_len) != Ok(actual) {
        return Err(PayloadError::BodyLenMismatch {
            header: body_len,
            actual,
        });
    }
    Ok(u64::from_be_bytes(*id))
}
