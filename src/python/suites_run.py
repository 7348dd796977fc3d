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


class Recorder:
    def __init__(self):
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
        return (yield)


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
    recorder.record(collection_code, system_exit, True)
    sys.exit(code)


main()
