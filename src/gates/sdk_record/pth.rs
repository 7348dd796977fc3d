//! `.pth` files as `site` reads them at every interpreter start (CPython
//! `Lib/site.py`, `addpackage`; documented in the `site` module reference):
//! a line starting with `#` is a comment, a blank line is skipped, a line
//! starting with `import` followed by a space or a tab is *executed*, and any
//! other line, right-stripped, is a directory joined to the site directory
//! and appended to `sys.path` when it exists. Reads text only; decides nothing.

use serde::Serialize;
use std::path::PathBuf;

/// What `site` does with one `.pth` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PthLineKind {
    /// Starts with `#`: skipped.
    Comment,
    /// Empty or whitespace only: skipped.
    Blank,
    /// Starts with `import ` or `import\t`: `exec()`uted by `site`.
    Executable,
    /// A directory (relative to the site directory, or absolute) appended
    /// to `sys.path` if it exists.
    Path,
}

/// One non-skipped line of a `.pth` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PthLine {
    /// 1-based line number.
    pub line: usize,
    /// Executable or path (comments and blank lines are not kept).
    pub kind: PthLineKind,
    /// The line, without its line ending.
    pub text: String,
}

/// The kind of one line, as `site.addpackage` tests it.
pub fn classify_line(line: &str) -> PthLineKind {
    if line.starts_with('#') {
        PthLineKind::Comment
    } else if line.trim().is_empty() {
        PthLineKind::Blank
    } else if line.starts_with("import ") || line.starts_with("import\t") {
        PthLineKind::Executable
    } else {
        PthLineKind::Path
    }
}

/// The executable and path lines of a `.pth` file's text (bytes read
/// lossily as UTF-8: `site` decodes with the locale's encoding, and a file
/// that is not UTF-8 is named all the same).
pub fn parse_pth(bytes: &[u8]) -> Vec<PthLine> {
    let text = String::from_utf8_lossy(bytes);
    text.split_inclusive('\n')
        .enumerate()
        .filter_map(|(index, raw)| {
            let kind = classify_line(raw);
            let text = raw.trim_end_matches(['\n', '\r']).to_string();
            matches!(kind, PthLineKind::Executable | PthLineKind::Path).then_some(PthLine {
                line: index + 1,
                kind,
                text,
            })
        })
        .collect()
}

/// The folders `site` appends to `sys.path` for `site_dirs` (CPython
/// `Lib/site.py`, `addsitedir` and `addpackage`), computed from the files
/// as data, nothing executed: each site directory in order, then, for each
/// of its `.pth` files in name order, each path line joined to the site
/// directory and normalised, when it exists and is not listed yet.
/// Executable lines are left out (`site` would run them; the
/// `environment-startup` check judges them). What a probe of the
/// environment is given instead of running `site` (`python -I -S`).
pub fn site_path(site_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut path: Vec<PathBuf> = Vec::new();
    let add = |p: PathBuf, path: &mut Vec<PathBuf>| {
        if !path.contains(&p) {
            path.push(p);
        }
    };
    for dir in site_dirs {
        let dir = crate::record::normalize_join(dir, ".");
        add(dir.clone(), &mut path);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".pth"))
            .collect();
        names.sort();
        for name in names {
            let bytes = std::fs::read(dir.join(&name)).unwrap_or_default();
            for line in parse_pth(&bytes) {
                if line.kind != PthLineKind::Path {
                    continue;
                }
                let entry = crate::record::normalize_join(&dir, line.text.trim_end());
                if entry.exists() {
                    add(entry, &mut path);
                }
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_site_path_holds_site_dirs_and_existing_path_lines_never_an_executed_line() {
        let top = tempfile::tempdir().unwrap();
        let site = top.path().join("site-packages");
        let extra = top.path().join("extra");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(&extra).unwrap();
        let marker = top.path().join("ran");
        std::fs::write(
            site.join("b.pth"),
            format!(
                "import os; open({:?}, 'w')\n../extra\n/no/such/dir\n",
                marker.display().to_string()
            ),
        )
        .unwrap();
        std::fs::write(site.join("a.pth"), "../extra\n").unwrap();
        let path = site_path(&[site.clone(), site.clone()]);
        assert_eq!(path, vec![site, extra]);
        assert!(!marker.exists());
    }

    #[test]
    fn lines_are_classified_as_site_addpackage_tests_them() {
        assert_eq!(classify_line("import os\n"), PthLineKind::Executable);
        assert_eq!(classify_line("import\tos"), PthLineKind::Executable);
        // `site` requires the space or tab: these are path lines.
        assert_eq!(classify_line("importlib\n"), PthLineKind::Path);
        assert_eq!(classify_line(" import os"), PthLineKind::Path);
        assert_eq!(classify_line("#import os"), PthLineKind::Comment);
        assert_eq!(classify_line("   \n"), PthLineKind::Blank);
        assert_eq!(classify_line("/opt/shadow\n"), PthLineKind::Path);
    }

    #[test]
    fn a_pth_keeps_its_executable_and_path_lines_with_numbers() {
        let lines = parse_pth(b"# comment\n\n/opt/shadow\r\nimport sys; sys.x = 1\nrel\n");
        assert_eq!(
            lines,
            vec![
                PthLine {
                    line: 3,
                    kind: PthLineKind::Path,
                    text: "/opt/shadow".into()
                },
                PthLine {
                    line: 4,
                    kind: PthLineKind::Executable,
                    text: "import sys; sys.x = 1".into()
                },
                PthLine {
                    line: 5,
                    kind: PthLineKind::Path,
                    text: "rel".into()
                },
            ]
        );
    }
}
