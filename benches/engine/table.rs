//! Printing the tables: sections, headers, rows, and the units and ratios in cells.

use super::*;

pub(crate) fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let index = ((samples.len() as f64 - 1.0) * p / 100.0).round() as usize;
    samples[index.min(samples.len() - 1)]
}

/// The middle value of `samples` (sorted in place; the upper middle of an even count).
pub(crate) fn median(samples: &mut [f64]) -> f64 {
    samples.sort_unstable_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64().max(1e-9)
}

pub(crate) fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub(crate) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

pub(crate) fn section(title: &str) {
    println!("\n## {title}");
}

pub(crate) const FIRST_COLUMN: usize = 44;

pub(crate) const COLUMN: usize = 16;

pub(crate) fn header(columns: &[&str]) {
    row(&columns.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    let rules: Vec<String> = (0..columns.len())
        .map(|i| "-".repeat(if i == 0 { FIRST_COLUMN } else { COLUMN }))
        .collect();
    row(&rules);
}

pub(crate) fn row(cells: &[String]) {
    let mut line = String::from("| ");
    for (i, cell) in cells.iter().enumerate() {
        let width = if i == 0 { FIRST_COLUMN } else { COLUMN };
        line.push_str(&format!("{cell:<width$} | "));
    }
    println!("{}", line.trim_end());
}
