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

mod committed;
mod kept;
mod manifest_reader;
mod observe;

use committed::COMMITTED_FILES;
pub use committed::{decide_committed, CommittedFile};
pub(crate) use kept::redecide as redecide_kept;

use crate::context::{RunContext, Updates};
use crate::evidence::{ArchiveRecord, Check, CheckResult, MemberRecord};
use crate::lbpkg;
use manifest_reader::ManifestReader;
use observe::{Expected, Input, MemberData, Observation, ZipObservation};
use serde_json::json;

/// The `archive-members` gate.
pub struct ArchiveMembers;

impl super::Gate for ArchiveMembers {
    fn id(&self) -> &'static str {
        "archive-members"
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        if ctx.staged_root.is_none() {
            return Err("the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first".into());
        }
        let mut single = Vec::new();
        let inputs: Vec<Input> = ctx
            .candidate_specs()
            .iter()
            .map(|c| {
                let folder = c.folder().to_string();
                match ctx.private_roots("archive-members", &folder) {
                    Ok((home, tmp)) => single.push(ManifestReader::Sdk {
                        python: ctx.python_for(&folder).to_path_buf(),
                        env: ctx.child_env(&home, &tmp),
                        cwd: home,
                        log_stem: ctx.log_stem("archive-members", &format!("{folder}-manifest-yaml")),
                    }),
                    Err(e) => return Err(format!("cannot create private roots for {folder}: {e}")),
                };
                let manifest_reader = ManifestReader::Deferred;
                let archive = match ctx.candidates.iter().find(|r| r.folder == folder).and_then(|r| r.manifest.as_ref()) {
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
        let mut observed: Vec<Option<Observation>> = crate::parallel::map(
            &inputs,
            ctx.width(),
            |i| Some(observe::observe(i)),
            |_| None,
        );
        read_manifests(ctx, &inputs, &single, &mut observed)?;
        let results: Vec<(Vec<Check>, Option<ArchiveRecord>)> = inputs
            .iter()
            .zip(observed)
            .map(|(input, obs)| match obs {
                Some(obs) => (decide(&obs), archive_record(&obs)),
                None => (
                    vec![Check::fail(
                        "archive-digest",
                        Some(&input.folder),
                        "the harness thread inspecting this archive panicked; this is a harness defect: report it",
                    )],
                    None,
                ),
            })
            .collect();
        let mut checks = Vec::new();
        // By folder: this gate may see some candidates only (a candidate that
        // failed `lbp-build` is left out), the record it updates holds all.
        for (input, (c, record)) in inputs.iter().zip(results) {
            let folder = input.folder.clone();
            out.set(move |ctx| {
                if let Some(slot) = ctx.record_mut(&folder) {
                    slot.archive = record;
                }
            });
            checks.extend(c);
        }
        Ok(checks)
    }
}

/// Observes one candidate (its manifests read by its own reader) and
/// decides: its checks, and its archive record when the members were read.
#[cfg(test)]
fn inspect(input: &Input) -> (Vec<Check>, Option<ArchiveRecord>) {
    let obs = observe::observe(input);
    (decide(&obs), archive_record(&obs))
}

/// Reads the two manifests of every candidate whose members were read, as
/// the SDK reads them: one probe process per interpreter for all of them
/// ([`read_manifests_with`]), each reading put into its observation.
/// `single[i]` reads input `i` alone when a batch fails.
///
/// # Errors
/// When a batch's private folders cannot be made.
fn read_manifests(
    ctx: &RunContext,
    inputs: &[Input],
    single: &[ManifestReader],
    observed: &mut [Option<Observation>],
) -> Result<(), String> {
    let mut pythons: Vec<&std::path::Path> = Vec::new();
    for input in inputs {
        let python = ctx.python_for(&input.folder);
        if !pythons.contains(&python) {
            pythons.push(python);
        }
    }
    for (n, python) in pythons.into_iter().enumerate() {
        let at: Vec<usize> = (0..inputs.len())
            .filter(|&i| ctx.python_for(&inputs[i].folder) == python)
            .filter(|&i| {
                observed[i]
                    .as_ref()
                    .and_then(|o| o.zip.as_ref())
                    .and_then(|z| z.data.as_ref())
                    .is_some_and(Result::is_ok)
            })
            .collect();
        if !at.is_empty() {
            let name = match n {
                0 => "manifest-yaml".to_string(),
                _ => format!("manifest-yaml-{}", n + 1),
            };
            read_manifests_with(ctx, python, &name, &at, inputs, single, observed)?;
        }
    }
    Ok(())
}

/// One batch: the manifests of inputs `at` read by `python`, logged at
/// `DIR/logs/archive-members/<name>.*`, each candidate's answer kept at
/// `<folder>-manifest-yaml.stdout` for `replay`.
fn read_manifests_with(
    ctx: &RunContext,
    python: &std::path::Path,
    name: &str,
    at: &[usize],
    inputs: &[Input],
    single: &[ManifestReader],
    observed: &mut [Option<Observation>],
) -> Result<(), String> {
    let (home, tmp) = ctx
        .private_roots("archive-members", name)
        .map_err(|e| format!("cannot create private roots for the manifest probe: {e}"))?;
    let log_stem = ctx.log_stem("archive-members", name);
    let batch = crate::python::batch::BatchProbe {
        wrapper: &[],
        python,
        name: "manifest_yaml_probe",
        source: crate::python::MANIFEST_YAML_PROBE,
        cwd: &home,
        log_stem: &log_stem,
    };
    let pairs: Vec<manifest_reader::Pair> = at
        .iter()
        .map(|&i| manifest_reader::Pair {
            source: inputs[i].staged.join(crate::build_rules::MANIFEST),
            archived: inputs[i].extract_abs.join(crate::build_rules::MANIFEST),
            build_pages: ctx.build_pages.get(&inputs[i].folder).cloned(),
        })
        .collect();
    let kept: Vec<_> = at
        .iter()
        .map(|&i| {
            let file = format!("{}-manifest-yaml.stdout", inputs[i].folder);
            ctx.log_stem("archive-members", &file)
        })
        .collect();
    let singles: Vec<ManifestReader> = at.iter().map(|&i| single[i].clone()).collect();
    let env = ctx.child_env(&home, &tmp);
    let readings = manifest_reader::read_batch(&batch, env, &pairs, &kept, &singles);
    for (&i, reading) in at.iter().zip(readings) {
        let data = observed[i].as_mut().and_then(|o| o.zip.as_mut());
        if let Some(Ok(data)) = data.and_then(|z| z.data.as_mut()) {
            let yaml12 = data.manifest.source_yaml12.clone();
            data.manifest = manifest_reader::from_readings(reading, yaml12);
        }
    }
    Ok(())
}

/// The evidence's record of the archive: digests, members, content digest.
pub(crate) fn archive_record(obs: &Observation) -> Option<ArchiveRecord> {
    let (rel, (sha256, size)) = (obs.archive.as_ref()?, obs.digest.as_ref()?);
    let data = obs.zip.as_ref()?.data.as_ref()?.as_ref().ok()?;
    let members = &data.members;
    Some(ArchiveRecord {
        path: rel.clone(),
        sha256: sha256.clone(),
        size: *size,
        content_digest: lbpkg::content_digest(
            members
                .iter()
                .map(|m| (m.name.as_str(), m.size, m.sha256.as_str())),
        ),
        members: members
            .iter()
            .map(|m| MemberRecord {
                name: m.name.clone(),
                sha256: m.sha256.clone(),
                size: m.size,
                mode: m.mode.clone(),
            })
            .collect(),
        extracted: Some(data.extract_rel.clone()),
        normalized_zip_digest: None,
    })
}

/// A check from a list of findings: pass with `ok` when empty, else fail
/// listing them followed by `advice`. Both carry the findings and `facts`.
fn findings_check(
    name: &str,
    folder: &str,
    archive: &str,
    findings: &[String],
    ok: &str,
    advice: &str,
    facts: serde_json::Value,
) -> Check {
    let mut observed = json!({ "findings": findings });
    if let (Some(o), serde_json::Value::Object(f)) = (observed.as_object_mut(), facts) {
        o.extend(f);
    }
    if findings.is_empty() {
        Check::pass(name, Some(folder), format!("{archive}: {ok}"))
    } else {
        Check::fail(
            name,
            Some(folder),
            format!("{archive}: {}; {advice}", findings.join("; ")),
        )
    }
    .with_observed(observed)
}

/// The checks that judge the archive's structure and names; a failure of
/// any stops the member data from being read.
const BLOCKING: [&str; 5] = [
    "zip-structure",
    "member-names",
    "member-types",
    "encryption",
    "host-limits",
];

/// The checks over the member data.
const DATA_CHECKS: [&str; 3] = [
    "members-equal-source",
    "manifest-equal-source",
    "extraction-exact",
];

/// The checks of the archive's ZIP structure and members, read without
/// extracting: structure, comment, names, member types, encryption, host
/// limits, the expected members and the committed files.
fn structure_checks(folder: &str, rel: &str, zip: &ZipObservation) -> Vec<Check> {
    let f = Some(folder);
    let mut checks = Vec::new();
    let entries = json!({ "entries": zip.entries });
    let structure = findings_check(
        "zip-structure",
        folder,
        rel,
        &zip.structure,
        &format!(
            "{} entries; the central directory, every local header and both ZIP readers agree",
            zip.entries
        ),
        "the archive is not a plain `lbp build` output: rebuild it",
        entries.clone(),
    );
    checks.push(structure);
    checks.push(comment_check(folder, rel, zip));
    checks.push(names_check(folder, rel, zip));
    checks.push(findings_check(
        "member-types",
        folder,
        rel,
        &zip.types,
        "every member is a regular file or a directory; no links",
        "the host refuses links and special files: remove them from the plugin",
        entries.clone(),
    ));
    checks.push(findings_check(
        "encryption",
        folder,
        rel,
        &zip.encryption,
        "no member is encrypted",
        "the host cannot read encrypted members: rebuild without encryption",
        entries.clone(),
    ));
    checks.push(findings_check(
        "host-limits",
        folder,
        rel,
        &zip.host_limits,
        &format!(
            "within the host's limits ({} of {} entries, {} of {} bytes uncompressed, ratio <= {})",
            zip.entries,
            lbpkg::HOST_MAX_ENTRIES,
            zip.total_uncompressed,
            lbpkg::HOST_MAX_TOTAL_BYTES,
            lbpkg::HOST_MAX_RATIO
        ),
        "the SDK host (langbot_plugin.runtime.plugin.artifact) refuses such an archive: shrink the plugin",
        json!({ "entries": zip.entries, "uncompressed_bytes": zip.total_uncompressed }),
    ));
    checks.push(expected_members_check(folder, rel, &zip.expected));
    checks.push(match &zip.committed {
        Ok(files) => decide_committed(folder, rel, files),
        Err(m) => Check::fail(
            COMMITTED_FILES,
            f,
            format!(
                "{rel}: cannot tell which committed files git's own ignore rules keep: {m}; \
                 nothing was compared"
            ),
        )
        .with_observed(json!({ "error": m })),
    });
    checks
}

/// The checks of the members' data (`DATA_CHECKS`): not examined when a
/// blocking check among `before` failed; failed together when the members
/// could not be read; else the members against the source, the manifest and
/// the extraction.
fn data_checks(folder: &str, rel: &str, zip: &ZipObservation, before: &[Check]) -> Vec<Check> {
    let f = Some(folder);
    let mut checks = Vec::new();
    let blocking: Vec<String> = before
        .iter()
        .filter(|c| c.result == CheckResult::Fail && BLOCKING.contains(&c.name.as_str()))
        .map(|c| c.name.clone())
        .collect();
    if let Some(first) = blocking.first().cloned() {
        let why = format!(
            "{rel}: not examined because {} failed; fix those first",
            blocking.join(", ")
        );
        for name in DATA_CHECKS {
            checks.push(
                Check::fail(name, f, why.clone())
                    .with_observed(json!({ "not_examined_because": blocking }))
                    .consequence_of(&first),
            );
        }
        return checks;
    }
    let data = match &zip.data {
        Some(Ok(data)) => data,
        other => {
            let e = match other {
                Some(Err(e)) => e.as_str(),
                _ => "the members were not read",
            };
            let why = format!("{rel}: {e}");
            checks.push(
                Check::fail(DATA_CHECKS[0], f, why.clone()).with_observed(json!({ "error": e })),
            );
            checks.push(
                Check::fail(DATA_CHECKS[1], f, why.clone())
                    .with_observed(json!({ "error": e }))
                    .consequence_of(DATA_CHECKS[0]),
            );
            checks.push(
                Check::fail(
                    DATA_CHECKS[2],
                    f,
                    format!("{why}; {} is incomplete", obs_extract_rel(folder)),
                )
                .with_observed(json!({ "error": e }))
                .consequence_of(DATA_CHECKS[0]),
            );
            return checks;
        }
    };
    checks.push(members_equal_source(folder, rel, data));
    checks.push(crate::manifest_yaml::decide(folder, rel, &data.manifest));
    checks.push(findings_check(
        "extraction-exact",
        folder,
        &data.extract_rel,
        &data.extraction,
        &format!(
            "exactly the archive's {} members, each re-read from disk with the member's sha256",
            data.members.len()
        ),
        "the extraction is not the archive: this is a harness or file-system defect",
        json!({ "members": data.members.len() }),
    ));
    checks
}

/// The checks of one candidate's archive, in the module's order, from what
/// was observed; pure.
pub(crate) fn decide(obs: &Observation) -> Vec<Check> {
    let folder = obs.folder.as_str();
    let f = Some(folder);
    let Some(rel) = obs.archive.as_deref() else {
        let why = obs.archive_error.clone().unwrap_or_default();
        return vec![
            Check::fail("archive-digest", f, why.clone()).with_observed(json!({ "error": why }))
        ];
    };
    let Some((sha256, size)) = &obs.digest else {
        let e = obs.archive_error.as_deref().unwrap_or("no digest");
        return vec![Check::fail(
            "archive-digest",
            f,
            format!("{rel}: cannot be read ({e}); expected the archive `lbp-build` moved there"),
        )
        .with_observed(json!({ "path": rel, "error": e }))];
    };
    let mut checks = vec![Check::pass(
        "archive-digest",
        f,
        format!("{rel}: sha256 {sha256}, {size} bytes"),
    )
    .with_observed(json!({"path": rel, "sha256": sha256, "size": size}))];
    let Some(zip) = &obs.zip else {
        let m = obs.zip_error.as_deref().unwrap_or("not read");
        checks.push(
            Check::fail(
                "zip-structure",
                f,
                format!("{rel}: Python's zipfile (which the SDK host uses) would refuse it: {m}; rebuild it with `lbp build`"),
            )
            .with_observed(json!({ "error": m })),
        );
        return checks;
    };
    checks.extend(structure_checks(folder, rel, zip));
    let data = data_checks(folder, rel, zip, &checks);
    checks.extend(data);
    checks
}

/// DIR/extracted/<folder>, relative to DIR.
fn obs_extract_rel(folder: &str) -> String {
    format!("extracted/{folder}")
}

fn comment_check(folder: &str, rel: &str, zip: &ZipObservation) -> Check {
    let observed = json!({"comment_bytes": zip.comment_bytes});
    if zip.comment_bytes == 0 {
        return Check::pass(
            "zip-comment",
            Some(folder),
            format!("{rel}: no ZIP comment (an unsigned archive)"),
        )
        .with_observed(observed);
    }
    Check::fail(
        "zip-comment",
        Some(folder),
        format!(
            "{rel}: carries a {}-byte ZIP comment ({:?}); expected none: the SDK keeps a signed envelope \
             there (langbot_plugin certification), and neither `lbp build` nor this harness writes one, so the \
             archive was altered after the build",
            zip.comment_bytes, zip.comment_preview
        ),
    )
    .with_observed(observed)
}

/// `member-names`: the advice follows the cause. A name unsafe on the host
/// that is a committed file's own name (a backslash is part of a Unix file
/// name; `a\..\b.py` is one file there) is copied by every build: only
/// renaming the committed file helps. Any other finding means the archive
/// holds names the build does not write from this commit.
fn names_check(folder: &str, rel: &str, zip: &ZipObservation) -> Check {
    let from_commit = |finding: &str| {
        zip.committed_unsafe_names
            .iter()
            .any(|n| finding.starts_with(&format!("{n:?} ")))
    };
    let (committed, other): (Vec<&String>, Vec<&String>) =
        zip.names.iter().partition(|f| from_commit(f));
    let observed = json!({
        "entries": zip.entries,
        "findings": zip.names,
        "committed_unsafe_names": zip.committed_unsafe_names,
    });
    if zip.names.is_empty() {
        return Check::pass(
            "member-names",
            Some(folder),
            format!(
                "{rel}: every member name is relative, canonical and unique; no file/directory conflicts"
            ),
        )
        .with_observed(observed);
    }
    let mut parts = Vec::new();
    if !committed.is_empty() {
        let names: Vec<String> = zip
            .committed_unsafe_names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect();
        parts.push(format!(
            "{}; these names are committed files' own names ({}), which `lbp build` copies as they are, \
             so rebuilding cannot help: rename the committed file(s) so no name holds a backslash or a \
             `..` component (the host reads `\\` as `/`), commit, and re-run",
            committed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; "),
            names.join(", ")
        ));
    }
    if !other.is_empty() {
        parts.push(format!(
            "{}; no committed file has such a name, so `lbp build` did not write it from this commit: \
             the archive was altered after the build; rebuild it from the staged commit",
            other.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
        ));
    }
    Check::fail(
        "member-names",
        Some(folder),
        format!(
            "{rel}: the host refuses or misplaces such members: {}",
            parts.join(". Also: ")
        ),
    )
    .with_observed(observed)
}

fn expected_members_check(folder: &str, rel: &str, expected: &Result<Expected, String>) -> Check {
    let e = match expected {
        Ok(e) => e,
        Err(m) => {
            return Check::fail(
                "expected-members",
                Some(folder),
                format!("cannot apply the build's inclusion rules to the staged source: {m}"),
            )
            .with_observed(json!({ "error": m }))
        }
    };
    let observed =
        json!({"selected": e.selected, "missing": e.missing, "unexpected": e.unexpected});
    if e.missing.is_empty() && e.unexpected.is_empty() {
        return Check::pass(
            "expected-members",
            Some(folder),
            format!(
                "{rel}: exactly the {} files the build's rules select from the staged source \
                 (root .gitignore as the SDK reads it, plus its fixed exclusions)",
                e.selected
            ),
        )
        .with_observed(observed);
    }
    let mut parts = Vec::new();
    if !e.missing.is_empty() {
        parts.push(format!(
            "source files the build should include but the archive lacks: {:?}",
            e.missing
        ));
    }
    if !e.unexpected.is_empty() {
        parts.push(format!(
            "members with no selected source file: {:?}",
            e.unexpected
        ));
    }
    Check::fail(
        "expected-members",
        Some(folder),
        format!("{rel}: {}; expected the archive to hold exactly what `lbp build` selects: rebuild it from the staged commit", parts.join("; ")),
    )
    .with_observed(observed)
}

fn members_equal_source(folder: &str, rel: &str, data: &MemberData) -> Check {
    let observed = json!({"compared": data.compared, "differences": data.differences});
    if data.differences.is_empty() {
        Check::pass(
            "members-equal-source",
            Some(folder),
            format!("{rel}: all {} members other than manifest.yaml are byte-identical (sha256) to the staged source", data.compared),
        )
    } else {
        Check::fail(
            "members-equal-source",
            Some(folder),
            format!(
                "{rel}: members differ from the staged source: {}; expected byte-identical copies: rebuild from the staged commit",
                data.differences.join(", ")
            ),
        )
    }
    .with_observed(observed)
}

#[cfg(test)]
mod tests;
