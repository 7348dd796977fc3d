"""Runs one pytest run of the `suites` gate and records what it collected.

Used by the `suites` gate (src/gates/suites.rs) once per run (`tree`,
`extracted`) as `python -I <bytecode options> -c <this> ARGS RECORD`: one
process that calls `pytest.main(ARGS, plugins=[recorder])`, so the items the
gate judges (which files they come from, for the historical-not-collected
check; which carry an xfail mark that applies, and whether it is strict) are
the items this very run collected and executed, not those of a separate
collection that a conftest could answer differently.

argv[1]: JSON list of pytest arguments (paths, `-c`, `--rootdir`,
         `--junitxml`, ...).
argv[2]: path of the collection record, one JSON document, written atomically
         (a temporary file beside it, then `os.replace`) when pytest finishes
         collecting, and again when the session ends:
    {"exit_code": int, "pytest_version": str,
     "items": [{"nodeid", "path", "source_file", "classname", "name",
                "xfail": null | {"strict": bool, "reason": str} | {"error": str}}],
     "errors": [{"nodeid", "longrepr"}],
     "system_exit": null | "<repr of the code a conftest or plugin passed to exit>",
     "tests_started": bool, "finished": bool}
    `classname` and `name` are the item's testcase attributes as the run's
    JUnit report writes them (its `--junit-prefix` included), so the gate
    can pair every item with its testcase.
    `exit_code` is pytest's status for the collection: when the session ended
    before any test started, the session's own (2 collection errors,
    3 internal error, 4 usage error, 5 nothing collected, or the code passed
    to exit); once a test started, what the collection alone gives (2 with
    collection errors, 5 with no item, else 0), the tests' results being the
    run's exit status. `items` also holds any item a plugin ran that the
    collection did not report. `finished` is false in the record written at
    the end of collection: a record still saying so means the process ended,
    or was stopped, before pytest returned.
    plus what the run's own plugin observed, apart from the reports that
    the repository's hooks can rewrite (see `Observer` below):
     "observed": [{"nodeid", "classname", "name",
                   "observed": null | outcome, "unobserved": null | str,
                   "phases": {"setup"|"call"|"teardown": "ok" | "<type>: <message>"},
                   "callable_raised": null | "<type>: <message>",
                   "logged": null | outcome}],
     "deselected": [{"nodeid", "via": "pytest_deselected" | "dropped"}],
     "hooks": [{"hook", "plugin", "file", "line", "wrapper"}]
    where an outcome is one of `passed`, `failed`, `error`, `skipped`,
    `xfailed`, `xpassed`, `xpassed-strict` (the word the evidence uses).
    `observed` is the outcome pytest's own report logic (`TestReport`'s
    outcome rule and `_pytest.skipping`'s xfail rule) gives for what the
    test's phases raised as this plugin saw them; `logged` is the outcome
    of the reports `pytest_runtest_logreport` handed this plugin.
    `deselected` holds every item the collection reported
    (`pytest_itemcollected`) that the session does not run, and how it went:
    announced through `pytest_deselected` (`-k`, `-m`, `--deselect`, a
    hook) or dropped silently. `hooks` is every implementation of a
    reporting, test-running or selection hook outside pytest's own package
    and this driver, with the file (relative to the rootdir when inside it)
    and the line of its `def`.
    Or, when the interpreter cannot import pytest at all:
    {"pytest_missing": "<exception type>: <message>"}
argv[3]: JSON object from the gate: {"hooks": [hook names the record lists
         implementations of], "scan": {"rootdir": str, "paths": [str],
         "python_files": [glob], "python_functions": [prefix or glob],
         "python_classes": [prefix or glob]},
         "path_first": [folder], "path_last": [folder]} (both optional: a
         candidate's own runs; folders put first on, and appended to,
         sys.path before pytest runs).
    The record also holds what the driver itself read, before pytest
    imported anything of the repository, from the suites' test files
    (`ast`, never importing them):
     "defined": [{"nodeid", "file", "line"}]: every test function and test
                 class method pytest's naming rules (argv[3]'s) name in the
                 test files under `paths` (explicit files always; folders
                 walked as pytest walks them by default);
     "scan_errors": [{"file", "error"}]: test files it could not parse;
     "collect_skipped": [{"nodeid", "reason"}]: collectors pytest skipped;
     "pytest_patches": {"files": int, "patches": [{"file", "line", "target",
                 "statement"}]}: every statement of a `.py` file under the
                 rootdir that assigns to an attribute of pytest's objects or
                 of this driver's plugin (pytest_patches.py);
    `RECORD.running` holds the node id of the test running (empty between
    tests), so a run its time limit stopped names the test that hung.
    each observed entry also holds "callable_problem": null | str, why the
    callable called for the test is not the one collected (replaced between
    collection and call, or not called through the plugin's wrapper).
    `hooks` also lists module-level `collect_ignore`/`collect_ignore_glob`
    of conftests (hook = that name, line = its first assignment).
    With argv[3] "watch": <folder> (the repository-level `extracted` run: the
    source root, DIR/extracted), the record also holds
     "touched": [name]: each child folder of <folder> (a candidate's
                extraction) that this process opened a file in, imported
                from, listed, changed into, or named in a program it started
                (`sys.addaudithook`: events open, import, os.listdir,
                os.scandir, os.chdir, subprocess.Popen, os.exec, os.posix_spawn,
                os.system), so `[suites] covers` is shown, not taken on the
                profile's word (an audit hook cannot be removed).
stdout, stderr: pytest's own (the run's logs); the record never goes there.
Exit status: pytest's; with SystemExit from a conftest or plugin, its code
(1 when it is not an int); 1 when pytest cannot be imported.
"""

