//! An `ImportError`, `ModuleNotFoundError`, `AttributeError` or `TypeError`
//! on a `langbot_plugin` name, in a candidate's tests or at plugin load, is
//! an SDK mismatch: the code was written against another SDK release than
//! the one the run used. [`find`] recognises it in pytest or traceback
//! output; [`sentence`] says which name, which SDK version was used, and
//! whether the candidate's own requirement allows that version, so the
//! failure is never "fix the tests or the candidates". [`annotate`] puts that
//! sentence at the front of a failing check's detail. All pure.

use crate::evidence::{Check, CheckResult};
use crate::provision::resolve::{declared, Declared};
use pep440_rs::Version;
use std::str::FromStr;

/// One SDK name the output says is missing or incompatible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The exception's type (`ImportError`).
    pub error: String,
    /// The name (`current_binding`, `bind_invocation(binding=...)`, or a
    /// module path for `ModuleNotFoundError`).
    pub name: String,
    /// The error line as printed, without pytest's `E` prefix.
    pub line: String,
}

/// The error texts [`find`] reads, wherever they start on a line.
const MARKERS: [&str; 4] = [
    "ImportError: cannot import name ",
    "ModuleNotFoundError: No module named ",
    "AttributeError: module ",
    "TypeError: ",
];

/// The first SDK mismatch in `text` (pytest output, a JUnit failure text, a
/// runtime's traceback), if any.
pub fn find(text: &str) -> Option<Mismatch> {
    let sdk_in_text = text.contains("langbot_plugin");
    text.lines().find_map(|raw| {
        let line = raw.trim_start();
        let line = line
            .strip_prefix("E ")
            .map_or(line, str::trim_start)
            .trim_end();
        // The runtime wraps a worker's error in its own
        // (`...ActionCallError: ActionCallError: ImportError: ...`): read
        // from the first error of ours on the line.
        let line = MARKERS
            .iter()
            .filter_map(|m| line.find(m))
            .min()
            .map_or(line, |at| &line[at..]);
        let quoted = |s: &str, after: &str| -> Option<String> {
            let rest = s.split_once(after)?.1;
            let rest = rest.strip_prefix('\'')?;
            Some(rest.split('\'').next()?.to_string())
        };
        let hit = |error: &str, name: String| {
            Some(Mismatch {
                error: error.into(),
                name,
                line: line.to_string(),
            })
        };
        if let Some(rest) = line.strip_prefix("ImportError: cannot import name ") {
            let from = quoted(rest, " from ")?;
            return from
                .starts_with("langbot_plugin")
                .then(|| quoted(line, "cannot import name "))
                .flatten()
                .and_then(|n| hit("ImportError", n));
        }
        if let Some(rest) = line.strip_prefix("ModuleNotFoundError: No module named ") {
            let module = rest.trim_matches('\'').to_string();
            return module
                .starts_with("langbot_plugin.")
                .then_some(())
                .and_then(|()| hit("ModuleNotFoundError", module));
        }
        if let Some(rest) = line.strip_prefix("AttributeError: module ") {
            let module = quoted(line, "module ")?;
            let name = quoted(rest, " has no attribute ")?;
            return module
                .starts_with("langbot_plugin")
                .then_some(())
                .and_then(|()| hit("AttributeError", name));
        }
        if let Some(rest) = line.strip_prefix("TypeError: ") {
            let (func, kw) = rest.split_once("() got an unexpected keyword argument ")?;
            let kw = kw.trim_matches('\'');
            let func = func.rsplit('.').next().unwrap_or(func);
            return sdk_in_text
                .then_some(())
                .and_then(|()| hit("TypeError", format!("{func}({kw}=...)")));
        }
        None
    })
}

