"""The package map (docs/package-map.md) and the layout rules hold for the tree as it is: the
map names every folder and what it holds, and no module that is not there."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cruxflow"


def test_package_map_names_every_subpackage_and_nothing_else():
    text = (ROOT / "docs" / "package-map.md").read_text()
    section = text[text.index("# Package map"):text.index("## Layout")]
    mapped = set(re.findall(r"^\| `cruxflow/(\w+)/` \|", section, re.M))
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert mapped == packages


def _rows() -> dict[str, str]:
    text = (ROOT / "docs" / "package-map.md").read_text()
    section = text[text.index("# Package map"):text.index("## Layout")]
    return dict(re.findall(r"^\| `cruxflow/(\w+)/` \|(.*)\|$", section, re.M))


def test_package_map_places_every_nested_package():
    """A package inside a folder (``workflow/plan/``, ``beyond/udcg/``) is named in its
    folder's row, as ``plan/``: the map names folders and what each holds."""
    rows = _rows()
    missing = []
    for init in sorted(PACKAGE.glob("*/*/**/__init__.py")):
        folder = init.parent.relative_to(PACKAGE)
        top, rest = folder.parts[0], "/".join(folder.parts[1:])
        if f"`{rest}/`" not in rows.get(top, "") and f"`cruxflow/{folder}/`" not in rows.get(
                top, ""):
            missing.append(f"cruxflow/{folder}/")
    assert not missing, f"packages the map does not place in their folder's row: {missing}"


def test_package_map_names_no_module_that_is_not_there():
    """Every module the map names (``name.py``, or a path under the folder) exists, so that
    what it says stays true; it need not name every module."""
    extra = []
    for folder, row in _rows().items():
        there = {p.relative_to(PACKAGE / folder) for p in (PACKAGE / folder).rglob("*.py")}
        names = {p.name for p in there} | {str(p) for p in there}
        extra += [f"{folder}: {n}" for n in sorted(set(re.findall(r"`([\w/]+\.py)`", row)))
                  if n not in names and not (n.startswith("cruxflow/") and (ROOT / n).is_file())]
    text = (ROOT / "docs" / "package-map.md").read_text()
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    missing = [f"cruxflow/{m}" for m in top if f"`cruxflow/{m}`" not in text]
    assert not extra, f"modules the package map names that are not there: {extra}"
    assert not missing, f"top-level modules the package map does not name: {missing}"


def test_top_level_holds_packages_and_few_small_modules():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "_extras.py", "weights.py"]


def test_nothing_outside_cli_imports_cli():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n == "cruxflow.cli" or n.startswith("cruxflow.cli.") for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders
