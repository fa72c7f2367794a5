"""Files cut by concept (issue 51): read from the source with ``ast``, the package has no import
circle among its modules, imports no private name from another of its modules, and re-exports
nothing outside a package's ``__init__.py``.

An import anywhere in a module counts, a function's own included (an import inside a function
only defers the circle to the first call). A package's ``__init__`` is a module like any other:
``from cruxflow.a import b`` is an edge to ``cruxflow.a.b`` when that is a module, else to
``cruxflow.a``.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cruxflow"

@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    # (line, target module, imported name or None for ``import x``, bound local name)
    imports: list[tuple[int, str, str | None, str]] = field(default_factory=list)


def _modules(package: Path = PACKAGE) -> dict[str, Module]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Module(name, path, is_package, ast.parse(path.read_text(), str(path)))
    for module in found.values():
        module.imports = list(_imports(module, found))
    return found


def _nearest(name: str, modules) -> str | None:
    """The module that ``name`` (a dotted path) is, or that holds it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: Module, modules):
    """Each import of a cruxflow module: (line, the module imported from, the name taken
    from it or None for a plain ``import``, the name it is bound to here)."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "cruxflow":
                    target = _nearest(alias.name, modules)
                    yield node.lineno, target, None, alias.asname or alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.name.split(".")
                if not module.is_package:
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "cruxflow":
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:     # a module taken from its package
                    yield node.lineno, full, None, alias.asname or alias.name
                else:
                    yield node.lineno, _nearest(source, modules), alias.name, \
                        alias.asname or alias.name


def _where(module: Module, line: int) -> str:
    path = module.path
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"


# --- circles


def _cycles(modules: dict[str, Module]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), and
    the modules that import themselves."""
    edges = {m: sorted({t for _, t, _, _ in mod.imports if t and t != m})
             for m, mod in modules.items()}
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_among_modules():
    modules = _modules()
    circles = _cycles(modules)
    lines = []
    for circle in circles:
        lines.append("circle: " + " -> ".join(circle))
        for m in circle:
            lines += [f"    {_where(modules[m], line)} imports {t}" for line, t in
                      sorted({(line, t) for line, t, _, _ in modules[m].imports
                              if t in circle and t != m})]
    print("\n".join(lines))
    assert not circles, "\n".join(lines)


# --- private names


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def private_imports(modules: dict[str, Module]) -> list[str]:
    found = []
    for m, mod in modules.items():
        aliases = {}     # a local name bound to a cruxflow module: that module
        for line, target, name, bound in mod.imports:
            if name is not None and _private(name) and target != m:
                found.append(f"{_where(mod, line)}: {m} imports {name} from {target}")
            if name is None:
                aliases[bound] = target
            elif f"{target}.{name}" in modules:
                aliases[bound] = f"{target}.{name}"
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            chain = _dotted(node)
            if not chain or chain[0] not in aliases:
                continue
            # ``import cruxflow.a.b`` binds ``cruxflow``: walk the chain down the modules
            owner = aliases[chain[0]] if chain[0] != "cruxflow" else "cruxflow"
            for part in chain[1:-1]:
                if f"{owner}.{part}" not in modules:
                    owner = None
                    break
                owner = f"{owner}.{part}"
            if owner and owner != m:
                found.append(f"{_where(mod, node.lineno)}: {m} reads "
                             f"{'.'.join(chain)} (private to {owner})")
    return found


def test_no_private_name_imported_from_another_module():
    found = private_imports(_modules())
    print("\n".join(found))
    assert not found, "\n".join(found)


# --- re-exports


def _used_names(tree: ast.Module, skip: set[int]) -> set[str]:
    """Every name the module reads, annotations written as strings included (not the string
    constants ``skip``: those of ``__all__``)."""
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in skip):
            try:        # a string annotation ("Dataset", "list[Topic]")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")     # a string that is not code
                    expr = ast.parse(node.value, mode="eval")
            except (SyntaxError, ValueError):
                continue
            used.update(n.id for n in ast.walk(expr) if isinstance(n, ast.Name))
    return used


def _all_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names listed in ``__all__`` and the string constants that list them."""
    names, nodes = set(), set()
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign)
                   else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value:
            for c in ast.walk(node.value):
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    names.add(c.value)
                    nodes.add(id(c))
    return names, nodes


def reexports(modules: dict[str, Module]) -> list[str]:
    found = []
    for m, mod in modules.items():
        if mod.is_package:
            continue
        listed, listing = _all_names(mod.tree)
        used = _used_names(mod.tree, listing)
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        found.append(f"{_where(mod, node.lineno)}: {m} imports * "
                                     f"from {node.module}")
                        continue
                    bound = alias.asname or alias.name.split(".")[0]
                    if bound in listed:
                        found.append(f"{_where(mod, node.lineno)}: {m} lists the imported "
                                     f"name {bound} in __all__")
                    elif bound not in used:
                        found.append(f"{_where(mod, node.lineno)}: {m} imports {bound} and "
                                     "never uses it")
    return found


def test_no_reexport_outside_a_package_init():
    """A plain module imports only what it uses, and its ``__all__`` lists only what it
    defines: a face of several modules is a package's ``__init__.py``."""
    found = reexports(_modules())
    print("\n".join(found))
    assert not found, "\n".join(found)


# --- the checks themselves, on small packages written here


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Module]:
    for rel, text in files.items():
        path = tmp_path / "cruxflow" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return _modules(tmp_path / "cruxflow")


def test_the_checks_find_what_they_are_for(tmp_path):
    modules = _package(tmp_path, {
        "__init__.py": "",
        "a/__init__.py": "from cruxflow.a.b import g  # a face: allowed here\n",
        "a/b.py": "def g():\n    from cruxflow.a import c\n    return c.h()\n",
        "a/c.py": ("from cruxflow.a.b import g\nfrom cruxflow.d import _hidden, shown\n"
                   "import cruxflow.d as d\n__all__ = ['h', 'shown']\n"
                   "def h():\n    return g, d._other\n"),
        "d.py": "import os\n_hidden = 1\n_other = 2\nshown = 3\n",
    })
    # a function-level import closes the circle b -> c -> b; the package's __init__ -> b
    # is an edge, not a circle
    assert _cycles(modules) == [["cruxflow.a.b", "cruxflow.a.c"]]
    private = private_imports(modules)
    assert [p.split(": ", 1)[1] for p in private] == [
        "cruxflow.a.c imports _hidden from cruxflow.d",
        "cruxflow.a.c reads d._other (private to cruxflow.d)"]
    assert private[0].endswith(":2: cruxflow.a.c imports _hidden from cruxflow.d")
    # _hidden is imported and unused; shown is listed in __all__; d.py's os is unused
    assert sorted(r.split(": ", 1)[1] for r in reexports(modules)) == [
        "cruxflow.a.c imports _hidden and never uses it",
        "cruxflow.a.c lists the imported name shown in __all__",
        "cruxflow.d imports os and never uses it"]
