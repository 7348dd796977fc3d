use super::*;
use crate::evidence::CheckResult;
use std::os::unix::fs::symlink;

const DIR: &str = "/ev/run";

fn names() -> Vec<PathBuf> {
    vec![PathBuf::from(DIR), PathBuf::from("/real/ev/run")]
}

fn gates() -> Vec<String> {
    ["stage", "suites", "discovery-rpc"]
        .map(String::from)
        .to_vec()
}

fn link(path: &str, target: &str) -> Found {
    Found {
        path: path.into(),
        kind: SweptKind::Symlink,
        target: Some(target.into()),
        size: None,
    }
}

/// Places, acts as if every removal worked, and decides.
fn judged(found: Vec<Found>) -> Vec<(Option<String>, Check)> {
    let mut entries = observe(found, &names(), &gates(), &["codex-agent".into()]);
    for e in &mut entries {
        e.action = "removed".into();
    }
    decide(&entries, &[])
}

fn only(found: Found) -> (Option<String>, Check) {
    let mut all = judged(vec![found]);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

#[test]
fn a_link_to_etc_shadow_in_a_tests_home_fails_the_suites_gate() {
    let (gate, c) = only(link("roots/suites/tree/home/shadow", "/etc/shadow"));
    assert_eq!(gate.as_deref(), Some("suites"));
    assert_eq!(c.name, LINKS_CHECK);
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    assert!(
        c.detail
            .contains("DIR/roots/suites/tree/home/shadow (symlink -> /etc/shadow, outside DIR"),
        "{}",
        c.detail
    );
    assert_eq!(c.observed.as_ref().unwrap()["swept"][0]["leaves_dir"], true);
}

#[test]
fn a_link_to_a_file_inside_dir_is_a_warning_as_given_or_resolved_or_relative() {
    for target in [
        "/ev/run/logs/suites/tree.xml",
        "/real/ev/run/staging/source.tar",
        "../../out/x",
        "./x",
        ".",
    ] {
        let (gate, c) = only(link("roots/suites/tree/home/a", target));
        assert_eq!(gate.as_deref(), Some("suites"));
        assert_eq!(c.result, CheckResult::Warn, "{target}: {}", c.detail);
    }
}

#[test]
fn dotdot_that_climbs_out_of_dir_fails_and_dotdot_that_stays_warns() {
    let deep = "roots/suites/tree/home/up";
    let (_, out) = only(link(deep, "../../../../.."));
    assert_eq!(out.result, CheckResult::Fail, "{}", out.detail);
    let (_, escape) = only(link(deep, "../../../../../etc/passwd"));
    assert_eq!(escape.result, CheckResult::Fail);
    let (_, abs) = only(link(deep, "/ev/run/../elsewhere"));
    assert_eq!(abs.result, CheckResult::Fail, "an absolute `..` out of DIR");
    let (_, inside) = only(link(deep, ".."));
    assert_eq!(inside.result, CheckResult::Warn, "{}", inside.detail);
}

#[test]
fn a_path_through_another_link_cannot_be_shown_inside_and_fails() {
    let all = judged(vec![
        link("roots/suites/tree/home/host", "/usr"),
        link("roots/suites/tree/home/via", "host/../../etc"),
    ]);
    let links = BTreeSet::from(["roots/suites/tree/home/host".to_string()]);
    assert!(leaves_dir(
        "roots/suites/tree/home/via",
        "host/bin",
        &names(),
        &links
    ));
    // Naming another link itself (not through it) is judged by its path.
    assert!(!leaves_dir(
        "roots/suites/tree/home/via",
        "host",
        &names(),
        &links
    ));
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].1.result, CheckResult::Fail);
}

#[test]
fn loop_links_are_recorded_by_their_paths_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("roots/suites/tree/home");
    std::fs::create_dir_all(&home).unwrap();
    symlink("loop", home.join("loop")).unwrap();
    symlink("b", home.join("a")).unwrap();
    symlink("a", home.join("b")).unwrap();
    let (found, errors) = walk(dir.path(), SIZE_CAP);
    assert!(errors.is_empty(), "{errors:?}");
    let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "roots/suites/tree/home/a",
            "roots/suites/tree/home/b",
            "roots/suites/tree/home/loop"
        ]
    );
    let (_, c) = only_of(found, dir.path());
    assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
}

