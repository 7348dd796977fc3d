//! The `stage` gate: `git archive` of the exact commit into
//! `DIR/staging/source.tar`, safely extracted to `DIR/staging/source/`, and
//! every extracted file's git blob id recomputed and compared with
//! `git ls-tree -r`. Candidates are built only from this staged copy.

use crate::archive;
use crate::context::RunContext;
use crate::evidence::{Check, ExportAttribute};
use crate::{git, hash};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use walkdir::WalkDir;

/// The `stage` gate.
pub struct Stage;

impl super::Gate for Stage {
    fn id(&self) -> &'static str {
        "stage"
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Check>, String> {
        let staging = ctx.evidence_dir.join("staging");
        std::fs::create_dir_all(&staging)
            .map_err(|e| format!("{}: cannot create: {e}", staging.display()))?;
        let tar_path = staging.join("source.tar");
        let tar_arg = tar_path.display().to_string();
        let commit = ctx.source.commit.clone();
        git::run(
            &ctx.repo,
            &["archive", "--format=tar", "-o", &tar_arg, &commit],
            Some(&ctx.log_stem("stage", "git-archive")),
            None,
        )?;
        let digest =
            hash::sha256_file(&tar_path).map_err(|e| format!("{}: {e}", tar_path.display()))?;
        ctx.source.archive_sha256 = Some(digest.hex());
        let mut checks = vec![Check::pass(
            "git-archive",
            None,
            format!(
                "`git archive --format=tar {commit}` wrote {} bytes, sha256 {}",
                digest.size,
                digest.hex()
            ),
        )
        .with_observed(
            json!({ "path": "staging/source.tar", "sha256": digest.hex(), "size": digest.size }),
        )];

        let source = ctx.staging_source();
        let extraction = match archive::extract_tar(&tar_path, &source) {
            Ok(x) => x,
            Err(e) => {
                checks.push(Check::fail(
                    "tar-extraction",
                    None,
                    format!("staging/source.tar: {e}"),
                ));
                return Ok(checks);
            }
        };
        checks.push(Check::pass(
            "tar-extraction",
            None,
            format!(
                "{} files, {} symlinks, {} directories extracted to staging/source; no absolute, `..` or escaping entry",
                extraction.files.len(),
                extraction.symlinks.len(),
                extraction.dirs.len()
            ),
        ));

        let listing = git::run(
            &ctx.repo,
            &["ls-tree", "-r", "-z", "--full-tree", &commit],
            Some(&ctx.log_stem("stage", "git-ls-tree")),
            None,
        )?;
        let tree = git::parse_ls_tree_z(&listing.stdout);
        let attributes = export_attributes(ctx, &tree);
        checks.push(blob_check(ctx, &tree, &attributes));
        let attr_list: Vec<ExportAttribute> = attributes
            .iter()
            .flat_map(|(path, attrs)| {
                attrs.iter().map(move |a| ExportAttribute {
                    path: path.clone(),
                    attribute: a.clone(),
                })
            })
            .collect();
        checks.push(
            Check::pass(
                "export-attributes",
                None,
                format!("{} path(s) carry export-ignore or export-subst (listed, see source.export_attributes)", attr_list.len()),
            )
            .with_observed(json!(attr_list.iter().map(|a| json!({"path": a.path, "attribute": a.attribute})).collect::<Vec<_>>())),
        );
        ctx.source.export_attributes = attr_list;

        let mut all_candidates_ok = true;
        for spec in ctx.candidate_specs().to_vec() {
            let dir = ctx.staged_candidate(&spec);
            let folder = spec.folder().to_string();
            if !dir.is_dir() {
                all_candidates_ok = false;
                let found = match std::fs::symlink_metadata(&dir) {
                    Ok(m) if m.is_file() => "a file",
                    Ok(_) => "something that is not a folder",
                    Err(_) => "none",
                };
                checks.push(Check::fail(
                    "candidate-present",
                    Some(&folder),
                    format!(
                        "{}: expected a candidate folder in commit {commit}, found {found}; \
                         commit it or fix the profile's candidate path",
                        spec.path
                    ),
                ));
                continue;
            }
            checks.push(Check::pass(
                "candidate-present",
                Some(&folder),
                format!("{} is in the commit", spec.path),
            ));
            let prefix = format!("{}/", spec.path);
            let ignored: Vec<&String> = attributes
                .iter()
                .filter(|(p, a)| p.starts_with(&prefix) && a.iter().any(|a| a == "export-ignore"))
                .map(|(p, _)| p)
                .collect();
            if ignored.is_empty() {
                checks.push(Check::pass(
                    "no-export-ignore",
                    Some(&folder),
                    format!(
                        "no committed file inside {} carries export-ignore",
                        spec.path
                    ),
                ));
            } else {
                all_candidates_ok = false;
                checks.push(
                    Check::fail(
                        "no-export-ignore",
                        Some(&folder),
                        format!(
                            "expected every committed file of {} to be staged, found {} with the export-ignore \
                             attribute, which `git archive` leaves out:\n  {}\nthe archive would not ship files \
                             the commit has; remove export-ignore for them from .gitattributes (or \
                             .git/info/attributes), or delete the files, and commit",
                            spec.path,
                            ignored.len(),
                            ignored.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\n  ")
                        ),
                    )
                    .with_observed(json!({ "export_ignore": ignored })),
                );
            }
            let links: Vec<(String, String)> = extraction
                .symlinks
                .iter()
                .filter(|(p, _)| p == &spec.path || p.starts_with(&format!("{}/", spec.path)))
                .cloned()
                .collect();
            if links.is_empty() {
                checks.push(Check::pass(
                    "no-symlinks",
                    Some(&folder),
                    format!("no symlink inside {}", spec.path),
                ));
            } else {
                all_candidates_ok = false;
                let listed: Vec<String> =
                    links.iter().map(|(p, t)| format!("{p} -> {t}")).collect();
                checks.push(
                    Check::fail(
                        "no-symlinks",
                        Some(&folder),
                        format!(
                            "expected no symlink inside {}, found:\n  {}\nthe official build follows links and packs \
                             the target's bytes (for an absolute or escaping link, files of the build machine); \
                             replace each link with the file it points to",
                            spec.path,
                            listed.join("\n  ")
                        ),
                    )
                    .with_observed(json!(links.iter().map(|(p, t)| json!({"path": p, "target": t})).collect::<Vec<_>>())),
                );
            }
        }
        let failed = checks
            .iter()
            .any(|c| c.result == crate::evidence::CheckResult::Fail);
        if !failed && all_candidates_ok {
            ctx.staged_root = Some(source);
        }
        Ok(checks)
    }
}

