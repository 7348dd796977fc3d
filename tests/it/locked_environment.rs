//! Issue 21, breaker finding F1: a forged, self-consistent distribution
//! (its own RECORD lists and correctly hashes an executable `.pth` and a
//! `pytest11` entry-point plugin) passed `sdk-record` and loaded into every
//! `suites` run. Run through the built binary with copies of the genuine SDK
//! interpreter (`common::copy_venv`; the original is never touched).
//!
//! Each hostile environment passes `environment-records`,
//! `environment-bytecode` and `environment-startup` (asserted: the forgery
//! is self-consistent), so on the code before `environment-locked` the gate
//! passed.

use crate::common;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::{
    check, copy_venv, detail, evidence_dir, exit_code, fixture_repo, read_evidence, require_bwrap,
    sdk_venv, site_packages, stderr_text, stdout_text, venv_python, verifier,
};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use verify_coding_candidates::exit;

/// Runs the verifier on `repo` with `python` and `args`; returns the exit
/// code, the evidence, the evidence folder (kept alive) and the output.
fn run(repo: &Path, python: &Path, args: &[&str]) -> (i32, Value, tempfile::TempDir, String) {
    let (keep, dir) = evidence_dir();
    let out = verifier()
        .current_dir(repo)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python)
        .args(args)
        .output()
        .expect("run the verifier");
    let text = common::expect_evidence(&out, &dir);
    (exit_code(&out), read_evidence(&dir), keep, text)
}

/// A RECORD row for `rel` (relative to `sp`) as an installer writes it.
fn record_row(sp: &Path, rel: &str) -> String {
    let bytes = std::fs::read(sp.join(rel)).unwrap();
    format!(
        "{rel},sha256={},{}",
        URL_SAFE_NO_PAD.encode(Sha256::digest(&bytes)),
        bytes.len()
    )
}

/// Installs a forged distribution `name-1.0` into `sp`: `files` (relative
/// paths and contents) plus METADATA, entry_points.txt and INSTALLER, and a
/// RECORD that lists and correctly hashes every one of them.
fn forge(sp: &Path, name: &str, files: &[(&str, String)], entry_points: &str) -> PathBuf {
    let dist_info = format!("{name}-1.0.dist-info");
    let mut all: Vec<(String, String)> = files
        .iter()
        .map(|(p, c)| ((*p).to_string(), c.clone()))
        .collect();
    all.push((
        format!("{dist_info}/METADATA"),
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"),
    ));
    all.push((format!("{dist_info}/entry_points.txt"), entry_points.into()));
    all.push((format!("{dist_info}/INSTALLER"), "pip\n".into()));
    let mut rows = Vec::new();
    for (rel, content) in &all {
        let path = sp.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        rows.push(record_row(sp, rel));
    }
    rows.push(format!("{dist_info}/RECORD,,"));
    std::fs::write(sp.join(&dist_info).join("RECORD"), rows.join("\n") + "\n").unwrap();
    sp.join(dist_info)
}

/// The `pytest11` plugin of the forgery: turns every failing test's report
/// into a pass.
const PLUGIN: &str = "# HOSTILE FIXTURE: rewrites outcomes\nimport pytest\n\n\
@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    \
outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n        \
report.outcome = 'passed'\n";

