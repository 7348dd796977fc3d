//! Evidence: the model and its views (`evidence.json`, `junit.xml`, the
//! statement, `report.html`, `SHA256SUMS`), each written atomically into the
//! evidence directory, and each candidate's own verdict read from the gates
//! ([`verdicts`]).

pub mod canonical;
pub mod html;
pub mod junit;
pub mod kept_profile;
pub mod lock;
pub mod model;
pub mod observed;
pub mod sandbox;
pub mod statement;
pub mod verdicts;

pub use canonical::{canonical_digest, canonical_digest_of, canonical_digest_of_text};
pub use model::*;
pub use observed::Observed;

use crate::hash;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// File name of the JSON evidence.
pub const EVIDENCE_JSON: &str = "evidence.json";
/// File name of the JUnit report.
pub const JUNIT_XML: &str = "junit.xml";
/// File name of the digest list.
pub const SHA256SUMS: &str = "SHA256SUMS";

/// The JSON schema of [`Evidence`], as checked in at
/// `evidence-schema/v1/evidence.schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(Evidence);
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serialises");
    text.push('\n');
    text
}

/// Fills `evidence.sign_off` (verdict and digest) from the rest of `evidence`.
pub fn seal(evidence: &mut Evidence, signed_off_by: Option<String>) {
    evidence.sign_off = SignOff {
        verdict: evidence.verdict,
        evidence_sha256: String::new(),
        signed_off_by,
        archives_signed: false,
    };
    // From the typed document, member by member: neither its text nor a
    // tree of it is held (`canonical`).
    evidence.sign_off.evidence_sha256 =
        canonical_digest_of(&*evidence).expect("the evidence serialises to a JSON object");
}

/// Writes `bytes` to `dir/name` atomically: a temporary file in `dir`,
/// flushed and synced, then renamed over the target. The file is mode 0644
/// (the temporary file starts 0600): evidence is read by other users, such
/// as a CI artifact uploader or a reviewer.
///
/// # Errors
/// Any I/O error; the target is then untouched.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(dir, name, |w| w.write_all(bytes))
}