import ast
import fnmatch
import functools
import inspect
import json
import os
import re
import sys

ARGS = json.loads(sys.argv[1])
# `scan_patches` (pytest_patches.py, prepended) of the rootdir, read in main.
PATCHES = {}
RECORD = sys.argv[2]
SETTINGS = json.loads(sys.argv[3])


def write_record(document):
    tmp = f"{RECORD}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, RECORD)


def note_running(nodeid):
    """Writes the node id of the test now running (empty between tests) to
    `RECORD.running`: a run stopped by its time limit names the test that
    hung, whatever it does with SIGTERM."""
    try:
        with open(f"{RECORD}.running", "w", encoding="utf-8") as f:
            f.write(nodeid)
    except OSError:
        pass


try:
    import pytest
except ImportError as exc:  # the interpreter's fault, not the suites': say so
    write_record({"pytest_missing": f"{type(exc).__name__}: {exc}"})
    print(f"suites_run: cannot import pytest: {type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(1)


def mangle(nodeid, prefix=None):
    """(classname, name) as pytest's JUnit report writes them for `nodeid`
    (`prefix`: the run's `--junit-prefix`, which the report puts first in
    every classname)."""
    try:
        from _pytest.junitxml import bin_xml_escape, mangle_test_address

        names = mangle_test_address(nodeid)
        names[-1] = str(bin_xml_escape(names[-1]))
    except Exception:
        path, bracket, params = nodeid.partition("[")
        names = path.split("::")
        names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
        names[-1] += bracket + params
    classnames = names[:-1]
    if prefix:
        classnames.insert(0, prefix)
    return ".".join(classnames), names[-1]


def xfail_of(item):
    """The xfail mark that applies to `item`, as pytest evaluates it."""
    try:
        from _pytest.skipping import evaluate_xfail_marks

        found = evaluate_xfail_marks(item)
    except Exception as exc:  # an unevaluable condition is reported, not guessed
        return {"error": f"{type(exc).__name__}: {exc}"}
    if found is None:
        return None
    return {"strict": bool(found.strict), "reason": str(found.reason)}


def source_file(item):
    function = getattr(item, "function", None)
    if function is None:
        return None
    try:
        return inspect.getsourcefile(inspect.unwrap(function))
    except TypeError:
        return None


def describe(item):
    classname, name = mangle(item.nodeid, getattr(item.config.option, "junitprefix", None))
    return {
        "nodeid": item.nodeid,
        "path": str(item.path),
        "source_file": source_file(item),
        "classname": classname,
        "name": name,
        "xfail": xfail_of(item),
    }


# The hooks whose implementations outside pytest's own package the record
# names, as the gate lists them (argv[3]): they make, rewrite or log test
# reports, run a test's phases, choose which collected tests run, or decide
# what is collected.
NAMED_HOOKS = tuple(SETTINGS["hooks"])

# pytest's default `norecursedirs`: folders a directory walk does not enter.
NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__")
UNITTEST_BASES = {"TestCase", "IsolatedAsyncioTestCase", "unittest.TestCase", "unittest.IsolatedAsyncioTestCase"}


def name_matches(name, options):
    """pytest's rule for `python_functions` and `python_classes`: a prefix,
    or a glob when the option holds a glob character."""
    for option in options:
        if name.startswith(option):
            return True
        if any(c in option for c in "*?[") and fnmatch.fnmatch(name, option):
            return True
    return False


def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    if isinstance(node, ast.Call):
        return dotted(node.func)
    return None


def is_fixture(node):
    return any((dotted(d) or "").split(".")[-1] == "fixture" for d in node.decorator_list)


def says_not_a_test(body):
    """A class body setting `__test__ = False`."""
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__test__" for t in stmt.targets):
            return not (isinstance(stmt.value, ast.Constant) and stmt.value.value)
    return False


def scan_file(path, nodeid, functions, classes):
    """Every test the naming rules name in the file at `path`: (nodeid, line
    of the `def`). Classes whose bases it cannot judge from the file (an
    imported base could define `__init__`, which pytest does not collect)
    are left out: the scan names fewer tests than pytest, never more."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    found = {}
    checkable = set()  # plain test classes of this module, usable as bases

    def functions_of(body, prefix, unittest_class):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_fixture(stmt):
                wanted = stmt.name.startswith("test") if unittest_class else name_matches(stmt.name, functions)
                if wanted:
                    found[f"{prefix}::{stmt.name}"] = stmt.lineno
            elif isinstance(stmt, ast.ClassDef) and not unittest_class:
                visit_class(stmt, prefix)

    def visit_class(node, prefix):
        bases = [dotted(b) for b in node.bases]
        unittest_class = any(b in UNITTEST_BASES for b in bases)
        plain = all(b == "object" or b in checkable for b in bases)
        if not (unittest_class or (plain and name_matches(node.name, classes))):
            return
        defines = {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if says_not_a_test(node.body) or (not unittest_class and defines & {"__init__", "__new__"}):
            return
        if not unittest_class:
            checkable.add(node.name)
        functions_of(node.body, f"{prefix}::{node.name}", unittest_class)

    functions_of(tree.body, nodeid, False)
    return sorted(found.items(), key=lambda kv: kv[1])


def test_files(paths, files):
    """The files pytest collects from `paths`: each named file, and in each
    folder (walked as pytest walks by default) every `.py` file matching
    `files` (globs on the file name)."""
    for path in paths:
        path = os.path.abspath(path.split("::", 1)[0])
        if os.path.isfile(path):
            yield path
            continue
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(
                d
                for d in dirs
                if not any(fnmatch.fnmatch(d, p) for p in NORECURSE)
                and not os.path.isfile(os.path.join(folder, d, "pyvenv.cfg"))
            )
            for name in sorted(names):
                if name.endswith(".py") and any(fnmatch.fnmatch(name, p) for p in files):
                    yield os.path.join(folder, name)


def scan_definitions(scan):
    """(`defined`, `scan_errors`) of the record: see the module docstring."""
    defined, errors, seen = [], [], set()
    root = os.path.abspath(scan["rootdir"])
    for path in test_files([p for p in scan["paths"] if "::" not in p], scan["python_files"]):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if path in seen:
            continue
        seen.add(path)
        try:
            for nodeid, line in scan_file(path, rel, scan["python_functions"], scan["python_classes"]):
                defined.append({"nodeid": nodeid, "file": rel, "line": line})
        except (OSError, SyntaxError, ValueError) as exc:
            errors.append({"file": rel, "error": describe_exception(exc)})
    return defined, errors


def collect_ignore_lines(module):
    """(name, line) of each module-level `collect_ignore`/`collect_ignore_glob`
    a conftest module defines: the first line naming it."""
    names = [n for n in ("collect_ignore", "collect_ignore_glob") if hasattr(module, n)]
    path = getattr(module, "__file__", None)
    lines = {}
    try:
        with open(path, "rb") as f:
            for node in ast.walk(ast.parse(f.read(), path)):
                if isinstance(node, ast.Name) and node.id in names:
                    lines[node.id] = min(lines.get(node.id, node.lineno), node.lineno)
    except Exception:
        pass
    return [(n, lines.get(n)) for n in names]


import _pytest  # noqa: E402  (pytest imported it already)

PYTEST_PACKAGE = os.path.dirname(os.path.abspath(_pytest.__file__))

# Severity of a phase's outcome: a test's outcome is that of its most severe
# phase (the first of equals), as pytest's JUnit report ranks a testcase's
# elements (error > failure > skipped).
RANK = {"passed": 0, "xpassed": 1, "skipped": 2, "xfailed": 2, "failed": 4, "xpassed-strict": 4, "error": 5}


def describe_exception(exc):
    text = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
    return text[:400]


class PhaseReport:
    """The attributes of a `TestReport` that `_pytest.skipping`'s report
    wrapper reads and writes."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.longrepr = None

    @property
    def skipped(self):
        return self.outcome == "skipped"


def outcome_word(when, outcome, wasxfail, longrepr):
    """The evidence's word for one phase's report (`wasxfail`: the report's
    attribute, `None` when it has none; an empty reason is still an xfail,
    as pytest's JUnit report and terminal tell it by `hasattr`)."""
    if outcome == "passed":
        return "xpassed" if when == "call" and wasxfail is not None else "passed"
    if outcome == "skipped":
        return "xfailed" if wasxfail is not None else "skipped"
    if when != "call":
        return "error"
    if str(longrepr or "").startswith("[XPASS(strict)]"):
        return "xpassed-strict"
    return "failed"


def reference_outcome(item, when, exc):
    """The outcome pytest's own report logic gives phase `when` of `item`
    when it raised `exc` (`None`: nothing): `TestReport.from_item_and_call`'s
    rule (a skip exception, or a group of them, is a skip; anything else a
    failure), then `_pytest.skipping.pytest_runtest_makereport` for xfail."""
    from types import SimpleNamespace

    from _pytest import skipping
    from _pytest._code import ExceptionInfo
    from _pytest.outcomes import skip

    excinfo = None if exc is None else ExceptionInfo.from_exception(exc)
    if exc is None:
        outcome = "passed"
    elif isinstance(exc, skip.Exception):
        outcome = "skipped"
    elif "unittest" in sys.modules and isinstance(exc, sys.modules["unittest"].SkipTest):
        outcome = "skipped"  # `_pytest.unittest.pytest_runtest_makereport` makes it a skip
    elif isinstance(exc, BaseExceptionGroup) and exc.split(skip.Exception)[1] is None:
        outcome = "skipped"
    else:
        outcome = "failed"
    rep = PhaseReport(outcome)
    wrapper = skipping.pytest_runtest_makereport(item, SimpleNamespace(excinfo=excinfo, when=when))
    next(wrapper)
    try:
        wrapper.send(rep)
    except StopIteration as stop:
        rep = stop.value if stop.value is not None else rep
    return outcome_word(when, rep.outcome, getattr(rep, "wasxfail", None), rep.longrepr)


def combined(words):
    """A test's outcome from its phases' outcomes, in phase order."""
    best = None
    for word in words:
        if best is None or RANK[word] > RANK[best]:
            best = word
    return best


def is_unittest_item(item):
    try:
        from _pytest.unittest import TestCaseFunction
    except ImportError:  # pragma: no cover - pytest always has it
        return False
    return isinstance(item, TestCaseFunction)


def real_callable(obj):
    """What identifies a test's callable: a bound method's function (each
    class test gets a fresh instance), else the object itself."""
    return getattr(obj, "__func__", obj)


def callable_name(obj):
    """`qualname (file:line)` of a callable, `functools.partial(...)` around
    a partial's function."""
    real = real_callable(obj)
    if isinstance(real, functools.partial):
        return f"functools.partial({callable_name(real.func)})"
    name = getattr(real, "__qualname__", None) or f"a {type(real).__qualname__} object"
    code = getattr(real, "__code__", None)
    if code is None:
        return str(name)
    path, cwd = code.co_filename, os.getcwd()
    if path.startswith(cwd + os.sep):
        path = os.path.relpath(path, cwd)
    return f"{name} ({path}:{code.co_firstlineno})"


def hook_location(function):
    """(file, line of the `def`) of a hook implementation: of its own code
    object, never of what its `__wrapped__` names (which a conftest could
    point into pytest's package to leave the list)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return None, None
    path, line = code.co_filename, code.co_firstlineno
    try:
        import linecache

        # co_firstlineno is the first decorator's line: step to the `def`.
        for offset in range(0, 50):
            text = linecache.getline(path, line + offset)
            if not text:
                break
            if re.match(r"\s*(async\s+)?def\s", text):
                line += offset
                break
    except Exception:
        pass
    return path, line


class Observer:
    """Observes each test's phases apart from its reports.

    The repository's conftests and plugins can rewrite a report
    (`pytest_runtest_makereport`, `pytest_runtest_logreport`,
    `pytest_report_teststatus`) or make a collected test vanish
    (`--deselect`, `-k`, `-m`, a `pytest_collection_modifyitems` hook). This
    plugin records, for every test, what its phases raised: the innermost
    wrapper it can place around `pytest_runtest_setup`, `_call` and
    `_teardown` (`trylast`: inside every wrapper registered before the
    conftests, and inside the conftests' plain and `tryfirst` wrappers), and
    around the test function itself (`item.obj` replaced for the call phase
    by a function, a coroutine function for a coroutine test, that records
    what the original raised and raises it again). From those it computes
    the outcome pytest's own rules give, and records it beside the outcome
    of the reports it was handed, so the gate can compare both, and the
    JUnit report, with what happened. It also records every item the
    collection reported that the session does not run.

    What it does not stop: code in the same interpreter can reach this
    plugin (replace its methods, the record, `item.obj` again, pytest's own
    functions); a conftest `trylast` wrapper of a phase hook registered after
    it sits inside it, so an exception such a wrapper swallows in setup or
    teardown is not seen (one raised by the test function still is).
    """

    def __init__(self):
        self.config = None
        self.phases = {}  # id(item) -> (item, {when: exception or None})
        self.callable_raised = {}  # id(item) -> exception the test function raised
        self.settled = []  # observed entries, in run order
        self.logged = {}  # nodeid -> [(when, word)]
        self.reported_items = []  # (nodeid, id) as pytest_itemcollected reported them
        self.announced = set()  # nodeids passed to pytest_deselected
        self.vanished = []  # [{"nodeid", "via"}]
        self.hooks = {}
        self.unobservable = {}  # id(item) -> why its test function is not observed
        self.collected_callables = {}  # id(item) -> (callable, its description) at the end of collection
        self.entered = set()  # id(item) of each test whose call went through the plugin's wrapper
        self.callable_problems = {}  # id(item) -> why the callable called is not the one collected
        self.unittest_excinfo = {}  # id(item) -> exceptions a TestCase item's result held after its call
        self.collect_skipped = []  # [{"nodeid", "reason"}]

    def note_callable(self, item):
        """Records the callable `item` would call, once (the end of its
        collection, after every `pytest_collection_modifyitems`)."""
        from _pytest.python import Function

        if id(item) in self.collected_callables or not isinstance(item, Function):
            return
        try:
            obj = item.obj
            self.collected_callables[id(item)] = (real_callable(obj), callable_name(obj))
        except Exception as exc:  # named: the call is then judged against nothing
            self.collected_callables[id(item)] = (None, f"unreadable ({describe_exception(exc)})")

    def pytest_configure(self, config):
        self.config = config

    def pytest_itemcollected(self, item):
        self.reported_items.append((item.nodeid, id(item)))

    def pytest_deselected(self, items):
        for item in items:
            self.announced.add(item.nodeid)

    def find_vanished(self, session):
        running = {id(item) for item in session.items}
        self.vanished = [
            {"nodeid": nodeid, "via": "pytest_deselected" if nodeid in self.announced else "dropped"}
            for nodeid, ident in self.reported_items
            if ident not in running
        ]
        named = {v["nodeid"] for v in self.vanished}
        running_ids = {item.nodeid for item in session.items}
        for nodeid in sorted(self.announced - named - running_ids):
            self.vanished.append({"nodeid": nodeid, "via": "pytest_deselected"})

    def phase(self, item, when):
        entry = self.phases.setdefault(id(item), (item, {}))
        try:
            result = yield
        except BaseException as exc:
            entry[1][when] = exc
            raise
        entry[1][when] = None
        return result

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_setup(self, item):
        return (yield from self.phase(item, "setup"))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        self.compare_callable(item)
        original = self.observe_callable(item)
        try:
            return (yield from self.phase(item, "call"))
        finally:
            if original is not None:
                if getattr(item, "obj", None) is not original[1]:
                    self.callable_problems.setdefault(
                        id(item),
                        f"item.obj was replaced during the call phase by {callable_name(getattr(item, 'obj', None))}",
                    )
                item.obj = original[0]
            excinfo = item.__dict__.get("_excinfo")
            if excinfo:
                self.unittest_excinfo[id(item)] = [getattr(e, "value", None) for e in excinfo]

    def compare_callable(self, item):
        """Records a problem when the callable `item` is about to call is not
        the one its collection ended with."""
        collected = self.collected_callables.get(id(item))
        if collected is None:
            return
        try:
            current = item.obj
        except Exception as exc:
            self.callable_problems[id(item)] = f"its callable cannot be read at call time: {describe_exception(exc)}"
            return
        if collected[0] is None or real_callable(current) is not collected[0]:
            self.callable_problems[id(item)] = (
                f"its callable changed between collection and call: collected {collected[1]}, "
                f"called {callable_name(current)}"
            )

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item, nextitem):
        return (yield from self.phase(item, "teardown"))

    def observe_callable(self, item):
        """Replaces `item.obj` for the call phase by a function that
        records what the test function raises (and that it was called);
        returns (original, replacement), or `None` when the item is no test
        function. A unittest TestCase item's method is wrapped the same
        way (`TestCaseFunction.runtest` sets `item.obj` on the TestCase)."""
        from _pytest.python import Function

        if not isinstance(item, Function):
            self.unobservable[id(item)] = f"a {type(item).__name__} item, no test function: its call is not observed"
            return None
        original = item.obj
        if not callable(original):
            self.callable_problems.setdefault(id(item), f"its callable is not callable: {callable_name(original)}")
            return None

        key = id(item)
        raised = self.callable_raised
        entered = self.entered

        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def observed(*args, **kwargs):
                entered.add(key)
                try:
                    return await original(*args, **kwargs)
                except BaseException as exc:
                    raised[key] = exc
                    raise

        else:
            # Any other callable pytest collected (a plain or bound function,
            # a `functools.partial`, a `functools.wraps` wrapper).

            @functools.wraps(original)
            def observed(*args, **kwargs):
                entered.add(key)
                try:
                    return original(*args, **kwargs)
                except BaseException as exc:
                    raised[key] = exc
                    raise

        item.obj = observed
        return original, observed

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        if report.when in ("setup", "call", "teardown"):
            word = outcome_word(report.when, report.outcome, getattr(report, "wasxfail", None), report.longrepr)
            self.logged.setdefault(report.nodeid, []).append((report.when, word))

    def settle(self, item):
        """Turns what `item`'s phases raised into its observed outcome."""
        entry = self.phases.pop(id(item), None)
        callable_exc = self.callable_raised.pop(id(item), None)
        classname, name = mangle(item.nodeid, getattr(item.config.option, "junitprefix", None))
        observed = {
            "nodeid": item.nodeid,
            "classname": classname,
            "name": name,
            "observed": None,
            "unobserved": None,
            "phases": {},
            "callable_raised": None if callable_exc is None else describe_exception(callable_exc),
            "callable_problem": None,
        }
        self.settled.append(observed)
        unobservable = self.unobservable.pop(id(item), None)
        problem = self.callable_problems.pop(id(item), None)
        entered = id(item) in self.entered
        self.entered.discard(id(item))
        unittest_excinfo = self.unittest_excinfo.pop(id(item), None)
        if entry is None or not entry[1]:
            observed["unobserved"] = "none of its phases ran through pytest_runtest_setup, _call or _teardown"
            return
        if unobservable is not None:
            observed["unobserved"] = unobservable
            return
        phases = entry[1]
        unittest_item = is_unittest_item(item)
        if problem is None and "call" in phases and phases["call"] is None and not entered and not unittest_item:
            # pytest's own pytest_pyfunc_call (and pytest-asyncio's) always
            # calls `item.obj`: a call phase that raised nothing and did not
            # is a hook that called something else, or nothing. (One that
            # raised before calling it, as pytest does for an async test no
            # plugin runs, fails on its own.)
            collected = self.collected_callables.get(id(item), (None, "unknown"))[1]
            problem = (
                f"its call phase ran but never called the collected test function {collected} through the "
                "run's plugin: a hook or fixture called another callable, or none"
            )
        observed["callable_problem"] = problem
        if problem is not None:
            observed["unobserved"] = problem
            return
        try:
            words = []
            for when in ("setup", "call", "teardown"):
                if when not in phases:
                    continue
                exc = phases[when]
                observed["phases"][when] = "ok" if exc is None else describe_exception(exc)
                if unittest_item and exc is None and unittest_excinfo:
                    # A TestCase's result (`item._excinfo`), which pytest's
                    # unittest report hook turns into the call's (then the
                    # teardown's) exception.
                    if when == "call":
                        exc = unittest_excinfo[0]
                    elif when == "teardown" and len(unittest_excinfo) > 1:
                        exc = unittest_excinfo[1]
                if when == "call" and exc is None and callable_exc is not None:
                    # The test function raised and the call phase did not:
                    # something between them swallowed it.
                    exc = callable_exc
                words.append(reference_outcome(item, when, exc))
            observed["observed"] = combined(words)
        except Exception as exc:  # an observation that failed is recorded, never guessed
            observed["unobserved"] = f"computing its outcome failed: {describe_exception(exc)}"

    def settle_leftovers(self):
        for item, _ in list(self.phases.values()):
            self.settle(item)

    def collect_hooks(self):
        if self.config is None:
            return
        root = str(getattr(self.config, "rootpath", "") or "")
        for hook in NAMED_HOOKS:
            caller = getattr(self.config.pluginmanager.hook, hook, None)
            if caller is None:
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is self:
                    continue
                path, line = hook_location(impl.function)
                if path and os.path.abspath(path).startswith(PYTEST_PACKAGE + os.sep):
                    continue
                shown = path
                if path and root and os.path.abspath(path).startswith(root + os.sep):
                    shown = os.path.relpath(os.path.abspath(path), root)
                key = (hook, shown, line)
                self.hooks[key] = {
                    "hook": hook,
                    "plugin": str(impl.plugin_name),
                    "file": shown,
                    "line": line,
                    "wrapper": bool(getattr(impl, "wrapper", False) or getattr(impl, "hookwrapper", False)),
                }

    def collect_ignores(self):
        """Each conftest's module-level `collect_ignore`/`collect_ignore_glob`."""
        root = str(getattr(self.config, "rootpath", "") or "")
        for plugin in self.config.pluginmanager.get_plugins():
            path = getattr(plugin, "__file__", None)
            if not path or os.path.basename(path) != "conftest.py":
                continue
            for name, line in collect_ignore_lines(plugin):
                shown = os.path.abspath(path)
                if root and shown.startswith(root + os.sep):
                    shown = os.path.relpath(shown, root)
                self.hooks[(name, shown, line)] = {
                    "hook": name,
                    "plugin": str(self.config.pluginmanager.get_name(plugin)),
                    "file": shown,
                    "line": line,
                    "wrapper": False,
                }

    def observations(self):
        try:
            self.collect_hooks()
            self.collect_ignores()
        except Exception as exc:  # named in the record; the gate fails on hooks it cannot list
            self.hooks[("?", None, None)] = {
                "hook": "?",
                "plugin": f"listing the hook implementations failed: {describe_exception(exc)}",
                "file": None,
                "line": None,
                "wrapper": False,
            }
        observed = []
        for entry in self.settled:
            logs = self.logged.get(entry["nodeid"], [])
            observed.append({**entry, "logged": combined(word for _, word in logs) if logs else None})
        return {
            "observed": observed,
            "deselected": self.vanished,
            "hooks": list(self.hooks.values()),
            "collect_skipped": self.collect_skipped,
        }


class Recorder(Observer):
    def __init__(self):
        super().__init__()
        self.items = []
        self.seen = set()
        self.errors = []
        self.collection_code = None
        self.tests_started = False

    def record(self, exit_code, system_exit, finished):
        write_record(
            {
                "exit_code": int(exit_code),
                "pytest_version": pytest.__version__,
                "items": self.items,
                "errors": self.errors,
                "system_exit": system_exit,
                "tests_started": self.tests_started,
                "finished": finished,
                "defined": DEFINED,
                "scan_errors": SCAN_ERRORS,
                "pytest_patches": PATCHES,
                "collect_only": bool(self.config is not None and getattr(self.config.option, "collectonly", False)),
                "touched": sorted(TOUCHED),
                **self.observations(),
            }
        )

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append({"nodeid": report.nodeid, "longrepr": str(report.longrepr)[-4000:]})
        elif report.skipped:
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
            self.collect_skipped.append({"nodeid": report.nodeid, "reason": str(reason)[-400:]})

    # First among the hooks, so a conftest's own `pytest_collection_finish`
    # that raises or exits cannot keep the collection from being recorded.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session):
        for item in session.items:
            self.seen.add(id(item))
            self.items.append(describe(item))
            self.note_callable(item)
        self.find_vanished(session)
        # What pytest's run loop makes of the collection before any test
        # (`_pytest.main.pytest_runtestloop` and `_main`).
        self.collection_code = 2 if self.errors else 5 if not self.items else 0
        self.record(self.collection_code, None, False)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # A wrapper sees every item the run loop runs, whatever other
        # implementations of the protocol do; one added after the collection
        # is recorded too.
        self.tests_started = True
        if id(item) not in self.seen:
            self.seen.add(id(item))
            self.items.append(describe(item))
        self.note_callable(item)
        note_running(item.nodeid)
        try:
            return (yield)
        finally:
            note_running("")
            try:
                self.settle(item)
            except Exception as exc:  # recorded as unobserved; the gate fails on it
                self.settled.append({"nodeid": item.nodeid, "classname": "", "name": "", "observed": None,
                                     "unobserved": f"settling failed: {describe_exception(exc)}",
                                     "phases": {}, "callable_raised": None,
                                     "callable_problem": f"settling failed: {describe_exception(exc)}"})


TOUCHED = set()
WATCHED_EVENTS = {
    "open": (0,),
    "import": (1,),
    "os.listdir": (0,),
    "os.scandir": (0,),
    "os.chdir": (0,),
    "subprocess.Popen": (0, 1, 2),
    "os.exec": (0, 1),
    "os.posix_spawn": (0, 1),
    "os.system": (0,),
}


def watch(root):
    """Records in TOUCHED each child folder of `root` an audited event names."""
    prefixes = {os.path.join(root, ""), os.path.join(os.path.realpath(root), "")}

    def note(value):
        if isinstance(value, (list, tuple)):
            for v in value:
                note(v)
            return
        if not isinstance(value, (str, bytes)):
            try:
                value = os.fspath(value)
            except TypeError:
                return
        if isinstance(value, bytes):
            value = os.fsdecode(value)
        for prefix in prefixes:
            at = value.find(prefix)
            while at != -1:
                name = re.split(r"[/\s'\"]", value[at + len(prefix):], maxsplit=1)[0]
                if name and name not in (".", ".."):
                    TOUCHED.add(name)
                at = value.find(prefix, at + 1)

    def hook(event, args):
        positions = WATCHED_EVENTS.get(event)
        if positions is None:
            return
        try:
            for i in positions:
                if i < len(args):
                    v = args[i]
                    if event in ("open", "os.listdir", "os.scandir", "os.chdir") and isinstance(v, (str, bytes)) \
                            and not os.path.isabs(os.fsdecode(v)):
                        v = os.path.join(os.getcwd(), os.fsdecode(v))
                    note(v)
        except Exception:  # an audit hook must never break the code it watches
            pass

    sys.addaudithook(hook)


def main():
    global DEFINED, SCAN_ERRORS
    if SETTINGS.get("watch"):
        watch(SETTINGS["watch"])
    # Read before pytest imports anything of the repository.
    DEFINED, SCAN_ERRORS = scan_definitions(SETTINGS["scan"])
    PATCHES.update(scan_patches(SETTINGS["scan"]["rootdir"]))
    # A candidate's own tests (argv[3] "path_first", "path_last"): they run as
    # from the candidate's folder (first, as `python -m pytest` there puts
    # it), with its dependency environment after the interpreter's own
    # site-packages, as the SDK's worker has it, so nothing there can stand
    # in for the verified SDK. Set after pytest and this driver are imported.
    sys.path[:0] = SETTINGS.get("path_first", [])
    sys.path.extend(SETTINGS.get("path_last", []))
    recorder = Recorder()
    system_exit = None
    try:
        code = int(pytest.main(ARGS, plugins=[recorder]))
    except SystemExit as exc:  # a conftest or plugin called exit: record it, end as it asked
        code = exc.code if isinstance(exc.code, int) else 1
        system_exit = repr(exc.code)
        print(f"suites_run: pytest ended with SystemExit({exc.code!r})", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    collection_code = code
    if recorder.tests_started and recorder.collection_code is not None:
        collection_code = recorder.collection_code
    recorder.settle_leftovers()
    recorder.record(collection_code, system_exit, True)
    sys.exit(code)


main()
