"""shadow_probe: where `langbot_plugin` resolves, and every other copy in reach.

Run as `python -I -B -c <this> PACKAGE CODE_DIR` with cwd = CODE_DIR (an exact
archive extraction). Prints one JSON object. Imports nothing from the SDK and
nothing from CODE_DIR: find_spec only locates, it does not execute.

The SDK runtime starts a worker as `python -m langbot_plugin.cli.__init__ run`
with cwd = the artifact's code dir, so the worker's sys.path starts with the
code dir, then the runtime's site-packages (SDK-FACTS.md). That path is
emulated with PathFinder.find_spec(PACKAGE, [CODE_DIR] + sys.path).
"""
import importlib.machinery
import importlib.util
import json
import os
import site
import sys
import zipfile

package, code_dir = sys.argv[1], os.path.abspath(sys.argv[2])
WATCHED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
STANDARD_FINDER_MODULES = {
    "_frozen_importlib",
    "_frozen_importlib_external",
    "importlib._bootstrap",
    "importlib._bootstrap_external",
    "importlib.machinery",
    "zipimport",
}
errors = []


def describe_spec(spec):
    if spec is None:
        return {"found": False, "origin": None, "locations": [], "loader": None}
    locations = spec.submodule_search_locations
    return {
        "found": True,
        "origin": spec.origin,
        "locations": [os.path.abspath(p) for p in locations] if locations is not None else [],
        "loader": type(spec.loader).__name__ if spec.loader is not None else None,
    }


def real(path):
    return os.path.realpath(path)


def module_file(name):
    """True when `name` is PACKAGE as an importable module file (`.py`, `.pyc`, `.so`...)."""
    return any(name == package + suffix for suffix in importlib.machinery.all_suffixes())


def langbot_copy_in(directory):
    """The realpath of a PACKAGE package or module directly in `directory`, or None."""
    candidate = os.path.join(directory, package)
    if os.path.isdir(candidate):
        return real(candidate)
    try:
        for name in os.listdir(directory):
            if module_file(name):
                return real(os.path.join(directory, name))
    except OSError:
        pass
    return None


def classify(name):
    """Kind of a directory entry that could be a copy of PACKAGE, or None."""
    lower = name.lower()
    dist_prefix = package.lower() + "-"
    if name == package:
        return "package"
    if module_file(name):
        return "module"
    if lower.startswith(dist_prefix) and lower.endswith(".dist-info"):
        return "dist-info"
    if lower.startswith(dist_prefix) and lower.endswith(".egg-info"):
        return "egg-info"
    if lower.endswith(".egg-link"):
        return "egg-link"
    if lower.startswith("__editable__") and "langbot" in lower:
        return "editable"
    return None


def scan_dir(entry):
    found = []
    try:
        names = sorted(os.listdir(entry))
    except OSError as exc:
        errors.append("cannot list %s: %s" % (entry, exc))
        return found
    for name in names:
        kind = classify(name)
        if kind is None:
            continue
        path = os.path.join(entry, name)
        if kind == "package" and not os.path.isdir(path):
            continue
        item = {"entry": entry, "kind": kind, "path": path, "realpath": real(path), "target": None, "target_copy": None}
        if kind == "egg-link":
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    first = fh.readline().strip()
                target = os.path.abspath(os.path.join(entry, first)) if first else None
            except OSError as exc:
                target = None
                errors.append("cannot read %s: %s" % (path, exc))
            item["target"] = target
            item["target_copy"] = langbot_copy_in(target) if target else None
        found.append(item)
    return found


def scan_zip(entry):
    found = []
    try:
        with zipfile.ZipFile(entry) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile) as exc:
        errors.append("cannot read zip %s: %s" % (entry, exc))
        return found
    tops = sorted({n.split("/", 1)[0] for n in names if n})
    for top in tops:
        kind = classify(top)
        if kind == "package" and not any(n.startswith(top + "/") for n in names):
            continue
        if kind is not None:
            path = entry + "/" + top
            found.append({"entry": entry, "kind": kind, "path": path, "realpath": real(entry) + "/" + top, "target": None, "target_copy": None})
    return found


