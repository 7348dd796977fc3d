//! Where every wheelhouse file came from, through the built binary with the
//! genuine SDK interpreter (`--only dependencies`): an sdist-only
//! requirement is refused unless the profile allows building it, and then
//! recorded as built here; a `pip.conf` inside the interpreter's own venv
//! never points the download elsewhere. These reach the package index.

use crate::common;

use common::{check, detail, gate_result, python};
use std::path::{Path, PathBuf};
use verify_coding_candidates::hash;
use verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS;

const DOCOPT_SDIST: &str = "docopt-0.6.2.tar.gz";
/// The sha256 PyPI publishes for docopt-0.6.2.tar.gz.
const DOCOPT_SHA: &str = "49b3a825280bd66b3aa83585ef59c4a8c82f2c8a522dbe754a8bc8d08c85c491";
const SIX_WHEEL: &str = "six-1.16.0-py2.py3-none-any.whl";
/// The sha256 PyPI publishes for six-1.16.0-py2.py3-none-any.whl.
const SIX_SHA: &str = "8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254";

/// The fixture with codex-agent's requirements replaced, committed; the
/// verifier run with `--only dependencies` and `args`
/// ([`common::run_with_codex_requirements`]).
fn run(requirements: &str, interpreter: &Path, args: &[&str]) -> common::FixtureRun {
    common::run_with_codex_requirements(requirements, interpreter, "dependencies", args)
}

#[test]
fn an_sdist_only_requirement_is_refused_naming_it_and_its_sdist_and_nothing_is_built() {
    let (code, ev, dir, _keep) = run("langbot-plugin==0.6.0b5\ndocopt==0.6.2\n", &python(), &[]);
    assert_eq!(code, 1);
    assert_eq!(gate_result(&ev, "dependencies"), "fail");
    let c = check(&ev, "dependencies", "wheelhouse", Some("codex-agent"));
    assert_eq!(c["result"], "fail");
    for part in [
        "`docopt==0.6.2` has none, only the sdist https://",
        DOCOPT_SDIST,
        "refused (nothing was built)",
        "allow_source_builds = [\"docopt\"]",
    ] {
        assert!(
            detail(c).contains(part),
            "missing {part:?} in: {}",
            detail(c)
        );
    }
    let d = &ev["wheelhouse"]["downloads"][0];
    assert_eq!(d["ok"], false);
    assert!(d["failure"]["sdists"][0]
        .as_str()
        .unwrap()
        .ends_with(DOCOPT_SDIST));
    // Nothing of docopt is in the wheelhouse, and nothing says it was downloaded.
    assert_eq!(ev["wheelhouse"]["files"], serde_json::json!([]));
    assert_eq!(d["sources"], serde_json::json!([]));
    let names: Vec<String> = std::fs::read_dir(dir.join("wheelhouse"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("docopt")), "{names:?}");
}

