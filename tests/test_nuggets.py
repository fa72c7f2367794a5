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
                 "--output", str(out), "--collection-name", "mine"]) == 0
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


# --- nuggets in: cruxflow ingest --format nuggets -------------------------------------------

FIXTURE = DATA / "autonuggetizer"
S0, S1, S2 = ("msmarco_v2.1_doc_51_766815931#2_1606878413",
              "msmarco_v2.1_doc_51_766815931#1_1606876582",
              "msmarco_v2.1_doc_37_463237391#10_984448281")


def ingest_nuggets(tmp_path, src=FIXTURE, *extra):
    out = tmp_path / "ds"
    rc = main(["ingest", "--format", "nuggets", "--input", str(src), "--output", str(out),
               *extra])
    return rc, out


def test_nuggets_become_questions_and_support_answerability(tmp_path):
    rc, out = ingest_nuggets(tmp_path, FIXTURE, "--collection", str(DATA / "segments.jsonl"))
    assert rc == 0
    ds = Dataset.load(out)
    assert list(ds.topics) == ["2027497", "2024-0", "2024-1"]
    t = ds.topics["2027497"]
    assert t.query.startswith("how often should you take your toddler")
    assert len(t.questions) == 4   # the repeated nugget is one question
    # support -> 5, partial_support -> 2, not_support -> 0, per question in nugget order
    assert ds.ratings["2027497", S0] == [5, 0, 0, 0]
    assert ds.ratings["2027497", S1] == [2, 5, 0, 0]
    assert ds.ratings["2027497", S2] == [0, 0, 5, 2]
    assert ds.topics["2024-0"].questions == []
    assert ds.topics["2024-1"].questions == [
        "Alexander Hamilton, James Madison and John Jay wrote the Federalist Papers"]
    counts = json.loads((out / "manifest.json").read_text())["ingest"]["counts"]
    assert counts["duplicate_nuggets"] == 1 and counts["topics_without_nuggets"] == 1
    assert counts["nuggets_from_assignments_only"] == 1
    assert counts["unassigned_nuggets"] == 1   # the fourth nugget: partial support only
    # the passages' texts come from the segments file
    segments = {json.loads(x)["docid"]: json.loads(x)["segment"]
                for x in (DATA / "segments.jsonl").read_text().splitlines()}
    assert ds.passages[S2].contents == segments[S2]
    # judgments at eta 3: each segment answers the nuggets it supports
    qrels = (out / "judgments" / "eta3" / "qrels.diversity.txt").read_text().splitlines()
    assert sorted(line.split()[:3] for line in qrels) == sorted([
        ["2027497", "0", S0], ["2027497", "1", S1], ["2027497", "2", S2],
        ["2024-1", "0", "msmarco_v2.1_doc_10_672519892#5_1260010758"]])


def test_context_metrics_score_a_run_against_the_nuggets(tmp_path, capsys):
    """Cov at k = 2 by hand: the run's top 2 of topic 2027497 are S0 and S2, which support
    nuggets 1 and 3 of the 3 that some segment supports (the 4th is only partially supported),
    so 2/3; topic 2024-1's only nugget is supported by its only segment: 1."""
    rc, out = ingest_nuggets(tmp_path)
    assert rc == 0
    capsys.readouterr()
    run = tmp_path / "run.trec"
    run.write_text(f"2027497 Q0 {S0} 1 3.0 r\n2027497 Q0 {S2} 2 2.0 r\n2027497 Q0 {S1} 3 1.0 r\n"
                   "2024-1 Q0 msmarco_v2.1_doc_10_672519892#5_1260010758 1 1.0 r\n")
    assert main(["evaluate", "--dataset", str(out), "--run", str(run), "--k", "2",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["topics_evaluated"] == 2 and result["topics_not_evaluated"] == ["2024-0"]
    assert result["aggregate"][0]["Cov"] == pytest.approx((2 / 3 + 1) / 2)


def test_export_then_import_keeps_the_judgments(tmp_path):
    """Round trip through AutoNuggetizer records: the CRUX demo release's answerable passages
    at eta 3 are the imported segments' supported nuggets."""
    crux = tmp_path / "crux"
    assert main(["ingest", "--format", "crux", "--input",
                 str(Path(__file__).resolve().parents[1] / "resources/demo/crux"),
                 "--output", str(crux)]) == 0
    assert main(["export", "--format", "autonuggetizer", "--dataset", str(crux),
                 "--output", str(tmp_path / "exp")]) == 0
    rc, back = ingest_nuggets(tmp_path, tmp_path / "exp")
    assert rc == 0
    before, after = Dataset.load(crux), Dataset.load(back)
    assert list(after.topics) == list(before.topics)

    def answerable(ds):
        return {(k, i) for k, r in ds.ratings.items() for i, x in enumerate(r) if x >= 3}

    # a question asked twice in a topic is one nugget after the trip: compare by text
    def by_text(ds):
        return {(k, ds.topics[k[0]].questions[i]) for k, i in answerable(ds)}

    assert by_text(after) == by_text(before)


BAD_NUGGETS = [
    ({"qid": "q", "query": "x", "nuggets": "a nugget"}, "line 1: field 'nuggets': missing or "
                                                        "not a list"),
    ({"qid": "q", "query": "x", "nuggets": [{"importance": "vital"}]},
     "line 1: field 'nuggets[0]': expected an object with a non-empty text"),
    ({"qid": "q", "text": "x", "docid": S0, "candidate_text": "t",
      "nuggets": [{"text": "n", "assignment": "yes"}]},
     "line 1: field 'nuggets[0].assignment': assignment 'yes' is not one of"),
    ({"query": "x", "nuggets": []}, "line 1: field 'qid': missing"),
    ({"qid": "q", "text": "x", "docid": "msmarco_v2.1_doc_99_1#0_1", "candidate_text": "t",
      "nuggets": []}, "line 1: field 'docid': cites segment 'msmarco_v2.1_doc_99_1#0_1', "
                      "which is not in the corpus"),
]


@pytest.mark.parametrize("row, message", BAD_NUGGETS, ids=[m[18:50] for _, m in BAD_NUGGETS])
def test_bad_nugget_files(tmp_path, capsys, row, message):
    src = tmp_path / "n.jsonl"
    src.write_text(json.dumps(row) + "\n")
    rc, out = ingest_nuggets(tmp_path, src, "--collection", str(DATA / "segments.jsonl"))
    assert rc == 2
    err = capsys.readouterr().err
    assert f"n.jsonl: {message}" in err, err
    assert not out.exists()


def test_a_topic_known_only_from_its_assignments_is_said_by_name(tmp_path, capsys):
    # issue 40: a qid the nuggets records lack (a typo, say) makes a topic: said on screen
    rc, _ = ingest_nuggets(tmp_path, FIXTURE)
    assert rc == 0
    assert ("note: 1 topics have no nuggets record, only assignments (their nuggets taken "
            "from those): 2024-1") in capsys.readouterr().out
