//! `dump`: snapshots of `--json` output, record bytes against the generator, skipped
//! records on stderr, `--from`, the readable table, and a reader that closes the pipe.

use super::support::{Builder, cafelog_on, corpus_dir, parse_dump_json, record, write_files};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use cafelog_engine::format::frame::Codec;
use serde_json::{Value, json};
use std::io::Read;
use std::process::{Command, Stdio};

fn dump_json(case: &str, extra: &[&str]) -> (i32, Vec<Value>, String) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let run = cafelog_on("dump", &corpus_dir().join(case), &args);
    (run.code, parse_dump_json(&run.stdout), run.stderr)
}

fn offsets(records: &[Value]) -> Vec<u64> {
    records
        .iter()
        .map(|r| r["offset"].as_u64().unwrap())
        .collect()
}

/// Asserts every dumped record is the generator's record at its offset.
fn assert_generated(records: &[Value]) {
    for r in records {
        let offset = r["offset"].as_u64().unwrap();
        let (key, at, payload) = record(offset);
        assert_eq!(
            BASE64.decode(r["key_b64"].as_str().unwrap()).unwrap(),
            key,
            "key at {offset}"
        );
        assert_eq!(r["committed_at_ms"], at, "commit time at {offset}");
        assert_eq!(
            BASE64.decode(r["payload_b64"].as_str().unwrap()).unwrap(),
            payload,
            "payload at {offset}"
        );
    }
}

#[test]
fn dump_json_snapshots() {
    for (case, extra) in [
        ("clean_two_segments", &[][..]),
        ("mixed_codecs", &[][..]),
        ("bad_envelope_version", &[][..]),
        ("hwm_behind_tail", &["--from", "2"][..]),
        ("bit_flip_below_hwm", &[][..]),
    ] {
        let (code, records, stderr) = dump_json(case, extra);
        let name = format!("dump_{case}{}", extra.join("_").replace("--", "_"));
        // Snapshots hold no absolute paths.
        let stderr = stderr.replace(corpus_dir().to_str().unwrap(), "<corpus>");
        insta::assert_json_snapshot!(
            name,
            json!({ "exit_code": code, "stderr": stderr, "records": records })
        );
    }
}

#[test]
fn dump_returns_exactly_the_records_below_the_hwm() {
    let (code, records, stderr) = dump_json("clean_two_segments", &[]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(offsets(&records), (0..9).collect::<Vec<_>>());
    assert_generated(&records);

    // The hidden tail (offsets 4..9) is not visible.
    let (code, records, _) = dump_json("hwm_behind_tail", &[]);
    assert_eq!(code, 0);
    assert_eq!(offsets(&records), (0..4).collect::<Vec<_>>());
    assert_generated(&records);

    // Nothing is visible without an hwm file.
    let (code, records, _) = dump_json("hwm_missing", &[]);
    assert_eq!((code, records.len()), (0, 0));

    // A refusal still dumps the readable prefix, and says why on stderr.
    let (code, records, stderr) = dump_json("bit_flip_below_hwm", &[]);
    assert_eq!(code, 1);
    assert_eq!(offsets(&records), vec![0, 1, 2]);
    assert_generated(&records);
    assert!(
        stderr.contains("00000000000000000000.log at byte"),
        "{stderr}"
    );
}

#[test]
fn dump_from_starts_inside_frames_and_past_the_end() {
    let (code, records, _) = dump_json("clean_two_segments", &["--from", "4"]);
    assert_eq!(code, 0);
    assert_eq!(offsets(&records), (4..9).collect::<Vec<_>>());
    assert_generated(&records);
    let (code, records, _) = dump_json("clean_two_segments", &["--from", "9"]);
    assert_eq!((code, records.len()), (0, 0));
    let (code, records, _) = dump_json("clean_two_segments", &["--from", "18446744073709551615"]);
    assert_eq!((code, records.len()), (0, 0));
}

#[test]
fn unparseable_records_are_skipped_and_counted_on_stderr() {
    let (code, records, stderr) = dump_json("bad_envelope_version", &[]);
    assert_eq!(code, 0);
    assert_eq!(offsets(&records), vec![0, 1, 2, 3]);
    assert_generated(&records);
    assert!(stderr.contains("skipped 2 unreadable records"), "{stderr}");
    assert!(
        stderr.contains("offset 4: bad envelope version 0x03"),
        "{stderr}"
    );
    assert!(stderr.contains("offset 5: empty record"), "{stderr}");
    // verify counts the same records.
    let verify: Value = serde_json::from_str(
        &cafelog_on(
            "verify",
            &corpus_dir().join("bad_envelope_version"),
            &["--json"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(verify["skipped_records"], 2);
    assert_eq!(verify["unparseable_offsets"], json!([4, 5]));
}

#[test]
fn dump_table_lists_each_visible_record() {
    let run = cafelog_on("dump", &corpus_dir().join("mixed_codecs"), &[]);
    assert_eq!(run.code, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].contains("offset") && lines[0].contains("payload"),
        "header: {}",
        lines[0]
    );
    assert_eq!(lines.len(), 1 + 14);
    assert!(lines[1].trim_start().starts_with("0 ") && lines[1].contains("customer-0"));
    // Offset 8 has a 200-byte key: shown elided.
    assert!(
        lines[9].trim_start().starts_with("8 ") && lines[9].contains("kkk..."),
        "{}",
        lines[9]
    );
}

#[test]
fn a_closed_stdout_pipe_ends_dump_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new();
    b.segment();
    for _ in 0..200 {
        b.frame(Codec::Zstd, 100);
    }
    b.hwm(20_000);
    write_files(dir.path(), &b.files);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cafelog"))
        .args(["dump", "--json"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(
        first.starts_with(b"{\"offset\":0,"),
        "{:?}",
        String::from_utf8_lossy(&first)
    );
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "");
}
