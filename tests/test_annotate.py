"""`cruxflow annotate` without a browser: sampling and overlap assignment, the SQLite store
(validation, restart, progress), the export read back by the agreement readers, and the real
server under concurrent label requests and bad ones. The browser tests are in
tests/test_annotate_browser.py."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from annotate_helpers import (
    REPO,
    REPORT,
    TEXTS,
    WAVE,
    Server,
    make_dataset,
    request,
    write_reports,
)

from cruxflow.annotate.assign import (
    Pair,
    assign,
    check_annotators,
    rating_items,
    rating_pairs,
    read_reports,
    report_items,
    sample_pairs,
    stratified_sample,
)
from cruxflow.annotate.export import agreement, disagreements, export
from cruxflow.annotate.store import LabelError, Span, Store
from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.model import Dataset
from cruxflow.paper.human_labels import read_passage_label_files, read_report_label_files


@pytest.fixture
def dataset(tmp_path) -> Dataset:
    return Dataset.load(make_dataset(tmp_path / "data"))


def ratings_store(path: Path, dataset: Dataset, annotators=("a", "b", "c"), overlap=2) -> Store:
    items = rating_items(dataset, rating_pairs(dataset, 3))
    settings = {"task": "ratings", "eta": 3, "overlap": overlap, "annotators": list(annotators)}
    return Store.create(path, settings, items, assign(len(items), list(annotators), overlap))


# --- assignment and sampling


def test_overlap_assignment_by_hand():
    # item i goes to annotators i, i+1 (mod 3)
    assert assign(5, ["a", "b", "c"], 2) == {"a": [0, 2, 3], "b": [0, 1, 3, 4], "c": [1, 2, 4]}
    assert assign(4, ["a", "b", "c"], 1) == {"a": [0, 3], "b": [1], "c": [2]}
    assert assign(2, ["a", "b"], 2) == {"a": [0, 1], "b": [0, 1]}
    with pytest.raises(ValueError, match="overlap 4 must lie in 1..3"):
        assign(5, ["a", "b", "c"], 4)


def test_annotator_names_are_checked():
    assert check_annotators(["a", " b"]) == ["a", "b"]
    for bad in (["a", "a"], ["a b"], ["(mean)"], [""]):
        with pytest.raises(ValueError):
            check_annotators(bad)


# judge ratings of 10 pairs; 2-4 ("uncertain") at positions 2, 3, 4, 7, 9
LLM = [0, 1, 2, 3, 4, 5, 0, 2, 5, 3]
PAIRS = [Pair("t", f"t:0#{i}", 0, r) for i, r in enumerate(LLM)]
UNSURE = {2, 3, 4, 7, 9}


def positions(pairs):
    return [int(p.passage_id.split("#")[1]) for p in pairs]


@pytest.mark.parametrize("n, share, n_unsure", [
    (4, 0.75, 3),   # round(3.0) uncertain, 1 other
    (5, 0.5, 3),    # 2.5 rounds half up: 3 uncertain, 2 other
    (8, 1.0, 5),    # only 5 uncertain pairs: the other stratum gives the remaining 3
    (6, 0.0, 1),    # only 5 other pairs: 1 uncertain fills the sample
    (3, 0.0, 0),
])
def test_oversampling_the_uncertain_ratings(n, share, n_unsure):
    chosen = positions(sample_pairs(PAIRS, n, seed=7, uncertain_share=share))
    assert len(chosen) == len(set(chosen)) == n
    assert sum(i in UNSURE for i in chosen) == n_unsure
    assert chosen == sorted(chosen)     # the pairs keep the dataset's order
    assert chosen == positions(sample_pairs(PAIRS, n, seed=7, uncertain_share=share))


def test_plain_sampling_is_seeded_and_whole_without_n():
    draws = {tuple(positions(sample_pairs(PAIRS, 4, seed=s))) for s in range(20)}
    assert len(draws) > 1 and all(len(set(d)) == 4 for d in draws)
    assert sample_pairs(PAIRS, 4, seed=3) == sample_pairs(PAIRS, 4, seed=3)
    assert sample_pairs(PAIRS, None, seed=3) == PAIRS == sample_pairs(PAIRS, 99, seed=3)
    with pytest.raises(ValueError, match="at least 1"):
        sample_pairs(PAIRS, 0, seed=3)
    with pytest.raises(ValueError, match="0..1"):
        sample_pairs(PAIRS, 3, seed=3, uncertain_share=1.5)


def test_pairs_and_items_ask_the_kept_questions(dataset):
    pairs = rating_pairs(dataset, 3)
    # t1 keeps q0, q1, q2, q4 (best ratings 5, 4, 3, 3; q3 tops at 2) for 3 passages; t2 keeps
    # q0, q1 for 2 passages: 12 + 4 pairs
    assert len(pairs) == 16
    assert {p.question for p in pairs if p.topic_id == "t1"} == {0, 1, 2, 4}
    items = rating_items(dataset, pairs)
    assert [i.target for i in items] == list(TEXTS)
    first = items[0]
    assert [(q.index, q.llm, q.uncertain) for q in first.questions] == [
        (0, 5, False), (1, 0, False), (2, 3, True), (4, 0, False)]
    assert first.text == TEXTS["t1:0#0"] and first.query == "Write a report about t1."
    # at eta 4 t1 keeps q0, q1 only
    assert {p.question for p in rating_pairs(dataset, 4) if p.topic_id == "t1"} == {0, 1}


def test_reports_are_read_and_sampled(dataset, tmp_path):
    path = write_reports(tmp_path / "bm25.koracle.jsonl",
                         [("t1", "bm25", "x"), ("t2", "bm25", "y"), ("t1", "dense", "z")])
    reports = read_reports([str(path)], dataset)
    assert [(r.topic_id, r.system) for r in reports] == [("t1", "bm25"), ("t2", "bm25"),
                                                         ("t1", "dense")]
    items = report_items(dataset, reports, 3, None, seed=0)
    assert sorted((i.topic_id, i.target) for i in items) == [("t1", "bm25"), ("t1", "dense"),
                                                             ("t2", "bm25")]
    assert [q.index for q in items[0].questions] == ([0, 1, 2, 4] if items[0].topic_id == "t1"
                                                     else [0, 1])
    assert len(report_items(dataset, reports, 3, 2, seed=0)) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"topic_id": "t9", "report": "x"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl: line 1: field 'topic_id': unknown topic"):
        read_reports([str(bad)], dataset)
    twice = write_reports(tmp_path / "twice.jsonl", [("t1", "bm25", "x"), ("t1", "bm25", "y")])
    with pytest.raises(DataError, match="line 2.*a second report of topic 't1'.*line 1"):
        read_reports([str(twice)], dataset)


# --- the store


def test_labels_are_validated_before_anything_is_written(dataset, tmp_path):
    store = ratings_store(tmp_path / "a.sqlite", dataset)
    # items 0..4 = t1:0#0, t1:0#1, t1:1#2, t2:0#0, t2:0#1; a has 0, 2, 3; b has 0, 1, 3, 4
    assert store.queues == {"a": [0, 2, 3], "b": [0, 1, 3, 4], "c": [1, 2, 4]}
    store.save("a", 0, 2, value=4)
    bad = [
        (dict(annotator="a", item_id=0, question=2, value=7), 400, "value 7 is not a rating"),
        (dict(annotator="a", item_id=0, question=2, value=True), 400, "value True"),
        (dict(annotator="a", item_id=99, question=0, value=1), 404, "unknown item 99"),
        (dict(annotator="a", item_id=1, question=0, value=1), 403, "not assigned to a"),
        (dict(annotator="a", item_id=0, question=3, value=1), 404, "question 3 is not asked"),
        (dict(annotator="z", item_id=0, question=0, value=1), 403, "unknown annotator"),
        (dict(annotator="a", item_id=0, question=2, value=3, cannot_judge=True), 400, "not both"),
        (dict(annotator="a", item_id=0, question=2, span=Span(0, 4, "Thx ")), 400, "not the text"),
        (dict(annotator="a", item_id=0, question=2, span=Span(5, 999, "x")), 400, "outside"),
    ]
    for kwargs, status, message in bad:
        with pytest.raises(LabelError, match=message) as info:
            store.save(**kwargs)
        assert info.value.status == status
    (label,) = store.labels()
    assert (label.value, label.cannot_judge, store.n_events()) == (4, False, 1)


def test_cannot_judge_spans_and_restart(dataset, tmp_path):
    path = tmp_path / "a.sqlite"
    store = ratings_store(path, dataset)
    text = TEXTS["t1:0#0"]
    start = text.index("heavy rain")     # after the wave: a code point index, not UTF-16
    assert start == text.index(WAVE) + len(" after two days of ") + 1
    store.save("a", 0, 0, span=Span(start, start + 10, "heavy rain"))
    store.save("a", 0, 0, value=5)
    store.save("a", 0, 1, cannot_judge=True)
    store.save("a", 0, 1, value=0)           # a value clears 'cannot judge'
    store.save("a", 0, 2, cannot_judge=True)
    again = Store(path)                       # a restart
    assert again.tokens == store.tokens and again.admin_token == store.admin_token
    got = {x.question: (x.value, x.cannot_judge, x.span) for x in again.labels("a")}
    assert got == {0: (5, False, Span(start, start + 10, "heavy rain")), 1: (0, False, None),
                   2: (None, True, None)}
    assert again.n_events() == 5
    assert again.labels("b") == []
    # item 0 asks q0, q1, q2, q4: q4 open, so a resumes at position 1
    assert again.first_open_position("a") == 1
    again.save("a", 0, 4, value=1)
    assert again.first_open_position("a") == 2
    with pytest.raises(DataError, match="exists already"):
        ratings_store(path, dataset)


def test_progress_per_annotator_and_topic(dataset, tmp_path):
    store = ratings_store(tmp_path / "a.sqlite", dataset)
    for q in (0, 1, 2, 4):
        store.save("a", 0, q, value=3)        # item 0 (t1, 4 questions) done
    store.save("a", 3, 0, value=1)            # item 3 (t2, 2 questions) half
    store.save("a", 2, 0, span=Span(0, 3, "Ins"))   # a span is not a label
    rows = {(r["annotator"], r["topic_id"]): r for r in store.progress()}
    # a: t1 items 0, 2 (4 + 4 questions), t2 item 3 (2 questions)
    assert rows[("a", "t1")] == {"annotator": "a", "topic_id": "t1", "items": 2,
                                 "items_done": 1, "questions": 8, "questions_done": 4}
    assert rows[("a", "t2")]["questions_done"] == 1 and rows[("a", "t2")]["items_done"] == 0
    # b: t1 items 0, 1; t2 items 3, 4; nothing done
    assert rows[("b", "t2")] == {"annotator": "b", "topic_id": "t2", "items": 2,
                                 "items_done": 0, "questions": 4, "questions_done": 0}
    assert [r["annotator"] for r in store.progress("c")] == ["c", "c"]


def test_disagreements_and_kappa(dataset, tmp_path):
    store = ratings_store(tmp_path / "a.sqlite", dataset)
    # item 0 is shared by a and b; its questions 0, 1, 2, 4
    for q, (x, y) in {0: (5, 5), 1: (0, 1), 2: (3, 2), 4: (4, 4)}.items():
        store.save("a", 0, q, value=x)
        store.save("b", 0, q, value=y)
    found = disagreements(store)
    assert [(d["question"], d["labels"], d["classes_differ"]) for d in found] == [
        (1, {"a": 0, "b": 1}, False), (2, {"a": 3, "b": 2}, True)]
    # binarized at 3: (1,1) (0,0) (1,0) (1,1). p(1) = 5/8; P_e = 25/64 + 9/64 = 17/32;
    # P = (1 + 1 + 0 + 1) / 4 = 3/4; kappa = (3/4 - 17/32) / (15/32) = 7/15
    result = agreement(store)
    assert result["units"] == 4 and result["kappa"] == pytest.approx(7 / 15)
    # six grades: 2 of the 4 units agree, P = 1/2; of the 8 grades 5,5,0,1,3,2,4,4, p(5) =
    # p(4) = 2/8 and p(0) = p(1) = p(2) = p(3) = 1/8: P_e = 2 * 4/64 + 4 * 1/64 = 12/64
    assert result["kappa_grades"] == pytest.approx((1 / 2 - 12 / 64) / (1 - 12 / 64))
    store.save("b", 0, 4, cannot_judge=True)   # cannot-judge units leave the kappa
    assert agreement(store)["units"] == 3
    assert disagreements(store)[-1]["labels"] == {"a": 4, "b": "cannot judge"}


# --- the export, read by the agreement readers


def test_ratings_export_reads_back(dataset, tmp_path):
    store = ratings_store(tmp_path / "a.sqlite", dataset)
    store.save("a", 0, 2, value=4, span=Span(0, 3, "The"))
    store.save("b", 0, 2, value=1)
    store.save("b", 0, 0, cannot_judge=True)
    store.save("a", 3, 1, span=Span(0, 3, "The"))     # no rating: not exported
    summary = export(store, tmp_path / "out")
    assert summary["labels"] == 2
    assert summary["left_out"] == {"cannot judge": 1, "span without a rating": 1}
    human, not_labelled = read_passage_label_files([str(tmp_path / "out")])
    got = sorted(zip(human["annotator"], human["passage_id"], human["question"],
                     human["rating"], strict=True))
    assert got == [("a", "t1:0#0", 2, 4), ("b", "t1:0#0", 2, 1)]
    row = json.loads((tmp_path / "out/passage_ratings.jsonl").read_text().splitlines()[0])
    assert row["rationale"] == {"start": 0, "end": 3, "text": "The"} and row["uncertain"]
    assert json.loads((tmp_path / "out/annotate_ratings.json").read_text())["labels"] == 2


def test_reports_export_holds_finished_reports_only(dataset, tmp_path):
    items = report_items(dataset, read_reports([str(write_reports(
        tmp_path / "r.jsonl", [("t1", "bm25", "report one")]))], dataset), 3, None, 0)
    store = Store.create(tmp_path / "r.sqlite", {"task": "reports", "eta": 3, "overlap": 2},
                         items, assign(1, ["a", "b"], 2))
    with pytest.raises(DataError, match="nothing to export yet"):
        export(store, tmp_path / "out")
    for q, value in zip((0, 1, 2, 4), (1, 0, 1, 1), strict=True):
        store.save("a", 0, q, value=value)
    store.save("b", 0, 0, value=1)                    # b has not finished
    with pytest.raises(LabelError, match="cannot judge"):
        store.save("b", 0, 1, cannot_judge=True)
    with pytest.raises(LabelError, match="1 .answerable. or 0"):
        store.save("b", 0, 1, value=2)
    summary = export(store, tmp_path / "out")
    assert summary["left_out"] == {"questions of reports not finished": 1}
    labels = read_report_label_files([str(tmp_path / "out/report_labels.jsonl")])
    assert sorted(zip(labels["question"], labels["answerable"], strict=True)) == [
        (0, True), (1, False), (2, True), (4, True)]
    assert set(labels["annotator"]) == {"a"} and set(labels["system"]) == {"bm25"}


# --- the command line


def test_cli_creates_resumes_and_refuses_other_options(dataset, tmp_path, capsys):
    data = str(tmp_path / "data")
    db = tmp_path / "r.sqlite"
    with pytest.raises(SystemExit, match="no database"):
        main(["annotate", "--db", str(db), "--export", str(tmp_path / "out")])
    common = ["--dataset", data, "--task", "ratings", "--db", str(db)]
    with pytest.raises(SystemExit, match="needs --annotators"):
        main(["annotate", *common])
    with pytest.raises(SystemExit, match="overlap 3 must lie in 1..2"):
        main(["annotate", *common, "--annotators", "a", "b", "--overlap", "3"])
    assert not db.exists()
    store = Store.create(db, {"task": "ratings", "annotators": ["a", "b"], "overlap": 2,
                              "eta": 3, "seed": 0, "sample": None, "uncertain_share": None,
                              "dataset": str(Path(data).resolve()), "reports": None},
                         rating_items(dataset, rating_pairs(dataset, 3)),
                         assign(5, ["a", "b"], 2))
    store.save("a", 0, 0, value=5)
    with pytest.raises(SystemExit, match="made with overlap = 2, not 1"):
        main(["annotate", "--db", str(db), "--overlap", "1", "--export", str(tmp_path / "o")])
    assert main(["annotate", "--db", str(db), "--annotators", "a", "b",
                 "--export", str(tmp_path / "out")]) == 0
    assert "wrote 1 labels" in capsys.readouterr().out


def test_export_prints_the_graded_kappa_beside_the_one_at_eta(dataset, tmp_path, capsys):
    # two annotators who differ on all 6 ratings, each pair on one side of eta 3: at eta they
    # agree perfectly (1.000), on the grades not at all. By hand (Fleiss, 2 raters an item):
    # no item agrees, P = 0; of the 12 grades 5:2 4:3 1:3 0:2 3:1 2:1, P_e = 28/144;
    # kappa = (0 - 28/144) / (1 - 28/144) = -28/116 = -0.241
    db = tmp_path / "r.sqlite"
    store = ratings_store(db, dataset, annotators=("a", "b"), overlap=2)
    units = [(i, q.index) for i, item in sorted(store.items.items())
             for q in item.questions][:6]
    for (item, q), x, y in zip(units, [5, 4, 1, 0, 3, 2], [4, 5, 0, 1, 4, 1], strict=True):
        store.save("a", item, q, value=x)
        store.save("b", item, q, value=y)
    assert main(["annotate", "--db", str(db), "--export", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert ("Fleiss' kappa -0.241 on the six grades, 1.000 at eta=3 (answerable or not), over "
            "6 shared questions") in out


def test_cli_samples_with_oversampling(tmp_path, dataset):
    db = tmp_path / "s.sqlite"
    srv = Server("--dataset", str(tmp_path / "data"), "--task", "ratings", "--annotators",
                 "a", "b", "c", "--sample", "4", "--uncertain-share", "0.5", "--seed", "3",
                 "--db", str(db), cwd=tmp_path)
    srv.stop()
    store = Store(db)
    asked = [q for item in store.items.values() for q in item.questions]
    # 6 of the 16 pairs are uncertain (judge 2-4): 2 of the 4 drawn are, 2 are not
    assert len(asked) == 4 and sum(q.uncertain for q in asked) == 2
    assert store.settings["overlap"] == 2 and store.settings["items"] == len(store.items)
    assert sum(len(q) for q in store.queues.values()) == 2 * len(store.items)
    assert set(srv.links) == {"a", "b", "c", "admin"}


# --- the real server: bad requests and concurrent ones


@pytest.fixture
def server(dataset, tmp_path):
    srv = Server("--dataset", str(tmp_path / "data"), "--task", "ratings", "--annotators",
                 "a", "b", "c", "--overlap", "3", "--db", str(tmp_path / "srv.sqlite"),
                 cwd=tmp_path)
    yield srv
    srv.stop()


def test_bad_requests_get_a_4xx_and_change_nothing(server, tmp_path):
    api = server.links["a"] + "api/label"
    assert request(api, {"item": 0, "question": 0, "value": 5})[0] == 200
    cases = [
        ({"item": 0, "question": 0, "value": 7}, 400, "value 7 is not a rating from 0 to 5"),
        ({"item": 42, "question": 0, "value": 1}, 404, "unknown item 42"),
        ({"item": 0, "question": 3, "value": 1}, 404, "question 3 is not asked"),
        ({"item": 0, "question": 0}, 400, "send item, question and one or more"),
        ({"item": 0, "question": 0, "value": 1, "who": "b"}, 400, "unknown: who"),
        ({"item": 0, "question": 0, "span": {"start": 0}}, 400, "a span is"),
        (b"{not json", 400, "must be a JSON object"),
    ]
    for body, status, message in cases:
        got_status, got = request(api, body)
        assert (got_status, message in got["error"]) == (status, True), got
    wrong = f"{server.root}/a/not-a-token/api/label"
    status, got = request(wrong, {"item": 0, "question": 0, "value": 1})
    assert status == 403 and "unknown annotator token" in got["error"]
    with pytest.raises(urllib.error.HTTPError, match="403"):
        urllib.request.urlopen(f"{server.root}/admin/{'x' * 24}/", timeout=30)
    with pytest.raises(urllib.error.HTTPError, match="404"):
        urllib.request.urlopen(server.links["a"] + "item/99", timeout=30)
    status, got = request(server.links["a"] + "api/labels")
    assert [(x["question"], x["value"]) for x in got["labels"]] == [(0, 5)]
    store = Store(tmp_path / "srv.sqlite")
    assert store.n_events() == 1


def test_the_items_api_is_the_queue_a_script_labels_through(server, tmp_path):
    """``GET api/items``: the annotator's queue in order, with what a label names (docs/
    annotate.md, "The HTTP API"); a label sent for its first question is read back."""
    store = Store(tmp_path / "srv.sqlite")
    status, got = request(server.links["b"] + "api/items")
    assert status == 200 and (got["annotator"], got["task"]) == ("b", "ratings")
    queue = store.queues["b"]
    assert [(i["pos"], i["item"]) for i in got["items"]] == list(enumerate(queue, 1))
    for entry in got["items"]:
        item = store.items[entry["item"]]
        assert (entry["topic_id"], entry["target"], entry["text"]) == (
            item.topic_id, item.target, item.text)
        assert entry["questions"] == [{"index": q.index, "text": q.text} for q in item.questions]
    first = got["items"][0]
    question = first["questions"][0]["index"]
    status, saved = request(server.links["b"] + "api/label",
                            {"item": first["item"], "question": question, "value": 2})
    assert status == 200 and saved["label"]["value"] == 2
    status, labels = request(server.links["b"] + "api/labels")
    assert [(x["item_id"], x["question"], x["value"]) for x in labels["labels"]] == [
        (first["item"], question, 2)]
    status, got = request(f"{server.root}/a/not-a-token/api/items")
    assert status == 403 and "unknown annotator token" in got["error"]


def test_concurrent_label_requests_are_all_stored(server, tmp_path):
    store = Store(tmp_path / "srv.sqlite")
    units = [(i, q.index) for i, item in store.items.items() for q in item.questions]
    assert len(units) == 16
    # 3 annotators x 16 units, each label sent by its own thread group: 48 distinct labels;
    # plus 8 threads racing on one label 10 times each (80 events, one final value)
    jobs = [(a, i, q, (i + q) % 6) for a in "abc" for i, q in units]
    errors: list = []

    def send(batch):
        for a, i, q, v in batch:
            status, got = request(server.links[a] + "api/label",
                                  {"item": i, "question": q, "value": v})
            if status != 200:
                errors.append(got)

    threads = [threading.Thread(target=send, args=(jobs[k::8],)) for k in range(8)]
    race = [("a", 3, 1, k % 6) for k in range(10)]
    threads += [threading.Thread(target=send, args=(race,)) for _ in range(8)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    assert not errors
    labels = {(x.annotator, x.item_id, x.question): x.value for x in store.labels()}
    expected = {(a, i, q): v for a, i, q, v in jobs}
    raced = labels.pop(("a", 3, 1))
    expected.pop(("a", 3, 1))
    assert labels == expected and raced in range(6)
    assert store.n_events() == len(jobs) + len(race) * 8
    with sqlite3.connect(tmp_path / "srv.sqlite") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        per_annotator = Counter(a for (a,) in con.execute("SELECT annotator FROM events"))
    assert per_annotator == {"a": 16 + 80, "b": 16, "c": 16}
    print(f"{len(jobs) + 80} label requests from 16 threads in {seconds:.2f} s: "
          f"{(len(jobs) + 80) / seconds:.0f} requests/s")


def _raw(root: str, data: bytes) -> bytes:
    """Send raw bytes to the server (a client that lies), close our side, read the answer."""
    host, port = root.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_the_server_limits_bodies_sends_security_headers_and_logs_no_traceback(
        server, tmp_path):
    """Issue 31: a 100 KB label with a valid token is refused unread (413), every page carries
    CSP, frame-ancestors/X-Frame-Options and no-referrer (tokens are in the URLs), and clients
    that lie about Content-Length leave no traceback in the real uvicorn's log."""
    api = server.links["a"] + "api/label"
    with urllib.request.urlopen(server.links["a"] + "item/1", timeout=30) as page:
        headers = page.headers
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert (headers["X-Frame-Options"], headers["Referrer-Policy"]) == ("DENY", "no-referrer")
    flood = json.dumps({"item": 0, "question": 0, "value": 5, "span": {
        "start": 0, "end": 1, "text": "x" * 100_000}}).encode()
    status, got = request(api, flood)
    assert status == 413 and "over 16384 bytes" in got["error"]
    path = api.split(server.root)[1]
    host = server.root.removeprefix("http://")
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    # declares 1000 bytes, sends 10 and hangs up; declares a bad length; streams 20 KB chunked
    short = _raw(server.root, (head + "Content-Length: 1000\r\n\r\n").encode() + b'{"item": 0')
    assert b" 500 " not in short
    bad = _raw(server.root, (head + "Content-Length: -5\r\n\r\n").encode())
    assert bad.startswith(b"HTTP/1.1 4")
    chunk = b"x" * 20_000
    chunked = _raw(server.root, (head + "Transfer-Encoding: chunked\r\n\r\n").encode()
                   + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 413")
    assert request(api, {"item": 0, "question": 0, "value": 4})[0] == 200  # still serving
    assert [x.value for x in Store(tmp_path / "srv.sqlite").labels()] == [4]
    server.stop()
    log = server.proc.stderr.read()
    assert "Traceback" not in log and "Exception" not in log, log


def _post(url: str, body: bytes, **headers) -> tuple[int, dict]:
    """POST raw bytes with exactly these headers (a browser of another site, a form)."""
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_writes_must_be_json_from_the_apps_own_pages_and_its_own_host(server, tmp_path):
    """Issue 40: another site's page can send a "simple" POST (text/plain, a form) without
    asking the server first, and a name of its own made to point here (DNS rebinding) can
    read pages; none of them is served. JSON nested past Python's recursion limit is a 400."""
    api = server.links["a"] + "api/label"
    host = server.root.removeprefix("http://")
    label = json.dumps({"item": 0, "question": 0, "value": 3}).encode()
    refused = [
        (_post(api, label, **{"Content-Type": "text/plain"}), 415, "sent as JSON"),
        (_post(api, b"item=0&question=0&value=3",
               **{"Content-Type": "application/x-www-form-urlencoded"}), 415, "sent as JSON"),
        (_post(api, label, **{"Content-Type": "application/json",
                              "Origin": "http://evil.example"}), 403, "another site"),
        (_post(api, label, **{"Content-Type": "application/json",
                              "Sec-Fetch-Site": "cross-site"}), 403, "another site"),
        (_post(api, label, **{"Content-Type": "application/json", "Host": "evil.example"}),
         421, "does not answer for the host 'evil.example'"),
        (_post(api, b"[" * 8000 + b"]" * 8000, **{"Content-Type": "application/json"}), 400,
         "nested too deeply"),
        (_post(api, b'{"item": 0, "question": 0, "span": ' + b'{"a":' * 2600 + b"1"
               + b"}" * 2601, **{"Content-Type": "application/json"}), 400,
         "nested too deeply"),
    ]
    for (status, got), want, message in refused:
        assert status == want and message in got["error"], (status, got)
    status, got = request(server.links["a"].replace("127.0.0.1", "localhost") + "api/labels")
    assert status == 200   # localhost is this machine whatever resolves it
    ok = _post(api, label, **{"Content-Type": "application/json; charset=utf-8",
                              "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"})
    assert ok[0] == 200
    assert [x.value for x in Store(tmp_path / "srv.sqlite").labels()] == [3]
    server.stop()
    log = server.proc.stderr.read()
    assert "Traceback" not in log and "RecursionError" not in log, log


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000])
def test_the_database_holding_the_tokens_is_the_owners_alone(dataset, tmp_path, umask):
    old = os.umask(umask)
    try:
        store = ratings_store(tmp_path / "t.sqlite", dataset)
        store.save("a", 0, 0, value=5)  # the WAL files exist now
    finally:
        os.umask(old)
    made = sorted(tmp_path.glob("t.sqlite*"))
    assert [p.name for p in made][:2] == ["t.sqlite", "t.sqlite-shm"] or len(made) >= 1
    assert {p.name: p.stat().st_mode & 0o777 for p in made} == {p.name: 0o600 for p in made}
    (tmp_path / "t.sqlite").chmod(0o644)  # made by an older version: opening it tightens it
    Store(tmp_path / "t.sqlite")
    assert (tmp_path / "t.sqlite").stat().st_mode & 0o777 == 0o600


