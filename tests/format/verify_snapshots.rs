//! `verify --json` on every committed fixture, as snapshots. Besides the snapshot, each
//! case asserts what it was built to show (exit code, rule, HWM, tail) so that a wrong
//! snapshot cannot be accepted unnoticed.

use super::fixtures::CASES;
use super::support::{cafelog_on, corpus_dir};
use serde_json::{Value, json};

#[test]
fn verify_json_reports_every_fixture() {
    for case in CASES {
        let dir = corpus_dir().join(case.name);
        let run = cafelog_on("verify", &dir, &["--json"]);
        let report: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{}: stdout is not JSON ({e}): {}", case.name, run.stdout));

        assert_eq!(
            run.code, case.exit_code,
            "{}: exit code; stderr: {}",
            case.name, run.stderr
        );
        assert_eq!(report["hwm"], case.hwm, "{}: hwm", case.name);
        assert_eq!(
            report["tail_offset"], case.tail_offset,
            "{}: tail_offset",
            case.name
        );
        assert_eq!(report["opens"], case.exit_code == 0, "{}: opens", case.name);
        assert_eq!(
            report["corruption"].is_null(),
            case.exit_code == 0,
            "{}: corruption",
            case.name
        );
        let rule = report["truncation"]["rule"].as_str();
        assert_eq!(rule, case.rule, "{}: truncation rule", case.name);
        // The derived fields keep the relations FORMAT.md states.
        let n = |field: &str| {
            report[field]
                .as_u64()
                .unwrap_or_else(|| panic!("{field} is a number"))
        };
        assert_eq!(
            n("hidden_records"),
            n("tail_offset") - n("hwm"),
            "{}",
            case.name
        );
        assert_eq!(
            n("records"),
            n("tail_offset") - n("log_start"),
            "{}",
            case.name
        );
        let persisted = report["persisted_hwm"].as_u64().unwrap_or(0);
        assert_eq!(
            n("recorded_loss_records"),
            persisted.saturating_sub(n("hwm")),
            "{}",
            case.name
        );
        if case.exit_code == 1 {
            let corruption = &report["corruption"];
            let message = format!(
                "{} at byte {}",
                corruption["segment"].as_str().unwrap(),
                corruption["position"]
            );
            assert!(
                run.stderr.contains(&message),
                "{}: stderr {:?} names {message}",
                case.name,
                run.stderr
            );
        } else {
            assert_eq!(run.stderr, "", "{}: nothing on stderr", case.name);
        }

        insta::assert_json_snapshot!(
            format!("verify_{}", case.name),
            json!({ "exit_code": run.code, "report": report })
        );
    }
}

#[test]
fn verify_text_report_agrees_with_json() {
    for case in CASES {
        let dir = corpus_dir().join(case.name);
        let text = cafelog_on("verify", &dir, &[]);
        let json: Value =
            serde_json::from_str(&cafelog_on("verify", &dir, &["--json"]).stdout).unwrap();
        assert_eq!(text.code, case.exit_code, "{}", case.name);
        let line = |label: &str| {
            text.stdout
                .lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("{}: no {label:?} line in {}", case.name, text.stdout))
                .to_string()
        };
        assert!(
            line("hwm ").contains(&format!(" {} ", json["hwm"])),
            "{}",
            case.name
        );
        assert!(line("hidden records").ends_with(&format!(" {}", json["hidden_records"])));
        assert!(line("skipped records").ends_with(&format!(" {}", json["skipped_records"])));
        let verdict = line("verdict");
        assert_eq!(
            verdict.contains("REFUSE"),
            case.exit_code == 1,
            "{}: {verdict}",
            case.name
        );
        if let Some(rule) = case.rule {
            assert!(line("truncation").contains(rule), "{}", case.name);
        }
    }
}
