//! SDK groups (`[[candidate]] sdk`, docs/profiles.md): candidates pinning
//! different SDK versions certified in one run, each group with its own
//! verified interpreter. The `langbot-plugin==0.6.1` group's interpreter is
//! provisioned by the verifier from the package index (its lock list,
//! hash-checked) into the user's cache; the default group's is `$PYTHON`
//! (`0.6.0b5`). Our own fixture plugins: `fixtures/sdk-groups/Pinned/`
//! (pins 0.6.1) beside `fixtures/component-plugins/Components/tool-plugin`
//! (pins 0.6.0b5). Needs the network to the package index the first time
//! (the 0.6.1 interpreter, and nothing else: the plugins require nothing
//! but the SDK).

use crate::common;

use common::{
    both, candidate, check, exit_code, gate, gate_result, git, junit_suite, read_evidence,
    read_junit, replay_output, stderr_text, stdout_text, FixtureRepo,
};
use serde_json::Value;
use verify_coding_candidates::exit;

const GROUP: &str = "langbot-plugin==0.6.1";
const GROUP_DIR: &str = "groups/langbot-plugin-0.6.1";

/// A profile of three candidates: the b5 tool plugin and a misplaced copy of
/// the 0.6.1 plugin in the default group, the 0.6.1 plugin in its own.
const PROFILE: &str = r#"name = "sdk-groups"

[sdk]
requirement = "langbot-plugin==0.6.0b5"

[[sdk.group]]
requirement = "langbot-plugin==0.6.1"
wheel_sha256 = "5607b4c787a92259b4a1f7beb4bdca9f371e37b316eaf8f316d2448e888da77e"

[[candidate]]
path = "Components/tool-plugin"

[[candidate]]
path = "Pinned/pinned-plugin"
sdk = "langbot-plugin==0.6.1"

# Pins 0.6.1 in its requirements.txt, but put in the default (0.6.0b5) group.
[[candidate]]
path = "Pinned/misplaced-plugin"

[admission]
require_sdk_pin = true
"#;

/// The tool plugin and both copies of the pinned plugin, as a git
/// repository with one commit.
fn grouped_repo() -> FixtureRepo {
    common::repo_of(
        "plugins",
        &[
            (
                "component-plugins/Components/tool-plugin",
                "Components/tool-plugin",
            ),
            ("sdk-groups/Pinned/pinned-plugin", "Pinned/pinned-plugin"),
            ("sdk-groups/Pinned/pinned-plugin", "Pinned/misplaced-plugin"),
        ],
    )
}

fn group<'a>(evidence: &'a Value, requirement: &str) -> &'a Value {
    evidence["sdk_groups"]
        .as_array()
        .expect("sdk_groups")
        .iter()
        .find(|g| g["requirement"] == requirement)
        .unwrap_or_else(|| panic!("no sdk group {requirement}: {}", evidence["sdk_groups"]))
}

#[test]
fn an_uncarried_pin_is_locked_on_demand_and_one_the_index_lacks_is_refused_naming_it() {
    let repo = grouped_repo();
    // Accepted at load (any exact pin); locking it from the index fails,
    // since no such release exists: exit 2 before anything is written.
    let text = PROFILE.replace("langbot-plugin==0.6.1", "langbot-plugin==0.0.999");
    let (keep, dir) = common::evidence_dir();
    let profile = keep.path().join("profile.toml");
    std::fs::write(&profile, text).unwrap();
    let out = common::verifier_on(&repo.root, &dir)
        .arg("--profile")
        .arg(&profile)
        .output()
        .unwrap();
    let err = stderr_text(&out);
    assert_eq!(exit_code(&out), i32::from(exit::CANNOT_RUN), "{err}");
    assert!(
        err.contains("sdk group langbot-plugin==0.0.999 (candidates Pinned/pinned-plugin")
            && err.contains("locking langbot-plugin==0.0.999 on demand"),
        "{err}"
    );
    assert!(
        !dir.exists(),
        "nothing is written when a group's interpreter cannot be provisioned"
    );
}

