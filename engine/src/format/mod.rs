//! The on-disk format, one module per structure. `FORMAT.md` at the top of the
//! repository holds the same tables. The format is stable: a layout change needs a new
//! version and a test that reads the old bytes.

pub mod envelope;
pub mod frame;
pub mod layout;
pub mod wal;
pub mod word;

pub use frame::{Codec, Codecs, FRAME_BYTES_MAX, FRAME_HEADER_LEN, FrameError, FrameHeader};
