//! Read-only git queries on the repository under review, hermetic.
//!
//! Every call runs with `GIT_OPTIONAL_LOCKS=0` so that `git status` does not
//! refresh the index: the repository is never written to.
//!
//! No configuration outside the repository reaches git: the system and
//! global files are not read (`GIT_CONFIG_NOSYSTEM=1`,
//! `GIT_CONFIG_GLOBAL=/dev/null`, which also drops the XDG
//! `~/.config/git/config`), and the settings that would change the bytes
//! `git archive` writes or what `git status` reports are fixed on the command
//! line ([`HERMETIC_CONFIG`]), where they override the repository's own
//! `.git/config` too (command-line `-c` is git's last and strongest scope).
//! The one setting carried over is `safe.directory` from the user's system and
//! global files: it is a trust decision git honours only from there, not a
//! byte conversion.
//!
//! Nothing the repository configures runs: before every call the keys git
//! would read are listed and each command-valued one (filter, diff and merge
//! drivers, fsmonitor, hooks, editors, pagers, helpers) is overridden on the
//! command line ([`repo_config`]). Replace objects (`refs/replace/*`) and
//! grafts are off in every call (`GIT_NO_REPLACE_OBJECTS=1`,
//! `GIT_GRAFT_FILE=/dev/null`): git reads the objects the commit id names,
//! as a fresh clone does. [`history_rewrites`] lists what was ignored.
//! A repository-local `core.worktree` does not move the work tree either:
//! every call passes `--work-tree=<the folder holding .git>`
//! ([`own_worktree`]).

mod own_worktree;
pub mod repo_config;

pub use own_worktree::own_worktree;

use crate::process::{self, ChildOutput, ChildSpec};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Time limit of one git call.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// `-c` settings put before every git command (`git -c K=V ... <command>`).
///
/// - `core.autocrlf=false`, `core.eol=lf`, `core.safecrlf=false`: no line-ending
///   conversion on `git archive` (checkout direction) or on status's content
///   comparison, whatever the user or the repository configured.
/// - `core.attributesFile=/dev/null`, `core.excludesFile=/dev/null`: the default
///   per-user files (`~/.config/git/attributes`, `~/.config/git/ignore`) are not
///   read, so a user's attributes cannot change bytes and a user's ignore rules
///   cannot hide an untracked file from `tree-clean`.
/// - `core.fsmonitor=false`, `core.untrackedCache=false`: status reads the
///   work tree itself, no hook or cache answers for it.
/// - `tar.umask=0002`: git's default, fixing the modes `git archive` writes.
/// - `core.hooksPath=/dev/null`: no hook of the repository can run.
pub const HERMETIC_CONFIG: &[&str] = &[
    "core.autocrlf=false",
    "core.eol=lf",
    "core.safecrlf=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "tar.umask=0002",
    "core.hooksPath=/dev/null",
];

/// The environment of every git call: the allowlisted base, no system or
/// global configuration, no prompt, C locale.
fn env() -> std::collections::BTreeMap<String, String> {
    let mut env = process::base_env();
    if let Ok(home) = std::env::var("HOME") {
        env.insert("HOME".into(), home);
    }
    env.insert("GIT_OPTIONAL_LOCKS".into(), "0".into());
    env.insert("LC_ALL".into(), "C".into());
    env.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
    env.insert("GIT_CONFIG_NOSYSTEM".into(), "1".into());
    env.insert("GIT_CONFIG_GLOBAL".into(), "/dev/null".into());
    env.insert("GIT_NO_REPLACE_OBJECTS".into(), "1".into());
    env.insert("GIT_GRAFT_FILE".into(), "/dev/null".into());
    env.insert("GIT_ATTR_NOSYSTEM".into(), "1".into());
    env
}

/// Every `safe.directory` value the user's system and then global
/// configuration hold (in git's reading order; an empty value, which resets
/// the list, is carried over as well), read once per process. Without them a
/// repository owned by another user (a CI checkout) would be refused once the
/// global file is no longer read.
fn user_safe_directories() -> &'static [String] {
    static ARGS: OnceLock<Vec<String>> = OnceLock::new();
    ARGS.get_or_init(|| {
        let mut env = process::base_env();
        if let Ok(home) = std::env::var("HOME") {
            env.insert("HOME".into(), home);
        }
        env.insert("LC_ALL".into(), "C".into());
        let mut values = Vec::new();
        for scope in ["--system", "--global"] {
            let Ok(tmp) = tempfile::tempdir() else {
                continue;
            };
            let spec = ChildSpec {
                program: "git".into(),
                args: ["config", scope, "--get-all", "safe.directory"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                cwd: tmp.path().to_path_buf(),
                env: env.clone(),
                timeout: GIT_TIMEOUT,
                log_stem: tmp.path().join("git"),
                stdin: None,
            };
            // Exit 1: the scope has no such value (or no file).
            if let Ok(out) = process::run(&spec) {
                if out.success() {
                    values.extend(out.stdout_text().lines().map(str::to_string));
                }
            }
        }
        values
    })
}

