//! The `lbp-build` gate: the official build of the verified SDK, run from each
//! staged candidate, produces exactly one archive named after the manifest.
//!
//! Per candidate (all candidates in parallel, results in profile order):
//! `<python> -I -B -m langbot_plugin.cli build -o DIR/roots/lbp-build/<folder>/out`
//! with cwd = the staged candidate, a private HOME/TMP, the allowlisted
//! environment and `LANG=C.UTF-8` (the SDK's `cli_print` picks its language
//! from `LANG`; English keeps "Plugin manifest not found" recognisable). `-I`
//! keeps the plugin folder off `sys.path`, so a `langbot_plugin/` folder in a
//! candidate cannot stand in for the SDK during the build.
//!
//! Checks per candidate: `manifest-identity` (the manifest names a string
//! author, name and version safe in a file name), `build-exit`,
//! `single-archive` (exactly one file, `<author>-<name>-<version>.lbpkg`,
//! moved to DIR/packages/<folder>/) and `source-untouched` (every staged file's
//! sha256 is the same after the build). The SDK's build exits 0 and writes
//! nothing on an invalid manifest, so the file is what counts, not the status.
//! A name, author or version unsafe in a file name is never built: the SDK
//! does not validate them and would write outside its output directory.

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use crate::manifest::{self, ManifestId};
use crate::process::{self, ChildSpec};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `lbp-build` gate.
pub struct LbpBuild;

/// Gate id, also the log and private-root folder name.
const GATE: &str = "lbp-build";

/// What one candidate's build needs; built on the gate's thread, used on a
/// worker thread.
struct BuildInput {
    folder: String,
    staged: PathBuf,
    out: PathBuf,
    packages: PathBuf,
    spec: Result<ChildSpec, String>,
}

/// One candidate's result.
struct BuildOutput {
    checks: Vec<Check>,
    manifest: Option<ManifestId>,
}

impl super::Gate for LbpBuild {
    fn id(&self) -> &'static str {
        GATE
    }

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
        if ctx.staged_root.is_none() {
            return Err("the staged source is missing (the `stage` gate did not record DIR/staging/source); run `stage` first".into());
        }
        if ctx.verified_sdk.is_none() {
            return Err("the SDK was not verified (the `sdk-record` gate did not pass); run `sdk-record` first".into());
        }
        let timeout = Duration::from_secs(ctx.profile.profile.build.timeout_secs);
        let inputs: Vec<BuildInput> = ctx
            .candidate_specs()
            .iter()
            .map(|c| {
                let folder = c.folder().to_string();
                let base = ctx.evidence_dir.join("roots").join(GATE).join(&folder);
                let out = base.join("out");
                let spec = ctx
                    .private_roots(GATE, &folder)
                    .map_err(|e| {
                        format!(
                            "cannot create private HOME/TMP under {}: {e}",
                            base.display()
                        )
                    })
                    .map(|(home, tmp)| {
                        official_build_spec(
                            &ctx.python,
                            &ctx.staged_candidate(c),
                            &out,
                            ctx.child_env(&home, &tmp),
                            timeout,
                            ctx.log_stem(GATE, &folder),
                        )
                    });
                BuildInput {
                    staged: ctx.staged_candidate(c),
                    packages: ctx.packages_dir(&folder),
                    folder,
                    out,
                    spec,
                }
            })
            .collect();
        let outputs: Vec<BuildOutput> = std::thread::scope(|s| {
            let handles: Vec<_> = inputs
                .iter()
                .map(|input| s.spawn(move || build_one(input)))
                .collect();
            handles
                .into_iter()
                .zip(&inputs)
                .map(|(h, input)| {
                    h.join().unwrap_or_else(|_| BuildOutput {
                        checks: vec![Check::fail(
                            "build-exit",
                            Some(&input.folder),
                            "the harness thread running this build panicked; this is a harness defect: report it",
                        )],
                        manifest: None,
                    })
                })
                .collect()
        });
        let mut checks = Vec::new();
        for (i, output) in outputs.into_iter().enumerate() {
            let manifest = output.manifest;
            out.set(move |ctx| {
                if let Some(record) = ctx.candidates.get_mut(i) {
                    record.manifest = manifest;
                }
            });
            checks.extend(output.checks);
        }
        Ok(checks)
    }
}

