use super::*;
use crate::build_rules::BuildDrop;
use crate::gitignore::{GitPattern, GitVerdict};
use crate::hash;
use crate::manifest_diff::manifest_differences;
use serde_yaml_ng::Value;
use std::fs::File;

fn y(s: &str) -> Value {
    serde_yaml_ng::from_str(s).unwrap()
}

#[test]
fn the_builds_pages_addition_is_the_only_accepted_difference() {
    let src = y("metadata:\n  name: x\n  version: '0.1.0'\nspec:\n  config: []\n");
    let built = y("metadata:\n  name: x\n  version: 0.1.0\nspec:\n  config: []\n  pages: []\n");
    assert!(manifest_differences(&src, &built, None).is_empty());
}

#[test]
fn other_differences_name_the_key() {
    let src = y("metadata:\n  name: x\nspec:\n  config: []\n");
    let built = y("metadata:\n  name: y\n  extra: 1\nspec:\n  config: []\n  pages: [a]\n");
    let d = manifest_differences(&src, &built, None);
    assert!(
        d.iter()
            .any(|m| m.starts_with("metadata.name: source x, archive y")),
        "{d:?}"
    );
    assert!(
        d.iter()
            .any(|m| m.starts_with("metadata.extra: added by the build")),
        "{d:?}"
    );
    assert!(
        d.iter()
            .any(|m| m.starts_with("spec.pages: added by the build")),
        "{d:?}"
    );
}

/// SDK 0.7's build sets `spec.pages` to the source's own pages, then one per
/// Page component (`populate_plugin_pages`): exactly that list is accepted.
#[test]
fn the_pages_the_sdks_build_computes_are_accepted_and_no_others() {
    let page = "- id: obs\n  label:\n    en_US: Obs\n  path: components/pages/obs/index.html\n";
    let expected = y(page);
    let src = y("metadata:\n  name: x\nspec:\n  config: []\n");
    let built = y(&format!(
        "metadata:\n  name: x\nspec:\n  config: []\n  pages:\n{}",
        indent(page)
    ));
    assert!(manifest_differences(&src, &built, Some(&expected)).is_empty());
    // Without the SDK's answer, only `pages: []` would be accepted.
    assert!(!manifest_differences(&src, &built, None).is_empty());
    // A page the build would not write is named.
    let other = y("- id: evil\n  label: {}\n  path: ../../etc/passwd\n");
    let d = manifest_differences(&src, &built, Some(&other));
    assert!(
        d.iter()
            .any(|m| m.starts_with("spec.pages: added by the build")),
        "{d:?}"
    );
    // The source's own pages, followed by the component's, stand for the source's.
    let own = "- id: own\n  label: {}\n  path: own.html\n";
    let src = y(&format!("spec:\n  pages:\n{}", indent(own)));
    let both = format!("{own}{page}");
    let built = y(&format!("spec:\n  pages:\n{}", indent(&both)));
    assert!(manifest_differences(&src, &built, Some(&y(&both))).is_empty());
    // An archive that dropped the source's own page differs.
    let built = y(&format!("spec:\n  pages:\n{}", indent(page)));
    assert!(!manifest_differences(&src, &built, Some(&y(&both))).is_empty());
}

fn indent(block: &str) -> String {
    block.lines().map(|l| format!("  {l}\n")).collect()
}

#[test]
fn a_removed_key_is_named() {
    let d = manifest_differences(&y("a:\n  b: 1\n  c: 2\n"), &y("a:\n  b: 1\n"), None);
    assert_eq!(d, ["a.c: in the source, missing from the archive"]);
}

