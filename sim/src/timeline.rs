//! The timeline of a run as a plain SVG: one panel per partition, simulated time on the
//! x axis, offsets on the y axis. Drawn from the history alone:
//!
//! - in-memory HWM and persisted HWM: steps from `hwm_observed`;
//! - the durable tail and persisted HWM at each crash: marks from `crash`;
//! - the consumer frontier: steps from `frontier_written`, marks at `frontier_observed`;
//! - acknowledged produce offsets: dots from `produce_ack`;
//! - crashes, restarts, the heal: vertical lines across every panel; faults on the
//!   partition (and partition-less ones such as clock steps): ticks at the top, labelled.
//!
//! Bounds: at most [`ACK_DOTS_MAX`] ack dots and [`FAULT_LABELS_MAX`] fault labels per
//! panel (the rest are thinned evenly), so a long run still gives a readable file.

use crate::history::{EventKind, FaultKind, TopicPartition};
use crate::world::RunOutcome;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub const ACK_DOTS_MAX: usize = 2_000;
pub const FAULT_LABELS_MAX: usize = 60;

const WIDTH: f64 = 1_200.0;
const PANEL_HEIGHT: f64 = 260.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 84.0;
const PANEL_GAP: f64 = 50.0;
const PLOT_HEIGHT: f64 = PANEL_HEIGHT - 40.0;

const COLOR_HWM: &str = "#1f77b4";
const COLOR_PERSISTED: &str = "#9467bd";
const COLOR_FRONTIER: &str = "#2ca02c";
const COLOR_ACK: &str = "#7f7f7f";
const COLOR_TAIL: &str = "#d62728";
const COLOR_CRASH: &str = "#d62728";
const COLOR_RESTART: &str = "#17becf";
const COLOR_HEAL: &str = "#1f77b4";
const COLOR_FAULT: &str = "#ff7f0e";

#[derive(Default)]
struct Panel {
    hwm: Vec<(u64, u64)>,
    persisted: Vec<(u64, u64)>,
    frontier: Vec<(u64, u64)>,
    frontier_observed: Vec<(u64, u64)>,
    acks: Vec<(u64, u64)>,
    /// (t, durable_tail, persisted_hwm) at each crash.
    tails: Vec<(u64, u64, u64)>,
    faults: Vec<(u64, String)>,
}

impl Panel {
    fn offset_max(&self) -> u64 {
        let points = self
            .hwm
            .iter()
            .chain(&self.persisted)
            .chain(&self.frontier)
            .chain(&self.frontier_observed)
            .chain(&self.acks)
            .map(|(_, o)| *o);
        points
            .chain(self.tails.iter().map(|(_, t, p)| (*t).max(*p)))
            .max()
            .unwrap_or(0)
    }
}

fn fault_label(kind: &FaultKind) -> String {
    let name = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.get("fault").and_then(|f| f.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "fault".into());
    match kind {
        FaultKind::ClockStep { back_ms } => format!("clock -{back_ms}ms"),
        FaultKind::BitFlip { file, .. }
        | FaultKind::TornWrite { file }
        | FaultKind::LostWrite { file }
        | FaultKind::FsyncEio { file }
        | FaultKind::LostFsync { file, .. }
        | FaultKind::Enospc { file } => {
            let file = serde_json::to_value(file)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{name} {file}")
        }
        _ => name,
    }
}

