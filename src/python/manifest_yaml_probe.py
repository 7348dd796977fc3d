# How the SDK reads two manifest.yaml files: PyYAML's `yaml.safe_load`, YAML
# 1.1 rules, as langbot_plugin.utils.discover.engine and
# langbot_plugin.runtime.plugin.artifact read a plugin's manifest.
#
# Usage: python -I -B -c <this> SOURCE ARCHIVED
#    or: python -I -B -c <this> -      (JOBS on stdin)
#
#   SOURCE    the staged source's manifest.yaml (DIR/staging/source/<folder>/)
#   ARCHIVED  the archive's manifest.yaml as extracted (DIR/extracted/<folder>/)
#   JOBS      a JSON list of {"source": SOURCE, "archived": ARCHIVED}, for
#             every candidate at once; the answer is a JSON list with one
#             {"report": DOCUMENT} per job, in order. A job may carry
#             "build_pages": DOC or null, computed already (by the build
#             host, from the same interpreter's SDK): the report gives it as
#             is, and the SDK is imported only for a job without one
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
#
# `manifest_pages.py` comes first (src/python/mod.rs, `MANIFEST_YAML_PROBE`):
# `encode`, `build_pages`.
import json

import yaml


def read(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            value = yaml.safe_load(f)
        return {"value": encode(value, [NODE_BUDGET], set())}
    except Exception as e:  # the SDK would refuse the manifest: report why
        return {"error": f"{type(e).__name__}: {e}"}


def report(source, archived, job=None):
    given = job is not None and "build_pages" in job
    return {
        "pyyaml": yaml.__version__,
        "source": read(source),
        "archived": read(archived),
        "build_pages": job["build_pages"] if given else build_pages(source),
    }


if len(sys.argv) == 2:
    # Batch (src/python/batch.rs): one JSON list of {"source", "archived"}
    # jobs (with "build_pages" when computed already); one {"report": ...}
    # or {"error": ...} per job, in order.
    answers = []
    for job in json.load(sys.stdin):
        try:
            answers.append({"report": report(job["source"], job["archived"], job)})
        except Exception as e:  # this job could not be observed
            answers.append({"error": f"{type(e).__name__}: {e}"})
    print(json.dumps(answers))
else:
    print(json.dumps(report(sys.argv[1], sys.argv[2])))
