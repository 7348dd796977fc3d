//! Which files the official `lbp build` puts into an archive: a port of the
//! SDK's inclusion rules, quirks included.
//!
//! Source: `langbot_plugin/cli/commands/buildplugin.py` of
//! `langbot-plugin==0.6.0b5` (identical from 0.5.8 through 0.7.18):
//! `parse_gitignore` reads the plugin root's `.gitignore` only (stripped lines,
//! `#` comments dropped, no negation, no nested files); `should_ignore` matches
//! a relative path against those lines with string rules that differ from git
//! (`/site` also excludes `site_utils/`, `/data/` excludes nothing, `lib/`
//! excludes a `lib` folder at any depth); a fixed `always_exclude` set is
//! matched with `fnmatch` against base names; directories are pruned during
//! `os.walk` (top-down, symlinked directories never entered); `manifest.yaml`
//! is written first, re-serialised.
//!
//! Every function here mirrors one Python function and is unit-tested against
//! the genuine one (the tests call the interpreter in `$PYTHON`). Beyond the
//! SDK, [`first_match`], [`gitignore_drop`] and [`always_excluded`] say *which*
//! root `.gitignore` line or fixed exclusion leaves a given file out, so a
//! gate can name it.

use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;

/// Base-name patterns the build always excludes, files and directories
/// alike (`always_exclude` in `build_plugin_process`).
pub const ALWAYS_EXCLUDE: [&str; 9] = [
    ".git",
    "*.lbpkg",
    ".env",
    "__pycache__",
    ".pytest_cache",
    ".coverage",
    "*.pyc",
    "*.pyo",
    "*.pyd",
];

/// The member the build writes first from the parsed manifest, never from
/// the walk.
pub const MANIFEST: &str = "manifest.yaml";

/// Python's `str.isspace()`: Rust's `char::is_whitespace` plus the four
/// information separators U+001C..U+001F.
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// One pattern the SDK's `parse_gitignore` keeps, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatternLine {
    /// 1-based line number in the root `.gitignore`, counting lines as
    /// Python's text mode does (universal newlines: `\n`, `\r\n` and `\r`
    /// each end a line). Equal to git's (and an editor's) numbering when the
    /// file has no lone `\r`.
    pub line: usize,
    /// The stripped line, exactly as the SDK matches it.
    pub pattern: String,
}

impl AsRef<str> for PatternLine {
    fn as_ref(&self) -> &str {
        &self.pattern
    }
}

/// `parse_gitignore` on the text of a `.gitignore`, keeping line numbers:
/// universal newlines, each line `str.strip()`ped, empty lines and lines
/// starting with `#` dropped. Nothing else is interpreted (`!` and `\` are
/// literal).
pub fn parse_gitignore_lines(text: &str) -> Vec<PatternLine> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    text.split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_matches(py_isspace)))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(line, pattern)| PatternLine {
            line,
            pattern: pattern.to_string(),
        })
        .collect()
}

/// `parse_gitignore` on the text of a `.gitignore`: the patterns of
/// [`parse_gitignore_lines`] without their line numbers.
pub fn parse_gitignore_text(text: &str) -> Vec<String> {
    parse_gitignore_lines(text)
        .into_iter()
        .map(|p| p.pattern)
        .collect()
}

/// `parse_gitignore(".gitignore")` run in `root`, with line numbers: no
/// file, no patterns.
///
/// # Errors
/// When `.gitignore` exists but the build could not read it (a directory,
/// unreadable, or not UTF-8: the build then stops with a traceback).
pub fn read_gitignore(root: &Path) -> Result<Vec<PatternLine>, String> {
    let path = root.join(".gitignore");
    // `os.path.exists` follows symlinks: a dangling link counts as absent.
    if std::fs::metadata(&path).is_err() {
        return Ok(Vec::new());
    }
    let bytes = std::fs::read(&path).map_err(|e| {
        format!(
            "{}: the build opens this file and would fail: {e}; make it a readable file",
            path.display()
        )
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{}: not UTF-8 ({e}); the build reads it as UTF-8 and would fail",
            path.display()
        )
    })?;
    Ok(parse_gitignore_lines(&text))
}

