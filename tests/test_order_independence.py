"""The same inputs give the same numbers whatever the order of their lines (issue 36, item 4).

Every line-based input file is shuffled (the judge ratings, the qrels, the run, the passages,
the topics, the sub-questions) and reversed, and every number the commands print must stay
the same to the last digit: ``cruxflow evaluate`` (its table at full precision, its per-query
table), ``cruxflow crux-eval`` (every mean and per-topic value, with and without
``--filter-by-oracle``, with Den) and :func:`cruxflow.evaluate`. On the release excerpt in
tests/data/crux and on the demo dataset (resources/demo/crux), whose judge file lists seven
of its ten topics so that the greedy P** chosen "first in the file" differed with the file's
order before ties were broken by the passages' natural order: that case is checked too.

crux-eval's ``order='file'`` measures (its Cov and Den) take a topic's first k kept lines in
the run file's order by definition: they depend on the run's order where a topic has more
than k lines of rank <= k (docs/engine.md, "Nothing depends on the order of a file"), which is
not the case of the runs here.
"""

from __future__ import annotations

import json
import random
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
from oracles.crux_formulas import answerable_questions, select_required

import cruxflow
from cruxflow.cli import main
from cruxflow.data.ingest.crux_common import read_ratings

DATA = Path(__file__).parent / "data" / "crux"
RELEASE = DATA / "release"
DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo" / "crux"
ORDERS = ["reversed", 1, 2]


