//! The sweep before sealing, through the built binary on a fixture
//! repository (`--only suites`, with the genuine SDK from `$PYTHON`): a test
//! of the repository plants links to host files (`/etc/shadow`, `/usr`), a
//! `..` link, a loop and a FIFO in its private HOME under DIR. The run fails
//! at the `suites` gate's `evidence-links` check (links out of DIR), every
//! entry is removed and recorded in `evidence.json` `swept`, the sealed
//! directory holds only regular files and folders, and `replay` agrees.
//!
//! The evidence directory's path holds a literal `$HOME` (issue 35, item 5):
//! pytest expands environment variables in `--rootdir` and `--junitxml`;
//! the repository's tests must still run and pass on the tree and on
//! DIR/extracted.

use crate::common;

use common::{
    both, check, checks, exit_code, fixture_repo, gate_result, read_evidence, replay_output,
    stdout_text, verifier,
};
use verify_coding_candidates::exit;

const RELAY: &str = "Runner/certification-tests/test_coding_relay_v1.py";
const PLANTS: &str = "Runner/certification-tests/test_plants_links.py";

/// Every entry under `dir` that is neither a regular file nor a folder
/// (`lstat`: nothing followed, nothing opened).
fn not_files_or_folders(dir: &std::path::Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .map(|e| e.expect("walk the evidence directory"))
        .filter(|e| !e.file_type().is_file() && !e.file_type().is_dir())
        .map(|e| e.path().display().to_string())
        .collect()
}

#[test]
fn links_and_a_fifo_a_test_plants_in_its_home_are_swept_recorded_and_fail_the_gate() {
    let repo = fixture_repo(&["suite-plants-links"]);
    let keep = tempfile::Builder::new()
        .prefix("vcc-evidence-")
        .tempdir()
        .unwrap();
    // A literal `$HOME` in the path: pytest's expandvars would make it the
    // run's private HOME.
    let dir = keep.path().join("$HOME").join("evidence");
    let profile =
        common::profile_beside(&keep, &common::profile_with_suite_paths(&[RELAY, PLANTS]));
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites", "--profile"])
        .arg(&profile)
        .output()
        .expect("run the verifier");
    let text = both(&out);
    assert_eq!(exit_code(&out), i32::from(exit::GATE_FAILED), "{text}");
    let ev = read_evidence(&dir);
    assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");

    // The repository's tests ran and passed on both copies: the `$HOME` in
    // DIR's path reached no pytest argument it expands.
    for run in ["tree", "extracted"] {
        let c = check(&ev, "suites", &format!("{run}/outcomes"), None);
        assert_eq!(c["result"], "pass", "{c}");
    }
    let failing: Vec<&str> = checks(&ev, "suites")
        .iter()
        .filter(|c| c["result"] == "fail")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failing, ["evidence-links"], "{text}");
    let links = check(&ev, "suites", "evidence-links", None);
    let detail = links["detail"].as_str().unwrap();
    for run in ["tree", "extracted"] {
        for part in [
            format!(
                "DIR/roots/suites/{run}/home/shadow (symlink -> /etc/shadow, outside DIR: removed)"
            ),
            format!("DIR/roots/suites/{run}/home/host-dir (symlink -> /usr, outside DIR: removed)"),
            format!("DIR/roots/suites/{run}/home/pipe (fifo: removed)"),
        ] {
            assert!(detail.contains(&part), "{part} in {detail}");
        }
    }

    // Recorded: ten entries, five per run, each with where it was and what
    // was done; `..` and the loop stay inside DIR.
    let swept = ev["swept"].as_array().expect("evidence.json swept");
    assert_eq!(swept.len(), 10, "{swept:#?}");
    for e in swept {
        assert_eq!(e["gate"], "suites", "{e}");
        assert_eq!(e["action"], "removed", "{e}");
        let name = e["path"].as_str().unwrap().rsplit('/').next().unwrap();
        let (kind, target, leaves) = match name {
            "shadow" => ("symlink", Some("/etc/shadow"), true),
            "host-dir" => ("symlink", Some("/usr"), true),
            "up" => ("symlink", Some(".."), false),
            "loop" => ("symlink", Some("loop"), false),
            "pipe" => ("fifo", None, false),
            other => panic!("unexpected swept entry {other}: {e}"),
        };
        assert_eq!(e["kind"], kind, "{e}");
        assert_eq!(e["target"].as_str(), target, "{e}");
        assert_eq!(e["leaves_dir"], leaves, "{e}");
    }

    // Sealed: only regular files and folders, and SHA256SUMS names none of
    // the removed entries.
    assert_eq!(not_files_or_folders(&dir), Vec::<String>::new());
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    assert!(
        !sums.contains("/home/shadow") && !sums.contains("/home/pipe"),
        "{sums}"
    );
    let replay = replay_output(&dir, &[]);
    assert_eq!(replay.status.code(), Some(0), "{}", both(&replay));
    assert!(
        stdout_text(&replay).contains("REPLAY OK"),
        "{}",
        both(&replay)
    );
}