/// `str(pathlib.PurePosixPath(path))`: repeated slashes collapsed, `.`
/// components dropped, trailing slash removed, `//` kept as a root.
fn pure_posix(path: &str) -> String {
    let root = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let s = format!("{root}{}", parts.join("/"));
    if s.is_empty() {
        ".".into()
    } else {
        s
    }
}

/// `should_ignore(path, patterns)` of the SDK, rule for rule.
///
/// `path` is relative to the plugin root, `/`-separated. For each pattern:
/// a trailing `/` means "a path component equal to the rest" (a leading `/`
/// then never matches); a leading `/` means "the path starts with the rest"
/// as a string; a pattern with `*` or `?` is matched with `fnmatch` against
/// the whole path and its base name; anything else matches the whole path,
/// a path suffix after `/`, or a component.
pub fn should_ignore<P: AsRef<str>>(path: &str, patterns: &[P]) -> bool {
    first_match(path, patterns).is_some()
}

/// The pattern that makes [`should_ignore`] true for `path`: the first, in
/// file order, since the SDK returns on the first match (`!` lines are
/// literal names, never exceptions, so no later line can undo it).
pub fn first_match<'a, P: AsRef<str>>(path: &str, patterns: &'a [P]) -> Option<&'a P> {
    let normalized = pure_posix(path);
    let parts: Vec<&str> = normalized.split('/').collect();
    let basename = path.rsplit('/').next().unwrap_or(path);
    patterns
        .iter()
        .find(|p| pattern_matches(p.as_ref(), &normalized, &parts, basename))
}

/// One iteration of `should_ignore`'s loop.
fn pattern_matches(pattern: &str, normalized: &str, parts: &[&str], basename: &str) -> bool {
    if pattern.is_empty() {
        false
    } else if let Some(dir_pattern) = pattern.strip_suffix('/') {
        normalized.ends_with(&format!("/{dir_pattern}"))
            || normalized == dir_pattern
            || parts.contains(&dir_pattern)
    } else if let Some(root_pattern) = pattern.strip_prefix('/') {
        normalized.starts_with(root_pattern)
    } else if pattern.contains('*') || pattern.contains('?') {
        fnmatch(normalized, pattern) || fnmatch(basename, pattern)
    } else {
        normalized.ends_with(&format!("/{pattern}"))
            || normalized == pattern
            || parts.contains(&pattern)
    }
}

/// Why the build leaves a file out, as far as its rules go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum BuildDrop {
    /// A path component's base name matches a pattern of [`ALWAYS_EXCLUDE`];
    /// `at` is the path up to that component (the file or a directory).
    AlwaysExcluded {
        /// The file itself or the pruned directory, relative to the plugin root.
        at: String,
        /// The [`ALWAYS_EXCLUDE`] pattern.
        pattern: &'static str,
    },
    /// A root `.gitignore` line made `should_ignore` true for `at`.
    Gitignore {
        /// The file itself or the pruned directory, relative to the plugin root.
        at: String,
        /// 1-based line number in the root `.gitignore`.
        line: usize,
        /// The line as the SDK matched it.
        pattern: String,
    },
}

/// The [`ALWAYS_EXCLUDE`] pattern that leaves `rel` (a `/`-separated path
/// relative to the plugin root) out: the first path component, top down,
/// whose base name matches one. The build prunes such directories and skips
/// such files whatever `.gitignore` says.
pub fn always_excluded(rel: &str) -> Option<BuildDrop> {
    let mut at = String::new();
    for component in rel.split('/') {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(component);
        if let Some(pattern) = ALWAYS_EXCLUDE.iter().find(|p| fnmatch(component, p)) {
            return Some(BuildDrop::AlwaysExcluded { at, pattern });
        }
    }
    None
}

/// The root `.gitignore` line that leaves `rel` out, replaying the build's
/// walk: each ancestor directory top down (a match prunes it and everything
/// below), then the file itself; the first pattern in file order that
/// matches at the first level that matches. `None`: the build's `.gitignore`
/// reading keeps the file.
pub fn gitignore_drop(rel: &str, patterns: &[PatternLine]) -> Option<BuildDrop> {
    let mut at = String::new();
    for component in rel.split('/') {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(component);
        if let Some(p) = first_match(&at, patterns) {
            return Some(BuildDrop::Gitignore {
                at,
                line: p.line,
                pattern: p.pattern.clone(),
            });
        }
    }
    None
}