def reorder_lines(folder: Path, order) -> None:
    """Every text file under ``folder`` with its lines shuffled (seeded) or reversed."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        lines = path.read_text().splitlines()
        if len(lines) < 2:
            continue
        if order == "reversed":
            lines.reverse()
        else:
            random.Random(order).shuffle(lines)
        path.write_text("\n".join(lines) + "\n")


def cli_json(capsys, *argv) -> dict:
    rc = main([*map(str, argv), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def numbers_of_evaluate(got: dict) -> dict:
    return {"aggregate": got["aggregate"], "missing": sorted(got["missing_in_run"]),
            "crux_eval": {k: got["crux_eval"][k] for k in ("aggregate", "per_topic",
                                                            "evaluated")}}


def per_query(folder: Path) -> pd.DataFrame:
    frame = pd.read_csv(folder / "per_query.tsv", sep="\t", dtype={"k": str})
    return frame.sort_values(["k", "topic"]).reset_index(drop=True)


def release_copy(tmp: Path, order) -> Path:
    root = tmp / str(order) / "release"
    shutil.copytree(RELEASE / "crux-mds-duc04", root / "crux-mds-duc04")
    shutil.copytree(RELEASE / "crux-mds-corpus", root / "crux-mds-corpus")
    if order is not None:
        reorder_lines(root, order)
    return root


def test_the_release_excerpt_in_any_line_order(tmp_path, capsys):
    outputs = []
    for order in [None, *ORDERS]:
        root = release_copy(tmp_path, order)
        duc = root / "crux-mds-duc04"
        run = duc / "run" / "bm25.run"
        out = tmp_path / f"out-{order}"
        evaluated = cli_json(capsys, "evaluate", "--crux-root", duc, "--run", run, "--k",
                             "oracle", "1", "2", "10", "--output", out)
        script = [cli_json(capsys, "crux-eval", "--qrel", duc / "qrels" / "div_qrels-tau3.txt",
                           "--judge", duc / "judge", "--run", run, "--collection",
                           root / "crux-mds-corpus", *flags)["runs"][0]
                  for flags in ([], ["--filter-by-oracle"], ["--k", "2"])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            api = cruxflow.evaluate(run, duc, ["Cov@oracle", "alpha_nDCG_crux@oracle",
                                               "R(rel=2)@2", "nDCG@2", "alpha_nDCG@2"])
        outputs.append((numbers_of_evaluate(evaluated), per_query(out),
                        [{k: r[k] for k in ("aggregate", "per_topic", "evaluated")}
                         for r in script], api))
    first = outputs[0]
    for other in outputs[1:]:
        assert other[0] == first[0]
        pd.testing.assert_frame_equal(other[1], first[1], check_exact=True)
        assert other[2] == first[2]
        pd.testing.assert_frame_equal(other[3], first[3], check_exact=True)


@pytest.fixture(scope="module")
def demo_run():
    """A run over the demo's passages with many tied scores (the text's length mod 3) and
    passages of other topics, one line per (topic, passage)."""
    passages = [json.loads(x) for x in (DEMO / "passages.jsonl").read_text().splitlines()]
    topics = [json.loads(x)["qid"] for x in (DEMO / "topics.jsonl").read_text().splitlines()]
    lines = []
    for i, topic in enumerate(topics):
        own = [p for p in passages if p["id"].startswith(f"{topic}:")]
        other = [p for p in passages if p["id"].startswith(f"{topics[i - 1]}:")][:3]
        for rank, p in enumerate(own + other, 1):
            lines.append(f"{topic} Q0 {p['id']} {rank} {len(p['contents']) % 3}.0 demo\n")
    return "".join(lines)


def test_the_demo_dataset_in_any_line_order(tmp_path, capsys, demo_run):
    outputs = []
    for order in [None, *ORDERS]:
        source = tmp_path / f"demo-{order}"
        shutil.copytree(DEMO, source)
        run = source / "mine.run"
        run.write_text(demo_run)
        if order is not None:
            reorder_lines(source, order)
        data = tmp_path / f"data-{order}"
        assert main(["ingest", "--format", "crux", "--input", str(source), "--output",
                     str(data)]) == 0
        capsys.readouterr()
        out = tmp_path / f"out-{order}"
        got = cli_json(capsys, "evaluate", "--dataset", data, "--run", run, "--k",
                       "oracle", "1", "3", "10", "--output", out)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            api = cruxflow.evaluate(run, source / "judgements.jsonl", [
                "Cov@oracle", "alpha_nDCG_crux@oracle", "nDCG@3", "R(rel=2)@10", "P@1",
                "alpha_nDCG@3", "alpha_nDCG_published@oracle"])
        outputs.append((got["aggregate"], per_query(out), api))
    first = outputs[0]
    for other in outputs[1:]:
        assert other[0] == first[0]
        pd.testing.assert_frame_equal(other[1], first[1], check_exact=True)
        pd.testing.assert_frame_equal(other[2], first[2], check_exact=True)


def test_the_demo_has_ties_that_the_file_order_once_broke():
    """The case the rule is for: in seven demo topics two passages answer the same most
    still-open questions at some step of the greedy, so "first in the file" chose by the
    file's order; the natural passage order chooses the same P** however the file is
    ordered."""
    ratings = read_ratings(DEMO / "judgements.jsonl").by_topic()
    tied = 0
    for matrix in ratings.values():
        kept = answerable_questions(matrix, len(next(iter(matrix.values()))), 3)
        forward = select_required(matrix, kept)
        assert select_required(dict(reversed(list(matrix.items()))), kept) == forward
        items = list(matrix.items())
        random.Random(5).shuffle(items)
        assert select_required(dict(items), kept) == forward
        tied += _first_in_file(dict(reversed(items)), kept) != _first_in_file(dict(items),
                                                                                 kept)
    assert tied >= 5


def _first_in_file(matrix, kept) -> set[str]:
    """P** with ties to the passage first in ``matrix`` (the rule before issue 36)."""
    chosen: list[str] = []
    open_q = set(kept)
    while open_q:
        gains = {p: len({q for q in open_q if r[q] >= 3}) for p, r in matrix.items()}
        best = max(gains.values())
        if not best:
            break
        pick = next(p for p, g in gains.items() if g == best)
        chosen.append(pick)
        open_q -= {q for q in open_q if matrix[pick][q] >= 3}
    return set(chosen)