/// The sentence for `m` under SDK `sdk` (the version the run used);
/// `requirement` is the candidate's `langbot-plugin` requirement line
/// (`Some(None)`: it has none), `None` for a run not of one candidate.
pub fn sentence(m: &Mismatch, sdk: &str, requirement: Option<Option<&str>>) -> String {
    let head = format!(
        "SDK mismatch: langbot-plugin {sdk}, the SDK this run used, has no `{}` ({})",
        m.name, m.line
    );
    let Some(line) = requirement else {
        return format!(
            "{head}: the code under test uses a name of another SDK release; certify each candidate under \
             the SDK its requirement resolves to (`profile init` writes those groups), or make the code \
             match this SDK; not a failure of the tests' own logic"
        );
    };
    let version = Version::from_str(sdk).ok();
    match (declared(line, line.is_some()), version) {
        (Ok(Declared::Pinned(pin)), Some(v)) if pin == v => format!(
            "{head}: the candidate pins =={pin}, which has no `{}`: it uses a name its own pin does not \
             provide; fix the candidate: pin a release that has it, or stop using it",
            m.name
        ),
        (Ok(d), Some(v)) if allows(&d, &v) => format!(
            "{head}: its requirement ({}) accepts {sdk}, yet the candidate uses a name {sdk} lacks: either it \
             needs a newer SDK than its requirement says (narrow the requirement), or this run used an older \
             SDK than pip installs for it today (re-run `profile init` to group it under the version it \
             resolves to)",
            line.unwrap_or("no langbot-plugin requirement")
        ),
        _ => format!(
            "{head}: the candidate's requirement ({}) does not accept {sdk}: it was certified under the \
             wrong SDK; certify it under the version its requirement resolves to (`profile init` writes \
             that group), not a fix of the tests",
            line.unwrap_or("none")
        ),
    }
}

/// Whether `d` accepts `v` (pre-releases allowed, as the SDK's own
/// admission decides).
fn allows(d: &Declared, v: &Version) -> bool {
    match d {
        Declared::Pinned(p) => p == v,
        Declared::Range(s) => s.contains(v),
        Declared::Unpinned | Declared::Absent { .. } => true,
    }
}

