//! Counterexamples for `stage`, over observation values; one per clause of
//! its `proves` sentence.

use super::*;

fn attrs(raw: &[(&str, &str, &str)]) -> BTreeMap<String, Vec<(String, String)>> {
    let bytes: Vec<u8> = raw
        .iter()
        .flat_map(|(p, a, s)| format!("{p}\0{a}\0{s}\0").into_bytes())
        .collect();
    parse_check_attr_z(&bytes)
}

#[test]
fn check_attr_output_keeps_every_specified_state() {
    let map = attrs(&[
        ("a b.txt", "text", "set"),
        ("a b.txt", "eol", "crlf"),
        ("a b.txt", "filter", "unspecified"),
        ("c.bin", "text", "unset"),
    ]);
    assert_eq!(
        map["a b.txt"],
        [("text".into(), "set".into()), ("eol".into(), "crlf".into())]
    );
    assert_eq!(map["c.bin"], [("text".into(), "unset".into())]);
    assert_eq!(map.len(), 2);
}

#[test]
fn every_byte_changing_attribute_is_named_with_its_path() {
    let map = attrs(&[
        ("a.txt", "text", "set"),
        ("a.txt", "eol", "crlf"),
        ("auto.txt", "text", "auto"),
        ("old.txt", "crlf", "input"),
        ("id.py", "ident", "set"),
        ("assets/weights.bin", "filter", "lfs"),
        ("utf16.txt", "working-tree-encoding", "UTF-16"),
        ("version.py", "export-subst", "set"),
    ]);
    let found: Vec<(String, String)> = byte_changing_attributes(&map)
        .into_iter()
        .map(|a| (a.path, a.attribute))
        .collect();
    let expected: Vec<(String, String)> = [
        ("a.txt", "text"),
        ("a.txt", "eol=crlf"),
        ("assets/weights.bin", "filter=lfs"),
        ("auto.txt", "text=auto"),
        ("id.py", "ident"),
        ("old.txt", "crlf=input"),
        ("utf16.txt", "working-tree-encoding=UTF-16"),
        ("version.py", "export-subst"),
    ]
    .iter()
    .map(|(p, a)| (p.to_string(), a.to_string()))
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn unset_attributes_and_export_ignore_change_no_bytes() {
    let map = attrs(&[
        ("a.bin", "text", "unset"),
        ("a.bin", "crlf", "unset"),
        ("a.bin", "ident", "unset"),
        ("a.bin", "filter", "unset"),
        ("docs/x", "export-ignore", "set"),
    ]);
    assert!(byte_changing_attributes(&map).is_empty());
    let c = byte_attributes_check(&[]);
    assert_eq!(c.result, crate::evidence::CheckResult::Pass, "{}", c.detail);
    assert_eq!(
        export_attributes(&map)["docs/x"],
        ["export-ignore".to_string()]
    );
}

#[test]
fn the_refusal_names_attribute_and_path_and_what_to_do() {
    let found = vec![
        ByteAttribute {
            path: "notes.txt".into(),
            attribute: "eol=crlf".into(),
        },
        ByteAttribute {
            path: "assets/weights.bin".into(),
            attribute: "filter=lfs".into(),
        },
    ];
    let c = byte_attributes_check(&found);
    assert_eq!(c.result, crate::evidence::CheckResult::Fail);
    assert!(
        c.detail.contains("\n  notes.txt: eol=crlf\n"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains(
            "assets/weights.bin: filter=lfs (Git LFS: git archive ships the pointer file, not the content)"
        ),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("remove these attributes"), "{}", c.detail);
}

#[test]
fn long_lists_are_cut_in_the_detail_not_in_the_observation() {
    let found: Vec<ByteAttribute> = (0..60)
        .map(|i| ByteAttribute {
            path: format!("f{i}.txt"),
            attribute: "text=auto".into(),
        })
        .collect();
    let c = byte_attributes_check(&found);
    assert!(c.detail.contains("... and 10 more"), "{}", c.detail);
    assert_eq!(c.observed.unwrap().as_array().unwrap().len(), 60);
}

#[test]
fn lfs_pointers_are_recognised_by_their_first_line_and_size() {
    let pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n";
    assert!(is_lfs_pointer(pointer, pointer.len() as u64));
    assert!(is_lfs_pointer(
        b"version https://hawser.github.com/spec/v1\n",
        42
    ));
    // Too long for a pointer, another first line, or the line not first.
    assert!(!is_lfs_pointer(pointer, 1024));
    assert!(!is_lfs_pointer(b"version 1.0\n", 12));
    assert!(!is_lfs_pointer(
        b"# version https://git-lfs.github.com/spec/v1\n",
        46
    ));
}

// Clause by clause over observation values: "DIR/staging/source is exactly
// commit C: the tar is recorded by sha256, extracted without absolute paths,
// `..` or escaping links, and every extracted file's git blob id is
// recomputed and equal to `git ls-tree -r`; no committed file carries an
// attribute that changes the bytes git archive writes; no candidate contains
// a symlink, a Git LFS pointer file or a committed file `git archive` leaves
// out (`export-ignore`)."

const C: &str = "cccccccccccccccccccccccccccccccccccccccc";

fn candidate(folder: &str) -> CandidateStage {
    CandidateStage {
        folder: folder.into(),
        path: format!("Runner/{folder}"),
        presence: Presence::Folder,
        export_ignored: vec![],
        symlinks: vec![],
        lfs_pointers: vec![],
    }
}

/// An observation that passes every check.
fn good() -> Observation {
    Observation {
        commit: C.into(),
        archive: ArchiveFile {
            path: "staging/source.tar".into(),
            sha256: "5".repeat(64),
            size: 10_240,
        },
        staged: Ok(Staged {
            extracted: Extracted {
                files: 3,
                symlinks: vec![],
                dirs: 2,
            },
            attributes: Ok(BTreeMap::new()),
            blobs: Blobs {
                tree_entries: 3,
                verified: 3,
                export_ignored: vec![],
                problems: vec![],
            },
            committed: None,
            candidates: vec![candidate("a"), candidate("b")],
        }),
        worktree: None,
        rewrites: vec![],
    }
}

fn staged(o: &mut Observation) -> &mut Staged {
    o.staged.as_mut().unwrap()
}

fn summary(checks: &[Check]) -> Vec<(String, Option<String>, CheckResult)> {
    checks
        .iter()
        .map(|c| (c.name.clone(), c.candidate.clone(), c.result))
        .collect()
}

fn get<'a>(checks: &'a [Check], name: &str, folder: Option<&str>) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name && c.candidate.as_deref() == folder)
        .unwrap_or_else(|| panic!("{name} {folder:?} in {checks:?}"))
}