/// A staged candidate and an archive of it written with the zip crate
/// (`comment` added, `extra` members appended), in a temp dir.
fn staged_and_archive(
    comment: Option<&str>,
    extra: &[(&str, &[u8])],
) -> (tempfile::TempDir, Input) {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let staged = d.path().join("staged");
    std::fs::create_dir_all(staged.join("pkg")).unwrap();
    std::fs::write(
        staged.join("manifest.yaml"),
        "kind: Plugin\nspec:\n  config: []\n",
    )
    .unwrap();
    std::fs::write(staged.join("pkg/a.py"), "x = 1\n").unwrap();
    let archive = d.path().join("a.lbpkg");
    let mut w = zip::ZipWriter::new(File::create(&archive).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o644);
    let mut files: Vec<(&str, &[u8])> = vec![
        (
            "manifest.yaml",
            b"kind: Plugin\nspec:\n  config: []\n  pages: []\n",
        ),
        ("pkg/a.py", b"x = 1\n"),
    ];
    files.extend_from_slice(extra);
    for (n, b) in files {
        w.start_file(n, opts).unwrap();
        w.write_all(b).unwrap();
    }
    if let Some(c) = comment {
        w.set_comment(c);
    }
    w.finish().unwrap();
    let input = Input {
        folder: "c".into(),
        staged,
        archive: Ok((archive, "packages/c/a.lbpkg".into())),
        extract_abs: d.path().join("extracted/c"),
        extract_rel: "extracted/c".into(),
        manifest_reader: ManifestReader::Yaml12,
    };
    (d, input)
}

fn result_of<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
}

#[test]
fn a_faithful_archive_passes_every_check_and_is_recorded() {
    let (_d, input) = staged_and_archive(None, &[]);
    let (checks, record) = inspect(&input);
    let failed: Vec<_> = checks
        .iter()
        .filter(|c| c.result != CheckResult::Pass)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(checks.len(), 12);
    let record = record.unwrap();
    assert_eq!(record.members.len(), 2);
    assert_eq!(record.members[1].sha256, hash::sha256_bytes(b"x = 1\n"));
    assert_eq!(record.extracted.as_deref(), Some("extracted/c"));
    assert!(input.extract_abs.join("pkg/a.py").is_file());
}

#[test]
fn a_comment_fails_only_the_comment_check() {
    let (_d, input) = staged_and_archive(Some("envelope"), &[]);
    let (checks, record) = inspect(&input);
    assert_eq!(result_of(&checks, "zip-comment").result, CheckResult::Fail);
    let others: Vec<_> = checks
        .iter()
        .filter(|c| c.name != "zip-comment" && c.result != CheckResult::Pass)
        .collect();
    assert!(others.is_empty(), "{others:#?}");
    assert!(record.is_some());
}

#[test]
fn an_unexpected_member_and_a_changed_byte_are_named() {
    let (_d, input) = staged_and_archive(None, &[("notes.txt", b"extra\n")]);
    std::fs::write(input.staged.join("pkg/a.py"), "x = 2\n").unwrap();
    let (checks, _) = inspect(&input);
    let expected = result_of(&checks, "expected-members");
    assert_eq!(expected.result, CheckResult::Fail);
    assert!(expected.detail.contains("notes.txt"), "{}", expected.detail);
    let equal = result_of(&checks, "members-equal-source");
    assert_eq!(equal.result, CheckResult::Fail);
    assert!(
        equal.detail.contains("pkg/a.py (member sha256"),
        "{}",
        equal.detail
    );
}

#[test]
fn unsafe_members_stop_reading_and_say_so() {
    let (dir, input) = staged_and_archive(None, &[("pkg/b.py", b"y\n")]);
    // Rename pkg/b.py to pkg/a.py in place: a duplicate the zip crate hides.
    let (path, _) = input.archive.as_ref().unwrap().clone();
    let mut bytes = std::fs::read(&path).unwrap();
    for i in 0..bytes.len() - 8 {
        if &bytes[i..i + 8] == b"pkg/b.py" {
            bytes[i..i + 8].copy_from_slice(b"pkg/a.py");
        }
    }
    std::fs::write(&path, bytes).unwrap();
    let (checks, record) = inspect(&input);
    assert_eq!(result_of(&checks, "member-names").result, CheckResult::Fail);
    assert_eq!(
        result_of(&checks, "zip-structure").result,
        CheckResult::Fail
    );
    for name in [
        "members-equal-source",
        "manifest-equal-source",
        "extraction-exact",
    ] {
        let c = result_of(&checks, name);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("not examined because zip-structure, member-names failed"),
            "{}",
            c.detail
        );
    }
    assert!(record.is_none());
    assert!(
        !input.extract_abs.exists(),
        "nothing is extracted from an unsafe archive"
    );
    dir.close().unwrap();
}

