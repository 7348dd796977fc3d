//! `verify-coding-candidates replay`: re-derive every recorded digest of an
//! evidence directory and report each item as recorded / observed / match.
//!
//! Without `--repo` it checks the directory itself: `SHA256SUMS`, the
//! sign-off's evidence digest, every archive's sha256, every member's digest,
//! every content digest, and every wheelhouse file's sha256 and size with the
//! PEP 503 index pages re-derived from them; `statement.intoto.json` and
//! `junit.xml` are rendered again from `evidence.json` and compared field by
//! field and testcase by testcase (see `src/replay/views.rs`). With `--repo` it also confirms
//! the commit exists, re-creates the `git archive` and rebuilds every
//! candidate with the official build in a fresh temporary directory,
//! comparing content digests and whole archive digests. A whole-archive difference confined to the bytes of
//! `manifest.yaml`'s ZIP timestamp (the build stamps the wall clock) is
//! verified byte by byte and reported as the known build-clock difference.

use crate::evidence::{self, Evidence, SHA256SUMS};
use crate::gates::lbp_build::official_build_spec;
use crate::process;
use crate::{archive, git, hash, lbpkg, wheelhouse};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod groups;
mod redecide;
mod views;

pub use redecide::NotRedecided;

/// The outcome of one replayed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Recorded and observed agree.
    Yes,
    /// They differ only in the ZIP timestamp of `manifest.yaml`, verified byte by byte.
    BuildClock,
    /// They differ.
    No,
}

/// One row of the replay table.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was compared.
    pub item: String,
    /// The recorded value.
    pub recorded: String,
    /// The observed value.
    pub observed: String,
    /// Whether they agree.
    pub matches: Match,
}

impl Row {
    /// The row as `--format json` prints it: `matches` is a boolean (true
    /// for a build-clock difference too), and `build_clock` says whether the
    /// archives differ only in `manifest.yaml`'s ZIP timestamp.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "item": self.item,
            "recorded": self.recorded,
            "observed": self.observed,
            "matches": self.matches != Match::No,
            "build_clock": self.matches == Match::BuildClock,
        })
    }

    fn new(
        item: impl Into<String>,
        recorded: impl Into<String>,
        observed: impl Into<String>,
    ) -> Self {
        let (recorded, observed) = (recorded.into(), observed.into());
        let matches = if recorded == observed {
            Match::Yes
        } else {
            Match::No
        };
        Self {
            item: item.into(),
            recorded,
            observed,
            matches,
        }
    }
}

/// What to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The evidence directory.
    pub evidence: PathBuf,
    /// The repository, for the commit, `git archive` and rebuild checks.
    pub repo: Option<PathBuf>,
    /// Interpreter for the rebuild (default: `$PYTHON`, then the recorded one).
    pub python: Option<PathBuf>,
    /// Rebuild with the recorded interpreter only, whatever `$PYTHON` says:
    /// a non-default SDK group's directory, whose interpreter is its own.
    pub recorded_python_only: bool,
}

/// The interpreter that rebuilt the archives (`replay --repo`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rebuild {
    /// Its path, as run.
    pub python: String,
    /// Where it came from: `--python`, `$PYTHON` or `evidence.json` (the
    /// run's own interpreter).
    pub from: &'static str,
    /// The `langbot-plugin` version it has.
    pub sdk_version: String,
}

/// What a replay found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Every compared item.
    pub rows: Vec<Row>,
    /// The rebuild's interpreter, when `--repo` asked for a rebuild and one
    /// could be used.
    pub rebuild: Option<Rebuild>,
    /// The gates (and checks) not re-decided from the directory's raw
    /// observations, each with why (`src/replay/redecide.rs`).
    pub not_redecided: Vec<NotRedecided>,
}

