//! The timeline of a run as a plain SVG: one panel per partition, simulated time on the
//! x axis, offsets on the y axis. Drawn from the history alone ([`collect`]):
//!
//! - in-memory HWM and persisted HWM: steps from `hwm_observed`;
//! - the durable tail and persisted HWM at each crash: marks from `crash`;
//! - the consumer frontier: steps from `frontier_written`, marks at `frontier_observed`;
//! - acknowledged produce offsets: dots from `produce_ack`;
//! - crashes, restarts, the heal: vertical lines across every panel;
//! - faults on a partition's files, its refusals and poisonings: numbered ticks on the
//!   panel's top edge (`F1`, ...), told in a table under the panel;
//! - what belongs to no partition (the shared WAL's faults, alarms and destroyed
//!   entries; clock steps): a store-wide lane of its own above the panels (`W1`, ...);
//! - what the checkers concluded ([`marks`]): a cross on each record a violation names
//!   (`V1`, ...; the table has the checkers and the id), a ring on each excused loss,
//!   a red tick for each event a violation names. Every mark and tick carries the
//!   exact event or message as its hover title.
//!
//! Tags on the plot are packed into rows so that none overlaps another; one that finds
//! no room is left out, and its table line still says it. Partitions that never held a
//! record are folded into one line. Bounds: at most [`ACK_DOTS_MAX`] ack dots and
//! [`FAULT_LABELS_MAX`] notes per lane (the rest are thinned evenly, cancelled requests
//! first).

use crate::world::RunOutcome;
use std::fmt::Write as _;

mod collect;
mod draw;
mod marks;

use collect::{Note, collect};
use draw::{Tags, escape, legend, steps, table, table_height, text_width, thin, ticks};

pub const ACK_DOTS_MAX: usize = 2_000;
pub const FAULT_LABELS_MAX: usize = 60;

const WIDTH: f64 = 1_200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 84.0;
const PANEL_GAP: f64 = 34.0;
const PLOT_HEIGHT: f64 = 220.0;
const LANE_HEIGHT: f64 = 52.0;
/// Rows of tags under a lane's top edge.
const TAG_ROWS: usize = 3;
/// The line height of tags.
const TAG_ROW: f64 = 11.0;

const COLOR_HWM: &str = "#1f77b4";
const COLOR_PERSISTED: &str = "#9467bd";
const COLOR_FRONTIER: &str = "#2ca02c";
const COLOR_ACK: &str = "#7f7f7f";
const COLOR_TAIL: &str = "#d62728";
const COLOR_CRASH: &str = "#d62728";
const COLOR_RESTART: &str = "#17becf";
const COLOR_HEAL: &str = "#1f77b4";
const COLOR_FAULT: &str = "#ff7f0e";
const COLOR_WAL: &str = "#8c564b";
const COLOR_VIOLATION: &str = "#d00000";
const COLOR_EXCUSED: &str = "#b8860b";

