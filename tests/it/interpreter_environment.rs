//! Issue 21, item 2: the `sdk-record` gate verifies the interpreter
//! environment as a whole, run through the built binary with the genuine
//! SDK interpreter from `$PYTHON`.
//!
//! Every hostile interpreter is a copy of the genuine venv (`cp -a`, see
//! `common::copy_venv`) modified in the copy only; the original is never
//! touched. Each hostile case got a full PASS before the environment checks.

use crate::common;

use common::{
    check, copy_venv, detail, evidence_dir, exit_code, fixture_repo, read_evidence, sdk_venv,
    shared_sdk_record_run, site_packages, stderr_text, venv_python, verifier,
};
use serde_json::Value;
use std::path::Path;
use verify_coding_candidates::exit;

/// Runs `--only sdk-record` on `repo` with `python`; returns the exit code,
/// the evidence and the output text.
fn run_sdk_record(repo: &Path, python: &Path) -> (i32, Value, String) {
    let (out, _keep, dir) = common::run_only(repo, python, "sdk-record", &[]);
    let text = common::expect_evidence(&out, &dir);
    (exit_code(&out), read_evidence(&dir), text)
}

/// The dist-info folder of `prefix` (`pluggy-`) in `sp`.
fn dist_info(sp: &Path, prefix: &str) -> String {
    std::fs::read_dir(sp)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(prefix) && n.ends_with(".dist-info"))
        .unwrap_or_else(|| panic!("{}: expected a {prefix}*.dist-info", sp.display()))
}

/// Whether `python -I -c pass` of the copy wrote `marker`: the hostile
/// start-up file is live, not a dud.
fn runs_at_start(python: &Path, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    let out = std::process::Command::new(python)
        .args(["-I", "-c", "pass"])
        .output()
        .expect("run the copy's python");
    assert!(out.status.success(), "{}", stderr_text(&out));
    marker.is_file()
}

fn result<'a>(ev: &'a Value, name: &str) -> &'a str {
    check(ev, "sdk-record", name, None)["result"]
        .as_str()
        .unwrap()
}

