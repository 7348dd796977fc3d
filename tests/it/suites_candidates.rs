//! Each candidate's own tests (`suites`' per-candidate runs), with the
//! genuine SDK, real pytest and the real sandbox, on our own fixture plugins
//! (`fixtures/component-plugins/Components`): `wrap-plugin` (a Tool whose
//! tests import its own top-level `components` package and need `six` from
//! DIR/wheelhouse), `tally-plugin` (a Command whose tests import a
//! `components` package of the same name), `misfit-plugin` (pins another
//! SDK: admission refuses it) and the four plugins without tests.
//!
//! Both tested plugins pass from their folders and from their extractions,
//! each in a process of its own; `six` reaches wrap's tests only through
//! its dependency environment (the interpreter has none); a plugin that
//! fails admission and one that fails lbp-build are left out of their own
//! runs while the others run; every
//! plugin without tests gets an `untested` warning; a test reading a file
//! the build leaves out fails that candidate's extraction run only.

use crate::common;

use common::{check, checks, detail, fixtures_dir, gate, git, python, FixtureRepo};
use serde_json::Value;

const GATE: &str = "suites";

/// A profile with the candidates `folders` (under `Components/`) and the
/// repository-level suite `repo-tests/`.
fn profile(folders: &[&str]) -> String {
    let mut text = String::from(
        "name = \"own-tests\"\n\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n\n\
         [suites]\npaths = [\"repo-tests\"]\n",
    );
    for f in folders {
        text.push_str(&format!("\n[[candidate]]\npath = \"Components/{f}\"\n"));
    }
    text
}

/// `fixtures/component-plugins` as a git repository with a repository-level
/// suite; `more` are written (and force-added: ignored files too) before
/// the one commit.
fn repo(more: &[(&str, &str)]) -> FixtureRepo {
    let repo = common::uncommitted_repo_of("component-plugins", &[("component-plugins", "")]);
    let root = &repo.root;
    let mut files = vec![(
        "repo-tests/test_repository.py",
        "def test_the_repository_level_suite_runs():\n    assert True\n",
    )];
    files.extend_from_slice(more);
    for (path, text) in &files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    common::init_fixture(root);
    git(root, &["add", "-A"]);
    for (path, _) in &files {
        git(root, &["add", "-f", path]);
    }
    git(root, &["commit", "-q", "-m", "fixture"]);
    repo
}

fn certify(repo: &FixtureRepo, folders: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, Value) {
    let python = python();
    let (out, keep, dir) = common::run_only_with_profile(
        &repo.root,
        GATE,
        &profile(folders),
        &["--python", python.to_str().unwrap()],
    );
    let ev = common::read_evidence(&dir);
    eprintln!("{}", common::both(&out));
    (keep, dir, ev)
}

fn result<'a>(ev: &'a Value, name: &str, folder: &str) -> &'a str {
    check(ev, GATE, name, Some(folder))["result"]
        .as_str()
        .unwrap()
}

