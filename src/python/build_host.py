# build_host: the official `lbp build` of several candidates, from one
# interpreter that imported the SDK's command-line package once.
#
# Usage: python -I <bytecode options> -c <this> JOBS
#
#   JOBS  a JSON object {"width": N, "jobs": [JOB, ...]}; a JOB is
#         {"cwd": DIR, "out": DIR, "stdout": FILE, "stderr": FILE,
#          "env": {NAME: VALUE}, "timeout_secs": S}
#
# Importing `langbot_plugin.cli` (what `python -m langbot_plugin.cli` imports
# before it runs: its `__main__` is `from langbot_plugin.cli import main;
# main()`) costs about half a second of CPU, most of a build's. This process
# imports it once, then forks one child per job, at most `width` at a time.
# Each child is what `python -I -m langbot_plugin.cli build -o OUT` started
# from DIR would be: its own process group, stdin /dev/null, stdout and stderr
# the job's files (the verifier created them and caps them afterwards), DIR
# its working directory, exactly the job's environment (which differs from
# this process's only in HOME and TMPDIR), `sys.argv` the module's command
# line, and the package's `__main__` run by `runpy` as `-m` runs it. The
# child ends as the interpreter would: a SystemExit's code, 1 with the
# traceback on stderr for any other exception, atexit handlers run.
#
# The parent stops a child's group at its timeout (TERM, then KILL 5 s
# later), and stops what a child left in its group once it exited (TERM,
# KILL 5 s later: `stragglers_killed`). Stopped itself with TERM (the
# verifier's timeout or an interrupt), it KILLs every running build's group. Prints
# one JSON line per job, in job order, once all ended:
#   {"pid": P, "code": C or null, "signal": S or null, "timed_out": bool,
#    "stragglers_killed": bool, "duration_ms": MS}
# or {"error": TEXT} for a job that could not be started.
import json
import os
import signal
import sys
import time

import langbot_plugin.cli  # noqa: F401  (the import every build shares)

GRACE = 5.0


def run_child(job):
    """In the forked child: become the build, never return."""
    code = 1
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
            f = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.dup2(f, fd)
            os.close(f)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        import tempfile

        tempfile.tempdir = None
        sys.argv = ["-m", "build", "-o", job["out"]]
        import runpy

        try:
            runpy.run_module("langbot_plugin.cli", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        import atexit

        atexit._run_exitfuncs()
    except BaseException:  # what an uncaught exception does to an interpreter
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def stop_stragglers(pgid):
    """After a build exited: TERM what is left in its group, KILL it once
    the grace is over; True when anything was left."""
    if not group_alive(pgid):
        return False
    kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.02)
    kill_group(pgid, signal.SIGKILL)
    return True


RUNNING = {}  # pid -> {"index", "started", "deadline", "termed"}


def stop_all(signum, frame):
    """The verifier stops this process's group (its timeout, an interrupt):
    every build's group goes with it."""
    for pid in list(RUNNING):
        kill_group(pid, signal.SIGKILL)
    os._exit(128 + signum)


def start(i, job):
    """Forks job i's child; its pid, or an error result."""
    # TERM is blocked across the fork: the child must never run this
    # process's handler (`stop_all`); it unblocks once TERM is its default.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pid = os.fork()
    except OSError as e:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        return None, {"error": f"cannot fork: {e}"}
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        run_child(job)
    try:
        os.setpgid(pid, pid)  # as the child does: no moment where it shares ours
    except OSError:
        pass
    now = time.monotonic()
    RUNNING[pid] = {"index": i, "started": now, "deadline": now + float(job["timeout_secs"]), "termed": None}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    return pid, None


def enforce_timeouts():
    """TERM each build's group at its timeout, KILL it once the grace is over."""
    now = time.monotonic()
    for pid, r in RUNNING.items():
        if r["termed"] is None and now >= r["deadline"]:
            r["termed"] = now
            kill_group(pid, signal.SIGTERM)
        elif r["termed"] is not None and now >= r["termed"] + GRACE:
            kill_group(pid, signal.SIGKILL)


def main():
    signal.signal(signal.SIGTERM, stop_all)
    spec = json.loads(sys.argv[1])
    jobs = spec["jobs"]
    width = max(1, int(spec.get("width", 1)))
    results = [None] * len(jobs)
    waiting = list(range(len(jobs)))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    while waiting or RUNNING:
        while waiting and len(RUNNING) < width:
            i = waiting.pop(0)
            _, error = start(i, jobs[i])
            if error is not None:
                results[i] = error
        enforce_timeouts()
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.01)
            continue
        r = RUNNING.pop(pid, None)
        if r is None:
            continue
        duration_ms = int((time.monotonic() - r["started"]) * 1000)
        timed_out = r["termed"] is not None
        if timed_out:
            kill_group(pid, signal.SIGKILL)  # the rest of a stopped build
        results[r["index"]] = {
            "pid": pid,
            "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timed_out": timed_out,
            "stragglers_killed": not timed_out and stop_stragglers(pid),
            "duration_ms": duration_ms,
        }
    for r in results:
        print(json.dumps(r))


main()
