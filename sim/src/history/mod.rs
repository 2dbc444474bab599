//! The run history: what the simulated world saw, in the order it saw it.
//!
//! A [`History`] is the only input of the checkers ([`crate::check`]). The world
//! appends one [`Event`] per observation; nothing is ever edited or removed. Every
//! event carries the simulated time (`at_ms`, madsim's monotonic clock, never the
//! wall clock the engine may see stepping backwards) and the node incarnation it
//! belongs to.
//!
//! Invariants kept (asserted in [`History::record`]):
//! - `at_ms` never decreases along the history;
//! - the incarnation starts at 0 and only [`EventKind::Restart`] changes it, by one;
//! - a [`EventKind::Crash`] is stamped with the incarnation that dies, a
//!   [`EventKind::Restart`] with the new one;
//! - no [`EventKind::Fault`] follows [`EventKind::Heal`] (heal means "no faults from
//!   here on"; a fault after it is a simulator bug, so it panics);
//! - a [`EventKind::WalEntriesDamaged`] names an earlier [`EventKind::Fault`].
//!
//! Who records what: producers and consumers live outside the simulated node and
//! survive crashes; they record produce and consume events. The world (the driver
//! that owns the node, the simulated disk and the fault plan) records crashes,
//! restarts, faults, heal, and what it learns from the engine (counters, refusal,
//! poison, HWM, log start) and from the disk's durable image (durable tail, persisted
//! HWM, frontier writes).
//!
//! Payloads carry the produce id so that deliveries can be matched to produces:
//! [`encode_payload`] / [`parse_payload_id`].

#![deny(clippy::unwrap_used)]

mod alarm;
mod disk;
mod display;
mod event;
mod fault;
mod json;
mod layout;
mod observe;
mod payload;
mod record;

pub use alarm::Alarm;
pub use disk::{BadAt, DiskView, OpenRule};
pub use event::*;
pub use fault::*;
pub use layout::{LayoutKnobs, SegmentLayout};
pub use payload::{
    PAYLOAD_BODY_LEN_OFFSET, PAYLOAD_HEADER_LEN, PAYLOAD_ID_OFFSET, PAYLOAD_MAGIC,
    PAYLOAD_MAGIC_OFFSET, PayloadError, encode_payload, parse_payload_id,
};

use json::ByteTable;

use std::fmt;

use serde::{Deserialize, Serialize};

/// Unique id of one produce call; retries use a fresh id.
pub type ProduceId = u64;

/// Logical record number in a partition.
pub type Offset = u64;

/// Node incarnation: 0 for the first boot, +1 per restart.
pub type Incarnation = u32;

/// A partition of a topic.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: u32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: u32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// A half-open range of offsets `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OffsetRange {
    pub start: Offset,
    pub end: Offset,
}

impl OffsetRange {
    pub fn contains(&self, offset: Offset) -> bool {
        self.start <= offset && offset < self.end
    }
}

impl fmt::Display for OffsetRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// The ordered list of events of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    events: Vec<Event>,
    incarnation: Incarnation,
    healed: bool,
}

impl History {
    /// Whether the event at `index` is a bit flip's fault.
    pub fn is_flip(&self, index: usize) -> bool {
        matches!(
            self.events.get(index).map(|e| &e.kind),
            Some(EventKind::Fault {
                kind: FaultKind::BitFlip { .. },
                ..
            })
        )
    }

