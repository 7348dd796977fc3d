//! The environment observation and checks on fake environments (no
//! interpreter): a temporary prefix with one site directory, a distribution
//! and its RECORD, and a site probe answer written by hand.

use super::environment::*;
use super::environment_checks::environment_checks;
use crate::evidence::{Check, CheckResult};
use std::path::{Path, PathBuf};

const DIST: &str = "demo-1.0.dist-info";
const PTH_EXEC: &str = "import os; os.environ.setdefault('DEMO', '1')\n";

fn row(path: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest;
    format!(
        "{path},sha256={},{}\n",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes)),
        bytes.len()
    )
}

/// A prefix with `bin/demo`, `bin/python`, `pyvenv.cfg` and a site directory
/// holding `demo.py`, `demo.pth` (executable, RECORD-owned) and the
/// dist-info; `extra_rows` are appended to RECORD.
struct Env {
    root: tempfile::TempDir,
    sp: PathBuf,
}

impl Env {
    fn new(extra_rows: &str) -> Env {
        let root = tempfile::tempdir().unwrap();
        let prefix = root.path();
        let sp = prefix.join("lib/python3.11/site-packages");
        std::fs::create_dir_all(sp.join(DIST)).unwrap();
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(sp.join("demo.py"), b"x = 1\n").unwrap();
        std::fs::write(sp.join("demo.pth"), PTH_EXEC).unwrap();
        std::fs::write(prefix.join("bin/demo"), b"#!python\n").unwrap();
        std::fs::write(prefix.join("bin/activate"), b"# venv\n").unwrap();
        std::fs::write(prefix.join("pyvenv.cfg"), b"home = /usr/bin\n").unwrap();
        let record = row("demo.py", b"x = 1\n")
            + &row("demo.pth", PTH_EXEC.as_bytes())
            + &row("../../../bin/demo", b"#!python\n")
            + &format!("{DIST}/RECORD,,\n")
            + extra_rows;
        std::fs::write(sp.join(DIST).join("RECORD"), record).unwrap();
        Env { root, sp }
    }

    fn prefix(&self) -> &Path {
        self.root.path()
    }

    fn probe(&self) -> SiteProbe {
        let sp = self.sp.display().to_string();
        SiteProbe {
            executable: self.prefix().join("bin/python").display().to_string(),
            prefix: self.prefix().display().to_string(),
            base_prefix: "/usr".into(),
            exec_prefix: None,
            python_version: "3.11.7".into(),
            cache_tag: "cpython-311".into(),
            magic: "a70d0d0a".into(),
            flags: Default::default(),
            enable_user_site: false,
            user_site: None,
            scripts_dir: Some(self.prefix().join("bin").display().to_string()),
            stdlib: Some("/usr/lib/python3.11".into()),
            site_dirs: vec![sp.clone()],
            base_site_packages: Vec::new(),
            initial_path: vec!["/usr/lib/python3.11".into()],
            sys_path: vec!["/usr/lib/python3.11".into(), sp],
            executed_pth_lines: vec![PTH_EXEC.into()],
            startup_calls: vec!["sitecustomize".into()],
            sitecustomize: None,
            usercustomize: None,
            bytecode: Vec::new(),
            bytecode_cache: None,
            stdlib_bytecode: None,
        }
    }

    fn checks(&self, probe: SiteProbe) -> Vec<Check> {
        let obs = observe_environment(
            Path::new("/nonexistent/python"),
            Ok(probe),
            &SdkScope::default(),
        );
        environment_checks(&obs)
    }
}

fn named<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:#?}"))
}

#[test]
fn a_clean_environment_passes_with_its_owned_executable_pth() {
    let env = Env::new("");
    let checks = env.checks(env.probe());
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{c:#?}");
    }
    let startup = named(&checks, "environment-startup");
    assert!(
        startup.detail.contains("demo.pth (line 1 executes")
            && startup.detail.contains(&format!("(owned by {DIST})")),
        "{}",
        startup.detail
    );
    let unowned = named(&checks, "environment-unowned");
    assert!(
        unowned.detail.contains("bin/activate") && unowned.detail.contains("pyvenv.cfg"),
        "{}",
        unowned.detail
    );
}

