//! The `sdk-record` and `sdk-shadow` gates, run through the built binary on
//! fixture repositories with the genuine SDK interpreter from `$PYTHON`.
//!
//! Tampering always happens in a temporary copy of the SDK's virtual
//! environment (`cp -a`), never in the original; the copy's `bin/python`
//! still links to the base interpreter and its `pyvenv.cfg` makes it the
//! copy's own environment.

use crate::common;

use common::{
    check, copy_venv, detail, evidence_dir, exit_code, fixture_repo, python, read_evidence,
    sdk_venv, shared_sdk_record_run, stderr_text, stdout_text, venv_python, verifier,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use verify_coding_candidates::exit;

const PIN: &str = "0.6.0b5";

/// Runs the verifier with `args` on `repo`, writing evidence to a fresh
/// directory; returns the exit code, the evidence and the output text.
fn run(repo: &Path, python: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let (_keep, dir) = evidence_dir();
    let mut cmd = verifier();
    cmd.current_dir(repo)
        .arg("--evidence")
        .arg(&dir)
        .arg("--python")
        .arg(python)
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the verifier");
    let text = common::expect_evidence(&out, &dir);
    (exit_code(&out), read_evidence(&dir), text)
}

/// The site-packages and dist-info of the venv rooted at `venv`.
fn sdk_paths(venv: &Path) -> (PathBuf, PathBuf) {
    let lib = venv.join("lib");
    let pyver = std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python"))
        })
        .unwrap_or_else(|| panic!("{}: expected a pythonX.Y folder", lib.display()));
    let sp = pyver.join("site-packages");
    let dist_info = sp.join(format!("langbot_plugin-{PIN}.dist-info"));
    assert!(
        dist_info.is_dir(),
        "{}: expected the pinned SDK's dist-info",
        dist_info.display()
    );
    (sp, dist_info)
}

/// The shared `--only sdk-record` run of the fixture with the genuine
/// interpreter ([`shared_sdk_record_run`]: one per test run, read by every
/// test of the genuine interpreter): the exit code, the evidence and the
/// output text.
fn genuine_sdk_record() -> (i32, Value, String) {
    let run = shared_sdk_record_run();
    (run.code, run.read_evidence(), run.text())
}

#[test]
fn sdk_record_passes_with_the_genuine_sdk_and_records_its_counts() {
    let (code, ev, text) = genuine_sdk_record();
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(
        ev["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == "sdk-record")
            .unwrap()["result"],
        "pass"
    );
    for name in [
        "sdk-version",
        "package-location",
        "record-rows",
        "unlisted-files",
        "bytecode",
        "record-provenance",
    ] {
        let c = check(&ev, "sdk-record", name, None);
        assert_eq!(c["result"], "pass", "{name}: {}", detail(c));
    }

    let (_, dist_info) = sdk_paths(&sdk_venv());
    let record = std::fs::read_to_string(dist_info.join("RECORD")).unwrap();
    let rows = record.lines().filter(|l| !l.is_empty()).count() as u64;
    let hashed = record.lines().filter(|l| l.contains(",sha256=")).count() as u64;
    let sdk = &ev["sdk"];
    assert_eq!(sdk["version"], PIN);
    assert_eq!(sdk["record_rows"], rows);
    assert_eq!(sdk["hashed_rows_verified"], hashed);
    assert_eq!(sdk["unhashed_rows"], rows - hashed);
    let digest = verify_coding_candidates::hash::sha256_file(&dist_info.join("RECORD"))
        .unwrap()
        .hex();
    assert_eq!(sdk["record_sha256"], digest);
    assert!(
        sdk["dist_info"]
            .as_str()
            .unwrap()
            .ends_with(&format!("langbot_plugin-{PIN}.dist-info")),
        "{sdk}"
    );
}

#[test]
fn a_tampered_record_row_fails_naming_the_row() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (_, dist_info) = sdk_paths(venv.path());
    let record_path = dist_info.join("RECORD");
    let record = std::fs::read_to_string(&record_path).unwrap();
    let mut lines: Vec<String> = record.lines().map(str::to_string).collect();
    let index = lines
        .iter()
        .position(|l| l.starts_with("langbot_plugin/version.py,sha256="))
        .expect("RECORD lists langbot_plugin/version.py with a hash");
    // Change the digest's first character: still 43 urlsafe base64 characters.
    let line = &lines[index];
    let at = line.find("sha256=").unwrap() + "sha256=".len();
    let first = line.as_bytes()[at];
    let replacement = if first == b'A' { 'B' } else { 'A' };
    lines[index] = format!("{}{}{}", &line[..at], replacement, &line[at + 1..]);
    std::fs::write(&record_path, lines.join("\n") + "\n").unwrap();

    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &["--only", "sdk-record"],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "record-rows", None);
    assert_eq!(c["result"], "fail");
    let row = index + 1;
    assert!(
        detail(c).contains(&format!(
            "row {row} (langbot_plugin/version.py): digest differs"
        )),
        "row {row}: {}",
        detail(c)
    );
    assert_eq!(
        c["observed"]["mismatches"].as_array().unwrap().len(),
        1,
        "{}",
        detail(c)
    );
}