/// `git`'s arguments before `args`: `-c safe.directory=V` for each of
/// `safe_directories`, then `-c K=V` for each of [`HERMETIC_CONFIG`], then
/// `args`.
pub fn hermetic_args(safe_directories: &[String], args: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for value in safe_directories {
        out.push("-c".to_string());
        out.push(format!("safe.directory={value}"));
    }
    for setting in HERMETIC_CONFIG {
        out.push("-c".to_string());
        out.push((*setting).to_string());
    }
    out.extend(args.iter().map(|s| s.to_string()));
    out
}

/// Runs `git <args>` in `repo`, logging under `log_stem` (or a temporary
/// directory when `None`).
///
/// # Errors
/// A sentence with the command, its status and its stderr tail.
pub fn run(
    repo: &Path,
    args: &[&str],
    log_stem: Option<&Path>,
    stdin: Option<Vec<u8>>,
) -> Result<ChildOutput, String> {
    let tmp;
    let stem = match log_stem {
        Some(s) => s.to_path_buf(),
        None => {
            tmp = tempfile::tempdir()
                .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
            tmp.path().join("git")
        }
    };
    let mut all_args = hermetic_args(user_safe_directories(), &[]);
    all_args.extend(repository_overrides(repo, &stem)?);
    // The repository's own work tree, whatever its `core.worktree` says.
    if let Some(root) = own_worktree(repo) {
        all_args.push(format!("--work-tree={}", root.display()));
    }
    all_args.extend(args.iter().map(|s| s.to_string()));
    let spec = ChildSpec {
        program: "git".into(),
        args: all_args,
        cwd: repo.to_path_buf(),
        env: env(),
        timeout: GIT_TIMEOUT,
        log_stem: stem,
        stdin,
    };
    let out = process::run(&spec).map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "`git {}` in {}: {}: {}",
            args.join(" "),
            repo.display(),
            out.describe(),
            out.tail(5)
        ));
    }
    Ok(out)
}

/// `-c KEY=VALUE` pairs that disable every command the configuration git
/// reads in `repo` names (see [`repo_config`]); none outside a repository.
/// The listing itself runs hermetic and reads configuration only.
///
/// # Errors
/// When git cannot be started.
fn repository_overrides(repo: &Path, stem: &Path) -> Result<Vec<String>, String> {
    let spec = ChildSpec {
        program: "git".into(),
        args: hermetic_args(user_safe_directories(), &["config", "--list", "-z"]),
        cwd: repo.to_path_buf(),
        env: env(),
        timeout: GIT_TIMEOUT,
        log_stem: {
            let mut s = stem.as_os_str().to_owned();
            s.push("-config-list");
            PathBuf::from(s)
        },
        stdin: None,
    };
    let out = process::run(&spec).map_err(|e| e.to_string())?;
    // Outside a repository `git config --list` still lists the command line;
    // a failure (no repository at all) leaves nothing to override.
    Ok(if out.success() {
        repo_config::overrides(&out.stdout)
    } else {
        Vec::new()
    })
}

/// `(key, value)` of every setting git reads in `repo` beyond the command
/// line (the repository's `.git/config`, the files it includes,
/// `config.worktree`), in reading order.
///
/// # Errors
/// When git cannot be run.
pub fn repository_config(repo: &Path) -> Result<Vec<(String, String)>, String> {
    let out = run(
        repo,
        &["config", "--list", "--show-scope", "-z"],
        None,
        None,
    )?;
    // `--show-scope -z` prints `SCOPE NUL KEY NEWLINE VALUE NUL`.
    let fields: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    let mut settings = Vec::new();
    for pair in fields.chunks(2) {
        if let [scope, entry] = pair {
            if *scope == b"command" {
                continue;
            }
            let mut z = entry.to_vec();
            z.push(0);
            settings.extend(repo_config::parse_list_z(&z));
        }
    }
    Ok(settings)
}

/// Something that rewrites history for git unless replace objects and
/// grafts are off: a replace ref or a graft file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum HistoryRewrite {
    /// `refs/replace/<id>`: object `id` reads as object `replacement`.
    ReplaceRef {
        /// The ref's full name.
        name: String,
        /// The object it points to.
        replacement: String,
    },
    /// A graft file with content (`<git-common-dir>/info/grafts`, or the
    /// harness's own `GIT_GRAFT_FILE`).
    Grafts {
        /// Its path.
        path: String,
        /// Lines in it.
        lines: usize,
    },
}