/// The SVG text of `outcome`'s timeline.
pub fn render(outcome: &RunOutcome) -> String {
    let mut panels: BTreeMap<TopicPartition, Panel> = BTreeMap::new();
    let mut crashes = Vec::new();
    let mut restarts = Vec::new();
    let mut heal = None;
    let mut global_faults = Vec::new();
    for event in outcome.history.events() {
        let t = event.at_ms;
        match &event.kind {
            EventKind::HwmObserved {
                tp,
                hwm,
                persisted_hwm,
                ..
            } => {
                let p = panels.entry(tp.clone()).or_default();
                p.hwm.push((t, *hwm));
                if let Some(persisted) = persisted_hwm {
                    p.persisted.push((t, *persisted));
                }
            }
            EventKind::FrontierWritten { tp, frontier } => {
                panels
                    .entry(tp.clone())
                    .or_default()
                    .frontier
                    .push((t, *frontier));
            }
            EventKind::FrontierObserved { tp, frontier } => {
                let p = panels.entry(tp.clone()).or_default();
                p.frontier_observed.push((t, *frontier));
                p.frontier.push((t, *frontier));
            }
            EventKind::ProduceAck {
                tp,
                offset: Some(offset),
                ..
            } => panels
                .entry(tp.clone())
                .or_default()
                .acks
                .push((t, *offset)),
            EventKind::Crash { partitions } => {
                crashes.push(t);
                for cp in partitions {
                    panels.entry(cp.tp.clone()).or_default().tails.push((
                        t,
                        cp.durable_tail,
                        cp.persisted_hwm,
                    ));
                }
            }
            EventKind::Restart => restarts.push(t),
            EventKind::Heal => heal = Some(t),
            EventKind::Fault { kind, tp, .. } => {
                if matches!(kind, FaultKind::Crash | FaultKind::Latency { .. }) {
                    continue;
                }
                match tp {
                    Some(tp) => panels
                        .entry(tp.clone())
                        .or_default()
                        .faults
                        .push((t, fault_label(kind))),
                    None => global_faults.push((t, fault_label(kind))),
                }
            }
            EventKind::PartitionRefused { tp, .. } => panels
                .entry(tp.clone())
                .or_default()
                .faults
                .push((t, "REFUSED (R3)".into())),
            EventKind::PartitionPoisoned { tp } => panels
                .entry(tp.clone())
                .or_default()
                .faults
                .push((t, "POISONED".into())),
            _ => {}
        }
    }
    let t_max = outcome.history.end_ms().max(1);
    let height = TOP + panels.len().max(1) as f64 * (PANEL_HEIGHT + PANEL_GAP) + 20.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="20" font-size="14" font-weight="bold">seed {} · profile {} · sim {} ms · trace_hash {:016x}</text>"#,
        outcome.seed,
        escape(outcome.profile),
        outcome.sim_ms,
        outcome.trace_hash
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="38">{}</text>"#,
        escape(
            &outcome
                .verdict
                .to_string()
                .chars()
                .take(190)
                .collect::<String>()
        )
    );
    legend(&mut svg);
    let plot_width = WIDTH - LEFT - RIGHT;
    let x = |t: u64| LEFT + t as f64 / t_max as f64 * plot_width;
    for (index, (tp, panel)) in panels.iter().enumerate() {
        let top = TOP + index as f64 * (PANEL_HEIGHT + PANEL_GAP) + 20.0;
        let bottom = top + PLOT_HEIGHT;
        let o_max = panel.offset_max().max(1);
        let y = |o: u64| bottom - o as f64 / o_max as f64 * PLOT_HEIGHT;
        let _ = writeln!(
            svg,
            r#"<text x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
            top - 6.0,
            escape(&tp.to_string())
        );
        let _ = writeln!(
            svg,
            r##"<rect x="{LEFT}" y="{top:.1}" width="{plot_width:.1}" height="{PLOT_HEIGHT}" fill="#fafafa" stroke="#999"/>"##
        );
        for tick in ticks(o_max) {
            let yy = y(tick);
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end">{tick}</text>"##,
                LEFT + plot_width,
                LEFT - 6.0,
                yy + 4.0,
            );
        }
        for tick in ticks(t_max) {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{tick} ms</text>"#,
                x(tick),
                bottom + 14.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">offset</text>"#,
            (top + bottom) / 2.0,
            (top + bottom) / 2.0
        );
        for (times, color, dash) in [
            (&crashes, COLOR_CRASH, ""),
            (&restarts, COLOR_RESTART, r#" stroke-dasharray="4 3""#),
        ] {
            for t in times.iter() {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="{color}" stroke-width="1.2"{dash}/>"#,
                    xx = x(*t)
                );
            }
        }
        if let Some(t) = heal {
            let xx = x(t);
            let _ = writeln!(
                svg,
                r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="{COLOR_HEAL}" stroke-width="2" stroke-dasharray="8 4"/><text x="{:.1}" y="{:.1}" fill="{COLOR_HEAL}">heal</text>"#,
                xx + 3.0,
                bottom - 4.0,
            );
        }
        for (t, o) in &thin(&panel.acks, ACK_DOTS_MAX) {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{COLOR_ACK}"/>"#,
                x(*t),
                y(*o)
            );
        }
        steps(
            &mut svg,
            &panel.persisted,
            &x,
            &y,
            COLOR_PERSISTED,
            "2",
            t_max,
        );
        steps(&mut svg, &panel.hwm, &x, &y, COLOR_HWM, "1.6", t_max);
        steps(
            &mut svg,
            &panel.frontier,
            &x,
            &y,
            COLOR_FRONTIER,
            "1.6",
            t_max,
        );
        for (t, o) in &panel.frontier_observed {
            let _ = writeln!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="6" height="6" fill="none" stroke="{COLOR_FRONTIER}" stroke-width="1.5"/>"#,
                x(*t) - 3.0,
                y(*o) - 3.0
            );
        }
        for (t, tail, persisted) in &panel.tails {
            let (cx, cy) = (x(*t), y(*tail));
            let _ = writeln!(
                svg,
                r#"<path d="M {cx:.1} {:.1} L {:.1} {cy:.1} L {cx:.1} {:.1} L {:.1} {cy:.1} Z" fill="{COLOR_TAIL}"/><line x1="{:.1}" x2="{:.1}" y1="{py:.1}" y2="{py:.1}" stroke="{COLOR_PERSISTED}" stroke-width="3"/>"#,
                cy - 5.0,
                cx + 5.0,
                cy + 5.0,
                cx - 5.0,
                cx - 6.0,
                cx + 6.0,
                py = y(*persisted)
            );
        }
        let mut faults: Vec<&(u64, String)> =
            panel.faults.iter().chain(global_faults.iter()).collect();
        faults.sort();
        for (i, (t, label)) in thin(&faults, FAULT_LABELS_MAX).iter().enumerate() {
            let xx = x(*t);
            let row = (i % 3) as f64 * 11.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{:.1}" stroke="{COLOR_FAULT}" stroke-width="2"/><text x="{:.1}" y="{:.1}" fill="{COLOR_FAULT}" font-size="10">{}</text>"#,
                top + 10.0,
                xx + 2.0,
                top + 20.0 + row,
                escape(label)
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// Writes the timeline of `outcome` to `path`.
pub fn write(path: &std::path::Path, outcome: &RunOutcome) -> std::io::Result<()> {
    std::fs::write(path, render(outcome))
}

fn legend(svg: &mut String) {
    let items: [(&str, &str, &str); 9] = [
        ("line", COLOR_HWM, "in-memory HWM"),
        ("line", COLOR_PERSISTED, "persisted HWM"),
        ("line", COLOR_FRONTIER, "consumer frontier (□ recovered)"),
        ("dot", COLOR_ACK, "acknowledged offset"),
        ("diamond", COLOR_TAIL, "durable tail at crash"),
        ("vline", COLOR_CRASH, "crash"),
        ("vline", COLOR_RESTART, "restart"),
        ("vline", COLOR_HEAL, "heal"),
        ("vline", COLOR_FAULT, "fault"),
    ];
    let mut x = LEFT;
    for (shape, color, label) in items {
        let y = 58.0;
        match shape {
            "line" => {
                let _ = write!(
                    svg,
                    r#"<line x1="{x:.1}" x2="{:.1}" y1="{y}" y2="{y}" stroke="{color}" stroke-width="2.5"/>"#,
                    x + 18.0
                );
            }
            "dot" => {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{y}" r="2.5" fill="{color}"/>"#,
                    x + 9.0
                );
            }
            "diamond" => {
                let _ = write!(
                    svg,
                    r#"<path d="M {:.1} {} L {:.1} {y} L {:.1} {} L {:.1} {y} Z" fill="{color}"/>"#,
                    x + 9.0,
                    y - 5.0,
                    x + 14.0,
                    x + 9.0,
                    y + 5.0,
                    x + 4.0
                );
            }
            _ => {
                let _ = write!(
                    svg,
                    r#"<line x1="{:.1}" x2="{:.1}" y1="{}" y2="{}" stroke="{color}" stroke-width="2"/>"#,
                    x + 9.0,
                    x + 9.0,
                    y - 7.0,
                    y + 7.0
                );
            }
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{}">{}</text>"#,
            x + 22.0,
            y + 4.0,
            escape(label)
        );
        x += 26.0 + label.chars().count() as f64 * 7.0;
    }
}