fn pattern(file: &str, line: usize, pattern: &str, at: &str) -> GitPattern {
    GitPattern {
        file: file.into(),
        line,
        pattern: pattern.into(),
        at: at.into(),
    }
}

fn dropped(at: &str, line: usize, pattern: &str) -> Option<BuildDrop> {
    Some(BuildDrop::Gitignore {
        at: at.into(),
        line,
        pattern: pattern.into(),
    })
}

fn file(path: &str, in_archive: bool, git: GitVerdict, build: Option<BuildDrop>) -> CommittedFile {
    CommittedFile {
        path: path.into(),
        in_archive,
        git,
        build,
    }
}

const KEPT: GitVerdict = GitVerdict::Kept { by: None };
const ARCHIVE: &str = "packages/c/a.lbpkg";

#[test]
fn every_kept_file_present_passes() {
    let files = [
        file("main.py", true, KEPT, None),
        file("manifest.yaml", true, KEPT, None),
    ];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(c.detail.contains("2 committed"), "{}", c.detail);
}

/// `/config` in the root `.gitignore`: git ignores only the root entry
/// `config`; the SDK drops every path starting with `config`.
#[test]
fn a_kept_file_the_build_dropped_fails_naming_file_line_and_pattern() {
    let files = [
        file("main.py", true, KEPT, None),
        file(
            "config_loader.py",
            false,
            KEPT,
            dropped("config_loader.py", 1, "/config"),
        ),
    ];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "`config_loader.py` (the build dropped it by `.gitignore` line 1 `/config`; git keeps it: \
             no line of the candidate's .gitignore files ignores it)"
        ),
        "{}",
        c.detail
    );
    assert!(
        c.detail.starts_with(
            "packages/c/a.lbpkg: 1 committed file(s) that git's own ignore rules keep are missing"
        ),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_ref().unwrap()["missing"][0]["path"],
        "config_loader.py"
    );
}

/// `*.log` then `!keep.log`: git keeps `keep.log`; the SDK has no
/// negation and drops it by `*.log`.
#[test]
fn a_negated_file_the_build_dropped_fails_naming_both_lines() {
    let files = [file(
        "keep.log",
        false,
        GitVerdict::Kept {
            by: Some(pattern(".gitignore", 2, "!keep.log", "keep.log")),
        },
        dropped("keep.log", 1, "*.log"),
    )];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(
            "`keep.log` (the build dropped it by `.gitignore` line 1 `*.log`; git keeps it by `.gitignore` line 2 `!keep.log`)"
        ),
        "{}",
        c.detail
    );
}

#[test]
fn a_drop_through_a_directory_names_the_directory() {
    let files = [file(
        "configuration/a.py",
        false,
        KEPT,
        dropped("configuration", 1, "/config"),
    )];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("`.gitignore` line 1 `/config`, which matched its directory `configuration`"),
        "{}",
        c.detail
    );
}

/// Missing although the build's own rules select it: still a committed
/// file git keeps that did not ship.
#[test]
fn a_kept_file_the_build_selected_but_the_archive_lacks_fails() {
    let files = [file("pkg/a.py", false, KEPT, None)];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("`pkg/a.py` (the build's rules select it, yet the archive lacks it"),
        "{}",
        c.detail
    );
}

/// `*.log` and a `debug.log` committed with `git add -f`.
#[test]
fn a_force_added_file_the_build_dropped_is_a_warning_naming_both_lines() {
    let files = [
        file("main.py", true, KEPT, None),
        file(
            "debug.log",
            false,
            GitVerdict::Ignored {
                by: pattern(".gitignore", 1, "*.log", "debug.log"),
            },
            dropped("debug.log", 1, "*.log"),
        ),
    ];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
    assert!(
        c.detail.contains(
            "`debug.log` (the build dropped it by `.gitignore` line 1 `*.log`; git ignores it too, by `.gitignore` \
             line 1 `*.log`, so it was force-added)"
        ),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_ref().unwrap()["force_added_missing"][0]["path"],
        "debug.log"
    );
}

