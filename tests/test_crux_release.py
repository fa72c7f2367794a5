"""`cruxflow ingest --format crux` on every layout the CRUX authors publish (fixtures written
from the schemas under tests/data/crux/: none of the released data itself)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import IngestOptions, ingest, ingest_to
from cruxflow.data.ingest.crux import crux_runs
from cruxflow.data.ingest.crux_common import read_diversity_qrels, read_ratings
from cruxflow.data.model import Dataset

DATA = Path(__file__).parent / "data" / "crux"
DUC = DATA / "release" / "crux-mds-duc04"
MULTI = DATA / "release" / "crux-mds-multi_news"
NEUCLIR = DATA / "release" / "crux-neuclir"
PAPER = DATA / "paper"


def read(path, **kw):
    return ingest("crux", path, IngestOptions(prefix="crux", **kw))


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def data_error(call, *args, **kw) -> DataError:
    with pytest.raises(DataError) as info:
        call(*args, **kw)
    return info.value


# --- the Hugging Face release clone ---------------------------------------------------------------

def test_release_subset_reads_with_its_corpus_and_summaries():
    ds, report = read(DUC)
    assert report.layout == "Hugging Face release clone"
    assert list(ds.topics) == [f"duc04-test-{i}" for i in range(4)]
    t0, t1 = ds.topics["duc04-test-0"], ds.topics["duc04-test-1"]
    assert t0.query == "Write a report on the flooding of the river valley."
    assert t0.questions[1] == "How many homes were evacuated?" and len(t0.questions) == 3
    assert t0.reference == "The river flooded in March; 300 homes were evacuated."
    # a list of summaries (DUC's several) becomes y* joined, each kept as a reference
    assert t1.reference == "Dock workers struck over pay.\n\nThe strike lasted a week."
    assert [r.text for r in t1.references] == ["Dock workers struck over pay.",
                                               "The strike lasted a week."]
    assert t0.doc_ids == ["duc04-test-0:0", "duc04-test-0:1"]   # from the corpus' passage ids
    # the corpus beside the subset: both of its files, passages of other subsets kept
    assert len(ds.passages) == 13 and "multi_news-test-0:0#0" in ds.passages
    # two judge files in one folder; -1 kept as read and counted
    assert len(ds.ratings) == 10
    assert ds.ratings[("duc04-test-0", "duc04-test-0:0#1")] == [3, 4, -1]
    assert report.counts["judge"]["unrated_values"] == 2
    assert len(report.counts["judge"]["files"]) == 2
    assert report.counts["qrels"][0]["subtopic_base"] == 0
    assert report.counts["qrels"][0]["zero_lines"] == 0
    assert report.counts["subquestions_of_other_topics"] == 1
    assert any("2 ratings of -1" in n for n in report.notes)
    assert [p.name for p in crux_runs(DUC)] == ["bm25.run"]


def test_release_without_summaries_can_be_scored_not_regenerated():
    ds, report = read(MULTI)
    assert ds.topics["multi_news-test-0"].reference is None
    assert any("no reference summary" in n and "scored but not regenerated" in n
               for n in report.notes)
    # the corpus' title goes before the text; an empty title adds nothing
    assert ds.passages["multi_news-test-0:0#0"].contents == \
        "Recount\nDade County recounted the ballots."
    assert ds.passages["multi_news-test-0:1#1"].contents == "The incumbent won by 12 votes."


def test_release_neuclir_reads_requests_nuggets_and_human_ratings():
    ds, report = read(NEUCLIR)
    assert report.layout == "Hugging Face release clone (crux-neuclir)"
    t = ds.topics["300"]
    # the authors' loader joins title and problem statement
    assert t.query == "Solar subsidies Report on solar subsidy cuts in 2023."
    # the nuggets, as [question, answer(s)] pairs (tests/test_crux_now.py reads them closer)
    assert t.questions == [
        "Which subsidies were cut? Answer: rooftop solar rebates or feed-in tariffs",
        "Who opposed the cuts? Answer: installers"]
    assert ds.passages == {}   # NeuCLIR's documents are not in crux-mds-corpus
    assert ds.ratings == {("300", "doc-a1"): [5, 0], ("300", "doc-b2"): [0, 3]}
    assert any("human" in n for n in report.notes)
    assert any("no passage collection" in n for n in report.notes)


def test_release_corpus_option_and_runs_written(tmp_path):
    out = tmp_path / "out"
    corpus = DATA / "release" / "crux-mds-corpus" / "collections" / "duc04-test-docs.jsonl"
    summary = ingest_to("crux", DUC, out, IngestOptions(collection=str(corpus)))
    assert summary["layout"] == "Hugging Face release clone" and summary["runs"] == 1
    assert summary["passages"] == 11
    assert (out / "runs" / "bm25.run").read_text() == (DUC / "run" / "bm25.run").read_text()
    ds = Dataset.load(out)                       # -1 ratings and a null reference load back
    assert ds.ratings[("duc04-test-2", "duc04-test-2:0#1")] == [-1, 0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["ingest"]["layout"] == "Hugging Face release clone"


def test_root_of_several_subsets_names_them(tmp_path):
    err = data_error(read, DATA / "release")
    assert ("pass one of them (crux-biogen, crux-mds-duc04, crux-mds-multi_news, crux-neuclir, "
            "crux-ragtime, crux-researchy)") in str(err)


def test_no_layout_lists_what_was_looked_for(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here\n")
    err = data_error(read, tmp_path)
    for wanted in ("topic/*.jsonl", "<split>_topics.jsonl", "topics.jsonl and passages.jsonl"):
        assert wanted in str(err)


# --- the paper-era files (the labeling tool's folder) --------------------------------------------

def test_paper_era_folder_reads_as_is():
    ds, report = read(PAPER)
    assert report.layout == "paper-era files"
    assert list(ds.topics) == ["duc04-testb-3", "duc04-testb-7"]
    t = ds.topics["duc04-testb-3"]
    assert t.questions[2] == "How did other governments react?"
    assert t.reference.startswith("The deputy prime minister was dismissed")
    # one record per context type (oracle, bm25, dr_rankfirst): docids are passage ids,
    # their documents are the topic's
    assert t.doc_ids == ["duc04-testb-3:2", "duc04-testb-3:0", "duc04-testb-3:1"]
    assert report.counts["rag_responses_not_imported"] == 6
    assert report.counts["unrated_values"] == 1
    assert ds.ratings[("duc04-testb-3", "duc04-testb-3:0#1")] == [0, 3, -1]
    assert report.counts["qrels"][0]["zero_lines"] == 13     # 18 lines, 5 of them 1
    assert report.counts["qrels"][0]["subtopic_base"] == 1
    assert sorted(report.counts["files"]["runs"]) == ["bm25.run", "dr_rankfirst.run",
                                                      "oracle.run"]
    assert [p.name for p in crux_runs(PAPER)] == ["bm25.run", "dr_rankfirst.run", "oracle.run"]


def test_paper_era_topics_file_given_directly(tmp_path):
    folder = copy(PAPER, tmp_path / "paper")
    shutil.copy(folder / "testb_topics.jsonl", folder / "test_topics.jsonl")
    ds, report = read(folder / "testb_topics.jsonl")
    assert list(ds.topics) == ["duc04-testb-3", "duc04-testb-7"]
    assert "test_topics.jsonl" in report.counts["files"]["ignored"]


def test_paper_era_cli_copies_the_runs(tmp_path, capsys):
    rc = main(["ingest", "--format", "crux", "--input", str(PAPER), "--output",
               str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert rc == 0 and "paper-era files" in printed and "ratings of -1" in printed
    assert sorted(p.name for p in (tmp_path / "out" / "runs").iterdir()) == [
        "bm25.run", "dr_rankfirst.run", "oracle.run"]


def test_paper_era_topic_records_must_agree(tmp_path):
    folder = copy(PAPER, tmp_path / "paper")
    lines = (folder / "testb_topics.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    rec["report"] = "Another report."
    lines[2] = json.dumps(rec)
    (folder / "testb_topics.jsonl").write_text("\n".join(lines) + "\n")
    err = data_error(read, folder)
    assert (err.path, err.record, err.field) == (str(folder / "testb_topics.jsonl"), "line 3",
                                                 "report")
    assert "differs from" in err.reason and "line 1" in err.reason


# --- bad values name the file, the line and the field; nothing is written -------------------------

@pytest.mark.parametrize("record, field, reason", [
    ({"id": "duc04-test-0", "docid": "duc04-test-0:1#3", "rating": [1, 6, 2]}, "rating",
     "item 1 (6) is outside 0..5 or -1"),
    ({"id": "duc04-test-0", "docid": "duc04-test-0:1#3", "rating": [1, -2, 2]}, "rating",
     "item 1 (-2) is outside 0..5 or -1"),
    ({"id": "duc04-test-0", "docid": "duc04-test-0:1#3", "rating": [1, "x", 2]}, "rating",
     "item 1 ('x') is not an integer rating"),
    ({"id": "duc04-test-0", "docid": "duc04-test-0:1#3"}, "rating", "missing"),
    ({"id": "duc04-test-0", "docid": "duc04-test-0:1#3", "rating": [1, 2]}, "rating",
     "2 ratings but topic duc04-test-0 has 3 questions"),
    ({"id": "duc04-test-0", "docid": "nowhere:0#0", "rating": [1, 2, 2]}, "docid",
     "unknown passage 'nowhere:0#0'"),
    ({"id": "duc04-test-0", "docids": ["duc04-test-0:1#3"], "ratings": [[1, 2, 3], [1, 1, 1]]},
     "ratings", "expected a list of 1 rating lists (one per docid)"),
], ids=["six", "minus-two", "not-a-number", "missing", "short", "unknown-passage", "batched"])
def test_bad_judge_record(tmp_path, record, field, reason):
    root = copy(DATA / "release", tmp_path / "release") / "crux-mds-duc04"
    judge = root / "judge" / "ratings.Llama-3.1-70B-Instruct.1-2.jsonl"
    with judge.open("a") as f:
        f.write(json.dumps(record) + "\n")
    out = tmp_path / "out"
    err = data_error(ingest_to, "crux", root, out, IngestOptions(prefix="crux"))
    assert (err.path, err.record, err.field) == (str(judge), "line 4", field)
    assert reason in err.reason
    assert not out.exists()


def test_judge_folder_repeats_and_conflicts(tmp_path):
    judge = copy(DUC / "judge", tmp_path / "judge")
    same = {"id": "duc04-test-3", "docid": "duc04-test-3:0#0", "rating": [3, 0]}
    (judge / "ratings.x.2-3.jsonl").write_text(json.dumps(same) + "\n")
    assert read_ratings(judge).repeated == 1
    other = {**same, "rating": [3, 1]}
    (judge / "ratings.x.2-3.jsonl").write_text(json.dumps(other) + "\n")
    err = data_error(read_ratings, judge)
    assert (err.path, err.record, err.field) == (str(judge / "ratings.x.2-3.jsonl"), "line 1",
                                                 "rating")
    assert "rated differently at" in err.reason and "1-2.jsonl line 3" in err.reason


def test_ratings_in_every_record_layout(tmp_path):
    path = tmp_path / "r.jsonl"
    rows = [{"id": "t", "docid": "t:0#0", "rating": [1, 2]},
            {"example_id": "t", "pid": "t:0#1", "rating": [3, -1]},
            {"topic_id": "t", "passage_id": "t:0#2", "ratings": [5, 5]},
            {"id": "t", "docids": ["t:0#3", "t:0#4"], "ratings": [[0, 0], [4.0, 1]]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_ratings(path)
    assert got.by_topic() == {"t": {"t:0#0": [1, 2], "t:0#1": [3, -1], "t:0#2": [5, 5],
                                    "t:0#3": [0, 0], "t:0#4": [4, 1]}}
    assert got.unrated == 1 and len(got.layouts) == 4


@pytest.mark.parametrize("line, field, reason", [
    ("t 0 t:0#0", None, "expected 4 columns"),
    ("t 0 t:0#0 yes", "relevance", "relevance 'yes' is not an integer"),
    ("t 1 t:0#0 1", "passage", "judged again (first at line 1)"),
])
def test_bad_qrels_line(tmp_path, line, field, reason):
    path = tmp_path / "q.txt"
    path.write_text(f"t 1 t:0#0 1\n{line}\n")
    err = data_error(read_diversity_qrels, path)
    assert (err.path, err.record, err.field) == (str(path), "line 2", field)
    assert reason in err.reason


def test_release_summaries_from_the_datasets_parquet_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    root = copy(DATA / "release", tmp_path / "release") / "crux-mds-duc04"
    (root / "data" / "train.jsonl").unlink()
    pq.write_table(pa.Table.from_pylist([{"id": "duc04-test-1", "summary": ["A b.", "C d."]}]),
                   root / "data" / "train-00000-of-00001.parquet")
    ds, report = read(root)
    assert ds.topics["duc04-test-1"].reference == "A b.\n\nC d."
    assert ds.topics["duc04-test-0"].reference is None
    assert any("3 of 4 topics have no reference summary" in n for n in report.notes)


def test_labeling_tool_folder_imports_as_it_ships(tmp_path):
    """crux_testb/ as DylanJoo/crux-labeling ships it: per-context topic files whose records
    all say type "oracle", oracle.jsonl also holding <system>_<topic> records, null for a
    filtered sub-question, runs ranking every line 4, no passages."""
    folder = DATA / "labeling_tool" / "crux_testb"
    ds, report = read(folder)
    assert report.layout == "paper-era files"
    assert list(ds.topics) == ["duc04-testb-3", "duc04-testb-7"]   # not bm25_duc04-testb-3
    t = ds.topics["duc04-testb-3"]
    assert t.questions[1] == "(no sub-question: null in the source file)"
    assert t.questions[2] == "How did governments react?"
    # topic 3's five records all hold the same null question: one question, named once
    assert report.counts["null_questions"] == 1
    assert report.counts["null_question_ids"] == ["duc04-testb-3 #1"]
    assert report.counts["rag_responses_not_imported"] == 10
    assert ds.passages == {} and ds.ratings == {}
    summary = ingest_to("crux", folder, tmp_path / "out", IngestOptions(prefix="crux"))
    assert summary["runs"] == 3 and summary["topics"] == 2
    assert Dataset.load(tmp_path / "out").topics["duc04-testb-3"].questions == t.questions


def _windows(src: Path, dst: Path, *, bom: bool) -> None:
    """``src`` as a Windows editor saves it: CRLF line ends, a UTF-8 byte-order mark if asked."""
    data = src.read_bytes().replace(b"\n", b"\r\n")
    dst.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)


def test_paper_era_folder_saved_by_a_windows_editor_reads_the_same(tmp_path):
    """Every file of the folder with CRLF line ends, the JSONL files also with a byte-order
    mark (what Notepad writes): the same topics, passages, ratings and qrels as the original."""
    folder = tmp_path / "paper"
    folder.mkdir()
    for f in PAPER.iterdir():
        _windows(f, folder / f.name, bom=f.suffix == ".jsonl")
    assert (folder / "testb_topics.jsonl").read_bytes()[:4] == b"\xef\xbb\xbf{"
    ds, report = read(folder)
    want, want_report = read(PAPER)
    assert ds.topics == want.topics and ds.passages == want.passages
    assert ds.ratings == want.ratings
    def no_path(rows):
        return [{k: v for k, v in r.items() if k != "file"} for r in rows]
    assert no_path(report.counts["qrels"]) == no_path(want_report.counts["qrels"])
    assert report.counts["files"] == want_report.counts["files"]


# --- the labeling tool's files as they ship (tests/data/crux/labeling_release/README.md) ------

LABELING = DATA / "labeling_release"


def test_labeling_tool_example_files_import_as_they_ship(tmp_path):
    """Real lines: "type": ["oracle", k], topic duc04-testb-18's question 14 an empty string,
    runs ranking passages of the whole corpus that the passages file does not hold."""
    ds, report = read(LABELING)
    assert list(ds.topics) == ["duc04-testb-3", "duc04-testb-7", "duc04-testb-18"]
    t18 = ds.topics["duc04-testb-18"]
    assert len(t18.questions) == 15
    assert t18.questions[14] == "(no sub-question: empty in the source file)"
    assert report.counts["empty_questions"] == 1
    assert report.counts["empty_question_ids"] == ["duc04-testb-18 #14"]
    assert any("duc04-testb-18 #14" in n for n in report.notes)
    assert report.counts["record_types"] == {"oracle@4": 2, "oracle@5": 1}
    assert len(ds.passages) == 78            # wc -l testb_passages.jsonl
    summary = ingest_to("crux", LABELING, tmp_path / "out", IngestOptions(prefix="crux"))
    assert summary["topics"] == 3 and summary["runs"] == 3
    # bm25.run: 4 of its 9 lines rank multi_news-train passages; dr_rankfirst.run 3, and 2
    # of duc04-testb-11, whose passages the excerpt leaves out
    outside = {n.split(": ", 1)[0]: n for n in summary["notes"] if "outside the collection" in n}
    assert outside["bm25.run"].startswith("bm25.run: 4 of 9 run lines")
    assert outside["dr_rankfirst.run"].startswith("dr_rankfirst.run: 5 of 9 run lines")
    assert "oracle.run" not in outside
    # the run is copied as shipped
    assert (tmp_path / "out" / "runs" / "bm25.run").read_bytes() == \
        (LABELING / "bm25.run").read_bytes()


def test_labeling_tool_run_outside_the_collection_refused_when_strict(tmp_path):
    with pytest.raises(DataError, match="'multi_news-train-13278:3#9'") as e:
        ingest_to("crux", LABELING, tmp_path / "out",
                  IngestOptions(prefix="crux", strict_collection=True))
    assert Path(e.value.path).name == "bm25.run" and e.value.record == "line 6"
    assert not (tmp_path / "out").exists()


def test_vanilla_type_of_the_example_files(tmp_path):
    """annotator_1/example/testb-oracle_k-1:2_n-1.jsonl: "type": ["vanilla", 10]."""
    ds, report = read(DATA / "labeling_example" / "testb-oracle_k-1_2_n-1.jsonl")
    assert list(ds.topics) == ["duc04-testb-3", "duc04-testb-18"]
    assert report.counts["record_types"] == {"vanilla@10": 2}
    assert report.counts["empty_question_ids"] == ["duc04-testb-18 #14"]


def test_bad_type_names_the_field(tmp_path):
    line = (LABELING / "testb_topics.jsonl").read_text().splitlines()[0]
    bad = tmp_path / "topics.jsonl"
    bad.write_text(line.replace('"type": ["oracle", 5]', '"type": ["oracle", "five"]') + "\n")
    err = data_error(read, bad)
    assert err.field == "type" and err.record == "line 1"


def test_release_subtopics_with_empty_and_null_questions(tmp_path):
    """The release's subtopics/ carries the labeling tool's question lists: an empty or null
    question keeps its index (the judge's rating vectors are by position)."""
    root = copy(DUC, tmp_path / "crux-mds-duc04")
    shutil.copytree(DATA / "release" / "crux-mds-corpus", tmp_path / "crux-mds-corpus")
    f = root / "subtopics" / "subquestions.duc04-test.jsonl"
    f.write_text(f.read_text().replace('"How many homes were evacuated?"', '""')
                 .replace('"How long did the strike last?"', "null"))
    ds, report = read(root)
    assert ds.topics["duc04-test-0"].questions[1] == "(no sub-question: empty in the source file)"
    assert ds.topics["duc04-test-1"].questions[1] == "(no sub-question: null in the source file)"
    assert report.counts["empty_question_ids"] == ["duc04-test-0 #1"]
    assert report.counts["null_question_ids"] == ["duc04-test-1 #1"]
    assert ds.ratings == read(DUC)[0].ratings      # indices hold: the same vectors
    f.write_text(f.read_text().replace("null", "7", 1))
    err = data_error(read, root)
    assert err.field == "subquestions" and "item 1 must be a string" in str(err)


def test_cli_strict_collection_and_number_like_flags(tmp_path, capsys):
    rc = main(["ingest", "--format", "crux", "--input", str(LABELING), "--output",
               str(tmp_path / "out"), "--strict-collection"])
    err = capsys.readouterr().err
    assert rc == 2 and "bm25.run: line 6: field 'docid'" in err
    rc = main(["ingest", "--format", "crux", "--input", str(LABELING), "--output",
               str(tmp_path / "out"), "--number-like", str(LABELING / "testb_passages.jsonl")])
    assert rc == 2 and ("--number-like does not apply to the crux format (it applies to "
                        "duc2004)") in capsys.readouterr().err
    rc = main(["ingest", "--format", "crux", "--input", str(LABELING), "--output",
               str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert rc == 0 and "bm25.run: 4 of 9 run lines rank a passage outside" in out


@pytest.mark.parametrize("judge", [DUC / "judge", MULTI / "judge", NEUCLIR / "judge"],
                         ids=["duc04", "multi_news", "neuclir"])
def test_the_release_judge_reads_at_once_as_record_by_record(judge):
    # the shipped files take the all-at-once path, and it reads what the checked one reads
    from cruxflow.data.ingest.crux_common import (
        _read_ratings_checked,
        _read_release_ratings,
        jsonl_files,
    )

    files = jsonl_files(judge, "ratings")
    fast = _read_release_ratings(files, "utf-8", None)
    assert fast is not None
    checked = _read_ratings_checked(files, "utf-8", None)
    assert fast == checked and fast.summary() == checked.summary()


@pytest.mark.parametrize("record", [
    {"id": 7, "docid": "7:0#0", "rating": [1, 2]},            # an integer topic id
    {"id": "t", "docid": "t:0#0", "rating": [1.0, 2]},        # an integral float
    {"id": "t", "docid": "t:0#0", "rating": [1, 2], "x": 1},  # more fields
], ids=["int-id", "float-rating", "extra-field"])
def test_records_off_the_release_layout_read_as_before(tmp_path, record):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "t", "docid": "t:0#1", "rating": [0, -1]}) + "\n\n"
                    + json.dumps(record) + "\n")
    got = read_ratings(path)
    tid = str(record["id"])
    assert got.by_topic()[tid][f"{tid}:0#0"] == [1, 2]
    assert got.where[(tid, f"{tid}:0#0")] == {"path": path, "record": "line 3"}
    assert got.unrated == 1


