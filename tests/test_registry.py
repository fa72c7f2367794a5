"""One definition per measure, every door derived from it (issue 36, item 1).

The registry (cruxflow.metrics.names.REGISTRY) holds each measure's parameters, what it
reads and its compute function; each door must agree with it: the tables' columns, the
scorer's and ``cruxflow evaluate``'s tables and JSON, the Python API, the ir_measures measure
objects, crux-eval's names, the paper tables' labels and the documentation's table of names.
And docs/adding-a-metric.md's example, run as written, adds a measure to every door.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.metrics import names
from cruxflow.metrics.options import MetricOptions

REPO = Path(__file__).resolve().parents[1]
DUC = REPO / "tests" / "data" / "crux" / "release" / "crux-mds-duc04"
RUN = DUC / "run" / "bm25.run"


def test_the_table_columns_are_the_registrys():
    flat = tuple(c for d in names.REGISTRY.values() for c in d.table)
    assert names.TABLE_MEASURES == names.table_measures() == flat
    assert names.table_columns(MetricOptions(relevance_grades="3-2-1"))[4] == "R(rel=3)"
    for column in names.table_measures():
        names.parse(column.format(required=2))     # every column is a name


def test_every_entry_is_complete():
    for d in names.REGISTRY.values():
        assert callable(d.function()), d.name
        assert set(names.COMMON) <= set(d.params), d.name
        assert d.reads and set(d.reads) <= set(names.READS), d.name
        assert set(d.option_of) <= set(d.params), d.name
        for p in d.params.values():   # the default is a legal value
            assert not p.choices or p.default in p.choices, (d.name, p.name)


def test_the_scorer_and_evaluate_tables_have_the_registrys_columns(tmp_path, capsys):
    rc = main(["evaluate", "--crux-root", str(DUC), "--run", str(RUN), "--k", "oracle", "10",
               "--output", str(tmp_path), "--json", "--relevance-grades", "3-2-1"])
    got = json.loads(capsys.readouterr().out)
    assert rc == 0
    columns = names.table_columns(MetricOptions(relevance_grades="3-2-1"))
    fixed = ["system", "k", "topics", "missing_in_run"]
    assert list(got["aggregate"][0]) == fixed + columns
    header = (tmp_path / "per_query.tsv").read_text().splitlines()[0].split("\t")
    assert header == ["system", "k", "topic", "context_size", "in_run", "tokens", *columns]


def test_the_api_computes_every_registered_measure():
    from cruxflow.data.ingest.crux_common import read_collection

    texts = read_collection(DUC.parent / "crux-mds-corpus")[0]
    asked = [f"{m}@10" for m in names.REGISTRY]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = cruxflow.evaluate(RUN, DUC / "judge", asked, texts=texts)
    assert list(frame.columns) == asked
    # each defined on every topic of its topic set: CRUX's measures on the topics with an
    # answerable question (duc04-test-2 has none), a name ir_measures has too on every topic
    # of the qrels it reads (duc04-test-3, which the run lacks, an empty context: 0): the
    # relevance qrels (P*) and the ratings hold every rated topic, the diversity qrels at
    # eta 3 only those with an answerable question
    judged = ["duc04-test-0", "duc04-test-1", "duc04-test-3"]
    for name in asked:
        parsed = names.parse(name)
        topics = judged if parsed["topics"] == "judged" or names.DIVERSITY in parsed.reads \
            else list(frame.index)
        assert frame.loc[topics, name].notna().all(), name
        assert frame[name].drop(index=topics).isna().all(), name


def test_the_ir_measures_objects_are_the_registrys():
    from cruxflow.metrics import measures

    assert list(measures.MEASURES) == list(names.REGISTRY)
    assert (cruxflow.Cov, cruxflow.alpha_nDCG_crux, cruxflow.Den) == (
        measures.MEASURES["Cov"], measures.MEASURES["alpha_nDCG_crux"],
        measures.MEASURES["Den"])
    for name, m in measures.MEASURES.items():
        d = names.REGISTRY[name]
        assert set(m.SUPPORTED_PARAMS) == {"cutoff", *d.params}, name
        assert {k: p.default for k, p in m.SUPPORTED_PARAMS.items() if k != "cutoff"} == \
            {k: p.default for k, p in d.params.items()}, name
        assert str(cruxflow.parse_measure(str(m @ 10))) == f"{name}@10"
        if name not in measures._OWN:      # ir_measures' parser reads ours, not its own
            assert ir_measures.parse_measure(f"{name}@10") == m @ 10


def test_crux_evals_names_are_registered_names():
    from cruxflow.metrics.crux_eval import NAME_PARAMETERS, measure_names

    for measure, params in NAME_PARAMETERS.items():
        d = names.REGISTRY[measure]
        assert all(p in d.params and v in (d.params[p].choices or (v,))
                   for p, v in params.items()), measure
    for ours in measure_names(10, True, True, eta=4, alpha=0.3, density_weight=1.0):
        assert str(names.parse(ours)) == ours


def test_the_paper_labels_and_figures_name_registered_measures():
    from cruxflow.paper import figures, labels

    for name, d in names.REGISTRY.items():
        assert labels.METRIC_LABELS[name] == d.label
        assert labels.LATEX_METRIC_LABELS[name] == d.latex
    final = set(labels.FINAL_RESULT_LABELS)
    used = {*labels.TABLE1_METRICS, *labels.TABLE1_PAIRS, *labels.TABLE1_PAIRS.values(),
            *labels.TABLE3_PAIRS, *labels.TABLE3_PAIRS.values(), *figures.FIGURE5_METRICS}
    assert used <= set(names.REGISTRY) | final
    assert labels.measure_name("Cov", "oracle", 4) == "Cov(rel=4)@oracle"
    assert labels.measure_name("Cov_y", "oracle", 3) == ""


def doc_names_table() -> list[str]:
    """The names in docs/metrics.md's table of measure names (first cells)."""
    text = (REPO / "docs" / "metrics.md").read_text()
    section = text[text.index("## Names"):]
    section = section[:section.index("\n\n", section.index("| name"))]
    return re.findall(r"^\| `([A-Za-z_]+)[(@]", section, flags=re.M)