fn only_of(found: Vec<Found>, dir: &Path) -> (Option<String>, Check) {
    let mut entries = observe(found, &[dir.to_path_buf()], &gates(), &[]);
    act(dir, &mut entries, SIZE_CAP);
    let mut all = decide(&entries, &[]);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

#[test]
fn a_fifo_is_a_warning_removed_without_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("roots/suites/tree/home");
    std::fs::create_dir_all(&home).unwrap();
    let fifo = home.join("pipe");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let (found, _) = walk(dir.path(), SIZE_CAP);
    assert_eq!(found[0].kind, SweptKind::Fifo);
    let (gate, c) = only_of(found, dir.path());
    assert_eq!(gate.as_deref(), Some("suites"));
    assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
    assert!(
        c.detail
            .contains("DIR/roots/suites/tree/home/pipe (fifo: removed)"),
        "{}",
        c.detail
    );
    assert!(
        std::fs::symlink_metadata(&fifo).is_err(),
        "the FIFO is gone"
    );
}

#[test]
fn the_sweep_removes_links_to_the_host_in_a_read_only_folder_and_leaves_their_targets() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("secret"), "s").unwrap();
    let home = dir
        .path()
        .join("roots/discovery-rpc/probes/codex-agent/home");
    std::fs::create_dir_all(&home).unwrap();
    symlink(host.path().join("secret"), home.join("sessions")).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o555)).unwrap();
    let (found, _) = walk(dir.path(), SIZE_CAP);
    let mut entries = observe(
        found,
        &[dir.path().to_path_buf()],
        &gates(),
        &["codex-agent".into()],
    );
    act(dir.path(), &mut entries, SIZE_CAP);
    assert_eq!(entries[0].action, "removed");
    assert_eq!(entries[0].candidate.as_deref(), Some("codex-agent"));
    assert!(std::fs::symlink_metadata(home.join("sessions")).is_err());
    assert_eq!(
        std::fs::read_to_string(host.path().join("secret")).unwrap(),
        "s"
    );
    let checks = decide(&entries, &[]);
    assert_eq!(checks[0].0.as_deref(), Some("discovery-rpc"));
    assert_eq!(checks[0].1.result, CheckResult::Fail);
    assert_eq!(checks[0].1.candidate.as_deref(), Some("codex-agent"));
}

#[test]
fn an_oversized_file_in_a_root_is_cut_and_warned_and_one_outside_roots_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("roots/suites/tree/home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(dir.path().join("wheelhouse")).unwrap();
    std::fs::write(home.join("big"), vec![7u8; 100]).unwrap();
    std::fs::write(home.join("small"), vec![7u8; 10]).unwrap();
    std::fs::write(dir.path().join("wheelhouse/big.whl"), vec![7u8; 100]).unwrap();
    let (found, _) = walk(dir.path(), 16);
    assert_eq!(found.len(), 1, "{found:?}");
    let mut entries = observe(found, &[dir.path().to_path_buf()], &gates(), &[]);
    act(dir.path(), &mut entries, 16);
    assert_eq!(entries[0].size, Some(100));
    assert_eq!(entries[0].action, "truncated to 16 bytes");
    assert_eq!(std::fs::metadata(home.join("big")).unwrap().len(), 16);
    assert_eq!(
        std::fs::metadata(dir.path().join("wheelhouse/big.whl"))
            .unwrap()
            .len(),
        100
    );
    let c = &decide(&entries, &[])[0].1;
    assert_eq!((c.name.as_str(), c.result), (SIZE_CHECK, CheckResult::Warn));
}

#[test]
fn places_name_the_gate_whose_folder_held_an_entry_and_nothing_else() {
    let g = gates();
    assert_eq!(gate_of("roots/suites/x", &g).as_deref(), Some("suites"));
    assert_eq!(
        gate_of("logs/discovery-rpc/a", &g).as_deref(),
        Some("discovery-rpc")
    );
    assert_eq!(gate_of("staging/source/a", &g).as_deref(), Some("stage"));
    assert_eq!(gate_of("roots/not-a-gate/x", &g), None);
    assert_eq!(gate_of("groups/x/y", &g), None);
    assert_eq!(gate_of("top-level-link", &g), None);
    let c = ["codex-agent".to_string()];
    assert_eq!(
        candidate_of("roots/suites/codex-agent/tree/h", &c).as_deref(),
        Some("codex-agent")
    );
    assert_eq!(
        candidate_of("roots/suites/tree/home/codex-agent", &c),
        None,
        "the entry's own name"
    );
}

