//! Behaviour kept across refactoring (issue 38): a certification of the
//! fixture repository (`fixtures/candidate-repo`) writes an `evidence.json`
//! with every key and every stable value of `tests/data/evidence-snapshot.json`.
//!
//! The snapshot was recorded from main's binary (3b6d232) before the layers
//! were moved, so this test is what shows that moving types and splitting
//! functions changed no observable result. What varies from run to run is
//! replaced before comparing, by rules rather than by positions:
//! - times: every `*_ms` and `*_at` value, and `<n> ms` in sentences;
//! - the operating system's numbers: pids, process groups, sessions, ports,
//!   pid namespaces (by key, and where those numbers recur in sentences);
//! - temporary paths: the evidence directory, the repository copy and the
//!   SDK venv become `<DIR>`, `<REPO>` and `<SDK>`;
//! - the machine's base interpreter (its prefix, version and digest);
//! - the archives' build stamps: `lbp build` stamps each manifest with the
//!   clock, so each archive's sha256, the SDK's normalized digest and the
//!   dependency environment digests (which name the archive) become
//!   `<archive-sha256:FOLDER>` etc.;
//! - random ids: UUIDs, probe nonces, the run marker, the local protocol
//!   fixtures' message and session ids and clocks;
//! - what depends on scheduling, kept as its shape (keys and value types)
//!   only: `signals` (the journal of what the OS did when), `files` (its
//!   digests cover the logs), the sign-off digest, and the `worker-isolation`
//!   gate's details and observations (a cancellation race, and which gates
//!   ran beside the workers); its check names and results are compared.
//!
//! The run is the fixture's one full certification of the test run
//! (`common::shared_certification`, which `end_to_end` reads too): it turns
//! the verifier's bytecode cache off (`VCC_BYTECODE_CACHE=off`) so that its
//! sentences do not depend on what an earlier run left there, and is signed
//! off by `common::SIGNED_OFF_BY` (the snapshot's `sign_off.signed_off_by`).
//!
//! To record the snapshot again (only when a change of evidence is meant):
//! `VCC_UPDATE_EVIDENCE_SNAPSHOT=1 cargo xtask test -- --test it evidence_snapshot::`,
//! then review the diff of the data file.

use crate::common;

use common::*;
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SNAPSHOT: &str = "tests/data/evidence-snapshot.json";
const UPDATE: &str = "VCC_UPDATE_EVIDENCE_SNAPSHOT";

/// Keys whose values are kept as their shape only, wherever they appear at
/// the top level of the document.
const SHAPE_ONLY_TOP: &[&str] = &["signals", "files"];

/// Gates whose checks keep only their name, candidate and result verbatim.
const SHAPE_ONLY_GATES: &[&str] = &["worker-isolation"];

/// Where the run put things, so that they can be named instead.
struct Places {
    dir: PathBuf,
    repo: PathBuf,
    sdk: PathBuf,
}