/// Replays `opts`. Returns every row; the caller decides the exit code
/// (0 only when no row is [`Match::No`]).
///
/// # Errors
/// When the replay cannot run (exit code 2): the evidence directory or its
/// `evidence.json` cannot be read at all, `--repo` is not a git repository,
/// or the rebuild's interpreter does not exist or has no `langbot-plugin`.
pub fn replay(opts: &ReplayOptions) -> Result<Report, String> {
    let dir = &opts.evidence;
    if !dir.join(evidence::EVIDENCE_JSON).is_file() {
        return Err(format!(
            "--evidence {}: expected an evidence directory with evidence.json, found none",
            dir.display()
        ));
    }
    let repo = opts.repo.as_deref().map(git::toplevel).transpose()?;
    let mut report = Report {
        rows: Vec::new(),
        rebuild: None,
        not_redecided: Vec::new(),
    };
    let rows = &mut report.rows;
    check_sums(dir, rows);
    let Some((ev, digest)) = read_sealed(dir, rows)? else {
        return Ok(report);
    };
    // Decided before any slow check: an interpreter that cannot rebuild is a
    // reason the replay cannot run, not a mismatch.
    let work = match &repo {
        Some(_) => Some(
            tempfile::Builder::new()
                .prefix("vcc-replay-")
                .tempdir()
                .map_err(|e| format!("cannot create a temporary directory: {e}"))?,
        ),
        None => None,
    };
    if let Some(work) = &work {
        report.rebuild = rebuild_interpreter(opts, &ev, work.path(), rows)?;
    }
    // The views rendered from evidence.json: neither digest above covers them.
    views::check_views(dir, &ev, &digest, rows);
    // The checks, re-decided from the raw observations the directory keeps:
    // an evidence.json edited and resealed with every view regenerated
    // agrees with its views, not with what the run observed.
    let not_redecided = redecide::redecide(dir, &ev, rows);
    candidate_verdicts(&ev, rows);
    // Every other file of the directory, as the sign-off covers it: catches a
    // changed log or staged file even when SHA256SUMS was rewritten to match.
    if let Some(recorded) = &ev.files {
        check_files(dir, recorded, rows);
    }
    replay_archives(dir, &ev, rows);
    if let Some(w) = &ev.wheelhouse {
        replay_wheelhouse(dir, w, rows);
    }
    replay_source_tar(dir, &ev, rows);
    if let (Some(repo), Some(work)) = (&repo, &work) {
        let python = report.rebuild.as_ref().map(|r| PathBuf::from(&r.python));
        replay_against_repo(opts, repo, &ev, python.as_deref(), work.path(), rows);
    }
    let mut not_redecided = not_redecided;
    groups::replay_groups(opts, dir, &ev, rows, &mut not_redecided);
    report.not_redecided = not_redecided;
    Ok(report)
}

/// `evidence.json` read back: its sign-off digest re-derived (a row), then
/// parsed as schema v1; `None` when it does not parse (the row says why).
///
/// # Errors
/// When the file cannot be read.
fn read_sealed(dir: &Path, rows: &mut Vec<Row>) -> Result<Option<(Evidence, String)>, String> {
    let text = fs::read_to_string(dir.join(evidence::EVIDENCE_JSON))
        .map_err(|e| format!("{}/evidence.json: {e}", dir.display()))?;
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            rows.push(Row::new(
                "evidence.json parses",
                "JSON",
                format!("invalid: {e}"),
            ));
            return Ok(None);
        }
    };
    let recorded_digest = value
        .pointer("/sign_off/evidence_sha256")
        .and_then(|v| v.as_str())
        .unwrap_or("(missing)")
        .to_string();
    let digest = evidence::canonical_digest(&value);
    rows.push(Row::new(
        "sign-off evidence_sha256",
        recorded_digest,
        digest.clone(),
    ));
    let ev: Evidence = match serde_json::from_value(value) {
        Ok(e) => e,
        Err(e) => {
            rows.push(Row::new(
                "evidence.json schema v1",
                "valid",
                format!("invalid: {e}"),
            ));
            return Ok(None);
        }
    };
    Ok(Some((ev, digest)))
}