/// The identity fields of `manifest.yaml` that are strings unsafe in a file
/// name (empty when none is, or when the file cannot be parsed).
/// The official build of the candidate at `source` into `out`:
/// `<python> -I -B -m langbot_plugin.cli build -o <out>` run from `source`
/// (the SDK's `langbot_plugin.cli.commands.buildplugin` needs `./manifest.yaml`),
/// with `env` plus `LANG=C.UTF-8` (so the SDK's messages, such as "Plugin
/// manifest not found", are in English). `-I` keeps the plugin folder off
/// `sys.path`. Used by this gate and by `replay`'s rebuild.
pub fn official_build_spec(
    python: &Path,
    source: &Path,
    out: &Path,
    mut env: BTreeMap<String, String>,
    timeout: Duration,
    log_stem: PathBuf,
) -> ChildSpec {
    env.insert("LANG".into(), "C.UTF-8".into());
    ChildSpec {
        program: python.to_path_buf(),
        args: vec![
            "-I".into(),
            "-B".into(),
            "-m".into(),
            "langbot_plugin.cli".into(),
            "build".into(),
            "-o".into(),
            out.display().to_string(),
        ],
        cwd: source.to_path_buf(),
        env,
        timeout,
        log_stem,
        stdin: None,
    }
}

fn unsafe_identity_fields(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(value) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
        return Vec::new();
    };
    ["author", "name", "version"]
        .iter()
        .filter_map(|f| match value.get("metadata").and_then(|m| m.get(*f)) {
            Some(serde_yaml_ng::Value::String(s)) if !manifest::is_safe_component(s) => {
                Some(format!("metadata.{f} = {s:?}"))
            }
            _ => None,
        })
        .collect()
}

fn build_one(input: &BuildInput) -> BuildOutput {
    let folder = Some(input.folder.as_str());
    let manifest_path = input.staged.join("manifest.yaml");
    let mut checks = Vec::new();
    let identity = manifest::read_id(&manifest_path);
    match &identity {
        Ok(id) => checks.push(
            Check::pass(
                "manifest-identity",
                folder,
                format!(
                    "manifest.yaml names author {:?}, name {:?}, version {:?}: the build must write {}",
                    id.author,
                    id.name,
                    id.version,
                    id.archive_name()
                ),
            )
            .with_observed(json!({"author": id.author, "name": id.name, "version": id.version})),
        ),
        Err(message) => {
            let unsafe_fields = unsafe_identity_fields(&manifest_path);
            if !unsafe_fields.is_empty() {
                checks.push(Check::fail(
                    "manifest-identity",
                    folder,
                    format!(
                        "{message}. The build was not run: the SDK puts {} into the archive's file name without \
                         validating it and would write outside its output directory; use a plain name",
                        unsafe_fields.join(", ")
                    ),
                ));
                return BuildOutput { checks, manifest: None };
            }
            checks.push(Check::fail("manifest-identity", folder, format!("{message}; the build runs anyway to record what it does")));
        }
    }
    let spec = match &input.spec {
        Ok(spec) => spec,
        Err(m) => {
            checks.push(Check::fail("build-exit", folder, m.clone()));
            return BuildOutput {
                checks,
                manifest: identity.ok(),
            };
        }
    };
    let before = match crate::hash::tree_digests(&input.staged) {
        Ok(t) => t,
        Err(m) => {
            checks.push(Check::fail(
                "source-untouched",
                folder,
                format!("cannot read the staged candidate before the build: {m}"),
            ));
            return BuildOutput {
                checks,
                manifest: identity.ok(),
            };
        }
    };
    if let Err(e) = std::fs::create_dir_all(&input.out) {
        checks.push(Check::fail(
            "build-exit",
            folder,
            format!(
                "cannot create the output directory {}: {e}",
                input.out.display()
            ),
        ));
        return BuildOutput {
            checks,
            manifest: identity.ok(),
        };
    }
    let output = match process::run(spec) {
        Ok(o) => o,
        Err(e) => {
            checks.push(Check::fail("build-exit", folder, e.to_string()));
            return BuildOutput {
                checks,
                manifest: identity.ok(),
            };
        }
    };
    let logs = format!(
        "{} and {}",
        output.logs.0.display(),
        output.logs.1.display()
    );
    let build_ok = output.success() && !output.stragglers_killed;
    checks.push(
        Check::from_bool(
            "build-exit",
            folder,
            build_ok,
            if build_ok {
                format!("`lbp build` exited with status 0 in {} ms (output in {logs})", output.duration.as_millis())
            } else if output.success() {
                format!("`lbp build` exited 0 but left processes running, which were stopped; expected a build that exits alone (output in {logs})")
            } else {
                format!(
                    "`lbp build` {} (expected exit status 0); last output:\n{}\nfull output in {logs}",
                    output.describe(),
                    output.tail(20)
                )
            },
        )
        .with_observed(json!({"status": output.status.code(), "timed_out": output.timed_out, "duration_ms": output.duration.as_millis() as u64})),
    );

    let said_not_found = output.stdout_text().contains("Plugin manifest not found")
        || output.stderr_text().contains("Plugin manifest not found");
    checks.push(single_archive(
        input,
        identity.as_ref(),
        said_not_found,
        &output.describe(),
    ));

    checks.push(match crate::hash::tree_digests(&input.staged) {
        Ok(after) => source_untouched(folder, &before, &after),
        Err(m) => Check::fail(
            "source-untouched",
            folder,
            format!("cannot read the staged candidate after the build: {m}"),
        ),
    });
    BuildOutput {
        checks,
        manifest: identity.ok(),
    }
}

