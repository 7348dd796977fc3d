"""sdk_probe: the interpreter's facts and the installed langbot-plugin dist-info.

Run as `python -I -B -c <this> DISTRIBUTION PACKAGE`. Prints one JSON object.
Imports nothing from the SDK: the package is located with find_spec, the
distribution with importlib.metadata, so probing cannot execute SDK code.
"""
import importlib.metadata
import importlib.util
import json
import os
import sys
import sysconfig

dist_name, package = sys.argv[1], sys.argv[2]
out = {
    "executable": sys.executable,
    "python_version": sys.version.split()[0],
    "implementation": sys.implementation.name,
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "scripts_dir": sysconfig.get_path("scripts"),
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
