"""docs/rulegraph.dot (and the .svg drawn from it) shows the workflow's rules as they are: the
same rules and edges as ``snakemake --rulegraph`` computes now, every rule of rules/*.smk."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOT = REPO / "docs/rulegraph.dot"
SVG = REPO / "docs/rulegraph.svg"
REGENERATE = ("run scripts/rulegraph.sh (it needs Graphviz's dot: apt-get install graphviz) and "
              "commit docs/rulegraph.dot and docs/rulegraph.svg")


def graph(dot: str) -> tuple[set[str], set[tuple[str, str]]]:
    """(rule names, edges as (from rule, to rule)) of a ``snakemake --rulegraph`` text."""
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"]+)"', dot, flags=re.M))
    edges = re.findall(r"^\s*(\d+) -> (\d+)\s*$", dot, flags=re.M)
    return set(labels.values()), {(labels[a], labels[b]) for a, b in edges}


def current_dot() -> str:
    env = {**os.environ, "SNAKEMAKE": str(Path(sys.executable).parent / "snakemake")}
    proc = subprocess.run(["bash", "scripts/rulegraph.sh", "--print"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def declared_rules() -> set[str]:
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    return {name for f in files for name in re.findall(r"^rule (\w+):", f.read_text(), re.M)}


def test_parse_a_rulegraph():
    dot = 'digraph {\n\t0[label = "all", color = "0 0 0"];\n\t1[label = "ingest"];\n\t1 -> 0\n}\n'
    assert graph(dot) == ({"all", "ingest"}, {("ingest", "all")})


@pytest.mark.workflow
def test_committed_rulegraph_matches_the_rules():
    rules, edges = graph(DOT.read_text())
    now_rules, now_edges = graph(current_dot())
    assert rules == now_rules, (
        f"docs/rulegraph.dot is out of date: rules added {sorted(now_rules - rules)}, "
        f"gone {sorted(rules - now_rules)}; {REGENERATE}")
    assert edges == now_edges, (
        f"docs/rulegraph.dot is out of date: edges added {sorted(now_edges - edges)}, "
        f"gone {sorted(edges - now_edges)}; {REGENERATE}")


def test_rulegraph_shows_every_rule():
    rules, _ = graph(DOT.read_text())
    missing = declared_rules() - rules
    assert not missing, (
        f"rules {sorted(missing)} are not in the picture: give the config of "
        f"scripts/rulegraph.sh what they need to run, then {REGENERATE}")


def test_svg_is_drawn_from_the_committed_dot():
    rules, _ = graph(DOT.read_text())
    drawn = set(re.findall(r'<text[^>]*>([^<]+)</text>', SVG.read_text()))
    assert drawn == rules, f"docs/rulegraph.svg differs from docs/rulegraph.dot; {REGENERATE}"
