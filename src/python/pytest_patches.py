"""Names the statements of the repository's Python modules that assign to an
attribute of pytest's objects or of the suites run's own plugin.

Prepended to `suites_run.py` (one `-c` program); the driver calls
`scan_patches(rootdir)` before pytest imports anything of the repository.
Read with `ast`, never imported. Code in the suites' interpreter can forge
what the run's plugin observes (`pytest.TestReport.outcome = ...`,
`setattr(_pytest.runner, ...)`, `monkeypatch.setattr("_pytest...")`,
`r.TestReport.__init__ = ...` after `import _pytest.reports as r`, or the
plugin reached through `config.pluginmanager`): this names that known
shape, file and line. It names fewer than code can do (a name built at run
time, `exec`), never a statement about the repository's own objects.
"""

import ast as _ast
import os as _os

# Roots of what the run's outcomes rest on: pytest, its package, the driver
# (`__main__`: the plugin's module) and a plugin reached through the plugin
# manager.
_PATCH_ROOTS = ("pytest", "_pytest", "__main__", "<plugin>")
_PLUGIN_GETTERS = ("get_plugin", "getplugin", "get_plugins", "list_name_plugin", "_name2plugin")
_PATCH_CALLS = ("setattr", "delattr", "setitem", "delitem", "patch", "object", "multiple", "__setattr__")
_SKIP_DIRS = ("__pycache__", "node_modules", "site-packages")


def _rooted(origin):
    return origin is not None and origin.split(".", 1)[0] in _PATCH_ROOTS


def _string_origin(node):
    if isinstance(node, _ast.Constant) and isinstance(node.value, str):
        return node.value if _rooted(node.value) else None
    return None


class _File:
    def __init__(self, tree):
        self.tree = tree
        self.aliases = {}

    def origin(self, node):
        """What `node` evaluates to, when it is pytest's, the driver's or the
        plugin's (a dotted name), else None."""
        if isinstance(node, _ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, _ast.Attribute):
            if node.attr in _PLUGIN_GETTERS:
                return "<plugin>"
            base = self.origin(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, _ast.Call):
            func = node.func
            name = func.id if isinstance(func, _ast.Name) else func.attr if isinstance(func, _ast.Attribute) else ""
            if name in _PLUGIN_GETTERS:
                return "<plugin>"
            if name in ("type", "vars") and node.args:
                return self.origin(node.args[0])
            if name in ("import_module", "__import__") and node.args:
                return _string_origin(node.args[0])
            if name == "getattr" and len(node.args) >= 2:
                base = self.origin(node.args[0])
                attr = node.args[1].value if isinstance(node.args[1], _ast.Constant) else "?"
                return f"{base}.{attr}" if base else None
            return self.origin(func) if name in ("iter", "list", "next") else None
        if isinstance(node, _ast.Subscript):
            if isinstance(node.value, _ast.Attribute) and node.value.attr == "modules":
                return _string_origin(node.slice)
            return self.origin(node.value)
        return None

    def bind(self, target, origin):
        if isinstance(target, _ast.Name) and _rooted(origin):
            self.aliases[target.id] = origin

    def read_aliases(self):
        """Names bound to pytest, the driver or the plugin anywhere in the
        file (scopes merged: an over-approximation), to a fixed point."""
        for _ in range(4):
            before = dict(self.aliases)
            for node in _ast.walk(self.tree):
                if isinstance(node, _ast.Import):
                    for a in node.names:
                        if a.asname:
                            self.bind(_ast.Name(a.asname), a.name)
                        else:
                            self.bind(_ast.Name(a.name.split(".")[0]), a.name.split(".")[0])
                elif isinstance(node, _ast.ImportFrom) and node.module and not node.level:
                    for a in node.names:
                        self.bind(_ast.Name(a.asname or a.name), f"{node.module}.{a.name}")
                elif isinstance(node, (_ast.Assign, _ast.AnnAssign, _ast.NamedExpr)) and node.value is not None:
                    targets = node.targets if isinstance(node, _ast.Assign) else [node.target]
                    for t in targets:
                        self.bind(t, self.origin(node.value))
                elif isinstance(node, (_ast.For, _ast.AsyncFor, _ast.comprehension)):
                    self.bind(node.target, self.origin(node.iter))
                elif isinstance(node, _ast.withitem) and node.optional_vars is not None:
                    self.bind(node.optional_vars, self.origin(node.context_expr))
            if self.aliases == before:
                return

    def targets(self, node):
        """(line, target) of each patch `node` makes."""
        if isinstance(node, (_ast.Assign, _ast.AugAssign, _ast.AnnAssign, _ast.Delete)):
            targets = list(node.targets) if isinstance(node, (_ast.Assign, _ast.Delete)) else [node.target]
            flat = []
            while targets:
                t = targets.pop()
                if isinstance(t, (_ast.Tuple, _ast.List)):
                    targets.extend(t.elts)
                else:
                    flat.append(t)
            for t in flat:
                if isinstance(t, (_ast.Attribute, _ast.Subscript)):
                    base = self.origin(t.value)
                    if _rooted(base):
                        yield node.lineno, f"{base}.{t.attr}" if isinstance(t, _ast.Attribute) else f"{base}[...]"
        elif isinstance(node, _ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, _ast.Name) else func.attr if isinstance(func, _ast.Attribute) else ""
            if name not in _PATCH_CALLS:
                return
            first = node.args[0]
            target = _string_origin(first) if isinstance(func, _ast.Attribute) else None
            target = target or self.origin(first)
            if _rooted(target):
                attr = node.args[1] if len(node.args) > 1 else None
                if isinstance(attr, _ast.Constant) and isinstance(attr.value, str):
                    target = f"{target}.{attr.value}"
                yield node.lineno, target


def scan_source(source, path="<source>"):
    """[(line, target, statement)] of the patches in `source`."""
    tree = _ast.parse(source, path)
    f = _File(tree)
    f.read_aliases()
    found = []
    for node in _ast.walk(tree):
        for line, target in f.targets(node):
            try:
                text = _ast.unparse(node)
            except Exception:
                text = type(node).__name__
            found.append((line, target, text.splitlines()[0][:160] if text else ""))
    return sorted(set(found))


def scan_patches(root):
    """{"files": int, "patches": [{"file", "line", "target", "statement"}]}
    over every `.py` file under `root` (dot folders, virtual environments and
    caches left out)."""
    patches, files = [], 0
    root = _os.path.abspath(root)
    for folder, dirs, names in _os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and not _os.path.isfile(_os.path.join(folder, d, "pyvenv.cfg"))
        )
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = _os.path.join(folder, name)
            files += 1
            try:
                with open(path, "rb") as fh:
                    found = scan_source(fh.read(), path)
            except (OSError, SyntaxError, ValueError, RecursionError):
                continue
            rel = _os.path.relpath(path, root).replace(_os.sep, "/")
            for line, target, text in found:
                patches.append({"file": rel, "line": line, "target": target, "statement": text})
    return {"files": files, "patches": patches}
