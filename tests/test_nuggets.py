"""`cruxflow export --format autonuggetizer|nuggetbank` (docs/nuggets.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from cruxflow.cli import main
from cruxflow.data.model import Dataset, Document, Passage, ReferenceRating, Topic
from cruxflow.data.nuggets import assignment

DATA = Path(__file__).resolve().parent / "data" / "nuggets"

# The record shapes nuggetizer's CLI declares for its outputs (castorini/nuggetizer,
# src/nuggetizer/cli/introspection_metadata.py, "create-output" and "assign-output-retrieval",
# commit d00dc3eb791f4f8f49547ce3ca4f60a63b08cfd7), with the nugget fields its serializer
# writes (src/nuggetizer/cli/adapters.py, serialize_nugget).
_NUGGET = {"type": "object", "required": ["text", "importance"],
           "properties": {"text": {"type": "string"},
                          "importance": {"enum": ["vital", "okay"]},
                          "assignment": {"enum": ["support", "partial_support", "not_support"]}},
           "additionalProperties": False}
CREATE_OUTPUT = {"type": "object", "required": ["query", "qid", "nuggets"],
                 "properties": {"query": {"type": "string"}, "qid": {"type": "string"},
                                "nuggets": {"type": "array", "items": _NUGGET}},
                 "additionalProperties": False}
ASSIGN_RETRIEVAL = {"type": "object", "required": ["text", "qid", "candidate_text", "docid",
                                                    "nuggets"],
                    "properties": {"text": {"type": "string"}, "qid": {"type": "string"},
                                   "candidate_text": {"type": "string"},
                                   "docid": {"type": "string"},
                                   "nuggets": {"type": "array", "items": {
                                       **_NUGGET, "required": ["text", "importance",
                                                               "assignment"]}}},
                    "additionalProperties": False}


@pytest.mark.parametrize("rating, eta, want", [
    (5, 3, "support"), (3, 3, "support"), (2, 3, "partial_support"), (1, 3, "not_support"),
    (0, 3, "not_support"), (-1, 3, "not_support"), (4, 5, "partial_support"),
    (2, 2, "support"), (1, 2, "not_support")])
def test_assignment_mapping(rating, eta, want):
    assert assignment(rating, eta) == want


@pytest.fixture
def rated(tmp_path) -> Path:
    """Two topics: t1 with 3 questions (one asked twice), 2 rated passages and a rated summary;
    t2 with 1 question, 1 passage and no summary rating."""
    topics = {
        "t1": Topic("t1", "Summary one.", ["t1:0"], "Request one.",
                    ["Q a?", "Q b?", "Q a?"]),
        "t2": Topic("t2", None, ["t2:0"], "Request two.", ["Q c?"]),
    }
    docs = {"t1:0": Document("t1:0", "t1", "doc one"), "t2:0": Document("t2:0", "t2", "doc two")}
    passages = {"t1:0#0": Passage("t1:0#0", "Passage zero.", "t1", "t1:0"),
                "t1:0#1": Passage("t1:0#1", "Passage one.", "t1", "t1:0"),
                "t2:0#0": Passage("t2:0#0", "Passage two.", "t2", "t2:0")}
    ratings = {("t1", "t1:0#0"): [5, 2, 0], ("t1", "t1:0#1"): [1, 3, 4],
               ("t2", "t2:0#0"): [-1]}
    refs = {"t1": ReferenceRating("t1", [4, 1, 2])}
    ds = Dataset(topics, docs, passages, ratings, {}, {}, refs)
    ds.save(tmp_path / "ds")
    return tmp_path / "ds"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_autonuggetizer_export(rated, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--format", "autonuggetizer", "--dataset", str(rated),
                 "--output", str(out)]) == 0
    created = read_jsonl(out / "nuggets.jsonl")
    assigned = read_jsonl(out / "assignments.jsonl")
    for rec in created:
        Draft202012Validator(CREATE_OUTPUT).validate(rec)
    for rec in assigned:
        Draft202012Validator(ASSIGN_RETRIEVAL).validate(rec)
    # y* of t1 rated [4, 1, 2] at eta 3: only the first question is vital; t2 has no rating
    assert created == [
        {"query": "Request one.", "qid": "t1", "nuggets": [
            {"text": "Q a?", "importance": "vital"}, {"text": "Q b?", "importance": "okay"},
            {"text": "Q a?", "importance": "okay"}]},
        {"query": "Request two.", "qid": "t2", "nuggets": [
            {"text": "Q c?", "importance": "vital"}]}]
    by = {(r["qid"], r["docid"]): r for r in assigned}
    assert [n["assignment"] for n in by["t1", "t1:0#0"]["nuggets"]] == \
        ["support", "partial_support", "not_support"]
    assert [n["assignment"] for n in by["t1", "t1:0#1"]["nuggets"]] == \
        ["not_support", "support", "support"]
    assert by["t2", "t2:0#0"]["nuggets"] == [
        {"text": "Q c?", "importance": "vital", "assignment": "not_support"}]
    assert by["t1", "t1:0#1"]["candidate_text"] == "Passage one."
    assert by["t1", "t1:0#1"]["text"] == "Request one."


def test_nuggetbank_export_follows_the_autojudge_schema(rated, tmp_path):
    out = tmp_path / "out"
    assert main(["export", "--format", "nuggetbank", "--dataset", str(rated),
                 "--output", str(out), "--collection", "mine"]) == 0
    schema = json.loads((DATA / "nuggetbank.schema.json").read_text())
    validator = Draft202012Validator(schema)
    banks = read_jsonl(out / "nugget_banks.jsonl")
    for bank in banks:
        validator.validate(bank)
    t1 = banks[0]
    assert (t1["query_id"], t1["title_query"], t1["test_collection"]) == \
        ("t1", "Request one.", "mine")
    # keyed by question text; the repeated "Q a?" merges its references (passage 0 answers
    # question 0 with 5, passage 1 question 2 with 4) and stays vital
    assert list(t1["nugget_bank"]) == ["Q a?", "Q b?"]
    qa = t1["nugget_bank"]["Q a?"]
    assert [(r["doc_id"], r["quality"]) for r in qa["references"]] == \
        [("t1:0#0", 5), ("t1:0#1", 4)]
    assert qa["importance"] == "vital" and qa["metadata"]["question_indices"] == [0, 2]
    qb = t1["nugget_bank"]["Q b?"]
    assert [(r["doc_id"], r["quality"]) for r in qb["references"]] == [("t1:0#1", 3)]
    assert qb["importance"] == "okay" and qb["question_id"] == "t1-q1"
    assert banks[1]["nugget_bank"]["Q c?"]["references"] == []


def test_the_schema_rejects_what_the_models_reject():
    """The derived schema is not vacuous: a bank without title_query, a question without
    query_id and an unknown field fail, as they do against autojudge_base's models."""
    validator = Draft202012Validator(json.loads((DATA / "nuggetbank.schema.json").read_text()))
    ok = {"query_id": "1", "title_query": "x", "nugget_bank": {
        "Q?": {"question": "Q?", "query_id": "1", "references": [{"doc_id": "d"}]}}}
    assert validator.is_valid(ok)
    assert not validator.is_valid({"query_id": "1"})
    assert not validator.is_valid({**ok, "nugget_bank": {"Q?": {"question": "Q?"}}})
    assert not validator.is_valid({**ok, "nuggets": []})
    assert not validator.is_valid({**ok, "nugget_bank": {
        "Q?": {"question": "Q?", "query_id": "1", "references": [{"docid": "d"}]}}})


def test_export_refuses_an_unrated_dataset_and_an_output_inside_it(tmp_path, rated, capsys):
    bare = tmp_path / "bare"
    Dataset({"t": Topic("t", "S.", [])}).save(bare)
    assert main(["export", "--format", "nuggetbank", "--dataset", str(bare),
                 "--output", str(tmp_path / "o")]) == 2
    assert "has no answerability ratings" in capsys.readouterr().err
    assert main(["export", "--format", "nuggetbank", "--dataset", str(rated),
                 "--output", str(rated / "nuggets")]) == 2
    assert "lies inside the dataset" in capsys.readouterr().err
    assert not (rated / "nuggets").exists()