/// `path -> [attribute]` for every tree path with `export-ignore` or
/// `export-subst` set, read at the commit (`git check-attr --source`, git
/// 2.40+) or, failing that, from the clean work tree.
fn export_attributes(ctx: &RunContext, tree: &[git::TreeEntry]) -> BTreeMap<String, Vec<String>> {
    let stdin: Vec<u8> = tree
        .iter()
        .flat_map(|e| e.path.bytes().chain(std::iter::once(0)))
        .collect();
    let commit = ctx.source.commit.clone();
    let with_source = [
        "check-attr",
        "-z",
        "--stdin",
        "--source",
        commit.as_str(),
        "export-ignore",
        "export-subst",
    ];
    let plain = [
        "check-attr",
        "-z",
        "--stdin",
        "export-ignore",
        "export-subst",
    ];
    let stem = ctx.log_stem("stage", "git-check-attr");
    let out = git::run(&ctx.repo, &with_source, Some(&stem), Some(stdin.clone()))
        .or_else(|_| git::run(&ctx.repo, &plain, Some(&stem), Some(stdin)));
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Ok(out) = out {
        let fields: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
        for triple in fields.chunks(3) {
            if let [path, attr, info] = triple {
                if *info == b"set" {
                    map.entry(String::from_utf8_lossy(path).into_owned())
                        .or_default()
                        .push(String::from_utf8_lossy(attr).into_owned());
                }
            }
        }
    }
    map
}

fn blob_check(
    ctx: &RunContext,
    tree: &[git::TreeEntry],
    attributes: &BTreeMap<String, Vec<String>>,
) -> Check {
    let source = ctx.staging_source();
    let mut problems = Vec::new();
    let mut verified = 0u64;
    let mut export_ignored = Vec::new();
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for entry in tree {
        if entry.kind != "blob" {
            problems.push(format!(
                "{}: a {} entry (submodule?); it is not in the archive",
                entry.path, entry.kind
            ));
            continue;
        }
        let attrs = attributes.get(&entry.path).cloned().unwrap_or_default();
        let path = source.join(&entry.path);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_) if attrs.iter().any(|a| a == "export-ignore") => {
                export_ignored.push(entry.path.clone());
                continue;
            }
            Err(e) => {
                problems.push(format!(
                    "{}: in the commit, missing from staging/source ({e})",
                    entry.path
                ));
                continue;
            }
        };
        expected.insert(entry.path.clone());
        let observed = if entry.mode == "120000" {
            match std::fs::read_link(&path) {
                Ok(target) => Ok(hash::git_blob_id_of_bytes(
                    target.as_os_str().as_encoded_bytes(),
                )),
                Err(e) => Err(e),
            }
        } else {
            hash::git_blob_id(&path)
        };
        match observed {
            Ok(id) if id == entry.id => verified += 1,
            Ok(id) => problems.push(format!(
                "{}: expected blob {}, found {id}{}",
                entry.path,
                entry.id,
                if attrs.is_empty() {
                    String::new()
                } else {
                    format!(" (attributes: {})", attrs.join(", "))
                }
            )),
            Err(e) => problems.push(format!("{}: cannot read ({e})", entry.path)),
        }
        let exec = meta.permissions().mode() & 0o111 != 0;
        if entry.mode == "100755" && !exec || entry.mode == "100644" && exec {
            problems.push(format!(
                "{}: git mode {} but staged mode {:o}",
                entry.path,
                entry.mode,
                meta.permissions().mode() & 0o777
            ));
        }
    }
    for f in WalkDir::new(&source)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
    {
        if f.file_type().is_dir() {
            continue;
        }
        let rel = f
            .path()
            .strip_prefix(&source)
            .map(|p| {
                // Joined by component: a backslash is part of a Unix file name.
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        if !expected.contains(&rel) {
            problems.push(format!(
                "{rel}: in staging/source but not in the commit's tree"
            ));
        }
    }
    let observed = json!({ "blobs_verified": verified, "tree_entries": tree.len(), "export_ignored": export_ignored });
    if problems.is_empty() {
        Check::pass(
            "blob-ids",
            None,
            format!(
                "all {verified} staged files have the git blob id `git ls-tree -r {}` lists",
                ctx.source.commit
            ),
        )
        .with_observed(observed)
    } else {
        Check::fail(
            "blob-ids",
            None,
            format!(
                "expected staging/source to be exactly commit {}, found {} difference(s):\n  {}\n\
                 the staged copy is not the commit; check export-subst attributes and git filters",
                ctx.source.commit,
                problems.len(),
                problems.join("\n  ")
            ),
        )
        .with_observed(observed)
    }
}
