"""One engine: every door only formats what the registry's compute function returns (issue 51).

Cov's compute function is replaced, for the length of a test, by one that gives every topic
0.123456; every door that prints Cov in any of its forms (the workflow's scorer and its paper
table, ``cruxflow evaluate`` with its authors'-script part, ``cruxflow crux-eval``,
``cruxflow.evaluate``, ``cruxflow.compare``, the ir_measures measure object) must then print
that value. A door with a Cov of its own would print its own.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.data.ingest import IngestOptions, ingest
from cruxflow.data.ingest.crux_common import read_ratings
from cruxflow.metrics import names
from cruxflow.metrics.inputs import graded_qrels
from cruxflow.metrics.scorer import ContextScorer

DUC = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"
RUN = DUC / "run" / "bm25.run"
VALUE = 0.123456
JUDGED = ["duc04-test-0", "duc04-test-1", "duc04-test-3"]   # an answerable question each


def constant(ctx, name) -> np.ndarray:
    return np.full(len(ctx.rows), VALUE)


@pytest.fixture
def replaced(monkeypatch):
    monkeypatch.setitem(names.REGISTRY, "Cov",
                        dataclasses.replace(names.REGISTRY["Cov"], compute=constant))


def test_every_door_prints_the_registrys_cov(replaced, capsys, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # bm25.run ties at a cutoff: the doors say so
        api = cruxflow.evaluate(RUN, DUC / "judge", ["Cov@10", "Cov@oracle"])
        compared = cruxflow.compare({"a": RUN, "b": RUN}, DUC / "judge", ["Cov@10"])
        objects = ir_measures.calc_aggregate(
            [cruxflow.Cov @ 10], graded_qrels(read_ratings(DUC / "judge").by_topic()),
            list(ir_measures.read_trec_run(str(RUN))))
    assert api.loc[JUDGED].to_numpy().tolist() == [[VALUE, VALUE]] * 3
    assert compared.means["Cov@10"].tolist() == [VALUE, VALUE]
    assert objects[cruxflow.Cov @ 10] == pytest.approx(VALUE, abs=1e-15)

    # cruxflow evaluate: its table (the workflow's scorer) and the authors' script's Cov
    assert main(["evaluate", "--crux-root", str(DUC), "--run", str(RUN), "--k", "10",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [row["Cov"] for row in out["aggregate"]] == [VALUE]
    script = out["crux_eval"]["aggregate"]
    assert [v for m, v in script.items() if m.startswith("Cov(")] == [pytest.approx(VALUE)]
    # cruxflow crux-eval, the authors' script's semantics as names
    assert main(["crux-eval", "--run", str(RUN), "--qrel",
                 str(DUC / "qrels" / "div_qrels-tau3.txt"), "--judge", str(DUC / "judge"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["runs"][0]
    assert out["aggregate"][out["measures"][3]] == pytest.approx(VALUE)

    # the workflow's scorer (rule context_metrics) and the paper's Table 1 from its rows
    from cruxflow.paper.tables import table1

    dataset, _ = ingest("crux", DUC, IngestOptions(prefix="crux"))
    scorer = ContextScorer(dataset)
    frame = scorer.score_many([(RUN, "bm25", k) for k in ("oracle", 10)])
    assert frame["Cov"].tolist() == [VALUE] * len(frame)
    rows = frame.assign(dataset="duc", eta=3)
    rows = pd.concat([rows, rows.assign(system="oracle")], ignore_index=True)
    table = table1(rows, "duc", k="oracle", n_resamples=0)
    cov = table[(table["metric"] == "Cov") & (table["system"] == "bm25")]["value"]
    assert cov.tolist() == [pytest.approx(VALUE * 100)]
