//! The sweep before sealing: the evidence directory holds only regular
//! files and folders once it is sealed.
//!
//! What runs in a step's private root (`DIR/roots/<gate>/`: a test's HOME,
//! a runner's workspace) is the code under review. It can leave a symlink
//! to a host file (`/etc/shadow`, `~/.codex/sessions`), a FIFO or a socket
//! there; an archive or upload step that follows links (`tar -h`, `zip -r`)
//! would then carry host files, and one that reads a FIFO hangs. Once every
//! process of the run has ended, and before `SHA256SUMS` and the sign-off
//! are written, the whole directory is walked without following a link:
//! - observe ([`observe`]): every symlink (its target read with `readlink`,
//!   never followed), FIFO, socket and device anywhere under DIR, and every
//!   regular file under `roots/` over [`SIZE_CAP`]; where each was
//!   ([`gate_of`], [`candidate_of`]) and whether a link's target leaves DIR
//!   ([`leaves_dir`]): pure functions of the walk's data;
//! - act ([`act`]): each is removed (an oversized file cut to the cap, or
//!   removed when it is a hard link: cutting would cut its other names), and
//!   what was done is recorded in the entry;
//! - decide ([`decide`]): a pure function from the entries to checks of the
//!   gate whose folder held them: [`LINKS_CHECK`] warns for a link or
//!   special file and fails for a link whose target leaves DIR (or one the
//!   sweep could not remove); [`SIZE_CHECK`] warns for a file cut to the cap.
//!
//! The entries go into `evidence.json` (`swept`); `files` and `SHA256SUMS`
//! are computed after the sweep, so they list only what is still there.

use crate::evidence::{Check, SweptEntry, SweptKind};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Name of the check for links and special files found in a gate's folders.
pub const LINKS_CHECK: &str = "evidence-links";
/// Name of the check for regular files of a private root cut to [`SIZE_CAP`].
pub const SIZE_CHECK: &str = "evidence-size";
/// Largest regular file a private root (`DIR/roots/`) keeps: 64 MiB. Those
/// roots hold what the code under review wrote (HOMEs, workspaces, copies
/// of the tree); nothing the verdict rests on is read from them once the
/// step ended, and a test that writes gigabytes there should not make the
/// evidence unshippable. The harness's own outputs elsewhere in DIR (the
/// staged tar, archives, the wheelhouse) keep their size: their digests are
/// recorded and replayed.
pub const SIZE_CAP: u64 = 64 * 1024 * 1024;
/// Folders under DIR the sweep does not walk: the bytecode cache, which the
/// pipeline removes whole before sealing.
const NOT_WALKED: &[&str] = &["roots/pycache"];
/// Most entries a check's detail names one by one (all are in `observed`).
const NAMED: usize = 10;

/// One entry of the walk, before it is placed and judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `/`-separated path relative to DIR.
    pub path: String,
    /// What `lstat` says it is.
    pub kind: SweptKind,
    /// A link's target, as `readlink` returned it.
    pub target: Option<String>,
    /// A regular file's size in bytes.
    pub size: Option<u64>,
}

/// Walks `dir` without following links (nor entering [`NOT_WALKED`]) and
/// returns what the sweep removes or cuts, in path order, and the walk's
/// errors as sentences.
pub fn walk(dir: &Path, cap: u64) -> (Vec<Found>, Vec<String>) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut found = Vec::new();
    // Regular files with more than one name: (device, inode) -> link count
    // and their paths in DIR.
    let mut shared: BTreeMap<(u64, u64), (u64, Vec<String>)> = BTreeMap::new();
    let mut errors = Vec::new();
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !NOT_WALKED.iter().any(|n| e.path() == dir.join(n)));
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                errors.push(format!("cannot walk: {e}"));
                continue;
            }
        };
        let rel = relative(dir, entry.path());
        let t = entry.file_type();
        let kind = if t.is_symlink() {
            SweptKind::Symlink
        } else if t.is_fifo() {
            SweptKind::Fifo
        } else if t.is_socket() {
            SweptKind::Socket
        } else if t.is_block_device() {
            SweptKind::BlockDevice
        } else if t.is_char_device() {
            SweptKind::CharDevice
        } else if t.is_file() {
            match entry.metadata() {
                Ok(m) if m.nlink() > 1 => {
                    let slot = shared
                        .entry((m.dev(), m.ino()))
                        .or_insert_with(|| (m.nlink(), Vec::new()));
                    slot.1.push(rel);
                    continue;
                }
                Ok(m) if m.len() > cap && rel.starts_with("roots/") => SweptKind::Oversized,
                Ok(_) => continue,
                Err(e) => {
                    errors.push(format!("DIR/{rel}: cannot read its size: {e}"));
                    continue;
                }
            }
        } else {
            continue;
        };
        let target = (kind == SweptKind::Symlink).then(|| {
            std::fs::read_link(entry.path()).map_or_else(
                |e| format!("(unreadable: {e})"),
                |t| t.to_string_lossy().into_owned(),
            )
        });
        let size =
            (kind == SweptKind::Oversized).then(|| entry.metadata().map(|m| m.len()).unwrap_or(0));
        found.push(Found {
            path: rel,
            kind,
            target,
            size,
        });
    }
    found.extend(hard_links(shared, dir, cap));
    found.sort_by(|a, b| a.path.cmp(&b.path));
    (found, errors)
}

