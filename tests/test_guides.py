"""The guides that say how to extend cruxflow are true: each guide's example change, made
exactly as its code blocks say, in a scratch copy of the checkout, passes the suite's tests of
what it extends there, and touches exactly the files the guide says it touches.

A guide marks each block that changes a file with an HTML comment on the line above it (above
its ``docs-test`` marker, if it has one):

* ``<!-- guide: create="PATH" -->``: the block is the new file;
* ``<!-- guide: insert="PATH" before="LINE" -->`` (or ``after="LINE"``): the block goes before
  (after) the one line of the file that reads LINE, spaces around it aside;
* ``<!-- guide: replace="PATH" line="LINE" -->``: the block takes the place of that line;
* ``<!-- guide: append="PATH" -->``: the block goes at the end of the file;
* ``<!-- guide: merge="PATH" at="DOTTED.KEYS" -->``: the JSON block is merged into the JSON
  file's object at those keys (objects merged key by key, lists extended);
* ``<!-- guide: run -->``: the ``bash`` block's commands run in the copy's root, in order,
  after the changes above them.

The guide's section "The files it touches" lists each file (``- `PATH```) the change touches;
the copy must differ from the checkout in exactly those.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from docs_harness import environment, scratch_copy

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!--\s*guide:(.*?)-->", re.S)
ATTR = re.compile(r"""(\w+)(?:=(?:"([^"]*)"|'([^']*)'))?""")
FENCE = re.compile(r"^```(\w*)\s*$")
ACTIONS = ("create", "insert", "replace", "append", "merge", "run")


@dataclass
class Step:
    action: str
    path: str | None
    attrs: dict[str, str]
    body: str
    line: int          # the doc's line of the block


def steps(doc: Path) -> list[Step]:
    """The guide's marked blocks, in order."""
    lines = doc.read_text().splitlines()
    out, pending = [], None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("<!-- guide:"):
            text = line
            while "-->" not in text:
                i += 1
                text += "\n" + lines[i]
            attrs = {m[1]: m[2] if m[2] is not None else (m[3] or "")
                     for m in ATTR.finditer(MARK.search(text).group(1))}
            [action] = [a for a in ACTIONS if a in attrs]
            pending = (action, attrs, i + 1)
        elif FENCE.match(line) and pending is not None:
            end = lines.index("```", i + 1)
            action, attrs, where = pending
            out.append(Step(action, attrs[action] or None, attrs,
                            "\n".join(lines[i + 1:end]) + "\n", where))
            pending, i = None, end
        i += 1
    assert pending is None, f"{doc.name}: a guide marker with no block under it"
    return out