/// `importlib.metadata`'s `pytest11` entry points of `python`: the forged
/// plugin is live (pytest would autoload it).
fn pytest11_entry_points(python: &Path) -> String {
    let out = std::process::Command::new(python)
        .args([
            "-I",
            "-B",
            "-c",
            "import importlib.metadata as m; print(sorted(e.value for e in m.entry_points(group='pytest11')))",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_text(&out));
    stdout_text(&out)
}

/// A forged distribution (executable `.pth` and a `pytest11` plugin, every
/// file in its own verified RECORD), a locked distribution whose file and
/// RECORD row were changed together, and an egg-info: `environment-locked`
/// fails naming each, what it expected and what it found.
#[test]
fn a_forged_self_consistent_distribution_fails_environment_locked() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let forged = forge(
        &sp,
        "zz_results",
        &[
            ("zz_results.py", PLUGIN.to_string()),
            ("zz_results.pth", "import zz_results\n".to_string()),
        ],
        "[pytest11]\nzz_results = zz_results\n",
    );
    // iniconfig==2.3.1 is locked: change its module and its RECORD row
    // together (the stale bytecode removed, so nothing else notices).
    let ini_info = sp.join("iniconfig-2.3.1.dist-info");
    let module = "iniconfig/__init__.py";
    let mut text = std::fs::read_to_string(sp.join(module)).unwrap();
    text.push_str("\n# HOSTILE FIXTURE: one more line\n");
    std::fs::write(sp.join(module), &text).unwrap();
    for entry in std::fs::read_dir(sp.join("iniconfig/__pycache__")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("__init__.")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    let record = std::fs::read_to_string(ini_info.join("RECORD")).unwrap();
    let record: Vec<String> = record
        .lines()
        .map(|l| {
            if l.starts_with(&format!("{module},")) {
                record_row(&sp, module)
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(ini_info.join("RECORD"), record.join("\n") + "\n").unwrap();
    let egg = sp.join("zz_eggs-1.0.egg-info");
    std::fs::create_dir(&egg).unwrap();
    std::fs::write(
        egg.join("entry_points.txt"),
        "[pytest11]\nzz_eggs = zz_results\n",
    )
    .unwrap();
    let python = venv_python(&venv);
    let eps = pytest11_entry_points(&python);
    assert!(
        eps.contains("'zz_results'") && eps.contains("pytest_asyncio.plugin"),
        "the forged plugins are live: {eps}"
    );

    let (code, ev, _keep, text) = run(&repo.root, &python, &["--only", "sdk-record"]);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    // Self-consistent: the checks before environment-locked accept it.
    for name in [
        "environment-records",
        "environment-bytecode",
        "environment-startup",
    ] {
        let c = check(&ev, "sdk-record", name, None);
        assert_eq!(c["result"], "pass", "{name}: {}", detail(c));
    }
    let c = check(&ev, "sdk-record", "environment-locked", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let d = detail(c);
    assert!(
        d.contains(&format!(
            "{} (zz_results 1.0): not in the lock: expected a distribution the lock names, found zz_results 1.0",
            forged.display()
        )),
        "{d}"
    );
    let locked = verify_coding_candidates::provision::wheel_records::parse(
        verify_coding_candidates::provision::builtin::SDKS[0].wheel_records,
        "records",
    )
    .unwrap();
    let ini = locked.iter().find(|r| r.name == "iniconfig").unwrap();
    assert!(
        d.contains(&format!(
            "{} (iniconfig 2.3.1): its RECORD is not its locked wheel's (normalised rows): expected rows={} record={} (wheel iniconfig-2.3.1-py3-none-any.whl), found rows={} record=",
            ini_info.display(),
            ini.rows,
            ini.digest,
            ini.rows
        )),
        "{d}"
    );
    assert!(
        d.contains(&format!(
            "{} (zz_eggs 1.0): not a locked wheel",
            egg.display()
        )),
        "{d}"
    );
    assert!(
        d.starts_with(
            "drop --python (and PYTHON): the verifier provisions the pinned interpreter itself"
        ) && d.contains("\n3 of ")
            && d.contains("gates/profiles/sdk/langbot-plugin-0.6.0b5.records")
            && d.contains("`verify-coding-candidates sdk --venv PATH`")
            && d.contains("sdk.extra_distributions"),
        "{d}"
    );
    let observed = c["observed"]["distributions"].as_array().unwrap();
    assert!(
        observed
            .iter()
            .any(|o| o["name"] == "zz_results" && o["status"] == "not-locked"),
        "{observed:?}"
    );
}

/// The forged `pytest11` plugin named by the profile's
/// `sdk.extra_distributions`: `environment-locked` warns (never passes), and
/// the suites runs do not load it (entry-point autoload is off); the
/// profile's pytest plugin (pytest-asyncio) is loaded explicitly.
#[test]
fn a_named_extra_distribution_warns_and_its_pytest_plugin_does_not_load_in_suites() {
    require_bwrap("a_named_extra_distribution_warns_and_its_pytest_plugin_does_not_load_in_suites");
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let forged = forge(
        &sp,
        "zz_results",
        &[("zz_results.py", PLUGIN.to_string())],
        "[pytest11]\nzz_results = zz_results\n",
    );
    let python = venv_python(&venv);
    assert!(pytest11_entry_points(&python).contains("'zz_results'"));
    let profile_dir = tempfile::tempdir().unwrap();
    let profile = profile_dir.path().join("profile.toml");
    let text = verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS.replacen(
        "[sdk]\n",
        "[sdk]\nextra_distributions = [\"zz-results\"]\n",
        1,
    );
    std::fs::write(&profile, text).unwrap();

    let (_, ev, keep, text) = run(
        &repo.root,
        &python,
        &["--only", "suites", "--profile", profile.to_str().unwrap()],
    );
    let c = check(&ev, "sdk-record", "environment-locked", None);
    assert_eq!(c["result"], "warn", "{}", detail(c));
    assert!(
        detail(c).contains(&format!(
            "{} (zz_results 1.0): not in the lock, named by sdk.extra_distributions",
            forged.display()
        )),
        "{}",
        detail(c)
    );
    assert_eq!(common::gate_result(&ev, "suites"), "pass", "{text}");
    for run in ["tree", "extracted"] {
        let path = keep
            .path()
            .join("evidence/logs/suites")
            .join(format!("{run}-collection.json"));
        let path = if path.is_file() {
            path
        } else {
            find_file(keep.path(), &format!("{run}-collection.json"))
        };
        let record: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let hooks = record["hooks"].to_string();
        assert!(!hooks.contains("zz_results"), "{run}: {hooks}");
        assert!(hooks.contains("pytest_asyncio"), "{run}: {hooks}");
    }
}

/// The first file named `name` under `root`.
fn find_file(root: &Path, name: &str) -> PathBuf {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name() == name)
        .unwrap_or_else(|| panic!("no {name} under {}", root.display()))
        .into_path()
}

/// The provisioning's own integrity check, which now also compares every
/// installed RECORD with its locked wheel's, accepts the genuine provisioned
/// environment (read only: nothing is rebuilt or written).
#[test]
fn the_genuine_provisioned_environment_is_sound_with_the_wheel_records() {
    use verify_coding_candidates::provision::{self, builtin, integrity, lock_list};
    let pin = verify_coding_candidates::profile::parse(
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS,
        "built-in",
    )
    .unwrap()
    .sdk;
    let extras =
        lock_list::parse(builtin::TEST_EXTRAS.lock, builtin::TEST_EXTRAS.lock_label).unwrap();
    let lock = provision::sdk_lock(&pin).unwrap().merged(&extras).unwrap();
    let sound = integrity::check(&sdk_venv(), &lock).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sound.distributions, lock.entries.len());
}
