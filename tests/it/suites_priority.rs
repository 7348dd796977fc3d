//! The suites get the CPU first (issue 37): `suites` starts once `stage`
//! and `sdk-record` passed, beside the builds, and every other step idles
//! while its pytest runs are active (`src/process/priority.rs`); where the
//! kernel would not restore a demoted step (no `CAP_SYS_NICE`), it runs
//! alone after every other gate, as before, and still passes.

use crate::common::{self, read_evidence, shared_certification};
use serde_json::Value;
use verify_coding_candidates::process::priority;

/// `(start, end)` in ms of gate `id`, when it ran.
fn span(ev: &Value, id: &str) -> Option<(u64, u64)> {
    let g = ev["gates"].as_array()?.iter().find(|g| g["id"] == id)?;
    let start = g["started_ms"].as_u64()?;
    Some((start, start + g["duration_ms"].as_u64()?))
}

/// Whether this machine runs the suites beside the other gates: the kernel
/// restores demoted steps here, and bubblewrap can sandbox.
fn beside() -> bool {
    priority::can_restore() && common::bwrap_prerequisite("suites_priority").is_ok()
}

/// Every other gate that ran ended before the suites started.
fn assert_alone(ev: &Value) {
    let (suites_start, _) = span(ev, "suites").expect("suites ran");
    for g in ev["gates"].as_array().unwrap() {
        let id = g["id"].as_str().unwrap();
        if id == "suites" || id == "placement" {
            continue; // placement runs after every gate
        }
        if let Some((_, end)) = span(ev, id) {
            assert!(
                end <= suites_start,
                "{id} ran beside the suites: {}",
                ev["gates"]
            );
        }
    }
}

#[test]
fn the_fixtures_suites_start_once_sdk_record_passed_beside_the_builds() {
    let run = shared_certification();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let ev = run.read_evidence();
    let (suites_start, _) = span(&ev, "suites").expect("suites ran");
    let (_, record_end) = span(&ev, "sdk-record").expect("sdk-record ran");
    let (_, stage_end) = span(&ev, "stage").expect("stage ran");
    assert!(
        suites_start >= record_end && suites_start >= stage_end,
        "{}",
        ev["gates"]
    );
    if beside() {
        // The tree run needs no build: it starts before the builds end.
        let (_, built) = span(&ev, "lbp-build").expect("lbp-build ran");
        assert!(suites_start < built, "{}", ev["gates"]);
    } else {
        assert_alone(&ev);
    }
}

/// Without `CAP_SYS_NICE` (dropped with `setpriv` where the test may drop
/// it; else the test's user has none) a step demoted to `SCHED_IDLE` could
/// never be restored and would starve under other load: nothing is
/// demoted, and the suites run alone.
#[test]
fn without_cap_sys_nice_the_suites_run_alone_after_every_other_gate_and_pass() {
    let repo = common::fixture_repo(&[]);
    let (_keep, dir) = common::evidence_dir();
    let bin = assert_cmd::cargo::cargo_bin(common::BIN);
    let mut cmd = if priority::can_restore() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    let out = cmd
        .arg("--repo")
        .arg(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(common::python())
        .args(["--only", "suites,worker-isolation"])
        .output()
        .expect("setpriv (util-linux) runs the verifier");
    let text = common::both(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let ev = read_evidence(&dir);
    assert!(span(&ev, "worker-isolation").is_some(), "{}", ev["gates"]);
    assert_alone(&ev);
}
