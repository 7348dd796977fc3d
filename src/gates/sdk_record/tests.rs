use super::bytecode::Root;
use super::*;

const DIST: &str = "demo-1.0.dist-info";

#[test]
fn a_missing_sdk_is_answered_with_cargo_xtask_sdk_for_the_builtin_pin() {
    let probe = SdkProbe {
        executable: "/usr/bin/python3".into(),
        python_version: "3.11.2".into(),
        scripts_dir: None,
        version: None,
        dist_info: None,
        site_packages: None,
        console_scripts: Vec::new(),
        package_dir: None,
        error: Some("No package metadata was found for langbot-plugin".into()),
    };
    let c = version_check(&probe, "0.6.0b5", "/usr/bin/python3");
    assert_eq!(c.result, crate::evidence::CheckResult::Fail);
    assert!(
        c.detail.contains("`cargo xtask sdk`")
            && c.detail.contains("target/sdk-venv")
            && c.detail.contains("--python")
            && c.detail
                .contains("`/usr/bin/python3 -m pip install langbot-plugin==0.6.0b5`"),
        "{}",
        c.detail
    );
    // `cargo xtask sdk` provisions the built-in pin only: another pin gets pip.
    let other = install_advice("/usr/bin/python3", "0.6.0b4");
    assert!(!other.contains("cargo xtask sdk"), "{other}");
    assert!(
        other.contains("`/usr/bin/python3 -m pip install langbot-plugin==0.6.0b4`"),
        "{other}"
    );
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes))
}

fn parse(text: &str) -> ParsedRecord {
    parse_record(text.as_bytes(), DIST)
}

/// A fake site-packages with `pkg/a.py`, `pkg/b.py`, the dist-info and a script.
struct Site {
    _root: tempfile::TempDir,
    layout: RecordLayout,
}

fn site() -> Site {
    let root = tempfile::tempdir().unwrap();
    let sp = root.path().join("lib/python3.11/site-packages");
    std::fs::create_dir_all(sp.join("pkg/__pycache__")).unwrap();
    std::fs::create_dir_all(sp.join(DIST)).unwrap();
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    std::fs::write(sp.join("pkg/a.py"), b"print('a')\n").unwrap();
    std::fs::write(sp.join("pkg/b.py"), b"b = 2\n").unwrap();
    std::fs::write(sp.join("pkg/__pycache__/a.cpython-311.pyc"), b"\0").unwrap();
    std::fs::write(sp.join(DIST).join("RECORD"), b"").unwrap();
    std::fs::write(root.path().join("bin/demo"), b"#!python\n").unwrap();
    let layout = RecordLayout {
        site_packages: sp,
        scripts_dir: Some(root.path().join("bin")),
        console_scripts: vec!["demo".into()],
    };
    Site {
        _root: root,
        layout,
    }
}

fn good_record() -> String {
    format!(
        "pkg/a.py,sha256={},11\npkg/b.py,sha256={},6\npkg/__pycache__/a.cpython-311.pyc,,\n../../../bin/demo,sha256={},9\n{DIST}/RECORD,,\n",
        b64(b"print('a')\n"),
        b64(b"b = 2\n"),
        b64(b"#!python\n")
    )
}

#[test]
fn a_genuine_record_verifies_every_hashed_row() {
    let s = site();
    let parsed = parse(&good_record());
    assert!(parsed.malformed.is_empty(), "{:?}", parsed.malformed);
    assert_eq!(parsed.total_rows, 5);
    let report = verify_rows(&s.layout, &parsed.rows);
    assert_eq!(report.hashed_verified, 3);
    assert_eq!(report.unhashed, 2);
    assert!(
        report.escaping.is_empty() && report.mismatches.is_empty() && report.missing.is_empty()
    );
    let roots = [
        s.layout.site_packages.join("pkg"),
        s.layout.site_packages.join(DIST),
    ];
    assert!(unlisted_files(&roots, &report.listed).unlisted.is_empty());
}

#[test]
fn wrong_field_counts_are_malformed_with_their_row() {
    let p = parse(&format!(
        "pkg/a.py,sha256={}\npkg/b.py,sha256={},6,extra\n",
        b64(b"x"),
        b64(b"y")
    ));
    assert_eq!(p.malformed.len(), 2, "{:?}", p.malformed);
    assert!(
        p.malformed[0].starts_with("row 1 (pkg/a.py): expected 3 fields"),
        "{}",
        p.malformed[0]
    );
    assert!(
        p.malformed[1].starts_with("row 2 (pkg/b.py): expected 3 fields"),
        "{}",
        p.malformed[1]
    );
    // The rows' paths are kept, so their files are judged under the row.
    assert_eq!(
        p.malformed_paths,
        [(1, "pkg/a.py".to_string()), (2, "pkg/b.py".to_string())]
    );
    // A row with no path has no file to judge.
    let p = parse(",sha256=x\n");
    assert_eq!(p.malformed.len(), 1, "{:?}", p.malformed);
    assert!(p.malformed_paths.is_empty(), "{:?}", p.malformed_paths);
}

#[test]
fn unknown_algorithms_are_malformed() {
    let p = parse("pkg/a.py,sha=abc,3\npkg/b.py,md5=XUFAKrxLKna5cZ2REBfFkg,3\npkg/c.py,abc,3\n");
    assert_eq!(p.malformed.len(), 3);
    assert!(
        p.malformed[0].contains("row 1 (pkg/a.py): unknown hash algorithm \"sha\""),
        "{}",
        p.malformed[0]
    );
    assert!(
        p.malformed[1].contains("row 2 (pkg/b.py): unknown hash algorithm \"md5\""),
        "{}",
        p.malformed[1]
    );
    assert!(
        p.malformed[2].contains("row 3 (pkg/c.py): hash \"abc\" is not"),
        "{}",
        p.malformed[2]
    );
    assert!(p.rows.is_empty());
}