#[test]
fn an_allowed_sdist_is_built_in_the_sandbox_and_recorded_built_from_sdist_from_the_named_index() {
    let text = BUILTIN_CODING_RUNNERS.replace(
        "allow_source_builds = []",
        "allow_source_builds = [\"docopt\"]",
    );
    assert_ne!(
        text, BUILTIN_CODING_RUNNERS,
        "the built-in profile has the key"
    );
    let profile = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(profile.path(), text).unwrap();
    // Another spelling of PyPI's index: the evidence must carry this one.
    let index = "https://pypi.org/simple/";
    let (code, ev, dir, _keep) = run(
        "langbot-plugin==0.6.0b5\ndocopt==0.6.2\n",
        &python(),
        &[
            "--profile",
            profile.path().to_str().unwrap(),
            "--index-url",
            index,
        ],
    );
    assert_eq!(gate_result(&ev, "dependencies"), "pass", "{ev:#}");
    assert_eq!(code, 0);
    let w = &ev["wheelhouse"];
    assert_eq!(w["upstream_index"], index);
    assert_eq!(w["allow_source_builds"], serde_json::json!(["docopt"]));
    let sources = w["downloads"][0]["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{sources:?}");
    let s = &sources[0];
    assert_eq!(s["provenance"], "built-from-sdist");
    assert_eq!(s["project"], "docopt");
    assert!(s["url"].as_str().unwrap().ends_with(DOCOPT_SDIST), "{s}");
    assert_eq!(s["published_sha256"], DOCOPT_SHA);
    let log = s["build_log"].as_str().expect("a build log");
    assert!(log.starts_with("logs/dependencies/"), "{log}");
    let build_output = std::fs::read_to_string(dir.join(format!("{log}.stdout"))).unwrap();
    assert!(
        build_output.contains("Building wheel for docopt"),
        "{build_output}"
    );
    let c = check(&ev, "dependencies", "wheelhouse", Some("codex-agent"));
    assert!(
        detail(c).contains("built here from the sdist"),
        "{}",
        detail(c)
    );
    let sandbox = check(&ev, "dependencies", "pip-sandbox", None);
    assert_eq!(sandbox["result"], "pass", "{}", detail(sandbox));
    // The sdist's build left nothing running in either pip step's sandbox,
    // and its init reported as much (pip's exit status unchanged under it).
    let left = check(&ev, "dependencies", "pip-left-running", None);
    assert_eq!(left["result"], "pass", "{}", detail(left));
    for step in ["resolve", "download"] {
        assert_eq!(
            w["downloads"][0]["left_running"][step],
            serde_json::json!({"kind": "surveyed", "processes": []}),
            "{step}"
        );
    }
    // The SDK installed the wheel built here.
    let deps = &common::candidate(&ev, "codex-agent")["dependencies"];
    assert_eq!(
        deps["installed"],
        serde_json::json!([{"name": "docopt", "version": "0.6.2"}])
    );
}

/// A wheel named like six 1.16.0's that PyPI never published, in `dir`.
fn forge_six(dir: &Path) -> PathBuf {
    let wheel = dir.join(SIX_WHEEL);
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   z.writestr('six.py', 'FORGED = True\\n')\n\
        \x20   z.writestr('six-1.16.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: six\\nVersion: 1.16.0\\n')\n\
        \x20   z.writestr('six-1.16.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: forged\\nRoot-Is-Purelib: true\\nTag: py2-none-any\\nTag: py3-none-any\\n')\n\
        \x20   z.writestr('six-1.16.0.dist-info/RECORD', '')\n";
    let out = std::process::Command::new(python())
        .args(["-I", "-c", script])
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    wheel
}