def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    notes.chmod(0o644)
    with pytest.raises(DataError, match="notes.txt: not an annotation database"):
        Store(notes)
    assert notes.read_text() == "my notes\n" and notes.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


# --- the workflow's option: exported labels are used when they exist


def test_config_uses_the_export_files_that_exist(tmp_path):
    from cruxflow.workflow.config import resolve, with_defaults

    folder = tmp_path / "ann"

    def config(**labels):
        return resolve(with_defaults({"datasets": {"d": {
            "format": "crux", "input": "x", "human_labels": {"annotations": str(folder),
                                                             **labels}}}}))

    assert config()["datasets"]["d"]["human_labels"]["passages"] is None   # nothing exported
    folder.mkdir()
    (folder / "passage_ratings.jsonl").write_text("{}\n")
    labels = config()["datasets"]["d"]["human_labels"]
    assert labels["passages"] == str(folder / "passage_ratings.jsonl")
    assert labels["reports"] is None                    # no report_labels.jsonl
    assert config(passages="mine.jsonl")["datasets"]["d"]["human_labels"]["passages"] == \
        "mine.jsonl"                                    # a file named in the config wins
    (folder / "report_labels.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="human_labels.reports: judging reports needs d"):
        config()                                        # T1 labels need the RAG reports


@pytest.mark.workflow
def test_workflow_scores_the_judge_against_exported_labels(tmp_path):
    """The demo's CRUX dataset, a few ratings given in the store and exported, and the
    workflow's agreement_passages rule run on them through human_labels.annotations."""
    assert main(["ingest", "--format", "crux", "--input", str(REPO / "resources/demo/crux"),
                 "--output", str(tmp_path / "data")]) == 0
    demo = Dataset.load(tmp_path / "data")
    pairs = rating_pairs(demo, 3)
    yes = [p for p in pairs if p.llm >= 3][:2]       # the judge says answerable
    no = [p for p in pairs if p.llm < 3][:2]         # the judge says not
    items = rating_items(demo, yes + no)
    store = Store.create(tmp_path / "r.sqlite", {"task": "ratings", "eta": 3, "overlap": 1},
                         items, assign(len(items), ["ann1"], 1))
    position = {(it.target, q.index): i for i, it in enumerate(items) for q in it.questions}
    # human: yes[0] 5 (TP), yes[1] 1 (FP), no[0] 4 (FN), no[1] 0 (TN)
    for pair, rating in zip(yes + no, (5, 1, 4, 0), strict=True):
        store.save("ann1", position[(pair.passage_id, pair.question)], pair.question,
                   value=rating)
    export(store, tmp_path / "work/annotations")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["datasets"] = {"demo-crux": {"format": "crux",
                                        "input": str(REPO / "resources/demo/crux"),
                                        "human_labels": {"annotations": "annotations"}}}
    config["rag"]["datasets"] = []
    config["beyond"] = {}
    (tmp_path / "work/config.yaml").write_text(yaml.safe_dump(config))
    target = "results/agreement/demo-crux/eta3/judge_precision_recall.tsv"
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("snakemake")), "-s", str(REPO / "Snakefile"),
         "--directory", str(tmp_path / "work"), "--configfile", str(tmp_path / "work/config.yaml"),
         "--cores", "2", target], capture_output=True, text=True, cwd=tmp_path / "work")
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pd.read_csv(tmp_path / "work" / target, sep="\t").set_index(["annotator", "class"])
    # answerable (human >= 3: yes[0], no[0]; judge: yes[0], yes[1]): precision 1/2, recall
    # 1/2; unanswerable (human: yes[1], no[1]; judge: no[0], no[1]): precision 1/2, recall 1/2
    for cls in ("answerable", "unanswerable"):
        row = table.loc[("(all)", cls)]
        assert (row["precision"], row["recall"], row["support"]) == (0.5, 0.5, 2)


