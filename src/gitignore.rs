//! Git's own reading of a plugin's `.gitignore` files, with the line that
//! decided: the expectation the `archive-members` gate holds `lbp build`'s
//! simplified reading ([`crate::build_rules`]) against.
//!
//! Which files count: every `.gitignore` inside the plugin folder (its root
//! and nested ones), read as git reads them when the plugin folder is the
//! work tree's top level (`gitignore(5)`): a file's patterns apply to its own
//! directory and below; deeper files take precedence over shallower ones;
//! within a file the last matching line decides (a `!` line re-includes); a
//! path under an ignored directory is ignored whatever a later `!` line says,
//! and a `.gitignore` inside an ignored directory is never read.
//!
//! Which files do not count, and why: the `.gitignore` files of the
//! repository above the plugin folder (the repository root's, `Runner/`'s),
//! `.git/info/exclude` and `core.excludesFile`. A plugin is built from its
//! folder alone (`lbp build` runs there and reads nothing above it), and the
//! same folder checked out or published on its own carries no ancestor
//! rules: what the plugin's author says the plugin leaves out is in the
//! plugin's own files, while the ancestor files are the repository's
//! housekeeping for every folder. Leaving them out is also the strict choice:
//! an ancestor pattern can only turn a committed file the plugin's own rules
//! keep into an ignored (force-added) one, that is a failure into a warning,
//! and the build's drop never came from it. The other two are not part of
//! the commit at all, so a reviewer could not replay them.
//!
//! Patterns are parsed and matched by the `ignore` crate
//! (`ignore::gitignore::GitignoreBuilder`, ripgrep's), one line at a time so
//! that the deciding line is known. Where that crate reads a line differently
//! from git, the line is rewritten first, or refused when no rewrite is
//! faithful ([`for_ignore_crate`]); the unit tests compare verdicts with
//! `git check-ignore --no-index -v`.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use serde::Serialize;
use std::path::Path;

/// The base name git reads ignore patterns from.
pub const GITIGNORE: &str = ".gitignore";

/// One `.gitignore` line that decided a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitPattern {
    /// The `.gitignore` holding the line, relative to the plugin root
    /// (`.gitignore`, `sub/.gitignore`).
    pub file: String,
    /// 1-based line number, as `git check-ignore -v` counts it.
    pub line: usize,
    /// The line as written, trailing spaces trimmed as git trims them.
    pub pattern: String,
    /// The path it matched, relative to the plugin root: the file itself or
    /// an ancestor directory.
    pub at: String,
}

/// What git's ignore rules say about one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "git", rename_all = "kebab-case")]
pub enum GitVerdict {
    /// Not ignored: `by` is the `!` line that re-included it, or `None` when
    /// no line matches it at all.
    Kept {
        /// The negation that decided, if any.
        by: Option<GitPattern>,
    },
    /// Ignored by `by` (a committed file in this state was force-added).
    Ignored {
        /// The line that decided.
        by: GitPattern,
    },
}

impl GitVerdict {
    /// Whether git keeps the path.
    pub fn is_kept(&self) -> bool {
        matches!(self, GitVerdict::Kept { .. })
    }
}

/// One pattern line, compiled on its own so that a match names its line.
struct Line {
    number: usize,
    /// The line as written, trailing unescaped spaces trimmed.
    text: String,
    matcher: Gitignore,
}

/// One `.gitignore` file of the plugin.
struct IgnoreFile {
    /// Its directory relative to the plugin root; empty for the root.
    dir: String,
    /// Its path relative to the plugin root.
    path: String,
    /// Its pattern lines, in file order.
    lines: Vec<Line>,
}

/// The `.gitignore` files of one plugin, ready to judge paths.
pub struct GitRules {
    /// Deepest directory first, so the first file with a match decides.
    files: Vec<IgnoreFile>,
}

