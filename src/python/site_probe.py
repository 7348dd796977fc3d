"""site_probe: the interpreter environment every `python -I` start builds,
observed without running any of it.

Run as `python -I -S -B -c <BYTECODE_LIBRARY = True + bytecode_probe.py +
this> PACKAGE [CACHE_DIR]`, in a sandbox where nothing is writable but its
private roots (see `Probe::run_before_judgement` in `src/python/mod.rs`).
Prints one JSON object.

`-S` keeps `site` from running at start-up, so no `.pth` line and no
`sitecustomize` of the environment executes in this process. The probe then
runs `site.main()` itself, exactly as a `python -I` start does (venv detection
from `pyvenv.cfg`, user site, every site directory and its `.pth` files, in
`site`'s own order), with three of `site`'s functions replaced by recorders:
`exec` (an executable `.pth` line is recorded, not run), `execsitecustomize`
and `execusercustomize` (the module is located with `find_spec`, which reads
no module code, not imported). `sys.path` afterwards is the path every
`python -I` start of this interpreter has.

Then every `__pycache__` file and `.pyc` under each site directory is
compared with `compile()` of its source (`examine_tree` of
`bytecode_probe.py`), except under `<site dir>/PACKAGE` (the SDK's package,
which `bytecode_probe.py` examines for the `bytecode` check). An optional
second argument is the bytecode cache directory (see `bytecode_probe.py`):
a file whose source and bytecode hash to a pair an earlier run compiled and
found equal is not compiled again.

Last, the standard library's own bytecode (`stdlib_bytecode`): each
`__pycache__/<module>.<cache_tag>.pyc` (optimisation level 0) under
`sysconfig`'s `stdlib` path, but for its site directories and the folders
no step imports from (`STDLIB_SKIP`), compared with its source the same way.
Not judged (the standard library is the base interpreter's, outside the
gate's scope): the gate seeds the run's bytecode cache with the files found
equal, so no later step compiles the standard library again.
"""
import importlib.util
import json
import os
import site
import sys
import sysconfig

package = sys.argv[1]
initial_path = list(sys.path)
executed_lines = []
site_dirs = []
startup_calls = []

_addsitedir = site.addsitedir


def _record_addsitedir(sitedir, known_paths=None):
    site_dirs.append(os.path.abspath(sitedir))
    return _addsitedir(sitedir, known_paths)


def _record_exec(source, *args, **kwargs):
    executed_lines.append(source)


site.addsitedir = _record_addsitedir
site.exec = _record_exec
site.execsitecustomize = lambda: startup_calls.append("sitecustomize")
site.execusercustomize = lambda: startup_calls.append("usercustomize")
site.main()


def locate(name):
    """`find_spec(name)`'s origin on the path `site` built, or None.
    Locating a top-level module reads no module code."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return "unlocatable: %s" % exc
    if spec is None:
        return None
    return spec.origin or "namespace package: %s" % list(spec.submodule_search_locations or [])


unique_dirs = []
for d in site_dirs:
    if d not in unique_dirs:
        unique_dirs.append(d)

# After `site.main()`, `sys.prefix` is the environment's (a venv's root).
load_known_pairs(sys.argv[2] if len(sys.argv) > 2 else "", sys.prefix)
bytecode = []
for d in unique_dirs:
    site_packages = d  # examine_tree's paths are relative to it
    if os.path.isdir(d):
        skip = {os.path.join(d, package)}
        bytecode.append({"site_dir": d, "files": examine_tree(d, skip)})

# Folders of the standard library no step of the run imports from (the
# test suite, IDLE, Tk, the 2to3 tool, pip's bootstrap) and the base
# interpreter's own site directories: not examined, not seeded.
STDLIB_SKIP = ("test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
               "site-packages", "dist-packages")


def examine_stdlib(root):
    """`examine_cached` for every level-0 bytecode file of this interpreter
    under `root` (paths relative to it), `STDLIB_SKIP` left out."""
    global site_packages
    site_packages = root  # examine_cached's paths are relative to it
    skip = {os.path.join(root, name) for name in STDLIB_SKIP} | set(unique_dirs)
    suffix = "." + cache_tag + ".pyc"
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.join(dirpath, d) not in skip)
        if os.path.basename(dirpath) != "__pycache__":
            continue
        for name in sorted(filenames):
            if name.endswith(suffix) and name.count(".") == 2:
                path = os.path.join(dirpath, name)
                files.append(examine_cached(path, relative(path, root)))
    return files


stdlib = sysconfig.get_path("stdlib")
stdlib_bytecode = None
if stdlib and os.path.isdir(stdlib) and stdlib not in unique_dirs:
    stdlib_bytecode = {"site_dir": stdlib, "files": examine_stdlib(stdlib)}

base_site_packages = site.getsitepackages([sys.base_prefix])
print(
    json.dumps(
        {
            "executable": sys.executable,
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "exec_prefix": sys.exec_prefix,
            "base_exec_prefix": sys.base_exec_prefix,
            "python_version": sys.version.split()[0],
            "cache_tag": cache_tag,
            "magic": magic.hex(),
            "flags": {
                "isolated": bool(sys.flags.isolated),
                "ignore_environment": bool(sys.flags.ignore_environment),
                "no_user_site": bool(sys.flags.no_user_site),
                "safe_path": bool(getattr(sys.flags, "safe_path", False)),
            },
            "enable_user_site": bool(site.ENABLE_USER_SITE),
            "user_site": site.getusersitepackages() if site.ENABLE_USER_SITE else None,
            "scripts_dir": sysconfig.get_path(
                "scripts", vars={"base": sys.prefix, "platbase": sys.exec_prefix}
            ),
            "stdlib": sysconfig.get_path("stdlib"),
            "platstdlib": sysconfig.get_path("platstdlib"),
            "site_dirs": unique_dirs,
            "base_site_packages": [
                {"dir": d, "on_path": d in sys.path, "processed": d in unique_dirs}
                for d in base_site_packages
            ],
            "initial_path": initial_path,
            "sys_path": list(sys.path),
            "executed_pth_lines": sorted(set(executed_lines)),
            "startup_calls": startup_calls,
            "sitecustomize": locate("sitecustomize"),
            "usercustomize": locate("usercustomize"),
            "bytecode": bytecode,
            "bytecode_cache": cache_info,
            "stdlib_bytecode": stdlib_bytecode,
        }
    )
)