/// Only `name` (of `folder`) fails.
fn only_failure<'a>(checks: &'a [Check], name: &str, folder: Option<&str>) -> &'a Check {
    let failing: Vec<_> = checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(|c| (c.name.as_str(), c.candidate.as_deref()))
        .collect();
    assert_eq!(failing, [(name, folder)]);
    get(checks, name, folder)
}

#[test]
fn an_exact_staging_passes_every_check_and_every_pass_carries_observed() {
    let checks = decide(&good());
    let names: Vec<(String, Option<String>, CheckResult)> = summary(&checks);
    let mut expected: Vec<(String, Option<String>, CheckResult)> = [
        "git-archive",
        "history-rewrites",
        "tar-extraction",
        "blob-ids",
        "byte-attributes",
        "export-attributes",
    ]
    .iter()
    .map(|n| (n.to_string(), None, CheckResult::Pass))
    .collect();
    for f in ["a", "b"] {
        for n in [
            "candidate-present",
            "no-export-ignore",
            "no-symlinks",
            "no-lfs-pointers",
        ] {
            expected.push((n.to_string(), Some(f.to_string()), CheckResult::Pass));
        }
    }
    assert_eq!(names, expected);
    for c in &checks {
        let o = c.observed.as_ref().unwrap_or_else(|| panic!("{}", c.name));
        assert!(
            o.as_object().is_some_and(|m| !m.is_empty())
                || o.as_array().is_some_and(|a| !a.is_empty()),
            "{}: {o}",
            c.name
        );
    }
    assert_eq!(
        get(&checks, "git-archive", None).detail,
        format!(
            "`git archive --format=tar {C}` wrote 10240 bytes, sha256 {}",
            "5".repeat(64)
        )
    );
    assert_eq!(
        get(&checks, "git-archive", None)
            .observed
            .as_deref()
            .cloned(),
        Some(json!({"path": "staging/source.tar", "sha256": "5".repeat(64), "size": 10_240}))
    );
    assert_eq!(
        get(&checks, "blob-ids", None).detail,
        format!("all 3 staged files have the git blob id `git ls-tree -r {C}` lists")
    );
}

