//! What the binary writes to the terminal: a closed stdout and stderr (`...
//! 2>&1 | head`) never make it panic or change its exit code, and `gates`
//! shows chosen gates as wrapped text or JSON.

use crate::common;

use common::{evidence_dir, exit_code, fixture_repo, python, stderr_text, stdout_text, verifier};
use std::process::{Command, Stdio};
use verify_coding_candidates::{catalogue, exit};

/// A pipe end whose reader is already gone: every write fails with `EPIPE`.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("create a pipe");
    drop(reader);
    writer.into()
}

/// Runs the verifier with stdout and stderr both closed pipes (`2>&1 | head`
/// once head has its lines) and returns its exit code.
fn exit_with_both_closed(args: &[&std::ffi::OsStr]) -> i32 {
    let status = Command::new(env!("CARGO_BIN_EXE_verify-coding-candidates"))
        .args(args)
        .env("PYTHON", python())
        .stdin(Stdio::null())
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .status()
        .expect("run the verifier");
    status.code().unwrap_or(-1)
}

#[test]
fn closed_stdout_and_stderr_never_panic_and_keep_the_exit_code() {
    let repo = fixture_repo(&[]);
    let (_keep, dir) = evidence_dir();
    let ev = dir.join("run");
    // A run whose stderr gets a note (`--only` adds prerequisites) and whose
    // stdout gets the summary.
    let code = exit_with_both_closed(&[
        "--repo".as_ref(),
        repo.root.as_os_str(),
        "--evidence".as_ref(),
        ev.as_os_str(),
        "--only".as_ref(),
        "stage".as_ref(),
    ]);
    assert_eq!(code, i32::from(exit::SUCCESS), "a run");
    assert!(
        ev.join("evidence.json").is_file(),
        "the evidence is written"
    );
    let missing = dir.join("missing");
    let cases: [(&[&std::ffi::OsStr], u8); 5] = [
        (&["gates".as_ref()], exit::SUCCESS),
        (
            &["gates".as_ref(), "--format".as_ref(), "json".as_ref()],
            exit::SUCCESS,
        ),
        (&["gates".as_ref(), "bogus".as_ref()], exit::CANNOT_RUN),
        // `replaying DIR` on stderr, then the report on stdout.
        (
            &["replay".as_ref(), "--evidence".as_ref(), ev.as_os_str()],
            exit::SUCCESS,
        ),
        // `replaying DIR`, then an error, both on stderr.
        (
            &[
                "replay".as_ref(),
                "--evidence".as_ref(),
                missing.as_os_str(),
            ],
            exit::CANNOT_RUN,
        ),
    ];
    for (args, expected) in cases {
        for attempt in 0..20 {
            let code = exit_with_both_closed(args);
            assert_ne!(code, 101, "{args:?} (attempt {attempt}) panicked");
            assert_eq!(code, i32::from(expected), "{args:?} (attempt {attempt})");
        }
    }
}

#[test]
fn a_closed_stderr_alone_keeps_the_output_and_the_exit_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_verify-coding-candidates"))
        .args(["gates", "no-such-gate"])
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .expect("run the verifier");
    assert_eq!(exit_code(&out), i32::from(exit::CANNOT_RUN));
}

#[test]
fn gates_shows_the_chosen_gates_in_order_as_text_or_json() {
    let out = verifier()
        .args(["gates", "suites", "tree-clean"])
        .output()
        .unwrap();
    assert_eq!(
        exit_code(&out),
        i32::from(exit::SUCCESS),
        "{}",
        stderr_text(&out)
    );
    let text = stdout_text(&out);
    let firsts: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| b.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(firsts, ["suites", "tree-clean"], "{text}");
    assert!(
        !text.contains("builtin:"),
        "fixtures only in the full list:\n{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    let out = verifier()
        .args(["gates", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        exit_code(&out),
        i32::from(exit::SUCCESS),
        "{}",
        stderr_text(&out)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout_text(&out)).unwrap();
    let gates = doc["gates"].as_array().unwrap();
    assert_eq!(gates.len(), catalogue::all().len());
    for (g, info) in gates.iter().zip(catalogue::all()) {
        assert_eq!(g["id"], info.id.as_str());
        assert_eq!(g["proves"], info.proves.as_str());
        assert_eq!(g["does_not_prove"], info.does_not_prove.as_str());
        assert_eq!(g["requires"], serde_json::json!(info.requires));
    }
    assert_eq!(doc["builtin_fixtures"].as_array().map(Vec::len), Some(3));

    let out = verifier().args(["gates", "lbp_build"]).output().unwrap();
    assert_eq!(exit_code(&out), i32::from(exit::CANNOT_RUN));
    let err = stderr_text(&out);
    assert!(
        err.contains("gates: unknown gate \"lbp_build\"; did you mean \"lbp-build\"?"),
        "{err}"
    );
}

#[test]
fn the_internal_host_is_no_subcommand_of_help_or_completion() {
    let out = verifier().arg("--help").output().unwrap();
    assert!(!stdout_text(&out).contains("discovery-host"));
    let out = verifier()
        .args(["help", "__discovery-host"])
        .output()
        .unwrap();
    assert_ne!(
        exit_code(&out),
        i32::from(exit::SUCCESS),
        "help knows no such subcommand"
    );
    // The gate still starts it: a spec that does not exist is its exit 2.
    let out = verifier()
        .args(["__discovery-host", "--spec", "/nonexistent/spec.json"])
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 2, "{}", stderr_text(&out));
    assert!(stderr_text(&out).contains("__discovery-host: /nonexistent/spec.json"));
}
