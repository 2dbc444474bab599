//! The summary a sweep prints: verdict counts, speed, faults, paths and excuses, and a
//! replay line per failure.

use super::*;

/// Prints the summary of a set of seed records (also used by `cafelog merge`).
pub fn print_summary(
    out: &mut impl Write,
    records: &[SeedRecord],
    elapsed: Duration,
) -> std::io::Result<()> {
    let passed = records.iter().filter(|r| r.passed()).count();
    let secs = elapsed.as_secs_f64();
    let sim_s: f64 = records.iter().map(|r| r.sim_ms as f64 / 1000.0).sum();
    writeln!(
        out,
        "\nseeds run: {}   passed: {passed}   failed: {}",
        records.len(),
        records.len() - passed
    )?;
    if secs > 0.0 {
        writeln!(
            out,
            "wall {secs:.1}s   {:.1} seeds/s   {:.0} simulated s per wall s",
            records.len() as f64 / secs,
            sim_s / secs
        )?;
    }
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.passed()) {
        *by_kind.entry(r.kind()).or_insert(0) += 1;
    }
    if !by_kind.is_empty() {
        writeln!(out, "failures by verdict and checker:")?;
        for (kind, n) in &by_kind {
            writeln!(out, "  {n:>6}  {kind}")?;
        }
    }
    let mut faults: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        for (k, v) in &r.faults {
            *faults.entry(k.as_str()).or_insert(0) += v;
        }
    }
    writeln!(out, "faults injected:")?;
    for (k, v) in &faults {
        writeln!(out, "  {v:>8}  {k}")?;
    }
    let mut paths: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for r in records {
        for (k, v) in &r.paths {
            let e = paths.entry(k.as_str()).or_insert((0, 0));
            e.0 += v;
            e.1 += u64::from(*v > 0);
        }
    }
    writeln!(out, "paths reached (total, seeds):")?;
    let mut unreached = Vec::new();
    for (k, (total, seeds)) in &paths {
        // A fault kind's own path, in a sweep that never drew the kind (`--without`).
        if *total == 0 && *k == "latent_sectors" && !faults.contains_key("latent_sector") {
            continue;
        }
        let flag = if *total == 0 {
            unreached.push(*k);
            "   <-- NOT REACHED"
        } else {
            ""
        };
        writeln!(out, "  {total:>8} {seeds:>6}  {k}{flag}")?;
    }
    if !unreached.is_empty() {
        writeln!(
            out,
            "warning: no seed reached: {} (a green sweep here proves nothing about them)",
            unreached.join(", ")
        )?;
    }
    // What the green verdicts rest on: every excuse row, with how often it fired.
    let excuses = excuse_totals(records);
    writeln!(out, "excuses used (times, seeds):")?;
    for (name, (times, seeds)) in &excuses {
        writeln!(out, "  {times:>8} {seeds:>6}  {name}")?;
    }
    let failures: Vec<&SeedRecord> = records.iter().filter(|r| !r.passed()).collect();
    if !failures.is_empty() {
        writeln!(out, "failing seeds (one line each reproduces it):")?;
        for f in failures {
            let message: String = f.message.chars().take(160).collect();
            writeln!(
                out,
                "  cafelog replay --seed {} --profile {}{}   # {message}",
                f.seed, f.profile, f.flags
            )?;
        }
    }
    Ok(())
}

/// Per excuse row (every row, fired or not): times it fired and seeds it fired in.
pub(super) fn excuse_totals(records: &[SeedRecord]) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = cafelog_sim::check::excuse::ExcuseKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), (0, 0)))
        .collect();
    for r in records {
        for (k, v) in &r.excuses {
            let e = out.entry(k.clone()).or_insert((0, 0));
            e.0 += v;
            e.1 += u64::from(*v > 0);
        }
    }
    out
}

/// Re-runs an evenly spread sample (failures first) and compares trace hashes.
/// The flags that turn the kinds `without` off, as a replay command line takes them.
pub(super) fn without_flags(without: &[String]) -> String {
    without.iter().map(|k| format!(" --without {k}")).collect()
}