#[test]
fn a_folder_the_walk_cannot_read_fails_the_run() {
    let c = decide(&[], &["cannot walk: permission denied".into()]);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, None);
    assert_eq!(c[0].1.result, CheckResult::Fail);
}

#[test]
fn nothing_found_is_no_check() {
    assert!(decide(&[], &[]).is_empty());
}

/// Attack round on issue 35.3: pytest's own `<prefix>current` links beside
/// its numbered `tmp_path` folders (absolute, to the sibling) are removed
/// and recorded but make no check, so a good commit whose tests use
/// `tmp_path` can still be PASSED; the same name leading anywhere else is
/// judged as any link.
#[test]
fn pytests_own_current_links_make_no_check_and_lookalikes_still_do() {
    let tmp = "roots/suites/tree/tmp/pytest-of-root";
    let pytest = vec![
        link(
            &format!("{tmp}/pytest-current"),
            &format!("{DIR}/{tmp}/pytest-0"),
        ),
        link(
            &format!("{tmp}/pytest-0/test_writes_a_filecurrent"),
            &format!("/real/ev/run/{tmp}/pytest-0/test_writes_a_file12"),
        ),
        link("roots/suites/tree/tmp/xcurrent", "x3"),
    ];
    let none = judged(pytest);
    assert!(none.is_empty(), "{none:?}");

    let (_, out) = only(link(&format!("{tmp}/pytest-current"), "/etc/pytest-0"));
    assert_eq!(out.result, CheckResult::Fail, "{}", out.detail);
    let (_, up) = only(link(
        &format!("{tmp}/pytest-current"),
        &format!("{DIR}/roots/pytest-0"),
    ));
    assert_eq!(up.result, CheckResult::Warn, "{}", up.detail);
    let (_, other) = only(link(&format!("{tmp}/pytest-current"), "pytest-x"));
    assert_eq!(other.result, CheckResult::Warn, "{}", other.detail);
    let (_, dots) = only(link(&format!("{tmp}/pytest-current"), "../pytest-0"));
    assert_eq!(dots.result, CheckResult::Warn, "{}", dots.detail);
}

