"""Collects pytest suites without running them and reports every item.

Used by the `suites` gate (src/gates/suites.rs) before each pytest run, with
the same interpreter flags (`-I` and the run's bytecode cache), working directory, environment and
pytest arguments as the run, so the gate knows what the run will execute:
which files the items come from (the historical-not-collected check) and
which items carry an xfail mark that applies, and whether it is strict.

argv[1]: JSON list of pytest arguments (paths, `-c`, `--rootdir`, ...).
stdout:  one JSON document:
    {"exit_code": int, "pytest_version": str,
     "items": [{"nodeid", "path", "source_file", "classname", "name",
                "xfail": null | {"strict": bool, "reason": str} | {"error": str}}],
     "errors": [{"nodeid", "longrepr"}],
     "system_exit": null | "<repr of the code a conftest or plugin passed to exit>"}
    or, when the interpreter cannot import pytest at all:
    {"pytest_missing": "<exception type>: <message>"}
pytest's own output, and anything the collected modules write to stdout
(file descriptor 1 included, so child processes too), goes to stderr.
"""

import contextlib
import inspect
import json
import os
import re
import sys

try:
    import pytest
except ImportError as exc:  # the interpreter's fault, not the suites': say so
    print(json.dumps({"pytest_missing": f"{type(exc).__name__}: {exc}"}))
    sys.exit(0)


def mangle(nodeid):
    """(classname, name) as pytest's JUnit report writes them for `nodeid`."""
    try:
        from _pytest.junitxml import mangle_test_address

        names = mangle_test_address(nodeid)
    except Exception:
        path, bracket, params = nodeid.partition("[")
        names = path.split("::")
        names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
        names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


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


class Recorder:
    def __init__(self):
        self.items = []
        self.errors = []

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append({"nodeid": report.nodeid, "longrepr": str(report.longrepr)[-4000:]})

    def pytest_collection_finish(self, session):
        for item in session.items:
            classname, name = mangle(item.nodeid)
            self.items.append(
                {
                    "nodeid": item.nodeid,
                    "path": str(item.path),
                    "source_file": source_file(item),
                    "classname": classname,
                    "name": name,
                    "xfail": xfail_of(item),
                }
            )


def main():
    args = json.loads(sys.argv[1])
    recorder = Recorder()
    system_exit = None
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            try:
                code = pytest.main([*args, "--collect-only", "-q"], plugins=[recorder])
            except SystemExit as exc:  # a conftest or plugin called exit: report what was collected
                code = exc.code if isinstance(exc.code, int) else 1
                system_exit = repr(exc.code)
                print(f"suites_collect: pytest ended with SystemExit({exc.code!r})", file=sys.stderr)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
    print(
        json.dumps(
            {
                "exit_code": int(code),
                "pytest_version": pytest.__version__,
                "items": recorder.items,
                "errors": recorder.errors,
                "system_exit": system_exit,
            }
        )
    )


main()