/// (e) The genuine environment passes every environment check, and its
/// interpreter facts are recorded: the shared `--only sdk-record` run of the
/// fixture with the genuine interpreter ([`shared_sdk_record_run`]).
#[test]
fn the_genuine_environment_passes_and_its_interpreter_is_recorded() {
    let run = shared_sdk_record_run();
    let ev = run.read_evidence();
    assert_eq!(run.code, i32::from(exit::SUCCESS), "{}", run.text());
    for name in [
        "environment-records",
        "environment-bytecode",
        "environment-startup",
        "environment-unowned",
        "environment-locked",
    ] {
        let c = check(&ev, "sdk-record", name, None);
        assert_eq!(c["result"], "pass", "{name}: {}", detail(c));
    }
    // Every `.pth` the venv holds (a venv with setuptools has its executable
    // distutils-precedence.pth; the provisioned one has none) is named as
    // RECORD-owned.
    let startup = check(&ev, "sdk-record", "environment-startup", None);
    let venv = sdk_venv();
    let pth: Vec<String> = std::fs::read_dir(site_packages(&venv))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".pth"))
        .collect();
    if pth.is_empty() {
        assert!(
            detail(startup).contains("(none present)"),
            "{}",
            detail(startup)
        );
    }
    for name in &pth {
        assert!(
            detail(startup).contains(name.as_str()) && detail(startup).contains("owned by "),
            "{name}: {}",
            detail(startup)
        );
    }
    let sdk = &ev["sdk"];
    let target = venv.join("bin/python").canonicalize().unwrap();
    assert_eq!(sdk["interpreter_target"], target.display().to_string());
    let digest = verify_coding_candidates::hash::sha256_file(&target)
        .unwrap()
        .hex();
    assert_eq!(sdk["interpreter_sha256"], digest);
    assert_eq!(
        Path::new(sdk["prefix"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        venv.canonicalize().unwrap()
    );
    assert!(sdk["base_prefix"].as_str().is_some_and(|p| !p.is_empty()));
    assert_eq!(sdk["site_dirs"].as_array().unwrap().len(), 1, "{sdk}");
    assert!(sdk["environment_distributions"].as_u64().unwrap() > 10);
    assert!(sdk["environment_files_verified"].as_u64().unwrap() > 1000);
}

/// (a) An executable `.pth` that installs a `sys.meta_path` hook: `site`
/// runs it at every start (the marker proves it), so it fails, named.
#[test]
fn an_executable_pth_installing_a_meta_path_hook_fails_named() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let marker = venv.path().join("hook-ran");
    let pth = sp.join("zz-results.pth");
    std::fs::write(
        &pth,
        format!(
            "import os, sys; open({:?}, 'a').write('ran\\n'); sys.meta_path.insert(0, type('RewriteResults', (), {{'find_spec': staticmethod(lambda *a, **k: None)}})())\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let python = venv_python(&venv);
    assert!(runs_at_start(&python, &marker), "the hostile .pth is live");

    let (code, ev, text) = run_sdk_record(&repo.root, &python);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "environment-startup", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let d = detail(c);
    assert!(
        d.contains(&format!(
            "{} (line 1 executes `import os, sys;",
            pth.display()
        )) && d.contains("no RECORD owns")
            && d.contains("whose import line it executes"),
        "{d}"
    );
    let startup = ev["sdk"]["startup_files"].as_array().unwrap();
    assert!(
        startup
            .iter()
            .any(|s| s == &Value::from(format!("{} (owned by no verified RECORD)", pth.display()))),
        "{startup:?}"
    );
    // The other environment checks are not blamed for it.
    assert_eq!(result(&ev, "environment-records"), "pass");
}

/// (b) `sitecustomize.py` in site-packages, which `site` imports at every
/// start: fails, named.
#[test]
fn a_sitecustomize_in_site_packages_fails_named() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let marker = venv.path().join("sitecustomize-ran");
    let module = sp.join("sitecustomize.py");
    std::fs::write(
        &module,
        format!(
            "# HOSTILE FIXTURE\nopen({:?}, 'a').write('ran\\n')\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let python = venv_python(&venv);
    assert!(
        runs_at_start(&python, &marker),
        "the hostile module is live"
    );

    let (code, ev, text) = run_sdk_record(&repo.root, &python);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "environment-startup", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    assert!(
        detail(c).contains(&format!(
            "{}: expected no `sitecustomize` module or one a verified RECORD owns",
            module.display()
        )),
        "{}",
        detail(c)
    );
    let startup = ev["sdk"]["startup_files"].as_array().unwrap();
    assert!(
        startup.iter().any(|s| s
            == &Value::from(format!(
                "{} (owned by no verified RECORD)",
                module.display()
            ))),
        "{startup:?}"
    );
}

/// (c) One byte of pluggy's source changed (same size): fails, naming the
/// distribution, the file, the expected and the found digest.
#[test]
fn a_tampered_file_of_another_distribution_fails_naming_it() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let dist = dist_info(&sp, "pluggy-");
    let file = sp.join("pluggy").join("_hooks.py");
    let mut bytes = std::fs::read(&file).unwrap();
    // One letter of the module docstring: same size, other digest.
    let at = bytes
        .windows(3)
        .position(|w| w == b"\"\"\"")
        .expect("a docstring")
        + 3;
    bytes[at] = if bytes[at] == b'X' { b'Y' } else { b'X' };
    std::fs::write(&file, &bytes).unwrap();

    let (code, ev, text) = run_sdk_record(&repo.root, &venv_python(&venv));
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "environment-records", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let size = bytes.len();
    let d = detail(c);
    assert!(
        d.contains(&format!("{dist}: {}: expected sha256=", file.display()))
            && d.contains("found sha256=")
            && d.contains(&format!("size {size}")),
        "{d}"
    );
    // The SDK's own checks are untouched by it.
    assert_eq!(result(&ev, "record-rows"), "pass");
}

/// (d) A `.pth` with only a path line, owned by no RECORD: it puts an
/// unverified directory on every `sys.path` (where a module no distribution
/// installs, `sitecustomize` among them, would be found), so it fails too.
#[test]
fn an_unowned_path_pth_fails_named_with_its_directory() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let pth = sp.join("zz-extra.pth");
    std::fs::write(&pth, format!("{}\n", elsewhere.path().display())).unwrap();

    let (code, ev, text) = run_sdk_record(&repo.root, &venv_python(&venv));
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "environment-startup", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    assert!(
        detail(c).contains(&format!(
            "{} (line 1 adds `{}` to sys.path)",
            pth.display(),
            elsewhere.path().display()
        )),
        "{}",
        detail(c)
    );
    let added = c["observed"]["added_path_entries"].as_array().unwrap();
    assert!(
        added.contains(&Value::from(elsewhere.path().display().to_string())),
        "{added:?}"
    );
}

/// (e) The untouched copy passes: a copied venv is still verified (its
/// `pyvenv.cfg` makes it its own environment; RECORD paths are relative).
#[test]
fn the_untouched_copy_passes() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (code, ev, text) = run_sdk_record(&repo.root, &venv_python(&venv));
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(result(&ev, "environment-startup"), "pass");
    assert_eq!(result(&ev, "environment-records"), "pass");
    assert_eq!(result(&ev, "environment-bytecode"), "pass");
    assert_eq!(
        ev["sdk"]["prefix"],
        venv.path().display().to_string(),
        "{}",
        ev["sdk"]
    );
}