/// Every replace ref and non-empty graft file of `repo`, and a
/// `GIT_GRAFT_FILE` in the harness's environment; git calls of this module
/// ignore them all.
///
/// # Errors
/// When git cannot be run.
pub fn history_rewrites(
    repo: &Path,
    log_stem: Option<&Path>,
) -> Result<Vec<HistoryRewrite>, String> {
    let refs = run(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/replace/",
        ],
        log_stem,
        None,
    )?;
    let mut found: Vec<HistoryRewrite> = refs
        .stdout_text()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(name, id)| HistoryRewrite::ReplaceRef {
            name: name.to_string(),
            replacement: id.to_string(),
        })
        .collect();
    let common = run(
        repo,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        None,
        None,
    )?;
    let mut graft_files = vec![PathBuf::from(common.stdout_text().trim()).join("info/grafts")];
    if let Some(path) = std::env::var_os("GIT_GRAFT_FILE").filter(|p| !p.is_empty()) {
        graft_files.push(PathBuf::from(path));
    }
    for path in graft_files {
        let lines = std::fs::read(&path)
            .map(|b| {
                b.split(|c| *c == b'\n')
                    .filter(|l| !l.trim_ascii().is_empty())
                    .count()
            })
            .unwrap_or(0);
        if lines > 0 {
            found.push(HistoryRewrite::Grafts {
                path: path.display().to_string(),
                lines,
            });
        }
    }
    Ok(found)
}

/// The repository's top level, for any path inside it.
///
/// # Errors
/// When `path` is not inside a git work tree.
pub fn toplevel(path: &Path) -> Result<PathBuf, String> {
    if !path.is_dir() {
        return Err(format!(
            "--repo {}: expected a directory inside a git repository, found no directory",
            path.display()
        ));
    }
    let out = run(path, &["rev-parse", "--show-toplevel"], None, None).map_err(|e| {
        format!("--repo {}: expected a git work tree, found none ({e}); pass --repo DIR inside the repository", path.display())
    })?;
    Ok(PathBuf::from(out.stdout_text().trim()))
}

/// `(commit, tree)` of `HEAD`.
///
/// # Errors
/// When `HEAD` does not name a commit (an empty repository).
pub fn head(repo: &Path) -> Result<(String, String), String> {
    let resolve = |rev: &str| -> Result<String, String> {
        let out =
            run(repo, &["rev-parse", "--verify", "--quiet", rev], None, None).map_err(|e| {
                format!(
                    "{}: expected a commit at HEAD, found none ({e}); commit the candidates first",
                    repo.display()
                )
            })?;
        Ok(out.stdout_text().trim().to_string())
    };
    Ok((resolve("HEAD^{commit}")?, resolve("HEAD^{tree}")?))
}

/// One entry of `git status --porcelain=v1 -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// Index status letter (`X`).
    pub index: char,
    /// Work-tree status letter (`Y`).
    pub worktree: char,
    /// Repository-relative path.
    pub path: String,
    /// Original path of a rename or copy.
    pub orig: Option<String>,
}

/// Parses `git status --porcelain=v1 -z` output.
pub fn parse_status_z(bytes: &[u8]) -> Vec<StatusEntry> {
    let mut fields = bytes.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut entries = Vec::new();
    while let Some(field) = fields.next() {
        if field.len() < 4 {
            continue;
        }
        let index = field[0] as char;
        let worktree = field[1] as char;
        let path = String::from_utf8_lossy(&field[3..]).into_owned();
        let orig = if matches!(index, 'R' | 'C') {
            fields
                .next()
                .map(|f| String::from_utf8_lossy(f).into_owned())
        } else {
            None
        };
        entries.push(StatusEntry {
            index,
            worktree,
            path,
            orig,
        });
    }
    entries
}

/// One blob of `git ls-tree -r -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Octal mode text: `100644`, `100755`, `120000`, `160000`.
    pub mode: String,
    /// `blob` or `commit`.
    pub kind: String,
    /// Object id.
    pub id: String,
    /// Repository-relative path.
    pub path: String,
}

