//! The residue survey on a small program of its own: this test binary plays
//! the harness (it holds one test, so nothing else in it starts children
//! meanwhile). A step run through `process::run` starts two grandchildren in
//! sessions of their own (`setsid`), one of them deaf to SIGTERM, and exits:
//! stopping the step's process group cannot reach them. As child subreaper the
//! harness inherits both, and `residue::sweep` finds, stops and reaps them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use verify_coding_candidates::process::procfs;
use verify_coding_candidates::process::{self, residue, ChildSpec};

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn grandchildren_that_left_their_group_are_found_stopped_and_reaped() {
    residue::become_subreaper().expect("PR_SET_CHILD_SUBREAPER");
    let me = std::process::id() as i32;
    let dir = tempfile::tempdir().unwrap();
    // Each grandchild writes its pid once it is in its own session, then
    // becomes `sleep`; the step exits once both pid files are written.
    let script = r#"
        setsid sh -c 'echo $$ > obeys.pid.tmp && mv obeys.pid.tmp obeys.pid && exec sleep 600' &
        setsid sh -c 'trap "" TERM; echo $$ > deaf.pid.tmp && mv deaf.pid.tmp deaf.pid && exec sleep 601' &
        while [ ! -e obeys.pid ] || [ ! -e deaf.pid ]; do sleep 0.01; done
    "#;
    let out = process::run(&ChildSpec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: dir.path().to_path_buf(),
        env: process::base_env(),
        timeout: Duration::from_secs(120),
        log_stem: dir.path().join("logs/step"),
        stdin: None,
    })
    .unwrap();
    assert!(out.success(), "{}", out.tail(10));
    assert!(
        !out.stragglers_killed,
        "the grandchildren left the step's group, so its sweep did not see them"
    );
    let obeys = read_pid(&dir.path().join("obeys.pid"));
    let deaf = read_pid(&dir.path().join("deaf.pid"));

    // Their parent (the step) exited: they were re-parented to the harness,
    // not to init, and the survey walks down to them.
    let alive: BTreeMap<i32, procfs::ProcInfo> = residue::descendants()
        .into_iter()
        .map(|p| (p.pid, p))
        .collect();
    for pid in [obeys, deaf] {
        let p = alive
            .get(&pid)
            .unwrap_or_else(|| panic!("{pid} not found among {alive:?}"));
        assert_eq!(p.ppid, me, "{p:?}");
        assert_eq!(p.sid, pid, "in a session of its own: {p:?}");
    }
    let seen: Vec<procfs::ProcInfo> = [obeys, deaf].iter().map(|p| alive[p].clone()).collect();

    let found = residue::sweep(process::GRACE);
    let by_pid: BTreeMap<i32, &residue::Residue> = found.iter().map(|r| (r.pid, r)).collect();
    assert_eq!(
        by_pid.keys().copied().collect::<Vec<_>>(),
        {
            let mut v = vec![obeys, deaf];
            v.sort();
            v
        },
        "{found:#?}"
    );
    assert_eq!(by_pid[&obeys].cmdline, "sleep 600");
    assert_eq!(by_pid[&obeys].stopped_by, "TERM");
    assert_eq!(by_pid[&deaf].cmdline, "sleep 601");
    assert_eq!(by_pid[&deaf].stopped_by, "KILL");
    for r in &found {
        assert_eq!(r.ppid, me);
        let check = r.check();
        assert_eq!(check.name, residue::CHECK);
        assert!(
            check.detail.starts_with(&format!(
                "pid {} `{}` was still running after the gate finished (its parent had exited and \
                 it was re-parented to the harness",
                r.pid, r.cmdline
            )),
            "{}",
            check.detail
        );
    }

    // Reaped, not left as zombies: the process of that pid and start time is
    // gone from /proc (a reused pid has another start time).
    for p in &seen {
        assert!(
            procfs::read(p.pid).is_none_or(|now| now.start_time != p.start_time),
            "{} is still in /proc: {:?}",
            p.pid,
            procfs::read(p.pid)
        );
    }
    assert!(residue::descendants().is_empty());
    assert!(residue::sweep(process::GRACE).is_empty());
}