def test_the_documentation_lists_every_registered_measure():
    listed = doc_names_table()
    assert set(listed) == set(names.REGISTRY), set(names.REGISTRY) ^ set(listed)


def test_every_entry_has_its_labels_its_row_and_says_what_an_empty_context_gives():
    """Properties of every entry, not a list of names: the paper tables' labels, a row of the
    table of names whose last cell is what ``defined_on_empty`` says, and that value on a topic
    the run lacks (duc04-test-3), over the topics with an answerable question."""
    from cruxflow.data.ingest.crux_common import read_collection

    text = (REPO / "docs" / "metrics.md").read_text()
    rows = {m: line for m in names.REGISTRY for line in text.splitlines()
            if line.startswith(f"| `{m}@") or line.startswith(f"| `{m}(")}
    texts = read_collection(DUC.parent / "crux-mds-corpus")[0]
    asked = [str(names.parse(f"{m}@10").with_(topics="judged")) for m in names.REGISTRY]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = cruxflow.evaluate(RUN, DUC / "judge", asked, texts=texts)
    for (m, d), name in zip(names.REGISTRY.items(), asked, strict=True):
        assert d.label and d.latex, m
        assert m in rows, f"docs/metrics.md has no row for {m}"
        last = rows[m].rstrip(" |").rsplit("|", 1)[1].strip()
        assert (last != "undefined") == d.defined_on_empty, m
        empty = frame.loc["duc04-test-3", name]
        assert math.isnan(empty) != d.defined_on_empty, (m, empty)
    with pytest.raises(ValueError, match="label"):
        names.register(names.MeasureDef("Unlabelled", {}, "x", (names.RATINGS,), "m:f"))


def test_judged_is_ir_measures_judged():
    """Judged@k: the share of the top k that the judge rated. bm25.run's top 10: duc04-test-0
    4 rated of its 5 lines, -1 2 of 2, -2 2 of 2 (no answerable question), -3 absent (an empty
    context: undefined; 0 in ir_measures' mean over every rated topic)."""
    frame = cruxflow.evaluate(RUN, DUC / "judge", ["Judged(topics='judged')@10",
                                                   "Judged(topics='run')@10", "Judged@10"])
    nan = pytest.approx(math.nan, nan_ok=True)
    assert frame["Judged(topics='judged')@10"].to_dict() == {
        "duc04-test-0": 0.8, "duc04-test-1": 1.0, "duc04-test-2": nan, "duc04-test-3": nan}
    assert frame["Judged(topics='run')@10"].dropna().to_dict() == {
        "duc04-test-0": 0.8, "duc04-test-1": 1.0, "duc04-test-2": 1.0}
    assert frame["Judged(topics='judged')@10"].mean() == pytest.approx(0.9)
    assert "Judged" in names.table_columns()

    from cruxflow.data.ingest.crux_common import read_ratings
    from cruxflow.metrics import measures
    from cruxflow.metrics.inputs import graded_qrels

    qrels = graded_qrels(read_ratings(DUC / "judge").by_topic())
    run = list(ir_measures.read_trec_run(str(RUN)))
    theirs = ir_measures.calc_aggregate([ir_measures.Judged @ 10, ir_measures.Judged @ 2],
                                        qrels, run)
    # ir_measures' mean covers every qrels topic, the one the run lacks at 0
    assert theirs[ir_measures.Judged @ 10] == pytest.approx(np.mean([0.8, 1.0, 1.0, 0.0]))
    assert frame["Judged@10"].mean() == pytest.approx(theirs[ir_measures.Judged @ 10])
    ours = measures.MEASURES["Judged"]
    assert ir_measures.calc_aggregate([ours @ 2], qrels, run)[ours @ 2] == pytest.approx(
        theirs[ir_measures.Judged @ 2])
