# build_host: the official `lbp build` of several candidates, from one
# interpreter that imported the SDK's command-line package once.
#
# Usage: python -I <bytecode options> -c <this>   (JOBS on stdin)
#
#   JOBS  a JSON object {"width": N, "pages_budget_secs": S, "jobs": [JOB, ...]}; a JOB is
#         {"argv": [PROGRAM, ARG...], "cwd": DIR, "out": DIR,
#          "stdout": FILE, "stderr": FILE, "env": {NAME: VALUE},
#          "timeout_secs": S}; ARGV is the build's own command line
#         (`python -I <bytecode options> -m langbot_plugin.cli build -o OUT`)
#
# Importing `langbot_plugin.cli` (what `python -m langbot_plugin.cli` imports
# before it runs: its `__main__` is `from langbot_plugin.cli import main;
# main()`) costs about half a second of CPU, most of a build's. This process
# imports it once, then forks one child per job, at most `width` at a time.
# Each child is what ARGV started from DIR would be: its own process group,
# stdin /dev/null, stdout and stderr the job's files (the verifier created
# them and caps them afterwards), DIR its working directory, exactly the
# job's environment (which differs from this process's only in HOME and
# TMPDIR), `sys.argv` the module's command line, and the package's `__main__`
# run by `runpy` as `-m` runs it, after writing to its stdout and stderr what
# the import printed (what a fresh interpreter would have printed first). The
# child ends as the interpreter would: a
# SystemExit's code, 1 with the traceback on stderr for any other exception,
# atexit handlers run.
#
# What the import read could differ for a build: the SDK reads files relative
# to the working directory at import time (0.6 and 0.7: `RuntimeSettings()`
# reads `data/.env`). So the import runs with every path it looks up
# recorded (open, stat, lstat, access, listdir, scandir). A child whose
# working directory holds any relative path the import looked up, or any
# child when the import looked up anything under the host's HOME or TMPDIR,
# does not use the import: it replaces itself with ARGV (`os.execve`), a
# fresh interpreter, and says why (`fresh`). HOME and TMPDIR are fresh empty
# folders for the host and for each build alike, so a value the import read
# without looking anything up names an equally empty folder.
#
# The parent stops a child's group at its timeout (TERM, then KILL 5 s
# later), and stops what a child left in its group once it exited (TERM,
# KILL 5 s later: `stragglers_killed`). Stopped itself with TERM (the
# verifier's timeout or an interrupt), it KILLs every running build's group.
# Before the builds, the host computes each job's `spec.pages` as the SDK's
# build writes them (`build_pages` of `manifest_pages.py`, over DIR's
# manifest.yaml and component manifests: YAML only, no plugin code), each in
# a forked child of its own in its own process group, with the job's
# environment, its output on the host's stderr and its answer on a pipe,
# `width` at a time and all within PAGES_BUDGET seconds (the spec's
# "pages_budget_secs"; a job whose child has not answered by then has
# none): the `archive-members` gate's manifest probe takes them from here
# instead of importing the SDK again, and computes itself any that are
# missing. Never in this process, whose state every build forks from.
#
# Prints one JSON line per job, in job order, once all ended:
#   {"pid": P, "code": C or null, "signal": S or null, "timed_out": bool,
#    "stragglers_killed": bool, "duration_ms": MS, "cpu_ms": MS,
#    "fresh": REASON or null, "build_pages": {"report": DOC or null}}
# ("build_pages" only when its child answered; DOC as `build_pages` returns
# it) or {"error": TEXT} for a job that could not be started; then one line
# {"import_lookups": [PATH...], "signals": [RECORD...]}: the relative paths
# the import looked up, and every signal this process sent and every build
# it reaped (the evidence's SignalRecord, at_ms from this process's start).
import gc
import json
import os
import select
import signal
import sys
import time

GRACE = 5.0
T0 = time.monotonic()
# Every signal this process sends and every build it reaps, in the shape of
# the evidence's `signals` (src/evidence/model.rs, SignalRecord), its clock
# this process's start; the verifier adopts them into the run's journal.
SIGNALS = []
COMMANDS = {}  # pid -> the build's command line, as the journal shows it
STARTS = {}  # pid -> its /proc start time, read when it was forked


def ms():
    return int((time.monotonic() - T0) * 1000)


