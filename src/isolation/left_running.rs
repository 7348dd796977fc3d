//! What a sandboxed step left running: the processes still in its pid
//! namespace when its first process exited.
//!
//! bwrap's own init ends the namespace as soon as the step exits, killing
//! whatever the step left behind before anyone outside can see it. A
//! surveyed step therefore runs under [`INIT`] instead (`bwrap --as-pid-1`):
//! a small Python init, pid 1 of the namespace, that starts the step as its
//! child (pid 2, parent pid 1, the session and process group of pid 1,
//! every signal at its default: as under bwrap's init), reaps orphans, and
//! when the step exits writes every process still there to a JSON report,
//! then exits with the step's status as bwrap's init gives it (the exit
//! code, or 128 + the signal). Its exit ends the namespace.
//!
//! The report is written inside the sandbox, so code under review that
//! means to could rewrite it; a missing or unreadable report is never read
//! as "nothing left running".

use crate::evidence::sandbox::{LeftProcess, LeftRunning};
use crate::evidence::Check;
use crate::profile::LeftRunningPolicy as Policy;
use serde::Deserialize;
use std::path::Path;

/// The init's source, run as `python -I -S -B -c INIT REPORT PROGRAM ARGS...`.
pub const INIT: &str = include_str!("sandbox_init.py");

#[derive(Deserialize)]
struct Report {
    left_running: Vec<LeftProcess>,
}

/// Reads and removes the init's report at `path`.
pub fn read(path: &Path) -> LeftRunning {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) => {
            return LeftRunning::NotSurveyed {
                why: format!("the sandbox's init wrote no report {}: {e}", path.display()),
            }
        }
    };
    let _ = std::fs::remove_file(path);
    match serde_json::from_slice::<Report>(&text) {
        Ok(r) => LeftRunning::Surveyed {
            processes: r.left_running,
        },
        Err(e) => LeftRunning::NotSurveyed {
            why: format!("{}: not the init's report: {e}", path.display()),
        },
    }
}

