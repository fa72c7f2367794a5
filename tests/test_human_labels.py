"""The CRUX labeling tool's exports (cruxflow.paper.human_labels) and `cruxflow agreement`.

Fixture tests/data/crux/labels (written from the tool's schemas), on the paper-era topics
P = duc04-testb-3 (3 questions, the third not asked: -2) and Q = duc04-testb-7 (2 questions).
Task 1, answerability of the asked questions per report and annotator:

    report            annotator1  annotator2  annotator3     coverage 1 / 2 / 3
    P oracle          [1, 1]      [1, 1]      [1, 0]         1    1    .5
    P bm25            [1, 0]      [0, 0]      [1, 0]         .5   0    .5
    P dr_rankfirst    [0, 1]      [0, 1]      [1, 1]         .5   .5   1
    Q oracle          [1, 1]      [1, 1]      [1, 1]         1    1    1
    Q bm25            [0, 0]      [0, 1]      [0, 0]         0    .5   0
    Q dr_rankfirst    [1, 0]      [1, 0]      [0, 0]         .5   .5   0

The judge's report ratings (labels/judge_reports.jsonl) give Cov(y) 1, .5, .5, 1, 0, .5 over the
same questions, annotator1's exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.paper.human_labels import (
    gather,
    read_passage_label_files,
    read_report_label_files,
    report_topics,
    split_report_id,
)

DATA = Path(__file__).parent / "data" / "crux"
LABELS = DATA / "labels"
# the tool's layout shares file names across annotators' folders: named, else refused
T1 = [f"annotator{i}={LABELS / f'annotator{i}' / 'qlabels.jsonl'}" for i in (1, 2, 3)]
T2 = [f"annotator{i}={LABELS / f'annotator{i}' / 'qrels.jsonl'}" for i in (1, 2)]
JUDGE = [str(DATA / "paper" / "testb_judgements.jsonl"), str(LABELS / "judge_reports.jsonl")]
P, Q = "duc04-testb-3", "duc04-testb-7"


def test_task1_export_reads_as_labels():
    labels = read_report_label_files(T1)
    assert sorted(labels["annotator"].unique()) == ["annotator1", "annotator2", "annotator3"]
    assert set(labels["system"]) == {"oracle", "bm25", "dr_rankfirst"}
    # -2 (not asked) is no label: P's third question never appears
    assert not ((labels["topic_id"] == P) & (labels["question"] == 2)).any()
    assert len(labels) == 3 * 6 * 2
    row = labels[(labels["annotator"] == "annotator2") & (labels["system"] == "bm25")
                 & (labels["topic_id"] == Q)].sort_values("question")
    assert row["answerable"].tolist() == [False, True]
    assert row["line"].tolist() == [5, 5] and row["file"].iloc[0] == T1[1].split("=", 1)[1]


def test_report_ids_split_on_known_topics():
    topics = report_topics(["multi_news-test-3", "bm25_multi_news-test-3",
                            "dr_rankfirst_multi_news-test-3"])
    assert topics == {"multi_news-test-3"}
    assert split_report_id("dr_rankfirst_multi_news-test-3", topics) == \
        ("dr_rankfirst", "multi_news-test-3")
    assert split_report_id("multi_news-test-3", topics) == ("oracle", "multi_news-test-3")
    assert split_report_id("bm25_other-1", topics) is None


@pytest.mark.parametrize("record, field, reason", [
    ({"id": P, "answerability": [1, 2, -2]}, "answerability", "item 1 (2) is not 1, 0 or -2"),
    ({"id": P, "answerability": "1,0"}, "answerability", "expected a list"),
    ({"id": 7, "answerability": [1]}, "id", "missing or not a string"),
])
def test_task1_bad_values_name_file_line_field(tmp_path, record, field, reason):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": P, "answerability": [1, 0, -2]}) + "\n"
                    + json.dumps(record) + "\n")
    with pytest.raises(DataError) as info:
        read_report_label_files([path])
    assert (info.value.path, info.value.record, info.value.field) == (str(path), "line 2", field)
    assert reason in info.value.reason


def test_task2_export_drops_not_labelled_and_checks_ratings(tmp_path):
    ratings, unlabelled = read_passage_label_files(T2)
    # annotator1: 2 + 1 + 2 ratings, annotator2: 2 + 1; -1 not labelled: 3 + 2
    assert len(ratings) == 8 and unlabelled == 5
    assert ratings[ratings["passage_id"] == f"{Q}:1#2"]["rating"].tolist() == [3, 5]
    bad = tmp_path / "qrels.jsonl"
    bad.write_text(json.dumps({"id": P, "document": f"{P}:0#0", "relevances": {"0": 6}}) + "\n")
    with pytest.raises(DataError) as info:
        read_passage_label_files([bad])
    assert (info.value.record, info.value.field) == ("line 1", "relevances")
    assert "rating 6 is outside 0..5 (or -1)" in info.value.reason


def test_annotator_names_must_differ(tmp_path):
    for d in ("x", "y"):
        (tmp_path / d / "a").mkdir(parents=True)
        (tmp_path / d / "a" / "q.jsonl").write_text(Path(T1[0].split("=", 1)[1]).read_text())
    paths = [tmp_path / d / "a" / "q.jsonl" for d in ("x", "y")]
    with pytest.raises(DataError) as info:      # one name from one stem: refused, never merged
        read_report_label_files(paths)
    assert str(info.value) == (f"two annotators named 'q': {paths[0]} and {paths[1]} (name "
                               "them apart: NAME=PATH)")
    labels = read_report_label_files([f"ann-x={paths[0]}", f"ann-y={paths[1]}"])
    assert sorted(labels["annotator"].unique()) == ["ann-x", "ann-y"]


def test_cli_reports_what_the_paper_reports(tmp_path, capsys):
    out = tmp_path / "agreement"
    rc = main(["agreement", "--human-reports", *T1, "--human", *T2, "--judge", *JUDGE,
               "--output", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert rc == 0
    t1, t2 = summary["t1"], summary["t2"]
    # Fleiss: 12 items (6 reports x 2 questions), 3 raters; answerable counts per item
    # 3,2,2,0,1,3,3,3,0,1,2,0 -> P_bar = 26/36, P_e = (20^2 + 16^2)/36^2 = 41/81,
    # kappa = (13/18 - 41/81) / (40/81) = 35/80
    assert math.isclose(t1["fleiss"]["kappa"], 35 / 80)
    assert t1["fleiss"]["n_items"] == 12
    # Spearman between annotators, on average ranks of the coverage columns above:
    # 1~2: 11/15, 1~3: 9/sqrt(15*16), 2~3: 5/sqrt(15*16)
    pairs = {(r["annotator_a"], r["annotator_b"]): r["rho"] for r in t1["annotator_spearman"]}
    assert math.isclose(pairs[("annotator1", "annotator2")], 11 / 15)
    assert math.isclose(pairs[("annotator1", "annotator3")], 9 / math.sqrt(240))
    assert math.isclose(pairs[("annotator2", "annotator3")], 5 / math.sqrt(240))
    # the judge: Cov(y) equals annotator1's column; against the annotators' mean
    # (.833, .333, .667, 1, .167, .333): 15 / sqrt(17 * 15)
    rho = {k: v["rho"] for k, v in t1["spearman"].items()}
    assert math.isclose(rho["annotator1"], 1.0)
    assert math.isclose(rho["annotator2"], 11 / 15)
    assert math.isclose(rho["(mean)"], 15 / math.sqrt(255))
    # Task 2: (human, judge) pairs 4/4, 1/0, 2/3, 3/2, 5/4 (annotator1), 0/0, 5/5, 4/2
    # (annotator2): answerable precision 3/4, recall 3/5; unanswerable 2/4 and 2/3;
    # exact agreement 3/8
    assert t2["examples"] == 8 and t2["exact_agreement"] == 3 / 8
    assert t2["per_class"]["answerable"]["precision"] == 0.75
    assert t2["per_class"]["answerable"]["recall"] == 0.6
    assert t2["per_class"]["unanswerable"]["precision"] == 0.5
    assert math.isclose(t2["per_class"]["unanswerable"]["recall"], 2 / 3)
    assert summary["inputs"]["t2_not_labelled"] == 5
    assert summary["inputs"]["judge"]["report_ratings"] == 6
    assert {p.name for p in out.iterdir()} >= {"human_coverage.tsv", "annotator_spearman.tsv",
                                              "spearman.tsv", "judge_precision_recall.tsv",
                                              "summary.json"}


def test_cli_prints_and_accepts_cruxflow_report_ratings(tmp_path, capsys):
    # our rag_judge output, one file per system; only topic P's reports are rated here
    for system, ratings in (("oracle", [5, 4, 0]), ("bm25", [3, 1, 5]),
                            ("dr_rankfirst", [0, 0, 0])):
        (tmp_path / f"{system}.koracle.jsonl").write_text(
            json.dumps({"topic_id": P, "ratings": ratings}) + "\n")
    rc = main(["agreement", "--human-reports", *T1, "--judge", JUDGE[0], "--judge-reports",
               *[str(p) for p in sorted(tmp_path.glob("*.jsonl"))]])
    printed = capsys.readouterr().out
    assert rc == 0
    assert "items every annotator labelled" in printed and "over 12 (report" in printed
    # judge Cov(y) of P: oracle 1, bm25 .5, dr_rankfirst 0 -> annotator1 (1, .5, .5): ranks
    # (3, 2, 1) vs (3, 1.5, 1.5): rho = 3 / sqrt(4 * 3) = 0.866
    assert "Spearman judge ~ annotator1: 0.866 (p 0.333, 3 reports)" in printed


def test_gather_counts_only_answerable_labelled_questions():
    inputs = gather(T1, judge=JUDGE)
    # the judge answers all three questions of P, the annotators were asked two
    assert inputs.kept == {P: [0, 1], Q: [0, 1]}
    assert inputs.counts["answerable_questions_without_labels"] == 1
    assert set(inputs.llm_ratings) == {(P, f"{P}:0#0"), (P, f"{P}:0#1"), (P, f"{P}:1#2"),
                                       (P, f"{P}:2#3"), (Q, f"{Q}:0#0"), (Q, f"{Q}:0#1"),
                                       (Q, f"{Q}:1#2")}
