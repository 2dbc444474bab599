//! The timeline of a run as a plain SVG: one panel per partition, simulated time on the
//! x axis, offsets on the y axis. Drawn from the history alone:
//!
//! - in-memory HWM and persisted HWM: steps from `hwm_observed`;
//! - the durable tail and persisted HWM at each crash: marks from `crash`;
//! - the consumer frontier: steps from `frontier_written`, marks at `frontier_observed`;
//! - acknowledged produce offsets: dots from `produce_ack`;
//! - crashes, restarts, the heal: vertical lines across every panel; faults on the
//!   partition (and partition-less ones such as clock steps): ticks at the top, labelled;
//! - what the checkers concluded ([`marks`]): records a violation names, and lost
//!   records an excuse covered, with the excuse's name.
//!
//! Bounds: at most [`ACK_DOTS_MAX`] ack dots and [`FAULT_LABELS_MAX`] fault labels per
//! panel (the rest are thinned evenly), so a long run still gives a readable file.

use crate::history::{EventKind, FaultKind, TopicPartition};
use crate::world::RunOutcome;
use std::collections::BTreeMap;
use std::fmt::Write as _;

mod draw;
mod marks;

use draw::{escape, fault_label, legend, steps, thin, ticks};

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
const COLOR_VIOLATION: &str = "#d00000";
const COLOR_EXCUSED: &str = "#b8860b";

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
            EventKind::FrontierObserved { tp, frontier, .. } => {
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
            EventKind::Crash { partitions, .. } => {
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
                if matches!(
                    kind,
                    FaultKind::Crash | FaultKind::ProcessCrash | FaultKind::Latency { .. }
                ) {
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
    let mut marks = marks::of(outcome.report.as_ref(), &outcome.history);
    for tp in marks.keys() {
        panels.entry(tp.clone()).or_default();
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
        let panel_marks = marks.remove(tp).unwrap_or_default();
        let o_max = panel
            .offset_max()
            .max(
                panel_marks
                    .violations
                    .iter()
                    .map(|m| m.offset)
                    .max()
                    .unwrap_or(0),
            )
            .max(
                panel_marks
                    .excused
                    .iter()
                    .map(|m| m.offset)
                    .max()
                    .unwrap_or(0),
            )
            .max(1);
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
        for m in thin_marks(&panel_marks.excused) {
            let (cx, cy) = (x(m.t), y(m.offset));
            let _ = writeln!(
                svg,
                r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="5" fill="none" stroke="{COLOR_EXCUSED}" stroke-width="1.5"><title>{}</title></circle>"#,
                escape(&format!("excused at offset {}: {}", m.offset, m.label))
            );
        }
        for (i, m) in thin_marks(&panel_marks.violations).into_iter().enumerate() {
            let (cx, cy) = (x(m.t), y(m.offset));
            let _ = writeln!(
                svg,
                r#"<path d="M {:.1} {:.1} L {:.1} {:.1} M {:.1} {:.1} L {:.1} {:.1}" stroke="{COLOR_VIOLATION}" stroke-width="2.5"/><text x="{:.1}" y="{:.1}" fill="{COLOR_VIOLATION}" font-weight="bold">{}</text>"#,
                cx - 6.0,
                cy - 6.0,
                cx + 6.0,
                cy + 6.0,
                cx - 6.0,
                cy + 6.0,
                cx + 6.0,
                cy - 6.0,
                cx + 8.0,
                cy - 6.0 - (i % 3) as f64 * 11.0,
                escape(&format!("{} @{}", m.label, m.offset))
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

fn thin_marks(marks: &[marks::Mark]) -> Vec<&marks::Mark> {
    let refs: Vec<&marks::Mark> = marks.iter().collect();
    thin(&refs, marks::MARKS_MAX)
}

/// Writes the timeline of `outcome` to `path`.
pub fn write(path: &std::path::Path, outcome: &RunOutcome) -> std::io::Result<()> {
    std::fs::write(path, render(outcome))
}