#[test]
fn refuses_an_unsafe_entry_advising_to_rename_the_committed_file_not_to_rebuild() {
    let mut o = good();
    o.staged = Err(ExtractionFailure::UnsafeEntry {
        message: "tar entry \"Runner/a/pkg/bad\\xff.py\": has a file name that is not UTF-8".into(),
    });
    let checks = decide(&o);
    assert_eq!(
        checks.len(),
        3,
        "nothing after a failed extraction (git-archive, history-rewrites, tar-extraction): {checks:?}"
    );
    let c = only_failure(&checks, "tar-extraction", None);
    assert!(
        c.detail
            .starts_with("staging/source.tar: tar entry \"Runner/a/pkg/bad"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains(&format!("a path committed in {C}, so running again or rebuilding cannot change it: rename the committed file")),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("free space"), "{}", c.detail);
}

#[test]
fn an_io_failure_while_extracting_blames_the_evidence_directory_not_the_commit() {
    let mut o = good();
    o.staged = Err(ExtractionFailure::Io {
        message: "/ev/staging/source/x: No space left on device".into(),
    });
    let checks = decide(&o);
    let c = only_failure(&checks, "tar-extraction", None);
    assert!(
        c.detail
            .contains("check free space and permissions of the evidence directory"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("rename"), "{}", c.detail);
}

#[test]
fn refuses_a_staged_file_whose_blob_id_differs() {
    let mut o = good();
    staged(&mut o).blobs.problems = vec![BlobProblem::Differs {
        path: "Runner/a/main.py".into(),
        expected: "1".repeat(40),
        found: "2".repeat(40),
        attributes: vec![],
    }];
    let checks = decide(&o);
    let c = only_failure(&checks, "blob-ids", None);
    assert_eq!(c.consequence_of, None);
    assert!(
        c.detail.contains(&format!(
            "\n  Runner/a/main.py: expected blob {}, found {}\n",
            "1".repeat(40),
            "2".repeat(40)
        )),
        "{}",
        c.detail
    );
    assert!(
        c.detail.starts_with(&format!(
            "expected staging/source to be exactly commit {C}, found 1 difference(s)"
        )),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_each_other_difference_from_the_tree() {
    for (p, line) in [
        (
            BlobProblem::NotBlob {
                path: "sub".into(),
                object: "commit".into(),
            },
            "sub: a commit entry (submodule?); it is not in the archive",
        ),
        (
            BlobProblem::Missing {
                path: "x.py".into(),
                error: "not found".into(),
            },
            "x.py: in the commit, missing from staging/source (not found)",
        ),
        (
            BlobProblem::Unreadable {
                path: "x.py".into(),
                error: "denied".into(),
            },
            "x.py: cannot read (denied)",
        ),
        (
            BlobProblem::Mode {
                path: "run.sh".into(),
                git_mode: "100755".into(),
                staged_mode: "644".into(),
            },
            "run.sh: git mode 100755 but staged mode 644",
        ),
        (
            BlobProblem::Extra {
                path: "extra.txt".into(),
            },
            "extra.txt: in staging/source but not in the commit's tree",
        ),
    ] {
        let mut o = good();
        staged(&mut o).blobs.problems = vec![p];
        let checks = decide(&o);
        let c = only_failure(&checks, "blob-ids", None);
        assert!(
            c.detail.contains(&format!("\n  {line}\n")),
            "{line}: {}",
            c.detail
        );
    }
}

#[test]
fn a_difference_caused_by_a_committed_attribute_is_reported_under_byte_attributes() {
    let mut o = good();
    let s = staged(&mut o);
    s.attributes = Ok(attrs(&[("notes.txt", "eol", "crlf")]));
    s.blobs.problems = vec![BlobProblem::Differs {
        path: "notes.txt".into(),
        expected: "1".repeat(40),
        found: "2".repeat(40),
        attributes: vec!["eol=crlf".into()],
    }];
    let checks = decide(&o);
    let blob = get(&checks, "blob-ids", None);
    assert_eq!(blob.result, CheckResult::Fail);
    assert_eq!(blob.consequence_of.as_deref(), Some("byte-attributes"));
    assert!(
        blob.detail
            .contains("each converted by a committed attribute (see the byte-attributes check"),
        "{}",
        blob.detail
    );
    assert!(
        blob.detail.contains("(attributes: eol=crlf)"),
        "{}",
        blob.detail
    );
    let attr = get(&checks, "byte-attributes", None);
    assert_eq!(attr.result, CheckResult::Fail);
    assert_eq!(attr.consequence_of, None);
}

#[test]
fn a_difference_the_attributes_do_not_explain_stays_a_finding_of_its_own() {
    let mut o = good();
    let s = staged(&mut o);
    s.attributes = Ok(attrs(&[("notes.txt", "eol", "crlf")]));
    s.blobs.problems = vec![
        BlobProblem::Differs {
            path: "notes.txt".into(),
            expected: "1".repeat(40),
            found: "2".repeat(40),
            attributes: vec!["eol=crlf".into()],
        },
        BlobProblem::Extra { path: "x".into() },
    ];
    let checks = decide(&o);
    assert_eq!(get(&checks, "blob-ids", None).consequence_of, None);
    // Without the attribute finding, a converted-looking difference is its own cause too.
    let mut o = good();
    staged(&mut o).blobs.problems = vec![BlobProblem::Differs {
        path: "notes.txt".into(),
        expected: "1".repeat(40),
        found: "2".repeat(40),
        attributes: vec!["eol=crlf".into()],
    }];
    assert_eq!(get(&decide(&o), "blob-ids", None).consequence_of, None);
}

#[test]
fn refuses_a_byte_changing_attribute_even_when_the_blobs_match() {
    let mut o = good();
    staged(&mut o).attributes = Ok(attrs(&[("a.txt", "text", "auto")]));
    let checks = decide(&o);
    let c = only_failure(&checks, "byte-attributes", None);
    assert!(c.detail.contains("\n  a.txt: text=auto\n"), "{}", c.detail);
}

#[test]
fn an_unset_text_attribute_is_fine() {
    let mut o = good();
    staged(&mut o).attributes = Ok(attrs(&[("a.bin", "text", "unset")]));
    assert!(decide(&o).iter().all(|c| c.result == CheckResult::Pass));
}

#[test]
fn refuses_when_check_attr_did_not_answer_and_judges_nothing_after() {
    let mut o = good();
    staged(&mut o).attributes = Err("git check-attr: exit status 128".into());
    let checks = decide(&o);
    assert_eq!(checks.len(), 4);
    let c = only_failure(&checks, "byte-attributes", None);
    assert_eq!(
        c.detail,
        "not observed: expected `git check-attr` to answer for the commit's files, found git check-attr: exit status 128"
    );
}

#[test]
fn refuses_a_candidate_that_is_not_a_folder_of_the_commit() {
    let mut o = good();
    staged(&mut o).candidates[1].presence = Presence::Absent {
        found: "a file".into(),
    };
    let checks = decide(&o);
    let c = only_failure(&checks, "candidate-present", Some("b"));
    assert_eq!(
        c.detail,
        format!("Runner/b: expected a candidate folder in commit {C}, found a file; commit it or fix the profile's candidate path")
    );
    assert!(!checks
        .iter()
        .any(|c| c.candidate.as_deref() == Some("b") && c.name != "candidate-present"));
}

#[test]
fn refuses_a_committed_candidate_file_carrying_export_ignore() {
    let mut o = good();
    staged(&mut o).candidates[0].export_ignored = vec!["Runner/a/pkg/x.py".into()];
    let checks = decide(&o);
    let c = only_failure(&checks, "no-export-ignore", Some("a"));
    assert!(
        c.detail
            .contains("found 1 with the export-ignore attribute"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("\n  Runner/a/pkg/x.py\n"), "{}", c.detail);
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({"export_ignore": ["Runner/a/pkg/x.py"]}))
    );
}

#[test]
fn refuses_a_symlink_inside_a_candidate() {
    let mut o = good();
    staged(&mut o).candidates[0].symlinks = vec![("Runner/a/link".into(), "../b/x".into())];
    let checks = decide(&o);
    let c = only_failure(&checks, "no-symlinks", Some("a"));
    assert!(
        c.detail.contains("\n  Runner/a/link -> ../b/x\n"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .ends_with("replace each link with the file it points to"),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!([{"path": "Runner/a/link", "target": "../b/x"}]))
    );
}

#[test]
fn refuses_a_git_lfs_pointer_inside_a_candidate() {
    let mut o = good();
    staged(&mut o).candidates[1].lfs_pointers = vec![("Runner/b/m.onnx".into(), 131)];
    let checks = decide(&o);
    let c = only_failure(&checks, "no-lfs-pointers", Some("b"));
    assert!(
        c.detail.contains("found 1 Git LFS pointer file(s)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("\n  Runner/b/m.onnx (131 bytes)\n"),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!([{"path": "Runner/b/m.onnx", "size": 131}]))
    );
}

#[test]
fn export_ignored_paths_are_named_as_left_out_of_the_archives_but_run_by_the_suites() {
    let mut o = good();
    staged(&mut o).attributes = Ok(attrs(&[
        ("tests/conftest.py", "export-ignore", "set"),
        ("v.py", "export-subst", "unset"),
    ]));
    staged(&mut o).committed = Some(Ok(Blobs {
        tree_entries: 4,
        verified: 4,
        export_ignored: vec![],
        problems: vec![],
    }));
    let checks = decide(&o);
    assert!(checks.iter().all(|c| c.result == CheckResult::Pass));
    let c = get(&checks, "export-attributes", None);
    assert_eq!(
        c.detail,
        "1 path(s) carry export-ignore or export-subst (listed, see source.export_attributes); \
         the 1 export-ignored path(s) are left out of staging/source and the archives a build \
         sees, but still run by the suites, from staging/tree (every committed file, blob ids \
         verified):\n  tests/conftest.py"
    );
    assert_eq!(
        c.observed.as_deref().cloned(),
        Some(json!({
            "count": 1,
            "paths": [{"path": "tests/conftest.py", "attribute": "export-ignore"}],
            "suites_tree": {"path": "staging/tree", "blobs_verified": 4, "problems": []},
        }))
    );
}

#[test]
fn a_suites_tree_that_is_not_the_commit_fails_export_attributes() {
    let mut o = good();
    staged(&mut o).attributes = Ok(attrs(&[("tests/conftest.py", "export-ignore", "set")]));
    staged(&mut o).committed = Some(Ok(Blobs {
        tree_entries: 4,
        verified: 3,
        export_ignored: vec![],
        problems: vec![BlobProblem::Missing {
            path: "tests/conftest.py".into(),
            error: "gone".into(),
        }],
    }));
    let checks = decide(&o);
    let c = only_failure(&checks, "export-attributes", None);
    assert!(
        c.detail
            .contains("expected staging/tree to be every file of commit"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("tests/conftest.py: in the commit, missing"),
        "{}",
        c.detail
    );
    staged(&mut o).committed = Some(Err("git cat-file --batch: expected blob x".into()));
    let checks = decide(&o);
    let c = only_failure(&checks, "export-attributes", None);
    assert!(c.detail.contains("expected blob x"), "{}", c.detail);
}

#[test]
fn exactly_as_many_attributes_as_are_named_need_no_more_line() {
    let found: Vec<ByteAttribute> = (0..NAMED_AT_MOST)
        .map(|i| ByteAttribute {
            path: format!("f{i}.txt"),
            attribute: "text".into(),
        })
        .collect();
    let c = byte_attributes_check(&found);
    assert!(!c.detail.contains("more (all in"), "{}", c.detail);
    assert!(c.detail.contains("\n  f49.txt: text\n"), "{}", c.detail);
    assert!(
        c.detail
            .contains(&format!("found {NAMED_AT_MOST} attribute(s)")),
        "{}",
        c.detail
    );
}

// ----- run: the gate on a real repository ---------------------------------

#[test]
fn run_stages_a_clean_commit_and_hands_on_the_staged_source() {
    use crate::gates::{testing, Gate};
    let repo = tempfile::tempdir().unwrap();
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let files: Vec<(String, &str)> = ctx
        .selected
        .iter()
        .map(|c| (format!("{}/main.py", c.path), "print(1)\n"))
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    ctx.source.commit = testing::repo(repo.path(), &files);
    ctx.repo = repo.path().to_path_buf();
    let (checks, after) = testing::run(&Stage, &ctx);
    let checks = checks.unwrap();
    assert!(
        checks.iter().all(|c| c.result != CheckResult::Fail),
        "{checks:#?}"
    );
    assert_eq!(after.staged_root, Some(ctx.staging_source()));
    // Nothing export-ignored: staging/source is the whole commit.
    assert_eq!(after.committed_root, Some(ctx.staging_source()));
    assert!(!ctx.staging_tree().exists());
    let sha = after
        .source
        .archive_sha256
        .expect("the archive's digest is recorded");
    assert_eq!(sha.len(), 64);
    assert!(ctx.staging_source().join(files[0].0).is_file());
    assert_eq!(Stage.id(), "stage");
}

#[test]
fn run_writes_every_committed_file_to_staging_tree_when_some_carry_export_ignore() {
    use crate::gates::testing;
    let repo = tempfile::tempdir().unwrap();
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let mut files: Vec<(String, &str)> = ctx
        .selected
        .iter()
        .map(|c| (format!("{}/main.py", c.path), "print(1)\n"))
        .collect();
    files.push((".gitattributes".into(), "tests/conftest.py export-ignore\n"));
    files.push(("tests/conftest.py".into(), "import pytest\n"));
    files.push(("tests/test_a.py".into(), "def test_a(): pass\n"));
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    ctx.source.commit = testing::repo(repo.path(), &files);
    ctx.repo = repo.path().to_path_buf();
    let (checks, after) = testing::run(&Stage, &ctx);
    let checks = checks.unwrap();
    assert!(
        checks.iter().all(|c| c.result != CheckResult::Fail),
        "{checks:#?}"
    );
    // The archive leaves the conftest out; the suites' tree holds it.
    assert!(!ctx.staging_source().join("tests/conftest.py").exists());
    assert_eq!(
        std::fs::read_to_string(ctx.staging_tree().join("tests/conftest.py")).unwrap(),
        "import pytest\n"
    );
    assert_eq!(after.staged_root, Some(ctx.staging_source()));
    assert_eq!(after.committed_root, Some(ctx.staging_tree()));
    let c = get(&checks, "export-attributes", None);
    assert!(c.detail.contains("still run by the suites"), "{}", c.detail);
    assert!(c.detail.ends_with("\n  tests/conftest.py"), "{}", c.detail);
}

#[test]
fn run_hands_on_no_staged_source_when_a_candidate_is_missing() {
    use crate::gates::testing;
    let repo = tempfile::tempdir().unwrap();
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.source.commit = testing::repo(repo.path(), &[("README.md", "r\n")]);
    ctx.repo = repo.path().to_path_buf();
    let (checks, after) = testing::run(&Stage, &ctx);
    let checks = checks.unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c.name == "candidate-present" && c.result == CheckResult::Fail),
        "{checks:#?}"
    );
    assert_eq!(after.staged_root, None);
    assert!(after.source.archive_sha256.is_some());
}

#[test]
fn a_replace_ref_or_graft_file_fails_history_rewrites_naming_it_and_the_fix() {
    let mut o = good();
    o.rewrites = vec![
        crate::git::HistoryRewrite::ReplaceRef {
            name: format!("refs/replace/{C}"),
            replacement: "b".repeat(40),
        },
        crate::git::HistoryRewrite::Grafts {
            path: "/r/.git/info/grafts".into(),
            lines: 2,
        },
    ];
    let checks = decide(&o);
    let c = only_failure(&checks, "history-rewrites", None);
    for needed in [
        format!("refs/replace/{C} (object {C} reads as {})", "b".repeat(40)),
        "/r/.git/info/grafts (graft file, 2 line(s))".to_string(),
        "refuses to certify a repository whose history is rewritten by replace refs".to_string(),
        format!("`git replace -d {C}`"),
    ] {
        assert!(c.detail.contains(&needed), "{needed:?} in {}", c.detail);
    }
    assert_eq!(
        get(&decide(&good()), "history-rewrites", None).result,
        CheckResult::Pass
    );
}

#[test]
fn a_configured_filter_driver_refuses_before_git_archive_naming_driver_command_and_paths() {
    let before = BeforeArchive {
        tree: vec![],
        attributes: Ok(attrs(&[("R/a/x.txt", "filter", "X")])),
        rewrites: vec![],
        filter_drivers: vec![FilterDriver {
            driver: "X".into(),
            commands: vec![("filter.X.smudge".into(), "touch /m".into())],
            paths: vec!["R/a/x.txt".into()],
        }],
    };
    let checks = decide_before_archive(&before, C);
    assert_eq!(
        summary(&checks),
        [
            ("git-archive".to_string(), None, CheckResult::Fail),
            ("history-rewrites".to_string(), None, CheckResult::Pass),
            ("filter-drivers".to_string(), None, CheckResult::Fail),
            ("byte-attributes".to_string(), None, CheckResult::Fail),
        ]
    );
    assert_eq!(checks[0].consequence_of.as_deref(), Some("filter-drivers"));
    let d = &get(&checks, "filter-drivers", None).detail;
    for needed in [
        "filter `X` (filter.X.smudge = \"touch /m\"), selected by `filter=X` for:\n    R/a/x.txt",
        "did not run git archive",
    ] {
        assert!(d.contains(needed), "{needed:?} in {d}");
    }
}
