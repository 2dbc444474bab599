//! The records every measurement writes: JSON-like events of about 170 bytes with a
//! short key, distinct per index and deterministic (no OS randomness), so two runs
//! write the same bytes.

/// One record: a key and a payload.
pub struct Record {
    pub key: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Record {
    /// Bytes the producer hands over (key + payload), the "uncompressed" unit of MB/s.
    pub fn user_len(&self) -> usize {
        self.key.len() + self.payload.len()
    }
}

/// A 64-bit mix (splitmix64) so ids look random without any random source.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

const EVENTS: [&str; 5] = ["page_view", "add_to_cart", "checkout", "search", "login"];
const REGIONS: [&str; 4] = ["eu-west-1", "us-east-1", "ap-south-1", "sa-east-1"];

/// The record with index `i`.
pub fn record(i: u64) -> Record {
    let h = mix(i);
    let payload = format!(
        r#"{{"id":"{h:016x}","ts":{},"user":"u-{:05}","event":"{}","path":"/products/{}","region":"{}","qty":{},"price_cents":{},"ok":true}}"#,
        1_700_000_000_000u64 + i * 7,
        h % 20_000,
        EVENTS[(h >> 20) as usize % EVENTS.len()],
        (h >> 24) % 5_000,
        REGIONS[(h >> 40) as usize % REGIONS.len()],
        (h >> 44) % 9 + 1,
        100 + (h >> 48) % 90_000,
    )
    .into_bytes();
    Record {
        key: format!("u-{:05}", h % 20_000).into_bytes(),
        payload,
    }
}

/// `count` distinct records.
pub fn pool(count: usize) -> Vec<Record> {
    (0..count as u64).map(record).collect()
}

/// Records as the `(key, payload)` pairs the log takes.
pub fn pairs(records: &[Record]) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
    records
        .iter()
        .map(|r| (r.key.as_slice(), r.payload.as_slice()))
}