#[test]
fn a_certification_of_the_fixture_keeps_every_key_and_stable_value_of_the_snapshot() {
    let run = shared_certification();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let places = Places {
        dir: run.evidence.clone(),
        repo: run.repo.clone(),
        sdk: sdk_venv(),
    };
    let got = sort_place_lists(normalize(&read_evidence(&run.evidence), &places));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT);
    if std::env::var_os(UPDATE).is_some() {
        let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
        panic!(
            "{UPDATE} is set: wrote {}; review its diff, then run again without it",
            path.display()
        );
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let want = sort_place_lists(want);
    let differences = compare(&want, &got);
    assert!(
        differences.is_empty(),
        "the fixture's evidence differs from {SNAPSHOT} (recorded before issue 38's refactor) in {} place(s); \
         a refactor must keep it; if the change is meant, record it again with {UPDATE}=1:\n{}",
        differences.len(),
        differences.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// The evidence with every varying value replaced (see the module's doc).
/// A process group's status after SIGTERM sufficed: either is the same stop.
const STOPPED_BY_SIGTERM: &[&str] = &["exit status: 0", "signal: 15 (SIGTERM)"];

fn normalize(evidence: &Value, places: &Places) -> Value {
    let rules = Rules::from(evidence, places);
    let mut top = Map::new();
    for (key, value) in evidence.as_object().expect("evidence is an object") {
        let normalized = if SHAPE_ONLY_TOP.contains(&key.as_str()) {
            shape(value)
        } else if key == "gates" {
            Value::Array(
                value
                    .as_array()
                    .expect("gates is an array")
                    .iter()
                    .map(|g| rules.gate(g))
                    .collect(),
            )
        } else {
            rules.walk(key, value)
        };
        top.insert(key.clone(), normalized);
    }
    if let Some(sign_off) = top.get_mut("sign_off").and_then(Value::as_object_mut) {
        if let Some(digest) = sign_off.get_mut("evidence_sha256") {
            *digest = shape(digest);
        }
    }
    Value::Object(top)
}

struct Rules {
    /// Literal text to replace, longest first.
    literals: Vec<(String, String)>,
    /// Numbers the OS chose (pids, ports) at least 100, as text: a string
    /// that is one of them (a command line's port argument) is replaced.
    os_numbers: BTreeSet<String>,
    patterns: Vec<(Regex, &'static str)>,
}

impl Rules {
    fn from(evidence: &Value, places: &Places) -> Rules {
        let mut literals = vec![
            (places.dir.display().to_string(), "<DIR>".to_string()),
            (places.repo.display().to_string(), "<REPO>".to_string()),
            (places.sdk.display().to_string(), "<SDK>".to_string()),
        ];
        // The machine's base interpreter, under the SDK venv.
        // The installed RECORD's digest and the venv's pyvenv.cfg name the
        // venv's own path (console scripts' shebangs, `command =`), so they
        // differ between checkouts.
        for (field, name) in [
            ("record_sha256", "<sdk-installed-record-sha256>"),
            ("base_prefix", "<BASE-PYTHON>"),
            ("interpreter_sha256", "<interpreter-sha256>"),
            ("python_version", "<python-version>"),
        ] {
            if let Some(v) = evidence["sdk"][field].as_str() {
                literals.push((v.to_string(), name.to_string()));
            }
        }
        for c in evidence["candidates"].as_array().into_iter().flatten() {
            let folder = c["folder"].as_str().unwrap_or("?");
            for (field, value) in [
                ("archive-sha256", &c["archive"]["sha256"]),
                ("archive-normalized", &c["archive"]["normalized_zip_digest"]),
            ] {
                if let Some(v) = value.as_str() {
                    literals.push((v.to_string(), format!("<{field}:{folder}>")));
                }
            }
            for d in c["dependencies"]["digests"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(v) = d.as_str() {
                    literals.push((v.to_string(), format!("<dependencies-digest:{folder}>")));
                }
            }
        }
        literals.sort_by_key(|l| std::cmp::Reverse(l.0.len()));
        let mut os_numbers = BTreeSet::new();
        collect_os_numbers(evidence, None, &mut os_numbers);
        let patterns = [
            (
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                "<uuid>",
            ),
            (r"VCC-PROBE-[0-9a-f]+", "VCC-PROBE-<nonce>"),
            (
                r"pyvenv\.cfg \(sha256 [0-9a-f]{64}\)",
                "pyvenv.cfg (sha256 <pyvenv-cfg-sha256>)",
            ),
            // Which pytest rewrite caches the shared SDK venv holds is
            // machine state (which tests ran in it before): the clause that
            // counts them is left out, as `pytest_rewrite_cache` is.
            (
                r"; \d+ pytest assertion-rewrite cache files, never read by the verifier's steps \(their pytest reads its cache under -X pycache_prefix\), are recorded",
                "",
            ),
            (
                r"\((?:exit status: 0|signal: 15 \(SIGTERM\)); SIGTERM sufficed\)",
                "(<stopped by SIGTERM>; SIGTERM sufficed)",
            ),
            (r"nonce-([ab])-[0-9a-f]+", "nonce-$1-<nonce>"),
            (r"VCC_RUN_MARKER=[0-9a-f]+", "VCC_RUN_MARKER=<marker>"),
            (r"\b\d+ ms\b", "<n> ms"),
            (r"\bpid \d+", "pid <n>"),
            (r"pid:\[\d+\]", "pid:[<n>]"),
            (r"127\.0\.0\.1:\d+", "127.0.0.1:<port>"),
            // The local protocol fixtures' own ids and clocks, in the
            // transcript lines they wrote (JSON text).
            (r"\b(msg_fixture|msg|sess)_[0-9a-f]{16,}", "${1}_<id>"),
            (r#""([A-Za-z_]*(?:_ms|At))":\d+"#, r#""$1":<time>"#),
            (r"(--ws-[a-z]+-port) \d+", "$1 <port>"),
        ]
        .into_iter()
        .map(|(re, to)| (Regex::new(re).unwrap(), to))
        .collect();
        Rules {
            literals,
            os_numbers,
            patterns,
        }
    }

    /// One gate: a shape-only gate keeps its checks' names, candidates and
    /// results verbatim, and the shape of the rest.
    fn gate(&self, gate: &Value) -> Value {
        let id = gate["id"].as_str().unwrap_or_default();
        if !SHAPE_ONLY_GATES.contains(&id) {
            return self.walk("gate", gate);
        }
        let mut out = Map::new();
        for (key, value) in gate.as_object().expect("a gate is an object") {
            let v = if key == "checks" {
                Value::Array(
                    value
                        .as_array()
                        .expect("checks is an array")
                        .iter()
                        .map(|c| {
                            let mut kept = Map::new();
                            for (k, v) in c.as_object().expect("a check is an object") {
                                let verbatim =
                                    ["name", "candidate", "result"].contains(&k.as_str());
                                kept.insert(k.clone(), if verbatim { v.clone() } else { shape(v) });
                            }
                            Value::Object(kept)
                        })
                        .collect(),
                )
            } else {
                self.walk(key, value)
            };
            out.insert(key.clone(), v);
        }
        Value::Object(out)
    }

    fn walk(&self, key: &str, value: &Value) -> Value {
        if is_time_key(key) {
            return placeholder(value, "<time>");
        }
        if is_os_key(key) {
            return placeholder(value, "<os>");
        }
        // Which pytest rewrite caches the shared SDK venv holds depends on
        // which tests ran in it before (machine state, not the run's).
        if key == "pytest_rewrite_cache" {
            return Value::String("<machine-state>".into());
        }
        // The runtime stopped by SIGTERM either handles it and exits 0 or
        // dies of it: which, is a race of the machine, not the run's.
        if key == "teardown" {
            if let Some(status) = value.get("status").and_then(Value::as_str) {
                if STOPPED_BY_SIGTERM.contains(&status) {
                    let mut value = value.clone();
                    value["status"] = Value::String("<stopped by SIGTERM>".into());
                    return self.walk("", &value);
                }
            }
        }
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.walk(k, v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.walk(key, v)).collect()),
            Value::String(s) => Value::String(self.text(s)),
            other => other.clone(),
        }
    }

    fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (from, to) in &self.literals {
            if !from.is_empty() {
                out = out.replace(from, to);
            }
        }
        for (re, to) in &self.patterns {
            out = re.replace_all(&out, *to).into_owned();
        }
        // A port or pid as a whole string: a command line's argument.
        if self.os_numbers.contains(&out) {
            return "<os>".to_string();
        }
        out
    }
}

/// Keys whose lists of paths the verifier keeps sorted by the real paths
/// (a sandbox's mounts): once the paths are replaced by placeholders their
/// order differs between machines (CI's checkout sorts the SDK venv before
/// the base interpreter, this machine after it), so they compare sorted.
/// Every other list keeps its order (a `sys.path` is compared as it is).
const PATH_SET_KEYS: &[&str] = &["read_only", "writable"];

/// `value` with every list of strings under a [`PATH_SET_KEYS`] key sorted.
fn sort_place_lists(value: Value) -> Value {
    sort_under(None, value)
}

fn sort_under(key: Option<&str>, value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = sort_under(Some(&k), v);
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items)
            if key.is_some_and(|k| PATH_SET_KEYS.contains(&k))
                && items.iter().all(Value::is_string) =>
        {
            let mut strings: Vec<String> = items
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            strings.sort();
            Value::Array(strings.into_iter().map(Value::String).collect())
        }
        Value::Array(mut items) if key == Some("members") => {
            // An archive's members in the order `lbp build` added them: the
            // order the file system lists a folder (tmpfs newest first, a
            // small ext4 folder as created), so they compare by name.
            items.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
            Value::Array(items.into_iter().map(|v| sort_under(None, v)).collect())
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| sort_under(key, v)).collect())
        }
        other => other,
    }
}

