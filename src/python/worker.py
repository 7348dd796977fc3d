"""The worker of the `worker-isolation` gate.

Run by the genuine interpreter as `python -I -B -c <this source + launcher>`;
the harness appends the launcher line `main(Hooks())` (a hostile test variant
appends its own subclass of `Hooks` instead). It uses the SDK's real daemon
hub, `langbot_plugin.api.agent_tools.daemon`:

* `AgentRuntimeDaemonHub().start(host="127.0.0.1", port=0, token=TOKEN)`: the
  worker's own listener, with its own token;
* a subclass of the SDK's own `AgentRuntimeDaemonClient` connected to it with
  the given `daemon_id` (the requirement documents' "display id"). Its
  `run_job` launches a real child process (which starts a grandchild in the
  same process group) and relays the child's lines as run events.

The child's lines are a LOCAL PROTOCOL FIXTURE, labelled so in every event: no
vendor CLI, model or account is involved.

Configuration comes from the worker's own environment variables:
`VCC_WORKER_NAME`, `VCC_WORKER_ID` (tag written into every file the worker
writes), `VCC_WORKER_TOKEN_FILE` (a 0600 file holding the token, at least 32
characters, so the token is on no command line and in no environment), `VCC_WORKER_DAEMON_ID`,
`VCC_WORKER_DATA` (private data root); HOME and TMPDIR are private too.

Commands arrive as JSON lines on stdin; every answer is one JSON line on
stdout (logging goes to stderr):

  {"cmd": "run", "job", "conversation_id", "nonce", "events", "interval_ms"}
      -> {"event": "job.accepted"}, then {"event": "job.event", "job",
         "data": <hub event>} per event, then {"event": "job.finished"}
  {"cmd": "cancel", "job"}   -> {"event": "job.cancelled", "job"}
  {"cmd": "status"}          -> {"event": "status", "jobs", "daemons"}
  {"cmd": "peek", "path"}    -> {"event": "peek", "path", "readable", "error"}
  {"cmd": "stop"}            -> {"event": "stopped"}, then the process exits
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata

import langbot_plugin
from langbot_plugin.api.agent_tools import daemon as sdk_daemon

FIXTURE_LABEL = "local protocol fixture (not a vendor CLI, model or account reply)"

# The job's child: starts a grandchild (same process group), writes its tag
# file in its working directory (the job folder under the data root), emits
# one JSON line per event, then stops and reaps its grandchild.
CHILD_SOURCE = r"""
import json, os, subprocess, sys, time
nonce, conversation_id, count, interval_ms, grandchild_source, tag = sys.argv[1:7]
count, interval_ms = int(count), int(interval_ms)
gc = subprocess.Popen([sys.executable, "-I", "-B", "-c", grandchild_source],
                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
with open("child-%d.txt" % os.getpid(), "w") as f:
    f.write(tag + "\n")
for seq in range(count):
    print(json.dumps({"seq": seq, "nonce": nonce, "conversation_id": conversation_id,
                      "pid": os.getpid(), "pgid": os.getpgid(0),
                      "grandchild_pid": gc.pid}), flush=True)
    time.sleep(interval_ms / 1000.0)
gc.terminate()
gc.wait()
print(json.dumps({"done": True, "nonce": nonce, "count": count,
                  "output": "fixture reply %s after %d events" % (nonce, count)}), flush=True)
"""

# The grandchild: stays in the child's process group and waits to be stopped.
GRANDCHILD_SOURCE = r"""
import time
while True:
    time.sleep(0.2)
"""

STOP_GRACE = 2.0


class Hooks:
    """Behaviour a hostile test variant may replace; these are the genuine ones."""

    child_source = CHILD_SOURCE
    grandchild_source = GRANDCHILD_SOURCE
    # Stop a running job when the hub sends `run.cleanup`: the hub's only
    # cancellation signal (it forgets the job, then sends cleanup).
    cancel_on_cleanup = True

    def hub_token(self, token):
        """The token the hub is started with."""
        return token

    def child_env(self, env):
        """The environment of a job's child: the worker's own, unchanged."""
        return env

    async def on_job_cancelled(self, proc):
        """A job was cancelled: stop its whole process group."""
        await stop_group(proc)


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def write_tag(folder, tag):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".vcc-worker"), "w") as f:
        f.write(tag + "\n")


def live_members(pgid):
    """Pids of process group `pgid` that are not zombies (from /proc).

    A zombie has exited; an orphaned one waits for init to reap it, which may
    take a while, so `killpg(pgid, 0)` alone would over-report.
    """
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            live.append(int(entry))
    return live


async def stop_group(proc):
    """TERM the job's process group, wait up to STOP_GRACE for it to empty, then KILL."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + STOP_GRACE
    while live_members(pgid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if live_members(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    await proc.wait()


class FixtureDaemon(sdk_daemon.AgentRuntimeDaemonClient):
    """The SDK's daemon client; its jobs run a real child process."""

    def __init__(self, hooks, tag, data_root, **kwargs):
        super().__init__(**kwargs)
        self.hooks = hooks
        self.tag = tag
        self.data_root = data_root
        self.procs = {}

    async def run_job(self, job_id, payload):
        job_dir = os.path.join(self.data_root, "jobs", str(payload.get("job", "job")))
        os.makedirs(job_dir, exist_ok=True)
        stderr = open(os.path.join(job_dir, "child.stderr"), "wb")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-B", "-c", self.hooks.child_source,
            str(payload.get("nonce", "")),
            str(payload.get("conversation_id", "")),
            str(int(payload.get("events", 10))),
            str(int(payload.get("interval_ms", 100))),
            self.hooks.grandchild_source,
            self.tag,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=job_dir,
            env=self.hooks.child_env(dict(os.environ)),
            process_group=0,
        )
        stderr.close()
        self.procs[job_id] = proc
        try:
            await self.emit_event(job_id, {
                "type": "run.started",
                "data": {"daemon_job_id": job_id, "child_pid": proc.pid,
                         "label": FIXTURE_LABEL},
            })
            async for line in proc.stdout:
                msg = json.loads(line)
                msg["daemon_job_id"] = job_id
                msg["label"] = FIXTURE_LABEL
                kind = "run.completed" if msg.get("done") else "run.output"
                await self.emit_event(job_id, {"type": kind, "data": msg})
            await proc.wait()
        except asyncio.CancelledError:
            await self.hooks.on_job_cancelled(proc)
            raise
        finally:
            self.procs.pop(job_id, None)

    async def _handle_message(self, raw_message):
        try:
            message = json.loads(raw_message)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("type") == "run.cleanup":
            task = self._job_tasks.get(str(message.get("job_id") or ""))
            if task is not None and not task.done() and self.hooks.cancel_on_cleanup:
                task.cancel()
        await super()._handle_message(raw_message)


class Worker:
    def __init__(self, hooks):
        self.hooks = hooks
        self.name = os.environ["VCC_WORKER_NAME"]
        self.tag = "vcc-worker-id " + os.environ["VCC_WORKER_ID"]
        with open(os.environ["VCC_WORKER_TOKEN_FILE"], encoding="ascii") as f:
            self.token = f.read().strip()
        self.daemon_id = os.environ["VCC_WORKER_DAEMON_ID"]
        self.data_root = os.environ["VCC_WORKER_DATA"]
        self.hub = sdk_daemon.AgentRuntimeDaemonHub()
        self.daemon = None
        self.jobs = {}
        self.states = {}

    async def start(self):
        if len(self.token) < 32:
            raise SystemExit("the token in VCC_WORKER_TOKEN_FILE must be at least 32 characters")
        for folder in (os.environ["HOME"], os.environ["TMPDIR"], self.data_root):
            write_tag(folder, self.tag)
        await self.hub.start(host="127.0.0.1", port=0, token=self.hooks.hub_token(self.token))
        self.daemon = FixtureDaemon(
            self.hooks, self.tag, self.data_root,
            url=self.hub.endpoint, daemon_id=self.daemon_id, token=self.token,
            reconnect_delay=0.5, metadata={"worker": self.name},
        )
        self.daemon_task = asyncio.create_task(self.daemon.run_forever())
        await self.hub.wait_for_daemon(self.daemon_id, 20.0)
        emit({
            "event": "ready",
            "name": self.name,
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
            "endpoint": self.hub.endpoint,
            "port": int(self.hub.endpoint.rsplit(":", 1)[1]),
            "daemon_id": self.daemon_id,
            "daemons": [d["daemon_id"] for d in await self.hub.list_daemons()],
            "sdk_version": metadata.version("langbot-plugin"),
            "sdk_package": os.path.dirname(langbot_plugin.__file__),
            "hub_module": sdk_daemon.__name__,
            "hub_file": sdk_daemon.__file__,
            "hub_class": type(self.hub).__qualname__,
            "client_class": sdk_daemon.AgentRuntimeDaemonClient.__qualname__,
        })

    async def consume(self, job, payload):
        count = 0
        try:
            async for event in self.hub.run_job(
                daemon_id=self.daemon_id, payload=payload, tools=None, timeout=120.0
            ):
                count += 1
                emit({"event": "job.event", "job": job, "data": event})
            self.states[job] = "finished"
            emit({"event": "job.finished", "job": job, "events": count})
        except asyncio.CancelledError:
            self.states[job] = "cancelled"
            raise
        except Exception as exc:  # reported, never raised past the command loop
            self.states[job] = "failed"
            emit({"event": "job.failed", "job": job, "error": repr(exc)})

    async def handle(self, cmd):
        kind = cmd.get("cmd")
        if kind == "run":
            job = str(cmd["job"])
            payload = {k: cmd[k] for k in ("conversation_id", "nonce", "events", "interval_ms")}
            payload["job"] = job
            self.states[job] = "running"
            self.jobs[job] = asyncio.create_task(self.consume(job, payload))
            emit({"event": "job.accepted", "job": job})
        elif kind == "cancel":
            job = str(cmd["job"])
            task = self.jobs.get(job)
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                self.states[job] = "cancelled"
            emit({"event": "job.cancelled", "job": job, "state": self.states.get(job)})
        elif kind == "status":
            emit({
                "event": "status",
                "jobs": dict(self.states),
                "daemons": [d["daemon_id"] for d in await self.hub.list_daemons()],
                "children": {k: p.pid for k, p in self.daemon.procs.items()},
            })
        elif kind == "peek":
            path = str(cmd["path"])
            try:
                entries = sorted(os.listdir(path))
                with open(os.path.join(path, ".vcc-worker")) as f:
                    f.read()
                emit({"event": "peek", "path": path, "readable": True, "entries": len(entries)})
            except OSError as exc:
                emit({"event": "peek", "path": path, "readable": False,
                      "error": "%s: %s" % (type(exc).__name__, exc.strerror)})
        elif kind == "stop":
            await self.stop()
            emit({"event": "stopped"})
            return False
        else:
            emit({"event": "error", "error": "unknown command %r" % (kind,)})
        return True

    async def stop(self):
        for task in list(self.jobs.values()):
            if not task.done():
                task.cancel()
        await asyncio.gather(*self.jobs.values(), return_exceptions=True)
        if self.daemon is not None:
            job_tasks = list(self.daemon._job_tasks.values())
            for task in job_tasks:
                task.cancel()
            await asyncio.gather(*job_tasks, return_exceptions=True)
            self.daemon_task.cancel()
            await asyncio.gather(self.daemon_task, return_exceptions=True)
        await self.hub.stop()


def read_stdin(loop, queue):
    for line in sys.stdin:
        loop.call_soon_threadsafe(queue.put_nowait, line)
    loop.call_soon_threadsafe(queue.put_nowait, None)


async def amain(hooks):
    worker = Worker(hooks)
    await worker.start()
    queue = asyncio.Queue()
    loop = asyncio.get_running_loop()
    threading.Thread(target=read_stdin, args=(loop, queue), daemon=True).start()
    while True:
        line = await queue.get()
        if line is None:
            await worker.stop()
            return
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
        except ValueError as exc:
            emit({"event": "error", "error": "not JSON: %s" % exc})
            continue
        if not await worker.handle(cmd):
            return


def main(hooks):
    asyncio.run(amain(hooks))
