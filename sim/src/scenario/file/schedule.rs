//! A scenario's schedule: each entry one fault at a trigger (`at_ms`, `at_ns`,
//! `next_ack_after_ns`, `after_acks`, `after_alarm` or `while_down`), with exactly the
//! fields its action needs.

use super::*;

/// The actions a schedule entry names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionName {
    Crash,
    ProcessCrash,
    CrashWithBitFlip,
    ProcessCrashWithBitFlip,
    BitFlip,
    CrashWithClockStep,
    CrashWithLatentSector,
    LatentSector,
    ClockStep,
    FsyncEio,
    LostFsync,
    Wake,
}

/// One entry of `[[schedule]]`: a trigger and an action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawEntry", into = "RawEntry")]
pub struct ScheduleEntry(pub ScheduledFault);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_ns: Option<u64>,
    /// A kill as the swarm aims one: sleep to this ns, then right after the next
    /// produce acknowledgement (at most 500 ms later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_ack_after_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_acks: Option<u64>,
    /// Right after the engine's alarm of this name (`alarm_count`th, default the first)
    /// in the incarnation running when the entry is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_alarm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alarm_count: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    while_down: bool,
    action: ActionName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<FileKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    back_ms: Option<u64>,
    /// A flip's exact bit: the durable file, the byte and the bit (all three or none);
    /// or the one file an fsync fault strikes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    position: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bit: Option<u8>,
}