/// The files of `shared` (by inode: link count, paths in DIR) that have a
/// name outside DIR ([`SweptKind::HardLink`]); those whose names are all in
/// DIR (a cache hard-linked into a venv of a root) are judged as any file:
/// [`SweptKind::Oversized`] under `roots/` over `cap`.
fn hard_links(
    shared: BTreeMap<(u64, u64), (u64, Vec<String>)>,
    dir: &Path,
    cap: u64,
) -> Vec<Found> {
    let mut out = Vec::new();
    for (nlink, paths) in shared.into_values() {
        let outside = (paths.len() as u64) < nlink;
        for path in paths {
            let size = std::fs::symlink_metadata(dir.join(&path)).map_or(0, |m| m.len());
            let kind = if outside {
                SweptKind::HardLink
            } else if size > cap && path.starts_with("roots/") {
                SweptKind::Oversized
            } else {
                continue;
            };
            out.push(Found {
                path,
                kind,
                target: None,
                size: Some(size),
            });
        }
    }
    out
}

/// `path` relative to `dir`, `/`-separated.
fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Places and judges what [`walk`] found: `dir_names` are the evidence
/// directory's absolute names (as given, resolved), `gates` the run's gate
/// ids, `candidates` its candidate folders. Pure.
pub fn observe(
    found: Vec<Found>,
    dir_names: &[PathBuf],
    gates: &[String],
    candidates: &[String],
) -> Vec<SweptEntry> {
    let links: BTreeSet<String> = found
        .iter()
        .filter(|f| f.kind == SweptKind::Symlink)
        .map(|f| f.path.clone())
        .collect();
    found
        .into_iter()
        .map(|f| SweptEntry {
            leaves_dir: f.kind == SweptKind::HardLink
                || f.target
                    .as_deref()
                    .is_some_and(|t| leaves_dir(&f.path, t, dir_names, &links)),
            gate: gate_of(&f.path, gates),
            candidate: candidate_of(&f.path, candidates),
            path: f.path,
            kind: f.kind,
            target: f.target,
            size: f.size,
            action: String::new(),
        })
        .collect()
}

/// Whether the link at `link` (relative to DIR) to `target` may reach
/// outside DIR, resolved lexically: an absolute target not under one of
/// `dir_names`, `..` climbing above DIR, or a path that passes through
/// another link of `links` (where it really leads is that link's target,
/// so it cannot be shown to stay inside). A target naming a link itself
/// (a loop) is judged by its own path, never followed.
pub fn leaves_dir(
    link: &str,
    target: &str,
    dir_names: &[PathBuf],
    links: &BTreeSet<String>,
) -> bool {
    let target = Path::new(target);
    let (mut stack, rest): (Vec<String>, PathBuf) = if target.is_absolute() {
        match dir_names.iter().find_map(|d| target.strip_prefix(d).ok()) {
            Some(inside) => (Vec::new(), inside.to_path_buf()),
            None => return true,
        }
    } else {
        let mut parent: Vec<String> = link.split('/').map(String::from).collect();
        parent.pop();
        (parent, target.to_path_buf())
    };
    let parts: Vec<Component> = rest.components().collect();
    for (i, part) in parts.iter().enumerate() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if stack.pop().is_none() {
                    return true;
                }
            }
            Component::Normal(name) => {
                stack.push(name.to_string_lossy().into_owned());
                if i + 1 < parts.len() && links.contains(&stack.join("/")) {
                    return true;
                }
            }
            Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