#[test]
fn a_grouped_profiles_share_must_hold_a_candidate_and_a_group_run_names_a_group_of_it() {
    let repo = grouped_repo();
    let (keep, dir) = common::evidence_dir();
    let profile = keep.path().join("profile.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    for (extra, expect) in [
        (
            ["--partition", "4/4"],
            "--partition 4/4: expected a share holding at least one candidate, found none (the \
             profile has 3 candidate(s), cut into 4 shares); use at most 3 shares",
        ),
        (
            ["--sdk-group", "langbot-plugin==0.7.0"],
            "--sdk-group langbot-plugin==0.7.0: expected the pin of one of the profile's SDK groups \
             (langbot-plugin==0.6.0b5, langbot-plugin==0.6.1)",
        ),
    ] {
        let out = common::verifier_on(&repo.root, &dir)
            .arg("--profile")
            .arg(&profile)
            .args(extra)
            .output()
            .unwrap();
        let err = stderr_text(&out);
        assert_eq!(exit_code(&out), i32::from(exit::CANNOT_RUN), "{err}");
        assert!(err.contains(expect), "{expect:?} not in {err}");
        assert!(!dir.exists(), "nothing is written when the run cannot start");
    }
}

#[test]
fn each_group_is_admitted_by_its_own_sdk_in_one_run_and_replays() {
    let repo = grouped_repo();
    let (out, _keep, dir) =
        common::run_only_with_profile(&repo.root, "discovery-rpc", PROFILE, &[]);
    let (stdout, stderr) = (stdout_text(&out), stderr_text(&out));
    // The misplaced candidate fails admission under b5; the others pass.
    assert_eq!(
        exit_code(&out),
        i32::from(exit::GATE_FAILED),
        "{stdout}\n{stderr}"
    );
    let ev = read_evidence(&dir);

    // The default group: this directory's own gates, b5.
    assert_eq!(ev["sdk"]["version"], "0.6.0b5");
    let default = group(&ev, "langbot-plugin==0.6.0b5");
    assert_eq!(default["default"], true);
    assert_eq!(default["version"], "0.6.0b5");
    assert_eq!(default["verdict"], "fail");
    let folders: Vec<&str> = ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["folder"].as_str().unwrap())
        .collect();
    assert_eq!(folders, ["tool-plugin", "misplaced-plugin"]);
    assert_eq!(
        candidate(&ev, "tool-plugin")["sdk_group"],
        "langbot-plugin==0.6.0b5"
    );
    assert_eq!(candidate(&ev, "tool-plugin")["verdict"]["result"], "pass");
    assert_eq!(candidate(&ev, "tool-plugin")["admission"]["accepted"], true);
    let misplaced = candidate(&ev, "misplaced-plugin");
    assert_eq!(misplaced["verdict"]["result"], "fail");
    assert_eq!(misplaced["verdict"]["gate"], "admission");
    let refused = check(
        &ev,
        "admission",
        "sdk-requirement",
        Some("misplaced-plugin"),
    );
    assert_eq!(refused["result"], "fail", "{refused}");

    // The 0.6.1 group: its own run, its own provisioned interpreter.
    let pinned = group(&ev, GROUP);
    assert_eq!(pinned["default"], false);
    assert_eq!(pinned["evidence"], GROUP_DIR);
    assert_eq!(pinned["version"], "0.6.1");
    assert_eq!(pinned["verdict"], "pass");
    assert_eq!(pinned["candidates"][0]["folder"], "pinned-plugin");
    assert_eq!(pinned["candidates"][0]["verdict"], "pass");
    let python = pinned["python"].as_str().unwrap();
    assert_ne!(python, ev["sdk"]["python"].as_str().unwrap());
    assert!(
        python.contains("verify-coding-candidates/sdk/langbot-plugin-0.6.1-"),
        "{python}"
    );
    let sub = read_evidence(&dir.join(GROUP_DIR));
    assert_eq!(sub["sdk"]["requirement"], GROUP);
    assert_eq!(sub["sdk"]["version"], "0.6.1");
    assert_eq!(
        pinned["evidence_sha256"],
        sub["sign_off"]["evidence_sha256"]
    );
    assert_eq!(pinned["record_sha256"], sub["sdk"]["record_sha256"]);
    let only = sub["candidates"].as_array().unwrap();
    assert_eq!(only.len(), 1, "{}", sub["candidates"]);
    assert_eq!(only[0]["sdk_group"], GROUP);
    assert_eq!(only[0]["admission"]["accepted"], true);
    assert_eq!(
        check(&sub, "admission", "sdk-requirement", Some("pinned-plugin"))["result"],
        "pass"
    );
    assert_eq!(
        check(&sub, "sdk-record", "sdk-version", None)["result"],
        "pass"
    );
    // The group's pin names no record_sha256: its interpreter is held to the
    // wheel RECORD of the verifier's lock for the pin all the same.
    let lock = verify_coding_candidates::provision::on_demand::files_for(GROUP).unwrap();
    let wheel_record = verify_coding_candidates::hash::sha256_bytes(lock.wheel_record.as_bytes());
    let provenance = check(&sub, "sdk-record", "record-provenance", None);
    assert_eq!(provenance["result"], "pass", "{provenance}");
    assert_eq!(
        provenance["observed"]["wheel_record_sha256"],
        wheel_record.as_str()
    );
    // The runtime of each group ran its plugins on that group's SDK: the
    // pinned plugin's Tool answers with the version its worker imported.
    let calls = &only[0]["discovery"]["component_calls"];
    assert_eq!(calls[0]["component"], "Tool/pinned_version", "{calls}");
    assert_eq!(calls[0]["outcome"], "reply", "{calls}");
    assert_eq!(calls[0]["reply"]["sdk"], "0.6.1", "{calls}");
    assert_eq!(
        candidate(&ev, "tool-plugin")["discovery"]["component_calls"][0]["outcome"],
        "reply"
    );

    // The views show the groups.
    let junit = read_junit(&dir);
    let suite = junit_suite(&junit, "sdk-groups").to_string();
    assert!(suite.contains(GROUP), "{suite}");
    let suite = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        suite.contains("sdk group langbot-plugin==0.6.0b5 did not pass"),
        "{suite}"
    );
    assert!(
        suite.contains("misplaced-plugin fail at admission/sdk-requirement"),
        "{suite}"
    );
    assert_eq!(
        default["candidates"][1]["stopped_at"],
        "admission/sdk-requirement"
    );
    assert!(
        !suite.contains("sdk group langbot-plugin==0.6.1 did not pass"),
        "{suite}"
    );
    assert!(stdout.contains("sdk groups:"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{GROUP}  pass  verified 0.6.1  candidates pinned-plugin  evidence {GROUP_DIR}"
        )),
        "{stdout}"
    );
    let statement: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("statement.intoto.json")).unwrap())
            .unwrap();
    assert!(
        statement.to_string().contains(&format!("{GROUP} RECORD")),
        "{statement}"
    );
    // The group's archive is a subject too, with the digest its run
    // recorded, named by its group.
    let sub: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(GROUP_DIR).join("evidence.json")).unwrap(),
    )
    .unwrap();
    let archive = &sub["candidates"][0]["archive"];
    let file = archive["path"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let subject = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == file && s["annotations"]["sdk_group"] == GROUP)
        .unwrap_or_else(|| panic!("no subject {file}: {statement}"));
    assert_eq!(subject["digest"]["sha256"], archive["sha256"], "{subject}");
    assert_eq!(
        group(&ev, GROUP)["candidates"][0]["archive"]["sha256"],
        archive["sha256"]
    );

    // Replay: every group re-derived and compared with what was recorded.
    let replayed = replay_output(&dir, &[]);
    let text = stdout_text(&replayed);
    assert_eq!(
        exit_code(&replayed),
        i32::from(exit::SUCCESS),
        "{text}\n{}",
        stderr_text(&replayed)
    );
    assert!(
        text.contains(&format!("sdk group {GROUP} sdk version")),
        "{text}"
    );

    // Never merged on its own: merge combines the shares of a partitioned run.
    let (_into_keep, into) = common::evidence_dir();
    let merged = common::merge_output(&into, &[&dir]);
    assert_eq!(exit_code(&merged), i32::from(exit::CANNOT_RUN));
    assert!(
        stderr_text(&merged).contains("found only unpartitioned runs"),
        "{}",
        stderr_text(&merged)
    );

    // A tampered group interpreter fact is caught.
    let sub_json = dir.join(GROUP_DIR).join("evidence.json");
    common::make_writable(&dir);
    let mut tampered: Value =
        serde_json::from_str(&std::fs::read_to_string(&sub_json).unwrap()).unwrap();
    tampered["sdk"]["version"] = Value::String("0.6.0b5".into());
    std::fs::write(&sub_json, serde_json::to_vec_pretty(&tampered).unwrap()).unwrap();
    let replayed = replay_output(&dir, &[]);
    let text = stdout_text(&replayed);
    assert_eq!(exit_code(&replayed), i32::from(exit::GATE_FAILED), "{text}");
    let mismatch = text
        .lines()
        .find(|l| l.contains(&format!("sdk group {GROUP} sdk version")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        mismatch.contains("0.6.1") && mismatch.contains("0.6.0b5"),
        "{mismatch}"
    );
}