#[test]
fn a_tampered_sdk_file_fails_naming_the_file() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (sp, _) = sdk_paths(venv.path());
    let file = sp.join("langbot_plugin").join("version.py");
    let mut bytes = std::fs::read(&file).unwrap();
    let original = bytes.len();
    bytes.push(b'\n');
    std::fs::write(&file, &bytes).unwrap();

    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &["--only", "sdk-record"],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "record-rows", None);
    assert_eq!(c["result"], "fail");
    let d = detail(c);
    assert!(
        d.contains("(langbot_plugin/version.py): digest and size differ"),
        "{d}"
    );
    assert!(
        d.contains(&format!("size {original}, found sha256=")),
        "{d}"
    );
    assert!(d.contains(&format!("size {}", original + 1)), "{d}");
    assert!(ev["sdk"]["hashed_rows_verified"].as_u64().unwrap() > 0);
}

/// A changed SDK file whose RECORD row was rewritten to match: every row
/// matches its file, but RECORD is no longer the published wheel's.
#[test]
fn a_changed_file_with_a_matching_rewritten_record_row_fails_record_provenance() {
    use base64::Engine as _;
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (sp, dist_info) = sdk_paths(venv.path());
    let file = sp.join("langbot_plugin").join("version.py");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"# changed\n");
    std::fs::write(&file, &bytes).unwrap();
    let digest = verify_coding_candidates::hash::sha256_file(&file).unwrap();
    let row = format!(
        "langbot_plugin/version.py,sha256={},{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.bytes),
        bytes.len()
    );
    let record_path = dist_info.join("RECORD");
    let record: Vec<String> = std::fs::read_to_string(&record_path)
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("langbot_plugin/version.py,") {
                row.clone()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&record_path, record.join("\n") + "\n").unwrap();

    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &["--only", "sdk-record"],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(
        check(&ev, "sdk-record", "record-rows", None)["result"],
        "pass"
    );
    let c = check(&ev, "sdk-record", "record-provenance", None);
    assert_eq!(c["result"], "fail");
    let d = detail(c);
    assert!(
        d.contains("1 wheel row(s) missing or changed: langbot_plugin/version.py,sha256=")
            && d.contains(&format!("1 row(s) neither the wheel's nor pip's: {row}")),
        "{d}"
    );
}

#[test]
fn an_unlisted_file_in_the_sdk_package_fails_naming_it() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (sp, _) = sdk_paths(venv.path());
    let extra = sp
        .join("langbot_plugin")
        .join("api")
        .join("unlisted_extra.py");
    std::fs::write(&extra, b"# not part of the wheel\n").unwrap();

    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &["--only", "sdk-record"],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "unlisted-files", None);
    assert_eq!(c["result"], "fail");
    assert!(
        detail(c).contains("langbot_plugin/api/unlisted_extra.py"),
        "{}",
        detail(c)
    );
    assert_eq!(
        check(&ev, "sdk-record", "record-rows", None)["result"],
        "pass"
    );
}