/// Each candidate's archive re-hashed (sha256, size) and its members
/// compared with the recorded digests.
fn replay_archives(dir: &Path, ev: &Evidence, rows: &mut Vec<Row>) {
    for c in &ev.candidates {
        let Some(a) = &c.archive else { continue };
        if !inside_relative(&a.path) {
            rows.push(Row::new(
                format!("{} archive path", c.folder),
                "a relative path inside the evidence directory",
                &a.path,
            ));
            continue;
        }
        let path = dir.join(&a.path);
        match hash::sha256_file(&path) {
            Ok(d) => {
                rows.push(Row::new(format!("{} sha256", a.path), &a.sha256, d.hex()));
                rows.push(Row::new(
                    format!("{} size", a.path),
                    a.size.to_string(),
                    d.size.to_string(),
                ));
            }
            Err(e) => rows.push(Row::new(
                format!("{} sha256", a.path),
                &a.sha256,
                format!("unreadable: {e}"),
            )),
        }
        replay_members(&path, a, rows);
    }
}

/// The members of the archive at `path` against `a`'s records: each
/// digest, none missing or added, and the content digest.
fn replay_members(path: &Path, a: &evidence::ArchiveRecord, rows: &mut Vec<Row>) {
    match member_digests(path) {
        Ok(members) => {
            let observed: BTreeMap<&str, (&str, u64)> = members
                .iter()
                .map(|m| (m.name.as_str(), (m.sha256.as_str(), m.size)))
                .collect();
            let mut bad = 0;
            for m in &a.members {
                match observed.get(m.name.as_str()) {
                    Some((sha, size)) if *sha == m.sha256 && *size == m.size => {}
                    Some((sha, _)) => {
                        bad += 1;
                        rows.push(Row::new(
                            format!("{} member {}", a.path, m.name),
                            &m.sha256,
                            *sha,
                        ));
                    }
                    None => {
                        bad += 1;
                        rows.push(Row::new(
                            format!("{} member {}", a.path, m.name),
                            &m.sha256,
                            "missing",
                        ));
                    }
                }
            }
            for m in &members {
                if !a.members.iter().any(|r| r.name == m.name) {
                    bad += 1;
                    rows.push(Row::new(
                        format!("{} member {}", a.path, m.name),
                        "absent",
                        &m.sha256,
                    ));
                }
            }
            if bad == 0 {
                rows.push(Row::new(
                    format!("{} members", a.path),
                    format!("{} digests", a.members.len()),
                    format!("{} digests", members.len()),
                ));
            }
            rows.push(Row::new(
                format!("{} content digest", a.path),
                &a.content_digest,
                content_digest(&members),
            ));
        }
        Err(e) => rows.push(Row::new(
            format!("{} members", a.path),
            "readable ZIP",
            format!("unreadable: {e}"),
        )),
    }
}

/// `staging/source.tar` re-hashed against the recorded digest (a merged
/// directory without it is left out).
fn replay_source_tar(dir: &Path, ev: &Evidence, rows: &mut Vec<Row>) {
    if let Some(recorded) = &ev.source.archive_sha256 {
        // A merged directory holds no staging/ (merge copies the archives only).
        let tar = dir.join("staging").join("source.tar");
        if ev.merged_from.is_none() || tar.exists() {
            let observed = hash::sha256_file(&tar)
                .map(|d| d.hex())
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            rows.push(Row::new("staging/source.tar sha256", recorded, observed));
        }
    }
}