/// The gate whose folder holds `path` (relative to DIR), among `gates`:
/// `roots/<gate>/` and `logs/<gate>/` name it; `staging/` is `stage`'s,
/// `packages/` `lbp-build`'s, `extracted/` `archive-members`', `wheelhouse/`
/// `dependencies`'. `None` anywhere else.
pub fn gate_of(path: &str, gates: &[String]) -> Option<String> {
    let mut parts = path.split('/');
    let (top, next) = (parts.next()?, parts.next());
    let id = match top {
        "roots" | "logs" => next?,
        "staging" => "stage",
        "packages" => "lbp-build",
        "extracted" => "archive-members",
        "wheelhouse" => "dependencies",
        _ => return None,
    };
    gates.iter().find(|g| *g == id).cloned()
}

/// The first folder of `path` (relative to DIR, below its top folder) named
/// like one of `candidates`.
pub fn candidate_of(path: &str, candidates: &[String]) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let folders = parts.get(1..parts.len().saturating_sub(1))?;
    folders
        .iter()
        .find(|p| candidates.iter().any(|c| c == *p))
        .map(|p| (*p).to_string())
}

/// Removes each link and special file of `entries` (an oversized file is cut
/// to `cap`, or removed when it has another name: [`truncate`]) under `dir`, recording what was done in its `action`. A folder
/// the code under review made read-only is made writable by its owner first.
pub fn act(dir: &Path, entries: &mut [SweptEntry], cap: u64) {
    for e in entries {
        let path = on_disk(dir, &e.path);
        let parent = path.parent().unwrap_or(dir).to_path_buf();
        let done = if e.kind == SweptKind::Oversized {
            match retry_writable(&path, &path, |p| truncate(p, cap)) {
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    retry_writable(&path, &parent, |p| std::fs::remove_file(p))
                        .map(|()| format!("removed, not cut: {err}"))
                }
                other => other.map(|()| format!("truncated to {cap} bytes")),
            }
        } else {
            retry_writable(&path, &parent, |p| std::fs::remove_file(p)).map(|()| "removed".into())
        };
        e.action = done.unwrap_or_else(|err| format!("not removed: {err}"));
    }
}

/// The entry of `dir` whose `/`-separated relative path, read lossily as
/// UTF-8, is `rel`: a name a test made of bytes that are not UTF-8
/// (`shadow\xff`) is recorded with U+FFFD, and `dir.join(rel)` would name
/// nothing (`SHA256SUMS` and `files` name it the same way; replay finds
/// it with this too). Each folder is searched for the first name that reads as the
/// component (two such names are two entries; removing the first leaves
/// the second to be found). `dir.join(rel)` when nothing matches.
pub fn on_disk(dir: &Path, rel: &str) -> PathBuf {
    let mut at = dir.to_path_buf();
    for part in rel.split('/') {
        let direct = at.join(part);
        if std::fs::symlink_metadata(&direct).is_ok() {
            at = direct;
            continue;
        }
        let found = std::fs::read_dir(&at).ok().and_then(|list| {
            list.filter_map(Result::ok)
                .map(|e| e.file_name())
                .find(|n| n.to_string_lossy() == part)
        });
        match found {
            Some(name) => at.push(name),
            None => return dir.join(rel),
        }
    }
    at
}

/// `op(path)`, and once more after adding the owner's write and search bits
/// to `writable` (never through a link) when it was refused.
fn retry_writable(
    path: &Path,
    writable: &Path,
    op: impl Fn(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match op(path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let meta = std::fs::symlink_metadata(writable)?;
            if meta.file_type().is_symlink() {
                return Err(e);
            }
            let mode = meta.permissions().mode() | 0o300;
            std::fs::set_permissions(writable, std::fs::Permissions::from_mode(mode))?;
            op(path)
        }
        other => other,
    }
}

/// Cuts the regular file at `path` to `cap` bytes, never through a link and
/// never waiting on a FIFO put in its place. A file with another name (a
/// hard link: a test run without bubblewrap can link a host file of the
/// same filesystem into its HOME) is not cut, since that would cut the
/// host's file too: `AlreadyExists`, and the caller removes this name.
fn truncate(path: &Path, cap: u64) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("no longer a regular file"));
    }
    if meta.nlink() > 1 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "a hard link ({} names share the file; cutting it would cut the others, \
                 which may be outside DIR)",
                meta.nlink()
            ),
        ));
    }
    file.set_len(cap)
}