#[test]
fn standard_library_bytecode_is_compared_for_the_seed_never_judged() {
    // The standard library is the base interpreter's: its bytecode, found
    // differing from its source, is left out of the seed (`seed.rs`), and no
    // environment check fails or warns on it.
    let env = Env::new("");
    let mut probe = env.probe();
    probe.stdlib_bytecode = Some(SiteBytecode {
        site_dir: "/usr/lib/python3.11".into(),
        files: vec![super::BytecodeFile {
            path: "json/__pycache__/__init__.cpython-311.pyc".into(),
            source: Some("json/__init__.py".into()),
            optimize: Some(0),
            header: None,
            outcome: super::BytecodeOutcome::Differs,
            difference: Some("<module>.co_code".into()),
            source_sha256: None,
            pyc_sha256: None,
            cached: false,
        }],
    });
    for c in &env.checks(probe) {
        assert_eq!(c.result, CheckResult::Pass, "{c:#?}");
        assert!(!c.detail.contains("json/"), "{}", c.detail);
    }
}

#[test]
fn an_unowned_executable_pth_fails_naming_its_line() {
    let env = Env::new("");
    std::fs::write(
        env.sp.join("evil.pth"),
        b"# hook\nimport sys; sys.meta_path.insert(0, 1)\n",
    )
    .unwrap();
    let mut probe = env.probe();
    probe
        .executed_pth_lines
        .push("import sys; sys.meta_path.insert(0, 1)\n".into());
    let c = named(&env.checks(probe), "environment-startup").clone();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(&format!(
            "{}/evil.pth (line 2 executes `import sys; sys.meta_path.insert(0, 1)`)",
            env.sp.display()
        )) && c.detail.contains("whose import line it executes"),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("demo.pth"), "{}", c.detail);
}

#[test]
fn an_unowned_path_pth_fails_as_it_steers_sys_path() {
    let env = Env::new("");
    std::fs::write(env.sp.join("extra.pth"), b"/opt/elsewhere\n").unwrap();
    let c = named(&env.checks(env.probe()), "environment-startup").clone();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("extra.pth (line 1 adds `/opt/elsewhere` to sys.path)")
            && !c.detail.contains("whose import line it executes"),
        "{}",
        c.detail
    );
}

#[test]
fn an_unowned_sitecustomize_fails_and_an_owned_one_passes() {
    let env = Env::new("");
    let module = env.sp.join("sitecustomize.py");
    std::fs::write(&module, b"print('hi')\n").unwrap();
    let mut probe = env.probe();
    probe.sitecustomize = Some(module.display().to_string());
    let c = named(&env.checks(probe.clone()), "environment-startup").clone();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(&format!(
            "{}: expected no `sitecustomize` module or one a verified RECORD owns",
            module.display()
        )),
        "{}",
        c.detail
    );

    // Owned by the distribution's RECORD: passes.
    let owned = Env::new(&row("sitecustomize.py", b"print('hi')\n"));
    let module = owned.sp.join("sitecustomize.py");
    std::fs::write(&module, b"print('hi')\n").unwrap();
    let mut probe = owned.probe();
    probe.sitecustomize = Some(module.display().to_string());
    let c = named(&owned.checks(probe), "environment-startup").clone();
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
}

#[test]
fn a_usercustomize_site_does_not_import_is_named_not_failed() {
    let env = Env::new("");
    let mut probe = env.probe();
    probe.usercustomize = Some("/home/u/.local/lib/usercustomize.py".into());
    let c = named(&env.checks(probe), "environment-startup").clone();
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail.contains(
            "usercustomize at /home/u/.local/lib/usercustomize.py (not imported at start-up)"
        ),
        "{}",
        c.detail
    );
}

