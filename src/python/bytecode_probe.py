"""bytecode_probe: is every bytecode file in a package this interpreter's
compilation of its source?

Run as `python -I -S -B -c <this> SITE_PACKAGES PACKAGE PREFIX [CACHE_DIR]`
(`-S`: nothing of the environment runs; in a sandbox where nothing is
writable but its private roots, see `Probe::run_before_judgement` in
`src/python/mod.rs`). Prints one JSON object:
the interpreter's cache tag and magic number, and one entry per file under any
`__pycache__` folder of SITE_PACKAGES/PACKAGE plus every `.pyc` outside one
(sourceless bytecode, which import loads when no `.py` is next to it).

Each `__pycache__/<module>.<cache_tag>[.opt-N].pyc` is unmarshalled and
compared, code object by code object, with `compile()` of
`../<module>.py` at optimization level N (0 without `.opt-N`) and
`dont_inherit=True`, as importlib's `source_to_code` compiles it. `co_filename`
is not compared: importlib rewrites it to the source path on load
(`_imp._fix_co_filename`). The 16-byte header (PEP 552) is read too: magic
number, flags (timestamp, checked hash, unchecked hash) and whether the
interpreter would accept it for the source as it is now.

Reads files only: imports nothing from the package, so probing cannot execute
its code.

Compiling is most of the probe's cost (about 2.5 ms a file, 7 s for the
SDK's venv). PREFIX is the environment's `sys.prefix` as `site` sets it (the
site probe's answer; empty: this process's). An optional fourth argument
names a bytecode cache directory
(`<XDG cache>/verify-coding-candidates/bytecode`): the probe reads
`<dir>/<interpreter key>.pairs` there, lines
`OPT:SOURCE_SHA256:PYC_SHA256:PATH` (PATH the bytecode file's absolute path)
that earlier runs found equal by compiling and comparing with this same
interpreter in this same environment (`interpreter_key`: the SHA-256 of the
interpreter's executable, its shared libpython if any, `sys.version`, the
magic number and the environment's prefix). A file whose path, source and
bytecode match a listed pair is `equal` with `cached` true, not compiled
again; every other file is compiled and compared. Each entry carries both
SHA-256 digests, so the verifier can add the pairs found equal now. Only the
verifier writes the file; the probe reads it, and cannot write it (the
sandbox binds it read-only).

With a global `BYTECODE_LIBRARY = True` defined before this source (as
`site_probe.py` is run), only the functions are defined: the caller sets
`site_packages`, calls `load_known_pairs` and then `examine_tree`.
"""
import hashlib
import importlib.util
import json
import marshal
import os
import sys
import sysconfig

cache_tag = sys.implementation.cache_tag
magic = importlib.util.MAGIC_NUMBER

# Pairs (`OPT:SOURCE_SHA256:PYC_SHA256`) an earlier run found equal by
# compiling with this interpreter; see `load_known_pairs`.
known_pairs = set()
cache_info = None