#[test]
fn a_hex_digest_is_malformed() {
    let hex = crate::hash::sha256_bytes(b"x");
    let p = parse(&format!("pkg/a.py,sha256={hex},1\n"));
    assert_eq!(p.malformed.len(), 1);
    assert!(
        p.malformed[0].contains("row 1 (pkg/a.py): hex digest"),
        "{}",
        p.malformed[0]
    );
    assert!(
        p.malformed[0].contains("expected urlsafe base64"),
        "{}",
        p.malformed[0]
    );
}

#[test]
fn padded_short_and_non_base64_digests_are_malformed() {
    let padded = format!("{}=", b64(b"x"));
    let p = parse(&format!(
        "pkg/a.py,sha256={padded},1\npkg/b.py,sha256=AAAA,1\npkg/c.py,sha256=+/+/{},1\n",
        &b64(b"x")[4..]
    ));
    assert_eq!(p.malformed.len(), 3, "{:?}", p.malformed);
    assert!(
        p.malformed[0].starts_with("row 1 (pkg/a.py): digest"),
        "{}",
        p.malformed[0]
    );
    assert!(
        p.malformed[1].contains("decodes to 3 bytes"),
        "{}",
        p.malformed[1]
    );
    assert!(
        p.malformed[2].starts_with("row 3 (pkg/c.py): digest"),
        "{}",
        p.malformed[2]
    );
}

#[test]
fn negative_and_non_numeric_sizes_are_malformed() {
    let d = b64(b"x");
    let p = parse(&format!(
        "pkg/a.py,sha256={d},-1\npkg/b.py,sha256={d},1.5\npkg/c.py,sha256={d},\n"
    ));
    assert_eq!(p.malformed.len(), 3);
    assert!(
        p.malformed[0].contains("row 1 (pkg/a.py): negative size -1"),
        "{}",
        p.malformed[0]
    );
    assert!(
        p.malformed[1].contains("row 2 (pkg/b.py): size \"1.5\""),
        "{}",
        p.malformed[1]
    );
    assert!(
        p.malformed[2].contains("row 3 (pkg/c.py): hash"),
        "{}",
        p.malformed[2]
    );
    // `-0` is no size a writer produces, but it is not negative either.
    let p = parse(&format!("pkg/a.py,sha256={d},-0\n"));
    assert!(
        p.malformed[0].contains("row 1 (pkg/a.py): size \"-0\" is not a non-negative integer"),
        "{:?}",
        p.malformed
    );
}

#[test]
fn only_record_and_pyc_rows_may_omit_the_hash() {
    let p = parse(&format!(
        "{DIST}/RECORD,,\npkg/x.pyc,,\npkg/a.py,,\nother/RECORD,,\n"
    ));
    assert_eq!(p.rows.len(), 2);
    assert_eq!(p.malformed.len(), 2);
    assert!(
        p.malformed[0].starts_with("row 3 (pkg/a.py): no hash"),
        "{}",
        p.malformed[0]
    );
    assert!(
        p.malformed[1].starts_with("row 4 (other/RECORD): no hash"),
        "{}",
        p.malformed[1]
    );
}

#[test]
fn a_path_listed_twice_is_malformed() {
    let p = parse(&format!("{DIST}/RECORD,,\n{DIST}/RECORD,,\n"));
    assert!(p.malformed[0].starts_with("row 2"), "{:?}", p.malformed);
}

#[test]
fn blank_lines_are_not_rows() {
    let p = parse(&format!("\n{DIST}/RECORD,,\n\n"));
    assert_eq!(p.total_rows, 1);
    assert!(p.malformed.is_empty());
}

#[test]
fn escaping_paths_fail_unless_they_are_console_scripts() {
    let s = site();
    let record = format!(
        "../../../bin/demo,sha256={},9\n../../../bin/other,sha256={},1\npkg/../../escape.py,sha256={},1\n/etc/passwd,sha256={},1\n",
        b64(b"#!python\n"),
        b64(b"x"),
        b64(b"x"),
        b64(b"x")
    );
    let parsed = parse(&record);
    assert!(parsed.malformed.is_empty());
    let report = verify_rows(&s.layout, &parsed.rows);
    assert_eq!(report.hashed_verified, 1);
    assert_eq!(report.escaping.len(), 3, "{:?}", report.escaping);
    assert!(
        report.escaping[0].starts_with("row 2 (../../../bin/other): path"),
        "{}",
        report.escaping[0]
    );
    assert!(
        report.escaping[1].starts_with("row 3 (pkg/../../escape.py)"),
        "{}",
        report.escaping[1]
    );
    assert!(
        report.escaping[2].starts_with("row 4 (/etc/passwd)"),
        "{}",
        report.escaping[2]
    );
    // A `..` that stays inside site-packages is fine.
    assert!(resolve_row_path(&s.layout, "pkg/../pkg/a.py").is_ok());
}

#[test]
fn a_site_packages_spelled_with_dot_dot_holds_its_own_files_and_no_others() {
    let mut s = site();
    let sp = s.layout.site_packages.clone();
    let (root, rest) = (
        sp.ancestors().nth(3).unwrap(),
        sp.strip_prefix(sp.ancestors().nth(3).unwrap()).unwrap(),
    );
    // `<root>/bin/../lib/python3.11/site-packages`: the same folder.
    s.layout.site_packages = root.join("bin").join("..").join(rest);
    assert_eq!(
        resolve_row_path(&s.layout, "pkg/a.py").unwrap(),
        sp.join("pkg/a.py")
    );
    let e = resolve_row_path(&s.layout, "../../../escape.py").unwrap_err();
    assert!(e.contains("outside site-packages"), "{e}");
}

#[test]
fn a_console_script_counts_in_a_scripts_directory_spelled_through_a_symlink() {
    let mut s = site();
    let root = s
        .layout
        .site_packages
        .ancestors()
        .nth(3)
        .unwrap()
        .to_path_buf();
    std::os::unix::fs::symlink(root.join("bin"), root.join("bin-link")).unwrap();
    std::fs::write(root.join("bin/other"), b"x").unwrap();
    // The interpreter names the scripts directory through the link; RECORD
    // names the real one.
    s.layout.scripts_dir = Some(root.join("bin-link"));
    assert_eq!(
        resolve_row_path(&s.layout, "../../../bin/demo").unwrap(),
        root.join("bin/demo")
    );
    // The same directory, a file that is not a console script.
    let e = resolve_row_path(&s.layout, "../../../bin/other").unwrap_err();
    assert!(e.contains("is not a console script (demo)"), "{e}");
    // A console script's name in another directory.
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    assert!(resolve_row_path(&s.layout, "../../../elsewhere/demo").is_err());
}

