//! The `archive-members` gate: each built archive is recorded (sha256, size,
//! every member's sha256, size and mode, a content digest), judged by the SDK
//! host's rules and more (no comment, duplicate, traversal, link, encryption;
//! the host's limits), compared with the staged source member by member,
//! with the build's inclusion rules and with git's own ignore rules, and
//! extracted exactly to DIR/extracted/<folder>.
//!
//! Checks per candidate, in order: `archive-digest`, `zip-structure`,
//! `zip-comment`, `member-names`, `member-types`, `encryption`, `host-limits`,
//! `expected-members`, `committed-files`, `members-equal-source`,
//! `manifest-equal-source`, `extraction-exact`. The last three read member
//! data; they run only when the structure, names, types, encryption and
//! limits checks passed (they then fail saying they were not examined).
//! `manifest-equal-source` reads both manifests as the SDK does (PyYAML,
//! YAML 1.1) and names values YAML 1.2 reads otherwise
//! ([`crate::manifest_yaml`]).
//!
//! Two expectations for the member list. `expected-members` holds the
//! archive to what `lbp build`'s own rules select from the staged source
//! ([`build_rules`], the SDK's reading of the root `.gitignore`): no member
//! is missing or unexpected, so the archive is the build's output. That
//! reading differs from git's (`/config` drops `config_loader.py`, `!keep.log`
//! is not an exception), so `committed-files` holds the build to git's:
//! every committed file that git's ignore rules keep ([`crate::gitignore`]:
//! the candidate's own root and nested `.gitignore` files, the candidate
//! folder as git's top level, ancestor `.gitignore` files not counted) and
//! that the SDK does not always exclude is a member. A committed file git
//! ignores too (force-added) that the build left out is a warning. A member
//! git would ignore is not unexpected: it is a committed file the build's
//! rules select.

use crate::build_rules::{self, BuildDrop};
use crate::context::{RunContext, Updates};
use crate::evidence::{ArchiveRecord, Check, CheckResult, MemberRecord};
use crate::gitignore::{GitPattern, GitRules, GitVerdict};
use crate::hash;
use crate::lbpkg::{self, CentralDirectory, MemberDigest};
use crate::manifest_yaml::ManifestReader;
use serde::Serialize;
use serde_json::json;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The `archive-members` gate.
pub struct ArchiveMembers;

/// What one candidate's inspection needs.
struct Input {
    folder: String,
    staged: PathBuf,
    /// Archive path relative to DIR, or why there is none.
    archive: Result<(PathBuf, String), String>,
    extract_abs: PathBuf,
    extract_rel: String,
    /// How `manifest-equal-source` reads the two manifests.
    manifest_reader: ManifestReader,
}

impl super::Gate for ArchiveMembers {
    fn id(&self) -> &'static str {
        "archive-members"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        if ctx.staged_root.is_none() {
            return Err("the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first".into());
        }
        let inputs: Vec<Input> = ctx
            .candidate_specs()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let folder = c.folder().to_string();
                let manifest_reader = match ctx.private_roots("archive-members", &folder) {
                    Ok((home, tmp)) => ManifestReader::Sdk {
                        python: ctx.python.clone(),
                        env: ctx.child_env(&home, &tmp),
                        cwd: home,
                        log_stem: ctx.log_stem("archive-members", &format!("{folder}-manifest-yaml")),
                    },
                    Err(e) => return Err(format!("cannot create private roots for {folder}: {e}")),
                };
                let archive = match ctx.candidates.get(i).and_then(|r| r.manifest.as_ref()) {
                    Some(id) => {
                        let name = id.archive_name();
                        Ok((ctx.packages_dir(&folder).join(&name), format!("packages/{folder}/{name}")))
                    }
                    None => Err("no manifest identity was recorded by `lbp-build`, so the archive name is unknown; \
                                 run `lbp-build` first"
                        .to_string()),
                };
                Ok(Input {
                    staged: ctx.staged_candidate(c),
                    archive,
                    extract_abs: ctx.extracted_root().join(&folder),
                    extract_rel: format!("extracted/{folder}"),
                    folder,
                    manifest_reader,
                })
            })
            .collect::<Result<_, String>>()?;
        let results: Vec<(Vec<Check>, Option<ArchiveRecord>)> = std::thread::scope(|s| {
            let handles: Vec<_> = inputs
                .iter()
                .map(|input| s.spawn(move || inspect(input)))
                .collect();
            handles
                .into_iter()
                .zip(&inputs)
                .map(|(h, input)| {
                    h.join().unwrap_or_else(|_| {
                        (
                            vec![Check::fail(
                                "archive-digest",
                                Some(&input.folder),
                                "the harness thread inspecting this archive panicked; this is a harness defect: report it",
                            )],
                            None,
                        )
                    })
                })
                .collect()
        });
        let mut checks = Vec::new();
        for (i, (c, record)) in results.into_iter().enumerate() {
            out.set(move |ctx| {
                if let Some(slot) = ctx.candidates.get_mut(i) {
                    slot.archive = record;
                }
            });
            checks.extend(c);
        }
        Ok(checks)
    }
}

/// A check from a list of findings: pass with `ok` when empty, else fail
/// listing them followed by `advice`.
fn findings_check(
    name: &str,
    folder: &str,
    archive: &str,
    findings: &[String],
    ok: &str,
    advice: &str,
) -> Check {
    if findings.is_empty() {
        Check::pass(name, Some(folder), format!("{archive}: {ok}"))
    } else {
        Check::fail(
            name,
            Some(folder),
            format!("{archive}: {}; {advice}", findings.join("; ")),
        )
        .with_observed(json!({ "findings": findings }))
    }
}

fn inspect(input: &Input) -> (Vec<Check>, Option<ArchiveRecord>) {
    let folder = input.folder.as_str();
    let f = Some(folder);
    let mut checks = Vec::new();
    let (path, rel) = match &input.archive {
        Ok(a) => a,
        Err(m) => return (vec![Check::fail("archive-digest", f, m.clone())], None),
    };
    let digest = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => hash::sha256_file(path).map_err(|e| e.to_string()),
        Ok(_) => Err("not a regular file".into()),
        Err(e) => Err(e.to_string()),
    };
    let digest = match digest {
        Ok(d) => d,
        Err(e) => {
            checks.push(Check::fail(
                "archive-digest",
                f,
                format!(
                    "{rel}: cannot be read ({e}); expected the archive `lbp-build` moved there"
                ),
            ));
            return (checks, None);
        }
    };
    checks.push(
        Check::pass(
            "archive-digest",
            f,
            format!("{rel}: sha256 {}, {} bytes", digest.hex(), digest.size),
        )
        .with_observed(json!({"path": rel, "sha256": digest.hex(), "size": digest.size})),
    );

    let cd = match File::open(path)
        .map_err(|e| e.to_string())
        .and_then(|mut file| lbpkg::read_central_directory(&mut file))
    {
        Ok(cd) => cd,
        Err(m) => {
            checks.push(Check::fail(
                "zip-structure",
                f,
                format!("{rel}: Python's zipfile (which the SDK host uses) would refuse it: {m}; rebuild it with `lbp build`"),
            ));
            return (checks, None);
        }
    };
    let mut structure = match File::open(path) {
        Ok(mut file) => lbpkg::structure_findings(&mut file, &cd),
        Err(e) => vec![format!("cannot open: {e}")],
    };
    structure.extend(lbpkg::zip_crate_disagreements(path, &cd));
    checks.push(findings_check(
        "zip-structure",
        folder,
        rel,
        &structure,
        &format!(
            "{} entries; the central directory, every local header and both ZIP readers agree",
            cd.entries.len()
        ),
        "the archive is not a plain `lbp build` output: rebuild it",
    ));
    checks.push(comment_check(folder, rel, &cd));
    checks.push(findings_check(
        "member-names",
        folder,
        rel,
        &lbpkg::name_findings(&cd),
        "every member name is relative, canonical and unique; no file/directory conflicts",
        "the host refuses or misplaces such members: rebuild from a clean tree",
    ));
    checks.push(findings_check(
        "member-types",
        folder,
        rel,
        &lbpkg::type_findings(&cd),
        "every member is a regular file or a directory; no links",
        "the host refuses links and special files: remove them from the plugin",
    ));
    checks.push(findings_check(
        "encryption",
        folder,
        rel,
        &lbpkg::encryption_findings(&cd),
        "no member is encrypted",
        "the host cannot read encrypted members: rebuild without encryption",
    ));
    checks.push(
        findings_check(
            "host-limits",
            folder,
            rel,
            &lbpkg::host_limit_findings(&cd),
            &format!(
                "within the host's limits ({} of {} entries, {} of {} bytes uncompressed, ratio <= {})",
                cd.entries.len(),
                lbpkg::HOST_MAX_ENTRIES,
                cd.entries.iter().filter(|e| !e.is_dir()).map(|e| e.size).sum::<u64>(),
                lbpkg::HOST_MAX_TOTAL_BYTES,
                lbpkg::HOST_MAX_RATIO
            ),
            "the SDK host (langbot_plugin.runtime.plugin.artifact) refuses such an archive: shrink the plugin",
        ),
    );
    checks.push(expected_members_check(folder, rel, &input.staged, &cd));
    let present: BTreeSet<String> = cd.entries.iter().map(|e| e.name.clone()).collect();
    checks.push(match observe_committed(&input.staged, &present) {
        Ok(files) => decide_committed(folder, rel, &files),
        Err(m) => Check::fail(
            COMMITTED_FILES,
            f,
            format!(
                "{rel}: cannot tell which committed files git's own ignore rules keep: {m}; \
                 nothing was compared"
            ),
        ),
    });

    let gate_names = [
        "zip-structure",
        "member-names",
        "member-types",
        "encryption",
        "host-limits",
    ];
    let blocking: Vec<&str> = checks
        .iter()
        .filter(|c| c.result == CheckResult::Fail && gate_names.contains(&c.name.as_str()))
        .map(|c| c.name.as_str())
        .collect();
    if !blocking.is_empty() {
        let why = format!(
            "{rel}: not examined because {} failed; fix those first",
            blocking.join(", ")
        );
        for name in [
            "members-equal-source",
            "manifest-equal-source",
            "extraction-exact",
        ] {
            checks.push(Check::fail(name, f, why.clone()));
        }
        return (checks, None);
    }

    let members = match lbpkg::hash_members(path, &cd, Some(&input.extract_abs)) {
        Ok(m) => m,
        Err(e) => {
            let why = format!("{rel}: reading the members failed: {e}");
            checks.push(Check::fail("members-equal-source", f, why.clone()));
            checks.push(Check::fail("manifest-equal-source", f, why.clone()));
            checks.push(Check::fail(
                "extraction-exact",
                f,
                format!("{why}; {} is incomplete", input.extract_rel),
            ));
            return (checks, None);
        }
    };
    checks.push(members_equal_source(folder, rel, &input.staged, &members));
    checks.push(crate::manifest_yaml::decide(
        folder,
        rel,
        &input.manifest_reader.observe(
            &input.staged.join("manifest.yaml"),
            &input.extract_abs.join("manifest.yaml"),
        ),
    ));
    let findings = lbpkg::extraction_findings(&input.extract_abs, &members);
    checks.push(findings_check(
        "extraction-exact",
        folder,
        &input.extract_rel,
        &findings,
        &format!(
            "exactly the archive's {} members, each re-read from disk with the member's sha256",
            members.len()
        ),
        "the extraction is not the archive: this is a harness or file-system defect",
    ));

    let content_digest = lbpkg::content_digest(
        members
            .iter()
            .map(|m| (m.name.as_str(), m.size, m.sha256.as_str())),
    );
    let record = ArchiveRecord {
        path: rel.clone(),
        sha256: digest.hex(),
        size: digest.size,
        content_digest,
        members: members
            .iter()
            .map(|m| MemberRecord {
                name: m.name.clone(),
                sha256: m.sha256.clone(),
                size: m.size,
                mode: m.mode.clone(),
            })
            .collect(),
        extracted: Some(input.extract_rel.clone()),
    };
    (checks, Some(record))
}

fn comment_check(folder: &str, rel: &str, cd: &CentralDirectory) -> Check {
    if cd.comment.is_empty() {
        return Check::pass(
            "zip-comment",
            Some(folder),
            format!("{rel}: no ZIP comment (an unsigned archive)"),
        );
    }
    let preview: String = String::from_utf8_lossy(&cd.comment)
        .chars()
        .take(60)
        .collect();
    Check::fail(
        "zip-comment",
        Some(folder),
        format!(
            "{rel}: carries a {}-byte ZIP comment ({preview:?}); expected none: the SDK keeps a signed envelope \
             there (langbot_plugin certification), and neither `lbp build` nor this harness writes one, so the \
             archive was altered after the build",
            cd.comment.len()
        ),
    )
    .with_observed(json!({"comment_bytes": cd.comment.len()}))
}

fn expected_members_check(folder: &str, rel: &str, staged: &Path, cd: &CentralDirectory) -> Check {
    let expected = match build_rules::expected_members(staged) {
        Ok(e) => e,
        Err(m) => {
            return Check::fail(
                "expected-members",
                Some(folder),
                format!("cannot apply the build's inclusion rules to the staged source: {m}"),
            )
        }
    };
    let present: BTreeSet<String> = cd.entries.iter().map(|e| e.name.clone()).collect();
    let missing: Vec<&String> = expected.iter().filter(|n| !present.contains(*n)).collect();
    let unexpected: Vec<&String> = present.iter().filter(|n| !expected.contains(*n)).collect();
    if missing.is_empty() && unexpected.is_empty() {
        return Check::pass(
            "expected-members",
            Some(folder),
            format!(
                "{rel}: exactly the {} files the build's rules select from the staged source \
                 (root .gitignore as the SDK reads it, plus its fixed exclusions)",
                expected.len()
            ),
        );
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!(
            "source files the build should include but the archive lacks: {missing:?}"
        ));
    }
    if !unexpected.is_empty() {
        parts.push(format!(
            "members with no selected source file: {unexpected:?}"
        ));
    }
    Check::fail(
        "expected-members",
        Some(folder),
        format!("{rel}: {}; expected the archive to hold exactly what `lbp build` selects: rebuild it from the staged commit", parts.join("; ")),
    )
    .with_observed(json!({"missing": missing, "unexpected": unexpected}))
}

/// The check holding the build to git's ignore rules.
const COMMITTED_FILES: &str = "committed-files";

/// One committed file of a candidate as both readings of `.gitignore` see
/// it: the observation `committed-files` decides from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommittedFile {
    /// Path relative to the candidate folder, `/`-separated.
    pub path: String,
    /// Whether the archive holds a member of that name.
    pub in_archive: bool,
    /// Git's verdict from the candidate's own `.gitignore` files.
    pub git: GitVerdict,
    /// Why `lbp build`'s rules leave it out; `None`: they select it.
    pub build: Option<BuildDrop>,
}

