"""The package map (docs/package-map.md) and the layout rules hold for the tree as it is."""

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


def test_top_level_holds_packages_and_few_small_modules():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "_extras.py", "weights.py"]


def test_no_module_over_about_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 520}
    assert not long


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
