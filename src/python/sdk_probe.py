"""sdk_probe: the interpreter's facts and the installed langbot-plugin dist-info.

Run as `python -I -S -B -c <this> DISTRIBUTION PACKAGE ENVIRONMENT`, in a
sandbox where nothing is writable but its private roots (see
`Probe::run_before_judgement` in `src/python/mod.rs`). Prints one JSON object.
Imports nothing from the SDK: the package is located with find_spec, the
distribution with importlib.metadata, so probing cannot execute SDK code.

`-S`: `site` does not run, so no `.pth` line or `sitecustomize` of the
environment executes here. ENVIRONMENT is a JSON object the verifier builds
from the site probe's answer and the `.pth` files read as data:
`{"prefix", "exec_prefix", "path"}`, the environment's prefixes and the
folders `site` would append to `sys.path` (site directories and `.pth` path
lines). They are appended here instead.
"""
import importlib.metadata
import importlib.util
import json
import os
import sys
import sysconfig

dist_name, package = sys.argv[1], sys.argv[2]
environment = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
for entry in environment.get("path") or []:
    if entry not in sys.path:
        sys.path.append(entry)
prefix = environment.get("prefix") or sys.prefix
exec_prefix = environment.get("exec_prefix") or prefix
out = {
    "executable": sys.executable,
    "python_version": sys.version.split()[0],
    "implementation": sys.implementation.name,
    "prefix": prefix,
    "base_prefix": sys.base_prefix,
    "scripts_dir": sysconfig.get_path("scripts", vars={"base": prefix, "platbase": exec_prefix}),
    "sys_path": list(sys.path),
    "flags_isolated": bool(sys.flags.isolated),
    "version": None,
    "dist_info": None,
    "site_packages": None,
    "record": None,
    "console_scripts": [],
    "package_dir": None,
    "error": None,
}
try:
    dist = importlib.metadata.distribution(dist_name)
    out["version"] = dist.version
    dist_path = getattr(dist, "_path", None)
    if dist_path is not None:
        out["dist_info"] = os.path.abspath(str(dist_path))
        out["site_packages"] = os.path.dirname(out["dist_info"])
        record = os.path.join(out["dist_info"], "RECORD")
        out["record"] = record if os.path.isfile(record) else None
    out["console_scripts"] = sorted(
        ep.name for ep in dist.entry_points if ep.group == "console_scripts"
    )
except importlib.metadata.PackageNotFoundError as exc:
    out["error"] = "distribution %s is not installed: %s" % (dist_name, exc)
spec = importlib.util.find_spec(package)
if spec is not None and spec.submodule_search_locations:
    out["package_dir"] = os.path.abspath(list(spec.submodule_search_locations)[0])
print(json.dumps(out))