/// Runs `--only sdk-record` on `repo` with `python` and the bytecode cache
/// `cache` (private to the test, never the machine's); returns the exit
/// code and the evidence.
fn run_sdk_record_with_cache(repo: &Path, python: &Path, cache: &Path) -> (i32, Value, String) {
    let (_keep, dir) = evidence_dir();
    let out = verifier()
        .current_dir(repo)
        .env("VCC_BYTECODE_CACHE", cache)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python)
        .args(["--only", "sdk-record"])
        .output()
        .expect("run the verifier");
    let text = common::expect_evidence(&out, &dir);
    (exit_code(&out), read_evidence(&dir), text)
}

/// Issue 35, item 1: a `.pth` payload that, when run, writes a marker,
/// rewrites `yaml/__pycache__/__init__.cpython-311.pyc`, appends a pair of
/// its own to every file of the verifier's bytecode cache and deletes
/// itself. It ran twice, unconfined, in the SDK and bytecode probes (`-I`
/// without `-S`) before `environment-startup` refused it; the same command
/// run again passed with the tampered bytecode. Now no probe runs `site`:
/// the marker never appears, the bytecode and the cache are untouched, and
/// two runs in a row both fail at `sdk-record`, naming the `.pth`.
#[test]
fn a_pth_payload_never_runs_and_a_second_run_fails_too() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let sp = site_packages(venv.path());
    let cache = tempfile::tempdir().unwrap();
    let marker = venv.path().join("payload-ran");
    let pyc = sp.join("yaml/__pycache__/__init__.cpython-311.pyc");
    let pth = sp.join("zz-payload.pth");
    let poison = format!("0:{}:{}:{}", "e".repeat(64), "f".repeat(64), pyc.display());
    std::fs::write(
        &pth,
        format!(
            "import os, marshal; open({m:?}, 'w').write('ran'); d = open({p:?}, 'rb').read(); \
             open({p:?}, 'wb').write(d[:16] + marshal.dumps(compile('X = 1', 'x', 'exec'))); \
             [open(os.path.join({c:?}, n), 'a').write({l:?} + chr(10)) for n in os.listdir({c:?}) + ['x.pairs']]; \
             os.remove({t:?})\n",
            m = marker.display().to_string(),
            p = pyc.display().to_string(),
            c = cache.path().display().to_string(),
            l = poison,
            t = pth.display().to_string(),
        ),
    )
    .unwrap();
    let genuine_pyc = std::fs::read(&pyc).unwrap();
    let python = venv_python(&venv);

    for run in ["first", "second"] {
        let (code, ev, text) = run_sdk_record_with_cache(&repo.root, &python, cache.path());
        assert!(!marker.exists(), "{run} run: the payload ran; {text}");
        assert!(
            pth.exists(),
            "{run} run: the payload ran and removed itself"
        );
        assert_eq!(std::fs::read(&pyc).unwrap(), genuine_pyc, "{run} run");
        for entry in std::fs::read_dir(cache.path()).unwrap() {
            let entry = entry.unwrap().path();
            let text = std::fs::read_to_string(&entry).unwrap();
            assert!(
                !text.contains(&"e".repeat(64)),
                "{run} run: {}",
                entry.display()
            );
        }
        assert_eq!(code, i32::from(exit::GATE_FAILED), "{run} run: {text}");
        let c = check(&ev, "sdk-record", "environment-startup", None);
        assert_eq!(c["result"], "fail", "{run} run: {}", detail(c));
        assert!(
            detail(c).contains(&format!(
                "{} (line 1 executes `import os, marshal;",
                pth.display()
            )),
            "{run} run: {}",
            detail(c)
        );
    }
    // The payload is live: any `python -I` start of the copy runs it (and
    // it then tampers the copy's bytecode and the test's cache).
    assert!(runs_at_start(&python, &marker), "the payload is live");
    assert_ne!(std::fs::read(&pyc).unwrap(), genuine_pyc);
}