# --- sampling for PPI, the item count explained, reports blinded


@pytest.mark.parametrize("n, by_topic", [(4, {"t1": 3, "t2": 1}), (5, {"t1": 4, "t2": 1}),
                                         (15, {"t1": 11, "t2": 4})])
def test_stratified_sample_for_ppi_by_hand(dataset, n, by_topic):
    # t1: 3 passages x 4 kept questions = 12 pairs, t2: 2 x 2 = 4. Quotas n * 12/16 and
    # n * 4/16: n=5 gives 3.75 and 1.25, the larger remainder (t1) takes the fifth; n=15
    # gives 11.25 and 3.75: t2 takes it.
    pairs = rating_pairs(dataset, 3)
    drawn = stratified_sample(pairs, n, seed=1)
    assert Counter(p.topic_id for p in drawn) == by_topic
    assert drawn == stratified_sample(pairs, n, seed=1)
    assert [pairs.index(p) for p in drawn] == sorted(pairs.index(p) for p in drawn)
    assert stratified_sample(pairs, None, seed=1) == pairs


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def test_cli_for_ppi_explains_its_item_count(tmp_path, dataset):
    db = tmp_path / "p.sqlite"
    srv = Server("--dataset", str(tmp_path / "data"), "--task", "ratings", "--annotators",
                 "a", "b", "--sample", "5", "--for-ppi", "--db", str(db), cwd=tmp_path)
    srv.stop()
    store = Store(db)
    head = next(x for x in srv.lines if x.startswith("cruxflow annotate:"))
    n_items = len(store.items)
    assert n_items < 5       # 5 pairs on fewer passages: each passage is one screen
    assert f"ratings, {n_items} items (--sample 5 drew 5 (passage, question) pairs, grouped " \
           "into one screen per passage)" in head
    assert store.settings["for_ppi"] is True
    assert Counter(i.topic_id for i in store.items.values()
                   for _ in i.questions) == {"t1": 4, "t2": 1}
    with pytest.raises(SystemExit, match="choose one"):
        main(["annotate", "--dataset", str(tmp_path / "data"), "--task", "ratings",
              "--annotators", "a", "--sample", "4", "--for-ppi", "--uncertain-share", "0.5",
              "--db", str(tmp_path / "x.sqlite")])


def test_reports_hide_their_system_unless_asked(tmp_path, dataset):
    reports = write_reports(tmp_path / "bm25.koracle.jsonl", [("t1", "bm25", REPORT)])
    common = ["--dataset", str(tmp_path / "data"), "--task", "reports", "--reports",
              str(reports), "--annotators", "a", "--db", str(tmp_path / "r.sqlite")]
    for flags, shown in (([], False), (["--show-system"], True)):
        srv = Server(*common, *flags, cwd=tmp_path)
        try:
            item, progress = _page(srv.links["a"]), _page(srv.links["a"] + "progress")
        finally:
            srv.stop()
        assert ("report by <code>bm25</code>" in item) is shown
        assert ("bm25" in item + progress) is shown
        if not shown:
            assert "report 1 of 1 (its system is hidden)" in item
