# How the SDK reads two manifest.yaml files: PyYAML's `yaml.safe_load`, YAML
# 1.1 rules, as langbot_plugin.utils.discover.engine and
# langbot_plugin.runtime.plugin.artifact read a plugin's manifest.
#
# Usage: python -I -B -c <this> SOURCE ARCHIVED
#    or: python -I -B -c <this> JOBS
#
#   SOURCE    the staged source's manifest.yaml (DIR/staging/source/<folder>/)
#   ARCHIVED  the archive's manifest.yaml as extracted (DIR/extracted/<folder>/)
#   JOBS      a JSON list of {"source": SOURCE, "archived": ARCHIVED}, for
#             every candidate at once (the SDK imported once); the answer is
#             a JSON list with one {"report": DOCUMENT} per job, in order
#
# Prints one JSON document: {"pyyaml": VERSION, "source": DOC, "archived":
# DOC, "build_pages": DOC or null}, where DOC is {"value": NODE} or {"error": TEXT}. A NODE keeps the
# Python type PyYAML constructed: {"t": "null"} | {"t": "bool", "v": b} |
# {"t": "int", "v": "decimal text"} | {"t": "float", "v": "repr"} |
# {"t": "str", "v": s} | {"t": "bytes", "v": "base64"} |
# {"t": "timestamp", "v": "isoformat"} | {"t": "seq", "v": [NODE...]} |
# {"t": "map", "v": [[KEY NODE, VALUE NODE]...]} | {"t": "other", "v": repr}.
# "build_pages" is the `spec.pages` the SDK's own `lbp build` writes for the
# source (its `populate_plugin_pages` over the plugin's component manifests,
# read from SOURCE's folder; component YAML only, no plugin code is imported),
# or null for an SDK whose build has no such step (it writes `pages: []`).
# Nothing is decided here.
import base64
import contextlib
import os
import datetime
import json
import sys

import yaml

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


def read(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            value = yaml.safe_load(f)
        return {"value": encode(value, [NODE_BUDGET], set())}
    except Exception as e:  # the SDK would refuse the manifest: report why
        return {"error": f"{type(e).__name__}: {e}"}


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


def report(source, archived):
    return {
        "pyyaml": yaml.__version__,
        "source": read(source),
        "archived": read(archived),
        "build_pages": build_pages(source),
    }


if len(sys.argv) == 2:
    # Batch (src/python/batch.rs): one JSON list of {"source", "archived"}
    # jobs; one {"report": ...} or {"error": ...} per job, in order.
    answers = []
    for job in json.loads(sys.argv[1]):
        try:
            answers.append({"report": report(job["source"], job["archived"])})
        except Exception as e:  # this job could not be observed
            answers.append({"error": f"{type(e).__name__}: {e}"})
    print(json.dumps(answers))
else:
    print(json.dumps(report(sys.argv[1], sys.argv[2])))