/// Why the build leaves committed file `rel` out, or `None` when its rules
/// keep it: a fixed exclusion anywhere on the path first (it applies
/// whatever `.gitignore` says), else the root `.gitignore` line
/// ([`gitignore_drop`]). The root `manifest.yaml` is never left out: the
/// build writes it from the parsed manifest.
pub fn build_drop(rel: &str, patterns: &[PatternLine]) -> Option<BuildDrop> {
    if rel == MANIFEST {
        return None;
    }
    always_excluded(rel).or_else(|| gitignore_drop(rel, patterns))
}

/// One element of a translated `fnmatch` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters, `/` and newlines included.
    Star,
    /// `?`, or the class `[!]`: any one character.
    Any,
    /// One literal character.
    Literal(char),
    /// A bracket class.
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
    /// An empty class: matches nothing.
    Never,
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Token::Star => true,
            Token::Any => true,
            Token::Literal(l) => *l == c,
            Token::Class { negated, items } => {
                items.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
            }
            Token::Never => false,
        }
    }
}

/// `fnmatch.fnmatch(name, pattern)` on POSIX (case-sensitive), as Python
/// 3.11's `fnmatch.translate` defines it: `*` matches any run including `/`,
/// `?` one character, `[...]` a class (`[!...]` negated, `]` first is
/// literal, an unclosed `[` is literal, reversed ranges are dropped), no
/// escaping.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let tokens = translate(pattern);
    let name: Vec<char> = name.chars().collect();
    // Classic star backtracking; every non-star token consumes exactly one
    // character, so the leftmost match of each fixed piece is optimal, which
    // is what translate's atomic groups `(?>.*?fixed)` compute.
    let (mut t, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while s < name.len() {
        match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t, s));
                t += 1;
            }
            Some(tok) if tok.matches(name[s]) => {
                t += 1;
                s += 1;
            }
            _ => match star {
                Some((st, ss)) => {
                    t = st + 1;
                    s = ss + 1;
                    star = Some((st, ss + 1));
                }
                None => return false,
            },
        }
    }
    tokens[t..].iter().all(|tok| *tok == Token::Star)
}

/// Python 3.11 `fnmatch.translate`, producing tokens instead of a regular
/// expression. The bracket handling follows the Python code step by step
/// (chunks split at `-`, empty ranges removed, escaping, `!`/`^` handling),
/// then reads the resulting class body the way `re` would.
fn translate(pattern: &str) -> Vec<Token> {
    let pat: Vec<char> = pattern.chars().collect();
    let n = pat.len();
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0usize;
    while i < n {
        let c = pat[i];
        i += 1;
        match c {
            '*' => {
                if out.last() != Some(&Token::Star) {
                    out.push(Token::Star);
                }
            }
            '?' => out.push(Token::Any),
            '[' => {
                let mut j = i;
                if j < n && pat[j] == '!' {
                    j += 1;
                }
                if j < n && pat[j] == ']' {
                    j += 1;
                }
                while j < n && pat[j] != ']' {
                    j += 1;
                }
                if j >= n {
                    out.push(Token::Literal('['));
                    continue;
                }
                let stuff = class_stuff(&pat, i, j);
                i = j + 1;
                out.push(class_token(&stuff));
            }
            other => out.push(Token::Literal(other)),
        }
    }
    out
}