@pytest.mark.parametrize("text, field, reason", [
    ('{"id": "t", "docid": "t:0#0", "rating": [1]}\n{"id": "t", "docid": "t:0#1", '
     '"rating": [1, 2]}\n', "rating", "2 ratings, but topic t has 1 at"),
    ('{"id": "t", "docid": "t:0#0", "rating": [1]}\n{"id": "t", "docid": "t\\u00a0x", '
     '"rating": [2]}\n', "docid", "without spaces"),
    ('{"id": "t", "docid": "t:0#0", "rating": [1]}\n{"id": "t", "docid": "t:0#1", '
     '"rating": [true]}\n', "rating", "item 0 (True) is not an integer rating"),
], ids=["length", "no-break-space", "bool"])
def test_a_bad_release_record_is_named_on_its_line(tmp_path, text, field, reason):
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    err = data_error(read_ratings, path)
    assert (err.path, err.record, err.field) == (str(path), "line 2", field)
    assert reason in err.reason


@pytest.mark.parametrize("qrels", [PAPER / "testb_div_qrels.txt",
                                   DUC / "qrels" / "div_qrels-tau3.txt",
                                   MULTI / "qrels" / "div_qrels-tau3.txt",
                                   NEUCLIR / "qrels" / "neuclir24-test-request.qrel"],
                         ids=["paper", "duc04", "multi_news", "neuclir"])
def test_qrels_read_at_once_as_line_by_line(qrels, tmp_path):
    from cruxflow.data.ingest.crux_common import _read_diversity_qrels_checked
    from cruxflow.data.io import read_text

    text = read_text(qrels)
    got = read_diversity_qrels(qrels)
    assert got == _read_diversity_qrels_checked(qrels, text)
    assert len(got.rows) == len(text.strip().split("\n"))
    # with a blank line and a tab the file takes the line-by-line path: the same rows
    messy = tmp_path / "messy.txt"
    messy.write_text("\n" + text.replace(" ", "\t", 1))
    assert read_diversity_qrels(messy).rows == got.rows


def test_judge_names_the_ratings_of_a_release_in_place_of_its_judge_folder(tmp_path):
    # one file of the judge folder given: its ratings only, and the folder's said unused
    first = sorted((DUC / "judge").glob("*.jsonl"))[0]
    ds, report = read(DUC, judge=[str(first)])
    whole, _ = read(DUC)
    mine = read_ratings(first).ratings
    assert ds.ratings == {k: v for k, v in whole.ratings.items() if k in mine}
    assert "the folder's judge/ not used (--judge given)" in report.notes