    pub fn new() -> Self {
        Self::default()
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Room for `additional` more events: a run that knows its size skips the copies of
    /// a growing history (0.7% of a `default` seed's instructions).
    pub fn reserve(&mut self, additional: usize) {
        self.events.reserve(additional);
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The incarnation the next event will be stamped with.
    pub fn incarnation(&self) -> Incarnation {
        self.incarnation
    }

    /// Simulated time of the last event (0 for an empty history).
    pub fn end_ms(&self) -> u64 {
        self.events.last().map_or(0, |e| e.at_ms)
    }

    /// Appends an event; the incarnation is tracked here. Panics on a broken history
    /// invariant (see the module doc): that is a simulator bug, not an engine one.
    pub fn record(&mut self, at_ms: u64, kind: EventKind) -> &mut Self {
        assert!(
            at_ms >= self.end_ms(),
            "history time went backwards: {at_ms} ms after {} ms",
            self.end_ms()
        );
        match &kind {
            EventKind::Restart => self.incarnation += 1,
            EventKind::Fault { .. } => {
                assert!(!self.healed, "fault injected after heal at {at_ms} ms");
            }
            EventKind::Heal => self.healed = true,
            EventKind::WalEntriesDamaged { fault_index, .. } => assert!(
                matches!(
                    self.events.get(*fault_index).map(|e| &e.kind),
                    Some(EventKind::Fault { .. })
                ),
                "WAL damage names event {fault_index}, which is not a fault"
            ),
            EventKind::FlipMissedCache { fault_index }
            | EventKind::WordFlipped { fault_index, .. }
            | EventKind::CheckpointDamaged {
                fault_index,
                earlier: None,
                ..
            }
            | EventKind::CheckpointAtOpen {
                flipped: Some(fault_index),
                ..
            } => assert!(
                self.is_flip(*fault_index),
                "a flip's reading names event {fault_index}, which is not a flip"
            ),
            EventKind::CheckpointDamaged {
                fault_index,
                earlier: Some(earlier),
                ..
            } => assert!(
                self.is_flip(*fault_index) && earlier < fault_index && self.is_flip(*earlier),
                "checkpoint damage by {fault_index} names {earlier} as the flip before it"
            ),
            _ => {}
        }
        let event = Event {
            at_ms,
            incarnation: self.incarnation,
            kind,
        };
        // The trace also goes through `tracing` (target `cafelog_sim::trace`), so an
        // embedder's subscriber sees it interleaved with the engine's own events.
        tracing::debug!(target: "cafelog_sim::trace", at_ms, incarnation = event.incarnation, "{event}");
        self.events.push(event);
        self
    }

    /// One JSON object per line, in history order.
    pub fn to_json_lines(&self) -> String {
        let mut out = Vec::new();
        self.write_json_lines(&mut out)
            .expect("writing to a Vec cannot fail");
        // serde_json writes valid UTF-8 only.
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// [`History::to_json_lines`], streamed into `out` without building the string.
    pub fn write_json_lines(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        for event in &self.events {
            // Serialising plain data with string keys cannot fail; only `out` can.
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, ByteTable);
            event
                .serialize(&mut serializer)
                .map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_and_rejects_damage() {
        let payload = encode_payload(0x0102_0304_0506_0708, b"filler");
        assert_eq!(payload.len(), PAYLOAD_HEADER_LEN + 6);
        assert_eq!(parse_payload_id(&payload), Ok(0x0102_0304_0506_0708));
        assert_eq!(
            parse_payload_id(&payload[..10]),
            Err(PayloadError::TooShort { len: 10 })
        );
        let mut bad_magic = payload.clone();
        bad_magic[0] ^= 1;
        assert_eq!(
            parse_payload_id(&bad_magic),
            Err(PayloadError::BadMagic { found: *b"bafe" })
        );
        let truncated = &payload[..payload.len() - 1];
        assert_eq!(
            parse_payload_id(truncated),
            Err(PayloadError::BodyLenMismatch {
                header: 6,
                actual: 5
            })
        );
    }

    #[test]
    fn history_serialises_to_json_and_back() {
        let tp = TopicPartition::new("orders", 3);
        let mut history = History::new();
        history
            .produce_attempt(1, 7, "orders", Some(3), b"k", &encode_payload(7, b""))
            .produce_ack(2, 7, &tp, Some(0), Some(1_000))
            .fault(
                3,
                FaultKind::BitFlip {
                    file: FileKind::Segment,
                    offsets: Some(OffsetRange { start: 0, end: 1 }),
                    below_hwm: Some(true),
                },
                Some(&tp),
                None,
            )
            .wal_entries_damaged(
                3,
                2,
                0,
                vec![DamagedWalEntry {
                    seq: 9,
                    tp: tp.clone(),
                    id: 7,
                }],
            )
            .crash(4, vec![])
            .restart(5)
            .heal(6);
        let json = serde_json::to_string(&history).expect("serialises");
        let back: History = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, history);
        assert_eq!(back.events()[5].incarnation, 1);
        let lines = history.to_json_lines();
        assert_eq!(lines.lines().count(), 7);
        assert!(lines.contains(r#""event":"produce_ack""#), "{lines}");
        assert!(lines.contains(r#""fault":"bit_flip""#), "{lines}");
        assert!(
            lines.contains(
                r#""event":"wal_entries_damaged","fault_index":2,"first_replay":0,"entries":[{"seq":9,"tp":{"topic":"orders","partition":3},"id":7}]"#
            ),
            "{lines}"
        );
    }

    #[test]
    fn json_lines_are_serde_json_compact_output() {
        let every_byte: Vec<u8> = (0..=255).collect();
        let mut history = History::new();
        history
            .produce_attempt(1, 7, "t\"\\é", Some(2), &every_byte, &every_byte)
            .produce_failed(2, 7, "boom\n");
        let expected: String = history
            .events()
            .iter()
            .map(|e| serde_json::to_string(e).expect("serialises") + "\n")
            .collect();
        assert_eq!(history.to_json_lines(), expected);
    }

    #[test]
    #[should_panic(expected = "fault injected after heal")]
    fn fault_after_heal_is_a_simulator_bug() {
        History::new()
            .heal(1)
            .fault(2, FaultKind::ClockStep { back_ms: 5 }, None, None);
    }

    #[test]
    #[should_panic(expected = "WAL damage names event 0, which is not a fault")]
    fn wal_damage_must_name_a_fault() {
        History::new()
            .heal(1)
            .wal_entries_damaged(2, 0, 0, Vec::new());
    }

    #[test]
    #[should_panic(expected = "history time went backwards")]
    fn time_never_goes_backwards() {
        History::new().heal(5).heal(4);
    }
}
