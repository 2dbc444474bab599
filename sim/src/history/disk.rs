//! What the world read off the durable image of a partition when the node restarted,
//! decoded by the reference decoder: the oracle's own expectation of what the open
//! about to run must find and do (FORMAT.md, rules R1-R4), to hold the engine's
//! account ([`super::Alarm`]) against.

use super::Offset;
use crate::reference::{Decoded, Rule};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The rule an open must follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenRule {
    Clean,
    /// R1 at `bad.offset`.
    TornTail,
    /// R2 at `bad.offset`.
    Hole,
    /// R3 (or a malformed `hwm` file).
    Refuse,
}

/// Where the valid extent stops short.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadAt {
    pub segment: String,
    pub position: u64,
    pub offset: Offset,
}

/// A partition's durable image, decoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskView {
    pub rule: OpenRule,
    /// The `hwm` file's value (`None`: absent, empty or malformed).
    pub persisted_hwm: Option<Offset>,
    pub log_start: Offset,
    /// One past the valid extent.
    pub tail: Offset,
    /// After the clamp (R4): `min(P, tail)`, at least the log start.
    pub hwm: Offset,
    pub bad: Option<BadAt>,
}

impl DiskView {
    pub fn from_decoded(d: &Decoded) -> Self {
        DiskView {
            rule: match d.rule() {
                Rule::Clean => OpenRule::Clean,
                Rule::TornTail => OpenRule::TornTail,
                Rule::Hole => OpenRule::Hole,
                Rule::Refuse => OpenRule::Refuse,
            },
            persisted_hwm: d.persisted_hwm,
            log_start: d.log_start,
            tail: d.tail_offset,
            hwm: d.hwm(),
            bad: d.bad.as_ref().map(|b| BadAt {
                segment: b.segment.clone(),
                position: b.position,
                offset: b.offset,
            }),
        }
    }

    /// Records the clamp must give up: `P - hwm` when positive.
    pub fn recorded_loss(&self) -> u64 {
        self.persisted_hwm.unwrap_or(0).saturating_sub(self.hwm)
    }

    /// Records in the valid extent above the HWM.
    pub fn hidden(&self) -> u64 {
        self.tail - self.hwm
    }
}

impl fmt::Display for DiskView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = match self.rule {
            OpenRule::Clean => "clean",
            OpenRule::TornTail => "R1",
            OpenRule::Hole => "R2",
            OpenRule::Refuse => "R3",
        };
        write!(
            f,
            "{rule} persisted_hwm={} log_start={} tail={} hwm={}",
            self.persisted_hwm
                .map_or_else(|| "-".to_owned(), |p| p.to_string()),
            self.log_start,
            self.tail,
            self.hwm
        )?;
        if let Some(bad) = &self.bad {
            write!(
                f,
                " bad={}@{} offset={}",
                bad.segment, bad.position, bad.offset
            )?;
        }
        Ok(())
    }
}