#[test]
fn changed_bytes_of_equal_size_are_a_digest_mismatch() {
    let s = site();
    std::fs::write(s.layout.site_packages.join("pkg/a.py"), b"print('b')\n").unwrap();
    let report = verify_rows(&s.layout, &parse(&good_record()).rows);
    assert_eq!(report.mismatches.len(), 1, "{:?}", report.mismatches);
    let m = &report.mismatches[0];
    assert!(m.starts_with("row 1 (pkg/a.py): digest differs"), "{m}");
    assert!(
        m.contains(&format!("expected sha256={} size 11", b64(b"print('a')\n"))),
        "{m}"
    );
    assert!(
        m.contains(&format!("found sha256={} size 11", b64(b"print('b')\n"))),
        "{m}"
    );
    assert_eq!(report.hashed_verified, 2);
}

#[test]
fn a_size_mismatch_and_a_missing_file_are_named() {
    let s = site();
    std::fs::write(s.layout.site_packages.join("pkg/b.py"), b"b = 2\n\n").unwrap();
    std::fs::remove_file(s.layout.site_packages.join("pkg/a.py")).unwrap();
    let report = verify_rows(&s.layout, &parse(&good_record()).rows);
    assert_eq!(report.mismatches.len(), 1);
    assert!(
        report.mismatches[0].starts_with("row 2 (pkg/b.py): digest and size differ"),
        "{:?}",
        report.mismatches
    );
    assert!(
        report.mismatches[0].contains("size 6, found"),
        "{:?}",
        report.mismatches
    );
    assert_eq!(report.missing.len(), 1);
    assert!(
        report.missing[0].starts_with("row 1 (pkg/a.py): expected a file of 11 bytes"),
        "{:?}",
        report.missing
    );
}

#[test]
fn size_alone_differing_is_reported_as_such() {
    let s = site();
    // Same digest, wrong declared size.
    let record = format!("pkg/b.py,sha256={},7\n", b64(b"b = 2\n"));
    let report = verify_rows(&s.layout, &parse(&record).rows);
    assert!(
        report.mismatches[0].starts_with("row 1 (pkg/b.py): size differs"),
        "{:?}",
        report.mismatches
    );
}

#[test]
fn unlisted_files_are_found_outside_pycache() {
    let s = site();
    let sp = &s.layout.site_packages;
    std::fs::write(sp.join("pkg/extra.py"), b"").unwrap();
    std::fs::write(sp.join("pkg/__pycache__/extra.cpython-311.pyc"), b"").unwrap();
    std::fs::write(sp.join(DIST).join("direct_url.json"), b"{}").unwrap();
    let report = verify_rows(&s.layout, &parse(&good_record()).rows);
    let walk = unlisted_files(&[sp.join("pkg"), sp.join(DIST)], &report.listed);
    assert_eq!(
        walk.unlisted,
        [
            sp.join("pkg/extra.py").display().to_string(),
            sp.join(DIST).join("direct_url.json").display().to_string()
        ]
    );
    // pkg/a.py, pkg/b.py, pkg/extra.py, RECORD, direct_url.json.
    assert_eq!(walk.files, 5);
}

/// What `observe` records for the fake site `s` and RECORD `text` (the
/// file-reading half of `observe`, without the probes).
fn observed_record(s: &Site, text: &str) -> RecordObservation {
    let sp = &s.layout.site_packages;
    let parsed = parse(text);
    let rows = verify_rows(&s.layout, &parsed.rows);
    let walk = unlisted_files(&[sp.join("pkg"), sp.join(DIST)], &rows.listed);
    RecordObservation {
        path: sp.join(DIST).join("RECORD").display().to_string(),
        site_packages: sp.display().to_string(),
        dist_info: sp.join(DIST).display().to_string(),
        read_error: None,
        sha256: crate::hash::sha256_bytes(text.as_bytes()),
        total_rows: parsed.total_rows,
        hashed_rows: parsed.rows.iter().filter(|r| r.hashed.is_some()).count(),
        malformed_paths: parsed
            .malformed_paths
            .iter()
            .map(|(row, path)| MalformedPath {
                row: *row,
                path: path.clone(),
                resolved: normalize_join(sp, path).display().to_string(),
            })
            .collect(),
        malformed: parsed.malformed,
        rows,
        walk,
        bytecode: Some(bytecode(vec![])),
        bytecode_error: None,
    }
}

fn pyc(
    path: &str,
    source: Option<&str>,
    outcome: BytecodeOutcome,
    why: Option<&str>,
) -> BytecodeFile {
    BytecodeFile {
        path: path.into(),
        source: source.map(Into::into),
        optimize: source.map(|_| 0),
        header: None,
        outcome,
        difference: why.map(Into::into),
        source_sha256: None,
        pyc_sha256: None,
        cached: false,
    }
}

fn bytecode(files: Vec<BytecodeFile>) -> BytecodeProbe {
    BytecodeProbe {
        cache_tag: "cpython-311".into(),
        magic: "a70d0d0a".into(),
        files,
        cache: None,
    }
}

const PYC: &str = "pkg/__pycache__/a.cpython-311.pyc";

fn texts(p: &[(String, Root)]) -> Vec<&str> {
    p.iter().map(|(t, _)| t.as_str()).collect()
}

