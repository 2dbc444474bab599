//! Exit codes 0/1/2, usage errors, I/O errors, and that the commands are read-only.

use super::fixtures::CASES;
use super::support::{cafelog, cafelog_on, corpus_dir, read_files};

#[test]
fn neither_command_changes_the_directory() {
    for case in CASES {
        let dir = corpus_dir().join(case.name);
        let before = read_files(&dir);
        for (command, extra) in [
            ("verify", &[][..]),
            ("verify", &["--json"][..]),
            ("dump", &[][..]),
            ("dump", &["--json", "--from", "1"][..]),
        ] {
            let run = cafelog_on(command, &dir, extra);
            assert_eq!(
                run.code, case.exit_code,
                "{command} {}: {}",
                case.name, run.stderr
            );
        }
        assert!(read_files(&dir) == before, "{} changed", case.name);
    }
}

#[test]
fn a_missing_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-partition");
    for command in ["verify", "dump"] {
        let run = cafelog_on(command, &missing, &["--json"]);
        assert_eq!(run.code, 2, "{command}");
        assert_eq!(
            run.stdout, "",
            "{command}: no report for a partition that is not there"
        );
        assert!(
            run.stderr.contains("no-such-partition"),
            "{command}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_file_instead_of_a_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(cafelog_on("verify", &file, &[]).code, 2);
    assert_eq!(cafelog_on("dump", &file, &[]).code, 2);
}

#[test]
fn usage_errors_exit_2() {
    let clean = corpus_dir().join("clean_two_segments");
    let clean = clean.to_str().unwrap();
    for args in [
        &[][..],
        &["verify"][..],
        &["frobnicate", clean][..],
        &["dump", clean, "--from", "abc"][..],
        &["dump", clean, "--from", "-1"][..],
        &["dump", clean, "--from", "18446744073709551616"][..],
        &["verify", clean, "--bogus"][..],
    ] {
        let run = cafelog(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[test]
fn an_empty_directory_is_an_empty_partition() {
    let dir = tempfile::tempdir().unwrap();
    let run = cafelog_on("verify", dir.path(), &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (report["segments"].as_u64(), report["tail_offset"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(cafelog_on("dump", dir.path(), &["--json"]).stdout, "");
}

#[test]
fn help_documents_the_exit_codes() {
    // The top level is an index: it points at each subcommand's own codes.
    let top = cafelog(&["--help"]);
    assert_eq!(top.code, 0);
    assert!(
        top.stdout.contains("lists its own exit codes"),
        "{}",
        top.stdout
    );
    assert!(
        !top.stdout.contains("recovery would refuse"),
        "{}",
        top.stdout
    );
    for args in [&["verify", "--help"][..], &["dump", "--help"][..]] {
        let run = cafelog(args);
        assert_eq!(run.code, 0, "{args:?}");
        assert!(
            run.stdout.contains("Exit codes:"),
            "{args:?}: {}",
            run.stdout
        );
        assert!(run.stdout.contains("1  recovery would refuse"), "{args:?}");
    }
}