impl GitRules {
    /// Reads every `<dir>/.gitignore` among `files` (`/`-separated paths
    /// relative to `root`, the plugin's committed files) from `root`.
    ///
    /// # Errors
    /// When such a file cannot be read, is not UTF-8 (a pattern git would
    /// read byte by byte: the harness cannot judge names against it), or
    /// holds a line the `ignore` crate cannot compile.
    pub fn read<'a>(
        root: &Path,
        files: impl IntoIterator<Item = &'a str>,
    ) -> Result<GitRules, String> {
        let mut out = Vec::new();
        for rel in files {
            let dir = match rel.rsplit_once('/') {
                Some((dir, GITIGNORE)) => dir,
                None if rel == GITIGNORE => "",
                _ => continue,
            };
            let mut path = root.to_path_buf();
            path.extend(rel.split('/'));
            // Git (since 2.32) opens in-tree `.gitignore` files with
            // O_NOFOLLOW: a committed symlink is not read ("unable to access
            // ... Too many levels of symbolic links"), while `lbp build`
            // follows it. Reading its target here would make a file the
            // build drops by it look force-added instead of kept.
            if std::fs::symlink_metadata(&path)
                .map_err(|e| format!("{}: cannot read: {e}", path.display()))?
                .file_type()
                .is_symlink()
            {
                continue;
            }
            let bytes = std::fs::read(&path)
                .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                format!(
                    "{}: not UTF-8 ({e}); git matches such patterns byte by byte, which this \
                     harness does not: make the file UTF-8",
                    path.display()
                )
            })?;
            out.push(IgnoreFile {
                dir: dir.to_string(),
                path: rel.to_string(),
                lines: compile(rel, &text)?,
            });
        }
        out.sort_by_key(|f| std::cmp::Reverse(depth(&f.dir)));
        Ok(GitRules { files: out })
    }

    /// Git's verdict on `rel`, a committed file (`/`-separated, relative to
    /// the plugin root): each ancestor directory top down, then the file;
    /// at each level the deepest `.gitignore` above it with a matching line
    /// decides, and its last matching line; an ignored directory ends the
    /// walk.
    pub fn verdict(&self, rel: &str) -> GitVerdict {
        let components: Vec<&str> = rel.split('/').collect();
        let mut kept_by = None;
        for end in 1..=components.len() {
            let at = components[..end].join("/");
            let is_dir = end < components.len();
            match self.decide(&at, is_dir) {
                Some((true, by)) => return GitVerdict::Ignored { by },
                Some((false, by)) if !is_dir => kept_by = Some(by),
                _ => {}
            }
        }
        GitVerdict::Kept { by: kept_by }
    }

    /// `(ignored, line)` of the line deciding `at`, or `None` when no line
    /// of an applicable file matches.
    fn decide(&self, at: &str, is_dir: bool) -> Option<(bool, GitPattern)> {
        for file in &self.files {
            let relative = if file.dir.is_empty() {
                at
            } else {
                match at
                    .strip_prefix(file.dir.as_str())
                    .and_then(|r| r.strip_prefix('/'))
                {
                    Some(r) => r,
                    None => continue,
                }
            };
            for line in file.lines.iter().rev() {
                let ignored = match line.matcher.matched(relative, is_dir) {
                    Match::None => continue,
                    Match::Ignore(_) => true,
                    Match::Whitelist(_) => false,
                };
                return Some((
                    ignored,
                    GitPattern {
                        file: file.path.clone(),
                        line: line.number,
                        pattern: line.text.clone(),
                        at: at.to_string(),
                    },
                ));
            }
        }
        None
    }
}

fn depth(dir: &str) -> usize {
    if dir.is_empty() {
        0
    } else {
        dir.split('/').count()
    }
}

/// Compiles each pattern line of `text` (from `.gitignore` file `rel`) on
/// its own. Lines are split as git splits them (`\n`, a `\r` before it
/// dropped), a leading UTF-8 byte-order mark is dropped, comments and blank
/// lines compile to nothing and are skipped.
fn compile(rel: &str, text: &str) -> Result<Vec<Line>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        // `matched` is given paths relative to the file's directory, so the
        // matcher's root is "." (no prefix stripping).
        let mut builder = GitignoreBuilder::new(".");
        let cannot = |e: &dyn std::fmt::Display| {
            format!("{rel} line {}: cannot read {raw:?} as git does: {e}", i + 1)
        };
        builder
            .add_line(
                Some(rel.into()),
                &for_ignore_crate(raw).map_err(|e| cannot(&e))?,
            )
            .map_err(|e| cannot(&e))?;
        let matcher = builder.build().map_err(|e| cannot(&e))?;
        if !matcher.is_empty() {
            lines.push(Line {
                number: i + 1,
                text: trim_trailing_spaces(raw).to_string(),
                matcher,
            });
        }
    }
    Ok(lines)
}