#[test]
fn bytecode_equal_to_a_verified_source_passes_and_absent_bytecode_too() {
    let s = site();
    let record = observed_record(&s, &good_record());
    let sp = &s.layout.site_packages;
    let equal = bytecode(vec![pyc(
        PYC,
        Some("pkg/a.py"),
        BytecodeOutcome::Equal,
        None,
    )]);
    assert!(bytecode_problems(&equal, &record).is_empty());
    assert!(bytecode_problems(&bytecode(vec![]), &record).is_empty());
    let c = bytecode_check(&equal, &sp.join("pkg"), &[], "1.0");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert_eq!(c.observed.as_ref().unwrap()["files"], 1);
    assert_eq!(c.observed.as_ref().unwrap()["equal"], 1);
}

#[test]
fn bytecode_equal_to_a_tampered_source_is_a_consequence_of_its_row() {
    let s = site();
    // pkg/a.py is tampered: its row no longer verifies.
    std::fs::write(s.layout.site_packages.join("pkg/a.py"), b"print('b')\n").unwrap();
    let record = observed_record(&s, &good_record());
    let probe = bytecode(vec![pyc(
        PYC,
        Some("pkg/a.py"),
        BytecodeOutcome::Equal,
        None,
    )]);
    let p = bytecode_problems(&probe, &record);
    assert_eq!(
        p,
        [(
            format!(
                "{PYC}: expected the compilation of a RECORD-verified source, found it equal to \
                 pkg/a.py, whose RECORD row did not verify (see record-rows)"
            ),
            Some("record-rows")
        )]
    );
    let c = bytecode_check(&probe, Path::new("/sp/pkg"), &p, "1.0");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of.as_deref(), Some("record-rows"));
    assert!(
        c.detail.starts_with(
            "1 bytecode file(s) under /sp/pkg are not verified because their source is not:\n  "
        ),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("delete them"), "{}", c.detail);
}

#[test]
fn bytecode_equal_to_an_unlisted_source_is_a_consequence_of_unlisted_files() {
    let s = site();
    std::fs::write(s.layout.site_packages.join("pkg/extra.py"), b"x = 1\n").unwrap();
    let record = observed_record(&s, &good_record());
    let probe = bytecode(vec![pyc(
        "pkg/__pycache__/extra.cpython-311.pyc",
        Some("pkg/extra.py"),
        BytecodeOutcome::Equal,
        None,
    )]);
    let p = bytecode_problems(&probe, &record);
    assert_eq!(p.len(), 1);
    assert!(
        p[0].0
            .ends_with("pkg/extra.py, which RECORD does not list (see unlisted-files)"),
        "{}",
        p[0].0
    );
    assert_eq!(p[0].1, Some("unlisted-files"));
    let c = bytecode_check(&probe, Path::new("/sp/pkg"), &p, "1.0");
    assert_eq!(c.consequence_of.as_deref(), Some("unlisted-files"));
}

#[test]
fn bytecode_equal_with_no_source_named_fails_on_its_own() {
    let s = site();
    let record = observed_record(&s, &good_record());
    let probe = bytecode(vec![pyc(PYC, None, BytecodeOutcome::Equal, None)]);
    let p = bytecode_problems(&probe, &record);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].1, None);
    assert!(p[0].0.ends_with("found no source named"), "{}", p[0].0);
}