#[test]
fn a_tampered_file_fails_naming_distribution_file_expected_and_found() {
    let env = Env::new("");
    std::fs::write(env.sp.join("demo.py"), b"x = 2\n").unwrap();
    let c = named(&env.checks(env.probe()), "environment-records").clone();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains(&format!(
            "{DIST}: {}/demo.py: expected sha256=",
            env.sp.display()
        )) && c.detail.contains("size 6 (row 1), found sha256="),
        "{}",
        c.detail
    );
}

#[test]
fn a_row_leaving_the_environment_fails() {
    let env = Env::new(&row("../../../../outside.py", b"z"));
    let c = named(&env.checks(env.probe()), "environment-records").clone();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail
            .contains("(../../../../outside.py): expected a path inside the environment"),
        "{}",
        c.detail
    );
}

#[test]
fn an_executed_line_the_verifier_did_not_read_fails() {
    let env = Env::new("");
    let mut probe = env.probe();
    probe.executed_pth_lines.push("import hidden\n".into());
    let c = named(&env.checks(probe), "environment-startup").clone();
    assert_eq!(c.result, CheckResult::Fail);
    assert!(
        c.detail.contains("`import hidden`: the site probe saw"),
        "{}",
        c.detail
    );
}

#[test]
fn an_unowned_module_is_a_warning_naming_it() {
    let env = Env::new("");
    std::fs::write(env.sp.join("stray.py"), b"y = 1\n").unwrap();
    let c = named(&env.checks(env.probe()), "environment-unowned").clone();
    assert_eq!(c.result, CheckResult::Warn);
    assert!(c.detail.contains("stray.py"), "{}", c.detail);
}

#[test]
fn no_probe_answer_fails_all_four_checks() {
    let obs = observe_environment(
        Path::new("/nonexistent"),
        Err("boom".into()),
        &SdkScope::default(),
    );
    let checks = environment_checks(&obs);
    assert_eq!(checks.len(), 4);
    assert!(checks
        .iter()
        .all(|c| c.result == CheckResult::Fail && c.detail.contains("boom")));
}

#[test]
fn venv_scripts_and_pytest_caches_are_recognised_by_name() {
    for name in [
        "python",
        "python3",
        "python3.11",
        "pythonw",
        "activate",
        "Activate.ps1",
    ] {
        assert!(is_venv_script(name), "{name}");
    }
    for name in ["pytest", "pip", "python-evil", "lbp"] {
        assert!(!is_venv_script(name), "{name}");
    }
    let tag = "cpython-311";
    assert!(is_pytest_rewrite_cache(
        Path::new("/sp/anyio/__pycache__/pytest_plugin.cpython-311-pytest-9.2.0.pyc"),
        tag
    ));
    assert!(!is_pytest_rewrite_cache(
        Path::new("/sp/anyio/pytest_plugin.cpython-311-pytest-9.2.0.pyc"),
        tag
    ));
    assert!(!is_pytest_rewrite_cache(
        Path::new("/sp/anyio/__pycache__/pytest_plugin.cpython-311.pyc"),
        tag
    ));
}

#[test]
fn the_sdks_own_record_is_left_to_record_rows() {
    let env = Env::new("");
    std::fs::write(env.sp.join("demo.py"), b"x = 2\n").unwrap();
    let sdk = SdkScope {
        dirs: vec![env.sp.join("demo"), env.sp.join(DIST)],
        bytecode_equal: Default::default(),
    };
    let obs = observe_environment(Path::new("/nonexistent"), Ok(env.probe()), &sdk);
    let checks = environment_checks(&obs);
    let c = named(&checks, "environment-records");
    // One cause, one finding: the SDK's mismatch is record-rows' finding.
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains(&format!("({DIST} is judged by record-rows)")),
        "{}",
        c.detail
    );
}