/// The SVG text of `outcome`'s timeline.
pub fn render(outcome: &RunOutcome) -> String {
    let mut c = collect(&outcome.history);
    let mut marks = marks::of(outcome.report.as_ref(), &outcome.history);
    for tp in marks.keys() {
        c.panels.entry(tp.clone()).or_default();
    }
    let idle: Vec<String> = c
        .panels
        .iter()
        .filter(|(tp, p)| p.idle() && !marks.contains_key(*tp))
        .map(|(tp, _)| tp.to_string())
        .collect();
    c.panels.retain(|tp, p| !p.idle() || marks.contains_key(tp));
    let store = collect::keep(&c.store, FAULT_LABELS_MAX);
    let t_max = outcome.history.end_ms().max(outcome.sim_ms).max(1);
    let plot_width = WIDTH - LEFT - RIGHT;
    let x = |t: u64| LEFT + t as f64 / t_max as f64 * plot_width;

    let mut body = String::new();
    let mut top = TOP;
    if !idle.is_empty() {
        let _ = writeln!(
            body,
            r#"<text x="{LEFT}" y="{:.1}">no record reached {}</text>"#,
            top + 12.0,
            escape(&idle.join(", "))
        );
        top += 22.0;
    }
    let run_lines = |svg: &mut String, top: f64, bottom: f64| {
        for (times, color, dash) in [
            (&c.crashes, COLOR_CRASH, ""),
            (&c.restarts, COLOR_RESTART, r#" stroke-dasharray="4 3""#),
        ] {
            for t in times.iter() {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="{color}" stroke-width="1.2"{dash}/>"#,
                    xx = x(*t)
                );
            }
        }
        if let Some(t) = c.heal {
            let xx = x(t);
            let _ = writeln!(
                svg,
                r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="{COLOR_HEAL}" stroke-width="2" stroke-dasharray="8 4"/><text x="{:.1}" y="{:.1}" fill="{COLOR_HEAL}">heal</text>"#,
                xx + 3.0,
                bottom - 4.0,
            );
        }
    };
    if !store.is_empty() {
        let _ = writeln!(
            body,
            r#"<text x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">store-wide: the WAL every partition shares, the clock</text>"#,
            top + 14.0
        );
        let lane = top + 20.0;
        let _ = writeln!(
            body,
            r##"<rect x="{LEFT}" y="{lane:.1}" width="{plot_width:.1}" height="{LANE_HEIGHT}" fill="#fafafa" stroke="#999"/>"##
        );
        run_lines(&mut body, lane, lane + LANE_HEIGHT);
        let mut tags = Tags::default();
        let lines = note_ticks(&mut body, &mut tags, &store, "W", COLOR_WAL, lane, &x);
        table(&mut body, lane + LANE_HEIGHT + 4.0, &lines);
        top = lane + LANE_HEIGHT + 4.0 + table_height(lines.len()) + PANEL_GAP;
    }
    for (tp, panel) in &c.panels {
        let panel_marks = marks.remove(tp).unwrap_or_default();
        let plot_top = top + 20.0;
        let bottom = plot_top + PLOT_HEIGHT;
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
            body,
            r#"<text x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
            plot_top - 6.0,
            escape(&tp.to_string())
        );
        let _ = writeln!(
            body,
            r##"<rect x="{LEFT}" y="{plot_top:.1}" width="{plot_width:.1}" height="{PLOT_HEIGHT}" fill="#fafafa" stroke="#999"/>"##
        );
        axes(&mut body, plot_top, bottom, o_max, t_max, &x, &y);
        run_lines(&mut body, plot_top, bottom);
        series(&mut body, panel, &x, &y, t_max);
        let notes = collect::keep(&panel.notes, FAULT_LABELS_MAX);
        let mut tags = Tags::default();
        let mut lines = note_ticks(&mut body, &mut tags, &notes, "F", COLOR_FAULT, plot_top, &x);
        for (t, event) in &panel_marks.events {
            let xx = x(*t);
            let _ = writeln!(
                body,
                r#"<path d="M {:.1} {:.1} L {:.1} {:.1} L {xx:.1} {:.1} Z" fill="{COLOR_VIOLATION}"><title>{}</title></path>"#,
                xx - 4.0,
                bottom,
                xx + 4.0,
                bottom,
                bottom - 7.0,
                escape(&format!("named by a violation: {event}"))
            );
        }
        for m in thin_marks(&panel_marks.excused) {
            let _ = writeln!(
                body,
                r#"<circle cx="{:.1}" cy="{:.1}" r="5" fill="none" stroke="{COLOR_EXCUSED}" stroke-width="1.5"><title>{}</title></circle>"#,
                x(m.t),
                y(m.offset),
                escape(&m.title)
            );
        }
        for (i, m) in thin_marks(&panel_marks.violations).into_iter().enumerate() {
            let (cx, cy) = (x(m.t), y(m.offset));
            let tag = format!("V{}", i + 1);
            let _ = writeln!(
                body,
                r#"<path d="M {:.1} {:.1} L {:.1} {:.1} M {:.1} {:.1} L {:.1} {:.1}" stroke="{COLOR_VIOLATION}" stroke-width="2.5"><title>{}</title></path>"#,
                cx - 6.0,
                cy - 6.0,
                cx + 6.0,
                cy + 6.0,
                cx - 6.0,
                cy + 6.0,
                cx + 6.0,
                cy - 6.0,
                escape(&m.title)
            );
            // Beside the cross, then above and below it by a line at a time.
            let candidates: Vec<f64> = [0.0, -1.0, 1.0, -2.0, 2.0, -3.0, 3.0]
                .iter()
                .map(|k| cy + 4.0 + k * TAG_ROW)
                .filter(|&yy| plot_top + 9.0 <= yy && yy <= bottom)
                .collect();
            if let Some(yy) = tags.place(cx + 8.0, text_width(&tag), &candidates) {
                let _ = writeln!(
                    body,
                    r#"<text x="{:.1}" y="{yy:.1}" fill="{COLOR_VIOLATION}" font-weight="bold">{tag}</text>"#,
                    cx + 8.0,
                );
            }
            lines.push((
                tag,
                format!("t={}ms {} @{}", m.t, m.label, m.offset),
                m.title.clone(),
                COLOR_VIOLATION,
            ));
        }
        let table_top = bottom + 20.0;
        table(&mut body, table_top, &lines);
        top = table_top + table_height(lines.len()) + PANEL_GAP;
    }

    let height = top + 10.0;
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
    let verdict = outcome.verdict.to_string();
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="38"><title>{}</title>{}</text>"#,
        escape(&verdict),
        escape(&verdict.chars().take(190).collect::<String>())
    );
    legend(&mut svg);
    svg.push_str(&body);
    svg.push_str(
        "</svg>
",
    );
    svg
}

