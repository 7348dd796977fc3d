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
stdout, stderr: pytest's own (the run's logs); the record never goes there.
Exit status: pytest's; with SystemExit from a conftest or plugin, its code
(1 when it is not an int); 1 when pytest cannot be imported.
"""

import inspect
import json
import os
import re
import sys

ARGS = json.loads(sys.argv[1])
RECORD = sys.argv[2]


def write_record(document):
    tmp = f"{RECORD}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, RECORD)


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
# names: they make, rewrite or log test reports, run a test's phases, or
# choose which collected tests run.
NAMED_HOOKS = (
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_report_teststatus",
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_runtest_teardown",
    "pytest_pyfunc_call",
    "pytest_report_to_serializable",
    "pytest_report_from_serializable",
    "pytest_collection_modifyitems",
    "pytest_deselected",
    "pytest_collection_finish",
)

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
    """The evidence's word for one phase's report."""
    if outcome == "passed":
        return "xpassed" if when == "call" and wasxfail else "passed"
    if outcome == "skipped":
        return "xfailed" if wasxfail else "skipped"
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
        original = self.observe_callable(item)
        try:
            return (yield from self.phase(item, "call"))
        finally:
            if original is not None:
                item.obj = original[0]

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item, nextitem):
        return (yield from self.phase(item, "teardown"))

    def observe_callable(self, item):
        """Replaces `item.obj` for the call phase by a function that
        records what the test function raises; returns (original,
        replacement), or `None` when the item is no plain test function."""
        from _pytest.python import Function

        try:
            from _pytest.unittest import TestCaseFunction
        except ImportError:  # pragma: no cover - pytest always has it
            TestCaseFunction = ()
        if not isinstance(item, Function) or isinstance(item, TestCaseFunction):
            self.unobservable[id(item)] = (
                "a unittest TestCase item: its outcome is made from the TestCase's result, which this plugin "
                "does not observe"
                if isinstance(item, Function)
                else f"a {type(item).__name__} item, no test function: its call is not observed"
            )
            return None
        original = item.obj
        if not callable(original):
            return None
        import functools

        key = id(item)
        raised = self.callable_raised

        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def observed(*args, **kwargs):
                try:
                    return await original(*args, **kwargs)
                except BaseException as exc:
                    raised[key] = exc
                    raise

        elif inspect.isfunction(original) or inspect.ismethod(original):

            @functools.wraps(original)
            def observed(*args, **kwargs):
                try:
                    return original(*args, **kwargs)
                except BaseException as exc:
                    raised[key] = exc
                    raise

        else:
            return None
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
        }
        self.settled.append(observed)
        unobservable = self.unobservable.pop(id(item), None)
        if entry is None or not entry[1]:
            observed["unobserved"] = "none of its phases ran through pytest_runtest_setup, _call or _teardown"
            return
        if unobservable is not None:
            observed["unobserved"] = unobservable
            return
        phases = entry[1]
        try:
            words = []
            for when in ("setup", "call", "teardown"):
                if when not in phases:
                    continue
                exc = phases[when]
                observed["phases"][when] = "ok" if exc is None else describe_exception(exc)
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

    def observations(self):
        try:
            self.collect_hooks()
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
        return {"observed": observed, "deselected": self.vanished, "hooks": list(self.hooks.values())}


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
                **self.observations(),
            }
        )

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append({"nodeid": report.nodeid, "longrepr": str(report.longrepr)[-4000:]})

    # First among the hooks, so a conftest's own `pytest_collection_finish`
    # that raises or exits cannot keep the collection from being recorded.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session):
        for item in session.items:
            self.seen.add(id(item))
            self.items.append(describe(item))
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
        try:
            return (yield)
        finally:
            try:
                self.settle(item)
            except Exception as exc:  # recorded as unobserved; the gate fails on it
                self.settled.append({"nodeid": item.nodeid, "classname": "", "name": "", "observed": None,
                                     "unobserved": f"settling failed: {describe_exception(exc)}",
                                     "phases": {}, "callable_raised": None})


def main():
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
