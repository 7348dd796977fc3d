//! Counterexamples for `shared-copies`, one per clause of its `proves`
//! sentence ("every file the profile declares canonical / is byte-identical
//! (sha256) / in every candidate / to the canonical owner's copy"), over
//! observation values; one test reads a real staged tree.

use super::*;
use crate::evidence::CheckResult;

const ONE: &str = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b";
const TWO: &str = "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35";

fn file(sha: &str, size: u64) -> CopyState {
    CopyState::File {
        sha256: sha.into(),
        size,
    }
}

fn gone(why: &str) -> CopyState {
    CopyState::Unavailable { why: why.into() }
}

/// `pkg/x.py` owned by `R/a`, copies in `R/b` and `R/c` with these states.
fn obs(canonical: CopyState, b: CopyState, c: CopyState) -> Observation {
    let copy = |folder: &str, state: CopyState| CandidateCopy {
        folder: folder.into(),
        owner: folder == "a",
        path: format!("R/{folder}/pkg/x.py"),
        state,
    };
    Observation {
        owner: "R/a".into(),
        files: vec![SharedFile {
            file: "pkg/x.py".into(),
            safe: true,
            canonical_path: "R/a/pkg/x.py".into(),
            canonical: canonical.clone(),
            copies: vec![copy("a", canonical), copy("b", b), copy("c", c)],
        }],
    }
}

fn results(checks: &[Check]) -> Vec<(Option<&str>, CheckResult)> {
    checks
        .iter()
        .map(|c| (c.candidate.as_deref(), c.result))
        .collect()
}

#[test]
fn identical_copies_pass_one_check_per_file_and_candidate_with_digests() {
    let checks = decide(&obs(file(ONE, 1), file(ONE, 1), file(ONE, 1)));
    assert_eq!(
        results(&checks),
        [
            (Some("a"), CheckResult::Pass),
            (Some("b"), CheckResult::Pass),
            (Some("c"), CheckResult::Pass)
        ]
    );
    assert!(checks.iter().all(|c| c.name == "pkg/x.py"));
    assert_eq!(
        checks[0].detail,
        format!("R/a/pkg/x.py is the canonical copy (sha256 {ONE})")
    );
    assert_eq!(
        checks[0].observed.as_deref().cloned(),
        Some(json!({"path": "R/a/pkg/x.py", "sha256": ONE, "size": 1, "canonical": true}))
    );
    assert_eq!(
        checks[1].detail,
        format!("R/b/pkg/x.py is byte-identical to R/a/pkg/x.py (sha256 {ONE})")
    );
    assert_eq!(
        checks[1].observed.as_deref().cloned(),
        Some(
            json!({"path": "R/b/pkg/x.py", "sha256": ONE, "size": 1, "canonical_path": "R/a/pkg/x.py"})
        )
    );
}

#[test]
fn refuses_a_copy_that_is_not_byte_identical_naming_both_files_and_digests() {
    let checks = decide(&obs(file(ONE, 1), file(ONE, 1), file(TWO, 1)));
    assert_eq!(
        results(&checks),
        [
            (Some("a"), CheckResult::Pass),
            (Some("b"), CheckResult::Pass),
            (Some("c"), CheckResult::Fail)
        ]
    );
    assert_eq!(
        checks[2].detail,
        format!(
            "R/c/pkg/x.py (sha256 {TWO}, 1 bytes) differs from the canonical R/a/pkg/x.py (sha256 {ONE}, 1 bytes); \
             copy the canonical file over it byte-for-byte and commit"
        )
    );
}

#[test]
fn refuses_a_copy_whose_size_differs_even_with_the_same_digest_text() {
    let checks = decide(&obs(file(ONE, 1), file(ONE, 2), file(ONE, 1)));
    assert_eq!(checks[1].result, CheckResult::Fail, "{}", checks[1].detail);
}

#[test]
fn refuses_a_candidate_without_its_copy() {
    let checks = decide(&obs(file(ONE, 1), file(ONE, 1), gone("does not exist")));
    assert_eq!(checks[2].result, CheckResult::Fail);
    assert_eq!(
        checks[2].detail,
        "R/c/pkg/x.py does not exist in the staged commit; expected a byte-identical copy of R/a/pkg/x.py: \
         copy the canonical file there and commit it"
    );
}