/// The checks `entries` (placed, acted on) and the walk's `errors` make,
/// each with the gate that gets it (`None`: the run's last required gate).
/// Pure.
pub fn decide(entries: &[SweptEntry], errors: &[String]) -> Vec<(Option<String>, Check)> {
    type Key = (Option<String>, Option<String>, bool);
    let mut groups: BTreeMap<Key, Vec<&SweptEntry>> = BTreeMap::new();
    for e in entries
        .iter()
        .filter(|e| !is_pytest_current(e) && !is_sdk_jail_mirror(e, machine_link))
    {
        let oversized = e.kind == SweptKind::Oversized;
        groups
            .entry((e.gate.clone(), e.candidate.clone(), oversized))
            .or_default()
            .push(e);
    }
    let mut out: Vec<(Option<String>, Check)> = groups
        .into_iter()
        .map(|((gate, candidate, oversized), list)| {
            let check = if oversized {
                size_check(gate.as_deref(), candidate.as_deref(), &list)
            } else {
                links_check(gate.as_deref(), candidate.as_deref(), &list)
            };
            (gate, check)
        })
        .collect();
    if !errors.is_empty() {
        out.push((
            None,
            Check::fail(
                LINKS_CHECK,
                None,
                format!(
                    "the sweep before sealing could not walk all of DIR: {}; expected every folder \
                     readable, so that only regular files and folders are sealed; a step made a \
                     folder unreadable: find which one and have it leave its root readable",
                    errors.join("; ")
                ),
            ),
        ));
    }
    out
}

/// Whether `e` is the link pytest itself makes beside each numbered
/// temporary folder (`_pytest.pathlib.make_numbered_dir`: `<prefix>current`
/// to its sibling `<prefix><N>`, e.g. `pytest-of-root/pytest-current ->
/// .../pytest-of-root/pytest-0`, `pytest-0/test_xcurrent -> .../test_x0`),
/// under the `$TMPDIR` a suites run gets in its root. Every test that uses
/// `tmp_path` leaves them; they are removed and recorded in `swept` like any
/// link, but warned of, they would keep every such good commit from
/// `PASSED`. Only a removed link that stays in DIR and names exactly its
/// sibling folder is pytest's shape: nothing it could lead to is outside.
pub fn is_pytest_current(e: &SweptEntry) -> bool {
    let (Some(target), false, "removed") = (&e.target, e.leaves_dir, e.action.as_str()) else {
        return false;
    };
    let (parent, name) = e.path.rsplit_once('/').unwrap_or(("", &e.path));
    let Some(prefix) = name.strip_suffix("current") else {
        return false;
    };
    let (at, last) = target.rsplit_once('/').unwrap_or(("", target));
    let numbered = last
        .strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let sibling = if target.starts_with('/') {
        !parent.is_empty() && at.ends_with(&format!("/{parent}"))
    } else {
        at.is_empty()
    };
    e.kind == SweptKind::Symlink && numbered && sibling
}

/// The folders the SDK 0.7 runtime mirrors into each shared worker's jail
/// root (`worker_launcher._READONLY_SYSTEM_MOUNTS`): where the machine's
/// own `/<name>` is a link (a merged-/usr system: `/bin -> usr/bin`), the
/// SDK makes the same link in the root (`_ensure_jail_mount_targets`).
const SDK_JAIL_MIRRORS: [&str; 5] = ["bin", "lib", "lib64", "sbin", "usr"];

