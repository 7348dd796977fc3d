"""Host of the `shared-runtime` gate (verify-coding-candidates).

Run with the SDK 0.7 interpreter: `python -I shared_runtime_host.py SPEC OUT`.
It starts `python -m langbot_plugin.cli rt` in the `shared` runtime profile,
attaches installations A and B of one archive (one digest) with
`execution_mode: shared-runtime-v1`, each with its own binding and its own
canary configuration, invokes every planned component for A then B, then both
at once (a Parser: `parse_document` of a small document uploaded by
`__file_chunk` under that installation's binding before each call), scans
the worker's live objects (SIGUSR1 to the boot hook our nsjail
wrapper installs: docs/shared-runtime.md), revokes A, calls B again, scans
again, and writes what it saw to OUT (JSON). It judges nothing: the gate's
decide functions do. It never signs anything.
"""

import asyncio
import base64
import copy
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid

import websockets

# Our nsjail, first on the runtime's PATH. A worker launch gets the scan
# agent and the boot hook; a dependency launch (`python -m pip install
# --target /dependency-env`) gets DIR/wheelhouse read-only at JAIL_WHEELHOUSE
# (the SDK's index variable names it), loses the SDK's
# `--disable_clone_newnet` (no network: only the wheelhouse can be
# installed) and keeps pip's output, which the SDK discards. Both get the
# base interpreter's prefix when the SDK's own mounts miss it. Every launch
# is appended to launches.jsonl, as the SDK built it and as it is run.
WRAPPER_BODY = r"""
import json, os, sys
given = sys.argv[1:]
args, kind = given, "other"
if "--" in given:
    sep = given.index("--")
    head, cmd = given[:sep], given[sep + 1:]
    extra = []
    for p in EXTRA:
        extra += ["--bindmount_ro", p + ":" + p]
    if "langbot_plugin.cli.__init__" in cmd:
        kind = "worker"
        i = cmd.index("-m")
        cmd = cmd[:i] + ["-c", BOOT] + cmd[i + 2:]
        args = ["--bindmount_ro", AGENT + ":/vcc-agent"] + extra + head + ["--"] + cmd
    elif cmd[1:4] == ["-m", "pip", "install"]:
        kind = "pip"
        head = ["--quiet" if a == "--really_quiet" else a for a in head if a != "--disable_clone_newnet"]
        if WHEELHOUSE:
            extra += ["--bindmount_ro", WHEELHOUSE + ":" + JAIL_WHEELHOUSE]
        args = extra + head + ["--"] + cmd
os.makedirs(LOGS, exist_ok=True)
log = os.path.join(LOGS, "%s-%d.log" % (kind, os.getpid()))
with open(os.path.join(LOGS, "launches.jsonl"), "a", encoding="utf-8") as f:
    f.write(json.dumps({"kind": kind, "sdk_args": given, "args": args, "log": log if kind == "pip" else None}) + "\n")
if kind == "pip":
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
os.execv(REAL, [REAL] + args)
"""

JAIL_WHEELHOUSE = "/vcc-wheelhouse"

BOOT = (
    "import runpy,signal\n"
    "def _vcc_scan(s,f): exec(open('/vcc-agent/shared_scan.py').read(), {'__name__': 'vcc_scan'})\n"
    "signal.signal(signal.SIGUSR1,_vcc_scan)\n"
    "runpy.run_module('langbot_plugin.cli.__init__', run_name='__main__', alter_sys=True)\n"
)


# ---- The outbound sink (docs/shared-runtime.md, "What leaves the worker") ----
# In the private network namespace every IPv4 address is made local
# (`ip route add local 0.0.0.0/0 dev lo`), so whatever a worker sends out
# reaches this host instead of the network: DNS queries to the resolver of
# /etc/resolv.conf (which nsjail mounts into the worker) are answered with
# 127.0.0.1, and TCP connections to ports 80 and 443 are accepted, their
# first bytes kept (a plain HTTP request's head and body; a TLS ClientHello's
# server name), then refused with 502 or closed. Nothing is forwarded.
SINK_PORTS = (80, 443)
SINK_MAX_EVENTS = 400
SINK_MAX_TEXT = 8192
SINK_MAX_READ = 65536
# What every canary starts with (the URL ones in lower case): an event that
# carries one is never dropped, nor is the part of a request that holds it.
CANARY_MARK = re.compile(rb"vcc-canary-[A-Za-z0-9_.-]*", re.IGNORECASE)