/// Judges the output directory and moves the archive to DIR/packages/<folder>/.
fn single_archive(
    input: &BuildInput,
    identity: Result<&ManifestId, &String>,
    said_not_found: bool,
    status: &str,
) -> Check {
    let folder = Some(input.folder.as_str());
    let mut entries: Vec<(String, bool)> = Vec::new();
    match std::fs::read_dir(&input.out) {
        Ok(rd) => {
            for e in rd.flatten() {
                let is_file = e.file_type().map(|t| t.is_file()).unwrap_or(false);
                entries.push((e.file_name().to_string_lossy().into_owned(), is_file));
            }
        }
        Err(e) => {
            return Check::fail(
                "single-archive",
                folder,
                format!("cannot list {}: {e}", input.out.display()),
            )
        }
    }
    entries.sort();
    let expected = identity.map(|id| id.archive_name());
    let not_found = if said_not_found {
        " The build printed \"Plugin manifest not found\"."
    } else {
        ""
    };
    if entries.is_empty() {
        let diagnosis = match identity {
            Err(m) => format!(" Manifest diagnosis: {m}."),
            Ok(_) => String::new(),
        };
        return Check::fail(
            "single-archive",
            folder,
            format!(
                "the official build ({status}) wrote no archive into {}; expected {}.{not_found}{diagnosis} \
                 The SDK's build exits 0 without an archive when the manifest is invalid: fix manifest.yaml \
                 so the SDK's manifest model accepts it",
                input.out.display(),
                expected.as_deref().unwrap_or("one <author>-<name>-<version>.lbpkg"),
            ),
        )
        .with_observed(json!({"files": [], "manifest_not_found_printed": said_not_found}));
    }
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    let observed = json!({"files": names, "manifest_not_found_printed": said_not_found});
    let expected = match expected {
        Ok(e) => e,
        Err(m) => {
            let detail = format!(
                "the build wrote {names:?} but the manifest's identity could not be read ({m}); \
                 the archive name cannot be confirmed: fix manifest.yaml"
            );
            return Check::fail("single-archive", folder, detail).with_observed(observed);
        }
    };
    if entries.len() != 1 || entries[0].0 != expected || !entries[0].1 {
        return Check::fail(
            "single-archive",
            folder,
            format!(
                "{} holds {names:?}; expected exactly one regular file {expected:?} named after manifest.yaml's \
                 author, name and version",
                input.out.display()
            ),
        )
        .with_observed(observed);
    }
    let from = input.out.join(&expected);
    let to = input.packages.join(&expected);
    let moved = std::fs::create_dir_all(&input.packages).and_then(|()| std::fs::rename(&from, &to));
    match moved {
        Ok(()) => {
            let size = std::fs::metadata(&to).map(|m| m.len()).unwrap_or(0);
            Check::pass(
                "single-archive",
                folder,
                format!("the build wrote exactly one archive, {expected} ({size} bytes), now packages/{}/{expected}", input.folder),
            )
            .with_observed(json!({"archive": format!("packages/{}/{expected}", input.folder), "size": size}))
        }
        Err(e) => Check::fail(
            "single-archive",
            folder,
            format!("cannot move {} to {}: {e}", from.display(), to.display()),
        ),
    }
}

