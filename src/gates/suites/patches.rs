//! `<run>/pytest-patches`: the known shape of same-interpreter forging,
//! named. The outcome observation runs in the suites' own interpreter, so a
//! conftest that assigns to pytest's report objects or to the run's plugin
//! (`pytest.TestReport.outcome = ...`, `setattr(_pytest.runner, ...)`,
//! `monkeypatch.setattr("_pytest....")`, `r.TestReport.__init__ = ...` after
//! `import _pytest.reports as r`, the plugin's `record` replaced through
//! `config.pluginmanager`) can certify a failing test. That limit stays in
//! the catalogue's `does_not_prove`; this check makes its known shape a
//! warning naming file and line, so such a run is never `PASSED`.
//!
//! The driver (`pytest_patches.py`, prepended to `suites_run.py`) reads
//! every `.py` file of the run's copy with `ast` before pytest imports any
//! of them. It names fewer statements than code can make (names built at
//! run time, `exec`), never an assignment to the repository's own objects.

use super::record::Collection;
use crate::evidence::Check;
use serde_json::json;

/// At most this many statements are named in the detail.
const NAMED_AT_MOST: usize = 20;

/// `<run>/pytest-patches` over the run's collection record (`None`: not
/// read, a consequence the caller names).
pub(crate) fn patches_check(run: &str, c: Option<&Collection>) -> Check {
    let name = format!("{run}/pytest-patches");
    let Some(c) = c else {
        return Check::fail(
            &name,
            None,
            "the run's collection record was not read, so the driver's scan of the repository's modules for \
             assignments to pytest's objects was not observed; see the `collected` check",
        )
        .with_observed(json!({ "record_read": false }));
    };
    let scan = &c.definitions.pytest_patches;
    let observed = json!({ "files": scan.files, "patches": scan.patches });
    if scan.patches.is_empty() {
        return Check::pass(
            &name,
            None,
            format!(
                "none of the {} Python module(s) of the run's tree assigns to an attribute of pytest's objects \
                 or of the run's plugin (read with ast before pytest imported them)",
                scan.files
            ),
        )
        .with_observed(observed);
    }
    let mut lines: Vec<String> = scan
        .patches
        .iter()
        .take(NAMED_AT_MOST)
        .map(|p| format!("{}:{}: {} (`{}`)", p.file, p.line, p.target, p.statement))
        .collect();
    if scan.patches.len() > NAMED_AT_MOST {
        lines.push(format!(
            "... and {} more (all in this check's observed value)",
            scan.patches.len() - NAMED_AT_MOST
        ));
    }
    Check::warn(
        &name,
        None,
        format!(
            "{} statement(s) of the repository assign to attributes of pytest's objects or of the run's plugin, \
             which runs in the same interpreter: such code can make a failing test look passed to pytest, its \
             JUnit report and the plugin alike, so the outcomes of this run cannot be certified:\n  {}\n\
             expected the suites to leave pytest's and the plugin's objects alone: patch the repository's own \
             modules instead, or remove the statements",
            scan.patches.len(),
            lines.join("\n  ")
        ),
    )
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;
    use crate::gates::suites::record::{Patch, PytestPatches};

    fn python() -> std::path::PathBuf {
        match std::env::var_os("PYTHON") {
            Some(p) if !p.is_empty() => p.into(),
            _ => panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
        }
    }

    /// The genuine interpreter's `scan_patches` of a folder holding `files`.
    fn scan(files: &[(&str, &str)]) -> PytestPatches {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let program = format!(
            "{}\nimport json, sys\nprint(json.dumps(scan_patches(sys.argv[1])))\n",
            crate::python::PYTEST_PATCHES
        );
        let out = std::process::Command::new(python())
            .args(["-I", "-B", "-c", &program])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn targets(p: &PytestPatches) -> Vec<(String, u64, String)> {
        p.patches
            .iter()
            .map(|p| (p.file.clone(), p.line, p.target.clone()))
            .collect()
    }

    #[test]
    fn the_scan_names_each_known_shape_of_patching_pytest_or_the_plugin() {
        let found = scan(&[
            ("t/conftest.py", "import pytest\n\npytest.TestReport.outcome = 'passed'\n"),
            ("t/a.py", "import _pytest.runner\nsetattr(_pytest.runner, 'call_and_report', f)\n"),
            (
                "t/b.py",
                "def test_x(monkeypatch):\n    monkeypatch.setattr('_pytest.runner.call_and_report', f)\n",
            ),
            ("t/c.py", "import _pytest.reports as r\nr.TestReport.__init__ = init\n"),
            (
                "t/d.py",
                "def pytest_configure(config):\n    for p in config.pluginmanager.get_plugins():\n        \
                 type(p).record = lambda *a: None\n",
            ),
            ("t/e.py", "from _pytest.reports import TestReport as T\n(T.outcome, x) = (1, 2)\n"),
            ("t/f.py", "import sys\nsys.modules['_pytest.reports'].TestReport.when = 'call'\n"),
            ("t/g.py", "import __main__\n__main__.Observer.phase = lambda *a: None\n"),
        ]);
        assert_eq!(
            targets(&found),
            [
                ("t/a.py".into(), 2, "_pytest.runner.call_and_report".into()),
                ("t/b.py".into(), 2, "_pytest.runner.call_and_report".into()),
                (
                    "t/c.py".into(),
                    2,
                    "_pytest.reports.TestReport.__init__".into()
                ),
                (
                    "t/conftest.py".into(),
                    3,
                    "pytest.TestReport.outcome".into()
                ),
                ("t/d.py".into(), 3, "<plugin>.record".into()),
                (
                    "t/e.py".into(),
                    2,
                    "_pytest.reports.TestReport.outcome".into()
                ),
                ("t/f.py".into(), 2, "_pytest.reports.TestReport.when".into()),
                ("t/g.py".into(), 2, "__main__.Observer.phase".into()),
            ]
        );
        assert_eq!(found.files, 8);
        assert_eq!(
            found.patches[3].statement,
            "pytest.TestReport.outcome = 'passed'"
        );
    }

    #[test]
    fn the_scan_leaves_the_repositorys_own_patches_and_hook_arguments_alone() {
        let found = scan(&[
            (
                "t/conftest.py",
                "import pytest\nimport mypkg\n\n@pytest.fixture\ndef fx(monkeypatch):\n    \
                 monkeypatch.setattr(mypkg, 'X', 1)\n    monkeypatch.setattr('mypkg.Y', 2)\n    \
                 mypkg.Z = pytest.approx(1)\n\ndef pytest_runtest_logreport(report):\n    \
                 report.user_properties.append(('k', 1))\n",
            ),
            ("t/.venv/lib/x.py", "import pytest\npytest.X = 1\n"),
            ("t/broken.py", "def (:\n"),
        ]);
        assert_eq!(found.patches, []);
        assert_eq!(found.files, 2, "the dot folder is not read");
    }

    fn collection(patches: Vec<Patch>) -> Collection {
        let mut c: Collection = serde_json::from_value(json!({
            "exit_code": 0, "pytest_version": "9", "items": [], "errors": [],
        }))
        .unwrap();
        c.definitions.pytest_patches = PytestPatches { files: 3, patches };
        c
    }

    #[test]
    fn a_patch_warns_naming_file_line_and_statement_and_none_passes() {
        let c = patches_check("tree", Some(&collection(vec![])));
        assert_eq!(c.result, CheckResult::Pass);
        assert!(
            c.detail.contains("none of the 3 Python module(s)"),
            "{}",
            c.detail
        );
        let c = patches_check(
            "tree",
            Some(&collection(vec![Patch {
                file: "R/t/conftest.py".into(),
                line: 12,
                target: "pytest.TestReport.outcome".into(),
                statement: "pytest.TestReport.outcome = 'passed'".into(),
            }])),
        );
        assert_eq!(c.result, CheckResult::Warn);
        assert_eq!(c.name, "tree/pytest-patches");
        assert!(
            c.detail.contains(
                "R/t/conftest.py:12: pytest.TestReport.outcome (`pytest.TestReport.outcome = 'passed'`)"
            ),
            "{}",
            c.detail
        );
        let c = patches_check("extracted", None);
        assert_eq!(c.result, CheckResult::Fail);
    }
}