/// Keeps `found` at `path` (the evidence's logs), for `replay`.
///
/// # Errors
/// A sentence naming the path.
pub fn keep(found: &LeftRunning, path: &Path) -> Result<(), String> {
    let text = serde_json::to_vec_pretty(found).expect("the survey serialises");
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// What [`keep`] kept at `path`; `None` when nothing is kept there (the
/// step ran unconfined), a [`LeftRunning::NotSurveyed`] naming it when it
/// cannot be read.
pub fn kept(path: &Path) -> Option<LeftRunning> {
    let text = std::fs::read(path).ok()?;
    Some(
        serde_json::from_slice(&text).unwrap_or_else(|e| LeftRunning::NotSurveyed {
            why: format!("{}: not a kept survey: {e}", path.display()),
        }),
    )
}

/// Removes a report an earlier run left at `path`, so that it never stands
/// for this one.
///
/// # Errors
/// A sentence naming the path.
pub fn clear(path: &Path) -> Result<(), String> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// One process, for a check's detail.
pub fn describe(p: &LeftProcess) -> String {
    format!(
        "pid {} (parent {}, session {}, alive {:.1} s): {}",
        p.pid,
        p.ppid,
        p.sid,
        p.ms_alive as f64 / 1000.0,
        if p.cmdline.is_empty() {
            "(no command line)"
        } else {
            &p.cmdline
        }
    )
}

/// The `left-running` check of a step (`name`, e.g. `tree/left-running`;
/// `step` says what ran): a pass when the survey found nothing; the
/// processes named, a failure or a warning by `policy`, when it found
/// some; a warning when there was no survey to read.
pub fn check(
    name: &str,
    candidate: Option<&str>,
    step: &str,
    found: &LeftRunning,
    policy: Policy,
) -> Check {
    let observed = serde_json::to_value(found).unwrap_or_default();
    match found {
        LeftRunning::Surveyed { processes } if processes.is_empty() => Check::pass(
            name,
            candidate,
            format!("{step} left no process running in its sandbox when it exited"),
        ),
        LeftRunning::Surveyed { processes } => {
            let listed: Vec<String> = processes.iter().map(describe).collect();
            let detail = format!(
                "{step} left {} process(es) running in its sandbox when it exited, expected none: {}; \
                 the sandbox killed them, but outside one they would have outlived the run: stop every \
                 process the tests start (a fixture's teardown), or set `left_running = \"warn\"` in the \
                 profile to report this as a warning",
                processes.len(),
                listed.join("; ")
            );
            match policy {
                Policy::Fail => Check::fail(name, candidate, detail),
                Policy::Warn => Check::warn(name, candidate, detail),
            }
        }
        LeftRunning::NotSurveyed { why } => Check::warn(
            name,
            candidate,
            format!(
                "{step}: what it left running was not surveyed ({why}); expected the sandbox's init's \
                 report: a step that was stopped (time limit, interrupt) ends with its sandbox"
            ),
        ),
    }
    .with_observed(observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    fn daemon() -> LeftProcess {
        LeftProcess {
            pid: 7,
            ppid: 1,
            pgid: 6,
            sid: 6,
            state: "S".into(),
            cmdline: "sleep 300".into(),
            ms_alive: 2500,
        }
    }

    /// Runs `/usr/bin/python3 -c code` in a sandbox (private root `dir`),
    /// surveyed into `report` or under bwrap's own init: its stdout and
    /// how it ended.
    fn sandboxed(dir: &Path, code: &str, report: Option<&Path>) -> (String, Option<i32>) {
        use crate::evidence::sandbox::Network;
        use crate::isolation::sandbox::{self, Availability, SandboxPlan};
        use crate::process::{self, ChildSpec};
        let Availability::Bwrap(_) = sandbox::availability(&dir.join("preflight")) else {
            panic!("bubblewrap is required for this test (Debian: apt-get install bubblewrap)");
        };
        let spec = ChildSpec {
            program: "/usr/bin/python3".into(),
            args: vec!["-I".into(), "-c".into(), code.into()],
            cwd: dir.to_path_buf(),
            env: process::base_env(),
            timeout: std::time::Duration::from_secs(60),
            log_stem: dir.join(format!("step-{}", report.is_some())),
            stdin: None,
        };
        let plan = SandboxPlan {
            read_only: Vec::new(),
            writable: vec![dir.to_path_buf()],
            network: Network::PrivateLoopback,
            survey: report.map(Path::to_path_buf),
        };
        let (spec, record) = sandbox::confine(spec, &plan, sandbox::availability(dir));
        assert!(record.confined());
        let out = process::run_sandboxed(&spec).expect("the sandbox runs");
        (out.stdout_text().trim().to_string(), out.status.code())
    }

    #[test]
    fn under_the_surveying_init_the_step_sees_and_ends_as_under_bwraps_own() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        // Its pid, parent, group, session, and the signals ignored, blocked
        // and caught as its interpreter starts (from /proc).
        let view = "import os\n\
            masks = [l.split()[1] for l in open('/proc/self/status') if l.split(':')[0] in ('SigBlk', 'SigIgn', 'SigCgt')]\n\
            print(os.getpid(), os.getppid(), os.getpgrp(), os.getsid(0), *masks)";
        let plain = sandboxed(dir.path(), view, None);
        assert!(plain.0.starts_with("2 1 1 1 "), "{plain:?}");
        assert_eq!(plain.1, Some(0));
        assert_eq!(sandboxed(dir.path(), view, Some(&report)), plain);
        // A signal death: 128 + the signal under both inits.
        let killed = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)";
        let plain = sandboxed(dir.path(), killed, None);
        assert_eq!(plain.1, Some(143));
        assert_eq!(sandboxed(dir.path(), killed, Some(&report)), plain);
        let exit3 = "raise SystemExit(3)";
        assert_eq!(sandboxed(dir.path(), exit3, Some(&report)).1, Some(3));
        assert_eq!(read(&report), LeftRunning::Surveyed { processes: vec![] });
        // A double-forked daemon is listed, an orphan of the init in a
        // session of its own.
        let daemon = "import os\n\
            if os.fork() == 0:\n    os.setsid()\n    \
            if os.fork() == 0:\n        os.execv('/bin/sleep', ['sleep', '302'])\n    os._exit(0)\n\
            os.wait()\nimport time; time.sleep(0.5)";
        assert_eq!(sandboxed(dir.path(), daemon, Some(&report)).1, Some(0));
        let LeftRunning::Surveyed { processes } = read(&report) else {
            panic!("no survey");
        };
        assert_eq!(processes.len(), 1, "{processes:?}");
        assert_eq!(
            (processes[0].ppid, processes[0].cmdline.as_str()),
            (1, "sleep 302")
        );
        assert_ne!(processes[0].sid, 1);
    }

    #[test]
    fn nothing_left_passes() {
        let found = LeftRunning::Surveyed {
            processes: Vec::new(),
        };
        let c = check(
            "tree/left-running",
            None,
            "the tree run",
            &found,
            Policy::Fail,
        );
        assert_eq!(c.result, CheckResult::Pass);
    }

    #[test]
    fn a_daemon_left_fails_naming_it_or_warns_by_policy_never_passes() {
        let found = LeftRunning::Surveyed {
            processes: vec![daemon()],
        };
        let c = check(
            "tree/left-running",
            None,
            "the tree run",
            &found,
            Policy::Fail,
        );
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("pid 7 (parent 1, session 6, alive 2.5 s): sleep 300"),
            "{}",
            c.detail
        );
        let w = check(
            "tree/left-running",
            None,
            "the tree run",
            &found,
            Policy::Warn,
        );
        assert_eq!(w.result, CheckResult::Warn);
        assert_eq!(w.detail, c.detail);
    }

    #[test]
    fn no_report_is_a_warning_not_a_pass() {
        let dir = tempfile::tempdir().unwrap();
        let found = read(&dir.path().join("missing.json"));
        assert!(matches!(found, LeftRunning::NotSurveyed { .. }));
        let c = check(
            "tree/left-running",
            None,
            "the tree run",
            &found,
            Policy::Warn,
        );
        assert_eq!(c.result, CheckResult::Warn);
        std::fs::write(dir.path().join("bad.json"), "{}").unwrap();
        assert!(matches!(
            read(&dir.path().join("bad.json")),
            LeftRunning::NotSurveyed { .. }
        ));
    }

    #[test]
    fn the_init_report_is_read_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(
            &path,
            r#"{"leader_pid": 2, "left_running": [{"pid": 7, "ppid": 1, "pgid": 6, "sid": 6,
                "state": "S", "cmdline": "sleep 300", "ms_alive": 2500}]}"#,
        )
        .unwrap();
        assert_eq!(
            read(&path),
            LeftRunning::Surveyed {
                processes: vec![daemon()]
            }
        );
        assert!(!path.exists());
        let kept_at = dir.path().join("kept.json");
        assert_eq!(kept(&kept_at), None);
        keep(&read(&dir.path().join("missing.json")), &kept_at).unwrap();
        assert!(matches!(
            kept(&kept_at),
            Some(LeftRunning::NotSurveyed { .. })
        ));
    }
}