impl TryFrom<RawEntry> for ScheduleEntry {
    type Error = String;
    fn try_from(r: RawEntry) -> Result<Self, String> {
        if r.alarm_count.is_some() && r.after_alarm.is_none() {
            return Err("alarm_count goes with after_alarm".into());
        }
        let after_alarm = match &r.after_alarm {
            Some(name) => Some(AlarmName::parse(name).ok_or_else(|| {
                format!(
                    "after_alarm = {name:?}: the engine's alarms are {}",
                    cafelog_engine::alarm::ALL.join(", ")
                )
            })?),
            None => None,
        };
        let triggers = [
            r.at_ms.is_some(),
            r.at_ns.is_some(),
            r.next_ack_after_ns.is_some(),
            r.after_acks.is_some(),
            after_alarm.is_some(),
            r.while_down,
        ];
        if triggers.iter().filter(|&&t| t).count() != 1 {
            return Err("a schedule entry needs exactly one of at_ms, at_ns, \
                        next_ack_after_ns, after_acks, after_alarm or while_down = true"
                .into());
        }
        // The world injects a latent sector into the platter image only while the node
        // is down: a running open would read it with no view of the disk recorded for
        // the checkers to judge its cut against.
        if r.action == ActionName::LatentSector && !r.while_down {
            return Err("latent_sector takes while_down = true (or use \
                        crash_with_latent_sector): a sector goes bad while the node is down"
                .into());
        }
        let trigger = match (
            r.at_ms,
            r.at_ns,
            r.next_ack_after_ns,
            r.after_acks,
            after_alarm,
        ) {
            (Some(at), ..) => Trigger::AtMs(at),
            (_, Some(at), ..) => Trigger::AtNs(at),
            (_, _, Some(at), ..) => {
                if !matches!(
                    r.action,
                    ActionName::Crash
                        | ActionName::ProcessCrash
                        | ActionName::CrashWithBitFlip
                        | ActionName::ProcessCrashWithBitFlip
                        | ActionName::CrashWithClockStep
                        | ActionName::CrashWithLatentSector
                        | ActionName::Wake
                ) {
                    return Err("next_ack_after_ns takes a kill (crash, process_crash or \
                                crash_with_*) or wake"
                        .into());
                }
                Trigger::NextAckAfterNs(at)
            }
            (_, _, _, Some(n), _) => Trigger::AfterAcks(n),
            (_, _, _, _, Some(alarm)) => match r.alarm_count.unwrap_or(1) {
                0 => return Err("alarm_count counts from 1".into()),
                count => Trigger::AfterAlarm { alarm, count },
            },
            (None, None, None, None, None) => {
                if !matches!(
                    r.action,
                    ActionName::BitFlip | ActionName::LatentSector | ActionName::ClockStep
                ) {
                    return Err(
                        "while_down takes bit_flip, latent_sector or clock_step: a fault at \
                         the kill before"
                            .into(),
                    );
                }
                Trigger::WhileDown
            }
        };
        let flips = matches!(
            r.action,
            ActionName::CrashWithBitFlip
                | ActionName::ProcessCrashWithBitFlip
                | ActionName::BitFlip
        );
        let fsyncs = matches!(r.action, ActionName::FsyncEio | ActionName::LostFsync);
        // An fsync fault's `path` aims it at one file.
        let (aim, path) = if fsyncs {
            (r.path, None)
        } else {
            (None, r.path)
        };
        let at = match (path, r.position, r.bit) {
            (None, None, None) => None,
            (Some(path), Some(position), Some(bit)) if flips && bit < 8 => Some(FlipAt {
                path,
                position,
                bit,
            }),
            _ => {
                return Err(
                    "path, position and bit (0-7) go together, on a bit flip only \
                            (an fsync fault takes path alone)"
                        .into(),
                );
            }
        };
        let action = match (r.action, r.file, r.back_ms) {
            (name, Some(file), None) if flips => {
                if !matches!(
                    file,
                    FileKind::Segment | FileKind::Hwm | FileKind::ConsumerOffset | FileKind::Wal
                ) {
                    return Err(format!(
                        "file = {file:?}: bit flips hit segment, hwm, consumer_offset or wal"
                    ));
                }
                match name {
                    ActionName::CrashWithBitFlip => Action::CrashWithBitFlip { file, at },
                    ActionName::ProcessCrashWithBitFlip => {
                        Action::ProcessCrashWithBitFlip { file, at }
                    }
                    _ => Action::BitFlip { file, at },
                }
            }
            (_, None, _) if flips => {
                return Err("a bit flip needs file = \"segment\" (or hwm, ...)".into());
            }
            (ActionName::CrashWithClockStep, None, Some(ms)) => Action::CrashWithClockStep { ms },
            (ActionName::ClockStep, None, Some(ms)) => Action::ClockStep { ms },
            (ActionName::CrashWithClockStep | ActionName::ClockStep, _, None) => {
                return Err("a clock step needs back_ms".into());
            }
            (action, None, None) => match action {
                ActionName::Crash => Action::Crash,
                ActionName::ProcessCrash => Action::ProcessCrash,
                ActionName::CrashWithLatentSector => Action::CrashWithLatentSector,
                ActionName::LatentSector => Action::LatentSector,
                ActionName::FsyncEio => Action::FsyncEio { path: aim },
                ActionName::LostFsync => Action::LostFsync { path: aim },
                ActionName::Wake => Action::Wake,
                ActionName::CrashWithBitFlip
                | ActionName::ProcessCrashWithBitFlip
                | ActionName::BitFlip
                | ActionName::CrashWithClockStep
                | ActionName::ClockStep => unreachable!("handled above"),
            },
            (action, _, _) => {
                let name = serde_json::to_value(action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                return Err(format!(
                    "{name} takes no file or back_ms (only crash_with_bit_flip takes file, \
                     only crash_with_clock_step takes back_ms)"
                ));
            }
        };
        Ok(ScheduleEntry(ScheduledFault { trigger, action }))
    }
}

impl From<ScheduleEntry> for RawEntry {
    fn from(e: ScheduleEntry) -> Self {
        let (mut at_ms, mut at_ns, mut next_ack_after_ns, mut after_acks) =
            (None, None, None, None);
        match e.0.trigger {
            Trigger::AtMs(at) => at_ms = Some(at),
            Trigger::AtNs(at) => at_ns = Some(at),
            Trigger::NextAckAfterNs(at) => next_ack_after_ns = Some(at),
            Trigger::AfterAcks(n) => after_acks = Some(n),
            Trigger::AfterAlarm { .. } | Trigger::WhileDown => {}
        }
        let (after_alarm, alarm_count) = match e.0.trigger {
            Trigger::AfterAlarm { alarm, count } => (
                Some(alarm.as_str().to_owned()),
                (count != 1).then_some(count),
            ),
            _ => (None, None),
        };
        let while_down = e.0.trigger == Trigger::WhileDown;
        let mut at = None;
        let mut aim = None;
        let (action, file, back_ms) = match e.0.action {
            Action::Crash => (ActionName::Crash, None, None),
            Action::ProcessCrash => (ActionName::ProcessCrash, None, None),
            Action::CrashWithBitFlip { file, at: a } => {
                at = a;
                (ActionName::CrashWithBitFlip, Some(file), None)
            }
            Action::ProcessCrashWithBitFlip { file, at: a } => {
                at = a;
                (ActionName::ProcessCrashWithBitFlip, Some(file), None)
            }
            Action::BitFlip { file, at: a } => {
                at = a;
                (ActionName::BitFlip, Some(file), None)
            }
            Action::CrashWithClockStep { ms } => (ActionName::CrashWithClockStep, None, Some(ms)),
            Action::CrashWithLatentSector => (ActionName::CrashWithLatentSector, None, None),
            Action::LatentSector => (ActionName::LatentSector, None, None),
            Action::Wake => (ActionName::Wake, None, None),
            Action::ClockStep { ms } => (ActionName::ClockStep, None, Some(ms)),
            Action::FsyncEio { path } => {
                aim = path;
                (ActionName::FsyncEio, None, None)
            }
            Action::LostFsync { path } => {
                aim = path;
                (ActionName::LostFsync, None, None)
            }
        };
        RawEntry {
            at_ms,
            at_ns,
            next_ack_after_ns,
            after_acks,
            after_alarm,
            alarm_count,
            while_down,
            action,
            file,
            back_ms,
            path: at.as_ref().map(|a| a.path.clone()).or(aim),
            position: at.as_ref().map(|a| a.position),
            bit: at.as_ref().map(|a| a.bit),
        }
    }
}