/// The tool plugin (default group) and the 0.6.1 plugin (its own group),
/// the latter with a test of its own that fails.
const OWN_TESTS_PROFILE: &str = r#"name = "sdk-groups-own-tests"

[sdk]
requirement = "langbot-plugin==0.6.0b5"

[[sdk.group]]
requirement = "langbot-plugin==0.6.1"
wheel_sha256 = "5607b4c787a92259b4a1f7beb4bdca9f371e37b316eaf8f316d2448e888da77e"

[[candidate]]
path = "Components/tool-plugin"

[[candidate]]
path = "Pinned/pinned-plugin"
sdk = "langbot-plugin==0.6.1"
"#;

#[test]
fn a_candidate_of_another_group_has_its_own_tests_run_by_its_group_and_a_failing_one_fails_the_run()
{
    let repo = grouped_repo();
    let tests = repo.root.join("Pinned/pinned-plugin/tests");
    std::fs::create_dir_all(&tests).unwrap();
    std::fs::write(
        tests.join("test_own.py"),
        "from importlib import metadata\n\n\ndef test_fails_naming_its_sdk():\n    assert False, metadata.version(\"langbot-plugin\")\n",
    )
    .unwrap();
    git(&repo.root, &["add", "-A"]);
    git(
        &repo.root,
        &["commit", "-q", "-m", "a failing test of its own"],
    );
    let (out, _keep, dir) =
        common::run_only_with_profile(&repo.root, "suites", OWN_TESTS_PROFILE, &[]);
    let (stdout, stderr) = (stdout_text(&out), stderr_text(&out));
    assert_eq!(
        exit_code(&out),
        i32::from(exit::GATE_FAILED),
        "{stdout}\n{stderr}"
    );
    let ev = read_evidence(&dir);
    assert_eq!(group(&ev, GROUP)["verdict"], "fail", "{}", ev["sdk_groups"]);
    let sub = read_evidence(&dir.join(GROUP_DIR));
    let outcomes = check(
        &sub,
        "suites",
        "pinned-plugin/tree/outcomes",
        Some("pinned-plugin"),
    );
    assert_eq!(outcomes["result"], "fail", "{outcomes}");
    // Run with the group's interpreter: the failure names its SDK version.
    let failed = &sub["suites"]["runs"][0]["testcases"][0];
    assert_eq!(failed["outcome"], "failed", "{failed}");
    assert!(
        failed["message"].as_str().unwrap().contains("0.6.1"),
        "{failed}"
    );
    // The default group's run made no run of it.
    assert!(
        !ev["suites"].to_string().contains("pinned-plugin"),
        "{}",
        ev["suites"]
    );
    // Replay re-derives the group's run, suites included.
    let replayed = replay_output(&dir, &[]);
    assert_eq!(
        exit_code(&replayed),
        i32::from(exit::SUCCESS),
        "{}\n{}",
        stdout_text(&replayed),
        stderr_text(&replayed)
    );
}