/// The run names the suites record holds.
fn runs(ev: &Value) -> Vec<String> {
    ev["suites"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn own_tests_run_per_candidate_and_candidates_failing_lbp_build_or_admission_leave_only_themselves_out(
) {
    let interpreter_has_six = std::process::Command::new(python())
        .args(["-I", "-c", "import six"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(
        !interpreter_has_six,
        "the interpreter must not hold six for this test to prove anything"
    );
    let all = [
        "wrap-plugin",
        "tally-plugin",
        "misfit-plugin",
        "tool-plugin",
        "command-plugin",
        "event-plugin",
        "knowledge-plugin",
    ];
    // event-plugin's manifest gives its version as a float: the official
    // build writes nothing, so lbp-build fails it.
    let manifest = std::fs::read_to_string(
        fixtures_dir().join("component-plugins/Components/event-plugin/manifest.yaml"),
    )
    .unwrap()
    .replace("version: \"0.1.0\"", "version: 1.0");
    let repo = repo(&[("Components/event-plugin/manifest.yaml", &manifest)]);
    let (_keep, dir, ev) = certify(&repo, &all);
    // lbp-build fails event-plugin, admission misfit-plugin; suites runs for
    // the others.
    assert_eq!(gate(&ev, "lbp-build")["result"], "fail");
    assert_eq!(gate(&ev, "admission")["result"], "fail");
    assert_eq!(
        gate(&ev, GATE)["candidates_left_out"],
        serde_json::json!(["misfit-plugin", "event-plugin"])
    );
    // The repository-level runs need every candidate: a gate-wide failure
    // naming who is missing, and no run of theirs.
    let repository = check(&ev, GATE, "repository-runs", None);
    assert_eq!(repository["result"], "fail");
    assert!(
        detail(repository).contains("misfit-plugin, event-plugin"),
        "{repository}"
    );
    // Both tested plugins pass from their folders and their extractions.
    for folder in ["wrap-plugin", "tally-plugin"] {
        for name in [
            "test-paths",
            "no-private-sdk",
            "tree/collected",
            "tree/outcomes",
            "tree/passing",
            "extracted/collected",
            "extracted/outcomes",
            "extracted/passing",
            "extracted/same-outcomes",
        ] {
            let c = check(&ev, GATE, &format!("{folder}/{name}"), Some(folder));
            assert_eq!(c["result"], "pass", "{folder}/{name}: {c}");
        }
    }
    // Each run is sandboxed like the repository-level runs (a warning only
    // where bubblewrap is unusable), with its own logs and private root.
    for run in [
        "wrap-plugin/tree",
        "wrap-plugin/extracted",
        "tally-plugin/tree",
    ] {
        let folder = run.split('/').next().unwrap();
        let c = check(&ev, GATE, &format!("{run}/sandbox"), Some(folder));
        assert_ne!(c["result"], "fail", "{c}");
        assert!(
            dir.join("roots/suites").join(run).join("source").is_dir(),
            "{run}"
        );
    }
    let outcomes = check(&ev, GATE, "wrap-plugin/tree/outcomes", Some("wrap-plugin"));
    assert_eq!(outcomes["observed"]["counts"]["passed"], 5, "{outcomes}");
    // six came from wrap's dependency environment, prepared from the wheelhouse.
    let env = check(&ev, GATE, "wrap-plugin/no-private-sdk", Some("wrap-plugin"));
    let site = env["observed"]["environment"].as_str().unwrap();
    assert!(site.starts_with("roots/dependencies/"), "{env}");
    assert!(dir.join(site).join("six.py").is_file(), "{site}");
    assert!(
        std::fs::read_dir(dir.join("wheelhouse"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("six-1.16.0")),
        "six is a wheelhouse file"
    );
    // tally has no requirement beyond the SDK: nothing appended.
    let tally_env = check(
        &ev,
        GATE,
        "tally-plugin/no-private-sdk",
        Some("tally-plugin"),
    );
    let tally_site = tally_env["observed"]["environment"].as_str().unwrap();
    assert!(!dir.join(tally_site).join("six.py").exists(), "{tally_env}");
    // Untested plugins: a warning each, never a pass; no run for them.
    for folder in ["tool-plugin", "command-plugin", "knowledge-plugin"] {
        let c = check(&ev, GATE, &format!("{folder}/untested"), Some(folder));
        assert_eq!(c["result"], "warn", "{c}");
        assert!(
            detail(c).contains("not its folder's tests/, and the profile names none"),
            "{c}"
        );
    }
    // Runs: two per tested candidate, none for the others or the left-out one.
    assert_eq!(
        runs(&ev),
        [
            "wrap-plugin/tree",
            "wrap-plugin/extracted",
            "tally-plugin/tree",
            "tally-plugin/extracted"
        ]
    );
    assert!(!checks(&ev, GATE)
        .iter()
        .any(|c| c["candidate"] == "misfit-plugin" || c["candidate"] == "event-plugin"));
    for run in ["wrap-plugin/tree", "tally-plugin/extracted"] {
        assert!(
            dir.join("logs/suites").join(format!("{run}.xml")).is_file(),
            "{run}"
        );
    }
    // JUnit: one testsuite per candidate run.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("name=\"suites:tally-plugin/extracted\""));
}

#[test]
fn a_file_the_build_leaves_out_fails_that_candidates_extraction_run_only() {
    // tally's own .gitignore leaves data/ out of the archive (git ignores it
    // too, so archive-members accepts its absence); a test reads it.
    let repo = repo(&[
        (
            "Components/tally-plugin/.gitignore",
            "__pycache__/\n*.pyc\n.env\ndata/\n",
        ),
        ("Components/tally-plugin/data/words.txt", "one two three\n"),
        (
            "Components/tally-plugin/tests/test_data.py",
            "from pathlib import Path\n\n\ndef test_words_file_is_there():\n    \
             assert Path('data/words.txt').read_text().split() == ['one', 'two', 'three']\n",
        ),
    ]);
    let (_keep, dir, ev) = certify(&repo, &["wrap-plugin", "tally-plugin", "tool-plugin"]);
    assert!(gate(&ev, GATE)["candidates_left_out"]
        .as_array()
        .is_none_or(|a| a.is_empty()));
    // The repository-level runs ran as before, and passed.
    for name in [
        "tree/outcomes",
        "extracted/outcomes",
        "extracted/same-outcomes",
    ] {
        let c = check(&ev, GATE, name, None);
        assert_eq!(c["result"], "pass", "{name}: {c}");
    }
    assert_eq!(
        result(&ev, "tally-plugin/tree/outcomes", "tally-plugin"),
        "pass"
    );
    let outcomes = check(
        &ev,
        GATE,
        "tally-plugin/extracted/outcomes",
        Some("tally-plugin"),
    );
    assert_eq!(outcomes["result"], "fail", "{outcomes}");
    assert!(
        detail(outcomes).contains("test_words_file_is_there"),
        "{outcomes}"
    );
    let same = check(
        &ev,
        GATE,
        "tally-plugin/extracted/same-outcomes",
        Some("tally-plugin"),
    );
    assert_eq!(same["result"], "fail", "{same}");
    assert!(detail(same).contains("test_words_file_is_there"), "{same}");
    // The other tested candidate is untouched by it.
    for name in ["extracted/outcomes", "extracted/same-outcomes"] {
        assert_eq!(
            result(&ev, &format!("wrap-plugin/{name}"), "wrap-plugin"),
            "pass"
        );
    }
    assert_eq!(result(&ev, "tool-plugin/untested", "tool-plugin"), "warn");
    // The candidate's verdict names suites; the others' do not fail there.
    let verdict = |f: &str| common::candidate(&ev, f)["verdict"].clone();
    assert_eq!(
        verdict("tally-plugin")["gate"],
        "suites",
        "{}",
        verdict("tally-plugin")
    );
    assert_ne!(
        verdict("wrap-plugin")["result"],
        "fail",
        "{}",
        verdict("wrap-plugin")
    );
    // replay re-decides the repository-level runs from the kept records and
    // names the candidates' own runs as not re-decided.
    let out = common::replay_output(&dir, &[]);
    let text = common::both(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("suites re-decided from logs/suites"),
        "{text}"
    );
    assert!(
        text.contains("not re-decided: suites (candidates' own tests)"),
        "{text}"
    );
}

#[test]
fn a_module_the_build_leaves_out_of_a_tests_folder_the_archive_holds_is_not_added_from_the_tree() {
    // Tests kept beside the code (`tests = ["components"]`); tally's own
    // .gitignore leaves components/extra.py out of the archive, and a test
    // beside it imports it. The extraction run must test the archive's
    // components/, not get the left-out module back from the tree.
    let repo = repo(&[
        (
            "Components/tally-plugin/.gitignore",
            "__pycache__/\n*.pyc\n.env\nextra.py\n",
        ),
        (
            "Components/tally-plugin/components/extra.py",
            "def answer():\n    return 42\n",
        ),
        (
            "Components/tally-plugin/components/test_extra.py",
            "from components.extra import answer\n\n\ndef test_extra_answers():\n    assert answer() == 42\n",
        ),
    ]);
    let python = python();
    let text = profile(&["wrap-plugin", "tally-plugin"]).replace(
        "path = \"Components/tally-plugin\"\n",
        "path = \"Components/tally-plugin\"\ntests = [\"components\"]\n",
    );
    let (out, _keep, dir) = common::run_only_with_profile(
        &repo.root,
        GATE,
        &text,
        &["--python", python.to_str().unwrap()],
    );
    let ev = common::read_evidence(&dir);
    eprintln!("{}", common::both(&out));
    assert_eq!(
        result(&ev, "tally-plugin/tree/outcomes", "tally-plugin"),
        "pass"
    );
    let paths = check(&ev, GATE, "tally-plugin/test-paths", Some("tally-plugin"));
    assert!(
        !paths["observed"]["added_to_extraction"]
            .to_string()
            .contains("extra.py\""),
        "{paths}"
    );
    let outcomes = check(
        &ev,
        GATE,
        "tally-plugin/extracted/outcomes",
        Some("tally-plugin"),
    );
    assert_eq!(outcomes["result"], "fail", "{outcomes}");
    assert_eq!(
        result(&ev, "tally-plugin/extracted/same-outcomes", "tally-plugin"),
        "fail"
    );
}

#[test]
fn covers_passes_only_for_a_candidate_whose_extraction_the_repository_level_extracted_run_read() {
    // The repository-level suite reads tool-plugin's extraction through the
    // source root (as the coding runners' suites read theirs) and nothing of
    // command-plugin's; the profile claims both are covered.
    let r = repo(&[(
        "repo-tests/test_repository.py",
        "import os\n\n\
         def test_reads_one_candidates_extraction():\n    \
             root = os.environ.get('CODING_RUNNER_SOURCE_ROOT')\n    \
             if root:\n        \
                 with open(os.path.join(root, 'tool-plugin', 'manifest.yaml')) as f:\n            \
                     assert 'Plugin' in f.read()\n",
    )]);
    let mut text = profile(&["tool-plugin", "command-plugin"]);
    text = text.replace(
        "paths = [\"repo-tests\"]\n",
        "paths = [\"repo-tests\"]\ncovers = [\"Components/tool-plugin\", \"Components/command-plugin\"]\n",
    );
    let python = python();
    let (out, _keep, dir) = common::run_only_with_profile(
        &r.root,
        GATE,
        &text,
        &["--python", python.to_str().unwrap()],
    );
    let ev = common::read_evidence(&dir);
    eprintln!("{}", common::both(&out));
    assert_eq!(
        result(&ev, "tool-plugin/covered", "tool-plugin"),
        "pass",
        "{}",
        detail(check(&ev, GATE, "tool-plugin/covered", Some("tool-plugin")))
    );
    // Claimed by the profile, never read by the run: a warning, not a pass.
    assert_eq!(
        result(&ev, "command-plugin/covered", "command-plugin"),
        "warn"
    );
    assert!(
        detail(check(
            &ev,
            GATE,
            "command-plugin/covered",
            Some("command-plugin")
        ))
        .contains("never opened, imported"),
        "{}",
        detail(check(
            &ev,
            GATE,
            "command-plugin/covered",
            Some("command-plugin")
        ))
    );
    // The repository-level runs themselves passed: the warning is about the
    // claim, not the tests.
    assert_eq!(gate(&ev, GATE)["result"], "pass");
    let run = ev["suites"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "extracted")
        .unwrap();
    assert_eq!(run["counts"]["passed"], 1, "{run}");
}