/// Every committed file of the staged candidate (the staged source is the
/// commit, blob for blob, and the `stage` gate refuses export-ignored
/// candidate files), sorted by path, with both readings and whether
/// `present` (the archive's member names) holds it.
///
/// # Errors
/// When the staged tree cannot be walked, a name is not UTF-8, or a
/// `.gitignore` cannot be read by either reading.
fn observe_committed(
    staged: &Path,
    present: &BTreeSet<String>,
) -> Result<Vec<CommittedFile>, String> {
    let mut paths = Vec::new();
    for entry in walkdir::WalkDir::new(staged)
        .sort_by_file_name()
        .min_depth(1)
    {
        let entry = entry.map_err(|e| format!("{}: cannot walk: {e}", staged.display()))?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(staged)
            .map_err(|e| e.to_string())?
            .to_str()
            .ok_or_else(|| format!("{}: the name is not UTF-8", entry.path().display()))?
            .to_string();
        paths.push(rel);
    }
    let patterns = build_rules::read_gitignore(staged)?;
    let git = GitRules::read(staged, paths.iter().map(String::as_str))?;
    Ok(paths
        .into_iter()
        .map(|path| CommittedFile {
            in_archive: present.contains(&path),
            git: git.verdict(&path),
            build: build_rules::build_drop(&path, &patterns),
            path,
        })
        .collect())
}

/// `` `file` line N `pattern` ``.
fn git_line(p: &GitPattern) -> String {
    format!("`{}` line {} `{}`", p.file, p.line, p.pattern)
}

/// How the build's rules left `file` out, for a message.
fn build_reason(file: &CommittedFile) -> String {
    match &file.build {
        Some(BuildDrop::Gitignore { at, line, pattern }) => {
            let via = if *at == file.path {
                String::new()
            } else {
                format!(", which matched its directory `{at}`")
            };
            format!("the build dropped it by `.gitignore` line {line} `{pattern}`{via}")
        }
        Some(BuildDrop::AlwaysExcluded { at, pattern }) => {
            format!("the build always excludes `{at}` (`{pattern}`)")
        }
        None => {
            "the build's rules select it, yet the archive lacks it (see expected-members)".into()
        }
    }
}

/// Why git keeps or ignores `file`, for a message.
fn git_reason(file: &CommittedFile) -> String {
    match &file.git {
        GitVerdict::Kept { by: None } => {
            "git keeps it: no line of the candidate's .gitignore files ignores it".into()
        }
        GitVerdict::Kept { by: Some(by) } => format!("git keeps it by {}", git_line(by)),
        GitVerdict::Ignored { by } => {
            let via = if by.at == file.path {
                String::new()
            } else {
                format!(", which matches its directory `{}`", by.at)
            };
            format!(
                "git ignores it too, by {}{via}, so it was force-added",
                git_line(by)
            )
        }
    }
}