#[test]
fn a_grouped_profiles_repository_level_suites_run_in_the_default_groups_run_warning_the_other_groups(
) {
    let repo = grouped_repo();
    let suite = repo.root.join("repo-tests");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(
        suite.join("test_repository.py"),
        "def test_the_repository_level_suite_runs():\n    assert True\n",
    )
    .unwrap();
    git(&repo.root, &["add", "-A"]);
    git(
        &repo.root,
        &["commit", "-q", "-m", "a repository-level suite"],
    );
    let profile = format!("{OWN_TESTS_PROFILE}\n[suites]\npaths = [\"repo-tests\"]\n");
    let (out, _keep, dir) = common::run_only_with_profile(&repo.root, "suites", &profile, &[]);
    let (stdout, stderr) = (stdout_text(&out), stderr_text(&out));
    let ev = read_evidence(&dir);
    let names: Vec<&str> = common::checks(&ev, "suites")
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // Not "left out by the gates it requires": the other group's candidate
    // passed them in its own run.
    assert!(
        !names.contains(&"repository-runs"),
        "{names:?}\n{stdout}\n{stderr}"
    );
    assert_eq!(
        check(&ev, "suites", "tree/outcomes", None)["result"],
        "pass"
    );
    assert_eq!(
        check(&ev, "suites", "extracted/source-root", None)["result"],
        "pass"
    );
    let other = check(&ev, "suites", "other-sdk-groups", None);
    assert_eq!(other["result"], "warn", "{other}");
    assert!(
        other["detail"]
            .as_str()
            .unwrap()
            .contains("Pinned/pinned-plugin"),
        "{other}"
    );
    assert_eq!(
        exit_code(&out),
        i32::from(exit::SUCCESS),
        "{stdout}\n{stderr}"
    );
    // The group's own run makes no repository-level run.
    let sub = read_evidence(&dir.join(GROUP_DIR));
    assert!(
        common::checks(&sub, "suites")
            .iter()
            .all(|c| c["name"].as_str().unwrap().starts_with("pinned-plugin/")),
        "{}",
        sub["gates"]
    );
    // Replay re-decides the repository-level runs as they were made.
    let replayed = replay_output(&dir, &[]);
    assert_eq!(
        exit_code(&replayed),
        i32::from(exit::SUCCESS),
        "{}\n{}",
        stdout_text(&replayed),
        stderr_text(&replayed)
    );
}

