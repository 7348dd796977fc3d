# The first process of a sandboxed step (pid 1 of its pid namespace, bwrap
# --as-pid-1): starts the step as pid 2, its child, reaps orphans as bwrap's
# own init does, and when the step exits lists every process still in the
# namespace into argv[1] (JSON) before exiting with the step's status as
# bwrap's init gives it (the exit code, or 128 + the signal). Its own exit
# then ends the namespace. Standard library only (run with -I -S).
#
# Without bubblewrap the same script is the step's supervisor (REPORT "-"):
# a plain process between the verifier and the step, so that the step's
# parent (`os.getppid()`) is never the verifier. It surveys nothing (the
# machine's /proc is not the step's) and writes no report.
import json
import os
import signal
import sys
import time


def stat_of(pid):
    with open("/proc/%s/stat" % pid, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); ppid 4, pgrp 5, session 6, starttime 22.
    return rest[0], int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19])


def cmdline_of(pid):
    with open("/proc/%s/cmdline" % pid, "rb") as f:
        raw = f.read()
    return " ".join(p.decode("utf-8", "replace") for p in raw.split(b"\0") if p)


def survey():
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    found = []
    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)):
        if not name.isdigit() or name == "1":
            continue
        try:
            state, ppid, pgid, sid, start = stat_of(name)
            cmdline = cmdline_of(name)
        except (OSError, ValueError, IndexError):
            continue
        if state in ("Z", "X"):
            continue
        found.append({
            "pid": int(name), "ppid": ppid, "pgid": pgid, "sid": sid, "state": state,
            "cmdline": cmdline, "ms_alive": int(max(0.0, uptime - start / ticks) * 1000),
        })
    return found


def reap_orphans():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    report, argv = sys.argv[1], sys.argv[2:]
    # The interpreter's own dispositions are not the step's: as bwrap's init
    # leaves them, every signal is at its default (for pid 1: ignored from
    # inside the namespace).
    for name in ("SIGINT", "SIGPIPE", "SIGXFSZ"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    leader = os.fork()
    if leader == 0:
        try:
            os.execv(argv[0], argv)
        except OSError as e:
            os.write(2, ("bwrap: execvp %s: %s\n" % (argv[0], e.strerror)).encode())
        os._exit(1)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == leader:
            break
    reap_orphans()
    if report == "-":
        finish(status)
    result = {"leader_pid": leader, "left_running": survey()}
    with open(report + ".part", "w") as f:
        json.dump(result, f)
    os.replace(report + ".part", report)
    finish(status)


def finish(status):
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


main()