#[test]
fn a_pip_conf_in_the_interpreters_venv_never_brings_in_a_forged_wheel() {
    let venv = common::copy_venv(&common::sdk_venv());
    let forged_dir = tempfile::tempdir().unwrap();
    let forged = forge_six(forged_dir.path());
    let forged_sha = hash::sha256_file(&forged).unwrap().hex();
    assert_ne!(forged_sha, SIX_SHA);
    // pip reads `<sys.prefix>/pip.conf` as its site configuration, even under --isolated.
    std::fs::write(
        venv.path().join("pip.conf"),
        format!(
            "[global]\nno-index = true\nfind-links = {}\n",
            forged_dir.path().display()
        ),
    )
    .unwrap();
    let (_, ev, dir, _keep) = run(
        "langbot-plugin==0.6.0b5\nsix==1.16.0\n",
        &common::venv_python(&venv),
        &[],
    );
    let c = check(&ev, "dependencies", "wheelhouse", Some("codex-agent"));
    assert_eq!(c["result"], "pass", "{}", detail(c));
    let on_disk = hash::sha256_file(&dir.join("wheelhouse").join(SIX_WHEEL))
        .unwrap()
        .hex();
    assert_eq!(on_disk, SIX_SHA, "the wheelhouse holds the published wheel");
    let w = &ev["wheelhouse"];
    assert_eq!(w["upstream_index"], "https://pypi.org/simple");
    for d in w["downloads"].as_array().unwrap() {
        for s in d["sources"].as_array().unwrap() {
            assert_eq!(s["provenance"], "downloaded", "{s}");
            let url = s["url"].as_str().unwrap();
            assert!(
                url.starts_with("https://files.pythonhosted.org/"),
                "{url} is not the index's"
            );
            assert_ne!(s["published_sha256"], forged_sha.as_str());
        }
    }
    assert_eq!(w["downloads"][0]["sources"][0]["published_sha256"], SIX_SHA);
    // The SDK's own installer reads that file too (its `-i` does not replace
    // `no-index` or `find-links`): refused, named.
    let c = check(&ev, "dependencies", "pip-config", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let conf = venv.path().join("pip.conf");
    for part in [
        format!("{} (site) sets global.no-index = true", conf.display()),
        format!("{} (site) sets global.find-links", conf.display()),
    ] {
        assert!(
            detail(c).contains(&part),
            "missing {part:?} in: {}",
            detail(c)
        );
    }
    assert_eq!(gate_result(&ev, "dependencies"), "fail");
}

/// A wheel of six 1.16.0 with build tag 1 (which pip prefers over the
/// published, untagged one) and a correct RECORD of its own, in `dir`.
fn forge_six_build_tag(dir: &Path) -> PathBuf {
    let wheel = dir.join("six-1.16.0-1-py2.py3-none-any.whl");
    let script = "import base64, hashlib, sys, zipfile\n\
        files = {'six.py': 'FORGED = True\\n', 'six-1.16.0.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: six\\nVersion: 1.16.0\\n', 'six-1.16.0.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: forged\\nRoot-Is-Purelib: true\\nBuild: 1\\nTag: py2-none-any\\nTag: py3-none-any\\n'}\n\
        rows = [f\"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b'=').decode()},{len(c.encode())}\" for n, c in files.items()]\n\
        files['six-1.16.0.dist-info/RECORD'] = '\\n'.join(rows + ['six-1.16.0.dist-info/RECORD,,']) + '\\n'\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   [z.writestr(n, c) for n, c in files.items()]\n";
    let out = std::process::Command::new(python())
        .args(["-I", "-c", script])
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    wheel
}

/// Breaker finding F2: a venv `pip.conf` with `[install] requirement = FILE`,
/// whose requirements file names its own `--find-links`, names no source
/// option itself; the SDK's installer then takes a forged six 1.16.0 (build
/// tag 1) over the wheelhouse's. `pip-config` refuses the option, and
/// `installed` finds the forged files by the wheelhouse wheel's RECORD.
#[test]
fn a_pip_conf_requirement_file_with_find_links_fails_pip_config_and_installed() {
    let venv = common::copy_venv(&common::sdk_venv());
    let forged_dir = tempfile::tempdir().unwrap();
    forge_six_build_tag(forged_dir.path());
    let req = forged_dir.path().join("hostile-requirements.txt");
    std::fs::write(
        &req,
        format!(
            "--find-links {}\nsix==1.16.0\n",
            forged_dir.path().display()
        ),
    )
    .unwrap();
    let conf = venv.path().join("pip.conf");
    std::fs::write(
        &conf,
        format!("[install]\nrequirement = {}\n", req.display()),
    )
    .unwrap();
    let (_, ev, dir, _keep) = run(
        "langbot-plugin==0.6.0b5\nsix==1.16.0\n",
        &common::venv_python(&venv),
        &[],
    );
    let c = check(&ev, "dependencies", "pip-config", None);
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let part = format!(
        "{} (site) sets install.requirement = {} (an option outside the harmless list)",
        conf.display(),
        req.display()
    );
    assert!(
        detail(c).contains(&part),
        "missing {part:?} in: {}",
        detail(c)
    );
    let c = check(&ev, "dependencies", "installed", Some("codex-agent"));
    assert_eq!(c["result"], "fail", "{}", detail(c));
    let d = detail(c);
    assert!(
        d.contains("six-1.16.0.dist-info (six 1.16.0): not installed from a wheelhouse wheel of that name and version")
            && d.contains(&format!("rows of {SIX_WHEEL}'s RECORD"))
            && d.contains("rows not in the wheel: [")
            && d.contains("\"six.py,sha256="),
        "{d}"
    );
    // The wheelhouse itself holds the published wheel.
    let on_disk = hash::sha256_file(&dir.join("wheelhouse").join(SIX_WHEEL))
        .unwrap()
        .hex();
    assert_eq!(on_disk, SIX_SHA);
    assert_eq!(gate_result(&ev, "dependencies"), "fail");
}