def interpreter_key(prefix):
    """SHA-256 (hex) of the interpreter's identity: what `compile()` depends
    on (the executable's bytes, the shared libpython's when the interpreter
    is built with one, `sys.version` and the magic number) and the
    environment's prefix, so no environment reads another's pairs."""
    digest = hashlib.sha256()
    for path in [os.path.realpath(sys.executable)] + shared_libpython():
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    digest.update(sys.version.encode() + b"\0" + magic + b"\0")
    digest.update(os.path.abspath(prefix).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def shared_libpython():
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return []
    name = sysconfig.get_config_var("LDLIBRARY") or ""
    for folder in (sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LIBPL")):
        if folder and name and os.path.isfile(os.path.join(folder, name)):
            return [os.path.realpath(os.path.join(folder, name))]
    return []


def load_known_pairs(cache_dir, prefix):
    """Reads `<cache_dir>/<interpreter_key(prefix)>.pairs` into
    `known_pairs` and sets `cache_info` (file, its SHA-256, pairs read);
    nothing when `cache_dir` is empty. A missing file is an empty cache."""
    global cache_info
    if not cache_dir:
        return
    path = os.path.join(cache_dir, interpreter_key(prefix) + ".pairs")
    cache_info = {"path": path, "sha256": None, "pairs_read": 0}
    try:
        data = open(path, "rb").read()
    except OSError:
        return
    cache_info["sha256"] = hashlib.sha256(data).hexdigest()
    for line in data.decode("utf-8", "surrogateescape").split("\n"):
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[0] in ("0", "1", "2") and all(
            len(p) == 64 for p in parts[1:3]
        ) and os.path.isabs(parts[3]):
            known_pairs.add(line)
    cache_info["pairs_read"] = len(known_pairs)

CODE_FIELDS = [
    "co_code",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_nlocals",
    "co_stacksize",
    "co_flags",
    "co_firstlineno",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_name",
    "co_qualname",
    "co_linetable",
    "co_exceptiontable",
]


def const_key(value):
    """A key equal for two constants only when they are the same constant:
    type-exact (1, 1.0 and True differ), floats by bits (0.0 and -0.0 differ,
    NaN equals NaN), containers element by element."""
    kind = type(value)
    if kind is float:
        return ("float", value.hex())
    if kind is complex:
        return ("complex", value.real.hex(), value.imag.hex())
    if kind is tuple:
        return ("tuple",) + tuple(const_key(v) for v in value)
    if kind is frozenset:
        return ("frozenset", frozenset(const_key(v) for v in value))
    if kind is type(compare_code.__code__):
        return ("code", id(value))
    return (kind.__module__, kind.__qualname__, value)


def compare_code(found, expected, where):
    """The first difference between two code objects as `where.field`, or None."""
    for field in CODE_FIELDS:
        if not hasattr(expected, field):
            continue
        a, b = getattr(found, field), getattr(expected, field)
        if a != b or type(a) is not type(b):
            return "%s.%s" % (where, field)
    found_consts, expected_consts = found.co_consts, expected.co_consts
    if len(found_consts) != len(expected_consts):
        return "%s.co_consts (%d constants, expected %d)" % (
            where,
            len(found_consts),
            len(expected_consts),
        )
    code_type = type(expected)
    for index, (a, b) in enumerate(zip(found_consts, expected_consts)):
        here = "%s.co_consts[%d]" % (where, index)
        if type(a) is code_type and type(b) is code_type:
            diff = compare_code(a, b, "%s<%s>" % (here, b.co_name))
            if diff:
                return diff
        elif type(a) is code_type or type(b) is code_type:
            return here
        elif const_key(a) != const_key(b):
            return here
    return None


def header(data, source_path):
    """PEP 552 header facts: flags kind and whether the interpreter would
    accept the file for the source as it is (otherwise it recompiles)."""
    flags = int.from_bytes(data[4:8], "little")
    out = {"magic_ok": data[:4] == magic, "flags": flags, "kind": None, "current": None}
    if flags & ~0b11:
        out["kind"] = "invalid-flags"
        return out
    try:
        source_bytes = open(source_path, "rb").read()
        stat = os.stat(source_path)
    except OSError:
        return out
    if flags & 0b1:
        checked = bool(flags & 0b10)
        out["kind"] = "checked-hash" if checked else "unchecked-hash"
        expected = importlib.util.source_hash(source_bytes)
        # An unchecked hash-based file is loaded without looking at the source.
        out["current"] = (not checked) or data[8:16] == expected
    else:
        out["kind"] = "timestamp"
        mtime = int.from_bytes(data[8:12], "little")
        size = int.from_bytes(data[12:16], "little")
        out["current"] = mtime == (int(stat.st_mtime) & 0xFFFFFFFF) and size == (
            stat.st_size & 0xFFFFFFFF
        )
    return out


def relative(path, base):
    """`os.path.relpath(path, base)` for a path found by walking below
    `base`: the part after `base/`, without relpath's normalising of both
    (a third of this probe's time on 3 000 files); anything else through
    relpath itself."""
    prefix = base if base.endswith("/") else base + "/"
    if path.startswith(prefix) and "/./" not in path and "/../" not in path:
        return path[len(prefix):]
    return os.path.relpath(path, base)


def examine_cached(path, rel):
    """One file inside a `__pycache__` folder."""
    entry = {"path": rel, "source": None, "optimize": None, "header": None,
             "outcome": None, "difference": None, "source_sha256": None,
             "pyc_sha256": None, "cached": False}
    name = os.path.basename(path)
    parts = name.split(".")
    # <module>.<cache_tag>.pyc or <module>.<cache_tag>.opt-N.pyc; the module
    # name itself has no dot.
    optimize = None
    if len(parts) == 3 and parts[1] == cache_tag and parts[2] == "pyc":
        optimize = 0
    elif (
        len(parts) == 4
        and parts[1] == cache_tag
        and parts[2] in ("opt-1", "opt-2")
        and parts[3] == "pyc"
    ):
        optimize = int(parts[2][4:])
    if optimize is None:
        entry["outcome"] = "foreign-name"
        return entry
    entry["optimize"] = optimize
    source_path = os.path.join(os.path.dirname(os.path.dirname(path)), parts[0] + ".py")
    entry["source"] = relative(source_path, site_packages)
    try:
        data = open(path, "rb").read()
    except OSError as exc:
        entry["outcome"] = "unreadable"
        entry["difference"] = str(exc)
        return entry
    if len(data) < 16:
        entry["outcome"] = "bad-header"
        entry["difference"] = "%d bytes, shorter than the 16-byte header" % len(data)
        return entry
    entry["header"] = header(data, source_path)
    if not entry["header"]["magic_ok"]:
        entry["outcome"] = "bad-header"
        entry["difference"] = "magic number %s, this interpreter's is %s" % (
            data[:4].hex(),
            magic.hex(),
        )
        return entry
    if entry["header"]["kind"] == "invalid-flags":
        entry["outcome"] = "bad-header"
        entry["difference"] = "flags %#x, PEP 552 defines only bits 0 and 1" % entry["header"]["flags"]
        return entry
    if not os.path.isfile(source_path):
        entry["outcome"] = "no-source"
        return entry
    try:
        source_bytes = open(source_path, "rb").read()
    except OSError as exc:
        entry["outcome"] = "differs"
        entry["difference"] = "the source is unreadable (%s)" % exc
        return entry
    entry["source_sha256"] = hashlib.sha256(source_bytes).hexdigest()
    entry["pyc_sha256"] = hashlib.sha256(data).hexdigest()
    # A listed pair is these exact bytes, unmarshalled, compiled and found
    # equal by an earlier run with this interpreter: neither is done again.
    key = "%d:%s:%s:%s" % (optimize, entry["source_sha256"], entry["pyc_sha256"],
                           os.path.join(site_packages, rel))
    if key in known_pairs:
        entry["outcome"] = "equal"
        entry["cached"] = True
        return entry
    try:
        found = marshal.loads(data[16:])
    except Exception as exc:
        entry["outcome"] = "differs"
        entry["difference"] = "not a marshalled code object (%s)" % exc
        return entry
    if type(found) is not type(compare_code.__code__):
        entry["outcome"] = "differs"
        entry["difference"] = "holds a %s, not a code object" % type(found).__name__
        return entry
    try:
        expected = compile(source_bytes, source_path, "exec", dont_inherit=True, optimize=optimize)
    except (OSError, SyntaxError, ValueError) as exc:
        entry["outcome"] = "differs"
        entry["difference"] = "the source does not compile (%s)" % exc
        return entry
    diff = compare_code(found, expected, "<module>")
    entry["outcome"] = "differs" if diff else "equal"
    entry["difference"] = diff
    return entry


def examine_tree(root, skip=()):
    """One entry per file under a `__pycache__` folder of `root` and per
    `.pyc` outside one; paths relative to the global `site_packages`.
    Directories whose path is in `skip` are not entered."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.join(dirpath, d) not in skip)
        in_cache = os.path.basename(dirpath) == "__pycache__"
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = relative(path, site_packages)
            if in_cache:
                files.append(examine_cached(path, rel))
            elif name.endswith(".pyc"):
                files.append({"path": rel, "source": None, "optimize": None, "header": None,
                              "outcome": "sourceless", "difference": None})
    return files


if not globals().get("BYTECODE_LIBRARY"):
    site_packages, package = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    load_known_pairs(sys.argv[4] if len(sys.argv) > 4 else "", prefix or sys.prefix)
    files = examine_tree(os.path.join(site_packages, package))
    print(json.dumps({"cache_tag": cache_tag, "magic": magic.hex(), "files": files,
                      "cache": cache_info}))
