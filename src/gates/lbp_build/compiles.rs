//! The `python-compiles` check of `lbp-build`: every `.py` file packaged in
//! each built archive compiles with the verified interpreter (`compile()`,
//! nothing executed, no bytecode written; `src/python/compile_probe.py`), so
//! a syntax error is named with its file and line right after the build,
//! not eight gates later when the runtime fails to load the plugin.
//!
//! One interpreter start for all files of all candidates. A candidate
//! without a moved archive gets no check (its build checks say why).

use super::CandidateBuild;
use crate::context::RunContext;
use crate::evidence::Check;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// What `compile_probe.py` prints.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct CompileReport {
    /// `.py` members compiled (or attempted), per candidate folder.
    pub files: BTreeMap<String, u64>,
    /// Every file that does not compile.
    pub errors: Vec<CompileError>,
    /// Archives the probe could not read as ZIP files.
    pub unreadable: Vec<Unreadable>,
}

/// One file that does not compile.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct CompileError {
    /// Candidate folder.
    pub candidate: String,
    /// Member path inside the archive.
    pub path: String,
    /// 1-based line of the error, when the compiler gives one.
    pub line: Option<u64>,
    /// `SyntaxError: invalid syntax` and the like.
    pub error: String,
}

/// An archive the probe could not open.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// Candidate folder.
    pub candidate: String,
    /// Archive path.
    pub archive: String,
    /// Why.
    pub error: String,
}

/// Runs the probe over every candidate's moved archive: `Ok(None)` when no
/// candidate has one.
///
/// # Errors
/// The probe's failure (it did not answer), as a sentence.
pub(crate) fn observe(
    ctx: &RunContext,
    builds: &[CandidateBuild],
) -> Result<Option<CompileReport>, String> {
    let mut args = Vec::new();
    for b in builds {
        if let Some(Ok(moved)) = &b.moved {
            args.push(b.folder.clone());
            args.push(ctx.evidence_dir.join(&moved.path).display().to_string());
        }
    }
    if args.is_empty() {
        return Ok(None);
    }
    let (home, tmp) = ctx
        .private_roots(super::GATE, "compile")
        .map_err(|e| format!("cannot create private roots for the compile probe: {e}"))?;
    crate::python::Probe {
        python: &ctx.python,
        name: "compile_probe",
        source: crate::python::COMPILE_PROBE,
        args: &args,
        cwd: &home,
        env: ctx.child_env(&home, &tmp),
        log_stem: &ctx.log_stem(super::GATE, "compile-probe"),
        timeout: crate::python::PROBE_TIMEOUT,
    }
    .run()
    .map(Some)
}

/// The `python-compiles` check of candidate `b` from `report` (or the
/// probe's failure). `None` when `b` has no moved archive.
pub(crate) fn decide(
    b: &CandidateBuild,
    report: &Result<Option<CompileReport>, String>,
) -> Option<Check> {
    let Some(Ok(moved)) = &b.moved else {
        return None;
    };
    let folder = Some(b.folder.as_str());
    let report = match report {
        Ok(Some(r)) => r,
        Ok(None) => return None,
        Err(e) => {
            return Some(
                Check::fail(
                    "python-compiles",
                    folder,
                    format!("not observed: the compile probe did not answer: {e}"),
                )
                .with_observed(json!({ "archive": moved.path, "error": e })),
            )
        }
    };
    if let Some(u) = report.unreadable.iter().find(|u| u.candidate == b.folder) {
        return Some(
            Check::fail(
                "python-compiles",
                folder,
                format!(
                    "{}: expected a ZIP archive the interpreter can read, found {}",
                    moved.path, u.error
                ),
            )
            .with_observed(json!({ "archive": moved.path, "error": u.error })),
        );
    }
    let files = report.files.get(&b.folder).copied().unwrap_or(0);
    let errors: Vec<&CompileError> = report
        .errors
        .iter()
        .filter(|e| e.candidate == b.folder)
        .collect();
    let observed = json!({ "archive": moved.path, "python_files": files, "errors": errors });
    if errors.is_empty() {
        return Some(
            Check::pass(
                "python-compiles",
                folder,
                format!(
                    "all {files} `.py` file(s) in {} compile with the verified interpreter",
                    moved.path
                ),
            )
            .with_observed(observed),
        );
    }
    let named: Vec<String> = errors
        .iter()
        .map(|e| match e.line {
            Some(line) => format!("{}:{line}: {}", e.path, e.error),
            None => format!("{}: {}", e.path, e.error),
        })
        .collect();
    Some(
        Check::fail(
            "python-compiles",
            folder,
            format!(
                "{} of {files} `.py` file(s) in {} do not compile with the verified interpreter: {}; \
                 expected every packaged module to compile (the runtime would fail to load it): fix \
                 it in the candidate's source and commit",
                errors.len(),
                moved.path,
                named.join("; ")
            ),
        )
        .with_observed(observed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::CheckResult;

    fn built(folder: &str) -> CandidateBuild {
        let mut b = CandidateBuild::new(folder, std::path::Path::new("/o"), Err("x".into()));
        b.moved = Some(Ok(super::super::MovedArchive {
            path: format!("packages/{folder}/a-n-1.lbpkg"),
            size: 1,
        }));
        b
    }

    #[test]
    fn a_syntax_error_fails_naming_file_and_line_only_for_its_candidate() {
        let report = Ok(Some(CompileReport {
            files: [("a".to_string(), 3), ("b".to_string(), 2)].into(),
            errors: vec![CompileError {
                candidate: "a".into(),
                path: "main.py".into(),
                line: Some(7),
                error: "SyntaxError: invalid syntax".into(),
            }],
            unreadable: vec![],
        }));
        let a = decide(&built("a"), &report).unwrap();
        assert_eq!(a.result, CheckResult::Fail);
        assert!(
            a.detail.contains("1 of 3")
                && a.detail.contains("main.py:7: SyntaxError: invalid syntax"),
            "{}",
            a.detail
        );
        let b = decide(&built("b"), &report).unwrap();
        assert_eq!(b.result, CheckResult::Pass, "{}", b.detail);
        assert!(b.detail.contains("all 2"), "{}", b.detail);
    }

    #[test]
    fn no_archive_no_check_and_a_silent_probe_fails() {
        let none = CandidateBuild::new("c", std::path::Path::new("/o"), Err("x".into()));
        assert!(decide(&none, &Ok(None)).is_none());
        let c = decide(&built("c"), &Err("exit status 1".into())).unwrap();
        assert_eq!(c.result, CheckResult::Fail);
        assert!(c.detail.contains("not observed"), "{}", c.detail);
    }
}
