//! The `stage` gate: `git archive` of the exact commit into
//! `DIR/staging/source.tar`, safely extracted to `DIR/staging/source/`, and
//! every extracted file's git blob id recomputed and compared with
//! `git ls-tree -r`. Candidates are built only from this staged copy.

use crate::archive;
use crate::context::{RunContext, Updates};
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

    fn run(&self, ctx: &RunContext, out: &mut Updates) -> Result<Vec<Check>, String> {
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
        {
            let hex = digest.hex();
            out.set(move |ctx| ctx.source.archive_sha256 = Some(hex));
        }
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
        let all_attributes = match commit_attributes(ctx, &tree) {
            Ok(a) => a,
            Err(e) => {
                checks.push(Check::fail(
                    "byte-attributes",
                    None,
                    format!("not observed: expected `git check-attr` to answer for the commit's files, found {e}"),
                ));
                return Ok(checks);
            }
        };
        let attributes = export_attributes(&all_attributes);
        checks.push(blob_check(ctx, &tree, &attributes));
        checks.push(byte_attributes_check(&byte_changing_attributes(
            &all_attributes,
        )));
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
        out.set(move |ctx| ctx.source.export_attributes = attr_list);

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
            let pointers = lfs_pointers(&source, &tree, &prefix);
            if pointers.is_empty() {
                checks.push(Check::pass(
                    "no-lfs-pointers",
                    Some(&folder),
                    format!("no file inside {} is a Git LFS pointer", spec.path),
                ));
            } else {
                all_candidates_ok = false;
                let listed: Vec<String> = pointers
                    .iter()
                    .map(|(p, size)| format!("{p} ({size} bytes)"))
                    .collect();
                checks.push(
                    Check::fail(
                        "no-lfs-pointers",
                        Some(&folder),
                        format!(
                            "expected every file inside {} to hold its content, found {} Git LFS pointer \
                             file(s) (first line `version https://git-lfs.github.com/spec/v1`):\n  {}\n\
                             the archive would ship the pointer, not the content; commit the files \
                             themselves (`git lfs untrack` and `git lfs migrate export --include=PATH`, \
                             or drop them from the candidate) and commit",
                            spec.path,
                            pointers.len(),
                            listed.join("\n  ")
                        ),
                    )
                    .with_observed(json!(pointers
                        .iter()
                        .map(|(p, size)| json!({"path": p, "size": size}))
                        .collect::<Vec<_>>())),
                );
            }
        }
        let failed = checks
            .iter()
            .any(|c| c.result == crate::evidence::CheckResult::Fail);
        if !failed && all_candidates_ok {
            out.set(move |ctx| ctx.staged_root = Some(source));
        }
        Ok(checks)
    }
}

/// Attributes the `stage` gate reads for every tree path: the two that
/// change what `git archive` includes, and those that change the bytes it
/// writes for a file (gitattributes(5): `text`, `eol` and the older `crlf`
/// convert line endings, `ident` expands `$Id$`, `filter` runs a smudge
/// driver, `working-tree-encoding` re-encodes, `export-subst` expands
/// placeholders).
pub const READ_ATTRIBUTES: &[&str] = &[
    "export-ignore",
    "export-subst",
    "text",
    "eol",
    "crlf",
    "ident",
    "filter",
    "working-tree-encoding",
];

/// `path -> [(attribute, state)]` as `git check-attr -z` prints it, for every
/// attribute that is not `unspecified`: the state is `set`, `unset` or the
/// value. Read at the commit (`git check-attr --source`, git 2.40+) or,
/// failing that, from the clean work tree; `.git/info/attributes` counts in
/// both (the per-user attributes file does not: see `git::HERMETIC_CONFIG`).
///
/// # Errors
/// When neither `git check-attr` answers.
fn commit_attributes(
    ctx: &RunContext,
    tree: &[git::TreeEntry],
) -> Result<BTreeMap<String, Vec<(String, String)>>, String> {
    let stdin: Vec<u8> = tree
        .iter()
        .flat_map(|e| e.path.bytes().chain(std::iter::once(0)))
        .collect();
    let commit = ctx.source.commit.clone();
    let mut with_source = vec!["check-attr", "-z", "--stdin", "--source", commit.as_str()];
    with_source.extend_from_slice(READ_ATTRIBUTES);
    let mut plain = vec!["check-attr", "-z", "--stdin"];
    plain.extend_from_slice(READ_ATTRIBUTES);
    let stem = ctx.log_stem("stage", "git-check-attr");
    let out = git::run(&ctx.repo, &with_source, Some(&stem), Some(stdin.clone()))
        .or_else(|_| git::run(&ctx.repo, &plain, Some(&stem), Some(stdin)))?;
    Ok(parse_check_attr_z(&out.stdout))
}

/// Parses `git check-attr -z` output (`path NUL attribute NUL state NUL`...)
/// into `path -> [(attribute, state)]`, leaving out `unspecified` states.
pub fn parse_check_attr_z(bytes: &[u8]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut map: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let fields: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
    for triple in fields.chunks(3) {
        if let [path, attr, info] = triple {
            if *info == b"unspecified" {
                continue;
            }
            map.entry(String::from_utf8_lossy(path).into_owned())
                .or_default()
                .push((
                    String::from_utf8_lossy(attr).into_owned(),
                    String::from_utf8_lossy(info).into_owned(),
                ));
        }
    }
    map
}