#[test]
fn a_failure_also_lists_the_warnings() {
    let files = [
        file(
            "config_loader.py",
            false,
            KEPT,
            dropped("config_loader.py", 1, "/config"),
        ),
        file(
            "logs/x.txt",
            false,
            GitVerdict::Ignored {
                by: pattern("logs/.gitignore", 1, "*", "logs/x.txt"),
            },
            dropped("logs/x.txt", 2, "*.txt"),
        ),
    ];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("also 1 committed file(s) that git's own rules ignore too"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("`logs/.gitignore` line 1 `*`"),
        "{}",
        c.detail
    );
}

/// The SDK's fixed exclusions are not an expectation: such a committed
/// file may be absent whatever git says.
#[test]
fn always_excluded_files_may_be_absent() {
    let files = [
        file(
            ".env",
            false,
            KEPT,
            Some(BuildDrop::AlwaysExcluded {
                at: ".env".into(),
                pattern: ".env",
            }),
        ),
        file(
            "pkg/__pycache__/m.pyc",
            false,
            KEPT,
            Some(BuildDrop::AlwaysExcluded {
                at: "pkg/__pycache__".into(),
                pattern: "__pycache__",
            }),
        ),
    ];
    let c = decide_committed("c", ARCHIVE, &files);
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains("2 left out by the SDK's fixed exclusions"),
        "{}",
        c.detail
    );
}

/// A member git would ignore (force-added, and the build's rules select
/// it) is neither missing nor a warning.
#[test]
fn a_present_file_git_ignores_is_fine() {
    let files = [file(
        "notes.tmp",
        true,
        GitVerdict::Ignored {
            by: pattern("pkg/.gitignore", 1, "*.tmp", "notes.tmp"),
        },
        None,
    )];
    assert_eq!(
        decide_committed("c", ARCHIVE, &files).result,
        CheckResult::Pass
    );
}

/// The observation through `inspect`: a staged `/config` and a committed
/// `config_loader.py` the archive lacks, as `lbp build` writes it.
#[test]
fn inspect_fails_committed_files_but_not_expected_members_for_a_root_prefix() {
    let (_d, input) = staged_and_archive(None, &[(".gitignore", b"/config\n")]);
    std::fs::write(input.staged.join(".gitignore"), "/config\n").unwrap();
    std::fs::write(input.staged.join("config_loader.py"), "X = 1\n").unwrap();
    let (checks, _) = inspect(&input);
    let expected = result_of(&checks, "expected-members");
    assert_eq!(expected.result, CheckResult::Pass, "{}", expected.detail);
    let committed = result_of(&checks, COMMITTED_FILES);
    assert_eq!(committed.result, CheckResult::Fail);
    assert!(
        committed
            .detail
            .contains("`config_loader.py` (the build dropped it by `.gitignore` line 1 `/config`"),
        "{}",
        committed.detail
    );
    assert!(
        checks.iter().position(|c| c.name == COMMITTED_FILES)
            > checks.iter().position(|c| c.name == "expected-members")
    );
}

