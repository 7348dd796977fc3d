# manifest_pages: what the SDK's own `lbp build` writes as a plugin's
# `spec.pages`, and the typed encoding of a PyYAML value; a library, first in
# `manifest_yaml_probe.py` and in `build_host.py` (src/python/mod.rs:
# `MANIFEST_YAML_PROBE`, `BUILD_HOST`); the host computes the pages of
# each candidate in a forked child of its one import of the SDK and hands
# them to the `archive-members` gate's probe.
#
# encode(VALUE, [BUDGET], set()) -> NODE, the shapes `manifest_yaml_probe.py`
# documents; build_pages(SOURCE) -> {"value": NODE} | {"error": TEXT} | None
# (None: this SDK's build has no pages step). Stdlib imports only (each is
# one the SDK's import loads too), so the host's import is unchanged.
import base64
import contextlib
import datetime
import os
import sys

# Aliases can make a small document expand exponentially; a manifest never
# needs this many nodes.
NODE_BUDGET = 100_000


class TooLarge(Exception):
    pass


def encode(value, budget, active):
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge(f"more than {NODE_BUDGET} nodes once aliases are expanded")
    if value is None:
        return {"t": "null"}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": repr(value)}
    if isinstance(value, str):
        return {"t": "str", "v": value}
    if isinstance(value, bytes):
        return {"t": "bytes", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (datetime.datetime, datetime.date)):
        return {"t": "timestamp", "v": value.isoformat()}
    if isinstance(value, (list, tuple, dict, set)):
        if id(value) in active:
            raise TooLarge("a recursive alias (a node that contains itself)")
        active.add(id(value))
        try:
            if isinstance(value, dict):
                return {
                    "t": "map",
                    "v": [[encode(k, budget, active), encode(v, budget, active)] for k, v in value.items()],
                }
            if isinstance(value, set):
                # !!set: a mapping of keys to null, unordered in Python.
                return {
                    "t": "map",
                    "v": [[encode(k, budget, active), {"t": "null"}] for k in sorted(value, key=repr)],
                }
            return {"t": "seq", "v": [encode(v, budget, active) for v in value]}
        finally:
            active.discard(id(value))
    return {"t": "other", "v": repr(value)}


def build_pages(source):
    try:
        from langbot_plugin.cli.utils.page_components import (
            discover_plugin_components,
            populate_plugin_pages,
        )
        from langbot_plugin.utils.discover.engine import ComponentDiscoveryEngine
    except ImportError:
        return None
    here = os.getcwd()
    try:
        os.chdir(os.path.dirname(os.path.abspath(source)))
        # The SDK's loaders may print; stdout carries only our document.
        with contextlib.redirect_stdout(sys.stderr):
            engine = ComponentDiscoveryEngine()
            plugin = engine.load_component_manifest(
                path="manifest.yaml", owner="builtin", no_save=True
            )
            if plugin is None:
                return {"error": "the SDK did not load manifest.yaml"}
            populate_plugin_pages(plugin, discover_plugin_components(plugin, engine))
        return {"value": encode(plugin.manifest["spec"]["pages"], [NODE_BUDGET], set())}
    except Exception as e:  # the build would fail the same way: report why
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        os.chdir(here)