/// Python that rewrites the `.pyc` at `argv[1]` in place: the same 16-byte
/// header (magic, flags, source timestamp and size), the marshalled
/// compilation of `argv[2]` as its code.
const REWRITE_PYC: &str = "import marshal, sys\n\
data = open(sys.argv[1], 'rb').read()\n\
code = compile(sys.argv[2], sys.argv[3], 'exec', dont_inherit=True)\n\
open(sys.argv[1], 'wb').write(data[:16] + marshal.dumps(code))\n";

/// Rewrites the `.pyc` at `pyc` with [`REWRITE_PYC`], run by `python`: the
/// same header, `code` (compiled as if from `source`) as its code. Panics
/// with Python's stderr when the rewrite fails.
fn rewrite_pyc(python: &Path, pyc: &Path, code: &str, source: &Path) {
    let out = std::process::Command::new(python)
        .args(["-I", "-B", "-c", REWRITE_PYC])
        .arg(pyc)
        .arg(code)
        .arg(source)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rewritten_sdk_bytecode_with_a_valid_header_fails_naming_the_file() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (sp, _) = sdk_paths(venv.path());
    let pyc = sp.join("langbot_plugin/__pycache__/__init__.cpython-311.pyc");
    let source = sp.join("langbot_plugin/__init__.py");
    let header_before = std::fs::read(&pyc).unwrap()[..16].to_vec();
    rewrite_pyc(
        &venv_python(&venv),
        &pyc,
        "print('rewritten bytecode ran')\n",
        &source,
    );
    assert_eq!(std::fs::read(&pyc).unwrap()[..16], header_before[..]);
    // The interpreter runs it, although every hashed RECORD row verifies.
    let ran = std::process::Command::new(venv_python(&venv))
        .args(["-I", "-B", "-c", "import langbot_plugin"])
        .output()
        .unwrap();
    assert_eq!(stdout_text(&ran), "rewritten bytecode ran\n");

    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &["--only", "sdk-record"],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let c = check(&ev, "sdk-record", "bytecode", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let d = detail(c);
    assert!(
        d.contains(
            "langbot_plugin/__pycache__/__init__.cpython-311.pyc: expected this interpreter's \
             compilation of langbot_plugin/__init__.py (optimize 0), found other code"
        ),
        "{d}"
    );
    assert!(d.contains("delete them"), "{d}");
    assert_eq!(
        c["observed"]["problems"].as_array().unwrap().len(),
        1,
        "{d}"
    );
    for name in ["record-rows", "unlisted-files"] {
        assert_eq!(
            check(&ev, "sdk-record", name, None)["result"],
            "pass",
            "{name}"
        );
    }
}

/// The bytecode probe itself, run by the genuine interpreter on a small
/// synthetic package: exact on constants, optimization levels and header
/// kinds, and strict about names and sourceless files.
#[test]
fn the_bytecode_probe_compares_code_objects_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let sp = dir.path();
    let pkg = sp.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(pkg.join("zero.py"), "x = -0.0\n").unwrap();
    std::fs::write(pkg.join("doc.py"), "def f():\n    \"doc\"\n    assert f\n").unwrap();
    let compile = "import py_compile, sys\n\
py_compile.compile('pkg/__init__.py', doraise=True)\n\
py_compile.compile('pkg/zero.py', doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n\
py_compile.compile('pkg/doc.py', doraise=True, optimize=2)\n\
py_compile.compile('pkg/doc.py', doraise=True, optimize=0)\n";
    let out = std::process::Command::new(python())
        .args(["-I", "-c", compile])
        .current_dir(sp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cache = pkg.join("__pycache__");
    // +0.0 for -0.0: equal as numbers and in columns, another constant.
    let zero = cache.join("zero.cpython-311.pyc");
    rewrite_pyc(&python(), &zero, "x = +0.0\n", &pkg.join("zero.py"));
    // The optimize-0 compilation under the optimize-2 name.
    std::fs::copy(
        cache.join("doc.cpython-311.pyc"),
        cache.join("doc.cpython-311.opt-2.pyc"),
    )
    .unwrap();
    std::fs::write(cache.join("doc.cpython-312.pyc"), b"").unwrap();
    std::fs::write(pkg.join("loose.pyc"), b"").unwrap();

    let out = std::process::Command::new(python())
        .args([
            "-I",
            "-B",
            "-c",
            verify_coding_candidates::python::BYTECODE_PROBE,
        ])
        .arg(sp)
        .arg("pkg")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let probe: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_path = |p: &str| -> &Value {
        probe["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p)
            .unwrap_or_else(|| panic!("no {p} in {probe}"))
    };
    let init = by_path("pkg/__pycache__/__init__.cpython-311.pyc");
    assert_eq!(init["outcome"], "equal", "{init}");
    assert_eq!(init["header"]["kind"], "timestamp");
    assert_eq!(init["header"]["current"], true);
    let doc = by_path("pkg/__pycache__/doc.cpython-311.pyc");
    assert_eq!(doc["outcome"], "equal", "{doc}");
    let zero = by_path("pkg/__pycache__/zero.cpython-311.pyc");
    assert_eq!(zero["outcome"], "differs", "{zero}");
    assert_eq!(zero["difference"], "<module>.co_consts[0]", "{zero}");
    assert_eq!(zero["header"]["kind"], "unchecked-hash");
    let opt2 = by_path("pkg/__pycache__/doc.cpython-311.opt-2.pyc");
    assert_eq!(opt2["outcome"], "differs", "{opt2}");
    assert_eq!(opt2["optimize"], 2);
    assert_eq!(
        by_path("pkg/__pycache__/doc.cpython-312.pyc")["outcome"],
        "foreign-name"
    );
    assert_eq!(by_path("pkg/loose.pyc")["outcome"], "sourceless");
    assert_eq!(probe["files"].as_array().unwrap().len(), 6, "{probe}");
}

#[test]
fn a_different_pin_fails_naming_both_versions() {
    let repo = fixture_repo(&[]);
    let profile_dir = tempfile::tempdir().unwrap();
    let profile = profile_dir.path().join("b4.toml");
    let text = verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS
        .replace("langbot-plugin==0.6.0b5", "langbot-plugin==0.6.0b4");
    assert!(text.contains("langbot-plugin==0.6.0b4"));
    std::fs::write(&profile, text).unwrap();

    let profile_arg = profile.display().to_string();
    let (code, ev, out) = run(
        &repo.root,
        &python(),
        &["--only", "sdk-record", "--profile", &profile_arg],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{out}");
    let c = check(&ev, "sdk-record", "sdk-version", None);
    assert_eq!(c["result"], "fail");
    let d = detail(c);
    assert!(d.contains("is 0.6.0b5, required 0.6.0b4"), "{d}");
    assert!(d.contains("pip install langbot-plugin==0.6.0b4"), "{d}");
    assert_eq!(c["observed"]["installed"], PIN);
}

#[test]
fn a_shadow_package_in_a_candidate_fails_sdk_shadow_naming_the_file() {
    let repo = fixture_repo(&["shadow-sdk"]);
    let (code, ev, text) = run(&repo.root, &python(), &["--only", "sdk-shadow"], &[]);
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(common::gate_result(&ev, "sdk-shadow"), "fail", "{text}");

    let c = check(
        &ev,
        "sdk-shadow",
        "no-shadow-in-candidates",
        Some("codex-agent"),
    );
    assert_eq!(c["result"], "fail");
    assert!(
        detail(c).contains("codex-agent/langbot_plugin/__init__.py"),
        "{}",
        detail(c)
    );
    let spec = check(&ev, "sdk-shadow", "find-spec", Some("codex-agent"));
    assert_eq!(spec["result"], "fail");
    assert!(
        detail(spec).contains("extracted/codex-agent/langbot_plugin/__init__.py"),
        "{}",
        detail(spec)
    );
    for other in ["acp-agent-runner", "claude-code-agent"] {
        assert_eq!(
            check(&ev, "sdk-shadow", "no-shadow-in-candidates", Some(other))["result"],
            "pass"
        );
        assert_eq!(
            check(&ev, "sdk-shadow", "find-spec", Some(other))["result"],
            "pass"
        );
    }
}

#[test]
fn clean_candidates_pass_sdk_shadow_and_a_harness_pythonpath_only_warns() {
    let repo = fixture_repo(&[]);
    let (code, ev, text) = run(
        &repo.root,
        &python(),
        &["--only", "sdk-shadow"],
        &[("PYTHONPATH", "/nonexistent/vcc-pythonpath")],
    );
    assert_eq!(code, i32::from(exit::SUCCESS), "{text}");
    assert_eq!(common::gate_result(&ev, "sdk-shadow"), "pass");
    let warn = check(&ev, "sdk-shadow", "env-leak", None);
    assert_eq!(warn["result"], "warn");
    assert!(
        detail(warn).starts_with("PYTHONPATH is set in the harness"),
        "{}",
        detail(warn)
    );
    for folder in ["acp-agent-runner", "claude-code-agent", "codex-agent"] {
        for name in [
            "find-spec",
            "sys-path-scan",
            "pth-and-finders",
            "env-leak",
            "no-shadow-in-candidates",
        ] {
            let c = check(&ev, "sdk-shadow", name, Some(folder));
            assert_eq!(c["result"], "pass", "{name}/{folder}: {}", detail(c));
        }
    }
}

#[test]
fn a_pth_file_adding_a_second_copy_fails_sdk_shadow() {
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (sp, _) = sdk_paths(venv.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let shadow = elsewhere.path().join("langbot_plugin");
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(
        shadow.join("__init__.py"),
        b"# HOSTILE SHADOW FIXTURE, not the SDK.\n",
    )
    .unwrap();
    // Installed as a distribution would install it (an editable install's
    // path .pth is RECORD-owned), so `sdk-record`'s environment checks pass
    // and `sdk-shadow` is the gate that finds the second copy.
    let pth = format!("{}\n", elsewhere.path().display());
    std::fs::write(sp.join("zz-shadow.pth"), &pth).unwrap();
    let dist = sp.join("zz_shadow-1.0.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    let metadata = b"Metadata-Version: 2.1\nName: zz-shadow\nVersion: 1.0\n";
    std::fs::write(dist.join("METADATA"), metadata).unwrap();
    let row = |path: &str, bytes: &[u8]| {
        use base64::Engine as _;
        use sha2::Digest;
        format!(
            "{path},sha256={},{}\n",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes)),
            bytes.len()
        )
    };
    std::fs::write(
        dist.join("RECORD"),
        row("zz-shadow.pth", pth.as_bytes())
            + &row("zz_shadow-1.0.dist-info/METADATA", metadata)
            + "zz_shadow-1.0.dist-info/RECORD,,\n",
    )
    .unwrap();

    // Not a locked wheel: named in the profile's sdk.extra_distributions,
    // `environment-locked` warns instead of failing, so sdk-shadow runs.
    let profile_dir = tempfile::tempdir().unwrap();
    let profile = profile_dir.path().join("profile.toml");
    std::fs::write(
        &profile,
        verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS.replacen(
            "[sdk]\n",
            "[sdk]\nextra_distributions = [\"zz-shadow\"]\n",
            1,
        ),
    )
    .unwrap();
    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &[
            "--only",
            "sdk-shadow",
            "--profile",
            profile.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(common::gate_result(&ev, "sdk-record"), "pass", "{text}");
    let locked = check(&ev, "sdk-record", "environment-locked", None);
    assert_eq!(locked["result"], "warn", "{}", detail(locked));
    let real_shadow = shadow.canonicalize().unwrap().display().to_string();
    let scan = check(&ev, "sdk-shadow", "sys-path-scan", Some("codex-agent"));
    assert_eq!(scan["result"], "fail");
    assert!(detail(scan).contains(&real_shadow), "{}", detail(scan));
    let pth = check(&ev, "sdk-shadow", "pth-and-finders", Some("codex-agent"));
    assert_eq!(pth["result"], "fail");
    assert!(
        detail(pth).contains("zz-shadow.pth adds"),
        "{}",
        detail(pth)
    );
}

/// Issue 14: `buildplugin.py`'s RECORD row rewritten with a 64-hex digest
/// (the sha256 of the same bytes) in a copy of the genuine install: one
/// finding, the malformed row; the file is "not verified because its row is
/// malformed" under it, never "not listed in RECORD".
#[test]
fn a_hex_digest_row_is_one_finding_and_its_file_is_never_called_unlisted() {
    use base64::Engine as _;
    let repo = fixture_repo(&[]);
    let venv = copy_venv(&sdk_venv());
    let (_, dist_info) = sdk_paths(venv.path());
    let record_path = dist_info.join("RECORD");
    let record = std::fs::read_to_string(&record_path).unwrap();
    const FILE: &str = "langbot_plugin/cli/commands/buildplugin.py";
    let mut row = 0;
    let lines: Vec<String> = record
        .lines()
        .enumerate()
        .map(
            |(i, line)| match line.strip_prefix(&format!("{FILE},sha256=")) {
                Some(rest) => {
                    row = i + 1;
                    let (digest, size) = rest.split_once(',').unwrap();
                    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(digest)
                        .unwrap();
                    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                    format!("{FILE},sha256={hex},{size}")
                }
                None => line.to_string(),
            },
        )
        .collect();
    assert!(row > 0);
    std::fs::write(&record_path, lines.join("\n") + "\n").unwrap();

    let (code, ev, text) = run(
        &repo.root,
        &venv_python(&venv),
        &["--only", "sdk-record"],
        &[],
    );
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    let rows = check(&ev, "sdk-record", "record-rows", None);
    assert_eq!(rows["result"], "fail");
    assert!(
        detail(rows).contains(&format!("row {row} ({FILE}): hex digest")),
        "{}",
        detail(rows)
    );
    let unlisted = check(&ev, "sdk-record", "unlisted-files", None);
    assert_eq!(unlisted["consequence_of"], "record-rows", "{unlisted:#}");
    assert!(
        detail(unlisted).contains(&format!(
            "not verified because their RECORD row is malformed: {FILE} (row {row})"
        )),
        "{}",
        detail(unlisted)
    );
    assert!(!text.contains("not listed in"), "{text}");
    // The terminal shows it under record-rows, not as a failure of its own.
    assert!(!text.contains("failed unlisted-files"), "{text}");
    assert!(
        text.contains("consequence (not a separate failure) unlisted-files:"),
        "{text}"
    );
    let bytecode = check(&ev, "sdk-record", "bytecode", None);
    assert_eq!(bytecode["consequence_of"], "record-rows", "{bytecode:#}");
}

/// The bytecode cache (`src/python/bytecode_cache.rs`): a file whose path,
/// source and bytecode match a pair an earlier probe compiled and found
/// equal in the same interpreter and environment is not compiled again; any
/// other bytes, even under the same header, the same digests at another
/// path, or the same pairs for another environment prefix, are compiled
/// and compared as without a cache.
#[test]
fn the_bytecode_cache_skips_only_pairs_found_equal_before() {
    let dir = tempfile::tempdir().unwrap();
    let sp = dir.path().join("sp");
    let cache_dir = dir.path().join("cache");
    std::fs::create_dir_all(&cache_dir).unwrap();
    let pkg = sp.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(pkg.join("a.py"), "def f():\n    return 1\n").unwrap();
    let out = std::process::Command::new(python())
        .args([
            "-I",
            "-c",
            "import py_compile\npy_compile.compile('pkg/__init__.py', doraise=True)\n\
             py_compile.compile('pkg/a.py', doraise=True)\n",
        ])
        .current_dir(&sp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let probe_in = |prefix: &str| -> Value {
        let out = std::process::Command::new(python())
            .args([
                "-I",
                "-S",
                "-B",
                "-c",
                verify_coding_candidates::python::BYTECODE_PROBE,
            ])
            .arg(&sp)
            .arg("pkg")
            .arg(prefix)
            .arg(&cache_dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let probe = || probe_in("/env/one");
    let files = |p: &Value| p["files"].as_array().unwrap().clone();

    // Empty cache: both compiled and equal, each with its two digests.
    let first = probe();
    assert_eq!(first["cache"]["pairs_read"], 0, "{first}");
    assert!(files(&first)
        .iter()
        .all(|f| f["outcome"] == "equal" && f["cached"] == false));
    let pairs_at = |root: &Path| -> std::collections::BTreeSet<String> {
        files(&first)
            .iter()
            .map(|f| {
                verify_coding_candidates::python::bytecode_cache::pair_line(
                    0,
                    f["source_sha256"].as_str().unwrap(),
                    f["pyc_sha256"].as_str().unwrap(),
                    &root.join(f["path"].as_str().unwrap()),
                )
                .unwrap()
            })
            .collect()
    };
    let path = std::path::PathBuf::from(first["cache"]["path"].as_str().unwrap());
    assert!(path.starts_with(&cache_dir), "{}", path.display());
    // The same digests for files at another path are not these files' pairs.
    let elsewhere = pairs_at(Path::new("/elsewhere"));
    assert_eq!(
        verify_coding_candidates::python::bytecode_cache::add_pairs(&path, &elsewhere).unwrap(),
        2
    );
    let moved = probe();
    assert_eq!(moved["cache"]["pairs_read"], 2, "{moved}");
    assert!(
        files(&moved).iter().all(|f| f["cached"] == false),
        "{moved}"
    );
    assert_eq!(
        verify_coding_candidates::python::bytecode_cache::add_pairs(&path, &pairs_at(&sp)).unwrap(),
        2
    );

    // Both pairs known: neither is compiled again.
    let second = probe();
    assert_eq!(second["cache"]["pairs_read"], 4, "{second}");
    assert!(files(&second)
        .iter()
        .all(|f| f["outcome"] == "equal" && f["cached"] == true));

    // Another environment prefix is another key: another pairs file, none
    // of these pairs read.
    let other = probe_in("/env/two");
    assert_ne!(other["cache"]["path"], first["cache"]["path"], "{other}");
    assert_eq!(other["cache"]["pairs_read"], 0, "{other}");
    assert!(files(&other).iter().all(|f| f["cached"] == false));

    // Other code under the same header: not a known pair, so compiled and
    // found to differ.
    let pyc = pkg.join("__pycache__/a.cpython-311.pyc");
    rewrite_pyc(
        &python(),
        &pyc,
        "def f():\n    return 2\n",
        &pkg.join("a.py"),
    );
    let third = probe();
    let a = files(&third)
        .into_iter()
        .find(|f| f["path"] == "pkg/__pycache__/a.cpython-311.pyc")
        .unwrap();
    assert_eq!(a["outcome"], "differs", "{a}");
    assert_eq!(a["cached"], false, "{a}");
}

/// Runs `--only sdk-record` with `python` and returns the exit code and the
/// seed list `logs/sdk-record/pycache-seed.txt`, if written.
fn seed_list(python: &Path) -> (i32, Option<String>, String) {
    let repo = fixture_repo(&[]);
    let (out, _keep, dir) = common::run_only(&repo.root, python, "sdk-record", &[]);
    (exit_code(&out), seed_list_in(&dir), stderr_text(&out))
}

/// The seed list `logs/sdk-record/pycache-seed.txt` of the `--only
/// sdk-record` run that wrote `dir`, if written; asserts the run's bytecode
/// cache was removed before the evidence was sealed.
fn seed_list_in(dir: &Path) -> Option<String> {
    let list = std::fs::read_to_string(dir.join("logs/sdk-record/pycache-seed.txt")).ok();
    assert!(
        !dir.join("roots/pycache").exists(),
        "the run's bytecode cache is removed before the evidence is sealed"
    );
    list
}

#[test]
fn a_passing_sdk_record_seeds_the_run_cache_with_exactly_the_verified_bytecode() {
    let run = shared_sdk_record_run();
    let list = seed_list_in(&run.evidence);
    assert_eq!(run.code, i32::from(exit::SUCCESS), "{}", run.stderr);
    let list = list.expect("a passing sdk-record writes its seed list");
    let (sp, _) = sdk_paths(&sdk_venv());
    let pyc = sp.join("langbot_plugin/__pycache__/__init__.cpython-311.pyc");
    let sha = verify_coding_candidates::hash::sha256_file(&pyc)
        .unwrap()
        .hex();
    let line = list
        .lines()
        .find(|l| l.contains(&format!("  {}  ->  ", pyc.display())))
        .unwrap_or_else(|| panic!("{} is not seeded:\n{list}", pyc.display()));
    assert!(line.starts_with(&sha), "{line}");
    // Where -X pycache_prefix looks for it: the source's folder under the
    // prefix, without __pycache__.
    let folder = sp.join("langbot_plugin");
    assert!(
        line.ends_with(&format!(
            "roots/pycache{}/__init__.cpython-311.pyc",
            folder.display()
        )),
        "{line}"
    );
    assert!(!list.contains("left out"), "{list}");
    // Only level-0 bytecode is seeded.
    assert!(
        !list.contains(".opt-1.pyc") && !list.contains(".opt-2.pyc"),
        "{list}"
    );
}

#[test]
fn the_standard_library_bytecode_found_equal_is_seeded_and_listed() {
    let python = python();
    let run = shared_sdk_record_run();
    assert_eq!(run.code, i32::from(exit::SUCCESS), "{}", run.stderr);
    let list =
        std::fs::read_to_string(run.evidence.join("logs/sdk-record/pycache-seed-stdlib.txt"))
            .expect("the site probe's answer seeds the standard library and lists it");
    // `json` is imported by every probe: its bytecode, where the
    // interpreter has one, is seeded by this gate or already cached.
    let stdlib = std::process::Command::new(&python)
        .args([
            "-I",
            "-c",
            "import sysconfig; print(sysconfig.get_path('stdlib'))",
        ])
        .output()
        .expect("ask the interpreter");
    let stdlib = PathBuf::from(String::from_utf8_lossy(&stdlib.stdout).trim());
    let pyc = stdlib.join("json/__pycache__/__init__.cpython-311.pyc");
    if pyc.is_file() {
        let seeded = list.contains(&format!("  {}  ->  ", pyc.display()));
        let cached = list.lines().any(|l| {
            l.starts_with("already cached, verified: ")
                && l.ends_with("/json/__init__.cpython-311.pyc")
        });
        assert!(seeded || cached, "{} is not listed:\n{list}", pyc.display());
    }
    assert!(!list.contains("left out"), "{list}");
    let (suite, site) = (stdlib.join("test"), stdlib.join("site-packages"));
    assert!(
        !list.contains(&format!("  {}/", suite.display()))
            && !list.contains(&format!("  {}/", site.display())),
        "only the standard library outside its test suite and site directory:\n{list}"
    );
}

#[test]
fn bytecode_that_is_not_the_compilation_of_its_source_is_never_seeded() {
    let venv = copy_venv(&sdk_venv());
    let (sp, _) = sdk_paths(venv.path());
    let pyc = sp.join("langbot_plugin/__pycache__/__init__.cpython-311.pyc");
    let source = sp.join("langbot_plugin/__init__.py");
    rewrite_pyc(
        &venv_python(&venv),
        &pyc,
        "print('rewritten bytecode ran')\n",
        &source,
    );
    let (code, list, text) = seed_list(&venv_python(&venv));
    assert_eq!(code, i32::from(exit::GATE_FAILED), "{text}");
    assert_eq!(list, None, "a failing sdk-record seeds nothing");
}