/// Numbered ticks on a lane's top edge for `notes` (tags `prefix`1, ... packed into
/// rows), each with its event as the hover title; returns their table lines.
fn note_ticks<'c>(
    svg: &mut String,
    tags: &mut Tags,
    notes: &[Note],
    prefix: &str,
    color: &'c str,
    top: f64,
    x: &dyn Fn(u64) -> f64,
) -> Vec<(String, String, String, &'c str)> {
    let candidates: Vec<f64> = (0..TAG_ROWS)
        .map(|row| top + 19.0 + row as f64 * TAG_ROW)
        .collect();
    let mut lines = Vec::new();
    for (i, note) in notes.iter().enumerate() {
        let xx = x(note.t);
        let tag = format!("{prefix}{}", i + 1);
        let _ = writeln!(
            svg,
            r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"><title>{}</title></line>"#,
            top + 10.0,
            escape(&note.detail)
        );
        if let Some(yy) = tags.place(xx + 2.0, text_width(&tag), &candidates) {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{yy:.1}" fill="{color}" font-size="10">{tag}</text>"#,
                xx + 2.0,
            );
        }
        lines.push((
            tag,
            format!("t={}ms {}", note.t, note.label),
            note.detail.clone(),
            color,
        ));
    }
    lines
}

/// Grid lines, offset ticks and time ticks of a panel.
fn axes(
    svg: &mut String,
    top: f64,
    bottom: f64,
    o_max: u64,
    t_max: u64,
    x: &dyn Fn(u64) -> f64,
    y: &dyn Fn(u64) -> f64,
) {
    for tick in ticks(o_max) {
        let yy = y(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end">{tick}</text>"##,
            WIDTH - RIGHT,
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
}

/// A panel's data: ack dots, the HWM, persisted HWM and frontier steps, recovered
/// frontiers, and the durable tail at each crash.
fn series(
    svg: &mut String,
    panel: &collect::Panel,
    x: &dyn Fn(u64) -> f64,
    y: &dyn Fn(u64) -> f64,
    t_max: u64,
) {
    for (t, o) in &thin(&panel.acks, ACK_DOTS_MAX) {
        let _ = writeln!(
            svg,
            r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{COLOR_ACK}"/>"#,
            x(*t),
            y(*o)
        );
    }
    steps(svg, &panel.persisted, x, y, COLOR_PERSISTED, "2", t_max);
    steps(svg, &panel.hwm, x, y, COLOR_HWM, "1.6", t_max);
    steps(svg, &panel.frontier, x, y, COLOR_FRONTIER, "1.6", t_max);
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
}

fn thin_marks(marks: &[marks::Mark]) -> Vec<&marks::Mark> {
    let refs: Vec<&marks::Mark> = marks.iter().collect();
    thin(&refs, marks::MARKS_MAX)
}

/// Writes the timeline of `outcome` to `path`.
#[allow(
    clippy::disallowed_methods,
    reason = "host I/O after the run: the SVG file"
)]
pub fn write(path: &std::path::Path, outcome: &RunOutcome) -> std::io::Result<()> {
    std::fs::write(path, render(outcome))
}