def proc_start_time(pid):
    """/proc/<pid>/stat field 22 (start time in clock ticks), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b") ", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def note(action, pid, why, group=None, started_ms=None):
    record = {
        "at_ms": ms(), "action": action, "pid": pid, "start_time": STARTS.get(pid),
        "ppid": os.getpid(), "group": group, "cmdline": COMMANDS.get(pid, "")[:200],
        "gate": None, "why": why, "descends_from_run": True,
    }
    if started_ms is not None:
        record["started_ms"] = started_ms
    SIGNALS.append(record)


class Lookups:
    """Every path the import looks up."""

    def __init__(self):
        self.paths = set()
        self.active = True
        self.printed = {1: b"", 2: b""}  # what the import wrote to stdout, stderr

    def path(self, p):
        """Records `p`; a lookup it cannot read as a path (a bytes path
        that does not decode) counts as the working directory itself,
        which every candidate has."""
        if not self.active or isinstance(p, int):
            return
        if p is None:  # listdir() and scandir() without an argument
            p = "."
        try:
            self.paths.add(os.fsdecode(p))
        except Exception:
            self.paths.add(".")


def import_recorded():
    """Imports `langbot_plugin.cli` with its path lookups recorded; returns
    the record."""
    seen = Lookups()

    def audit(event, args):
        if event in ("open", "os.listdir", "os.scandir") and args:
            seen.path(args[0])

    sys.addaudithook(audit)
    saved = {}

    # `os.stat in os.supports_dir_fd` and the like are how code asks what a
    # function supports (SDK 0.7 does, at import): each recorder stands in
    # those sets for the function it wraps while the import runs.
    capability_sets = [getattr(os, n) for n in ("supports_dir_fd", "supports_fd",
                                                 "supports_follow_symlinks", "supports_effective_ids")
                       if isinstance(getattr(os, n, None), set)]

    def wrap(name):
        real = getattr(os, name)
        saved[name] = real

        def recorded(*args, **kwargs):
            seen.path(args[0] if args else kwargs.get("path"))
            return real(*args, **kwargs)

        setattr(os, name, recorded)
        for caps in capability_sets:
            if real in caps:
                caps.add(recorded)
                caps.discard(real)

    def unwrap(name, real):
        recorded = getattr(os, name)
        setattr(os, name, real)
        for caps in capability_sets:
            if recorded in caps:
                caps.discard(recorded)
                caps.add(real)

    for name in ("stat", "lstat", "access"):
        wrap(name)

    # What the import prints (SDK 0.7 warns on stderr about its platform) is
    # what each build's fresh interpreter would print first: kept, and
    # written by each child before its build.
    kept = [os.dup(1), os.dup(2)]
    capture = []
    for fd in (1, 2):
        r = os.memfd_create(f"import-{fd}")
        capture.append(r)
        os.dup2(r, fd)
    try:
        import langbot_plugin.cli  # noqa: F401  (the import every build shares)
    finally:
        seen.active = False
        for name, real in saved.items():
            unwrap(name, real)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, old, r in zip((1, 2), kept, capture):
            os.dup2(old, fd)
            os.close(old)
            os.lseek(r, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(r, 65536):
                chunks.append(chunk)
            os.close(r)
            seen.printed[fd] = b"".join(chunks)
            os.write(fd, seen.printed[fd])
    return seen


def under_host_roots(seen, home, tmp):
    """Why no build may use the import (it looked up something under the
    host's HOME or TMPDIR, which differ for each build), or None. Once, in
    the host."""
    roots = [r for r in (home, tmp) if r]
    roots += [os.path.realpath(r) for r in roots]
    prefixes = [r.rstrip(os.sep) + os.sep for r in roots]
    for p in sorted(q for q in seen.paths if os.path.isabs(q)):
        for q in (p, os.path.realpath(p)):
            if q in roots or any(q.startswith(prefix) for prefix in prefixes):
                return f"the import looked up {p}, under the build host's HOME or TMPDIR"
    return None


def fresh_reason(seen, shared_reason):
    """Why this child (already in its working directory) must not use the
    import, or None."""
    if shared_reason is not None:
        return shared_reason
    for p in sorted(q for q in seen.paths if q and not os.path.isabs(q)):
        if os.path.lexists(p):
            return f"the import looked up {p} relative to the working directory, which this candidate has"
    return None


def exit_now(code):
    """In a forked child: ends it with `code`, its stderr flushed first
    (nothing else of this process's exit runs)."""
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(code)


def own_group_no_stdin():
    """In a forked child: a process group of its own, stdin /dev/null."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def run_child(job, seen, shared_reason):
    """In the forked child: become the build, never return."""
    code = 1
    try:
        own_group_no_stdin()
        for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
            f = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.dup2(f, fd)
            os.close(f)
        os.chdir(job["cwd"])
        reason = fresh_reason(seen, shared_reason)
        if reason is not None:
            os.write(3, (reason + "\n").encode())
            os.execve(job["argv"][0], job["argv"], job["env"])
        os.close(3)
        for fd in (1, 2):
            os.write(fd, seen.printed[fd])
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
        finalize_code = finalize()
        if finalize_code is not None:
            code = finalize_code
    except BaseException:  # what an uncaught exception does to an interpreter
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        exit_now(code)


def finalize():
    """What an interpreter does at exit: waits for its non-daemon threads,
    runs the atexit handlers, flushes stdout; 120 when that flush fails (as
    `Py_RunMain` exits), else None."""
    if "threading" in sys.modules:
        sys.modules["threading"]._shutdown()
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception as e:
        try:
            print(f"Exception ignored in: {sys.stdout!r}\n{type(e).__name__}: {e}", file=sys.stderr)
        except Exception:
            pass
        return 120
    return None


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def kill_group(pgid, sig, why):
    if not group_alive(pgid):
        return
    note("SIGTERM" if sig == signal.SIGTERM else "SIGKILL", pgid, why, group=pgid)
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def stop_stragglers(pgid):
    """After a build exited: TERM what is left in its group, KILL it once
    the grace is over; True when anything was left."""
    if not group_alive(pgid):
        return False
    kill_group(pgid, signal.SIGTERM, "after-exit")
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.02)
    kill_group(pgid, signal.SIGKILL, "after-exit")
    return True


RUNNING = {}  # pid -> {"index", "started", "deadline", "termed", "said"}


def stop_all(signum, frame):
    """The verifier stops this process's group (its timeout, an interrupt):
    every build's group goes with it."""
    for pid in list(RUNNING):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(128 + signum)


def forked(command, entry, body):
    """Forks a child in a process group of its own that runs `body(w)` and
    never returns, `w` the write end of a pipe whose read end `r` the
    parent keeps. TERM is blocked across the fork: the child must never run
    this process's handler (`stop_all`); it unblocks once TERM is its
    default. In the parent the child is named `command` for the journal and
    is in RUNNING (`entry(r)`) before TERM is unblocked, so `stop_all`
    always finds it. Returns (pid, r); raises OSError when it cannot fork."""
    r, w = os.pipe()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.close(r)
        os.close(w)
        raise
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.close(r)
        gc.enable()  # off in this process only (see `main`)
        body(w)
    os.close(w)
    try:
        os.setpgid(pid, pid)  # as the child does: no moment where it shares ours
    except OSError:
        pass
    COMMANDS[pid] = command
    STARTS[pid] = proc_start_time(pid)
    RUNNING[pid] = entry(r)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    return pid, r


def start(i, job, seen, shared_reason):
    """Forks job i's child; None, or an error result. Its pipe is the
    child's fd 3: why it went fresh."""

    def child(said_w):
        if said_w != 3:
            os.dup2(said_w, 3, inheritable=False)
            os.close(said_w)
        run_child(job, seen, shared_reason)

    def entry(said_r):
        now = time.monotonic()
        return {"index": i, "started": now, "started_ms": ms(),
                "deadline": now + float(job["timeout_secs"]),
                "termed": None, "killed": False, "said": said_r}

    try:
        forked(" ".join(job["argv"]), entry, child)
    except OSError as e:
        return {"error": f"cannot fork: {e}"}
    return None


def all_pages(jobs, width, budget):
    """Each job's `spec.pages` ({"report": DOC or null}), or None where its
    child gave no answer: one forked child per job, `width` at a time, all
    within `budget` seconds together (what is still running then is
    killed, what never started is not computed: the `archive-members`
    probe computes those itself), so the builds start at most `budget`
    seconds late whatever a manifest makes its child do. The host's stderr
    says why a job has none."""
    answers = [None] * len(jobs)
    waiting = list(range(len(jobs)))
    running = {}  # the answer pipe's read end -> the child
    deadline = time.monotonic() + budget
    while waiting or running:
        while waiting and len(running) < width and time.monotonic() < deadline:
            i = waiting.pop(0)
            child = fork_pages(i, jobs[i])
            if child is not None:
                running[child["r"]] = child
        left = deadline - time.monotonic()
        if left <= 0:
            for child in running.values():
                kill_group(child["pid"], signal.SIGKILL, "timeout")
                end_pages(child, True)
            for i in waiting:
                print(f"build host: pages of {jobs[i]['cwd']} not computed: "
                      f"{budget:.0f} s for every candidate's pages were spent", file=sys.stderr)
            break
        if not running:
            continue
        for r in select.select(list(running), [], [], left)[0]:
            chunk = os.read(r, 65536)
            if chunk:
                running[r]["chunks"].append(chunk)
            else:
                child = running.pop(r)
                answers[child["i"]] = end_pages(child, False)
    return answers


def fork_pages(i, job):
    """Forks job i's pages child: its state here, or None."""
    started_ms = ms()
    try:
        pid, r = forked(f"build pages of {job['cwd']}", lambda r: {"pages": True},
                        lambda w: pages_child(job, w))
    except OSError as e:
        print(f"build host: cannot fork the pages of {job['cwd']}: {e}", file=sys.stderr)
        return None
    return {"i": i, "pid": pid, "r": r, "cwd": job["cwd"], "chunks": [], "started_ms": started_ms}


def end_pages(child, killed):
    """Reaps a pages child (its pipe at end of file, or `killed`); its
    answer, or None."""
    pid = child["pid"]
    os.close(child["r"])
    _, status = os.waitpid(pid, 0)
    note("reap", pid, "timeout" if killed else "exited", started_ms=child["started_ms"])
    if not killed:
        stop_stragglers(pid)
    del RUNNING[pid]
    try:
        answer = json.loads(b"".join(child["chunks"])) if status == 0 and not killed else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or "report" not in answer:
        why = "stopped: the pages' time was spent" if killed else f"wait status {status}"
        print(f"build host: no pages of {child['cwd']} ({why})", file=sys.stderr)
        return None
    return answer


def pages_child(job, w):
    """In the forked child: `build_pages` of the job's folder on pipe `w`,
    never return."""
    code = 1
    try:
        own_group_no_stdin()
        os.dup2(2, 1)  # what the SDK prints goes to the host's stderr
        os.environ.clear()
        os.environ.update(job["env"])
        os.chdir(job["cwd"])
        answer = json.dumps({"report": build_pages(os.path.join(job["cwd"], "manifest.yaml"))})
        with os.fdopen(w, "wb") as f:
            f.write(answer.encode())
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        exit_now(code)


def enforce_timeouts():
    """TERM each build's group at its timeout, KILL it once the grace is over."""
    now = time.monotonic()
    for pid, r in RUNNING.items():
        if r["termed"] is None and now >= r["deadline"]:
            r["termed"] = now
            kill_group(pid, signal.SIGTERM, "timeout")
        elif r["termed"] is not None and not r["killed"] and now >= r["termed"] + GRACE:
            r["killed"] = True
            kill_group(pid, signal.SIGKILL, "timeout")


def reaped(pid, status, usage):
    """The result of a build whose child was just reaped (its group stays
    in RUNNING, for `stop_all`, until what it left is stopped)."""
    r = RUNNING[pid]
    note("reap", pid, "timeout" if r["termed"] is not None else "exited", started_ms=r["started_ms"])
    with os.fdopen(r["said"], "rb") as f:
        said = f.read().decode("utf-8", "replace").strip() or None
    timed_out = r["termed"] is not None
    if timed_out:
        kill_group(pid, signal.SIGKILL, "timeout")  # the rest of a stopped build
    stragglers = not timed_out and stop_stragglers(pid)
    del RUNNING[pid]
    return r["index"], {
        "pid": pid,
        "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "stragglers_killed": stragglers,
        "duration_ms": int((time.monotonic() - r["started"]) * 1000),
        "cpu_ms": int((usage.ru_utime + usage.ru_stime) * 1000),
        "fresh": said,
    }


def main():
    signal.signal(signal.SIGTERM, stop_all)
    spec = json.load(sys.stdin)
    # As the `gc` documentation has a process that forks without exec: no
    # collection in this process, the import's objects frozen before any
    # fork (a child's collections never scan them, so their pages stay
    # shared), collection back on early in each child. About a tenth of the
    # import's CPU was its collections.
    gc.disable()
    seen = import_recorded()
    gc.freeze()
    shared_reason = under_host_roots(seen, os.environ.get("HOME"), os.environ.get("TMPDIR"))
    jobs = spec["jobs"]
    width = max(1, int(spec.get("width", 1)))
    results = [None] * len(jobs)
    waiting = list(range(len(jobs)))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pages = all_pages(jobs, width, float(spec["pages_budget_secs"]))
    while waiting or RUNNING:
        while waiting and len(RUNNING) < width:
            i = waiting.pop(0)
            results[i] = start(i, jobs[i], seen, shared_reason)
        enforce_timeouts()
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.01)
            continue
        if pid in RUNNING:
            i, result = reaped(pid, status, usage)
            results[i] = result
    for r, p in zip(results, pages):
        if p is not None and r is not None and "error" not in r:
            r["build_pages"] = p
        print(json.dumps(r))
    print(json.dumps({"import_lookups": sorted(p for p in seen.paths if p and not os.path.isabs(p)),
                      "signals": SIGNALS}))


main()