/// The regular-expression class body `translate` builds for `pat[i..j]`
/// (before the `!`/`^` handling), as characters.
fn class_stuff(pat: &[char], start: usize, j: usize) -> Vec<char> {
    let raw = &pat[start..j];
    let escape = |s: &[char], hyphens: bool| -> Vec<char> {
        let mut o = Vec::new();
        for &ch in s {
            if ch == '\\' || (hyphens && ch == '-') {
                o.push('\\');
            }
            o.push(ch);
        }
        o
    };
    let stuff: Vec<char> = if !raw.contains(&'-') {
        escape(raw, false)
    } else {
        let mut i = start;
        let mut chunks: Vec<Vec<char>> = Vec::new();
        let mut k = if pat[i] == '!' { i + 2 } else { i + 1 };
        loop {
            // pat.find('-', k, j)
            let found = if k < j {
                pat[k..j].iter().position(|&c| c == '-').map(|p| p + k)
            } else {
                None
            };
            let Some(h) = found else { break };
            chunks.push(pat[i..h].to_vec());
            i = h + 1;
            k = h + 3;
        }
        let chunk = pat[i..j].to_vec();
        if !chunk.is_empty() {
            chunks.push(chunk);
        } else if let Some(last) = chunks.last_mut() {
            last.push('-');
        }
        // Remove empty ranges (invalid in a regular expression).
        for k in (1..chunks.len()).rev() {
            let (Some(&a), Some(&b)) = (chunks[k - 1].last(), chunks[k].first()) else {
                // Python would raise IndexError here; translate's chunking
                // never produces an empty chunk at this position.
                continue;
            };
            if a > b {
                let mut merged = chunks[k - 1][..chunks[k - 1].len() - 1].to_vec();
                merged.extend_from_slice(&chunks[k][1..]);
                chunks[k - 1] = merged;
                chunks.remove(k);
            }
        }
        let mut joined = Vec::new();
        for (idx, chunk) in chunks.iter().enumerate() {
            if idx > 0 {
                joined.push('-');
            }
            joined.extend(escape(chunk, true));
        }
        joined
    };
    // Escape set operations (&&, ~~ and ||).
    let mut escaped = Vec::with_capacity(stuff.len());
    for ch in stuff {
        if matches!(ch, '&' | '~' | '|') {
            escaped.push('\\');
        }
        escaped.push(ch);
    }
    escaped
}

/// The token for class body `stuff`, as `translate` finishes it and `re`
/// reads it.
fn class_token(stuff: &[char]) -> Token {
    if stuff.is_empty() {
        return Token::Never;
    }
    if stuff == ['!'] {
        return Token::Any;
    }
    let (negated, body): (bool, Vec<char>) = if stuff[0] == '!' {
        (true, stuff[1..].to_vec())
    } else if stuff[0] == '^' || stuff[0] == '[' {
        let mut b = vec!['\\'];
        b.extend_from_slice(stuff);
        (false, b)
    } else {
        (false, stuff.to_vec())
    };
    // Read the body like `re`: an atom is `\x` (literal x) or one character;
    // an unescaped `-` between two atoms makes a range.
    let mut items = Vec::new();
    let mut p = 0usize;
    let atom = |p: &mut usize| -> Option<char> {
        let c = *body.get(*p)?;
        if c == '\\' {
            let e = *body.get(*p + 1)?;
            *p += 2;
            Some(e)
        } else {
            *p += 1;
            Some(c)
        }
    };
    while p < body.len() {
        let Some(lo) = atom(&mut p) else { break };
        if body.get(p) == Some(&'-') && p + 1 < body.len() {
            p += 1;
            let Some(hi) = atom(&mut p) else { break };
            items.push((lo, hi));
        } else {
            items.push((lo, lo));
        }
    }
    Token::Class { negated, items }
}

/// The member names `lbp build` run in `root` would write: `manifest.yaml`
/// plus every file the walk keeps, as `/`-separated relative paths.
///
/// Mirrors `build_plugin_process`: top-down walk; a directory is pruned when
/// `should_ignore(relpath)` or its base name matches [`ALWAYS_EXCLUDE`];
/// symlinked directories are listed but never entered; a file is skipped when
/// it is the root `manifest.yaml`, `should_ignore(relpath)`, or its base name
/// matches [`ALWAYS_EXCLUDE`]; a file the build cannot open (a dangling
/// symlink) is skipped by the build's own error handler. File symlinks are
/// followed by the build (the `stage` gate refuses them earlier).
///
/// # Errors
/// When the tree cannot be read, `.gitignore` cannot be read as the build
/// does, or a name is not UTF-8.
pub fn expected_members(root: &Path) -> Result<BTreeSet<String>, String> {
    let patterns = read_gitignore(root)?;
    let mut out = BTreeSet::new();
    out.insert(MANIFEST.to_string());
    walk(root, "", &patterns, &mut out)?;
    Ok(out)
}

fn excluded_name(name: &str) -> bool {
    ALWAYS_EXCLUDE.iter().any(|p| fnmatch(name, p))
}

