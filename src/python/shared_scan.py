"""Live-object scan run inside a shared plugin worker (verify-coding-candidates).

Injected by the `shared-runtime` gate's host into the running worker (gdb:
PyGILState_Ensure + PyRun_SimpleString of a one-line exec of this file, from
the worker's own /tmp). It reads the canaries from /tmp/vcc-scan-in.json and
writes /tmp/vcc-scan-out.json. It never changes the worker's state beyond a
gc.collect().

Roots: every module whose file lies in the plugin's code (/plugin) or its
dependency environment (/plugin-dependencies), and every object that is an
instance of the SDK's BasePlugin or BaseComponent. It walks attributes,
containers and closures from those roots; it does not descend into objects
whose type is defined by the SDK itself (langbot_plugin.*: the runtime's own
per-slot registry is the SDK's, not the plugin's). Threads and asyncio tasks:
every live thread but the SDK's and interpreter's, and every pending task whose
coroutine is not the SDK's, with the canaries found in its frame locals.
"""

import asyncio
import gc
import json
import sys
import threading
import types

_PLUGIN_ROOTS = ("/plugin/", "/plugin-dependencies/")
_MAX_NODES = 200000


def _own_module(mod):
    path = getattr(mod, "__file__", None) or ""
    return path.startswith(_PLUGIN_ROOTS)


def _sdk_type(obj):
    mod = getattr(type(obj), "__module__", "") or ""
    return mod.startswith("langbot_plugin")


def _hits(text, canaries):
    return [c for c in canaries if c in text]


def _children(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield "[%r]" % (k,) if isinstance(k, (str, int)) else "[key]", k
            yield "[%r]" % (k,) if isinstance(k, (str, int)) else "[value]", v
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            yield "[%d]" % i, v
    elif isinstance(obj, types.FunctionType):
        for i, cell in enumerate(obj.__closure__ or ()):
            try:
                yield ".<closure %d>" % i, cell.cell_contents
            except ValueError:
                pass
    elif isinstance(obj, types.ModuleType):
        return
    else:
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict):
            for k, v in d.items():
                yield "." + str(k), v
        for slot in getattr(type(obj), "__slots__", ()) or ():
            if isinstance(slot, str) and hasattr(obj, slot):
                yield "." + slot, getattr(obj, slot)


def _walk(roots, canaries):
    found, seen, stack, nodes = [], set(), list(roots), 0
    while stack and nodes < _MAX_NODES:
        path, obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        nodes += 1
        if isinstance(obj, (str, bytes, bytearray)):
            text = obj if isinstance(obj, str) else bytes(obj).decode("latin-1")
            for c in _hits(text, canaries):
                found.append({"canary": c, "path": path})
            continue
        if isinstance(obj, (int, float, bool, type(None), type)) or _sdk_type(obj):
            continue
        for label, child in _children(obj):
            stack.append((path + label, child))
    return found, nodes, nodes >= _MAX_NODES


def _roots():
    from langbot_plugin.api.definition.components.base import BaseComponent
    from langbot_plugin.api.definition.plugin import BasePlugin

    roots = []
    for name, mod in list(sys.modules.items()):
        if mod is not None and _own_module(mod):
            for k, v in list(vars(mod).items()):
                if not (k.startswith("__") and k.endswith("__")):
                    roots.append(("module %s.%s" % (name, k), v))
    for obj in gc.get_objects():
        if isinstance(obj, (BasePlugin, BaseComponent)):
            label = "%s object %s" % (
                "plugin" if isinstance(obj, BasePlugin) else "component",
                type(obj).__qualname__,
            )
            for k, v in list(vars(obj).items()):
                roots.append(("%s.%s" % (label, k), v))
    return roots


def _frame_strings(frame, canaries):
    out = []
    while frame is not None:
        for k, v in list(frame.f_locals.items()):
            for hit in _walk([("local " + k, v)], canaries)[0]:
                out.append(hit)
        frame = frame.f_back
    return out


def _tasks(canaries):
    loop = asyncio.events._get_running_loop()
    out = []
    if loop is None:
        return out, "no running loop in the scanning thread"
    for task in asyncio.all_tasks(loop):
        coro = task.get_coro()
        code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
        filename = getattr(code, "co_filename", "") or ""
        name = "%s (%s)" % (getattr(code, "co_qualname", "?"), filename)
        frame = getattr(coro, "cr_frame", None)
        hits = _frame_strings(frame, canaries) if frame is not None else []
        out.append({"task": name, "own": filename.startswith(_PLUGIN_ROOTS), "canaries": hits})
    return out, None


def _threads(canaries):
    frames = sys._current_frames()
    out = []
    for t in threading.enumerate():
        frame = frames.get(t.ident)
        filename = frame.f_code.co_filename if frame is not None else ""
        stack_files = []
        f = frame
        while f is not None:
            stack_files.append(f.f_code.co_filename)
            f = f.f_back
        own = any(p.startswith(_PLUGIN_ROOTS) for p in stack_files)
        hits = _frame_strings(frame, canaries) if own else []
        out.append({"thread": t.name, "top": filename, "own": own, "canaries": hits})
    return out


def main():
    with open("/tmp/vcc-scan-in.json", encoding="utf-8") as f:
        req = json.load(f)
    canaries = list(req["canaries"])
    gc.collect()
    report = {"scan": req.get("label", ""), "error": None}
    try:
        found, nodes, truncated = _walk(_roots(), canaries)
        tasks, task_note = _tasks(canaries)
        report.update(
            found=found,
            nodes=nodes,
            truncated=truncated,
            tasks=tasks,
            task_note=task_note,
            threads=_threads(canaries),
            own_modules=sorted(n for n, m in sys.modules.items() if m is not None and _own_module(m)),
        )
    except Exception as exc:  # the report says what failed; the worker goes on
        report["error"] = "%s: %s" % (type(exc).__name__, exc)
    with open("/tmp/vcc-scan-out.json.partial", "w", encoding="utf-8") as f:
        json.dump(report, f)
    import os

    os.replace("/tmp/vcc-scan-out.json.partial", "/tmp/vcc-scan-out.json")


main()