/// A good commit whose test uses pytest's own `tmp_path` (attack round on
/// issue 35.3): pytest makes `<prefix>current` symlinks beside its numbered
/// temporary folders under `$TMPDIR` (`DIR/roots/suites/<run>/tmp/`), with
/// absolute targets inside DIR. They are pytest's, not the repository's:
/// the suites gate must pass without an `evidence-links` warning, so that
/// a full run of a good commit can still be PASSED.
#[test]
fn pytest_tmp_path_symlinks_are_not_a_warning_on_a_good_commit() {
    let repo = fixture_repo(&["suite-uses-tmp-path"]);
    let keep = tempfile::Builder::new()
        .prefix("vcc-evidence-")
        .tempdir()
        .unwrap();
    let dir = keep.path().join("evidence");
    let profile = common::profile_beside(
        &keep,
        &common::profile_with_suite_paths(&[
            RELAY,
            "Runner/certification-tests/test_uses_tmp_path.py",
        ]),
    );
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites", "--profile"])
        .arg(&profile)
        .output()
        .expect("run the verifier");
    let text = both(&out);
    let ev = read_evidence(&dir);
    assert_eq!(gate_result(&ev, "suites"), "pass", "{text}");
    let flagged: Vec<&serde_json::Value> = checks(&ev, "suites")
        .iter()
        .filter(|c| c["name"] == "evidence-links")
        .collect();
    assert!(flagged.is_empty(), "{flagged:#?}");
    assert_eq!(not_files_or_folders(&dir), Vec::<String>::new());
}

/// Attack round on issue 35.3: a test hard-links host files (`/etc/passwd`,
/// a file of the host's `/tmp` on the same filesystem) into its HOME. A
/// hard link is a regular file the sweep of links does not see, so the
/// sandbox must refuse it: the sealed DIR holds no file that is also a host
/// file (every regular file of DIR has one name, or all its names in DIR):
/// the sandbox refuses the links, and without one the sweep removes them
/// and fails the gate.
#[test]
fn hard_links_to_host_files_never_reach_the_sealed_evidence() {
    let victim = std::path::Path::new("/tmp/vcc-hard-link-victim");
    std::fs::write(victim, b"host secret\n").unwrap();
    let repo = fixture_repo(&["suite-hard-links"]);
    let keep = tempfile::Builder::new()
        .prefix("vcc-evidence-")
        .tempdir()
        .unwrap();
    let dir = keep.path().join("evidence");
    let profile = common::profile_beside(
        &keep,
        &common::profile_with_suite_paths(&[
            RELAY,
            "Runner/certification-tests/test_hard_links.py",
        ]),
    );
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites", "--profile"])
        .arg(&profile)
        .output()
        .expect("run the verifier");
    let text = both(&out);
    let outcomes = std::fs::read_to_string(dir.join("roots/suites/tree/home/link-outcomes.txt"))
        .unwrap_or_else(|e| panic!("the fixture's outcomes: {e}\n{text}"));
    eprintln!("{outcomes}");
    use std::os::unix::fs::MetadataExt;
    let shared: Vec<String> = walkdir::WalkDir::new(&dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file() && e.metadata().unwrap().nlink() > 1)
        .map(|e| e.path().display().to_string())
        .collect();
    assert_eq!(shared, Vec::<String>::new(), "{outcomes}\n{text}");
    let ev = read_evidence(&dir);
    if outcomes.contains(" linked") {
        // Unconfined (no bubblewrap, `VCC_BWRAP` pointing nowhere): the
        // links were made; the sweep removed them and the gate fails.
        assert_eq!(gate_result(&ev, "suites"), "fail", "{text}");
        let links = check(&ev, "suites", "evidence-links", None);
        let detail = links["detail"].as_str().unwrap();
        assert!(
            detail.contains("home/passwd (hard-link, another name of the same file is outside DIR"),
            "{detail}"
        );
    } else {
        // In the sandbox both are refused (EXDEV across its mounts; its
        // `/tmp` is private): nothing to sweep, the gate passes.
        assert_eq!(gate_result(&ev, "suites"), "pass", "{outcomes}\n{text}");
    }
}

/// Attack round on issue 35.3: a test leaves a `setsid` daemon that links
/// `/etc/shadow` into its HOME a few seconds later, after the sweep would
/// have run. The daemon must not outlive the run (the sandbox, or the
/// residue sweep unconfined), so the directory stays as sealed: checked
/// after the daemon's delay has passed.
#[test]
fn a_daemon_that_links_after_the_sweep_never_changes_the_sealed_evidence() {
    let repo = fixture_repo(&["suite-late-link"]);
    let keep = tempfile::Builder::new()
        .prefix("vcc-evidence-")
        .tempdir()
        .unwrap();
    let dir = keep.path().join("evidence");
    let profile = common::profile_beside(
        &keep,
        &common::profile_with_suite_paths(&[RELAY, "Runner/certification-tests/test_late_link.py"]),
    );
    let out = verifier()
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "suites", "--profile"])
        .arg(&profile)
        .output()
        .expect("run the verifier");
    let text = both(&out);
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert_eq!(not_files_or_folders(&dir), Vec::<String>::new(), "{text}");
    let replay = replay_output(&dir, &[]);
    assert!(
        stdout_text(&replay).contains("REPLAY OK"),
        "{}",
        both(&replay)
    );
}
