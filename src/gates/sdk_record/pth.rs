//! `.pth` files as `site` reads them at every interpreter start (CPython
//! `Lib/site.py`, `addpackage`; documented in the `site` module reference):
//! a line starting with `#` is a comment, a blank line is skipped, a line
//! starting with `import` followed by a space or a tab is *executed*, and any
//! other line, right-stripped, is a directory joined to the site directory
//! and appended to `sys.path` when it exists. Reads text only; decides nothing.

use serde::Serialize;

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

#[cfg(test)]
mod tests {
    use super::*;

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