/// The `committed-files` decision over the observed committed files of one
/// candidate (`archive`: the archive's path relative to DIR, for messages).
///
/// - A committed file that is a member: satisfied, whatever either reading
///   says.
/// - Not a member, and a path component matches the SDK's fixed exclusions
///   ([`build_rules::ALWAYS_EXCLUDE`]): expected to be absent.
/// - Not a member, and git keeps it: a failure naming the file, the
///   `.gitignore` line the build dropped it by (or that the build's rules
///   select it) and why git keeps it.
/// - Not a member, and git ignores it too (it was force-added): a warning
///   naming the file and both lines.
///
/// Fails when any failure was found (the warnings are listed too), warns
/// when only warnings were, passes otherwise.
pub fn decide_committed(folder: &str, archive: &str, files: &[CommittedFile]) -> Check {
    let mut missing = Vec::new();
    let mut forced = Vec::new();
    let mut always_excluded = Vec::new();
    for file in files.iter().filter(|f| !f.in_archive) {
        if matches!(file.build, Some(BuildDrop::AlwaysExcluded { .. })) {
            always_excluded.push(file);
        } else if file.git.is_kept() {
            missing.push(file);
        } else {
            forced.push(file);
        }
    }
    let describe = |list: &[&CommittedFile]| -> String {
        list.iter()
            .map(|f| format!("`{}` ({}; {})", f.path, build_reason(f), git_reason(f)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let observed = json!({
        "committed": files.len(),
        "missing": missing,
        "force_added_missing": forced,
        "always_excluded": always_excluded.iter().map(|f| &f.path).collect::<Vec<_>>(),
    });
    let forced_text = format!(
        "{} committed file(s) that git's own rules ignore too (force-added) are not members: {}; \
         if the plugin needs them, stop ignoring them in .gitignore, otherwise remove them from the commit",
        forced.len(),
        describe(&forced)
    );
    if !missing.is_empty() {
        let mut detail = format!(
            "{archive}: {} committed file(s) that git's own ignore rules keep are missing from the archive: {}; \
             expected every committed file that the candidate's own .gitignore files (root and nested, read as \
             git reads them with the candidate folder as top level; ancestor .gitignore files do not count) keep, \
             and that the SDK does not always exclude, to be a member. `lbp build` reads only the root .gitignore, \
             a leading `/` as a name prefix, `!` as a literal name and `*` across `/`: reword those lines so \
             both readings agree (or rename the files), then rebuild",
            missing.len(),
            describe(&missing)
        );
        if !forced.is_empty() {
            detail.push_str(&format!("; also {forced_text}"));
        }
        return Check::fail(COMMITTED_FILES, Some(folder), detail).with_observed(observed);
    }
    if !forced.is_empty() {
        return Check::warn(
            COMMITTED_FILES,
            Some(folder),
            format!("{archive}: {forced_text}"),
        )
        .with_observed(observed);
    }
    Check::pass(
        COMMITTED_FILES,
        Some(folder),
        format!(
            "{archive}: every committed file that git's own ignore rules keep is a member ({} committed, {} \
             left out by the SDK's fixed exclusions); git's rules: the candidate's own .gitignore files, root \
             and nested, with the candidate folder as top level (ancestor .gitignore files do not count)",
            files.len(),
            always_excluded.len()
        ),
    )
    .with_observed(observed)
}

fn members_equal_source(folder: &str, rel: &str, staged: &Path, members: &[MemberDigest]) -> Check {
    let mut diffs = Vec::new();
    let mut compared = 0usize;
    for m in members
        .iter()
        .filter(|m| !m.is_dir && m.name != build_rules::MANIFEST)
    {
        let mut p = staged.to_path_buf();
        p.extend(m.name.split('/'));
        match std::fs::symlink_metadata(&p) {
            Ok(meta) if meta.file_type().is_file() => match hash::sha256_file(&p) {
                Ok(d) if d.hex() == m.sha256 => compared += 1,
                Ok(d) => diffs.push(format!(
                    "{} (member sha256 {}, source sha256 {})",
                    m.name,
                    m.sha256,
                    d.hex()
                )),
                Err(e) => diffs.push(format!("{} (source unreadable: {e})", m.name)),
            },
            Ok(_) => diffs.push(format!("{} (the source is not a regular file)", m.name)),
            Err(_) => diffs.push(format!("{} (no such file in the staged source)", m.name)),
        }
    }
    if diffs.is_empty() {
        Check::pass(
            "members-equal-source",
            Some(folder),
            format!("{rel}: all {compared} members other than manifest.yaml are byte-identical (sha256) to the staged source"),
        )
    } else {
        Check::fail(
            "members-equal-source",
            Some(folder),
            format!(
                "{rel}: members differ from the staged source: {}; expected byte-identical copies: rebuild from the staged commit",
                diffs.join(", ")
            ),
        )
        .with_observed(json!({"differences": diffs}))
    }
}

/// Differences between the source manifest and the archived one, as parsed
/// YAML, by dotted key path. The build's re-serialisation
/// (`yaml.safe_dump(..., sort_keys=False)` in the SDK's `buildplugin.py`)
/// keeps values and adds `spec.pages` (`populate_plugin_pages`); when the
/// source has no `spec.pages`, a member `spec.pages: []` is accepted, nothing
/// else.
pub fn manifest_differences(source: &Value, member: &Value) -> Vec<String> {
    let mut member = member.clone();
    let source_has_pages = source.get("spec").and_then(|s| s.get("pages")).is_some();
    if !source_has_pages {
        if let Some(Value::Mapping(spec)) = member.get_mut("spec") {
            if matches!(spec.get("pages"), Some(Value::Sequence(s)) if s.is_empty()) {
                spec.remove("pages");
            }
        }
    }
    let mut out = Vec::new();
    diff_values(source, &member, "", &mut out);
    out
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

fn value_text(v: &Value) -> String {
    let t = serde_yaml_ng::to_string(v).unwrap_or_default();
    let t = t.trim();
    if t.len() > 80 {
        format!(
            "{}...",
            &t[..t.char_indices().nth(77).map(|(i, _)| i).unwrap_or(t.len())]
        )
    } else {
        t.to_string()
    }
}

fn diff_values(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    let at = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    let shown = if path.is_empty() { "(document)" } else { path };
    match (a, b) {
        (Value::Mapping(ma), Value::Mapping(mb)) => {
            for (k, va) in ma {
                match mb.get(k) {
                    Some(vb) => diff_values(va, vb, &at(&key_text(k)), out),
                    None => out.push(format!(
                        "{}: in the source, missing from the archive",
                        at(&key_text(k))
                    )),
                }
            }
            for (k, vb) in mb {
                if !ma.contains_key(k) {
                    out.push(format!(
                        "{}: added by the build ({})",
                        at(&key_text(k)),
                        value_text(vb)
                    ));
                }
            }
        }
        (Value::Sequence(sa), Value::Sequence(sb)) if sa.len() == sb.len() => {
            for (i, (va, vb)) in sa.iter().zip(sb).enumerate() {
                diff_values(va, vb, &format!("{shown}[{i}]"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!(
            "{shown}: source {}, archive {}",
            value_text(a),
            value_text(b)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(s: &str) -> Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    #[test]
    fn the_builds_pages_addition_is_the_only_accepted_difference() {
        let src = y("metadata:\n  name: x\n  version: '0.1.0'\nspec:\n  config: []\n");
        let built = y("metadata:\n  name: x\n  version: 0.1.0\nspec:\n  config: []\n  pages: []\n");
        assert!(manifest_differences(&src, &built).is_empty());
    }

    #[test]
    fn other_differences_name_the_key() {
        let src = y("metadata:\n  name: x\nspec:\n  config: []\n");
        let built = y("metadata:\n  name: y\n  extra: 1\nspec:\n  config: []\n  pages: [a]\n");
        let d = manifest_differences(&src, &built);
        assert!(
            d.iter()
                .any(|m| m.starts_with("metadata.name: source x, archive y")),
            "{d:?}"
        );
        assert!(
            d.iter()
                .any(|m| m.starts_with("metadata.extra: added by the build")),
            "{d:?}"
        );
        assert!(
            d.iter()
                .any(|m| m.starts_with("spec.pages: added by the build")),
            "{d:?}"
        );
    }

    #[test]
    fn a_removed_key_is_named() {
        let d = manifest_differences(&y("a:\n  b: 1\n  c: 2\n"), &y("a:\n  b: 1\n"));
        assert_eq!(d, ["a.c: in the source, missing from the archive"]);
    }

    /// A staged candidate and an archive of it written with the zip crate
    /// (`comment` added, `extra` members appended), in a temp dir.
    fn staged_and_archive(
        comment: Option<&str>,
        extra: &[(&str, &[u8])],
    ) -> (tempfile::TempDir, Input) {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let staged = d.path().join("staged");
        std::fs::create_dir_all(staged.join("pkg")).unwrap();
        std::fs::write(
            staged.join("manifest.yaml"),
            "kind: Plugin\nspec:\n  config: []\n",
        )
        .unwrap();
        std::fs::write(staged.join("pkg/a.py"), "x = 1\n").unwrap();
        let archive = d.path().join("a.lbpkg");
        let mut w = zip::ZipWriter::new(File::create(&archive).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(0o644);
        let mut files: Vec<(&str, &[u8])> = vec![
            (
                "manifest.yaml",
                b"kind: Plugin\nspec:\n  config: []\n  pages: []\n",
            ),
            ("pkg/a.py", b"x = 1\n"),
        ];
        files.extend_from_slice(extra);
        for (n, b) in files {
            w.start_file(n, opts).unwrap();
            w.write_all(b).unwrap();
        }
        if let Some(c) = comment {
            w.set_comment(c);
        }
        w.finish().unwrap();
        let input = Input {
            folder: "c".into(),
            staged,
            archive: Ok((archive, "packages/c/a.lbpkg".into())),
            extract_abs: d.path().join("extracted/c"),
            extract_rel: "extracted/c".into(),
            manifest_reader: ManifestReader::Yaml12,
        };
        (d, input)
    }

    fn result_of<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check {name}: {checks:?}"))
    }

    #[test]
    fn a_faithful_archive_passes_every_check_and_is_recorded() {
        let (_d, input) = staged_and_archive(None, &[]);
        let (checks, record) = inspect(&input);
        let failed: Vec<_> = checks
            .iter()
            .filter(|c| c.result != CheckResult::Pass)
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
        assert_eq!(checks.len(), 12);
        let record = record.unwrap();
        assert_eq!(record.members.len(), 2);
        assert_eq!(record.members[1].sha256, hash::sha256_bytes(b"x = 1\n"));
        assert_eq!(record.extracted.as_deref(), Some("extracted/c"));
        assert!(input.extract_abs.join("pkg/a.py").is_file());
    }

    #[test]
    fn a_comment_fails_only_the_comment_check() {
        let (_d, input) = staged_and_archive(Some("envelope"), &[]);
        let (checks, record) = inspect(&input);
        assert_eq!(result_of(&checks, "zip-comment").result, CheckResult::Fail);
        let others: Vec<_> = checks
            .iter()
            .filter(|c| c.name != "zip-comment" && c.result != CheckResult::Pass)
            .collect();
        assert!(others.is_empty(), "{others:#?}");
        assert!(record.is_some());
    }

    #[test]
    fn an_unexpected_member_and_a_changed_byte_are_named() {
        let (_d, input) = staged_and_archive(None, &[("notes.txt", b"extra\n")]);
        std::fs::write(input.staged.join("pkg/a.py"), "x = 2\n").unwrap();
        let (checks, _) = inspect(&input);
        let expected = result_of(&checks, "expected-members");
        assert_eq!(expected.result, CheckResult::Fail);
        assert!(expected.detail.contains("notes.txt"), "{}", expected.detail);
        let equal = result_of(&checks, "members-equal-source");
        assert_eq!(equal.result, CheckResult::Fail);
        assert!(
            equal.detail.contains("pkg/a.py (member sha256"),
            "{}",
            equal.detail
        );
    }

    #[test]
    fn unsafe_members_stop_reading_and_say_so() {
        let (dir, input) = staged_and_archive(None, &[("pkg/b.py", b"y\n")]);
        // Rename pkg/b.py to pkg/a.py in place: a duplicate the zip crate hides.
        let (path, _) = input.archive.as_ref().unwrap().clone();
        let mut bytes = std::fs::read(&path).unwrap();
        for i in 0..bytes.len() - 8 {
            if &bytes[i..i + 8] == b"pkg/b.py" {
                bytes[i..i + 8].copy_from_slice(b"pkg/a.py");
            }
        }
        std::fs::write(&path, bytes).unwrap();
        let (checks, record) = inspect(&input);
        assert_eq!(result_of(&checks, "member-names").result, CheckResult::Fail);
        assert_eq!(
            result_of(&checks, "zip-structure").result,
            CheckResult::Fail
        );
        for name in [
            "members-equal-source",
            "manifest-equal-source",
            "extraction-exact",
        ] {
            let c = result_of(&checks, name);
            assert_eq!(c.result, CheckResult::Fail);
            assert!(
                c.detail
                    .contains("not examined because zip-structure, member-names failed"),
                "{}",
                c.detail
            );
        }
        assert!(record.is_none());
        assert!(
            !input.extract_abs.exists(),
            "nothing is extracted from an unsafe archive"
        );
        dir.close().unwrap();
    }

    fn pattern(file: &str, line: usize, pattern: &str, at: &str) -> GitPattern {
        GitPattern {
            file: file.into(),
            line,
            pattern: pattern.into(),
            at: at.into(),
        }
    }

    fn dropped(at: &str, line: usize, pattern: &str) -> Option<BuildDrop> {
        Some(BuildDrop::Gitignore {
            at: at.into(),
            line,
            pattern: pattern.into(),
        })
    }

    fn file(
        path: &str,
        in_archive: bool,
        git: GitVerdict,
        build: Option<BuildDrop>,
    ) -> CommittedFile {
        CommittedFile {
            path: path.into(),
            in_archive,
            git,
            build,
        }
    }

    const KEPT: GitVerdict = GitVerdict::Kept { by: None };
    const ARCHIVE: &str = "packages/c/a.lbpkg";

    #[test]
    fn every_kept_file_present_passes() {
        let files = [
            file("main.py", true, KEPT, None),
            file("manifest.yaml", true, KEPT, None),
        ];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        assert!(c.detail.contains("2 committed"), "{}", c.detail);
    }

    /// `/config` in the root `.gitignore`: git ignores only the root entry
    /// `config`; the SDK drops every path starting with `config`.
    #[test]
    fn a_kept_file_the_build_dropped_fails_naming_file_line_and_pattern() {
        let files = [
            file("main.py", true, KEPT, None),
            file(
                "config_loader.py",
                false,
                KEPT,
                dropped("config_loader.py", 1, "/config"),
            ),
        ];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains(
                "`config_loader.py` (the build dropped it by `.gitignore` line 1 `/config`; git keeps it: \
                 no line of the candidate's .gitignore files ignores it)"
            ),
            "{}",
            c.detail
        );
        assert!(c.detail.starts_with("packages/c/a.lbpkg: 1 committed file(s) that git's own ignore rules keep are missing"), "{}", c.detail);
        assert_eq!(
            c.observed.as_ref().unwrap()["missing"][0]["path"],
            "config_loader.py"
        );
    }

    /// `*.log` then `!keep.log`: git keeps `keep.log`; the SDK has no
    /// negation and drops it by `*.log`.
    #[test]
    fn a_negated_file_the_build_dropped_fails_naming_both_lines() {
        let files = [file(
            "keep.log",
            false,
            GitVerdict::Kept {
                by: Some(pattern(".gitignore", 2, "!keep.log", "keep.log")),
            },
            dropped("keep.log", 1, "*.log"),
        )];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains(
                "`keep.log` (the build dropped it by `.gitignore` line 1 `*.log`; git keeps it by `.gitignore` line 2 `!keep.log`)"
            ),
            "{}",
            c.detail
        );
    }

    #[test]
    fn a_drop_through_a_directory_names_the_directory() {
        let files = [file(
            "configuration/a.py",
            false,
            KEPT,
            dropped("configuration", 1, "/config"),
        )];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains(
                "`.gitignore` line 1 `/config`, which matched its directory `configuration`"
            ),
            "{}",
            c.detail
        );
    }

    /// Missing although the build's own rules select it: still a committed
    /// file git keeps that did not ship.
    #[test]
    fn a_kept_file_the_build_selected_but_the_archive_lacks_fails() {
        let files = [file("pkg/a.py", false, KEPT, None)];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("`pkg/a.py` (the build's rules select it, yet the archive lacks it"),
            "{}",
            c.detail
        );
    }

    /// `*.log` and a `debug.log` committed with `git add -f`.
    #[test]
    fn a_force_added_file_the_build_dropped_is_a_warning_naming_both_lines() {
        let files = [
            file("main.py", true, KEPT, None),
            file(
                "debug.log",
                false,
                GitVerdict::Ignored {
                    by: pattern(".gitignore", 1, "*.log", "debug.log"),
                },
                dropped("debug.log", 1, "*.log"),
            ),
        ];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Warn, "{}", c.detail);
        assert!(
            c.detail.contains(
                "`debug.log` (the build dropped it by `.gitignore` line 1 `*.log`; git ignores it too, by `.gitignore` \
                 line 1 `*.log`, so it was force-added)"
            ),
            "{}",
            c.detail
        );
        assert_eq!(
            c.observed.as_ref().unwrap()["force_added_missing"][0]["path"],
            "debug.log"
        );
    }

    #[test]
    fn a_failure_also_lists_the_warnings() {
        let files = [
            file(
                "config_loader.py",
                false,
                KEPT,
                dropped("config_loader.py", 1, "/config"),
            ),
            file(
                "logs/x.txt",
                false,
                GitVerdict::Ignored {
                    by: pattern("logs/.gitignore", 1, "*", "logs/x.txt"),
                },
                dropped("logs/x.txt", 2, "*.txt"),
            ),
        ];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("also 1 committed file(s) that git's own rules ignore too"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("`logs/.gitignore` line 1 `*`"),
            "{}",
            c.detail
        );
    }

    /// The SDK's fixed exclusions are not an expectation: such a committed
    /// file may be absent whatever git says.
    #[test]
    fn always_excluded_files_may_be_absent() {
        let files = [
            file(
                ".env",
                false,
                KEPT,
                Some(BuildDrop::AlwaysExcluded {
                    at: ".env".into(),
                    pattern: ".env",
                }),
            ),
            file(
                "pkg/__pycache__/m.pyc",
                false,
                KEPT,
                Some(BuildDrop::AlwaysExcluded {
                    at: "pkg/__pycache__".into(),
                    pattern: "__pycache__",
                }),
            ),
        ];
        let c = decide_committed("c", ARCHIVE, &files);
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        assert!(
            c.detail
                .contains("2 left out by the SDK's fixed exclusions"),
            "{}",
            c.detail
        );
    }

    /// A member git would ignore (force-added, and the build's rules select
    /// it) is neither missing nor a warning.
    #[test]
    fn a_present_file_git_ignores_is_fine() {
        let files = [file(
            "notes.tmp",
            true,
            GitVerdict::Ignored {
                by: pattern("pkg/.gitignore", 1, "*.tmp", "notes.tmp"),
            },
            None,
        )];
        assert_eq!(
            decide_committed("c", ARCHIVE, &files).result,
            CheckResult::Pass
        );
    }

    /// The observation through `inspect`: a staged `/config` and a committed
    /// `config_loader.py` the archive lacks, as `lbp build` writes it.
    #[test]
    fn inspect_fails_committed_files_but_not_expected_members_for_a_root_prefix() {
        let (_d, input) = staged_and_archive(None, &[(".gitignore", b"/config\n")]);
        std::fs::write(input.staged.join(".gitignore"), "/config\n").unwrap();
        std::fs::write(input.staged.join("config_loader.py"), "X = 1\n").unwrap();
        let (checks, _) = inspect(&input);
        let expected = result_of(&checks, "expected-members");
        assert_eq!(expected.result, CheckResult::Pass, "{}", expected.detail);
        let committed = result_of(&checks, COMMITTED_FILES);
        assert_eq!(committed.result, CheckResult::Fail);
        assert!(
            committed.detail.contains(
                "`config_loader.py` (the build dropped it by `.gitignore` line 1 `/config`"
            ),
            "{}",
            committed.detail
        );
        assert!(
            checks.iter().position(|c| c.name == COMMITTED_FILES)
                > checks.iter().position(|c| c.name == "expected-members")
        );
    }

    /// A nested `.gitignore` the SDK does not read ignores a force-added
    /// `pkg/notes.tmp`; the build packs it. That member is a committed file
    /// the build's rules select: neither unexpected nor missing.
    #[test]
    fn inspect_accepts_a_member_git_ignores() {
        let (_d, input) = staged_and_archive(
            None,
            &[("pkg/.gitignore", b"*.tmp\n"), ("pkg/notes.tmp", b"n\n")],
        );
        std::fs::write(input.staged.join("pkg/.gitignore"), "*.tmp\n").unwrap();
        std::fs::write(input.staged.join("pkg/notes.tmp"), "n\n").unwrap();
        let (checks, _) = inspect(&input);
        let failed: Vec<_> = checks
            .iter()
            .filter(|c| c.result != CheckResult::Pass)
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }

    #[test]
    fn comment_check_fails_with_the_comment_length() {
        let cd = CentralDirectory {
            comment: b"envelope".to_vec(),
            entries: vec![],
            prepended: 0,
            zip64: false,
        };
        let c = comment_check("f", "packages/f/a.lbpkg", &cd);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("8-byte ZIP comment"), "{}", c.detail);
    }
}