/// The sign-off's files digest, re-derived; when it differs, every file
/// whose digest differs from the sealed listing (`files.entries`) is named
/// (`files digest: <path>`), unless `SHA256SUMS` already named it.
fn check_files(dir: &Path, recorded: &evidence::FilesDigest, rows: &mut Vec<Row>) {
    let current = evidence::entries(dir, &evidence::VIEWS);
    let observed = current
        .as_ref()
        .map(|e| evidence::listing_digest(e))
        .unwrap_or_else(|e| format!("unreadable: {e}"));
    let differs = observed != recorded.sha256;
    rows.push(Row::new(
        format!("files digest ({} files besides the views)", recorded.count),
        &recorded.sha256,
        observed,
    ));
    let (true, Ok(current)) = (differs, current) else {
        return;
    };
    if recorded.entries.is_empty() {
        return;
    }
    let sealed = evidence::listing_digest(&recorded.entries);
    if sealed != recorded.sha256 {
        rows.push(Row::new(
            "files digest listing (files.entries)",
            &recorded.sha256,
            sealed,
        ));
        return;
    }
    let before: BTreeMap<&str, &str> = recorded
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.sha256.as_str()))
        .collect();
    let after: BTreeMap<&str, &str> = current
        .iter()
        .map(|e| (e.path.as_str(), e.sha256.as_str()))
        .collect();
    let mut named = Vec::new();
    for (path, sha) in &before {
        match after.get(path) {
            Some(now) if now == sha => {}
            Some(now) => named.push((path.to_string(), sha.to_string(), now.to_string())),
            None => named.push((path.to_string(), sha.to_string(), "removed".into())),
        }
    }
    for (path, sha) in &after {
        if !before.contains_key(path) {
            named.push((path.to_string(), "absent".into(), sha.to_string()));
        }
    }
    for (path, recorded, observed) in named {
        // SHA256SUMS, when it was not rewritten, already names the file.
        if rows.iter().any(|r| r.item == format!("file {path}")) {
            continue;
        }
        rows.push(Row::new(
            format!("files digest: {path}"),
            recorded,
            observed,
        ));
    }
}

/// Which interpreter rebuilds, checked before anything is rebuilt: `--python`,
/// else `$PYTHON`, else the absolute interpreter `evidence.json` records. A
/// relative recorded interpreter is never run (it would resolve inside the
/// rebuild's copy of the repository): a mismatch row says so and `Ok(None)`
/// skips the rebuild. The interpreter's `langbot-plugin` version is compared
/// with the recorded one as a row.
///
/// # Errors
/// When the interpreter does not exist, is not executable, or has no
/// `langbot-plugin`: the replay cannot run.
fn rebuild_interpreter(
    opts: &ReplayOptions,
    ev: &Evidence,
    work: &Path,
    rows: &mut Vec<Row>,
) -> Result<Option<Rebuild>, String> {
    let from_env = std::env::var_os("PYTHON")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let from_env = from_env.filter(|_| !opts.recorded_python_only);
    let (given, from) = match (&opts.python, from_env) {
        (Some(p), _) => (p.clone(), "--python"),
        (None, Some(p)) => (p, "$PYTHON"),
        (None, None) if Path::new(&ev.sdk.python).is_absolute() => {
            (PathBuf::from(&ev.sdk.python), "evidence.json")
        }
        (None, None) => {
            rows.push(Row::new(
                "rebuild interpreter",
                "an absolute interpreter path",
                format!(
                    "evidence.json names {:?}, a relative path, which is never run; pass --python \
                     with the interpreter that has the pinned SDK",
                    ev.sdk.python
                ),
            ));
            return Ok(None);
        }
    };
    let python = crate::pipeline::check_python(Some(&given)).map_err(|e| {
        let message = e.0;
        match from {
            "--python" => message,
            "$PYTHON" => message.replacen("--python", "$PYTHON", 1),
            _ => format!(
                "the interpreter evidence.json records cannot rebuild here ({}); pass --python with an \
                 interpreter that has {}",
                message.replacen("--python ", "", 1),
                ev.sdk.requirement
            ),
        }
    })?;
    let version = sdk_version(&python, work).map_err(|e| {
        format!(
            "{from} {}: expected an interpreter with langbot-plugin installed (the official build needs \
             it; the run used {}), found {e}; pass --python with the interpreter `cargo xtask sdk` \
             prints",
            python.display(),
            ev.sdk.requirement
        )
    })?;
    rows.push(Row::new(
        "rebuild interpreter langbot-plugin",
        ev.sdk
            .version
            .clone()
            .unwrap_or_else(|| "(not recorded)".into()),
        version.clone(),
    ));
    Ok(Some(Rebuild {
        python: python.display().to_string(),
        from,
        sdk_version: version,
    }))
}