/// A value replaced by `label`, keeping its kind: `null` stays `null`, an
/// array keeps its length.
fn placeholder(value: &Value, label: &str) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Array(items) => Value::Array(items.iter().map(|v| placeholder(v, label)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), placeholder(v, label)))
                .collect(),
        ),
        _ => Value::String(label.to_string()),
    }
}

fn is_time_key(key: &str) -> bool {
    key.ends_with("_ms") || key.ends_with("_at")
}

fn is_os_key(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "pid",
        "ppid",
        "pgid",
        "sid",
        "group",
        "start_time",
        "port",
        "process_groups",
        "pid_namespace",
        "daemon_job_id",
    ];
    EXACT.contains(&key)
        || ["_pid", "_pgid", "_sid", "_port"]
            .iter()
            .any(|s| key.ends_with(s))
}

fn collect_os_numbers(value: &Value, key: Option<&str>, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                collect_os_numbers(v, Some(k), out);
            }
        }
        Value::Array(items) => {
            for v in items {
                collect_os_numbers(v, key, out);
            }
        }
        Value::Number(n) if key.is_some_and(is_os_key) && n.as_u64().is_some_and(|n| n >= 100) => {
            out.insert(n.to_string());
        }
        _ => {}
    }
}

/// The value's shape: objects keep their keys, arrays become one element
/// (every element's shape merged), scalars become their type. A list of
/// scalars, or an empty list, is `"<list>"` whatever its length: whether a
/// shape-only gate's list (worker-isolation's `parents_mtime_only`, say)
/// has entries depends on what ran beside it, not on the run.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => {
            let merged = items.iter().map(shape).reduce(|a, b| merge(&a, &b));
            match merged {
                None | Some(Value::String(_)) => Value::String("<list>".into()),
                Some(m) => Value::Array(vec![m]),
            }
        }
        Value::String(_) => Value::String("<string>".into()),
        Value::Number(_) => Value::String("<number>".into()),
        Value::Bool(_) => Value::String("<bool>".into()),
        Value::Null => Value::String("<null>".into()),
    }
}

