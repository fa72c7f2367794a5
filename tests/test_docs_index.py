"""The docs hold together: docs/README.md's index links every page of docs/, every relative link
of README.md and docs/*.md reaches a file, and every module or file of the repository a page
names is there (a page that names a module that was moved or merged misleads its reader).
Reads text only: no import of the modules named, no mark."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IDS = [str(p.relative_to(ROOT)) for p in DOCS]

LINK = re.compile(r"\]\(([^)\s]+)\)")
# a path into the repository's own folders, as a page writes it (`cruxflow/metrics/names.py`;
# `owner/repo:tests/...` is another repository's)
PATH = re.compile(r"(?<![\w./:-])((?:cruxflow|tests|benchmarks|scripts|workflow_scripts|rules|"
                  r"resources|presets|profiles|envs)/[\w./-]*[\w/])(?![\w*<{-])")
# a dotted name under the package (`cruxflow.metrics.scorer.ContextScorer`; not a measure's
# printed name, `cruxflow.alpha_nDCG@10`)
DOTTED = re.compile(r"(?<![\w./-])cruxflow(?:\.[A-Za-z_]\w*)+(?![\w@])")
# files a guide's example creates (tests/test_guides.py), named before they exist
CREATES = re.compile(r'<!-- guide: create="([^"]+)"')


def test_the_index_links_every_page():
    index = (ROOT / "docs" / "README.md").read_text()
    linked = {t.split("#")[0] for t in LINK.findall(index)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert not pages - linked, f"docs/README.md does not link: {sorted(pages - linked)}"


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation but ``-`` and ``_``
    dropped, spaces as ``-``; a repeated one numbered (``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_relative_link_reaches_a_file_and_its_heading(doc):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, anchor = target.partition("#")
        page = doc.parent / path if path else doc
        if not page.exists() or (anchor and page.suffix == ".md"
                                 and anchor not in _anchors(page)):
            broken.append(target)
    assert not broken, f"{doc.name}: links to nothing: {broken}"


def _bound(module: Path) -> set[str]:
    """The names a module binds at its top level (definitions, assignments, imports), and the
    string keys of its top-level dicts (a package's lazy names, PEP 562)."""
    tree = ast.parse(module.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            if isinstance(node.value, ast.Dict):
                names.update(k.value for k in node.value.keys
                             if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return names


def _resolves(dotted: str) -> bool:
    """``cruxflow.a.b.C``: the longest prefix that is a module or package of the checkout, and
    the first name after it bound in that module's source."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        module = (base.with_suffix(".py") if base.with_suffix(".py").is_file()
                  else base / "__init__.py" if (base / "__init__.py").is_file() else None)
        if module is not None:
            return i == len(parts) or parts[i] in _bound(module)
    return False


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_module_and_file_a_page_names_is_there(doc):
    text = doc.read_text()
    created = set(CREATES.findall(text))
    missing = sorted({p for p in PATH.findall(text)
                      if p not in created and not (ROOT / p).exists()})
    missing += sorted({d for d in DOTTED.findall(text)
                       if d.replace(".", "/") + ".py" not in created and not _resolves(d)})
    assert not missing, f"{doc.name} names what the checkout lacks: {missing}"
