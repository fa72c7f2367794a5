"""Knowledge corpora, first-stage hit checks and context selection."""

import json

import pytest

from cruxflow.data.errors import DataError
from cruxflow.data.io import RunRow
from cruxflow.metrics.judgments import TopicJudgments
from cruxflow.metrics.scorer import contexts, parse_context_size
from cruxflow.retrieval.corpus import (
    check_hits,
    merge_passages,
    read_collection,
    write_collection,
)


def passages_file(path, rows):
    path.write_text("".join(json.dumps({"id": i, "contents": t}) + "\n" for i, t in rows))
    return path


def test_corpus_merges_datasets_and_rejects_conflicting_texts(tmp_path):
    a = passages_file(tmp_path / "a.jsonl", [("x:1", "one"), ("x:2", "two")])
    b = passages_file(tmp_path / "b.jsonl", [("y:1", "three"), ("x:2", "two")])
    texts = merge_passages([a, b])
    assert texts == {"x:1": "one", "x:2": "two", "y:1": "three"}
    assert write_collection(texts, tmp_path / "c/passages.jsonl") == 3
    assert read_collection(tmp_path / "c/passages.jsonl") == texts
    assert [json.loads(line)["id"] for line in
            (tmp_path / "c/passages.jsonl").read_text().splitlines()] == ["x:1", "x:2", "y:1"]
    bad = passages_file(tmp_path / "bad.jsonl", [("x:1", "another text")])
    with pytest.raises(DataError) as e:
        merge_passages([a, bad])
    assert "bad.jsonl" in str(e.value) and "x:1" in str(e.value) and "a.jsonl" in str(e.value)
    assert e.value.field == "contents"


def test_check_hits():
    ok = {"q1": [("a", 3.0), ("b", 2.0)], "q2": [("a", 1.0), ("c", 1.0), ("b", 0.5)]}
    summary = check_hits(ok, ["q1", "q2"], depth=3, corpus_size=10)
    assert summary["short_queries"] == {"q1": 2}
    assert (summary["min_hits"], summary["max_hits"], summary["expected_hits"]) == (2, 3, 3)
    # A small corpus caps what can be expected.
    assert check_hits(ok, ["q1"], depth=100, corpus_size=2)["short_queries"] == {}
    with pytest.raises(DataError, match="query q3.*no passage retrieved"):
        check_hits(ok, ["q1", "q3"], depth=3, corpus_size=10)
    with pytest.raises(DataError, match="more than the depth"):
        check_hits(ok, ["q2"], depth=2, corpus_size=10)
    with pytest.raises(DataError, match="twice"):
        check_hits({"q": [("a", 2.0), ("a", 1.0)]}, ["q"], depth=5, corpus_size=10)
    with pytest.raises(DataError, match="descending"):
        check_hits({"q": [("a", 1.0), ("b", 2.0)]}, ["q"], depth=5, corpus_size=10)


def test_contexts_by_size():
    def judgment(required):
        return TopicJudgments("t", n_questions=1, kept=[0], relevant=required,
                              required=required)

    run = {"t": [RunRow("t", d, i, 10.0 - i) for i, d in enumerate("abcdef", 1)]}
    judged = {"t": judgment(["x", "y", "z"]), "u": judgment(["x"])}
    assert contexts(run, judged, "oracle") == {"t": ["a", "b", "c"], "u": []}
    assert contexts(run, judged, 2) == {"t": ["a", "b"], "u": []}
    assert contexts(run, judged, 20)["t"] == list("abcdef")
    assert parse_context_size("oracle") == "oracle" and parse_context_size("10") == 10
    for bad in ("0", "ten", "-1"):
        with pytest.raises(ValueError):
            parse_context_size(bad)