fn merge(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut out = x.clone();
            for (k, v) in y {
                let m = match out.get(k) {
                    Some(existing) => merge(existing, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), m);
            }
            Value::Object(out)
        }
        (Value::Array(x), Value::Array(y)) => {
            let merged = x.iter().chain(y).cloned().reduce(|p, q| merge(&p, &q));
            Value::Array(merged.into_iter().collect())
        }
        _ if a == b => a.clone(),
        _ => Value::String("<varies>".into()),
    }
}

/// Every leaf by its path (`.gates[3].checks[0].result`), as JSON text; an
/// empty object or array is a leaf.
fn flatten(value: &Value, path: String, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(v, format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                flatten(v, format!("{path}[{i}]"), out);
            }
        }
        leaf => {
            out.insert(path, leaf.to_string());
        }
    }
}

/// Each path that is missing, new or different, one line each.
fn compare(want: &Value, got: &Value) -> Vec<String> {
    let (mut w, mut g) = (BTreeMap::new(), BTreeMap::new());
    flatten(want, String::new(), &mut w);
    flatten(got, String::new(), &mut g);
    let mut out = Vec::new();
    for (path, value) in &w {
        match g.get(path) {
            None => out.push(format!("missing {path} (was {value})")),
            Some(v) if v != value => out.push(format!("changed {path}: was {value}, now {v}")),
            Some(_) => {}
        }
    }
    for (path, value) in &g {
        if !w.contains_key(path) {
            out.push(format!("new {path} = {value}"));
        }
    }
    out
}