/// A nested `.gitignore` the SDK does not read ignores a force-added
/// `pkg/notes.tmp`; the build packs it. That member is a committed file
/// the build's rules select: neither unexpected nor missing.
#[test]
fn inspect_accepts_a_member_git_ignores() {
    let (_d, input) = staged_and_archive(
        None,
        &[("pkg/.gitignore", b"*.tmp\n"), ("pkg/notes.tmp", b"n\n")],
    );
    std::fs::write(input.staged.join("pkg/.gitignore"), "*.tmp\n").unwrap();
    std::fs::write(input.staged.join("pkg/notes.tmp"), "n\n").unwrap();
    let (checks, _) = inspect(&input);
    let failed: Vec<_> = checks
        .iter()
        .filter(|c| c.result != CheckResult::Pass)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Issue 14: a member name unsafe on the host that is a committed file's own
/// name (on Linux `pkg\..\..\evil.py` is one file name) is copied by every
/// build: the advice is to rename the committed file, never to rebuild.
#[test]
fn a_committed_file_named_unsafely_is_answered_with_renaming_it_not_rebuilding() {
    let name = "pkg\\..\\..\\evil.py";
    let (_d, input) = staged_and_archive(None, &[(name, b"print('out')\n")]);
    std::fs::write(input.staged.join(name), "print('out')\n").unwrap();
    let (checks, record) = inspect(&input);
    let c = result_of(&checks, "member-names");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(&format!(
            "these names are committed files' own names ({name:?})"
        )),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("rename the committed file(s)"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("rebuilding cannot help"), "{}", c.detail);
    assert!(!c.detail.contains("clean tree"), "{}", c.detail);
    assert!(!c.detail.contains("rebuild it from"), "{}", c.detail);
    assert_eq!(
        c.observed.as_ref().unwrap()["committed_unsafe_names"],
        json!([name])
    );
    for data in DATA_CHECKS {
        let d = result_of(&checks, data);
        assert_eq!(d.consequence_of.as_deref(), Some("member-names"), "{data}");
    }
    assert!(record.is_none());
}

#[test]
fn an_unsafe_member_no_committed_file_names_is_answered_with_rebuilding() {
    let (_d, input) = staged_and_archive(None, &[("pkg\\evil.py", b"x\n")]);
    let (checks, _) = inspect(&input);
    let c = result_of(&checks, "member-names");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("\"pkg\\\\evil.py\" contains a backslash; no committed file has such a name, so `lbp build` did not write it from this commit: the archive was altered after the build; rebuild it from the staged commit"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("rename"), "{}", c.detail);
}

// Decision counterexamples over plain observation values (no files, no
// Python), by the catalogue's `proves` clauses.

fn yaml(s: &str) -> Value {
    serde_yaml_ng::from_str(s).unwrap()
}

fn member(name: &str, body: &[u8]) -> lbpkg::MemberDigest {
    lbpkg::MemberDigest {
        name: name.into(),
        sha256: hash::sha256_bytes(body),
        size: body.len() as u64,
        mode: Some("0644".into()),
        is_dir: false,
    }
}

/// A faithful archive of `manifest.yaml` and `pkg/a.py`, as observed.
fn faithful() -> Observation {
    let manifest = yaml("kind: Plugin\nspec:\n  config: []\n");
    let built = yaml("kind: Plugin\nspec:\n  config: []\n  pages: []\n");
    Observation {
        folder: "c".into(),
        archive: Some("packages/c/a.lbpkg".into()),
        archive_error: None,
        digest: Some(("ab".repeat(32), 300)),
        zip: Some(ZipObservation {
            entries: 2,
            total_uncompressed: 50,
            structure: vec![],
            comment_bytes: 0,
            comment_preview: String::new(),
            names: vec![],
            committed_unsafe_names: vec![],
            types: vec![],
            encryption: vec![],
            host_limits: vec![],
            expected: Ok(Expected {
                selected: 2,
                missing: vec![],
                unexpected: vec![],
            }),
            committed: Ok(vec![
                file("manifest.yaml", true, GitVerdict::Kept { by: None }, None),
                file("pkg/a.py", true, GitVerdict::Kept { by: None }, None),
            ]),
            data: Some(Ok(MemberData {
                members: vec![
                    member(
                        "manifest.yaml",
                        b"kind: Plugin\nspec:\n  config: []\n  pages: []\n",
                    ),
                    member("pkg/a.py", b"x = 1\n"),
                ],
                compared: 1,
                differences: vec![],
                manifest: crate::manifest_yaml::ManifestObservation {
                    pyyaml: Some("6.0.2".into()),
                    source_sdk: Ok(manifest.clone()),
                    archived_sdk: Ok(built),
                    source_yaml12: Ok(manifest),
                    build_pages: None,
                },
                extract_rel: "extracted/c".into(),
                extraction: vec![],
            })),
        }),
        zip_error: None,
    }
}

fn zip_of(obs: &mut Observation) -> &mut ZipObservation {
    obs.zip.as_mut().unwrap()
}

fn data_of(obs: &mut Observation) -> &mut MemberData {
    zip_of(obs).data.as_mut().unwrap().as_mut().unwrap()
}

const ALL: [&str; 12] = [
    "archive-digest",
    "zip-structure",
    "zip-comment",
    "member-names",
    "member-types",
    "encryption",
    "host-limits",
    "expected-members",
    "committed-files",
    "members-equal-source",
    "manifest-equal-source",
    "extraction-exact",
];

/// The checks of `obs` that failed, by name, with what they are a
/// consequence of.
fn failures(obs: &Observation) -> Vec<(String, Option<String>)> {
    decide(obs)
        .into_iter()
        .filter(|c| c.result == CheckResult::Fail)
        .map(|c| (c.name, c.consequence_of))
        .collect()
}

fn own(name: &str) -> (String, Option<String>) {
    (name.into(), None)
}

#[test]
fn a_faithful_observation_passes_all_twelve_checks_each_with_what_it_observed() {
    let obs = faithful();
    let checks = decide(&obs);
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ALL);
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        let o = c
            .observed
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no observed", c.name));
        assert!(
            o.as_object().is_some_and(|m| !m.is_empty()),
            "{}: {o}",
            c.name
        );
    }
    let record = archive_record(&obs).unwrap();
    assert_eq!(record.sha256, "ab".repeat(32));
    assert_eq!(record.members.len(), 2);
    assert_eq!(record.extracted.as_deref(), Some("extracted/c"));
    assert_eq!(
        record.content_digest,
        lbpkg::content_digest(data_of(&mut faithful()).members.iter().map(|m| (
            m.name.as_str(),
            m.size,
            m.sha256.as_str()
        )))
    );
}