/// The `langbot-plugin` version `python` has, asked in isolated mode.
fn sdk_version(python: &Path, work: &Path) -> Result<String, String> {
    let spec = process::ChildSpec {
        program: python.to_path_buf(),
        args: vec![
            "-I".into(),
            "-B".into(),
            "-c".into(),
            "import importlib.metadata as m; print(m.version('langbot-plugin'))".into(),
        ],
        cwd: work.to_path_buf(),
        env: process::base_env(),
        timeout: Duration::from_secs(60),
        log_stem: work.join("logs").join("sdk-version"),
        stdin: None,
    };
    let out = process::run(&spec).map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!("none ({}: {})", out.describe(), out.tail(1).trim()));
    }
    Ok(out.stdout_text().trim().to_string())
}

/// The row of the wheelhouse's index: its pages as derived from the
/// recorded files, every page equal and none other.
fn index_row(base: &Path, w: &crate::evidence::WheelhouseRecord) -> Row {
    let pages = wheelhouse::render_index(&w.files);
    let index = base.join(wheelhouse::INDEX_DIR_NAME);
    let mut differing: Vec<String> = pages
        .iter()
        .filter(|(rel, text)| {
            fs::read_to_string(index.join(rel)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(rel, _)| rel.clone())
        .collect();
    for entry in walkdir::WalkDir::new(&index)
        .min_depth(1)
        .into_iter()
        .flatten()
    {
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(&index)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !pages.contains_key(&rel) {
            differing.push(format!("{rel} (not derived from the recorded files)"));
        }
    }
    let expected = format!("{} page(s) derived from the recorded files", pages.len());
    let observed = if differing.is_empty() {
        expected.clone()
    } else {
        format!("differs: {}", differing.join(", "))
    };
    Row::new(
        format!("{} index", w.index.trim_end_matches('/')),
        expected,
        observed,
    )
}

/// Every wheelhouse file's sha256 and size, each downloaded file against the
/// sha256 its index published, and the PEP 503 index pages as
/// re-derived from the recorded files (a page pointing pip at other bytes is
/// drift even when every wheel still matches).
fn replay_wheelhouse(dir: &Path, w: &crate::evidence::WheelhouseRecord, rows: &mut Vec<Row>) {
    let base = dir.join(wheelhouse::DIR_NAME);
    for f in &w.files {
        let item = format!("{}/{}", wheelhouse::DIR_NAME, f.name);
        if f.name.contains('/') || !inside_relative(&f.name) {
            rows.push(Row::new(
                format!("{item} name"),
                "a file name inside the wheelhouse",
                &f.name,
            ));
            continue;
        }
        match hash::sha256_file(&base.join(&f.name)) {
            Ok(d) => {
                rows.push(Row::new(format!("{item} sha256"), &f.sha256, d.hex()));
                rows.push(Row::new(
                    format!("{item} size"),
                    f.size.to_string(),
                    d.size.to_string(),
                ));
            }
            Err(e) => rows.push(Row::new(
                format!("{item} sha256"),
                &f.sha256,
                format!("unreadable: {e}"),
            )),
        }
    }
    // A downloaded file is still the one the index published for its URL.
    for src in w.downloads.iter().flat_map(|d| &d.sources) {
        if src.provenance != crate::evidence::Provenance::Downloaded
            || src.file.contains('/')
            || !inside_relative(&src.file)
        {
            continue;
        }
        let observed = hash::sha256_file(&base.join(&src.file))
            .map(|d| d.hex())
            .unwrap_or_else(|e| format!("unreadable: {e}"));
        rows.push(Row::new(
            format!(
                "{}/{} published sha256 ({})",
                wheelhouse::DIR_NAME,
                src.file,
                src.url
            ),
            &src.published_sha256,
            observed,
        ));
    }
    rows.push(index_row(&base, w));
}

fn check_sums(dir: &Path, rows: &mut Vec<Row>) {
    let sums = match fs::read_to_string(dir.join(SHA256SUMS)) {
        Ok(s) => s,
        Err(e) => {
            rows.push(Row::new(
                "SHA256SUMS",
                "present",
                format!("unreadable: {e}"),
            ));
            return;
        }
    };
    let mut listed = BTreeSet::new();
    let mut bad = 0usize;
    for line in sums.split('\n').filter(|l| !l.is_empty()) {
        let Some((digest, path)) = evidence::parse_sums_line(line) else {
            bad += 1;
            rows.push(Row::new("SHA256SUMS line", "`<sha256>  <path>`", line));
            continue;
        };
        if !inside_relative(&path) {
            bad += 1;
            rows.push(Row::new(
                "SHA256SUMS line",
                "a relative path inside the evidence directory",
                line,
            ));
            continue;
        }
        let digest = digest.as_str();
        let path = path.as_str();
        listed.insert(path.to_string());
        // A name that is not UTF-8 is listed lossily (U+FFFD): found by
        // that reading, folder by folder.
        match hash::sha256_file(&crate::sweep::on_disk(dir, path)) {
            Ok(d) if d.hex() == digest => {}
            Ok(d) => {
                bad += 1;
                rows.push(Row::new(format!("file {path}"), digest, d.hex()));
            }
            Err(_) => {
                bad += 1;
                rows.push(Row::new(format!("file {path}"), digest, "removed"));
            }
        }
    }
    match evidence::sha256sums(dir) {
        Ok(current) => {
            for line in current.split('\n').filter(|l| !l.is_empty()) {
                if let Some((digest, path)) = evidence::parse_sums_line(line) {
                    if !listed.contains(&path) {
                        bad += 1;
                        rows.push(Row::new(format!("file {path}"), "absent", digest));
                    }
                }
            }
        }
        Err(e) => rows.push(Row::new(
            "evidence directory",
            "readable",
            format!("unreadable: {e}"),
        )),
    }
    if bad == 0 {
        rows.push(Row::new(
            "SHA256SUMS",
            format!("{} files", listed.len()),
            format!("{} files", listed.len()),
        ));
    }
}

/// True for a `/`-separated relative path without empty, `.` or `..`
/// components: one that names a file inside the evidence directory.
fn inside_relative(path: &str) -> bool {
    !path.starts_with('/')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// The rows of candidate `c`'s archive rebuilt by `python` from the
/// commit's source (`source`, extracted under `work`): its content digest
/// and its sha256 (a difference of the build clock only told apart).
fn rebuild_rows(
    opts: &ReplayOptions,
    c: &evidence::CandidateRecord,
    python: &Path,
    source: &Path,
    work: &Path,
    rows: &mut Vec<Row>,
) {
    let Some(a) = &c.archive else { return };
    let label = format!("rebuild {}", c.folder);
    if !inside_relative(&a.path) || !inside_relative(&c.path) || !inside_relative(&c.folder) {
        rows.push(Row::new(
            label,
            "candidate and archive paths inside the repository and evidence directory",
            format!(
                "candidate {:?}, folder {:?}, archive {:?}",
                c.path, c.folder, a.path
            ),
        ));
        return;
    }
    let out = work.join("out").join(&c.folder);
    match rebuild(python, &source.join(&c.path), &out, work, &c.folder) {
        Ok(file) => {
            match member_digests(&file) {
                Ok(m) => rows.push(Row::new(
                    format!("{label} content digest"),
                    &a.content_digest,
                    content_digest(&m),
                )),
                Err(e) => rows.push(Row::new(
                    format!("{label} content digest"),
                    &a.content_digest,
                    e,
                )),
            }
            let recorded_file = opts.evidence.join(&a.path);
            let observed = hash::sha256_file(&file)
                .map(|d| d.hex())
                .unwrap_or_else(|e| e.to_string());
            let mut row = Row::new(format!("{label} archive sha256"), &a.sha256, observed);
            if row.matches == Match::No && clock_only_difference(&recorded_file, &file).is_ok() {
                row.matches = Match::BuildClock;
            }
            rows.push(row);
        }
        Err(e) => rows.push(Row::new(label, "one archive", e)),
    }
}

fn replay_against_repo(
    opts: &ReplayOptions,
    repo: &Path,
    ev: &Evidence,
    python: Option<&Path>,
    work: &Path,
    rows: &mut Vec<Row>,
) {
    let commit = &ev.source.commit;
    let exists = git::run(
        repo,
        &["cat-file", "-e", &format!("{commit}^{{commit}}")],
        None,
        None,
    )
    .is_ok();
    rows.push(Row::new(
        "commit exists",
        commit.clone(),
        if exists {
            commit.clone()
        } else {
            "not found".into()
        },
    ));
    if !exists {
        return;
    }
    let tar = work.join("source.tar");
    let tar_arg = tar.display().to_string();
    let archived = git::run(
        repo,
        &["archive", "--format=tar", "-o", &tar_arg, commit],
        None,
        None,
    )
    .and_then(|_| hash::sha256_file(&tar).map_err(|e| e.to_string()));
    let recorded = ev
        .source
        .archive_sha256
        .clone()
        .unwrap_or_else(|| "(not recorded)".into());
    match archived {
        Ok(d) => rows.push(Row::new("git archive sha256", recorded, d.hex())),
        Err(e) => {
            rows.push(Row::new(
                "git archive sha256",
                recorded,
                format!("failed: {e}"),
            ));
            return;
        }
    }
    let source = work.join("source");
    if let Err(e) = archive::extract_tar(&tar, &source) {
        rows.push(Row::new("git archive extraction", "safe", e.to_string()));
        return;
    }
    let Some(python) = python else { return };
    for c in &ev.candidates {
        rebuild_rows(opts, c, python, &source, work, rows);
    }
}

/// Runs the official build of the candidate at `source` into `out` and
/// returns the single archive it wrote.
fn rebuild(
    python: &Path,
    source: &Path,
    out: &Path,
    work: &Path,
    folder: &str,
) -> Result<PathBuf, String> {
    let roots = work.join("roots").join(folder);
    let (home, tmp) = (roots.join("home"), roots.join("tmp"));
    for d in [&home, &tmp, &out.to_path_buf()] {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut env = process::base_env();
    env.insert("HOME".into(), home.display().to_string());
    env.insert("TMPDIR".into(), tmp.display().to_string());
    env.insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
    let spec = official_build_spec(
        python,
        source,
        out,
        env,
        Duration::from_secs(300),
        roots.join("build"),
    );
    let output = process::run(&spec).map_err(|e| e.to_string())?;
    if !output.success() {
        return Err(format!(
            "official build {}: {}",
            output.describe(),
            output.tail(5)
        ));
    }
    let files: Vec<PathBuf> = fs::read_dir(out)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    match files.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "expected one archive, the build wrote {}: {}",
            files.len(),
            output.tail(5)
        )),
    }
}

/// Ok when `a` and `b` have the same length and every differing byte lies in
/// the DOS time/date fields of `manifest.yaml`'s local header (offsets 10..14)
/// or central directory entry (offsets 12..16) — the clock the build stamps.
/// Source: PKWARE APPNOTE 4.3.7 (local file header), 4.3.12 (central directory).
///
/// # Errors
/// A sentence naming the first byte that differs outside those fields.
pub fn clock_only_difference(a: &Path, b: &Path) -> Result<(), String> {
    let (la, lb) = (
        fs::metadata(a).map_err(|e| e.to_string())?.len(),
        fs::metadata(b).map_err(|e| e.to_string())?.len(),
    );
    if la != lb {
        return Err(format!("sizes differ: {la} and {lb} bytes"));
    }
    let file = fs::File::open(a).map_err(|e| e.to_string())?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| e.to_string())?;
    let manifest = zip.by_name("manifest.yaml").map_err(|e| e.to_string())?;
    let local = manifest.header_start();
    let central = manifest.central_header_start();
    let allowed = |off: u64| {
        (local + 10..local + 14).contains(&off) || (central + 12..central + 16).contains(&off)
    };
    let mut ra = BufReader::new(fs::File::open(a).map_err(|e| e.to_string())?);
    let mut rb = BufReader::new(fs::File::open(b).map_err(|e| e.to_string())?);
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let mut offset = 0u64;
    let mut differing = 0u64;
    loop {
        let n = ra.read(&mut ba).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        rb.read_exact(&mut bb[..n]).map_err(|e| e.to_string())?;
        for i in 0..n {
            if ba[i] != bb[i] {
                let off = offset + i as u64;
                if !allowed(off) {
                    return Err(format!(
                        "byte {off} differs outside manifest.yaml's timestamp fields"
                    ));
                }
                differing += 1;
            }
        }
        offset += n as u64;
    }
    if differing == 0 {
        return Err("the files are identical".into());
    }
    Ok(())
}