/// `line` without its trailing spaces, unless escaped by a backslash (git's
/// `trim_trailing_spaces`).
fn trim_trailing_spaces(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1] == b' ' {
        let backslashes = bytes[..end - 1]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if backslashes % 2 == 1 {
            break;
        }
        end -= 1;
    }
    &line[..end]
}

/// `line` rewritten so that the `ignore` crate reads it as git does: every
/// `{` and `}` outside a bracket class escaped, since git's wildmatch has no
/// `{a,b}` alternation (a brace is a literal character) while the crate's
/// glob syntax does. Classes are copied as they are (`[` then an optional
/// `!`/`^`, a leading `]` taken literally, up to the next `]`); an unclosed
/// `[` is a literal, as in both readers.
///
/// # Errors
/// When a class holds a backslash: git reads it as an escape, the crate as
/// a literal character, and no rewrite here reproduces git for every class.
pub fn for_ignore_crate(line: &str) -> Result<String, String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                out.extend(&chars[i..(i + 2).min(chars.len())]);
                i += 2;
            }
            '[' => {
                let mut j = i + 1;
                if matches!(chars.get(j), Some('!' | '^')) {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j < chars.len() {
                    if chars[i..j].contains(&'\\') {
                        return Err(format!(
                            "the bracket class {:?} holds a backslash, an escape to git but a literal \
                             character to the `ignore` crate, so the harness cannot tell which files git \
                             keeps; write the class without a backslash",
                            chars[i..=j].iter().collect::<String>()
                        ));
                    }
                    out.extend(&chars[i..=j]);
                    i = j + 1;
                } else {
                    out.push('[');
                    i += 1;
                }
            }
            c @ ('{' | '}') => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// `(file, line, pattern)` of a verdict, as `git check-ignore -v -n`
    /// prints it (`("", 0, "")` when no line matches).
    fn as_git_prints(v: &GitVerdict) -> (String, usize, String) {
        match v {
            GitVerdict::Ignored { by } | GitVerdict::Kept { by: Some(by) } => {
                (by.file.clone(), by.line, by.pattern.clone())
            }
            GitVerdict::Kept { by: None } => (String::new(), 0, String::new()),
        }
    }

    /// A work tree holding `ignores` (`(path, text)` of `.gitignore` files)
    /// and an empty file at each of `paths`.
    fn tree(ignores: &[(&str, &str)], paths: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in ignores {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        for rel in paths {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
        }
        dir
    }

    fn rules(dir: &Path, ignores: &[(&str, &str)]) -> GitRules {
        GitRules::read(dir, ignores.iter().map(|(p, _)| *p)).unwrap()
    }

    /// `git check-ignore --no-index -v -n` on every path of `paths`, in a
    /// fresh repository at `dir` with no global or system configuration.
    fn git_check_ignore(dir: &Path, paths: &[&str]) -> Vec<(String, usize, String)> {
        let git = |args: &[&str], input: Option<&str>| {
            use std::io::Write;
            let mut child = Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .env_remove("GIT_INDEX_FILE")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("run git");
            let mut stdin = child.stdin.take().unwrap();
            stdin
                .write_all(input.unwrap_or_default().as_bytes())
                .unwrap();
            drop(stdin);
            let out = child.wait_with_output().unwrap();
            out.stdout
        };
        git(&["init", "-q", "."], None);
        let input: String = paths.iter().map(|p| format!("{p}\0")).collect();
        let out = git(
            &["check-ignore", "--no-index", "-v", "-n", "-z", "--stdin"],
            Some(&input),
        );
        let fields: Vec<String> = out
            .split(|b| *b == 0)
            .map(|f| String::from_utf8(f.to_vec()).unwrap())
            .collect();
        fields
            .chunks(4)
            .filter(|c| c.len() == 4)
            .map(|c| (c[0].clone(), c[1].parse().unwrap_or(0), c[2].clone()))
            .collect()
    }

    /// Compares every verdict with git's, listing the disagreements.
    fn assert_agrees_with_git(ignores: &[(&str, &str)], paths: &[&str]) {
        let dir = tree(ignores, paths);
        let r = rules(dir.path(), ignores);
        let git = git_check_ignore(dir.path(), paths);
        assert_eq!(git.len(), paths.len(), "git answered every path");
        let wrong: Vec<String> = paths
            .iter()
            .zip(&git)
            .filter(|(p, g)| as_git_prints(&r.verdict(p)) != **g)
            .map(|(p, g)| format!("{p}: git {g:?}, harness {:?}", r.verdict(p)))
            .collect();
        let ignored = git
            .iter()
            .filter(|g| !g.2.is_empty() && !g.2.starts_with('!'))
            .count();
        assert!(
            wrong.is_empty(),
            "{ignores:?}: {} disagreements with git:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
        assert!(
            ignored > 0 && ignored < paths.len(),
            "{ignores:?}: git ignores {ignored} of {} paths; a scenario should tell paths apart",
            paths.len()
        );
    }

    #[test]
    fn the_sdk_divergences_are_read_as_git_reads_them() {
        let ignores = [(
            ".gitignore",
            "/config\n*.log\n!keep.log\n/site\n/data/\nlib/\n",
        )];
        let dir = tree(&ignores, &[]);
        let r = rules(dir.path(), &ignores);
        // `/config` is the root entry `config` only, not every name starting so.
        assert_eq!(r.verdict("config_loader.py"), GitVerdict::Kept { by: None });
        assert!(!r.verdict("config").is_kept());
        // A negation re-includes, naming its line.
        let kept = r.verdict("keep.log");
        let GitVerdict::Kept { by: Some(by) } = kept else {
            panic!("{kept:?}")
        };
        assert_eq!((by.line, by.pattern.as_str()), (3, "!keep.log"));
        let ignored = r.verdict("debug.log");
        let GitVerdict::Ignored { by } = ignored else {
            panic!("{ignored:?}")
        };
        assert_eq!(
            (
                by.file.as_str(),
                by.line,
                by.pattern.as_str(),
                by.at.as_str()
            ),
            (".gitignore", 2, "*.log", "debug.log")
        );
        assert!(r.verdict("site_utils/a.py").is_kept());
        // `/data/` is the root directory `data`.
        let data = r.verdict("data/x.txt");
        let GitVerdict::Ignored { by } = data else {
            panic!("{data:?}")
        };
        assert_eq!((by.line, by.at.as_str()), (5, "data"));
        assert!(!r.verdict("a/lib/x.py").is_kept());
    }

    const PATHS: &[&str] = &[
        "config",
        "config_loader.py",
        "configs/x",
        "a.log",
        "keep.log",
        "x/keep.log",
        "site_utils/a.py",
        "site/b.py",
        "data/x.txt",
        "x/data/y",
        "lib/m.py",
        "a/lib/m.py",
        "library/m.py",
        "build/keep.txt",
        "build/other.txt",
        "a.{log,txt}",
        "note.txt",
        "docs/a.md",
        "docs/x/y/a.md",
        "docs/x/README.md",
        "src/gen/out.c",
        "a/b/c",
        "#hash",
        "!bang",
        "trail",
        "esc ",
        "a.cfg",
        "d.cfg",
        "ay.ini",
        "xy.ini",
        "m.c",
        "m.h",
        "xyz",
        "x/z",
        "nested/inner/f",
        "deep/nested/inner/f",
        "abxcd",
        "ab/cd",
        "sub/x.log",
        "sub/y.log",
        "sub/m.py",
        "sub/keep.py",
        "sub/k/keep.py",
        "sub/deep/keep.py",
        "sub/lib/z",
        "sub/library",
        "manifest.yaml",
        "pkg/__init__.py",
        "Makefile",
        "1a",
        "b.cfg",
    ];

    /// Each scenario is one set of `.gitignore` files; every scenario is
    /// judged on every path of [`PATHS`], by the harness and by git.
    #[test]
    fn verdicts_agree_with_git_check_ignore() {
        let scenarios: &[&[(&str, &str)]] = &[
            &[(
                ".gitignore",
                "# comment\n/config\n*.log\n!keep.log\n/site\n/data/\nlib/\nbuild/\n!build/keep.txt\n",
            )],
            &[(".gitignore", "*.{log,txt}\ndocs/**/*.md\n!docs/**/README.md\n**/gen\n/a/**\n")],
            &[(".gitignore", "\\#hash\n\\!bang\ntrail   \nesc\\ \n[abc].cfg\n[!x]y.ini\n*.[ch]\nx?z\n")],
            &[(".gitignore", "nested/inner/\nab**cd\nx/*\n!x/keep.log\n")],
            &[(".gitignore", "*\n!*/\n!*.py\n")],
            &[(".gitignore", "**\n!**/\n!*.*\n")],
            &[(".gitignore", "/*\n!/sub\n!/pkg/\n")],
            &[(".gitignore", "[[:digit:]]*\nsub/**/\n/**/lib\n*.CFG\n**a\na/**b\n")],
            &[
                (".gitignore", "*.log\nlib\n"),
                ("sub/.gitignore", "!x.log\n*.py\n!/keep.py\n!lib\n"),
                ("sub/deep/.gitignore", "*.py\n"),
                ("data/.gitignore", "!*\n"),
            ],
            &[
                (".gitignore", "build/\ndata\n"),
                ("build/.gitignore", "!keep.txt\n"),
                ("data/.gitignore", "!x.txt\n"),
            ],
        ];
        for ignores in scenarios {
            assert_agrees_with_git(ignores, PATHS);
        }
    }

    #[test]
    fn crlf_bom_and_nested_precedence_agree_with_git() {
        let ignores = [
            (".gitignore", "\u{feff}*.tmp\r\n!keep.tmp\r\nout/\r\n"),
            ("pkg/.gitignore", "!*.tmp\nkeep.tmp\n"),
            ("out/.gitignore", "!*\n"),
        ];
        let paths = [
            "a.tmp",
            "keep.tmp",
            "pkg/a.tmp",
            "pkg/keep.tmp",
            "pkg/sub/keep.tmp",
            "out/x",
            "pkg/out/x",
        ];
        assert_agrees_with_git(&ignores, &paths);
    }

    /// A committed `.gitignore` that is a symlink: git does not read it
    /// (`open` with O_NOFOLLOW), so every path it would match is kept.
    #[test]
    fn a_symlinked_gitignore_is_not_read_as_git_does_not() {
        let ignores = [("patterns.txt", "*.md\n"), ("sub/.gitignore", "*.py\n")];
        let paths = ["README.md", "sub/a.md", "sub/m.py", "a.py"];
        let dir = tree(&ignores, &paths);
        std::os::unix::fs::symlink("patterns.txt", dir.path().join(".gitignore")).unwrap();
        let r = GitRules::read(dir.path(), [".gitignore", "sub/.gitignore"]).unwrap();
        let git = git_check_ignore(dir.path(), &paths);
        let ours: Vec<_> = paths.iter().map(|p| as_git_prints(&r.verdict(p))).collect();
        assert_eq!(ours, git);
        assert!(r.verdict("README.md").is_kept());
        assert!(!r.verdict("sub/m.py").is_kept());
    }

    #[test]
    fn braces_are_literal_outside_classes() {
        let ok = |l: &str| for_ignore_crate(l).unwrap();
        assert_eq!(ok("*.{log,txt}"), "*.\\{log,txt\\}");
        assert_eq!(ok("[{]x}"), "[{]x\\}");
        assert_eq!(ok("[]{]{"), "[]{]\\{");
        assert_eq!(ok("\\{a"), "\\{a");
        assert_eq!(ok("[a{"), "[a\\{");
    }

    /// `[\]]x` is the name `]x` to git, a class of `\` then `]x` to the
    /// crate: the harness refuses to guess.
    #[test]
    fn a_backslash_in_a_class_is_refused_naming_file_and_line() {
        let ignores = [(".gitignore", "*.log\n[\\]]x\n")];
        let dir = tree(&ignores, &[]);
        let e = GitRules::read(dir.path(), [".gitignore"]).err().unwrap();
        assert!(e.starts_with(".gitignore line 2: cannot read"), "{e}");
        assert!(e.contains("holds a backslash"), "{e}");
    }

    #[test]
    fn an_unreadable_gitignore_is_an_error_naming_it() {
        let dir = tree(&[], &[]);
        std::fs::write(dir.path().join(".gitignore"), b"\xff\xfe*.log\n").unwrap();
        let e = GitRules::read(dir.path(), [".gitignore"]).err().unwrap();
        assert!(e.contains(".gitignore: not UTF-8"), "{e}");
    }
}