#[test]
fn refuses_an_archive_whose_name_is_unknown_or_that_cannot_be_read() {
    let mut obs = faithful();
    obs.archive = None;
    obs.archive_error = Some("no manifest identity was recorded by `lbp-build`".into());
    let checks = decide(&obs);
    assert_eq!(checks.len(), 1);
    assert_eq!(
        checks[0].detail,
        "no manifest identity was recorded by `lbp-build`"
    );
    assert!(archive_record(&obs).is_none());
    let mut obs = faithful();
    obs.digest = None;
    obs.archive_error = Some("not a regular file".into());
    let checks = decide(&obs);
    assert_eq!(checks.len(), 1);
    assert_eq!(
        checks[0].detail,
        "packages/c/a.lbpkg: cannot be read (not a regular file); expected the archive `lbp-build` moved there"
    );
}

#[test]
fn refuses_a_central_directory_python_would_refuse() {
    let mut obs = faithful();
    obs.zip = None;
    obs.zip_error = Some("no end of central directory".into());
    let checks = decide(&obs);
    assert_eq!(failures(&obs), [own("zip-structure")]);
    assert_eq!(checks[1].detail, "packages/c/a.lbpkg: Python's zipfile (which the SDK host uses) would refuse it: no end of central directory; rebuild it with `lbp build`");
}

#[test]
fn refuses_each_structural_finding_and_does_not_read_members_after_it() {
    for (name, advice) in [
        ("zip-structure", "the archive is not a plain `lbp build` output: rebuild it"),
        ("member-types", "the host refuses links and special files: remove them from the plugin"),
        ("encryption", "the host cannot read encrypted members: rebuild without encryption"),
        ("host-limits", "the SDK host (langbot_plugin.runtime.plugin.artifact) refuses such an archive: shrink the plugin"),
        ("member-names", "the archive was altered after the build; rebuild it from the staged commit"),
    ] {
        let mut obs = faithful();
        let z = zip_of(&mut obs);
        let finding = format!("\"x\" finding for {name}");
        match name {
            "zip-structure" => z.structure.push(finding.clone()),
            "member-types" => z.types.push(finding.clone()),
            "encryption" => z.encryption.push(finding.clone()),
            "host-limits" => z.host_limits.push(finding.clone()),
            _ => z.names.push(finding.clone()),
        }
        let checks = decide(&obs);
        let c = checks.iter().find(|c| c.name == name).unwrap();
        assert_eq!(c.result, CheckResult::Fail, "{name}");
        assert!(c.detail.contains(&finding) && c.detail.ends_with(advice), "{name}: {}", c.detail);
        let mut expected = vec![own(name)];
        for data in DATA_CHECKS {
            expected.push((data.into(), Some(name.into())));
        }
        assert_eq!(failures(&obs), expected, "{name}");
        let d = checks.iter().find(|c| c.name == "extraction-exact").unwrap();
        assert_eq!(d.detail, format!("packages/c/a.lbpkg: not examined because {name} failed; fix those first"));
    }
}

