//! The fixtures themselves: the candidate repository is a clean git
//! repository whose three plugins the genuine SDK builds, its shared files are
//! identical, and each hostile overlay changes exactly what it claims.
//! These tests call the SDK directly (not through the verifier), so a fixture
//! defect shows up here rather than as a confusing gate failure.

use crate::common;

use common::{fixture_repo, git, python};
use std::path::Path;
use std::process::Command;

const CANDIDATES: [(&str, &str); 3] = [
    ("acp-agent-runner", "0.1.12"),
    ("claude-code-agent", "0.1.15"),
    ("codex-agent", "0.1.18"),
];

/// Runs the official build (`python -I -m langbot_plugin.cli build -o OUT`)
/// in `plugin` and returns the names of the files it wrote.
fn lbp_build(plugin: &Path, out: &Path) -> Vec<String> {
    let status = Command::new(python())
        .args(["-I", "-B", "-m", "langbot_plugin.cli", "build", "-o"])
        .arg(out)
        .current_dir(plugin)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run lbp build");
    assert!(
        status.status.success(),
        "lbp build in {}: {:?}",
        plugin.display(),
        status
    );
    let mut names: Vec<String> = match std::fs::read_dir(out) {
        Ok(dir) => dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

#[test]
fn fixture_repository_is_one_clean_commit_on_main() {
    let repo = fixture_repo(&[]);
    assert_eq!(
        git(&repo.root, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(
        git(&repo.root, &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );
    assert_eq!(git(&repo.root, &["status", "--porcelain", "--ignored"]), "");
    let tracked = git(&repo.root, &["ls-files"]);
    for (name, _) in CANDIDATES {
        for file in [
            "manifest.yaml",
            "main.py",
            "requirements.txt",
            ".gitignore",
            "pkg/daemon_relay.py",
        ] {
            let path = format!("Runner/{name}/{file}");
            assert!(tracked.lines().any(|l| l == path), "{path} is not tracked");
        }
    }
    assert!(tracked
        .lines()
        .any(|l| l == "Runner/certification-tests/conftest.py"));
}

#[test]
fn fixture_commit_id_depends_only_on_content() {
    let a = fixture_repo(&[]);
    let b = fixture_repo(&[]);
    assert_eq!(
        git(&a.root, &["rev-parse", "HEAD"]),
        git(&b.root, &["rev-parse", "HEAD"])
    );
    let c = fixture_repo(&["drifted-shared-copy"]);
    assert_ne!(
        git(&a.root, &["rev-parse", "HEAD"]),
        git(&c.root, &["rev-parse", "HEAD"])
    );
}

#[test]
fn every_fixture_plugin_builds_with_the_genuine_sdk() {
    let repo = fixture_repo(&[]);
    let out = tempfile::tempdir().unwrap();
    for (name, version) in CANDIDATES {
        let dest = out.path().join(name);
        let built = lbp_build(&repo.root.join("Runner").join(name), &dest);
        assert_eq!(
            built,
            [format!("langbot-fixtures-{name}-{version}.lbpkg")],
            "{name}"
        );
    }
}

/// The component fixture plugins (`fixtures/component-plugins`), one per
/// kind the `discovery-rpc` gate calls, build with the genuine SDK, and each
/// declares the components `tests/it/discovery_components.rs` expects.
#[test]
fn every_component_fixture_plugin_builds_with_the_genuine_sdk() {
    let root = common::fixtures_dir()
        .join("component-plugins")
        .join("Components");
    let out = tempfile::tempdir().unwrap();
    for (folder, name, component) in [
        (
            "tool-plugin",
            "component-tools",
            "components/tool/needs_key.yaml",
        ),
        (
            "command-plugin",
            "component-commands",
            "components/command/greet.yaml",
        ),
        (
            "event-plugin",
            "component-events",
            "components/event_listener/default.yaml",
        ),
        (
            "knowledge-plugin",
            "component-knowledge",
            "components/knowledge_engine/notes.yaml",
        ),
        ("wrap-plugin", "component-wrap", "components/tool/wrap.yaml"),
        (
            "tally-plugin",
            "component-tally",
            "components/command/tally.yaml",
        ),
        (
            "misfit-plugin",
            "component-misfit",
            "components/event_listener/default.yaml",
        ),
    ] {
        let copy = out.path().join("src").join(folder);
        common::copy_tree(&root.join(folder), &copy);
        assert!(copy.join(component).is_file(), "{folder}: {component}");
        let built = lbp_build(&copy, &out.path().join("out").join(folder));
        assert_eq!(
            built,
            [format!("langbot-fixtures-{name}-0.1.0.lbpkg")],
            "{folder}"
        );
    }
}

#[test]
fn shared_files_are_identical_in_the_good_repository_and_drift_in_the_overlay() {
    let read = |root: &Path, who: &str, file: &str| {
        std::fs::read(root.join("Runner").join(who).join(file)).unwrap()
    };
    let good = fixture_repo(&[]);
    for file in [
        "pkg/__init__.py",
        "pkg/daemon_relay.py",
        "pkg/runtime_support.py",
        "pkg/RELAY-NOTICE.md",
    ] {
        let canonical = read(&good.root, "acp-agent-runner", file);
        for who in ["claude-code-agent", "codex-agent"] {
            assert!(
                read(&good.root, who, file) == canonical,
                "{who}/{file} differs from the canonical copy"
            );
        }
    }
    let drifted = fixture_repo(&["drifted-shared-copy"]);
    let canonical = read(&drifted.root, "acp-agent-runner", "pkg/runtime_support.py");
    assert!(read(&drifted.root, "claude-code-agent", "pkg/runtime_support.py") == canonical);
    assert!(read(&drifted.root, "codex-agent", "pkg/runtime_support.py") != canonical);
}

#[test]
fn shadow_sdk_overlay_adds_a_tracked_langbot_plugin_package() {
    let repo = fixture_repo(&["shadow-sdk"]);
    let tracked = git(
        &repo.root,
        &["ls-files", "Runner/codex-agent/langbot_plugin"],
    );
    assert_eq!(
        tracked.trim(),
        "Runner/codex-agent/langbot_plugin/__init__.py"
    );
    let text = std::fs::read_to_string(repo.root.join(tracked.trim())).unwrap();
    assert!(text.starts_with("# HOSTILE SHADOW FIXTURE"), "{text}");
}

#[test]
fn float_version_overlay_makes_the_official_build_write_nothing() {
    let repo = fixture_repo(&["float-version"]);
    let manifest =
        std::fs::read_to_string(repo.root.join("Runner/claude-code-agent/manifest.yaml")).unwrap();
    assert!(manifest.contains("\n  version: 1.0\n"), "{manifest}");
    let out = tempfile::tempdir().unwrap();
    let built = lbp_build(
        &repo.root.join("Runner/claude-code-agent"),
        &out.path().join("out"),
    );
    assert!(
        built.is_empty(),
        "expected no archive for a float version, found {built:?}"
    );
}

#[test]
fn copied_venv_imports_the_sdk_from_the_copy() {
    let venv = common::copy_venv(&common::sdk_venv());
    let out = Command::new(common::venv_python(&venv))
        .args([
            "-I",
            "-B",
            "-c",
            "import importlib.metadata as m, langbot_plugin, sys; \
             print(m.version('langbot-plugin')); print(langbot_plugin.__file__); print(sys.prefix)",
        ])
        .output()
        .expect("run the copied interpreter");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "0.6.0b5");
    let copy = venv.path().canonicalize().unwrap();
    assert!(
        Path::new(lines[1]).starts_with(&copy) || Path::new(lines[1]).starts_with(venv.path()),
        "{text}"
    );
}