def listed_files(doc: Path) -> set[str]:
    """The files the guide's section "The files it touches" lists."""
    text = doc.read_text()
    section = text.split("## The files it touches", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([^`]+)`", section, re.M))


def _one_line(text: str, wanted: str, step: Step) -> int:
    found = [i for i, line in enumerate(text.split("\n")) if line.strip() == wanted.strip()]
    assert len(found) == 1, (f"guide line {step.line}: {step.path} has {len(found)} lines "
                             f"reading {wanted!r}, not one: the guide no longer fits the file")
    return found[0]


def _merge(node, patch):
    if isinstance(node, dict) and isinstance(patch, dict):
        for key, value in patch.items():
            node[key] = _merge(node[key], value) if key in node else value
        return node
    if isinstance(node, list) and isinstance(patch, list):
        return [*node, *patch]
    return patch


def apply(step: Step, root: Path, env: dict) -> None:
    """Make one step's change in the copy ``root``."""
    if step.action == "run":
        for command in step.body.strip().split("\n"):
            done = subprocess.run(["bash", "-c", command], cwd=root, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        return
    path = root / step.path
    if step.action == "create":
        assert not path.exists(), f"{step.path} is there already"
        path.write_text(step.body)
        return
    text = path.read_text()
    if step.action == "append":
        path.write_text(text.rstrip("\n") + "\n\n" + step.body)
    elif step.action == "merge":
        data = json.loads(text)
        node = data
        for key in step.attrs["at"].split("."):
            node = node[key]
        _merge(node, json.loads(step.body))
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        lines = text.split("\n")
        block = step.body.rstrip("\n").split("\n")
        if step.action == "replace":
            at = _one_line(text, step.attrs["line"], step)
            lines[at:at + 1] = block
        elif "before" in step.attrs:
            at = _one_line(text, step.attrs["before"], step)
            lines[at:at] = block
        else:
            at = _one_line(text, step.attrs["after"], step) + 1
            lines[at:at] = block
        path.write_text("\n".join(lines))


def changed_files(copy: Path) -> set[str]:
    """The files of the copy that the checkout does not have, or has with other bytes."""
    out = set()
    for path in copy.rglob("*"):
        rel = path.relative_to(copy)
        if (rel.parts[0] == ".venv" or "__pycache__" in rel.parts or path.is_symlink()
                or not path.is_file()):
            continue
        original = ROOT / rel
        if not original.is_file() or original.read_bytes() != path.read_bytes():
            out.add(str(rel))
    return out


def made(guide: str, tmp_path: Path) -> tuple[Path, dict]:
    """A copy of the checkout with the guide's example change made; its environment."""
    doc = ROOT / "docs" / guide
    copy = scratch_copy(tmp_path / "copy")
    env = environment(copy)
    marked = steps(doc)
    assert marked, f"{guide} marks no block"
    for step in marked:
        apply(step, copy, env)
    touched = changed_files(copy)
    listed = listed_files(doc)
    named = {s.path for s in marked if s.path}
    # the guide lists every file its example touches, and the example touches no other
    assert touched == _concrete(listed, named), (
        f"{guide}: the example touches {sorted(touched)}; the guide lists {sorted(listed)}")
    return copy, env


def _concrete(listed: set[str], named: set[str]) -> set[str]:
    """The listed files, a pattern (``<kind>``) taken as the example's file of that folder."""
    out = set()
    for path in listed:
        if "<" in path:
            folder = path.rsplit("/", 1)[0]
            [path] = [n for n in named if n.startswith(folder + "/") and n not in listed]
        out.add(path)
    return out


def run_tests(copy: Path, env: dict, *tests: str) -> None:
    """The suite's tests of what the guide extends, on the copy."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "--fast",
                           "-p", "no:cacheprovider", *tests], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def python(copy: Path, env: dict, code: str) -> str:
    """``code`` run by Python in the copy (the copy's cruxflow); what it printed."""
    code = f"import cruxflow; assert cruxflow.__file__.startswith({str(copy)!r})\n{code}"
    done = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


# --- the guides ----------------------------------------------------------------------------


def test_the_guide_parser_reads_markers_and_lists(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text('# G\n\n## The files it touches\n\n- `a/b.py` (new): x\n- `c.json`: y\n\n'
                   '## Example\n\n<!-- guide: insert="a/c.py" before=\'X = ("a", "b")\' -->\n'
                   '<!-- docs-test: skip="a file" -->\n```python\nY = 1\n```\n')
    assert listed_files(doc) == {"a/b.py", "c.json"}
    [step] = steps(doc)
    assert (step.action, step.path, step.attrs["before"], step.body) == (
        "insert", "a/c.py", 'X = ("a", "b")', "Y = 1\n")
    target = tmp_path / "a" / "c.py"
    target.parent.mkdir()
    target.write_text('W = 0\n  X = ("a", "b")\n')
    apply(step, tmp_path, {})
    assert target.read_text() == 'W = 0\nY = 1\n  X = ("a", "b")\n'
    assert _merge({"k": {"e": [1], "x": 1}}, {"k": {"e": [2], "y": 2}}) == {
        "k": {"e": [1, 2], "x": 1, "y": 2}}


def test_adding_a_reranker(tmp_path):
    copy, env = made("adding-a-reranker.md", tmp_path)
    run_tests(copy, env, "tests/test_rerank_registry.py", "tests/test_structure.py",
              "tests/test_package_map.py")
    out = python(copy, env, """
import yaml
from cruxflow.rerank import rerank_run, registry
from cruxflow.rerank.factory import make_reranker
from cruxflow.workflow.config import with_defaults
config = yaml.safe_load(open("config.yaml"))
config["retrieval"]["rerankers"] = {"overlap": {"kind": "overlap", "min_chars": 4}}
with_defaults(config)
print(registry.problems("overlap", config["retrieval"]["rerankers"]["overlap"]))
run = {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}
texts = {"a": "Nothing here.", "b": "A river flood.", "c": "Flood waters rose in the river town."}
out = rerank_run(run, {"q": "Flood in the river town"}, texts, make_reranker({"kind": "overlap"}))
print(out["q"])
""")
    # by hand: query words of 3+ characters flood, the, river, town: c has all four, b two
    assert out.split("\n")[:2] == ["[]", "[('c', 4.0), ('b', 2.0), ('a', 0.0)]"]


def test_adding_an_input_format(tmp_path):
    copy, env = made("adding-an-input-format.md", tmp_path)
    run_tests(copy, env, "tests/test_formats.py", "tests/test_structure.py",
              "tests/test_package_map.py")
    sample = tmp_path / "clusters.jsonl"
    sample.write_text(
        json.dumps({"id": "storm", "summary": "A storm hit the coast.",
                    "articles": ["Winds rose.\n\nTrees fell.", "", "The storm moved on."]})
        + "\n" + json.dumps({"id": "lone", "summary": "One article only.",
                             "articles": ["Just one."]}) + "\n")
    out = python(copy, env, f"""
import json
from cruxflow.cli import main
from cruxflow.data.model import Dataset
from cruxflow.workflow.config import with_defaults, fill_format_defaults
assert main(["ingest", "--format", "clusters", "--input", {str(sample)!r},
             "--output", "out", "--json"]) == 0
ds = Dataset.load("out")
print(sorted(ds.topics), [t.doc_ids for t in ds.topics.values()])
print([ds.documents[d].text for d in ds.topics["clusters-0"].doc_ids])
config = {{"datasets": {{"mine": {{"format": "clusters", "input": {str(sample)!r}}}}}}}
fill_format_defaults(with_defaults(config))
print(config["datasets"]["mine"]["generate"], config["datasets"]["mine"]["prefix"])
""")
    # by hand: "lone" has one document (< min_docs 2) and is skipped; the empty article of
    # "storm" is no document; its paragraphs keep their blank line
    lines = out.split("\n")
    assert lines[-4:-1] == ["['clusters-0'] [['clusters-0:0', 'clusters-0:1']]",
                            "['Winds rose.\\n\\nTrees fell.', 'The storm moved on.']",
                            "True clusters"], out


def test_adding_a_prompt(tmp_path):
    copy, env = made("adding-a-prompt.md", tmp_path)
    run_tests(copy, env, "tests/test_prompt_files.py", "tests/test_prompts.py",
              "tests/test_structure.py")
    out = python(copy, env, """
from cruxflow.stages.prompts import RATING, RATING_STRICT
from cruxflow.stages.ratings import rating_requests
requests, _ = rating_requests([(["Who won?"], "The home team won.")], template=RATING_STRICT)
print(RATING_STRICT.id, RATING_STRICT.parts["rubric"] == RATING.parts["rubric"])
print(requests[0].prompt.endswith("Question: Who won?\\nContext: The home team won.\\nRating:"))
""")
    assert out.split("\n")[:2] == ["rating-strict/mine-v1 True", "True"], out


def test_adding_a_metric(tmp_path):
    copy, env = made("adding-a-metric.md", tmp_path)
    run_tests(copy, env, "tests/test_registry.py", "tests/test_structure.py")
    doc = (ROOT / "docs" / "adding-a-metric.md").read_text()
    example = re.findall(r"```python\n(.*?)```", doc, flags=re.S)[-1]
    out = python(copy, env, f"""
import ir_measures, cruxflow
{example}
qrels = {{"q1": {{"a": 0, "b": 2}}, "q2": {{"c": 1}}, "q3": {{"d": 1}}}}
run = {{"q1": {{"a": 3.0, "b": 2.0, "x": 1.0}}, "q2": {{"y": 3.0, "z": 2.0, "c": 1.0}}}}
ours = cruxflow.evaluate(run, qrels, ["RR@2", "RR@3"])
theirs = {{(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
    [ir_measures.RR @ 2, ir_measures.RR @ 3], qrels, run)}}
print([bool(ours.loc[q, n] == theirs[(q, n)])
       for q in ("q1", "q2", "q3") for n in ("RR@2", "RR@3")])
print(ours["RR@3"].tolist())
""")
    lines = out.split("\n")
    # the guide's own example prints its mean: 1/2 (q1, first relevant at rank 2) and 0
    assert lines[0] == "RR@3    0.25", out
    # ir_measures' RR@k topic for topic (q3 lacks from the run: 0); by hand: q1 1/2, q2 at
    # rank 3: 0 within 2, 1/3 within 3
    assert lines[2] == "[True, True, True, True, True, True]", out
    assert lines[3] == f"{[0.5, 1 / 3, 0.0]}", out


@pytest.mark.parametrize("guide", ["adding-a-reranker.md", "adding-an-input-format.md",
                                   "adding-a-prompt.md", "adding-a-metric.md"])
def test_the_guides_are_in_the_docs_index(guide):
    assert f"]({guide})" in (ROOT / "docs" / "README.md").read_text()