#[test]
fn two_structural_findings_name_both_and_the_first_is_the_root() {
    let mut obs = faithful();
    zip_of(&mut obs).structure.push("s".into());
    zip_of(&mut obs).encryption.push("e".into());
    let f = failures(&obs);
    assert_eq!(&f[..2], [own("zip-structure"), own("encryption")]);
    assert!(
        f[2..]
            .iter()
            .all(|(_, r)| r.as_deref() == Some("zip-structure")),
        "{f:?}"
    );
    let checks = decide(&obs);
    assert!(checks
        .last()
        .unwrap()
        .detail
        .contains("not examined because zip-structure, encryption failed"));
}

#[test]
fn a_committed_unsafe_name_and_an_altered_one_get_each_their_own_advice() {
    let mut obs = faithful();
    let z = zip_of(&mut obs);
    z.committed_unsafe_names = vec!["a\\..\\b.py".into()];
    z.names = vec![
        "\"a\\\\..\\\\b.py\" is absolute, climbs out with `..` or names a drive".into(),
        "\"../c.py\" is absolute, climbs out with `..` or names a drive".into(),
    ];
    let c = decide(&obs).remove(3);
    assert_eq!(c.name, "member-names");
    assert_eq!(
        c.detail,
        "packages/c/a.lbpkg: the host refuses or misplaces such members: \"a\\\\..\\\\b.py\" is absolute, climbs out \
         with `..` or names a drive; these names are committed files' own names (\"a\\\\..\\\\b.py\"), which `lbp \
         build` copies as they are, so rebuilding cannot help: rename the committed file(s) so no name holds a \
         backslash or a `..` component (the host reads `\\` as `/`), commit, and re-run. Also: \"../c.py\" is \
         absolute, climbs out with `..` or names a drive; no committed file has such a name, so `lbp build` did \
         not write it from this commit: the archive was altered after the build; rebuild it from the staged commit"
    );
}