/// Renders the table: item, recorded, observed, match.
pub fn render_table(rows: &[Row]) -> String {
    let short = |s: &str| {
        if s.len() > 20 && s.chars().all(|c| c.is_ascii_hexdigit()) {
            format!("{}…", &s[..16])
        } else {
            s.to_string()
        }
    };
    let w_item = rows
        .iter()
        .map(|r| r.item.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let w_rec = rows
        .iter()
        .map(|r| short(&r.recorded).chars().count())
        .max()
        .unwrap_or(8)
        .max(8);
    let w_obs = rows
        .iter()
        .map(|r| short(&r.observed).chars().count())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:w_item$}  {:w_rec$}  {:w_obs$}  match",
        "item", "recorded", "observed"
    );
    for r in rows {
        let m = match r.matches {
            Match::Yes => "yes",
            Match::BuildClock => "yes (build clock: manifest.yaml timestamp only, verified)",
            Match::No => "NO",
        };
        let _ = writeln!(
            out,
            "{:w_item$}  {:w_rec$}  {:w_obs$}  {m}",
            r.item,
            short(&r.recorded),
            short(&r.observed)
        );
    }
    out
}

/// Every member's sha256 and size, streamed, in central-directory order.
fn member_digests(path: &Path) -> Result<Vec<lbpkg::MemberDigest>, String> {
    let mut file = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cd = lbpkg::read_central_directory(&mut file)?;
    lbpkg::hash_members(path, &cd, None)
}