/// The normalizer and the comparison, on small documents of our own: what
/// must be told apart is, and what may vary does.
mod rules {
    use super::*;
    use serde_json::json;

    fn places() -> Places {
        Places {
            dir: PathBuf::from("/tmp/ev-1/ev"),
            repo: PathBuf::from("/tmp/repo-1/langbot-plugins"),
            sdk: PathBuf::from("/opt/sdk-venv"),
        }
    }

    fn doc(result: &str, duration: u64, pid: u64, stamp: &str) -> Value {
        json!({
            "started_at": "2026-12-04T23:37:21Z",
            "gates": [{
                "id": "lbp-build", "result": result, "duration_ms": duration,
                "checks": [{
                    "name": "build-exit", "candidate": "codex-agent", "result": result,
                    "detail": format!("`lbp build` exited with status 0 in {duration} ms (pid {pid})"),
                    "observed": {"archive": "/tmp/ev-1/ev/packages/codex-agent/x.lbpkg", "pid": pid,
                                 "python": "/opt/sdk-venv/bin/python", "sha256": stamp}
                }]
            }, {
                "id": "worker-isolation", "result": "pass",
                "checks": [{"name": "private-roots", "result": "pass",
                            "detail": format!("{pid} raced"), "observed": {"excluded": [1, 2]}}]
            }],
            "candidates": [{"folder": "codex-agent", "archive": {"sha256": stamp}}],
            "signals": [{"pid": pid, "why": "exited"}],
            "sign_off": {"verdict": result, "evidence_sha256": stamp}
        })
    }

    #[test]
    fn times_pids_paths_and_build_stamps_do_not_count() {
        let a = normalize(&doc("pass", 4164, 22752, &"9f".repeat(32)), &places());
        let b = normalize(&doc("pass", 7258, 25238, &"a2".repeat(32)), &places());
        assert_eq!(compare(&a, &b), Vec::<String>::new());
        let check = &a["gates"][0]["checks"][0];
        assert_eq!(
            check["detail"],
            "`lbp build` exited with status 0 in <n> ms (pid <n>)"
        );
        assert_eq!(
            check["observed"]["archive"],
            "<DIR>/packages/codex-agent/x.lbpkg"
        );
        assert_eq!(check["observed"]["python"], "<SDK>/bin/python");
        assert_eq!(check["observed"]["sha256"], "<archive-sha256:codex-agent>");
        assert_eq!(a["gates"][1]["checks"][0]["detail"], "<string>");
    }