#[test]
fn refuses_a_symlink_standing_in_for_a_copy() {
    let checks = decide(&obs(
        file(ONE, 1),
        gone("is a symlink, not a file"),
        file(ONE, 1),
    ));
    assert_eq!(checks[1].result, CheckResult::Fail);
    assert!(
        checks[1]
            .detail
            .starts_with("R/b/pkg/x.py is a symlink, not a file"),
        "{}",
        checks[1].detail
    );
}

#[test]
fn refuses_when_the_owners_canonical_copy_is_missing() {
    let checks = decide(&obs(
        gone("does not exist"),
        file(ONE, 1),
        gone("does not exist"),
    ));
    assert_eq!(
        results(&checks),
        [
            (Some("a"), CheckResult::Fail),
            (Some("b"), CheckResult::Fail),
            (Some("c"), CheckResult::Fail)
        ]
    );
    assert_eq!(
        checks[0].detail,
        "the canonical copy R/a/pkg/x.py does not exist in the staged commit; expected a regular file: \
         commit it, or fix shared.owner/shared.files in the profile"
    );
    // A copy that exists was not compared, and says why.
    assert_eq!(
        checks[1].detail,
        format!(
            "R/b/pkg/x.py (sha256 {ONE}) was not compared: the canonical copy R/a/pkg/x.py does not exist; \
             commit the canonical file or fix shared.owner/shared.files in the profile"
        )
    );
    // A missing copy is its own finding.
    assert!(checks[2].detail.starts_with("R/c/pkg/x.py does not exist"));
}

#[test]
fn refuses_a_declared_name_that_escapes_the_candidate() {
    let d = tempfile::tempdir().unwrap();
    let cands = vec![
        ("R/a".to_string(), "a".to_string()),
        ("R/b".to_string(), "b".to_string()),
    ];
    for bad in ["../x", "/etc/passwd", "pkg//x.py", "./x", ""] {
        let o = observe(d.path(), "R/a", &[bad.to_string()], &cands);
        assert!(!o.files[0].safe, "{bad}");
        let checks = decide(&o);
        assert_eq!(checks.len(), 2);
        for c in &checks {
            assert_eq!(c.result, CheckResult::Fail, "{bad}");
            assert_eq!(
                c.detail,
                format!(
                    "profile shared.files names {bad:?}; expected a relative path inside the candidate \
                     without `.`, `..` or empty components: fix the profile"
                )
            );
        }
    }
}

#[test]
fn a_profile_without_canonical_files_warns_that_nothing_was_compared() {
    let checks = decide(&Observation {
        owner: String::new(),
        files: vec![],
    });
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].name, "canonical-files");
    assert_eq!(checks[0].result, CheckResult::Warn);
    assert!(checks[0].detail.contains("nothing was compared"));
}

#[test]
fn observation_hashes_staged_files_and_names_what_is_not_a_file() {
    let d = tempfile::tempdir().unwrap();
    for (p, text) in [("R/a/pkg/x.py", "1"), ("R/b/pkg/x.py", "2")] {
        let path = d.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(d.path().join("R/c/pkg")).unwrap();
    std::os::unix::fs::symlink("../../a/pkg/x.py", d.path().join("R/c/pkg/x.py")).unwrap();
    std::fs::create_dir_all(d.path().join("R/d/pkg/x.py")).unwrap();
    let cands: Vec<(String, String)> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|f| (format!("R/{f}"), f.to_string()))
        .collect();
    let o = observe(d.path(), "R/a", &["pkg/x.py".into()], &cands);
    let states: Vec<&CopyState> = o.files[0].copies.iter().map(|c| &c.state).collect();
    assert_eq!(
        states,
        [
            &file(ONE, 1),
            &file(TWO, 1),
            &gone("is a symlink, not a file"),
            &gone("is not a regular file"),
            &gone("does not exist"),
        ]
    );
    assert_eq!(o.files[0].canonical, file(ONE, 1));
    assert!(o.files[0].copies[0].owner && !o.files[0].copies[1].owner);
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_the_staged_source_is_an_error_not_a_pass() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let (result, _) = testing::run(&SharedCopies, &testing::ctx(evidence.path()));
    let e = result.unwrap_err();
    assert!(e.contains("run `stage` first"), "{e}");
    assert_eq!(SharedCopies.id(), "shared-copies");
}