/// [`write_atomic`] of what `write` writes, through a buffer: a large
/// document is serialised straight into the file, never held as text.
///
/// # Errors
/// Any I/O error, `write`'s included; the target is then untouched.
pub fn write_atomic_with(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)?;
    {
        let mut buffered = io::BufWriter::new(tmp.as_file_mut());
        write(&mut buffered)?;
        buffered.flush()?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `evidence.json`, `junit.xml`, `statement.intoto.json`, `report.html` and last
/// `SHA256SUMS` (every regular file under `dir` but itself, `sha256sum -c` format, sorted by
/// path).
///
/// # Errors
/// Any I/O error.
pub fn write_all(dir: &Path, evidence: &Evidence) -> io::Result<()> {
    write_atomic_with(dir, EVIDENCE_JSON, |w| {
        serde_json::to_writer_pretty(&mut *w, evidence).map_err(io::Error::other)?;
        w.write_all(b"\n")
    })?;
    write_atomic(dir, JUNIT_XML, junit::render(evidence)?.as_bytes())?;
    let mut statement =
        serde_json::to_string_pretty(&statement::render(evidence)).map_err(io::Error::other)?;
    statement.push('\n');
    write_atomic(dir, statement::STATEMENT_JSON, statement.as_bytes())?;
    write_atomic(dir, html::REPORT_HTML, html::render(evidence).as_bytes())?;
    match &evidence.files {
        // Every other file was just hashed into `files` (nothing under DIR
        // changes but the views now): those digests and the views', in
        // the walk's order, streamed into the file; neither the text nor a
        // second walk of DIR's thousands of files.
        Some(files) => write_atomic_with(dir, SHA256SUMS, |w| {
            write_sums_with_views(w, dir, &files.entries)
        }),
        None => write_atomic(dir, SHA256SUMS, sha256sums(dir)?.as_bytes()),
    }
}

/// `SHA256SUMS` lines of `entries` (every file of `dir` but the [`VIEWS`],
/// in [`entries`]' order) with the views but `SHA256SUMS` itself, hashed
/// from `dir` now, each placed where [`entries`]' walk would find it: the
/// walk goes by name at the top level, so a view comes before the first
/// entry whose first path component sorts after it.
fn write_sums_with_views(w: &mut dyn Write, dir: &Path, entries: &[FileEntry]) -> io::Result<()> {
    let mut views: Vec<&str> = VIEWS
        .iter()
        .copied()
        .filter(|v| *v != SHA256SUMS && dir.join(v).is_file())
        .collect();
    views.sort_unstable();
    let mut views = views.into_iter().peekable();
    let view_line = |w: &mut dyn Write, name: &str| -> io::Result<()> {
        let digest = hash::sha256_file(&dir.join(name))?;
        w.write_all(sums_line(&digest.hex(), name).as_bytes())
    };
    for entry in entries {
        let top = entry.path.split('/').next().unwrap_or_default();
        while let Some(view) = views.next_if(|v| v.as_bytes() < top.as_bytes()) {
            view_line(w, view)?;
        }
        w.write_all(sums_line(&entry.sha256, &entry.path).as_bytes())?;
    }
    for view in views {
        view_line(w, view)?;
    }
    Ok(())
}

/// The `SHA256SUMS` text for `dir`.
///
/// # Errors
/// Any I/O error while walking or hashing.
pub fn sha256sums(dir: &Path) -> io::Result<String> {
    listing(dir, &[SHA256SUMS])
}

/// Files `write_all` renders from the evidence itself; [`files_digest`]
/// covers everything else.
pub const VIEWS: [&str; 5] = [
    EVIDENCE_JSON,
    JUNIT_XML,
    statement::STATEMENT_JSON,
    html::REPORT_HTML,
    SHA256SUMS,
];

/// The digest of every file under `dir` except the [`VIEWS`], recorded in
/// `Evidence.files` before sealing and re-derived by `replay`.
///
/// # Errors
/// Any I/O error while walking or hashing.
pub fn files_digest(dir: &Path) -> io::Result<FilesDigest> {
    let entries = entries(dir, &VIEWS)?;
    Ok(FilesDigest {
        count: entries.len() as u64,
        sha256: listing_digest(&entries),
        entries,
    })
}

/// sha256 hex of [`listing_text`] of `entries`, hashed line by line (the
/// text of 8,000 files is 1.4 MB, never held).
pub fn listing_digest(entries: &[FileEntry]) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    for e in entries {
        hasher.update(sums_line(&e.sha256, &e.path).as_bytes());
    }
    hash::to_hex(&hasher.finalize())
}

/// The `SHA256SUMS`-format text of `entries`, in their order.
pub fn listing_text(entries: &[FileEntry]) -> String {
    entries
        .iter()
        .map(|e| sums_line(&e.sha256, &e.path))
        .collect()
}

/// `SHA256SUMS`-format lines for every regular file under `dir`, sorted by
/// path, leaving out the top-level files named in `exclude` (and their
/// atomic-write temporaries `.<name>.*`).
fn listing(dir: &Path, exclude: &[&str]) -> io::Result<String> {
    Ok(listing_text(&entries(dir, exclude)?))
}

/// Every regular file under `dir` (walked sorted by file name), leaving out
/// the top-level files named in `exclude` and their atomic-write temporaries.
///
/// # Errors
/// Any I/O error while walking or hashing.
pub fn entries(dir: &Path, exclude: &[&str]) -> io::Result<Vec<FileEntry>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(dir).map_err(io::Error::other)?;
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if exclude
            .iter()
            .any(|x| rel == *x || rel.starts_with(&format!(".{x}.")))
        {
            continue;
        }
        let digest = hash::sha256_file(entry.path())?;
        out.push(FileEntry {
            path: rel,
            sha256: digest.hex(),
        });
    }
    Ok(out)
}