/// The pid of a live process whose parent is `parent` and whose command
/// line holds `needle`.
fn child_with(parent: u32, needle: &str) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name's closing parenthesis: state, ppid.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(needle) {
            return Some(pid);
        }
    }
    None
}

#[test]
fn a_group_run_killed_before_it_sealed_fails_its_group_and_the_run_still_writes_evidence() {
    let repo = grouped_repo();
    let (keep, dir) = common::evidence_dir();
    let profile = keep.path().join("profile.toml");
    std::fs::write(&profile, OWN_TESTS_PROFILE).unwrap();
    #[allow(deprecated)] // the std Command of assert_cmd's binary, to spawn it
    let bin = assert_cmd::cargo::cargo_bin(common::BIN);
    let mut run = std::process::Command::new(bin)
        .env("PYTHON", common::python())
        .current_dir(&repo.root)
        .arg("--evidence")
        .arg(&dir)
        .args(["--only", "lbp-build", "--profile"])
        .arg(&profile)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The group's run is this program started with --sdk-group: kill it as
    // the kernel's OOM killer would, before it can seal its evidence.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let killed = loop {
        if let Some(pid) = child_with(run.id(), "--sdk-group") {
            let status = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            break status.success();
        }
        assert!(
            std::time::Instant::now() < deadline && run.try_wait().unwrap().is_none(),
            "the group's run was never seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(killed);
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = (stdout_text(&out), stderr_text(&out));
    assert_eq!(
        exit_code(&out),
        i32::from(exit::GATE_FAILED),
        "{stdout}\n{stderr}"
    );
    let ev = read_evidence(&dir);
    let g = group(&ev, GROUP);
    assert_eq!(g["verdict"], "fail", "{g}");
    assert!(g.get("evidence").is_none(), "{g}");
    assert!(
        g["error"]
            .as_str()
            .unwrap()
            .contains("left no readable evidence"),
        "{g}"
    );
    assert_eq!(g["candidates"][0]["folder"], "pinned-plugin", "{g}");
    assert!(g["candidates"][0].get("verdict").is_none() || g["candidates"][0]["verdict"].is_null());
    // The default group was still certified, and the run's verdict is fail.
    assert_eq!(ev["verdict"], "fail");
    assert_eq!(candidate(&ev, "tool-plugin")["verdict"]["result"], "pass");
    assert!(stdout.contains("left no readable evidence"), "{stdout}");
    // Replay agrees with what was recorded.
    let replayed = replay_output(&dir, &[]);
    assert_eq!(
        exit_code(&replayed),
        i32::from(exit::SUCCESS),
        "{}\n{}",
        stdout_text(&replayed),
        stderr_text(&replayed)
    );
}

/// What a verdict of a grouped evidence directory rests on: its verdict,
/// each candidate's verdict and stopping gate, each SDK group's record
/// (pin, verdict, SDK version, warnings, candidates with their verdicts),
/// and the result of every required gate, in this directory and in each
/// group's.
fn verdicts(dir: &std::path::Path) -> Value {
    let ev = read_evidence(dir);
    let candidates: Vec<Value> = ev["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::json!([c["folder"], c["verdict"]["result"], c["verdict"]["gate"]]))
        .collect();
    let gates: Vec<Value> = ev["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["required"] == true)
        .map(|g| serde_json::json!([g["id"], g["result"]]))
        .collect();
    let groups: Vec<Value> = ev["sdk_groups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let own = g["evidence"]
                .as_str()
                .map_or(Value::Null, |rel| verdicts(&dir.join(rel)));
            serde_json::json!({
                "requirement": g["requirement"], "default": g["default"], "verdict": g["verdict"],
                "version": g["version"], "warnings": g["warnings"], "candidates": g["candidates"]
                    .as_array().unwrap().iter()
                    .map(|c| serde_json::json!([c["folder"], c["verdict"], c["stopped_at"]]))
                    .collect::<Vec<_>>(),
                "evidence": g["evidence"], "own": own,
            })
        })
        .collect();
    serde_json::json!({
        "verdict": ev["verdict"], "candidates": candidates, "required": ev["selection"]["required"],
        "gates": gates, "sdk_groups": groups,
    })
}

#[test]
fn a_grouped_profiles_shares_merge_into_what_one_unpartitioned_run_records_and_replay() {
    let repo = grouped_repo();
    let run =
        |extra: &[&str]| common::run_only_with_profile(&repo.root, "admission", PROFILE, extra);
    let (out, _k0, whole) = run(&[]);
    assert_eq!(
        exit_code(&out),
        i32::from(exit::GATE_FAILED),
        "{}",
        both(&out)
    );
    // The deal: the default group's two candidates, then the 0.6.1 group's one.
    let (out1, _k1, p1) = run(&["--partition", "1/2"]);
    let (out2, _k2, p2) = run(&["--partition", "2/2"]);
    assert_eq!(
        exit_code(&out1),
        i32::from(exit::GATE_FAILED),
        "{}",
        both(&out1)
    );
    assert_eq!(
        exit_code(&out2),
        i32::from(exit::SUCCESS),
        "{}",
        both(&out2)
    );
    let e1 = read_evidence(&p1);
    let folders = |ev: &Value| -> Vec<String> {
        ev["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["folder"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(folders(&e1), ["tool-plugin", "misplaced-plugin"]);
    assert_eq!(
        e1["sdk_groups"].as_array().unwrap().len(),
        1,
        "no run of a group it holds none of"
    );
    assert!(!p1.join("groups").exists());
    // Share 2 holds none of the default group's candidates: its own run
    // checks the global gates only, its group's run the pinned plugin.
    let e2 = read_evidence(&p2);
    assert!(folders(&e2).is_empty(), "{}", e2["candidates"]);
    let admission = gate(&e2, "admission");
    assert_eq!(
        (&admission["required"], &admission["result"]),
        (&Value::Bool(false), &Value::from("skipped"))
    );
    assert!(
        admission["reason"]
            .as_str()
            .unwrap()
            .contains("this share holds no candidate of this run's SDK group"),
        "{admission}"
    );
    assert_eq!(gate_result(&e2, "sdk-record"), "pass");
    assert_eq!(
        group(&e2, GROUP)["candidates"][0]["folder"],
        "pinned-plugin"
    );
    let sub = read_evidence(&p2.join(GROUP_DIR));
    assert_eq!(
        sub["selection"]["partition"],
        serde_json::json!({"index": 2, "count": 2})
    );
    assert_eq!(folders(&sub), ["pinned-plugin"]);

    // Merged: what the unpartitioned run records, group by group.
    let (_k3, into) = common::evidence_dir();
    let out = common::merge_output(&into, &[&p2, &p1]);
    assert_eq!(
        exit_code(&out),
        i32::from(exit::GATE_FAILED),
        "{}",
        both(&out)
    );
    let mut expected = verdicts(&whole);
    let mut merged = verdicts(&into);
    // The unpartitioned run lists candidates in profile order, merge by path.
    for v in [&mut expected, &mut merged] {
        v["candidates"]
            .as_array_mut()
            .unwrap()
            .sort_by_key(|c| c[0].to_string());
    }
    assert_eq!(merged, expected);
    let m = read_evidence(&into);
    assert_eq!(
        group(&m, GROUP)["evidence_sha256"],
        read_evidence(&into.join(GROUP_DIR))["sign_off"]["evidence_sha256"]
    );
    assert_eq!(
        read_evidence(&into.join(GROUP_DIR))["merged_from"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let replayed = replay_output(&into, &[]);
    assert_eq!(
        exit_code(&replayed),
        i32::from(exit::SUCCESS),
        "{}\n{}",
        stdout_text(&replayed),
        stderr_text(&replayed)
    );

    // Shares that do not fit together are refused, and nothing is written.
    let keep = tempfile::Builder::new()
        .prefix("vcc-copies-")
        .tempdir()
        .unwrap();
    let without_group = keep.path().join("share-2");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&p2)
        .arg(&without_group)
        .output()
        .unwrap();
    assert!(cp.status.success(), "{}", both(&cp));
    common::make_writable(keep.path());
    std::fs::remove_dir_all(without_group.join(GROUP_DIR)).unwrap();
    for (parts, expect) in [
        (vec![p1.as_path()], "expected each of the partitions 1/2, 2/2 exactly once, found shares 1/2"),
        (vec![p1.as_path(), p1.as_path(), p2.as_path()], "found shares 1/2, 1/2, 2/2"),
        (
            vec![p1.as_path(), without_group.as_path()],
            "the group's evidence is missing; copy the whole evidence directory, groups/langbot-plugin-0.6.1/ included",
        ),
    ] {
        let (_k, refused) = common::evidence_dir();
        let out = common::merge_output(&refused, &parts);
        assert_eq!(exit_code(&out), i32::from(exit::CANNOT_RUN), "{}", both(&out));
        assert!(stderr_text(&out).contains(expect), "{expect:?} not in {}", stderr_text(&out));
        assert!(!refused.exists(), "nothing is written on refusal");
    }
}