/// A step line through `points`, held to `t_end`.
fn steps(
    svg: &mut String,
    points: &[(u64, u64)],
    x: &dyn Fn(u64) -> f64,
    y: &dyn Fn(u64) -> f64,
    color: &str,
    width: &str,
    t_end: u64,
) {
    let Some(&(t0, o0)) = points.first() else {
        return;
    };
    let mut d = format!("M {:.1} {:.1}", x(t0), y(o0));
    let mut last = o0;
    for &(t, o) in &points[1..] {
        if o != last {
            let _ = write!(d, " H {:.1} V {:.1}", x(t), y(o));
            last = o;
        }
    }
    let _ = write!(d, " H {:.1}", x(t_end));
    let _ = writeln!(
        svg,
        r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}"/>"#
    );
}

/// About five round tick values in `[0, max]`.
fn ticks(max: u64) -> Vec<u64> {
    let raw = (max as f64 / 5.0).max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(raw) as u64;
    let step = step.max(1);
    (0..=max / step).map(|i| i * step).collect()
}

/// At most `max` items, evenly spread.
fn thin<T: Clone>(items: &[T], max: usize) -> Vec<T> {
    if items.len() <= max {
        return items.to_vec();
    }
    (0..max)
        .map(|i| items[i * items.len() / max].clone())
        .collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_bounded() {
        assert_eq!(ticks(100), vec![0, 20, 40, 60, 80, 100]);
        assert_eq!(ticks(3_050), vec![0, 1_000, 2_000, 3_000]);
        assert_eq!(ticks(1), vec![0, 1]);
        assert_eq!(thin(&[1, 2, 3, 4], 2), vec![1, 3]);
    }
}
