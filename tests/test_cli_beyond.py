"""``cruxflow udcg``, ``support`` and ``kpr`` through the real entry point (cruxflow.cli.main):
registered, runnable without a model when the input carries its labels, and bad input exits 2
with a message that names the file."""

import json
from pathlib import Path

from cruxflow.cli import main

DATA = Path(__file__).parent / "data"


def test_udcg_from_published_utilities_needs_no_model(tmp_path, capsys):
    out = tmp_path / "udcg"
    assert main(["udcg", "--questions", str(DATA / "udcg/authors_format.json"), "--output",
                 str(out), "--utility", "given", "--model", "no/such/model.gguf"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    # (0.544328 + 0.464346 + 0.522381) / 3, hand-computed in test_udcg.py
    assert abs(summary["means"]["UDCG"] - 0.510352) < 1e-6
    assert summary["llm"] is None
    assert "UDCG" in capsys.readouterr().out


def test_support_from_the_labels_in_the_file(tmp_path):
    out = tmp_path / "support"
    assert main(["support", "--answers", str(DATA / "support/answers.jsonl"), "--output",
                 str(out)]) == 0
    per_run = (out / "per_run.tsv").read_text().splitlines()
    assert per_run[0].startswith("run_id\tweighted_precision\tweighted_recall")
    assert len(per_run) == 1 + 4


def test_kpr_with_an_empty_response_and_no_key_points_to_judge(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "question": "q?", "key_points": ["p1", "p2"],
                               "response": ""}) + "\n")
    out = tmp_path / "kpr"
    assert main(["kpr", "--questions", str(src), "--output", str(out),
                 "--model", "no/such/model.gguf"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["KPR"] == 0.0 and summary["llm"] is None   # empty: nothing entailed


def test_bad_input_exits_2_naming_file_and_record(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"topic_id": "t1", "run_id": "r", "answer": "not a list"}\n')
    assert main(["support", "--answers", str(bad), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cruxflow: error: ") and "bad.jsonl" in err and "line 1" in err