#[test]
fn every_other_bytecode_outcome_fails_naming_the_file() {
    let s = site();
    let record = observed_record(&s, &good_record());
    let probe = bytecode(vec![
        pyc(
            PYC,
            Some("pkg/a.py"),
            BytecodeOutcome::Differs,
            Some("<module>.co_code"),
        ),
        pyc(
            "pkg/__pycache__/gone.cpython-311.pyc",
            Some("pkg/gone.py"),
            BytecodeOutcome::NoSource,
            None,
        ),
        pyc(
            "pkg/__pycache__/a.cpython-312.pyc",
            None,
            BytecodeOutcome::ForeignName,
            None,
        ),
        pyc(
            "pkg/__pycache__/b.cpython-311.pyc",
            Some("pkg/b.py"),
            BytecodeOutcome::BadHeader,
            Some("magic number 550d0d0a"),
        ),
        pyc(
            "pkg/__pycache__/c.cpython-311.pyc",
            Some("pkg/c.py"),
            BytecodeOutcome::Unreadable,
            Some("permission denied"),
        ),
        pyc("pkg/evil.pyc", None, BytecodeOutcome::Sourceless, None),
    ]);
    let p = bytecode_problems(&probe, &record);
    assert!(p.iter().all(|(_, root)| root.is_none()), "{p:?}");
    let p = texts(&p);
    assert_eq!(p.len(), 6, "{p:?}");
    assert_eq!(p[0], format!("{PYC}: expected this interpreter's compilation of pkg/a.py (optimize 0), found other code (first difference: <module>.co_code)"));
    assert_eq!(p[1], "pkg/__pycache__/gone.cpython-311.pyc: expected the compilation of pkg/gone.py, found no such source file");
    assert_eq!(p[2], "pkg/__pycache__/a.cpython-312.pyc: expected only `<module>.cpython-311.pyc` or `<module>.cpython-311.opt-N.pyc` in __pycache__, found a file this interpreter's bytecode cache does not name");
    assert_eq!(p[3], "pkg/__pycache__/b.cpython-311.pyc: expected a header for this interpreter (PEP 552, magic a70d0d0a), found magic number 550d0d0a");
    assert_eq!(p[4], "pkg/__pycache__/c.cpython-311.pyc: expected a readable bytecode file, found permission denied");
    assert_eq!(p[5], "pkg/evil.pyc: expected bytecode only in __pycache__, found a sourceless .pyc, which import loads with no source to verify it against");
    let problems = bytecode_problems(&probe, &record);
    let c = bytecode_check(
        &probe,
        &s.layout.site_packages.join("pkg"),
        &problems,
        "1.0",
    );
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None);
    assert!(
        c.detail.contains("6 bytecode file(s)")
            && c.detail.contains("delete them")
            && c.detail.contains("langbot-plugin==1.0")
            && !c.detail.contains("more not verified"),
        "{}",
        c.detail
    );
    assert_eq!(
        c.observed.as_ref().unwrap()["problems"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
}

#[test]
fn bytecode_of_its_own_and_of_unverified_sources_is_one_finding_naming_both() {
    let s = site();
    std::fs::write(s.layout.site_packages.join("pkg/b.py"), b"b = 3\n").unwrap();
    let record = observed_record(&s, &good_record());
    let probe = bytecode(vec![
        pyc(
            PYC,
            Some("pkg/a.py"),
            BytecodeOutcome::Differs,
            Some("co_code"),
        ),
        pyc(
            "pkg/__pycache__/b.cpython-311.pyc",
            Some("pkg/b.py"),
            BytecodeOutcome::Equal,
            None,
        ),
    ]);
    let p = bytecode_problems(&probe, &record);
    let c = bytecode_check(&probe, Path::new("/sp/pkg"), &p, "1.0");
    assert_eq!(c.consequence_of, None);
    assert!(
        c.detail
            .starts_with("1 bytecode file(s) under /sp/pkg are not this interpreter's"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("\n1 more not verified because their source is not (see record-rows, unlisted-files):\n  pkg/__pycache__/b.cpython-311.pyc"), "{}", c.detail);
}

#[test]
fn versions_compare_in_pep440_normal_form() {
    assert_eq!(normalize_version("0.6.0b5"), "0.6.0b5");
    assert_eq!(normalize_version("0.6.0-Beta5"), "0.6.0b5");
    assert_eq!(normalize_version("v0.6.0.b.5"), "0.6.0b5");
    assert_eq!(normalize_version("1.0c1"), "1.0rc1");
    assert_eq!(normalize_version("1.0-1"), "1.0.post1");
    assert_eq!(normalize_version("1.0.rev2.DEV3"), "1.0.post2.dev3");
    assert_eq!(normalize_version("01.00+Ubuntu-1"), "1.0+ubuntu.1");
    assert_eq!(normalize_version("1!2.0a"), "1!2.0a0");
    assert_ne!(normalize_version("0.6.0b4"), normalize_version("0.6.0b5"));
    assert_eq!(normalize_version(" not a version "), "not a version");
    // Not PEP 440: kept as text, so they never equal a pin.
    assert_eq!(normalize_version("1.0+"), "1.0+");
    assert_eq!(normalize_version("1.0+a..b"), "1.0+a..b");
    assert_eq!(normalize_version("1..0"), "1..0");
}

// Decision counterexamples: observations built as plain values (no files,
// no Python), one per way the gate could be fooled, by the catalogue's
// `proves` clauses.

/// The genuine `langbot_plugin-0.6.0b5.dist-info/RECORD`, as pip installed it
/// from PyPI (copied from `cargo xtask sdk`'s venv).
const REAL_RECORD: &str = include_str!("testdata/RECORD");
const REAL_DIST: &str = "langbot_plugin-0.6.0b5.dist-info";
const SP: &str = "/venv/lib/python3.11/site-packages";
const BUILDPLUGIN: &str = "langbot_plugin/cli/commands/buildplugin.py";

fn probe(version: Option<&str>) -> SdkProbe {
    SdkProbe {
        executable: "/venv/bin/python".into(),
        python_version: "3.11.2".into(),
        scripts_dir: Some("/venv/bin".into()),
        version: version.map(Into::into),
        dist_info: version.map(|_| format!("{SP}/{REAL_DIST}")),
        site_packages: version.map(|_| SP.into()),
        console_scripts: vec!["lbp".into()],
        package_dir: version.map(|_| format!("{SP}/langbot_plugin")),
        error: None,
    }
}

/// The observation of an install whose files are exactly the genuine
/// RECORD's and which `record` (RECORD's text) describes: every well-formed
/// hashed row verifies, the files present are the genuine RECORD's files
/// (outside `__pycache__`), and the bytecode probe found the compilation of
/// `buildplugin.py`.
fn observation(record: &str) -> Observation {
    let sp = Path::new(SP);
    let parsed = parse_record(record.as_bytes(), REAL_DIST);
    let genuine = parse_record(REAL_RECORD.as_bytes(), REAL_DIST);
    let resolve = |p: &str| normalize_join(sp, p);
    let mut rows = RowsReport::default();
    for r in &parsed.rows {
        rows.listed.insert(resolve(&r.path));
        if r.hashed.is_some() {
            rows.hashed_verified += 1;
            rows.verified.insert(resolve(&r.path));
        } else {
            rows.unhashed += 1;
        }
    }
    let present: Vec<PathBuf> = genuine
        .rows
        .iter()
        .filter(|r| !r.path.starts_with("..") && !r.path.contains("__pycache__"))
        .map(|r| resolve(&r.path))
        .collect();
    let walk = Walk {
        files: present.len(),
        unlisted: present
            .iter()
            .filter(|p| !rows.listed.contains(*p))
            .map(|p| p.display().to_string())
            .collect(),
    };
    let record = RecordObservation {
        path: format!("{SP}/{REAL_DIST}/RECORD"),
        site_packages: SP.into(),
        dist_info: format!("{SP}/{REAL_DIST}"),
        read_error: None,
        sha256: crate::hash::sha256_bytes(record.as_bytes()),
        total_rows: parsed.total_rows,
        hashed_rows: parsed.rows.iter().filter(|r| r.hashed.is_some()).count(),
        malformed_paths: parsed
            .malformed_paths
            .iter()
            .map(|(row, path)| MalformedPath {
                row: *row,
                path: path.clone(),
                resolved: resolve(path).display().to_string(),
            })
            .collect(),
        malformed: parsed.malformed,
        rows,
        walk,
        bytecode: Some(bytecode(vec![pyc(
            "langbot_plugin/cli/commands/__pycache__/buildplugin.cpython-311.pyc",
            Some(BUILDPLUGIN),
            BytecodeOutcome::Equal,
            None,
        )])),
        bytecode_error: None,
    };
    Observation {
        python: "/venv/bin/python".into(),
        probe: probe(Some("0.6.0b5")),
        expected_package_dir: Some(format!("{SP}/langbot_plugin")),
        package_dir_matches: true,
        record: Some(record),
        environment: None,
        locked: None,
        probe_sandbox: None,
    }
}

/// The genuine RECORD with `buildplugin.py`'s digest written as 64 hex
/// characters (the sha256 of the same bytes), and that row's number.
fn record_with_a_hex_digest_for_buildplugin() -> (String, usize) {
    let mut row = 0;
    let text: Vec<String> = REAL_RECORD
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let Some(rest) = line.strip_prefix(&format!("{BUILDPLUGIN},sha256=")) else {
                return line.to_string();
            };
            row = i + 1;
            let (digest, size) = rest.split_once(',').unwrap();
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(digest)
                .unwrap();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("{BUILDPLUGIN},sha256={hex},{size}")
        })
        .collect();
    assert!(row > 0, "the genuine RECORD lists {BUILDPLUGIN}");
    (text.join("\n") + "\n", row)
}