fn source_untouched(
    folder: Option<&str>,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Check {
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut changes = Vec::new();
    for k in keys {
        match (before.get(k), after.get(k)) {
            (Some(_), None) => changes.push(format!("removed {k}")),
            (None, Some(_)) => changes.push(format!("added {k}")),
            (Some(a), Some(b)) if a != b => changes.push(format!("changed {k}")),
            _ => {}
        }
    }
    if changes.is_empty() {
        Check::pass(
            "source-untouched",
            folder,
            format!("all {} staged entries of the candidate are unchanged after the build (sha256 and size)", before.len()),
        )
    } else {
        Check::fail(
            "source-untouched",
            folder,
            format!(
                "the build modified the staged source it was run from: {}; expected a build that only writes \
                 its output directory",
                changes.join(", ")
            ),
        )
        .with_observed(json!({"changes": changes}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    #[test]
    fn unsafe_names_are_detected_but_floats_are_not_unsafe() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("manifest.yaml");
        std::fs::write(
            &p,
            "metadata:\n  author: a\n  name: ../../evil\n  version: '1'\n",
        )
        .unwrap();
        assert_eq!(
            unsafe_identity_fields(&p),
            ["metadata.name = \"../../evil\""]
        );
        std::fs::write(&p, "metadata:\n  author: a\n  name: x\n  version: 1.0\n").unwrap();
        assert!(unsafe_identity_fields(&p).is_empty());
    }

    #[test]
    fn source_changes_are_listed() {
        let mut a = BTreeMap::new();
        a.insert("x".to_string(), "1:1".to_string());
        a.insert("y".to_string(), "2:1".to_string());
        let mut b = a.clone();
        b.insert("y".into(), "3:1".into());
        b.insert("z".into(), "dir".into());
        b.remove("x");
        let c = source_untouched(Some("f"), &a, &b);
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail.contains("removed x, changed y, added z"),
            "{}",
            c.detail
        );
        assert_eq!(source_untouched(None, &a, &a).result, CheckResult::Pass);
    }

    fn input(dir: &Path) -> BuildInput {
        BuildInput {
            folder: "c".into(),
            staged: dir.join("staged"),
            out: dir.join("out"),
            packages: dir.join("packages/c"),
            spec: Err("unused".into()),
        }
    }

    #[test]
    fn missing_archive_names_the_diagnosis_and_the_sdk_message() {
        let d = tempfile::tempdir().unwrap();
        let inp = input(d.path());
        std::fs::create_dir_all(&inp.out).unwrap();
        let diag = "manifest.yaml: metadata.version is a float (1.0)".to_string();
        let c = single_archive(&inp, Err(&diag), true, "exit status 0");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("wrote no archive"), "{}", c.detail);
        assert!(
            c.detail.contains("metadata.version is a float"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("Plugin manifest not found"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn wrong_or_extra_files_fail_and_the_right_one_moves() {
        let d = tempfile::tempdir().unwrap();
        let inp = input(d.path());
        std::fs::create_dir_all(&inp.out).unwrap();
        let id = ManifestId {
            author: "a".into(),
            name: "n".into(),
            version: "1".into(),
        };
        std::fs::write(inp.out.join("a-n-2.lbpkg"), b"x").unwrap();
        let c = single_archive(&inp, Ok(&id), false, "exit status 0");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("a-n-1.lbpkg"), "{}", c.detail);
        std::fs::remove_file(inp.out.join("a-n-2.lbpkg")).unwrap();
        std::fs::write(inp.out.join("a-n-1.lbpkg"), b"x").unwrap();
        let c = single_archive(&inp, Ok(&id), false, "exit status 0");
        assert_eq!(c.result, CheckResult::Pass, "{}", c.detail);
        assert!(inp.packages.join("a-n-1.lbpkg").is_file());
    }
}