/// `path -> [attribute]` for the paths whose `export-ignore` or
/// `export-subst` is set.
pub fn export_attributes(
    attributes: &BTreeMap<String, Vec<(String, String)>>,
) -> BTreeMap<String, Vec<String>> {
    attributes
        .iter()
        .filter_map(|(path, attrs)| {
            let set: Vec<String> = attrs
                .iter()
                .filter(|(a, state)| {
                    (a == "export-ignore" || a == "export-subst") && state == "set"
                })
                .map(|(a, _)| a.clone())
                .collect();
            (!set.is_empty()).then(|| (path.clone(), set))
        })
        .collect()
}

/// One committed attribute that changes the bytes `git archive` writes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ByteAttribute {
    /// Repository-relative path.
    pub path: String,
    /// As gitattributes spells it: `text`, `eol=crlf`, `filter=lfs`, ...
    pub attribute: String,
}

/// Every `(path, attribute)` whose state changes bytes: `text`, `crlf`,
/// `ident` or `export-subst` set, or `text`, `crlf`, `eol`, `filter` or
/// `working-tree-encoding` given a value. An unset attribute (`-text`,
/// `binary`) turns a conversion off and is not listed.
pub fn byte_changing_attributes(
    attributes: &BTreeMap<String, Vec<(String, String)>>,
) -> Vec<ByteAttribute> {
    let mut out = Vec::new();
    for (path, attrs) in attributes {
        for (attr, state) in attrs {
            let changes = match (attr.as_str(), state.as_str()) {
                (_, "unset") => false,
                ("text" | "crlf" | "ident" | "export-subst", "set") => true,
                ("text" | "crlf" | "eol" | "filter" | "working-tree-encoding", _) => state != "set",
                _ => false,
            };
            if changes {
                out.push(ByteAttribute {
                    path: path.clone(),
                    attribute: if state == "set" {
                        attr.clone()
                    } else {
                        format!("{attr}={state}")
                    },
                });
            }
        }
    }
    out
}

/// At most this many paths are named in a check's detail; the observed
/// value lists them all.
const NAMED_AT_MOST: usize = 50;

/// The `byte-attributes` check over [`byte_changing_attributes`]'s findings.
pub fn byte_attributes_check(found: &[ByteAttribute]) -> Check {
    let observed = json!(found);
    if found.is_empty() {
        return Check::pass(
            "byte-attributes",
            None,
            format!(
                "no committed file carries an attribute that changes the bytes git archive writes ({})",
                READ_ATTRIBUTES[1..].join(", ")
            ),
        )
        .with_observed(observed);
    }
    let mut lines: Vec<String> = found
        .iter()
        .take(NAMED_AT_MOST)
        .map(|a| {
            if a.attribute == "filter=lfs" {
                format!(
                    "{}: filter=lfs (Git LFS: git archive ships the pointer file, not the content)",
                    a.path
                )
            } else {
                format!("{}: {}", a.path, a.attribute)
            }
        })
        .collect();
    if found.len() > NAMED_AT_MOST {
        lines.push(format!(
            "... and {} more (all in this check's observed value)",
            found.len() - NAMED_AT_MOST
        ));
    }
    Check::fail(
        "byte-attributes",
        None,
        format!(
            "expected git archive to write every committed file's blob bytes unchanged, found {} \
             attribute(s) that change them (line endings, keyword or placeholder expansion, filter \
             drivers, re-encoding):\n  {}\nthe certified bytes would depend on conversion, not on \
             the commit; remove these attributes from .gitattributes (or .git/info/attributes), \
             commit the files as they should ship (`-text` keeps bytes as committed), and commit",
            found.len(),
            lines.join("\n  ")
        ),
    )
    .with_observed(observed)
}

/// The first line of a Git LFS pointer file (git-lfs `docs/spec.md`; the
/// pre-release `hawser` spelling too). Pointer files are under 1024 bytes.
const LFS_POINTER_VERSIONS: &[&[u8]] = &[
    b"version https://git-lfs.github.com/spec/v1\n",
    b"version https://hawser.github.com/spec/v1\n",
];

/// Whether `head` (a file's first bytes, at least 1024 of them when the file
/// is that long) of a file of `size` bytes is a Git LFS pointer.
pub fn is_lfs_pointer(head: &[u8], size: u64) -> bool {
    size < 1024 && LFS_POINTER_VERSIONS.iter().any(|v| head.starts_with(v))
}