fn by_name<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
}

fn names(checks: &[Check]) -> Vec<&str> {
    checks.iter().map(|c| c.name.as_str()).collect()
}

use crate::evidence::CheckResult;
use base64::Engine as _;

#[test]
fn the_genuine_record_passes_and_every_pass_carries_what_it_observed() {
    let checks = decide(&observation(REAL_RECORD), "0.6.0b5");
    assert_eq!(
        names(&checks),
        [
            "sdk-version",
            "package-location",
            "record-rows",
            "unlisted-files",
            "bytecode"
        ]
    );
    for c in &checks {
        assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
        let o = c
            .observed
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no observed", c.name));
        assert!(
            o.as_object().is_some_and(|m| !m.is_empty()),
            "{}: {o}",
            c.name
        );
    }
    let rows = by_name(&checks, "record-rows").observed.clone().unwrap();
    assert_eq!(rows["rows"], REAL_RECORD.lines().count());
    assert_eq!(
        rows["hashed_rows_verified"],
        REAL_RECORD
            .lines()
            .filter(|l| l.contains(",sha256="))
            .count()
    );
    let unlisted = by_name(&checks, "unlisted-files");
    assert!(
        unlisted.observed.as_ref().unwrap()["files"]
            .as_u64()
            .unwrap()
            > 100
    );
}

/// Issue 14: a hex digest in `buildplugin.py`'s row is one finding, the
/// malformed row; the file is "not verified because its row is malformed",
/// under it, never "not listed in RECORD".
#[test]
fn a_malformed_row_is_one_finding_and_its_file_is_not_verified_under_it_never_unlisted() {
    let (record, row) = record_with_a_hex_digest_for_buildplugin();
    let checks = decide(&observation(&record), "0.6.0b5");
    let rows = by_name(&checks, "record-rows");
    assert_eq!(rows.result, CheckResult::Fail);
    assert_eq!(rows.consequence_of, None);
    assert!(
        rows.detail.contains(&format!(
            "found 1 malformed: row {row} ({BUILDPLUGIN}): hex digest \""
        )) && rows
            .detail
            .contains("expected urlsafe base64 without padding (43 characters)")
            && rows
                .detail
                .ends_with("reinstall it into a fresh environment"),
        "{}",
        rows.detail
    );
    let unlisted = by_name(&checks, "unlisted-files");
    assert_eq!(unlisted.result, CheckResult::Fail);
    assert_eq!(unlisted.consequence_of.as_deref(), Some("record-rows"));
    assert_eq!(
        unlisted.detail,
        format!(
            "1 file(s) not verified because their RECORD row is malformed: {BUILDPLUGIN} (row {row}); \
             every other file under {SP}/langbot_plugin and {SP}/{REAL_DIST} is listed in RECORD"
        )
    );
    assert!(
        !unlisted.detail.contains("not listed"),
        "{}",
        unlisted.detail
    );
    assert_eq!(unlisted.observed.as_ref().unwrap()["unlisted"], json!([]));
    let bytecode = by_name(&checks, "bytecode");
    assert_eq!(bytecode.consequence_of.as_deref(), Some("record-rows"));
    assert!(
        bytecode.detail.contains(&format!(
            "equal to {BUILDPLUGIN}, which is not verified because its RECORD row (row {row}) is malformed"
        )),
        "{}",
        bytecode.detail
    );
    // Exactly one failure is a cause of its own.
    let causes: Vec<&str> = checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail && c.consequence_of.is_none())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(causes, ["record-rows"]);
}

#[test]
fn a_file_no_row_lists_beside_a_malformed_row_is_its_own_finding_naming_both() {
    let (record, row) = record_with_a_hex_digest_for_buildplugin();
    let mut obs = observation(&record);
    let r = obs.record.as_mut().unwrap();
    r.walk
        .unlisted
        .push(format!("{SP}/langbot_plugin/extra.py"));
    let checks = decide(&obs, "0.6.0b5");
    let unlisted = by_name(&checks, "unlisted-files");
    assert_eq!(unlisted.consequence_of, None);
    assert_eq!(
        unlisted.detail,
        format!(
            "1 file(s) not listed in {SP}/{REAL_DIST}/RECORD: {SP}/langbot_plugin/extra.py; expected only \
             RECORD's files in an installed distribution: remove them or reinstall langbot-plugin==0.6.0b5 \
             into a fresh environment (1 more not verified because their RECORD row is malformed: \
             {BUILDPLUGIN} (row {row}); see record-rows)"
        )
    );
}

#[test]
fn refuses_a_file_in_the_package_that_record_does_not_list() {
    let mut obs = observation(REAL_RECORD);
    obs.record.as_mut().unwrap().walk.unlisted = vec![format!("{SP}/langbot_plugin/evil.py")];
    let checks = decide(&obs, "0.6.0b5");
    let c = by_name(&checks, "unlisted-files");
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None);
    assert!(
        c.detail.starts_with(&format!(
            "1 file(s) not listed in {SP}/{REAL_DIST}/RECORD: {SP}/langbot_plugin/evil.py;"
        )),
        "{}",
        c.detail
    );
    assert!(!c.detail.contains("more not verified"), "{}", c.detail);
}