/// Records [`files_digest`], seals (see [`seal`]) and writes every view
/// ([`write_all`]): the one way a run or a merge finishes its evidence.
///
/// # Errors
/// Any I/O error.
pub fn finish(
    dir: &Path,
    evidence: &mut Evidence,
    signed_off_by: Option<String>,
) -> io::Result<()> {
    evidence.files = Some(files_digest(dir)?);
    seal(evidence, signed_off_by);
    write_all(dir, evidence)
}

/// One `SHA256SUMS` line, as GNU `sha256sum` (coreutils 9) writes it:
/// `<hex>  <path>\n`; a path holding a backslash, newline or carriage return
/// gets a leading `\` on the line and those characters escaped as `\\`,
/// `\n` and `\r` (observed with `sha256sum` 9.1, which `sha256sum -c` reads
/// back; `-z` is the only option that disables this escaping).
pub fn sums_line(hex: &str, path: &str) -> String {
    if path.contains(['\\', '\n', '\r']) {
        let escaped = path
            .replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('\r', "\\r");
        format!("\\{hex}  {escaped}\n")
    } else {
        format!("{hex}  {path}\n")
    }
}

/// Parses one line of a `SHA256SUMS` file written by [`sums_line`] (or GNU
/// `sha256sum` in text or binary mode) into `(hex, path)`, unescaping an
/// escaped path. `None` for a line of any other shape.
pub fn parse_sums_line(line: &str) -> Option<(String, String)> {
    let (escaped, line) = match line.strip_prefix('\\') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (hex, rest) = line.split_at_checked(64)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let path = rest
        .strip_prefix("  ")
        .or_else(|| rest.strip_prefix(" *"))?;
    if path.is_empty() {
        return None;
    }
    if !escaped {
        return Some((hex.to_string(), path.to_string()));
    }
    let mut out = String::with_capacity(path.len());
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '\\' => out.push('\\'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            _ => return None,
        }
    }
    Some((hex.to_string(), out))
}

