//! A sweep's files: one JSON object per seed, and a JUnit report for CI.

use super::summary::excuse_totals;
use super::*;

/// The `--json` file while the sweep runs: each seed's line is appended the moment the
/// seed finishes, so a sweep stopped part-way (killed, out of memory, a hang past its
/// supervisor's patience) leaves every seed it finished; [`write_json`] rewrites it in
/// seed order at the end.
pub(super) struct JsonStream {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl JsonStream {
    /// Creates (or truncates) the file: a path that cannot be written fails the sweep
    /// before any seed runs. Only a regular file (or a new one) is written as the sweep
    /// goes: a pipe or `/dev/stdout` gets the records once, at the end (`None`).
    pub(super) fn create(path: &Path) -> Result<Option<JsonStream>, String> {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Ok(None);
        }
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(JsonStream {
            path: path.to_path_buf(),
            file: Some(file),
        }))
    }

    /// Appends `record`'s line. A write that fails is reported once and ends the
    /// streaming; the final rewrite reports its own error.
    pub(super) fn append(&mut self, record: &SeedRecord) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut line = serde_json::to_string(record).expect("a seed record serialises");
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!(
                "cafelog: warning: {}: {e}; seeds are no longer written as they finish",
                self.path.display()
            );
            self.file = None;
        }
    }
}

/// Writes `records`, one line each, to `path`. A regular file (or a new one) is
/// replaced whole, through a temporary file beside it and a rename, so a sweep killed
/// while writing leaves the streamed lines or the full file, never a part of either;
/// a pipe or `/dev/stdout` is written directly.
pub(super) fn write_json(path: &PathBuf, records: &[SeedRecord]) -> Result<(), String> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, text).map_err(err);
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) fn write_junit(
    path: &PathBuf,
    profile: &Profile,
    records: &[SeedRecord],
    elapsed: Duration,
) -> Result<(), String> {
    let failures = records.iter().filter(|r| !r.passed()).count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str(&format!(
        "<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n  <testsuite name=\"cafelog sweep ({})\" tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n",
        records.len(),
        elapsed.as_secs_f64(),
        profile.name,
        records.len(),
        elapsed.as_secs_f64()
    ));
    // The excuses the verdicts rest on, as suite properties CI systems display.
    xml.push_str("    <properties>\n");
    for (name, (times, seeds)) in excuse_totals(records) {
        xml.push_str(&format!(
            "      <property name=\"excuse.{name}\" value=\"{times} times in {seeds} seeds\"/>\n"
        ));
    }
    xml.push_str("    </properties>\n");
    for r in records {
        xml.push_str(&format!(
            "    <testcase classname=\"cafelog.sweep.{}\" name=\"seed {}\" time=\"{:.3}\"",
            profile.name,
            r.seed,
            r.wall_ms as f64 / 1000.0
        ));
        if r.passed() {
            xml.push_str("/>\n");
        } else {
            xml.push_str(&format!(
                ">\n      <failure type=\"{}\" message=\"{}\">cafelog replay --seed {} --profile {}{}\n{}</failure>\n    </testcase>\n",
                xml_escape(&r.kind()),
                xml_escape(&r.message.chars().take(300).collect::<String>()),
                r.seed,
                r.profile,
                r.flags,
                xml_escape(&r.message)
            ));
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    std::fs::write(path, xml).map_err(|e| format!("{}: {e}", path.display()))
}