/// Staged files under `prefix` (`Runner/x/`) whose content is a Git LFS
/// pointer, with their size.
fn lfs_pointers(
    source: &std::path::Path,
    tree: &[git::TreeEntry],
    prefix: &str,
) -> Vec<(String, u64)> {
    use std::io::Read as _;
    let mut out = Vec::new();
    for entry in tree {
        if entry.kind != "blob" || entry.mode == "120000" || !entry.path.starts_with(prefix) {
            continue;
        }
        let Ok(file) = std::fs::File::open(source.join(&entry.path)) else {
            continue;
        };
        let mut head = Vec::with_capacity(1024);
        if file.take(1024).read_to_end(&mut head).is_ok()
            && is_lfs_pointer(&head, head.len() as u64)
        {
            out.push((entry.path.clone(), head.len() as u64));
        }
    }
    out
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
                 the staged copy is not the commit; see the byte-attributes check for attributes \
                 that change bytes, and git's log under logs/stage/",
                ctx.source.commit,
                problems.len(),
                problems.join("\n  ")
            ),
        )
        .with_observed(observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(raw: &[(&str, &str, &str)]) -> BTreeMap<String, Vec<(String, String)>> {
        let bytes: Vec<u8> = raw
            .iter()
            .flat_map(|(p, a, s)| format!("{p}\0{a}\0{s}\0").into_bytes())
            .collect();
        parse_check_attr_z(&bytes)
    }

    #[test]
    fn check_attr_output_keeps_every_specified_state() {
        let map = attrs(&[
            ("a b.txt", "text", "set"),
            ("a b.txt", "eol", "crlf"),
            ("a b.txt", "filter", "unspecified"),
            ("c.bin", "text", "unset"),
        ]);
        assert_eq!(
            map["a b.txt"],
            [("text".into(), "set".into()), ("eol".into(), "crlf".into())]
        );
        assert_eq!(map["c.bin"], [("text".into(), "unset".into())]);
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn every_byte_changing_attribute_is_named_with_its_path() {
        let map = attrs(&[
            ("a.txt", "text", "set"),
            ("a.txt", "eol", "crlf"),
            ("auto.txt", "text", "auto"),
            ("old.txt", "crlf", "input"),
            ("id.py", "ident", "set"),
            ("assets/weights.bin", "filter", "lfs"),
            ("utf16.txt", "working-tree-encoding", "UTF-16"),
            ("version.py", "export-subst", "set"),
        ]);
        let found: Vec<(String, String)> = byte_changing_attributes(&map)
            .into_iter()
            .map(|a| (a.path, a.attribute))
            .collect();
        let expected: Vec<(String, String)> = [
            ("a.txt", "text"),
            ("a.txt", "eol=crlf"),
            ("assets/weights.bin", "filter=lfs"),
            ("auto.txt", "text=auto"),
            ("id.py", "ident"),
            ("old.txt", "crlf=input"),
            ("utf16.txt", "working-tree-encoding=UTF-16"),
            ("version.py", "export-subst"),
        ]
        .iter()
        .map(|(p, a)| (p.to_string(), a.to_string()))
        .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn unset_attributes_and_export_ignore_change_no_bytes() {
        let map = attrs(&[
            ("a.bin", "text", "unset"),
            ("a.bin", "crlf", "unset"),
            ("a.bin", "ident", "unset"),
            ("a.bin", "filter", "unset"),
            ("docs/x", "export-ignore", "set"),
        ]);
        assert!(byte_changing_attributes(&map).is_empty());
        let c = byte_attributes_check(&[]);
        assert_eq!(c.result, crate::evidence::CheckResult::Pass, "{}", c.detail);
        assert_eq!(
            export_attributes(&map)["docs/x"],
            ["export-ignore".to_string()]
        );
    }

    #[test]
    fn the_refusal_names_attribute_and_path_and_what_to_do() {
        let found = vec![
            ByteAttribute {
                path: "notes.txt".into(),
                attribute: "eol=crlf".into(),
            },
            ByteAttribute {
                path: "assets/weights.bin".into(),
                attribute: "filter=lfs".into(),
            },
        ];
        let c = byte_attributes_check(&found);
        assert_eq!(c.result, crate::evidence::CheckResult::Fail);
        assert!(
            c.detail.contains("\n  notes.txt: eol=crlf\n"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains(
                "assets/weights.bin: filter=lfs (Git LFS: git archive ships the pointer file, not the content)"
            ),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("remove these attributes"), "{}", c.detail);
    }

    #[test]
    fn long_lists_are_cut_in_the_detail_not_in_the_observation() {
        let found: Vec<ByteAttribute> = (0..60)
            .map(|i| ByteAttribute {
                path: format!("f{i}.txt"),
                attribute: "text=auto".into(),
            })
            .collect();
        let c = byte_attributes_check(&found);
        assert!(c.detail.contains("... and 10 more"), "{}", c.detail);
        assert_eq!(c.observed.unwrap().as_array().unwrap().len(), 60);
    }

    #[test]
    fn lfs_pointers_are_recognised_by_their_first_line_and_size() {
        let pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n";
        assert!(is_lfs_pointer(pointer, pointer.len() as u64));
        assert!(is_lfs_pointer(
            b"version https://hawser.github.com/spec/v1\n",
            42
        ));
        // Too long for a pointer, another first line, or the line not first.
        assert!(!is_lfs_pointer(pointer, 1024));
        assert!(!is_lfs_pointer(b"version 1.0\n", 12));
        assert!(!is_lfs_pointer(
            b"# version https://git-lfs.github.com/spec/v1\n",
            46
        ));
    }
}