#[test]
fn refuses_a_hashed_row_whose_file_differs_or_is_missing_or_escapes() {
    for (field, text) in [
        ("mismatches", "row 3 (langbot_plugin/a.py): digest differs: expected sha256=A size 1, found sha256=B size 1"),
        ("missing", "row 4 (langbot_plugin/b.py): expected a file of 1 bytes at /x, found none (gone)"),
        ("escaping", "row 5 (../x): path \"../x\" resolves to /x, outside site-packages"),
    ] {
        let mut obs = observation(REAL_RECORD);
        let rows = &mut obs.record.as_mut().unwrap().rows;
        match field {
            "mismatches" => rows.mismatches.push(text.into()),
            "missing" => rows.missing.push(text.into()),
            _ => rows.escaping.push(text.into()),
        }
        let checks = decide(&obs, "0.6.0b5");
        let c = by_name(&checks, "record-rows");
        assert_eq!(c.result, CheckResult::Fail, "{field}");
        let label = match field {
            "mismatches" => "1 mismatched: ",
            "missing" => "1 missing: ",
            _ => "1 escaping site-packages: ",
        };
        assert!(c.detail.contains(&format!("found {label}{text}. The installed SDK is not the one RECORD describes")), "{field}: {}", c.detail);
        assert_eq!(c.observed.as_ref().unwrap()[field][0], text);
    }
}

#[test]
fn refuses_another_version_than_the_pin() {
    let mut obs = observation(REAL_RECORD);
    obs.probe.version = Some("0.6.0b4".into());
    let checks = decide(&obs, "0.6.0b5");
    let c = by_name(&checks, "sdk-version");
    assert_eq!(c.result, CheckResult::Fail);
    assert!(c.detail.starts_with("langbot-plugin installed in /venv/bin/python is 0.6.0b4, required 0.6.0b5 (the profile's pin); "), "{}", c.detail);
    // The same version spelt otherwise is the pin.
    obs.probe.version = Some("0.6.0-beta5".into());
    let checks = decide(&obs, "0.6.0b5");
    assert_eq!(by_name(&checks, "sdk-version").result, CheckResult::Pass);
}

#[test]
fn a_missing_distribution_fails_its_version_and_the_rest_are_its_consequences() {
    let mut obs = observation(REAL_RECORD);
    obs.probe = probe(None);
    obs.probe.error = Some("No package metadata was found for langbot-plugin".into());
    obs.expected_package_dir = None;
    obs.record = None;
    let checks = decide(&obs, "0.6.0b5");
    assert_eq!(
        names(&checks),
        ["sdk-version", "record-rows", "unlisted-files", "bytecode"]
    );
    assert_eq!(checks[0].consequence_of, None);
    for c in &checks[1..] {
        assert_eq!(c.result, CheckResult::Fail);
        assert_eq!(
            c.consequence_of.as_deref(),
            Some("sdk-version"),
            "{}",
            c.name
        );
        assert_eq!(c.detail, "not observed: No package metadata was found for langbot-plugin (interpreter /venv/bin/python); install langbot-plugin==0.6.0b5 into it with pip, then re-run");
    }
}

#[test]
fn an_installed_version_without_a_dist_info_fails_each_check_on_its_own() {
    let mut obs = observation(REAL_RECORD);
    obs.probe.dist_info = None;
    obs.expected_package_dir = None;
    obs.record = None;
    let checks = decide(&obs, "0.6.0b5");
    assert_eq!(checks[0].result, CheckResult::Pass);
    for c in &checks[1..] {
        assert_eq!(c.consequence_of, None, "{}", c.name);
        assert!(
            c.detail.starts_with(
                "not observed: langbot-plugin has no dist-info directory this gate can read"
            ),
            "{}",
            c.detail
        );
    }
}

#[test]
fn an_unreadable_record_fails_record_rows_and_the_rest_are_its_consequences() {
    let mut obs = observation(REAL_RECORD);
    obs.record.as_mut().unwrap().read_error = Some("permission denied".into());
    let checks = decide(&obs, "0.6.0b5");
    assert_eq!(
        names(&checks),
        [
            "sdk-version",
            "package-location",
            "record-rows",
            "unlisted-files",
            "bytecode"
        ]
    );
    assert_eq!(checks[2].detail, format!("{SP}/{REAL_DIST}/RECORD: expected the installed distribution's RECORD, found none (permission denied); reinstall langbot-plugin==0.6.0b5 with pip"));
    assert_eq!(checks[2].consequence_of, None);
    for c in &checks[3..] {
        assert_eq!(c.consequence_of.as_deref(), Some("record-rows"));
        assert_eq!(
            c.detail,
            format!("not observed: {SP}/{REAL_DIST}/RECORD cannot be read")
        );
    }
}

#[test]
fn refuses_a_package_that_find_spec_resolves_elsewhere() {
    let mut obs = observation(REAL_RECORD);
    obs.probe.package_dir = Some("/tmp/shadow/langbot_plugin".into());
    obs.package_dir_matches = false;
    let c = decide(&obs, "0.6.0b5").remove(1);
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.detail, format!("`find_spec('langbot_plugin')` resolves to /tmp/shadow/langbot_plugin, expected {SP}/langbot_plugin (the directory RECORD describes); another copy shadows the installed SDK: remove it"));
    obs.probe.package_dir = None;
    let c = decide(&obs, "0.6.0b5").remove(1);
    assert_eq!(c.detail, format!("`find_spec('langbot_plugin')` does not resolve to a package, expected {SP}/langbot_plugin; reinstall langbot-plugin"));
}

#[test]
fn a_bytecode_probe_that_did_not_answer_fails_bytecode() {
    let mut obs = observation(REAL_RECORD);
    let r = obs.record.as_mut().unwrap();
    r.bytecode = None;
    r.bytecode_error = Some("exit 1".into());
    let c = decide(&obs, "0.6.0b5").remove(4);
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None);
    assert!(c.detail.starts_with("not observed: the bytecode probe did not answer (exit 1); expected every bytecode file under /venv/lib/python3.11/site-packages/langbot_plugin compared"), "{}", c.detail);
}