/// Whether `e` is a link the SDK's shared runtime made in a worker's jail
/// root as a copy of the machine's own: a removed symlink at
/// `…roots/shared-runtime/…/data/plugin-runtime/shared-workers/<64 hex
/// digits>/root/<bin|lib|lib64|sbin|usr>` that stays in DIR and whose
/// target is exactly what `machine_link("/<name>")` reads on this machine.
/// Every shared-runtime candidate leaves four of them; removed and recorded
/// in `swept` like any link, but warned of, they said nothing about the
/// plugin. A lookalike (another name, depth or target) is still judged.
pub fn is_sdk_jail_mirror(e: &SweptEntry, machine_link: impl Fn(&str) -> Option<String>) -> bool {
    let (Some(target), false, "removed", SweptKind::Symlink) =
        (&e.target, e.leaves_dir, e.action.as_str(), &e.kind)
    else {
        return false;
    };
    let mut parts = e.path.rsplit('/');
    let (
        Some(name),
        Some("root"),
        Some(digest),
        Some("shared-workers"),
        Some("plugin-runtime"),
        Some("data"),
    ) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    )
    else {
        return false;
    };
    let hex = digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    hex && e.path.contains("roots/shared-runtime/")
        && SDK_JAIL_MIRRORS.contains(&name)
        && machine_link(&format!("/{name}")).as_deref() == Some(target.as_str())
}

/// `readlink` of a path of this machine, as text (`None`: not a link).
fn machine_link(path: &str) -> Option<String> {
    std::fs::read_link(path)
        .ok()
        .and_then(|t| t.to_str().map(str::to_string))
}

/// Where entries of `gate` were: the sentence's subject.
fn place(gate: Option<&str>) -> String {
    match gate {
        Some(g) => format!("the folders of gate {g} (DIR/roots/{g}/ and its other outputs)"),
        None => "DIR outside any gate's folders".into(),
    }
}

/// One entry as a detail names it.
fn line(e: &SweptEntry) -> String {
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let mut s = format!("DIR/{} ({kind}", e.path);
    if let Some(t) = &e.target {
        s.push_str(&format!(" -> {t}"));
        if e.leaves_dir {
            s.push_str(", outside DIR");
        }
    } else if e.kind == SweptKind::HardLink {
        s.push_str(", another name of the same file is outside DIR");
    }
    if let Some(size) = e.size {
        s.push_str(&format!(", {size} bytes"));
    }
    s.push_str(&format!(": {})", e.action));
    s
}

/// The entries' lines, at most [`NAMED`] of them.
fn lines(list: &[&SweptEntry]) -> String {
    let mut named: Vec<String> = list.iter().take(NAMED).map(|e| line(e)).collect();
    if list.len() > NAMED {
        named.push(format!(
            "and {} more (evidence.json `swept`)",
            list.len() - NAMED
        ));
    }
    named.join("; ")
}

fn observed(list: &[&SweptEntry]) -> serde_json::Value {
    serde_json::to_value(list).unwrap_or_default()
}

fn links_check(gate: Option<&str>, candidate: Option<&str>, list: &[&SweptEntry]) -> Check {
    let outside: Vec<&SweptEntry> = list.iter().copied().filter(|e| e.leaves_dir).collect();
    let stuck = list.iter().any(|e| e.action.starts_with("not removed"));
    let found = format!(
        "{} link(s) or special file(s) in {}, left by what ran there (or committed, for the \
         staged source and its copies): {}",
        list.len(),
        place(gate),
        lines(list)
    );
    let check = if outside.is_empty() && !stuck {
        Check::warn(
            LINKS_CHECK,
            candidate,
            format!(
                "{found}; expected only regular files and folders in the evidence directory (an upload \
                 that follows links or reads a FIFO would copy or hang on them); removed before sealing \
                 and recorded in evidence.json `swept`"
            ),
        )
    } else {
        Check::fail(
            LINKS_CHECK,
            candidate,
            format!(
                "{found}; expected no link out of the evidence directory, found {} whose target is \
                 outside DIR{}: an archive or upload that follows links (tar -h, zip -r) would carry \
                 the host's files; removed before sealing and recorded in evidence.json `swept`; make \
                 the step write copies of what it needs into its own root, never links to the host",
                outside.len(),
                if stuck { " (or that the sweep could not remove)" } else { "" }
            ),
        )
    };
    check.with_observed(serde_json::json!({ "swept": observed(list) }))
}

fn size_check(gate: Option<&str>, candidate: Option<&str>, list: &[&SweptEntry]) -> Check {
    Check::warn(
        SIZE_CHECK,
        candidate,
        format!(
            "{} file(s) over {SIZE_CAP} bytes in {}: {}; expected a private root's files to stay under \
             the cap, so that the evidence stays shippable; cut to the cap before sealing and \
             recorded in evidence.json `swept`",
            list.len(),
            place(gate),
            lines(list)
        ),
    )
    .with_observed(serde_json::json!({ "swept": observed(list) }))
}

#[cfg(test)]
mod tests;