def dns_question(packet):
    """(qname, qtype, end offset of the question) of a DNS query."""
    i, labels = 12, []
    while packet[i]:
        n = packet[i]
        labels.append(packet[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    qtype = int.from_bytes(packet[i + 1:i + 3], "big")
    return ".".join(labels), qtype, i + 5


def dns_answer(packet, qtype, end):
    """The answer to a query: 127.0.0.1 for an A question, no record else."""
    flags = b"\x81\x80"
    head = packet[:2] + flags + b"\x00\x01" + (b"\x00\x01" if qtype == 1 else b"\x00\x00") + b"\x00\x00\x00\x00"
    out = head + packet[12:end]
    if qtype == 1:
        out += b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04" + bytes([127, 0, 0, 1])
    return out


def tls_server_name(data):
    """The server name of a TLS ClientHello, None when there is none."""
    try:
        if data[0] != 0x16 or data[5] != 0x01:
            return None
        i = 5 + 4 + 2 + 32
        i += 1 + data[i]
        i += 2 + int.from_bytes(data[i:i + 2], "big")
        i += 1 + data[i]
        end = i + 2 + int.from_bytes(data[i:i + 2], "big")
        i += 2
        while i + 4 <= end:
            kind, size = int.from_bytes(data[i:i + 2], "big"), int.from_bytes(data[i + 2:i + 4], "big")
            if kind == 0:
                n = int.from_bytes(data[i + 7:i + 9], "big")
                return data[i + 9:i + 9 + n].decode("ascii", "replace")
            i += 4 + size
    except IndexError:
        return None
    return None


class OutboundSink:
    """What the workers send out, kept with the monotonic time it arrived."""

    def __init__(self):
        self.events, self.lock, self.errors, self.listening = [], threading.Lock(), [], []
        self.dropped = 0

    def keep(self, kind, port, data, t=None):
        """One event, stamped `t` (when its first bytes came; now if not
        given): the first SINK_MAX_TEXT bytes (Latin-1), every canary-like
        token after them, and what HTTP Basic credentials and
        percent-encoding hide ([`decoded`]). Past SINK_MAX_EVENTS only
        events with a canary-like token are kept; the others are counted as
        dropped."""
        data = data + decoded(data)
        marks = [m.group().decode("ascii") for m in CANARY_MARK.finditer(data[SINK_MAX_TEXT:])]
        text = data[:SINK_MAX_TEXT].decode("latin-1")
        if marks:
            text += "\n[canary-like tokens later in the data: %s]" % ", ".join(sorted(set(marks)))
        with self.lock:
            if len(self.events) < SINK_MAX_EVENTS or CANARY_MARK.search(data):
                self.events.append({"t": t or time.monotonic(), "kind": kind, "port": port, "text": text})
            else:
                self.dropped += 1

    def start(self, ip, outer):
        """Routes every IPv4 address to the loopback and listens, only in a
        network namespace of its own: never where `outer` (the verifier's
        namespace, `net:[INODE]`) is this process's too."""
        try:
            mine = os.readlink("/proc/self/ns/net")
        except OSError as exc:
            mine = "unreadable (%s)" % exc
        if not outer or mine == outer or not mine.startswith("net:"):
            self.errors.append("not started: this host's network namespace %s is not shown to differ from the verifier's (%s)" % (mine, outer or "not given"))
            return
        for args in (["route", "add", "local", "0.0.0.0/0", "dev", "lo"],):
            done = subprocess.run([ip] + args, capture_output=True, text=True, timeout=20)
            if done.returncode != 0:
                self.errors.append("`ip %s` exited %d: %s" % (" ".join(args), done.returncode, done.stderr.strip()))
                return
        for address in resolvers() + ["0.0.0.0"]:
            self.serve(self.dns, socket.SOCK_DGRAM, address, 53)
        for port in SINK_PORTS:
            self.serve(self.tcp, socket.SOCK_STREAM, "0.0.0.0", port)

    def serve(self, loop, kind, address, port):
        try:
            s = socket.socket(socket.AF_INET, kind)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((address, port))
            if kind == socket.SOCK_STREAM:
                s.listen(64)
        except OSError as exc:
            self.errors.append("%s:%d: %s" % (address, port, exc))
            return
        self.listening.append("%s %s:%d" % ("udp" if kind == socket.SOCK_DGRAM else "tcp", address, port))
        threading.Thread(target=loop, args=(s, port), daemon=True).start()

    def dns(self, s, port):
        while True:
            packet, peer = s.recvfrom(4096)
            try:
                name, qtype, end = dns_question(packet)
            except (IndexError, UnicodeError):
                continue
            self.keep("dns", port, name.encode("ascii", "replace"))
            s.sendto(dns_answer(packet, qtype, end), peer)

    def tcp(self, s, port):
        """Accepts for ever; an accept or thread that fails is recorded in
        `errors` (what it missed is then not known), never ends the loop."""
        while True:
            try:
                conn, _ = s.accept()
                threading.Thread(target=self.connection, args=(conn, port), daemon=True).start()
            except Exception as exc:  # EMFILE, no thread: keep listening
                with self.lock:
                    if len(self.errors) < 20:
                        self.errors.append("port %d: %s: %s" % (port, type(exc).__name__, exc))
                time.sleep(0.05)

    def connection(self, conn, port):
        """One connection: read (at most SINK_MAX_READ, 2 s of silence ends
        it), kept stamped with the time its first bytes came; a TLS
        ClientHello by its server name, anything else as sent."""
        data, first = b"", None
        conn.settimeout(2.0)
        try:
            while len(data) < SINK_MAX_READ:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                first = first or time.monotonic()
                data += chunk
                if (data[:1] == b"\x16" and port == 443) or complete_http(data):
                    break
        except OSError:
            pass
        try:
            if data[:1] == b"\x16":
                name = (tls_server_name(data) or "None").encode("ascii", "replace")
                self.keep("tls", port, b"server name: %s" % name, first)
            elif data:
                self.keep("http", port, data, first)
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def report(self):
        with self.lock:
            return {"listening": self.listening, "errors": self.errors, "events": list(self.events),
                    "dropped": self.dropped}


def complete_http(data):
    """A whole HTTP request: its head, and as much body as Content-Length
    says, or a chunked body up to its last (empty) chunk."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"transfer-encoding" and b"chunked" in value:
            return body.endswith(b"0\r\n\r\n")
        if name == b"content-length":
            try:
                return len(body) >= int(value)
            except ValueError:
                return True
    return True


def decoded(data):
    """What a request carries encoded, appended for the canary search: the
    credentials of `Authorization: Basic`, and the percent-decoded data
    when it has a `%`."""
    out = b""
    for m in re.finditer(rb"(?i)authorization:\s*basic\s+([A-Za-z0-9+/=]+)", data[:SINK_MAX_READ]):
        try:
            out += b"\n[basic credentials: " + base64.b64decode(m.group(1), validate=False) + b"]"
        except ValueError:
            pass
    if b"%" in data:
        out += b"\n[percent-decoded: " + urllib.parse.unquote_to_bytes(data) + b"]"
    return out


def resolvers():
    """The IPv4 name servers of /etc/resolv.conf (the file nsjail mounts)."""
    out = []
    try:
        for line in open("/etc/resolv.conf", encoding="utf-8", errors="replace"):
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "nameserver" and parts[1].count(".") == 3:
                out.append(parts[1])
    except OSError:
        pass
    return out or ["127.0.0.53"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def extra_mounts():
    """The base interpreter's prefix, when the SDK's own mounts miss it."""
    base = os.path.realpath(sys.base_prefix)
    if base == "/usr" or base.startswith("/usr/"):
        return []
    return [base]


def check_nsjail(spec, obs):
    """The nsjail binary the verifier provisioned, checked again by hash; its path."""
    import hashlib

    facts = {"binary": spec["nsjail_binary"], "binary_sha256": None}
    obs["nsjail"] = facts
    with open(spec["nsjail_binary"], "rb") as f:
        facts["binary_sha256"] = hashlib.sha256(f.read()).hexdigest()
    if facts["binary_sha256"] != spec["nsjail_binary_sha256"]:
        raise RuntimeError("%s hashes to %s, expected the pinned %s" % (spec["nsjail_binary"], facts["binary_sha256"], spec["nsjail_binary_sha256"]))
    return spec["nsjail_binary"]


def write_wrapper(spec, work, nsjail):
    folder = os.path.join(work, "wrapper")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "nsjail")
    consts = {"REAL": nsjail, "AGENT": spec["agent_dir"], "EXTRA": extra_mounts(), "BOOT": BOOT,
              "WHEELHOUSE": spec.get("wheelhouse_dir"), "JAIL_WHEELHOUSE": JAIL_WHEELHOUSE,
              "LOGS": os.path.join(work, "launches")}
    head = "#!/usr/bin/python3 -I\n" + "".join("%s = %r\n" % kv for kv in consts.items())
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + WRAPPER_BODY)
    os.chmod(path, 0o755)
    return folder


def read_launches(work):
    """The wrapper's launch records, each pip launch with its output's tail."""
    out = []
    try:
        lines = open(os.path.join(work, "launches", "launches.jsonl"), encoding="utf-8").read().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("log"):
            try:
                rec["output"] = open(rec["log"], encoding="utf-8", errors="replace").read()[-20000:]
            except OSError as exc:
                rec["output"] = "(no output: %s)" % exc
        out.append(rec)
    return out


# The runtime's storage requests (plugin and Workspace storage both arrive
# as binary storage, `owner_type` telling which).
STORAGE_ACTIONS = ("set_binary_storage", "get_binary_storage", "get_binary_storage_keys", "delete_binary_storage")


class Client:
    """One control connection: calls by seq_id, answers the runtime's requests."""

    def __init__(self, ws, settings, host_calls):
        self.ws, self.settings, self.host_calls = ws, settings, host_calls
        self.stored = {}
        self.seq, self.waiting, self.streams = 0, {}, {}

    async def reader(self):
        async for raw in self.ws:
            msg = json.loads(raw)
            if "action" in msg:
                await self.answer(msg)
            elif msg.get("seq_id") in self.streams:
                self.streams[msg["seq_id"]].put_nowait(msg)
            else:
                fut = self.waiting.get(msg.get("seq_id"))
                if fut is not None and not fut.done():
                    fut.set_result(msg)

    async def answer(self, msg):
        ctx = msg.get("context") or {}
        inst = ctx.get("installation_uuid")
        record = {"installation_uuid": inst, "action": msg["action"], "data": msg.get("data")}
        value = (msg.get("data") or {}).get("value_base64") if isinstance(msg.get("data"), dict) else None
        if isinstance(value, str):
            # A stored value is base64 on the wire: decoded for the canary search.
            try:
                record["decoded"] = base64.b64decode(value).decode("latin-1")
            except ValueError:
                pass
        self.host_calls.append(record)
        if msg["action"] == "get_plugin_settings":
            data = {"enabled": True, "priority": 0, "plugin_config": self.settings.get(inst, {}),
                    "install_source": "local", "install_info": {}, "installation_uuid": inst}
            out = {"seq_id": msg["seq_id"], "code": 0, "message": "success", "data": data}
        elif msg["action"] in STORAGE_ACTIONS:
            code, message, data = self.storage(msg["action"], msg.get("data") or {}, ctx)
            out = {"seq_id": msg["seq_id"], "code": code, "message": message, "data": data}
        else:
            out = {"seq_id": msg["seq_id"], "code": 1, "message": "the certification host does not serve " + msg["action"], "data": {}}
        out["chunk_status"] = "continue"
        await self.ws.send(json.dumps(out))

    def storage(self, action, data, ctx):
        """LangBot's binary storage, as its host scopes it: by the binding's
        Workspace, and plugin storage by installation too; a missing key is
        LangBot's own error. In memory, for this run only."""
        owner_type = data.get("owner_type")
        scope = (ctx.get("workspace_uuid"), ctx.get("installation_uuid") if owner_type == "plugin" else None,
                 owner_type, data.get("owner"))
        if action == "get_binary_storage_keys":
            return 0, "success", {"keys": sorted(k for (sc, k) in self.stored if sc == scope)}
        key = (scope, data.get("key"))
        if action == "set_binary_storage":
            self.stored[key] = data.get("value_base64") or ""
            return 0, "success", {}
        if action == "delete_binary_storage":
            self.stored.pop(key, None)
            return 0, "success", {}
        if key not in self.stored:
            return 1, "Storage with key %s not found" % data.get("key"), {}
        return 0, "success", {"value_base64": self.stored[key]}

    async def call(self, action, data, context=None, timeout=60):
        self.seq += 1
        seq = self.seq
        req = {"seq_id": seq, "action": action, "data": data}
        if context is not None:
            req["context"] = context
        fut = asyncio.get_running_loop().create_future()
        self.waiting[seq] = fut
        await self.ws.send(json.dumps(req))
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self.waiting.pop(seq, None)


    async def call_stream(self, action, data, context, timeout):
        """Every answer of a streamed request until its `end` chunk or a
        non-zero code: (answers, ended); `ended` False when `timeout` ran out."""
        self.seq += 1
        seq = self.seq
        queue = self.streams[seq] = asyncio.Queue()
        await self.ws.send(json.dumps({"seq_id": seq, "action": action, "data": data, "context": context}))
        answers, deadline = [], time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return answers, False
                try:
                    msg = await asyncio.wait_for(queue.get(), left)
                except asyncio.TimeoutError:
                    return answers, False
                answers.append(msg)
                if msg.get("code") != 0 or msg.get("chunk_status") == "end":
                    return answers, True
        finally:
            self.streams.pop(seq, None)


async def upload(client, archive, digest, binding):
    raw = open(archive, "rb").read()
    key = digest[:16] + binding["installation_uuid"].replace("-", "") + ".lbpkg"
    n = 16384
    chunks = [raw[i:i + n] for i in range(0, len(raw), n)] or [b""]
    for i, chunk in enumerate(chunks):
        r = await client.call("__file_chunk", {
            "file_key": key, "file_length": len(raw), "chunk_base64": base64.b64encode(chunk).decode(),
            "chunk_index": i, "chunk_amount": len(chunks), "chunk_size": len(chunk)}, binding)
        if r.get("code") != 0:
            raise RuntimeError("__file_chunk %d refused: %s" % (i, r.get("message")))
    return key


def worker_processes(runtime_pid):
    """Every `nsjail` and worker process below the runtime (host pids)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
            stat = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if any(b"langbot_plugin.cli.__init__" in a for a in cmd) and b"--prod" in cmd:
            kind = "nsjail" if cmd[0].endswith(b"nsjail") else "worker"
            out.append({"pid": int(pid), "ppid": int(stat[1]), "kind": kind})
    jails = {p["pid"] for p in out if p["kind"] == "nsjail" and p["ppid"] == runtime_pid}
    mine = [p for p in out if p["pid"] in jails or (p["kind"] == "worker" and p["ppid"] in jails)]
    return sorted(mine, key=lambda p: p["pid"])


def scan(pid, canaries, label, timeout=30.0):
    root = "/proc/%d/root/tmp" % pid
    try:
        with open(root + "/vcc-scan-in.json", "w", encoding="utf-8") as f:
            json.dump({"canaries": canaries, "label": label}, f)
        try:
            os.unlink(root + "/vcc-scan-out.json")
        except FileNotFoundError:
            pass
        os.kill(pid, signal.SIGUSR1)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if os.path.exists(root + "/vcc-scan-out.json"):
                with open(root + "/vcc-scan-out.json", encoding="utf-8") as f:
                    return json.load(f)
            time.sleep(0.1)
        return {"scan": label, "error": "no report within %.0f s" % timeout}
    except OSError as exc:
        return {"scan": label, "error": "%s: %s" % (type(exc).__name__, exc)}


def all_canaries(inst):
    """An installation's canaries: its plugin config's and its runners' invocation configs'."""
    out = list(inst["config"].values())
    for fields in inst.get("runner_config", {}).values():
        out.extend(fields.values())
    return out


def canary_config(fields, label, base):
    """A canary per field. A field whose planned value is an http(s) URL, or
    whose name says it is one ([`url_named`]), gets a URL canary, `http://vcc-canary-<label>-<field>-<hex>.invalid<path>`
    (lower case, a DNS name: the sink sees it in the worker's DNS query and
    its request's Host header), so a plugin that calls its configured
    endpoint shows which installation's configuration it read."""
    out = {}
    for name in fields:
        hexits = secrets.token_hex(8)
        planned = (base or {}).get(name)
        planned = planned if isinstance(planned, str) else ""
        if planned.startswith(("http://", "https://")) or url_named(name):
            host = "vcc-canary-%s-%s-%s" % (label.lower(), dns_safe(name), hexits)
            path = planned.split("://", 1)[1].partition("/")[2] if "://" in planned else ""
            out[name] = "http://%s.invalid/%s" % (host, path)
        else:
            out[name] = "vcc-canary-%s-%s-%s" % (label, name, hexits)
    return out


def dns_safe(name):
    """A field name as part of one DNS label: ASCII letters, digits and `-`
    only, at most 30 characters, so `vcc-canary-a-<this>-<16 hex>` stays
    within the 63 a label may have (longer, the resolver refuses the name
    and nothing reaches the sink)."""
    out = "".join(c if c in "abcdefghijklmnopqrstuvwxyz0123456789" else "-" for c in name.lower())
    return out[:30].strip("-") or "field"


def url_named(name):
    """A field named as an address: `base-url`, `webhook_url`, `endpoint`."""
    name = name.lower()
    return name.endswith(("url", "uri", "endpoint")) or "webhook" in name


def settings_for(spec, config):
    """The plugin settings answered for an installation: the planned base, canaries over it."""
    out = dict(spec.get("base_config") or {})
    out.update(config)
    return out


async def attach(client, spec, inst, digest, label, settings):
    binding = {"instance_uuid": inst, "workspace_uuid": str(uuid.uuid4()), "placement_generation": 1,
               "installation_uuid": str(uuid.uuid4()), "runtime_revision": 1, "artifact_digest": digest}
    config = canary_config(spec["config_fields"], label, spec.get("base_config"))
    settings[binding["installation_uuid"]] = settings_for(spec, config)
    runner_config = {c["runner"]: canary_config(c.get("config_fields") or [], label,
                                                {**(c.get("config_defaults") or {}), **(c.get("config") or {})})
                     for c in spec["calls"] if c.get("stream")}
    key = await upload(client, spec["archive"], digest, binding)
    r = await client.call("apply_plugin_installation", {
        "artifact_file_key": key, "enabled": True, "execution_mode": "shared-runtime-v1"}, binding, timeout=300)
    return {"label": label, "binding": binding, "config": config, "runner_config": runner_config,
            "apply": {"code": r.get("code"), "message": r.get("message"), "data": r.get("data")}}


async def wait_initialized(client, installations, timeout):
    deadline = time.time() + timeout
    status = {}
    while time.time() < deadline:
        for inst in installations:
            r = await client.call("list_plugins", {}, inst["binding"])
            plugins = (r.get("data") or {}).get("plugins") or []
            status[inst["label"]] = [p.get("status") for p in plugins]
        if all(s == ["initialized"] for s in status.values()):
            break
        await asyncio.sleep(0.5)
    return status


# Streamed results kept per runner call (as discovery-rpc's MAX_STREAMED_RESULTS).
MAX_STREAMED = 200
RUNS = iter(range(1, 1 << 30))


def absorb(answers, ended):
    """A `run_runner` stream folded: result types, the reply text (the completed
    message, else the accumulated deltas), the run's failure."""
    out = {"ended": ended, "result_types": [], "reply_text": None, "failed": None, "chunks": len(answers)}
    deltas = ""
    for a in answers:
        data = a.get("data") or {}
        kind = data.get("type") if isinstance(data, dict) else None
        if a.get("code") != 0 or not kind:
            continue
        out["result_types"].append(kind)
        body = data.get("data") or {}
        if kind in ("run.completed", "message.completed"):
            content = (body.get("message") or {}).get("content")
            if content:
                out["reply_text"] = content if isinstance(content, str) else json.dumps(content)
        elif kind == "message.delta":
            chunk = body.get("chunk") or {}
            deltas = chunk["all_content"] if isinstance(chunk.get("all_content"), str) else deltas + str(chunk.get("content") or "")
        elif kind == "run.failed":
            out["failed"] = {"code": body.get("code"), "error": body.get("error")}
    if out["reply_text"] is None and deltas:
        out["reply_text"] = deltas
    return out


async def invoke_runner(client, inst, call, phase):
    """One streamed `run_runner`: the run context carries this installation's
    invocation config (the probe's, its string fields canaried)."""
    data = copy.deepcopy(call["data"])
    context = data["context"]
    n = next(RUNS)
    context["run_id"] = "vcc-shared-%s-%s-%d-%s" % (inst["label"], phase, n, call["runner"])
    context["event"]["event_id"] = "vcc-shared-event-%s-%s-%d" % (inst["label"], phase, n)
    config = dict(call.get("config") or {})
    config.update(inst["runner_config"].get(call["runner"], {}))
    context["config"] = config
    code, message = None, None
    try:
        answers, ended = await client.call_stream("run_runner", data, inst["binding"], call.get("timeout", 60))
        errors = [a for a in answers if a.get("code") != 0]
        code = errors[0].get("code") if errors else (0 if answers else None)
        message = errors[0].get("message") if errors else (None if ended else "the stream did not end within %s s" % call.get("timeout", 60))
    except Exception as exc:  # recorded, judged by the gate
        answers, ended, message = [], False, "%s: %s" % (type(exc).__name__, exc)
    runner = absorb(answers, ended)
    runner.update({"run_id": context["run_id"], "config": config})
    reply = [a.get("data") for a in answers[:MAX_STREAMED]]
    return code, message, reply, runner


DOCUMENTS = iter(range(1, 1 << 30))


async def invoke_parser(client, inst, call, phase):
    """One `parse_document`: the planned document uploaded by `__file_chunk`
    under this installation's binding (a file key of its own), then parsed."""
    doc = call["document"]
    n = next(DOCUMENTS)
    stem = "vcc-shared-%s-%s-%d" % (inst["label"], phase, n)
    key = "%s-%s.%s" % (stem, secrets.token_hex(8), doc["extension"])
    raw = doc["text"].encode("utf-8")
    data = copy.deepcopy(call["data"])
    data["context"]["file_key"] = key
    data["context"]["filename"] = "%s.%s" % (stem, doc["extension"])
    document = {"file_key": key, "filename": data["context"]["filename"],
                "mime_type": data["context"].get("mime_type"), "bytes": len(raw)}
    try:
        r = await client.call("__file_chunk", {
            "file_key": key, "file_length": len(raw), "chunk_base64": base64.b64encode(raw).decode(),
            "chunk_index": 0, "chunk_amount": 1, "chunk_size": len(raw)}, inst["binding"])
        if r.get("code") != 0:
            return None, "the document's __file_chunk was refused: %s" % r.get("message"), None, document
        r = await client.call("parse_document", data, inst["binding"], timeout=call.get("timeout", 60))
        return r.get("code"), r.get("message"), r.get("data"), document
    except Exception as exc:  # recorded, judged by the gate
        return None, "%s: %s" % (type(exc).__name__, exc), None, document


async def invoke(client, inst, call, phase):
    """One invocation, with its window on the sink's clock (`t0`, `t1`)."""
    t0 = time.monotonic()
    out = await invoke_once(client, inst, call, phase)
    out["t0"], out["t1"] = t0, time.monotonic()
    return out


async def invoke_once(client, inst, call, phase):
    started = time.time()
    if call.get("document"):
        code, message, data, document = await invoke_parser(client, inst, call, phase)
        return {"phase": phase, "installation": inst["label"], "component": call["component"],
                "code": code, "message": message, "reply": data, "document": document,
                "seconds": round(time.time() - started, 3)}
    if call.get("stream"):
        code, message, data, runner = await invoke_runner(client, inst, call, phase)
        return {"phase": phase, "installation": inst["label"], "component": call["component"],
                "code": code, "message": message, "reply": data, "runner": runner,
                "seconds": round(time.time() - started, 3)}
    try:
        r = await client.call(call["action"], call["data"], inst["binding"], timeout=60)
        code, message, data = r.get("code"), r.get("message"), r.get("data")
    except Exception as exc:  # recorded, judged by the gate
        code, message, data = None, "%s: %s" % (type(exc).__name__, exc), None
    return {"phase": phase, "installation": inst["label"], "component": call["component"],
            "code": code, "message": message, "reply": data, "seconds": round(time.time() - started, 3)}


async def phases(client, installations, calls):
    out = []
    for inst in installations:
        for call in calls:
            out.append(await invoke(client, inst, call, "sequential"))
    jobs = [invoke(client, inst, call, "concurrent") for call in calls for inst in installations]
    out.extend(await asyncio.gather(*jobs))
    return out


async def plugin_logs(client, installations, author, name):
    out = {}
    for inst in installations:
        try:
            r = await client.call("get_plugin_logs", {"plugin_author": author, "plugin_name": name}, inst["binding"])
            out[inst["label"]] = {"code": r.get("code"), "message": r.get("message"), "data": r.get("data")}
        except Exception as exc:
            out[inst["label"]] = {"code": None, "message": str(exc), "data": None}
    return out


async def drive(spec, obs, runtime, port, token):
    settings, host_calls = {}, obs["host_calls"]
    headers = {"X-LangBot-Plugin-Runtime-Token": token}
    async with websockets.connect("ws://127.0.0.1:%d" % port, additional_headers=headers, max_size=None) as ws:
        client = Client(ws, settings, host_calls)
        reader = asyncio.create_task(client.reader())
        await client.call("__ping", {})
        inst_uuid = str(uuid.uuid4())
        r = await client.call("set_runtime_config", {
            "runtime_identity": {"instance_uuid": inst_uuid, "runtime_id": str(uuid.uuid4())},
            "worker_policy": {"max_cpus": 1, "max_memory_mb": 1024, "max_pids": 256, "max_open_files": 1024,
                              "max_file_size_mb": 64, "max_concurrent_restarts": 2},
            "runtime_profile": "shared"})
        obs["runtime_config"] = {"code": r.get("code"), "message": r.get("message")}
        if r.get("code") != 0:
            return
        a = await attach(client, spec, inst_uuid, spec["sha256"], "A", settings)
        b = await attach(client, spec, inst_uuid, spec["sha256"], "B", settings)
        obs["installations"] = [a, b]
        obs["status"] = await wait_initialized(client, [a, b], spec.get("start_timeout", 60))
        obs["workers_attached"] = worker_processes(runtime.pid)
        obs["calls"] = await phases(client, [a, b], spec["calls"])
        obs["workers_invoked"] = worker_processes(runtime.pid)
        obs["logs"] = await plugin_logs(client, [a, b], spec["author"], spec["name"])
        pids = [w["pid"] for w in obs["workers_invoked"] if w["kind"] == "worker"]
        canaries = sorted(v for i in (a, b) for v in all_canaries(i))
        if len(pids) == 1:
            obs["scan_invoked"] = scan(pids[0], canaries, "after the invocations")
        r = await client.call("remove_plugin_installation", {}, a["binding"], timeout=120)
        obs["revoke"] = {"code": r.get("code"), "message": r.get("message"), "data": r.get("data")}
        await asyncio.sleep(0.5)
        obs["calls"].extend([await invoke(client, b, c, "after-revoke") for c in spec["calls"]])
        obs["workers_revoked"] = worker_processes(runtime.pid)
        if len(pids) == 1:
            obs["scan_revoked"] = scan(pids[0], sorted(all_canaries(a)), "after revoking A")
        reader.cancel()


def wait_healthy(port, timeout=60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=1).read()
            return True
        except Exception:
            time.sleep(0.2)
    return False


def stop(runtime, obs):
    """The runtime, then every worker pair it left (shared workers outlive it)."""
    survivors = worker_processes(runtime.pid)
    runtime.terminate()
    try:
        runtime.wait(10)
    except subprocess.TimeoutExpired:
        runtime.kill()
        runtime.wait()
    for w in survivors:
        try:
            os.kill(w["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    obs["stopped_workers"] = [w["pid"] for w in survivors]


def loopback_up(spec):
    """In a private network namespace (the verifier starts this host under
    `unshare --net`, and says so with `ip`), bring its loopback up first: the
    runtime's control server and this host talk over 127.0.0.1."""
    ip = spec.get("ip")
    if not ip:
        return
    done = subprocess.run([ip, "link", "set", "lo", "up"], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise RuntimeError("`%s link set lo up` exited %d: %s" % (ip, done.returncode, done.stderr.strip()))


def main():
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    work = spec["work_dir"]
    os.makedirs(work, exist_ok=True)
    obs = {"fatal": None, "host_calls": [], "python": sys.executable, "extra_mounts": extra_mounts(),
           "placement": "requested by the host: apply_plugin_installation execution_mode shared-runtime-v1; unsigned archive"}
    sink = OutboundSink()
    try:
        stage = "private network namespace"
        loopback_up(spec)
        if spec.get("ip"):
            sink.start(spec["ip"], spec.get("outer_netns"))
        stage = "nsjail"
        nsjail = check_nsjail(spec, obs)
    except Exception as exc:
        obs["fatal"] = "%s: %s: %s" % (stage, type(exc).__name__, exc)
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(obs, f, indent=1)
        return
    token, port, debug = secrets.token_hex(24), free_port(), free_port()
    env = {"PATH": write_wrapper(spec, work, nsjail) + ":/usr/bin:/bin", "HOME": work,
           "LANGBOT_PLUGIN_RUNTIME_CONTROL_TOKEN": token}
    if spec.get("index_url"):
        # The SDK's own index setting (runtime/helper/pkgmgr.py, get_pip_index_args).
        env["LANGBOT_PLUGIN_PYPI_INDEX_URL"] = spec["index_url"]
    log_path = os.path.join(work, "runtime.log")
    with open(log_path, "wb") as log:
        runtime = subprocess.Popen(
            [sys.executable, "-I", "-B", "-m", "langbot_plugin.cli", "rt", "--ws-control-port", str(port),
             "--ws-debug-port", str(debug)], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_healthy(port):
            obs["fatal"] = "the runtime did not answer /healthz within 60 s"
        else:
            asyncio.run(asyncio.wait_for(drive(spec, obs, runtime, port, token), spec.get("total_timeout", 600)))
    except Exception as exc:
        obs["fatal"] = "%s: %s" % (type(exc).__name__, exc)
    finally:
        stop(runtime, obs)
    obs["outbound"] = sink.report()
    obs["runtime_log"] = open(log_path, encoding="utf-8", errors="replace").read()[-200000:]
    obs["launches"] = read_launches(work)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(obs, f, indent=1)


if __name__ == "__main__":
    main()