#[test]
fn refuses_bytecode_that_is_not_the_compilation_of_its_source() {
    let mut obs = observation(REAL_RECORD);
    obs.record.as_mut().unwrap().bytecode = Some(bytecode(vec![pyc(
        "langbot_plugin/__pycache__/__init__.cpython-311.pyc",
        Some("langbot_plugin/__init__.py"),
        BytecodeOutcome::Differs,
        Some("<module>.co_consts[0]"),
    )]));
    let c = decide(&obs, "0.6.0b5").remove(4);
    assert_eq!(c.result, CheckResult::Fail);
    assert_eq!(c.consequence_of, None);
    assert!(
        c.detail
            .contains("found other code (first difference: <module>.co_consts[0])"),
        "{}",
        c.detail
    );
}

// ----- run: the gate on the genuine interpreter ----------------------------

/// The genuine interpreter from `$PYTHON` (absolute), as `cargo xtask test`
/// and `cargo xtask mutants` set it.
fn genuine_python() -> PathBuf {
    std::env::var_os("PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)")
        })
}

#[test]
fn run_verifies_the_genuine_install_and_hands_on_its_facts() {
    use crate::gates::{testing, Gate};
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.python = genuine_python();
    let (checks, after) = testing::run(&SdkRecord, &ctx);
    let checks = checks.unwrap();
    assert!(
        checks.iter().all(|c| c.result != CheckResult::Fail),
        "{checks:#?}"
    );
    let pinned = ctx.profile.profile.sdk.version().to_string();
    assert_eq!(after.sdk.version.as_deref(), Some(pinned.as_str()));
    assert!(after
        .sdk
        .record_sha256
        .as_ref()
        .is_some_and(|h| h.len() == 64));
    assert!(after.sdk.record_rows.is_some_and(|n| n > 100));
    assert!(after.sdk.hashed_rows_verified.is_some_and(|n| n > 100));
    let verified = after
        .verified_sdk
        .expect("a passing gate hands on the verified SDK");
    assert!(verified.package_dir.ends_with(PACKAGE));
    assert!(verified.dist_info.join("RECORD").is_file());
    assert_eq!(SdkRecord.id(), "sdk-record");
}

/// A pin the profile gives no `record_sha256` (as `profile init` writes an
/// SDK group's) is held to the wheel RECORD of the verifier's own lock for
/// it: the genuine interpreter passes `record-provenance`, and the same
/// interpreter under another carried pin fails it, naming the rows.
#[test]
fn without_a_profile_digest_record_provenance_uses_the_lock_of_the_pin() {
    use crate::gates::testing;
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.python = genuine_python();
    ctx.profile.profile.sdk.record_sha256 = None;
    let (checks, _) = testing::run(&SdkRecord, &ctx);
    let checks = checks.unwrap();
    let c = checks
        .iter()
        .find(|c| c.name == "record-provenance")
        .expect("record-provenance without a profile digest");
    assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains("064f66f2305ca34b1e06c575ffa8179ba1c903bc3ccb09545e53df6d56f916dc"),
        "{}",
        c.detail
    );
    let text = crate::profile::BUILTIN_CODING_RUNNERS.replace("0.6.0b5", "0.6.1");
    let mut other = crate::profile::parse(&text, "test").unwrap();
    other.sdk.wheel_sha256 = None;
    other.sdk.record_sha256 = None;
    ctx.profile.profile = other;
    let (checks, _) = testing::run(&SdkRecord, &ctx);
    let c = checks
        .unwrap()
        .into_iter()
        .find(|c| c.name == "record-provenance")
        .expect("record-provenance under the 0.6.1 pin");
    assert_eq!(c.result, CheckResult::Fail, "{}", c.detail);
    assert!(
        c.detail.contains("wheel row(s) missing or changed"),
        "{}",
        c.detail
    );
}

#[test]
fn run_against_another_pin_hands_on_no_verified_sdk() {
    use crate::gates::testing;
    let evidence = tempfile::tempdir().unwrap();
    let mut ctx = testing::ctx(evidence.path());
    ctx.python = genuine_python();
    let text = crate::profile::BUILTIN_CODING_RUNNERS.replace("0.6.0b5", "0.0.1");
    ctx.profile.profile = crate::profile::parse(&text, "test").unwrap();
    let (checks, after) = testing::run(&SdkRecord, &ctx);
    let checks = checks.unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c.name == "sdk-version" && c.result == CheckResult::Fail),
        "{checks:#?}"
    );
    // What was observed is still recorded; nothing is handed on as verified.
    assert!(after.sdk.version.is_some());
    assert!(after.verified_sdk.is_none());
}

/// The probes of the interpreter under review ran in a sandbox: pass; they
/// ran unconfined (no bubblewrap): a warning naming why, so the statement
/// is never `PASSED` over it.
#[test]
fn probes_run_unconfined_are_a_warning_never_a_pass() {
    use crate::evidence::sandbox::{Network, SandboxRecord};
    let confined = SandboxRecord {
        kind: "bwrap".into(),
        program: Some("/usr/bin/bwrap".into()),
        version: Some("bubblewrap 0.8.0".into()),
        own_pid_namespace: true,
        dies_with_verifier: true,
        network: Some(Network::PrivateLoopback),
        read_only: vec!["/".into()],
        writable: vec!["/ev/roots/sdk-record/probe/home".into()],
        unconfined_because: None,
    };
    let unconfined =
        SandboxRecord::unconfined("none", Some("VCC_BWRAP=/nowhere: not found".into()));
    let result = |record: SandboxRecord| {
        let mut obs = observation(REAL_RECORD);
        obs.probe_sandbox = Some(record);
        let checks = decide(&obs, "0.6.0b5");
        let c = checks
            .into_iter()
            .find(|c| c.name == "probe-sandbox")
            .expect("a probe-sandbox check");
        (c.result, c.detail)
    };
    assert_eq!(result(confined).0, CheckResult::Pass);
    let (r, detail) = result(unconfined);
    assert_eq!(r, CheckResult::Warn);
    assert!(
        detail.contains("ran unconfined") && detail.contains("VCC_BWRAP=/nowhere"),
        "{detail}"
    );
}