/// Parses `git ls-tree -r -z --full-tree` output.
pub fn parse_ls_tree_z(bytes: &[u8]) -> Vec<TreeEntry> {
    bytes
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .filter_map(|f| {
            let text = String::from_utf8_lossy(f);
            let (meta, path) = text.split_once('\t')?;
            let mut parts = meta.split(' ');
            Some(TreeEntry {
                mode: parts.next()?.into(),
                kind: parts.next()?.into(),
                id: parts.next()?.into(),
                path: path.into(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_gets_the_hermetic_settings_before_it() {
        let args = hermetic_args(&["/srv/repo".into(), String::new()], &["archive", "HEAD"]);
        assert_eq!(
            &args[..4],
            ["-c", "safe.directory=/srv/repo", "-c", "safe.directory="]
        );
        assert_eq!(&args[args.len() - 2..], ["archive", "HEAD"]);
        let settings: Vec<&str> = args[4..args.len() - 2]
            .chunks(2)
            .map(|pair| {
                assert_eq!(pair[0], "-c");
                pair[1].as_str()
            })
            .collect();
        for needed in ["core.autocrlf=false", "core.eol=lf", "core.safecrlf=false"] {
            assert!(settings.contains(&needed), "{needed}: {settings:?}");
        }
        assert_eq!(settings, HERMETIC_CONFIG);
    }

    #[test]
    fn repository_autocrlf_does_not_reach_git_archive() {
        // A repository whose own config converts line endings on checkout,
        // a file with LF endings: the archived bytes are the blob's.
        let dir = tempfile::tempdir().unwrap();
        let plain = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .env_remove("GIT_INDEX_FILE")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        plain(&["init", "-q"]);
        std::fs::write(dir.path().join("a.txt"), b"one\ntwo\n").unwrap();
        plain(&["add", "a.txt"]);
        plain(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "t",
        ]);
        plain(&["config", "core.autocrlf", "true"]);
        // git itself, with the repository's config, converts ...
        let converted = plain(&["archive", "--format=tar", "HEAD"]);
        assert!(converted.windows(10).any(|w| w == b"one\r\ntwo\r\n"));
        // ... the hermetic call does not.
        let out = run(dir.path(), &["archive", "--format=tar", "HEAD"], None, None).unwrap();
        assert!(out.stdout.windows(8).any(|w| w == b"one\ntwo\n"));
        assert!(!out.stdout.windows(2).any(|w| w == b"\r\n"));
    }

    #[test]
    fn replace_refs_and_grafts_are_listed_and_ignored_by_every_call() {
        use crate::gates::testing::{git, repo};
        let dir = tempfile::tempdir().unwrap();
        let real = repo(dir.path(), &[("a.txt", "real\n")]);
        let real_tree = git(dir.path(), &["rev-parse", "HEAD^{tree}"]);
        std::fs::write(dir.path().join("a.txt"), "other\n").unwrap();
        git(dir.path(), &["commit", "-qam", "other"]);
        let other = git(dir.path(), &["rev-parse", "HEAD"]);
        git(dir.path(), &["replace", &real, &other]);
        let common = dir.path().join(".git/info");
        std::fs::create_dir_all(&common).unwrap();
        std::fs::write(common.join("grafts"), format!("{other}\n")).unwrap();
        // Plain git reads the replacement; the hermetic call the commit.
        assert_ne!(
            git(dir.path(), &["rev-parse", &format!("{real}^{{tree}}")]),
            real_tree
        );
        let tree = run(
            dir.path(),
            &["rev-parse", &format!("{real}^{{tree}}")],
            None,
            None,
        )
        .unwrap()
        .stdout_text();
        assert_eq!(tree.trim(), real_tree);
        let found = history_rewrites(dir.path(), None).unwrap();
        assert_eq!(
            found,
            [
                HistoryRewrite::ReplaceRef {
                    name: format!("refs/replace/{real}"),
                    replacement: other.clone(),
                },
                HistoryRewrite::Grafts {
                    path: dir
                        .path()
                        .canonicalize()
                        .unwrap()
                        .join(".git/info/grafts")
                        .display()
                        .to_string(),
                    lines: 1,
                },
            ]
        );
    }

    #[test]
    fn status_z_parses_renames_and_untracked() {
        let raw = b"R  new.txt\0old.txt\0 M mod.txt\0?? un tracked.txt\0!! build/\0";
        let e = parse_status_z(raw);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].orig.as_deref(), Some("old.txt"));
        assert_eq!((e[1].index, e[1].worktree), (' ', 'M'));
        assert_eq!(e[2].path, "un tracked.txt");
        assert_eq!(e[3].index, '!');
    }

    #[test]
    fn ls_tree_z_parses_paths_with_spaces() {
        let raw = b"100644 blob ce013625030ba8dba906f756967f9e9ca394464a\ta b.txt\0";
        let e = parse_ls_tree_z(raw);
        assert_eq!(e[0].path, "a b.txt");
        assert_eq!(e[0].mode, "100644");
    }
}