/// Reads and parses `dir/evidence.json`.
///
/// # Errors
/// I/O or JSON errors, as text naming the file.
pub fn read(dir: &Path) -> Result<Evidence, String> {
    let path = dir.join(EVIDENCE_JSON);
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Small synthetic evidence documents for the views' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Asserts every check passed and carries a non-empty object of observed
    /// values (what the evidence schema asks of a pass, held to an object).
    pub fn assert_all_pass_with_observed_object(checks: &[Check]) {
        for c in checks {
            assert_eq!(c.result, CheckResult::Pass, "{}: {}", c.name, c.detail);
            assert!(
                c.observed
                    .as_ref()
                    .and_then(|o| o.as_object())
                    .is_some_and(|o| !o.is_empty()),
                "{} has no observed values",
                c.name
            );
        }
    }

    /// A gate record `id` with `result`, `required`, and `checks`.
    pub fn gate(id: &str, result: GateResult, required: bool, checks: Vec<Check>) -> GateRecord {
        GateRecord {
            id: id.into(),
            result,
            reason: match result {
                GateResult::Pass => None,
                GateResult::Fail => Some("1 of 1 checks failed".into()),
                GateResult::Blocked => Some("prerequisite gate(s) did not pass: stage".into()),
                GateResult::Skipped if required => {
                    Some("the run was interrupted before this gate started".into())
                }
                GateResult::Skipped => Some(crate::pipeline::NOT_SELECTED_REASON.into()),
            },
            note: None,
            proves: String::new(),
            does_not_prove: String::new(),
            required,
            duration_ms: 10,
            started_ms: None,
            candidates_left_out: Vec::new(),
            checks,
        }
    }

    /// Evidence of a run with `gates` and `verdict`; `partial` when some
    /// catalogue gate is not among the required `gates`.
    pub fn evidence(gates: Vec<GateRecord>, verdict: Verdict) -> Evidence {
        let required: Vec<String> = crate::catalogue::all()
            .iter()
            .filter(|g| gates.iter().any(|r| r.id == g.id && r.required))
            .map(|g| g.id.clone())
            .collect();
        Evidence {
            schema_version: "1".into(),
            tool: Tool {
                name: "verify-coding-candidates".into(),
                version: "0.1.0".into(),
            },
            verdict,
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:00:01Z".into(),
            profile: ProfileRecord {
                name: "coding-runners".into(),
                origin: "built-in".into(),
                sha256: "00".repeat(32),
            },
            selection: Selection::new(None, required, None),
            source: Source {
                repo: "/repo".into(),
                commit: "ab".repeat(20),
                tree: "cd".repeat(20),
                archive_sha256: None,
                ignored_files: Vec::new(),
                export_attributes: Vec::new(),
                origin: None,
                worktree: None,
            },
            sdk: Sdk::default(),
            gates,
            candidates: Vec::new(),
            attestation: Attestation {
                statement: statement::STATEMENT_JSON.into(),
                statement_type: statement::STATEMENT_TYPE.into(),
                predicate_type: statement::PREDICATE_TYPE.into(),
                signed: false,
            },
            merged_from: None,
            files: None,
            suites: None,
            wheelhouse: None,
            signals: Vec::new(),
            swept: Vec::new(),
            sdk_groups: None,
            sign_off: SignOff {
                verdict,
                evidence_sha256: "ef".repeat(32),
                signed_off_by: None,
                archives_signed: false,
            },
        }
    }

    /// Every catalogue gate, required and passing with one passing check.
    pub fn full_pass() -> Evidence {
        let gates = crate::catalogue::all()
            .iter()
            .map(|g| {
                gate(
                    &g.id,
                    GateResult::Pass,
                    true,
                    vec![Check::pass("held", None, "it held")],
                )
            })
            .collect();
        evidence(gates, Verdict::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA256SUMS made from the recorded digests and the views is the one a
    /// fresh walk of DIR makes, views placed where the walk finds them (a
    /// folder named like a view's stem sorts before it, one after it
    /// after), and `files`' digest is its listing's.
    #[test]
    fn sums_from_the_recorded_files_and_the_views_are_the_walks() {
        let dir = tempfile::tempdir().unwrap();
        for (path, body) in [
            (".hidden", "h"),
            ("a/x", "1"),
            ("evidence/y", "2"),
            ("evidence.json", "{}"),
            ("f", "3"),
            ("junit.xml", "<x/>"),
            ("junit.xml.d/z", "4"),
            ("report.html", "<p>"),
            ("roots/deep/er", "5"),
            ("statement.intoto.json", "{}"),
            ("zz/q", "6"),
        ] {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let files = files_digest(dir.path()).unwrap();
        assert_eq!(files.count, 7);
        assert_eq!(
            files.sha256,
            hash::sha256_bytes(listing_text(&files.entries).as_bytes())
        );
        let mut out = Vec::new();
        write_sums_with_views(&mut out, dir.path(), &files.entries).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            sha256sums(dir.path()).unwrap()
        );
    }

    #[test]
    fn a_gate_without_input_is_neither_run_nor_a_partial_selection() {
        let all: Vec<String> = crate::catalogue::all()
            .iter()
            .map(|g| g.id.clone())
            .collect();
        let required: Vec<String> = all
            .iter()
            .filter(|id| *id != "historical-admission")
            .cloned()
            .collect();
        let plain = Selection::new(None, required.clone(), None);
        assert!(plain.partial, "left out without a reason: partial");
        let s = Selection::new(None, required.clone(), None)
            .with_not_applicable(vec!["historical-admission".into()]);
        assert!(!s.partial);
        assert!(s.gates_not_run.is_empty());
        assert_eq!(s.not_applicable, ["historical-admission"]);
        // An --only run stays partial.
        let only = Selection::new(
            Some(vec!["tree-clean".into()]),
            vec!["tree-clean".into()],
            None,
        )
        .with_not_applicable(vec!["historical-admission".into()]);
        assert!(only.partial);
        assert!(!only
            .gates_not_run
            .contains(&"historical-admission".to_string()));
    }

    #[test]
    fn sums_lines_escape_like_gnu_sha256sum_and_parse_back() {
        let hex = "ab".repeat(32);
        assert_eq!(sums_line(&hex, "a b/c.py"), format!("{hex}  a b/c.py\n"));
        let odd = "pkg/new\nline\\x\r.py";
        let line = sums_line(&hex, odd);
        assert_eq!(line, format!("\\{hex}  pkg/new\\nline\\\\x\\r.py\n"));
        assert_eq!(
            parse_sums_line(line.trim_end_matches('\n')),
            Some((hex.clone(), odd.to_string()))
        );
        assert_eq!(
            parse_sums_line(&format!("{hex} *bin.dat")),
            Some((hex.clone(), "bin.dat".to_string()))
        );
        assert_eq!(parse_sums_line("not a line"), None);
        assert_eq!(parse_sums_line(&format!("\\{hex}  bad\\q")), None);
        assert_eq!(parse_sums_line(&format!("{hex}  ")), None);
    }

    #[test]
    fn written_views_are_mode_0644() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "junit.xml", b"x").unwrap();
        let mode = fs::metadata(dir.path().join("junit.xml"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    /// The digest is the one replay and merge recompute from a file: keys
    /// sorted at every level, compact, without `sign_off`, as the text the
    /// sign-off hashed when it was built as a second, sorted tree.
    #[test]
    fn the_streamed_digest_equals_the_sha256_of_the_sorted_compact_text() {
        let doc = serde_json::json!({
            "z": [{"b": 1, "a": {"d": "é\n", "c": null}}, 2.5],
            "sign_off": {"evidence_sha256": "x"},
            "a": {"y": true, "x": [], "w": {}}
        });
        let text = r#"{"a":{"w":{},"x":[],"y":true},"z":[{"a":{"c":null,"d":"é\n"},"b":1},2.5]}"#;
        assert_eq!(
            canonical_digest(&doc),
            crate::hash::sha256_bytes(text.as_bytes())
        );
        // From the document's text, in any key order and layout.
        for written in [
            serde_json::to_string(&doc).unwrap(),
            serde_json::to_string_pretty(&doc).unwrap(),
            r#" { "sign_off" : 1, "a":{"x":[ ],"w":{ },"y":true},
                "z":[ {"a":{"d":"\u00e9\n","c":null},"b":1}, 2.5 ] } "#
                .to_string(),
        ] {
            assert_eq!(
                canonical_digest_of_text(written.as_bytes()).unwrap(),
                canonical_digest(&doc),
                "{written}"
            );
        }
        // A key with an escape sorts and is written as the tree's is.
        let odd = serde_json::json!({"b\"q": {"\u{1}": 1, "a": [true]}, "a": "x"});
        assert_eq!(
            canonical_digest_of_text(serde_json::to_string(&odd).unwrap().as_bytes()).unwrap(),
            canonical_digest(&odd)
        );
        assert!(canonical_digest_of_text(b"{\"a\": [1,}").is_err());
    }

    #[test]
    fn canonical_digest_ignores_key_order_and_sign_off() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":3},"sign_off":{"v":1}}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":1}"#).unwrap();
        assert_eq!(canonical_digest(&a), canonical_digest(&b));
        let c: serde_json::Value = serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":2}"#).unwrap();
        assert_ne!(canonical_digest(&a), canonical_digest(&c));
    }
}