    #[test]
    fn a_changed_result_is_a_difference() {
        let a = normalize(&doc("pass", 1, 200, "x"), &places());
        let b = normalize(&doc("fail", 1, 200, "x"), &places());
        let d = compare(&a, &b);
        assert!(
            d.iter()
                .any(|l| l == r#"changed .gates[0].checks[0].result: was "pass", now "fail""#),
            "{d:?}"
        );
    }

    #[test]
    fn a_missing_or_new_key_is_a_difference() {
        let a = normalize(&doc("pass", 1, 200, "x"), &places());
        let mut changed = doc("pass", 1, 200, "x");
        let observed = changed["gates"][0]["checks"][0]["observed"]
            .as_object_mut()
            .unwrap();
        observed.remove("archive");
        observed.insert("archives".into(), json!("/tmp/ev-1/ev/packages"));
        let d = compare(&a, &normalize(&changed, &places()));
        assert!(
            d.iter()
                .any(|l| l.starts_with("missing .gates[0].checks[0].observed.archive ")),
            "{d:?}"
        );
        assert!(
            d.iter()
                .any(|l| l.starts_with("new .gates[0].checks[0].observed.archives ")),
            "{d:?}"
        );
    }

    #[test]
    fn a_shape_only_gate_still_compares_its_check_names_and_results() {
        let a = normalize(&doc("pass", 1, 200, "x"), &places());
        let mut changed = doc("pass", 1, 200, "x");
        changed["gates"][1]["checks"][0]["result"] = json!("fail");
        changed["signals"][0]["why"] = json!("residue");
        changed["gates"][1]["checks"][0]["observed"]["excluded"] = json!([7]);
        let d = compare(&a, &normalize(&changed, &places()));
        assert_eq!(
            d,
            vec![r#"changed .gates[1].checks[0].result: was "pass", now "fail""#.to_string()]
        );
    }

    #[test]
    fn a_list_of_mounts_compares_in_any_machines_order_and_a_sys_path_keeps_its_own() {
        // On one machine the SDK venv sorts before the base interpreter, on
        // another after it: the same mounts.
        let on = |sdk: &str, base: &str| {
            let mut d = doc("pass", 1, 200, &"9f".repeat(32));
            d["sdk"] = json!({"base_prefix": base});
            d["gates"][0]["checks"][0]["observed"]["read_only"] =
                json!([base, sdk, "/tmp/ev-1/ev/extracted"]);
            d["gates"][0]["checks"][0]["observed"]["sys_path"] = json!([sdk, base]);
            let mut p = places();
            p.sdk = PathBuf::from(sdk);
            sort_place_lists(normalize(&d, &p))
        };
        let here = on("/work/target/sdk-venv", "/usr");
        let ci = on("/a/sdk-venv", "/usr");
        assert_eq!(compare(&here, &ci), Vec::<String>::new());
        let observed = &here["gates"][0]["checks"][0]["observed"];
        assert_eq!(
            observed["read_only"],
            json!(["<BASE-PYTHON>", "<DIR>/extracted", "<SDK>"])
        );
        // A sys.path keeps its order: it is what Python searches first.
        assert_eq!(observed["sys_path"], json!(["<SDK>", "<BASE-PYTHON>"]));
    }

    /// An archive built on tmpfs lists its members newest first, on ext4 as
    /// created: the same members. Another member's bytes still differ.
    #[test]
    fn archive_members_compare_by_name_in_any_file_systems_order() {
        let with = |members: Value| {
            let mut d = doc("pass", 1, 200, &"9f".repeat(32));
            d["candidates"] = json!([{"archive": {"members": members}}]);
            sort_place_lists(normalize(&d, &places()))
        };
        let a = json!({"name": "a.py", "sha256": "11", "size": 1, "mode": 420});
        let b = json!({"name": "b.py", "sha256": "22", "size": 2, "mode": 420});
        let ext4 = with(json!([a.clone(), b.clone()]));
        let tmpfs = with(json!([b.clone(), a.clone()]));
        assert_eq!(compare(&ext4, &tmpfs), Vec::<String>::new());
        let mut changed = b.clone();
        changed["sha256"] = json!("33");
        let other = with(json!([changed, a]));
        assert_eq!(
            compare(&ext4, &other).len(),
            1,
            "{:?}",
            compare(&ext4, &other)
        );
    }
}