/// Attack round on issue 35.3: a test run without bubblewrap hard-links a
/// large file of the host (the user's own, same filesystem) into its HOME.
/// It is a regular file under DIR/roots over the cap; cutting it to the cap
/// would cut the host's file too (one inode). The sweep must never change a
/// file outside DIR: the name in DIR is removed instead, the host's file
/// keeps every byte.
#[test]
fn an_oversized_hard_link_to_a_host_file_is_removed_never_cut() {
    let host = tempfile::tempdir().unwrap();
    let victim = host.path().join("disk.img");
    std::fs::write(&victim, vec![7u8; 100]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("roots/suites/tree/home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::hard_link(&victim, home.join("disk.img")).unwrap();
    let (found, _) = walk(dir.path(), 16);
    let mut entries = observe(found, &[dir.path().to_path_buf()], &gates(), &[]);
    act(dir.path(), &mut entries, 16);
    assert_eq!(
        std::fs::metadata(&victim).unwrap().len(),
        100,
        "{entries:?}"
    );
    assert!(!home.join("disk.img").exists(), "{entries:?}");
    assert!(entries[0].action.starts_with("removed"), "{entries:?}");
}

/// Attack round on issue 35.3: without bubblewrap a test hard-links a host
/// file (`/etc/passwd`, the user's own files) into its HOME: a regular file,
/// no symlink, that an upload carries as the host's bytes. Its link count
/// exceeds the names DIR holds for it: a hard link out, removed (the host's
/// file untouched) and failing the gate. Two names both inside DIR (a cache
/// hard-linked into a venv of a root) are no entry.
#[test]
fn a_hard_link_to_a_host_file_fails_and_is_removed_and_one_inside_dir_is_nothing() {
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("passwd");
    std::fs::write(&secret, b"root:x:0:0\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("roots/suites/tree/home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::hard_link(&secret, home.join("passwd")).unwrap();
    std::fs::write(home.join("cached.py"), b"x = 1\n").unwrap();
    std::fs::hard_link(home.join("cached.py"), home.join("venv.py")).unwrap();
    let (found, errors) = walk(dir.path(), 1 << 20);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(found.len(), 1, "{found:?}");
    let mut entries = observe(found, &[dir.path().to_path_buf()], &gates(), &[]);
    assert_eq!(entries[0].kind, SweptKind::HardLink);
    assert!(entries[0].leaves_dir);
    act(dir.path(), &mut entries, 1 << 20);
    assert_eq!(entries[0].action, "removed");
    assert!(!home.join("passwd").exists());
    assert_eq!(std::fs::read(&secret).unwrap(), b"root:x:0:0\n");
    let checks = decide(&entries, &[]);
    assert_eq!(checks.len(), 1, "{checks:?}");
    let (gate, c) = &checks[0];
    assert_eq!(gate.as_deref(), Some("suites"));
    assert_eq!(
        (c.name.as_str(), c.result),
        (LINKS_CHECK, CheckResult::Fail)
    );
    assert!(
        c.detail.contains(
            "DIR/roots/suites/tree/home/passwd (hard-link, another name of the same file is \
                 outside DIR, 11 bytes: removed)"
        ),
        "{}",
        c.detail
    );
}

/// Attack round on issue 35.3: a test names its link to a host file with
/// bytes that are not UTF-8 (`shadow\xff`). The sweep must still remove it
/// (the evidence records the name lossily), so that the sealed directory
/// holds only regular files and folders.
#[test]
fn a_link_whose_name_is_not_utf8_is_removed_all_the_same() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("roots/suites/tree/home");
    std::fs::create_dir_all(&home).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"shadow\xff");
    symlink("/etc/shadow", home.join(name)).unwrap();
    let (found, errors) = walk(dir.path(), 1 << 20);
    assert!(errors.is_empty(), "{errors:?}");
    let mut entries = observe(found, &[dir.path().to_path_buf()], &gates(), &[]);
    act(dir.path(), &mut entries, 1 << 20);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].action, "removed", "{entries:?}");
    assert!(std::fs::symlink_metadata(home.join(name)).is_err());
}

/// The links the SDK's shared runtime makes in each worker's jail root as
/// copies of the machine's own (`root/bin -> usr/bin` on a merged-/usr
/// system) make no check; a lookalike with another target, name or place
/// still does.
#[test]
fn the_sdk_jail_roots_copies_of_the_machines_links_make_no_check_and_lookalikes_still_do() {
    let root = format!(
        "roots/shared-runtime/work/p/data/plugin-runtime/shared-workers/{}/root",
        "ab".repeat(32)
    );
    let machine = |p: &str| (p == "/bin").then(|| "usr/bin".to_string());
    let entry = |path: String, target: &str| SweptEntry {
        path,
        kind: SweptKind::Symlink,
        target: Some(target.into()),
        leaves_dir: false,
        gate: Some("shared-runtime".into()),
        candidate: Some("p".into()),
        size: None,
        action: "removed".into(),
    };
    assert!(is_sdk_jail_mirror(
        &entry(format!("{root}/bin"), "usr/bin"),
        machine
    ));
    for (path, target) in [
        (format!("{root}/bin"), "/etc"),
        (format!("{root}/etc"), "usr/bin"),
        (format!("{root}/x/bin"), "usr/bin"),
        (
            format!(
                "roots/suites/data/plugin-runtime/shared-workers/{}/root/bin",
                "ab".repeat(32)
            ),
            "usr/bin",
        ),
        (root.replace("abab", "ABAB") + "/bin", "usr/bin"),
    ] {
        assert!(
            !is_sdk_jail_mirror(&entry(path.clone(), target), machine),
            "{path} -> {target}"
        );
    }
    let mut kept = entry(format!("{root}/bin"), "usr/bin");
    kept.action = "not removed: EPERM".into();
    assert!(!is_sdk_jail_mirror(&kept, machine));
    // On this machine, through decide: a link equal to the machine's own
    // /bin makes no check; one to another place warns.
    if let Some(own) = machine_link("/bin") {
        let checks = decide(&[entry(format!("{root}/bin"), &own)], &[]);
        assert!(checks.is_empty(), "{checks:?}");
    }
    let checks = decide(&[entry(format!("{root}/bin"), "usr/not-bin")], &[]);
    assert_eq!(checks.len(), 1, "{checks:?}");
}