fn walk(
    dir: &Path,
    rel: &str,
    patterns: &[PatternLine],
    out: &mut BTreeSet<String>,
) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot list: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: cannot list: {e}", dir.display()))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| format!("{}: file name {n:?} is not UTF-8", dir.display()))?;
        let path = entry.path();
        let relative = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        // os.walk's is_dir() follows symlinks.
        let followed = std::fs::metadata(&path);
        let is_dir = followed.as_ref().map(|m| m.is_dir()).unwrap_or(false);
        if is_dir {
            if should_ignore(&relative, patterns) || excluded_name(&name) {
                continue;
            }
            let is_link = std::fs::symlink_metadata(&path)
                .map(|m| m.file_type().is_symlink())
                .unwrap_or(false);
            if !is_link {
                walk(&path, &relative, patterns, out)?;
            }
            continue;
        }
        if relative == MANIFEST || should_ignore(&relative, patterns) || excluded_name(&name) {
            continue;
        }
        // `zipf.write` stats and opens the file; a failure is printed and
        // the file left out.
        if followed.is_ok() && std::fs::File::open(&path).is_ok() {
            out.insert(relative);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn python() -> std::path::PathBuf {
        match std::env::var_os("PYTHON") {
            Some(p) if !p.is_empty() => p.into(),
            _ => panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
        }
    }

    /// Runs `script` in the genuine interpreter with `input` as JSON on stdin
    /// and parses its stdout as JSON.
    fn py_json(script: &str, input: &serde_json::Value, cwd: &Path) -> serde_json::Value {
        use std::io::Write;
        let mut child = Command::new(python())
            .args(["-I", "-B", "-c", script])
            .current_dir(cwd)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the interpreter in $PYTHON");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "python failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("python printed JSON")
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn documented_quirks_hold_in_the_port() {
        // SDK-FACTS.md: `/site` also excludes `site_utils/`.
        assert!(should_ignore("site_utils", &strings(&["/site"])));
        assert!(should_ignore("site_utils/x.py", &strings(&["/site"])));
        // `/data/` does not exclude `data/`.
        assert!(!should_ignore("data", &strings(&["/data/"])));
        assert!(!should_ignore("data/x", &strings(&["/data/"])));
        // `lib/` matches at any depth.
        assert!(should_ignore("a/b/lib", &strings(&["lib/"])));
        // No negation: `!keep.py` is a literal name.
        assert!(should_ignore("keep.py", &strings(&["*.py", "!keep.py"])));
        assert!(should_ignore("!keep.py", &strings(&["!keep.py"])));
        // `*` crosses `/`.
        assert!(fnmatch("a/b/c.txt", "a*.txt"));
    }

    fn lines(text: &str) -> Vec<PatternLine> {
        parse_gitignore_lines(text)
    }

    #[test]
    fn pattern_lines_keep_python_line_numbers() {
        // `\r` alone ends a line in Python's text mode: `b` is line 3.
        let got = lines("# c\n/config\r\n\r  b  \n\n*.log\n");
        let want: Vec<(usize, &str)> = vec![(2, "/config"), (4, "b"), (6, "*.log")];
        let got: Vec<(usize, &str)> = got.iter().map(|p| (p.line, p.pattern.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_first_matching_line_is_named() {
        let p = lines("*.py\n/config\n*.log\n!keep.log\n");
        assert_eq!(first_match("config_loader.py", &p).map(|p| p.line), Some(1));
        assert_eq!(first_match("configs", &p).map(|p| p.line), Some(2));
        // The negation is a literal name to the SDK; `*.log` already matched.
        assert_eq!(first_match("keep.log", &p).map(|p| p.line), Some(3));
        assert_eq!(first_match("README.md", &p), None);
    }

    #[test]
    fn a_drop_names_the_pruned_directory_or_the_file() {
        let p = lines("/config\nlib/\n*.log\n");
        assert_eq!(
            build_drop("config_loader.py", &p),
            Some(BuildDrop::Gitignore {
                at: "config_loader.py".into(),
                line: 1,
                pattern: "/config".into()
            })
        );
        // `configuration/` is pruned by `/config`: the drop names the directory.
        assert_eq!(
            build_drop("configuration/a.py", &p),
            Some(BuildDrop::Gitignore {
                at: "configuration".into(),
                line: 1,
                pattern: "/config".into()
            })
        );
        assert_eq!(
            build_drop("pkg/lib/a.py", &p),
            Some(BuildDrop::Gitignore {
                at: "pkg/lib".into(),
                line: 2,
                pattern: "lib/".into()
            })
        );
        assert_eq!(build_drop("pkg/a.py", &p), None);
        // The manifest is written from the parsed manifest whatever `.gitignore` says.
        assert_eq!(build_drop(MANIFEST, &lines("*.yaml\n")), None);
    }

    #[test]
    fn fixed_exclusions_come_before_gitignore_lines() {
        let p = lines("pkg/\n");
        assert_eq!(
            build_drop("pkg/__pycache__/m.pyc", &p),
            Some(BuildDrop::AlwaysExcluded {
                at: "pkg/__pycache__".into(),
                pattern: "__pycache__"
            })
        );
        assert_eq!(
            always_excluded("a/.env"),
            Some(BuildDrop::AlwaysExcluded {
                at: "a/.env".into(),
                pattern: ".env"
            })
        );
        assert_eq!(always_excluded(".env.example"), None);
        assert!(always_excluded("old.lbpkg").is_some());
    }

    #[test]
    fn gitignore_lines_are_stripped_like_python() {
        // An indented `#` line is a comment too: the line is stripped first.
        let text = "  *.log \r\n# comment\n\n\x1c/build/\x1f\r!keep\n  # indented comment \n";
        assert_eq!(parse_gitignore_text(text), ["*.log", "/build/", "!keep"]);
    }

    const PATTERNS: &[&str] = &[
        "*",
        "?",
        "*.py",
        "a*",
        "*a",
        "a*b*c",
        "[abc]",
        "[!abc]",
        "[]]",
        "[!]]",
        "[]a]",
        "[a-c]",
        "[c-a]",
        "[a-]",
        "[-a]",
        "[!-a]",
        "[a-c-e]",
        "[b-a-z]",
        "[a-cb-a]",
        "[\\]",
        "[\\-x]",
        "[&~|]",
        "[^a]",
        "[[]",
        "[!]",
        "[",
        "a[",
        "a[b",
        "[!a-c]x",
        "*[0-9]*",
        "**",
        "a?c",
        "?*?",
        "*/*",
        "[z-a]",
        "[a--]",
        "[--/]",
        "[!--0]",
        "x[y-]",
        ".*",
        "*.*",
        "[.]*",
        "[*]",
        "[?]",
        "a\\b",
        "[a-a]",
        "[ab-cd-ef]",
        "[!a-b-c]",
        "é*",
        "[à-ÿ]",
    ];
    const NAMES: &[&str] = &[
        "",
        "a",
        "b",
        "c",
        "x",
        "]",
        "-",
        "!",
        "^",
        "[",
        "\\",
        "&",
        "ab",
        "abc",
        "aXbYc",
        "a/b",
        "a/b/c",
        "x.py",
        "a.b",
        ".hidden",
        "0",
        "a1b",
        "z",
        "a\nb",
        "a-",
        "/",
        ".",
        "é",
        "ü",
        "a[",
        "a[b",
        "*",
        "?",
        "abc/def.py",
        "e",
        "d",
    ];

    #[test]
    fn fnmatch_agrees_with_python_on_every_pattern_and_name() {
        let cases: Vec<(String, String)> = PATTERNS
            .iter()
            .flat_map(|p| NAMES.iter().map(move |n| (n.to_string(), p.to_string())))
            .collect();
        let script = "import sys, json, fnmatch\n\
                      cases = json.load(sys.stdin)\n\
                      print(json.dumps([fnmatch.fnmatch(n, p) for n, p in cases]))";
        let dir = tempfile::tempdir().unwrap();
        let expected = py_json(script, &serde_json::json!(cases), dir.path());
        let mut wrong = Vec::new();
        for ((name, pat), want) in cases.iter().zip(expected.as_array().unwrap()) {
            if fnmatch(name, pat) != want.as_bool().unwrap() {
                wrong.push(format!("fnmatch({name:?}, {pat:?}) python={want}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} disagreements:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    /// Thousands of generated patterns over the characters that matter to
    /// `translate` (a fixed-seed generator, so failures reproduce).
    #[test]
    fn fnmatch_agrees_with_python_on_generated_patterns() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let pat_chars = [
            'a', 'b', 'c', '-', '!', ']', '[', '*', '?', '\\', '^', '/', 'z',
        ];
        let name_chars = ['a', 'b', 'c', '-', '!', ']', '[', '\\', '^', '/', 'z', 'y'];
        let mut cases = Vec::new();
        for _ in 0..4000 {
            let pl = next(8);
            let pat: String = (0..pl).map(|_| pat_chars[next(pat_chars.len())]).collect();
            let nl = next(6);
            let name: String = (0..nl)
                .map(|_| name_chars[next(name_chars.len())])
                .collect();
            cases.push((name, pat));
        }
        let script = "import sys, json, fnmatch\n\
                      cases = json.load(sys.stdin)\n\
                      print(json.dumps([fnmatch.fnmatch(n, p) for n, p in cases]))";
        let dir = tempfile::tempdir().unwrap();
        let expected = py_json(script, &serde_json::json!(cases), dir.path());
        let wrong: Vec<String> = cases
            .iter()
            .zip(expected.as_array().unwrap())
            .filter(|((n, p), want)| fnmatch(n, p) != want.as_bool().unwrap())
            .map(|((n, p), want)| format!("fnmatch({n:?}, {p:?}) python={want}"))
            .collect();
        assert!(
            wrong.is_empty(),
            "{} disagreements:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn should_ignore_agrees_with_the_sdk_function() {
        let pattern_sets: Vec<Vec<&str>> = vec![
            vec!["/site"],
            vec!["/data/"],
            vec!["lib/"],
            vec!["data/"],
            vec!["*.log"],
            vec!["a/*"],
            vec!["a/b"],
            vec!["a/b/"],
            vec!["!foo"],
            vec!["foo"],
            vec!["/"],
            vec!["//x"],
            vec!["/*.py"],
            vec!["[ab]b"],
            vec!["?[ab]"],
            vec!["build"],
            vec!["docs/*.md"],
            vec!["*.md/"],
            vec!["tests"],
            vec!["pkg/sub"],
            vec![".venv", "node_modules/"],
            vec!["*"],
            vec!["\\#x"],
        ];
        let paths = [
            "site",
            "site_utils",
            "site_utils/x.py",
            "website",
            "data",
            "data/x",
            "a/data",
            "lib",
            "a/lib",
            "a/lib/x.py",
            "library",
            "x.log",
            "a/x.log",
            "a/b",
            "a/b/c",
            "x/a/b",
            "a",
            "foo",
            "!foo",
            "x/foo",
            "foo/x",
            "x.py",
            "a/x.py",
            "ab",
            "bb",
            "build",
            "build/out",
            "src/build",
            "builds",
            "docs/a.md",
            "docs/x/a.md",
            "readme.md",
            "tests",
            "tests/test_x.py",
            "a/tests",
            "pkg/sub",
            "pkg/sub/x",
            "x/pkg/sub",
            ".venv",
            ".venv/lib",
            "node_modules",
            "a/node_modules/b",
            "./a/b",
            "a//b",
            "#x",
            "\\#x",
        ];
        let cases: Vec<(String, Vec<String>)> = pattern_sets
            .iter()
            .flat_map(|set| paths.iter().map(move |p| (p.to_string(), strings(set))))
            .collect();
        let script = "import sys, json\n\
                      from langbot_plugin.cli.commands.buildplugin import should_ignore\n\
                      cases = json.load(sys.stdin)\n\
                      print(json.dumps([should_ignore(p, pats) for p, pats in cases]))";
        let dir = tempfile::tempdir().unwrap();
        let expected = py_json(script, &serde_json::json!(cases), dir.path());
        let mut wrong = Vec::new();
        for ((path, pats), want) in cases.iter().zip(expected.as_array().unwrap()) {
            if should_ignore(path, pats) != want.as_bool().unwrap() {
                wrong.push(format!("should_ignore({path:?}, {pats:?}) sdk={want}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} disagreements:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn parse_gitignore_agrees_with_the_sdk_function() {
        let dir = tempfile::tempdir().unwrap();
        let text = "  *.log \r\n# c\n\n\x1c/build/\x1f\r!keep\n\u{3000}x\u{3000}\n\u{feff}bom\n\t\x0b\x0cy\n";
        std::fs::write(dir.path().join(".gitignore"), text).unwrap();
        let script = "import json\n\
                      from langbot_plugin.cli.commands.buildplugin import parse_gitignore\n\
                      print(json.dumps(parse_gitignore('.gitignore')))";
        let expected = py_json(script, &serde_json::json!(null), dir.path());
        let expected: Vec<String> = serde_json::from_value(expected).unwrap();
        let patterns: Vec<String> = read_gitignore(dir.path())
            .unwrap()
            .into_iter()
            .map(|p| p.pattern)
            .collect();
        assert_eq!(patterns, expected);
        // Line numbers as Python's text-mode iteration counts lines.
        let numbered = py_json(
            "import json\n\
             rows = [(i + 1, l.strip()) for i, l in enumerate(open('.gitignore', encoding='utf-8'))]\n\
             print(json.dumps([r for r in rows if r[1] and not r[1].startswith('#')]))",
            &serde_json::json!(null),
            dir.path(),
        );
        let numbered: Vec<(usize, String)> = serde_json::from_value(numbered).unwrap();
        let ours: Vec<(usize, String)> = read_gitignore(dir.path())
            .unwrap()
            .into_iter()
            .map(|p| (p.line, p.pattern))
            .collect();
        assert_eq!(ours, numbered);
    }

    /// Builds a plugin whose tree exercises every rule with the genuine
    /// `lbp build` and compares the archive's member names with the port.
    #[test]
    fn expected_members_equal_the_genuine_build_output() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("plugin");
        let files = [
            "manifest.yaml",
            "main.py",
            ".gitignore",
            ".env",
            ".env.example",
            "x.pyc",
            "pkg/__init__.py",
            "pkg/__pycache__/m.cpython-311.pyc",
            "pkg/old.lbpkg",
            "site_utils/a.py",
            "site/b.py",
            "data/keep.txt",
            "a/lib/x.py",
            "library/y.py",
            "logs/app.log",
            "notes.log",
            "deep/er/tests/t.py",
            "tests/t.py",
            ".git/HEAD",
            ".pytest_cache/v",
            "nested/manifest.yaml",
            "nested/.gitignore",
            "nested/ignored-by-nested-only.txt",
            "keep.py",
            "!keep.py",
            "dir.pyc/inner.txt",
            "build",
        ];
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("content of {f}\n")).unwrap();
        }
        std::fs::create_dir_all(root.join("empty/dir")).unwrap();
        std::fs::write(
            root.join("manifest.yaml"),
            "apiVersion: v1\nkind: Plugin\nmetadata:\n  author: acme\n  name: rules\n  version: '0.1.0'\n  label:\n    en_US: Rules\nspec:\n  components: {}\nexecution:\n  python:\n    path: main.py\n    attr: P\n",
        )
        .unwrap();
        std::fs::write(
            root.join(".gitignore"),
            "# rules\n/site\n/data/\nlib/\n*.log\ntests\n!keep.py\n/build\n",
        )
        .unwrap();
        std::fs::write(
            root.join("nested/.gitignore"),
            "ignored-by-nested-only.txt\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(root.join("pkg"), root.join("pkg-link")).unwrap();
        std::os::unix::fs::symlink(root.join("missing"), root.join("dangling")).unwrap();

        let out = dir.path().join("out");
        let status = Command::new(python())
            .args(["-I", "-B", "-m", "langbot_plugin.cli", "build", "-o"])
            .arg(&out)
            .current_dir(&root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("LANG", "C.UTF-8")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let archive = out.join("acme-rules-0.1.0.lbpkg");
        let names = py_json(
            "import sys, json, zipfile\nprint(json.dumps(zipfile.ZipFile(json.load(sys.stdin)).namelist()))",
            &serde_json::json!(archive.display().to_string()),
            dir.path(),
        );
        let names: Vec<String> = serde_json::from_value(names).unwrap();
        assert_eq!(
            names[0], "manifest.yaml",
            "the build writes the manifest first"
        );
        let built: BTreeSet<String> = names.into_iter().collect();
        let predicted = expected_members(&root).unwrap();
        assert_eq!(predicted, built);
        // Spot checks of what the port predicts, so the test says which rule held.
        assert!(!built.contains("site_utils/a.py") && !built.contains("site/b.py"));
        assert!(built.contains("data/keep.txt"));
        assert!(!built.contains("a/lib/x.py") && built.contains("library/y.py"));
        assert!(built.contains("nested/ignored-by-nested-only.txt"));
        assert!(built.contains("nested/manifest.yaml"));
        assert!(built.contains("keep.py") && !built.contains("!keep.py"));
        assert!(!built.iter().any(|n| n.starts_with("pkg-link")) && !built.contains("dangling"));
    }
}