/// Puts the SDK-mismatch sentence in front of every failing check of
/// `checks` when `output` holds a mismatch (see [`sentence`]); the phrase
/// "fix the tests or the candidates" is dropped from such a check.
pub fn annotate<'a>(
    checks: impl IntoIterator<Item = &'a mut Check>,
    output: &str,
    sdk: &str,
    requirement: Option<Option<&str>>,
) {
    let Some(m) = find(output) else { return };
    let said = sentence(&m, sdk, requirement);
    for c in checks.into_iter().filter(|c| c.result == CheckResult::Fail) {
        if c.detail.starts_with("SDK mismatch") {
            continue;
        }
        let rest = c
            .detail
            .replace(": fix the tests or the candidates", "")
            .replace(
                "fix the tests or the candidates",
                "see the SDK mismatch above",
            );
        c.detail = format!("{said}. {rest}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pytest collection error as pytest 9 prints it.
    const COLLECTION: &str = "\
==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_plugin.py ____________________
ImportError while importing test module '/w/misc/weather/tests/test_plugin.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_plugin.py:5: in <module>
    from components.tools.weather import Weather
components/tools/weather.py:3: in <module>
    from langbot_plugin.api.proxies.invocation import current_binding
E   ImportError: cannot import name 'current_binding' from 'langbot_plugin.api.proxies.invocation' (/venv/lib/python3.11/site-packages/langbot_plugin/api/proxies/invocation.py)
=========================== short test summary info ============================
ERROR tests/test_plugin.py
";

    /// A plugin worker's traceback at load, as the runtime logs it.
    const LOAD: &str = "\
Traceback (most recent call last):
  File \"/code/main.py\", line 4, in <module>
    from langbot_plugin.api.proxies import invocation
  File \"/code/components/tool.py\", line 9, in <module>
    invocation.current_config
AttributeError: module 'langbot_plugin.api.proxies.invocation' has no attribute 'current_config'
";

    const CALL: &str = "\
    def test_bind(self):
>       with bind_invocation(binding=self.binding):
E       TypeError: bind_invocation() got an unexpected keyword argument 'binding'

tests/test_x.py:12: TypeError
/venv/lib/python3.11/site-packages/langbot_plugin/runtime/context.py:40
";

    #[test]
    fn import_attribute_module_and_keyword_errors_on_sdk_names_are_found() {
        let m = find(COLLECTION).unwrap();
        assert_eq!(
            (m.error.as_str(), m.name.as_str()),
            ("ImportError", "current_binding")
        );
        assert!(m
            .line
            .starts_with("ImportError: cannot import name 'current_binding'"));
        let m = find(LOAD).unwrap();
        assert_eq!(
            (m.error.as_str(), m.name.as_str()),
            ("AttributeError", "current_config")
        );
        let m = find(CALL).unwrap();
        assert_eq!(m.name, "bind_invocation(binding=...)");
        let m = find(
            "E   ModuleNotFoundError: No module named 'langbot_plugin.api.proxies.invocation'\n",
        )
        .unwrap();
        assert_eq!(m.name, "langbot_plugin.api.proxies.invocation");
    }

    #[test]
    fn an_error_the_runtime_wrapped_in_its_own_is_found() {
        let text = "langbot_plugin.entities.io.errors.ActionCallError: ActionCallError: \
                    ImportError: cannot import name 'invocation_capability' from \
                    'langbot_plugin.api.proxies.invocation' (/v/langbot_plugin/api/proxies/invocation.py)";
        let m = find(text).expect("found");
        assert_eq!(m.error, "ImportError");
        assert_eq!(m.name, "invocation_capability");
        assert!(find("RuntimeError: ActionCallError: boom").is_none());
    }

    #[test]
    fn errors_on_other_names_are_not_sdk_mismatches() {
        for text in [
            "E   ImportError: cannot import name 'thing' from 'components.tools' (/w/components/tools.py)",
            "E   ModuleNotFoundError: No module named 'requests'",
            "AttributeError: module 'os' has no attribute 'nope'",
            "E   TypeError: run() got an unexpected keyword argument 'x'",
            "E   AssertionError: assert 1 == 2",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }

    #[test]
    fn the_sentence_names_the_name_the_sdk_and_whether_the_requirement_allows_it() {
        let m = find(COLLECTION).unwrap();
        let own_pin = sentence(&m, "0.6.1", Some(Some("langbot-plugin==0.6.1")));
        assert!(
            own_pin.starts_with("SDK mismatch: langbot-plugin 0.6.1, the SDK this run used, has no `current_binding`")
                && own_pin.contains(
                    "the candidate pins ==0.6.1, which has no `current_binding`: it uses a name its own pin does not provide"
                ),
            "{own_pin}"
        );
        let wrong = sentence(&m, "0.6.0b5", Some(Some("langbot-plugin>=0.7.3,<0.8")));
        assert!(
            wrong.contains("requirement (langbot-plugin>=0.7.3,<0.8) does not accept 0.6.0b5")
                && wrong.contains("certified under the wrong SDK"),
            "{wrong}"
        );
        let unpinned = sentence(&m, "0.6.0b5", Some(None));
        assert!(
            unpinned.contains("accepts 0.6.0b5") && unpinned.contains("profile init"),
            "{unpinned}"
        );
        let repo = sentence(&m, "0.6.0b5", None);
        assert!(repo.contains("another SDK release"), "{repo}");
        for s in [own_pin, wrong, unpinned, repo] {
            assert!(!s.contains("fix the tests or the candidates"), "{s}");
        }
    }

    #[test]
    fn failing_checks_are_annotated_and_others_left_alone() {
        let mut checks = vec![
            Check::fail(
                "w/tree",
                Some("w"),
                "pytest exit status 2; ...: fix the tests or the candidates (report r, output o)",
            ),
            Check::pass("w/collected", Some("w"), "ok"),
        ];
        annotate(
            &mut checks,
            COLLECTION,
            "0.6.1",
            Some(Some("langbot-plugin==0.6.1")),
        );
        assert!(
            checks[0].detail.starts_with("SDK mismatch"),
            "{}",
            checks[0].detail
        );
        assert!(
            !checks[0].detail.contains("fix the tests"),
            "{}",
            checks[0].detail
        );
        assert!(checks[0].detail.contains("(report r, output o)"));
        assert_eq!(checks[1].detail, "ok");
        let mut plain = vec![Check::fail(
            "w/tree",
            Some("w"),
            "fix the tests or the candidates",
        )];
        annotate(&mut plain, "E   AssertionError", "0.6.1", None);
        assert_eq!(plain[0].detail, "fix the tests or the candidates");
    }
}