def scan(entries):
    kinds = {}
    found = []
    for entry in entries:
        if os.path.isdir(entry):
            kinds[entry] = "dir"
            found.extend(scan_dir(entry))
        elif zipfile.is_zipfile(entry):
            kinds[entry] = "zip"
            found.extend(scan_zip(entry))
        elif os.path.exists(entry):
            kinds[entry] = "file"
        else:
            kinds[entry] = "missing"
    return [{"entry": e, "kind": k} for e, k in kinds.items()], found


def site_dirs():
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        dirs.append(user)
    reals = {real(d) for d in dirs}
    return [p for p in sys.path if p and os.path.isdir(p) and real(p) in reals]


def read_pth(site_dir, name):
    path = os.path.join(site_dir, name)
    lines = []
    mentions = False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            raw_lines = fh.read().splitlines()
    except OSError as exc:
        errors.append("cannot read %s: %s" % (path, exc))
        raw_lines = []
    for raw in raw_lines:
        text = raw.rstrip()
        if not text.strip() or text.startswith("#"):
            continue
        if "langbot" in text.lower():
            mentions = True
        if text.startswith(("import ", "import\t")):
            lines.append({"kind": "import", "text": text, "resolved": None, "langbot_copy": None})
        else:
            resolved = os.path.abspath(os.path.join(site_dir, text))
            copy = langbot_copy_in(resolved) if os.path.isdir(resolved) else None
            lines.append({"kind": "path", "text": text, "resolved": resolved, "langbot_copy": copy})
    flagged = mentions or any(l["langbot_copy"] for l in lines)
    return {"file": path, "lines": lines, "mentions_langbot": mentions, "flagged": flagged}


def pth_files():
    out = []
    for d in site_dirs():
        try:
            names = sorted(n for n in os.listdir(d) if n.endswith(".pth"))
        except OSError as exc:
            errors.append("cannot list %s: %s" % (d, exc))
            continue
        out.extend(read_pth(d, n) for n in names)
    return out


def meta_path():
    out = []
    for finder in sys.meta_path:
        cls = finder if isinstance(finder, type) else type(finder)
        module = getattr(cls, "__module__", "") or ""
        item = {
            "module": module,
            "qualname": getattr(cls, "__qualname__", cls.__name__),
            "standard": module in STANDARD_FINDER_MODULES,
            "spec": None,
            "error": None,
        }
        if not item["standard"]:
            # Ask the non-standard finder directly: an editable finder placed
            # after PathFinder would stay latent in find_spec below.
            try:
                item["spec"] = describe_spec(finder.find_spec(package, None))
            except Exception as exc:  # a broken finder is a finding, not a crash
                item["error"] = "%s: %s" % (type(exc).__name__, exc)
        out.append(item)
    return out


def spec_or_error(fn):
    try:
        return describe_spec(fn()), None
    except Exception as exc:
        return describe_spec(None), "%s: %s" % (type(exc).__name__, exc)


interpreter_spec, interpreter_error = spec_or_error(lambda: importlib.util.find_spec(package))
worker_path = [code_dir] + list(sys.path)
worker_spec, worker_error = spec_or_error(
    lambda: importlib.machinery.PathFinder.find_spec(package, worker_path)
)
scanned, found = scan(worker_path)
out = {
    "executable": sys.executable,
    "cwd": os.getcwd(),
    "code_dir": code_dir,
    "env": {name: name in os.environ for name in WATCHED_ENV},
    "env_names": sorted(os.environ),
    "flags": {
        "isolated": bool(sys.flags.isolated),
        "ignore_environment": bool(sys.flags.ignore_environment),
        "no_user_site": bool(sys.flags.no_user_site),
        "safe_path": bool(getattr(sys.flags, "safe_path", False)),
        "dont_write_bytecode": bool(sys.flags.dont_write_bytecode),
    },
    "sys_path": list(sys.path),
    "worker_path": worker_path,
    "interpreter_spec": interpreter_spec,
    "interpreter_spec_error": interpreter_error,
    "worker_spec": worker_spec,
    "worker_spec_error": worker_error,
    "scanned": scanned,
    "found": found,
    "pth": pth_files(),
    "meta_path": meta_path(),
    "errors": errors,
}
print(json.dumps(out))