fn content_digest(members: &[lbpkg::MemberDigest]) -> String {
    lbpkg::content_digest(
        members
            .iter()
            .map(|m| (m.name.as_str(), m.size, m.sha256.as_str())),
    )
}

/// One row per candidate verdict (`candidates[].verdict`): as recorded, and
/// as the recorded gates decide it (`evidence::verdicts::of`), so a verdict
/// edited on its own, or gates edited under it, disagree. Merged evidence is
/// left out: its verdicts come from the shares' own gate records
/// (`merge`), which a merged directory does not keep.
fn candidate_verdicts(ev: &Evidence, rows: &mut Vec<Row>) {
    if ev.merged_from.is_some() {
        return;
    }
    let word = |v: &crate::evidence::CandidateVerdict| {
        let at = [v.gate.as_deref(), v.check.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/");
        if at.is_empty() {
            v.result.word().to_string()
        } else {
            format!("{} at {at}", v.result.word())
        }
    };
    for c in &ev.candidates {
        let Some(recorded) = &c.verdict else { continue };
        let observed = crate::evidence::verdicts::of(&ev.gates, &c.folder);
        rows.push(Row::new(
            format!(
                "candidate {} verdict (observed: read from the recorded gates)",
                c.folder
            ),
            word(recorded),
            word(&observed),
        ));
    }
}

#[cfg(test)]
mod sums_tests {
    use super::*;

    /// Attack round on issue 35.3: a good commit's test writes a file whose
    /// name is not UTF-8 (`data\xff`, a test of filename handling) in its
    /// HOME. `SHA256SUMS` names it lossily (U+FFFD); replay must still find
    /// and check it, not report it removed.
    #[test]
    fn a_file_whose_name_is_not_utf8_is_checked_not_reported_removed() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("roots/suites/tree/home");
        fs::create_dir_all(&home).unwrap();
        fs::write(home.join(std::ffi::OsStr::from_bytes(b"data\xff")), b"x").unwrap();
        fs::write(
            dir.path().join(SHA256SUMS),
            evidence::sha256sums(dir.path()).unwrap(),
        )
        .unwrap();
        let mut rows = Vec::new();
        check_sums(dir.path(), &mut rows);
        let wrong: Vec<&Row> = rows.iter().filter(|r| r.matches != Match::Yes).collect();
        assert!(wrong.is_empty(), "{wrong:?}");
    }
}
