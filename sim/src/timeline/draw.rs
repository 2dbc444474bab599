//! Drawing helpers of the timeline: the legend, step lines, axis ticks, thinning, and
//! the labels of faults. Pure functions of their inputs; nothing here reads a history.

use super::*;
use crate::history::FaultKind;

pub(super) fn fault_label(kind: &FaultKind) -> String {
    let name = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.get("fault").and_then(|f| f.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "fault".into());
    match kind {
        FaultKind::ClockStep { back_ms } => format!("clock -{back_ms}ms"),
        FaultKind::BitFlip { file, .. }
        | FaultKind::LatentSector { file, .. }
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

pub(super) fn legend(svg: &mut String) {
    let items: [(&str, &str, &str); 13] = [
        ("line", COLOR_HWM, "in-memory HWM"),
        ("line", COLOR_PERSISTED, "persisted HWM"),
        ("line", COLOR_FRONTIER, "consumer frontier (□ recovered)"),
        ("dot", COLOR_ACK, "acknowledged offset"),
        ("diamond", COLOR_TAIL, "durable tail at crash"),
        ("vline", COLOR_CRASH, "crash"),
        ("vline", COLOR_RESTART, "restart"),
        ("vline", COLOR_HEAL, "heal"),
        ("vline", COLOR_FAULT, "fault (F)"),
        ("vline", COLOR_WAL, "store-wide (W)"),
        ("cross", COLOR_VIOLATION, "violation (V)"),
        ("triangle", COLOR_VIOLATION, "event it names"),
        ("ring", COLOR_EXCUSED, "excused loss"),
    ];
    let mut x = LEFT;
    let mut y = 52.0;
    for (shape, color, label) in items {
        let width = 26.0 + label.chars().count() as f64 * 7.0;
        if x + width > WIDTH - RIGHT {
            // Wrap onto a second row rather than run off the picture.
            x = LEFT;
            y += 16.0;
        }
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
            "cross" => {
                let _ = write!(
                    svg,
                    r#"<path d="M {:.1} {} L {:.1} {} M {:.1} {} L {:.1} {}" stroke="{color}" stroke-width="2.5"/>"#,
                    x + 4.0,
                    y - 5.0,
                    x + 14.0,
                    y + 5.0,
                    x + 4.0,
                    y + 5.0,
                    x + 14.0,
                    y - 5.0
                );
            }
            "triangle" => {
                let _ = write!(
                    svg,
                    r#"<path d="M {:.1} {} L {:.1} {} L {:.1} {} Z" fill="{color}"/>"#,
                    x + 5.0,
                    y + 4.0,
                    x + 13.0,
                    y + 4.0,
                    x + 9.0,
                    y - 3.0
                );
            }
            "ring" => {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{y}" r="5" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
                    x + 9.0
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
        x += width;
    }
}

/// Places tags on a panel so that none overlaps another: each tag tries its candidate
/// baselines in order and takes the first where its box meets no placed one.
#[derive(Default)]
pub(super) struct Tags {
    /// (left, right, top, bottom) of each placed tag.
    placed: Vec<(f64, f64, f64, f64)>,
}

impl Tags {
    /// The baseline for a tag at `x` of `width`, from `candidates`, or `None` when each
    /// meets a placed tag (the tag is left out; its table line and hover title still
    /// say it).
    pub(super) fn place(&mut self, x: f64, width: f64, candidates: &[f64]) -> Option<f64> {
        let (left, right) = (x - 1.0, x + width + 1.0);
        let y = candidates.iter().copied().find(|&y| {
            let (top, bottom) = (y - 9.0, y + 1.0);
            !self
                .placed
                .iter()
                .any(|&(l, r, t, b)| left < r && l < right && top < b && t < bottom)
        })?;
        self.placed.push((left, right, y - 9.0, y + 1.0));
        Some(y)
    }
}

/// The width of `text` at the drawing's 10-11 px font, near enough to keep tags apart.
pub(super) fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 6.2
}

/// Table lines per column under a lane.
pub(super) const TABLE_COLUMNS: usize = 3;
pub(super) const TABLE_ROW: f64 = 13.0;
const TABLE_CHARS: usize = 58;

/// The height of the table of `n` lines under a lane.
pub(super) fn table_height(n: usize) -> f64 {
    n.div_ceil(TABLE_COLUMNS) as f64 * TABLE_ROW
}

/// A table of `(tag, text, title)` lines in columns from `top`, each line with its hover
/// title; text past the column's width is cut (the title keeps it whole).
pub(super) fn table(svg: &mut String, top: f64, lines: &[(String, String, String, &str)]) {
    let rows = lines.len().div_ceil(TABLE_COLUMNS).max(1);
    let column = (WIDTH - LEFT - RIGHT) / TABLE_COLUMNS as f64;
    for (i, (tag, text, title, color)) in lines.iter().enumerate() {
        let (col, row) = (i / rows, i % rows);
        let mut shown: String = text.chars().take(TABLE_CHARS).collect();
        if text.chars().count() > TABLE_CHARS {
            shown.push('…');
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="10"><title>{}</title><tspan fill="{color}" font-weight="bold">{}</tspan> {}</text>"#,
            LEFT + col as f64 * column,
            top + (row as f64 + 1.0) * TABLE_ROW - 3.0,
            escape(title),
            escape(tag),
            escape(&shown)
        );
    }
}

/// A step line through `points`, held to `t_end`.
pub(super) fn steps(
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
pub(super) fn ticks(max: u64) -> Vec<u64> {
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
pub(super) fn thin<T: Clone>(items: &[T], max: usize) -> Vec<T> {
    if items.len() <= max {
        return items.to_vec();
    }
    (0..max)
        .map(|i| items[i * items.len() / max].clone())
        .collect()
}

pub(super) fn escape(text: &str) -> String {
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