#[test]
fn refuses_a_zip_comment_naming_its_length() {
    let mut obs = faithful();
    zip_of(&mut obs).comment_bytes = 8;
    zip_of(&mut obs).comment_preview = "envelope".into();
    assert_eq!(failures(&obs), [own("zip-comment")]);
    let c = decide(&obs).remove(2);
    assert!(
        c.detail.starts_with(
            "packages/c/a.lbpkg: carries a 8-byte ZIP comment (\"envelope\"); expected none"
        ),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .ends_with("so the archive was altered after the build"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_a_missing_or_unexpected_member() {
    let mut obs = faithful();
    zip_of(&mut obs).expected = Ok(Expected {
        selected: 3,
        missing: vec!["pkg/b.py".into()],
        unexpected: vec!["notes.txt".into()],
    });
    assert_eq!(failures(&obs), [own("expected-members")]);
    let c = decide(&obs).remove(7);
    assert_eq!(c.detail, "packages/c/a.lbpkg: source files the build should include but the archive lacks: [\"pkg/b.py\"]; members with no selected source file: [\"notes.txt\"]; expected the archive to hold exactly what `lbp build` selects: rebuild it from the staged commit");
    zip_of(&mut obs).expected = Err("bad .gitignore".into());
    let c = decide(&obs).remove(7);
    assert_eq!(
        c.detail,
        "cannot apply the build's inclusion rules to the staged source: bad .gitignore"
    );
}

#[test]
fn refuses_a_committed_file_git_keeps_that_the_build_left_out() {
    let mut obs = faithful();
    zip_of(&mut obs).committed = Ok(vec![file(
        "config_loader.py",
        false,
        GitVerdict::Kept { by: None },
        dropped("config_loader.py", 1, "/config"),
    )]);
    assert_eq!(failures(&obs), [own("committed-files")]);
    zip_of(&mut obs).committed = Err("cannot walk".into());
    let c = decide(&obs).remove(8);
    assert_eq!(c.detail, "packages/c/a.lbpkg: cannot tell which committed files git's own ignore rules keep: cannot walk; nothing was compared");
}

#[test]
fn refuses_a_member_that_differs_from_the_staged_source() {
    let mut obs = faithful();
    data_of(&mut obs).differences = vec!["pkg/a.py (member sha256 1, source sha256 2)".into()];
    assert_eq!(failures(&obs), [own("members-equal-source")]);
    let c = decide(&obs).remove(9);
    assert_eq!(c.detail, "packages/c/a.lbpkg: members differ from the staged source: pkg/a.py (member sha256 1, source sha256 2); expected byte-identical copies: rebuild from the staged commit");
}

#[test]
fn refuses_a_manifest_whose_meaning_differs_from_the_source() {
    let mut obs = faithful();
    data_of(&mut obs).manifest.archived_sdk =
        Ok(yaml("kind: Tool\nspec:\n  config: []\n  pages: []\n"));
    assert_eq!(failures(&obs), [own("manifest-equal-source")]);
    let c = decide(&obs).remove(10);
    assert!(
        c.detail.contains("kind: source Plugin, archive Tool"),
        "{}",
        c.detail
    );
}

#[test]
fn refuses_an_extraction_that_is_not_the_archive() {
    let mut obs = faithful();
    data_of(&mut obs).extraction = vec!["pkg/a.py: sha256 differs".into()];
    assert_eq!(failures(&obs), [own("extraction-exact")]);
    let c = decide(&obs).remove(11);
    assert_eq!(c.detail, "extracted/c: pkg/a.py: sha256 differs; the extraction is not the archive: this is a harness or file-system defect");
}

#[test]
fn members_that_could_not_be_read_fail_once_and_the_rest_follow() {
    let mut obs = faithful();
    zip_of(&mut obs).data = Some(Err("reading the members failed: CRC mismatch".into()));
    assert_eq!(
        failures(&obs),
        [
            own("members-equal-source"),
            (
                "manifest-equal-source".into(),
                Some("members-equal-source".into())
            ),
            (
                "extraction-exact".into(),
                Some("members-equal-source".into())
            ),
        ]
    );
    let checks = decide(&obs);
    assert_eq!(
        checks[11].detail,
        "packages/c/a.lbpkg: reading the members failed: CRC mismatch; extracted/c is incomplete"
    );
    assert!(archive_record(&obs).is_none());
}

#[test]
fn a_safe_archive_whose_members_were_not_read_is_not_a_pass() {
    let mut obs = faithful();
    zip_of(&mut obs).data = None;
    let f = failures(&obs);
    assert_eq!(f[0], own("members-equal-source"));
    assert_eq!(f.len(), 3);
}

#[test]
fn an_observation_blocks_reading_exactly_when_a_structural_finding_exists() {
    let mut obs = faithful();
    assert!(!zip_of(&mut obs).blocks_reading());
    for i in 0..5 {
        let mut obs = faithful();
        let z = zip_of(&mut obs);
        let list = match i {
            0 => &mut z.structure,
            1 => &mut z.names,
            2 => &mut z.types,
            3 => &mut z.encryption,
            _ => &mut z.host_limits,
        };
        list.push("x".into());
        assert!(z.blocks_reading(), "{i}");
    }
}

// ----- run: the gate without what it needs ---------------------------------

#[test]
fn run_without_the_staged_source_is_an_error_and_without_a_build_a_failure() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    let e = testing::run(&ArchiveMembers, &ctx).0.unwrap_err();
    assert!(e.contains("run `stage` first"), "{e}");
    // Staged, but lbp-build recorded no manifest identity: nothing passes.
    ctx.staged_root = Some(ctx.staging_source());
    let checks = testing::run(&ArchiveMembers, &ctx).0.unwrap();
    testing::assert_none_pass(&checks);
    assert!(
        checks
            .iter()
            .any(|c| c.detail.contains("run `lbp-build` first")),
        "{checks:#?}"
    );
    assert_eq!(ArchiveMembers.id(), "archive-members");
}
