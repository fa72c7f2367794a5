"""`cruxflow ingest --format documents` (docs/own-data.md): one's own topics in, and what the
question stages do with what each topic brings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scripted import runner_for

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import IngestOptions, ingest
from cruxflow.data.model import Dataset, Document, Topic
from cruxflow.stages.prompts import (
    REPORT_REQUEST,
    REPORT_REQUEST_DOCUMENTS,
    SUBQUESTIONS,
    SUBQUESTIONS_DOCUMENTS,
)
from cruxflow.stages.questions import (
    report_request_prompts,
    subquestion_prompts,
    subquestions,
    to_generate,
)
from cruxflow.stages.ratings import rating_items

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "resources" / "own-data" / "constitution"


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# Three topics, one per way of getting its questions: given, from the summary, from the documents.
ROWS = [
    {"topic_id": "given", "request": "Explain  the Senate.",
     "questions": ["How long do Senators serve?", "How many Senators has a State?"],
     "documents": [{"doc_id": "a", "text": "The Senate of the United States shall be\n"
                    "composed of two Senators from each State.\n\nEach Senator shall have "
                    "one Vote.", "title": "Senate"},
                   {"doc_id": "b", "text": "Senators serve six Years."}]},
    {"topic_id": "summary", "reference": "Congress meets\nonce a year.",
     "documents": [{"doc_id": "x", "text": "The Congress shall assemble at least once in every "
                    "Year."}]},
    {"topic_id": "bare", "documents": [{"doc_id": "p", "text": "one two three four five six"},
                                       {"doc_id": "q", "text": "seven eight nine ten"}]},
]


def read(path) -> tuple[Dataset, object]:
    return ingest("documents", path, IngestOptions(prefix="own"))


def test_jsonl_topics_keep_their_ids_and_what_they_bring(tmp_path):
    ds, report = read(write_jsonl(tmp_path / "t.jsonl", ROWS))
    assert list(ds.topics) == ["given", "summary", "bare"]
    given = ds.topics["given"]
    assert given.doc_ids == ["given:0", "given:1"]
    assert given.query == "Explain the Senate."   # whitespace collapsed, words as given
    assert given.questions == ["How long do Senators serve?", "How many Senators has a State?"]
    assert given.reference is None and given.references == []
    a = ds.documents["given:0"]
    # the line break inside a paragraph joins, the blank line stays a paragraph break
    assert a.text == ("The Senate of the United States shall be composed of two Senators from "
                      "each State.\n\nEach Senator shall have one Vote.")
    assert (a.title, a.source_id, a.topic_id) == ("Senate", "a", "given")
    assert ds.topics["summary"].reference == "Congress meets once a year."
    assert [r.text for r in ds.topics["summary"].references] == ["Congress meets once a year."]
    assert ds.topics["bare"].query is None and ds.topics["bare"].questions == []
    assert report.counts == {"given_requests": 1, "given_questions": 1, "from_reference": 1,
                             "from_documents": 1}


def test_shipped_folder(tmp_path):
    ds, report = read(SHIPPED)
    assert list(ds.topics) == ["congress", "president"]
    # documents in file-name order; their ids are the file names without .txt
    assert [ds.documents[d].source_id for d in ds.topics["congress"].doc_ids] == \
        ["elections", "house", "senate"]
    assert [ds.documents[d].source_id for d in ds.topics["president"].doc_ids] == \
        ["electors", "office"]
    president = ds.topics["president"]
    assert len(president.questions) == len(
        (SHIPPED / "president" / "questions.txt").read_text().strip().splitlines()) == 4
    assert president.query.startswith("Write a report on the office of President")
    senate = ds.documents["congress:2"].text
    assert senate.startswith("The Senate of the United States shall be composed of two")
    assert senate.count("\n\n") == 2   # three paragraphs
    assert report.layout == "folders"
    assert report.counts["from_documents"] == 1 and report.counts["given_questions"] == 1


def test_cli_writes_a_dataset_the_loader_reads_and_says_what_is_skipped(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["ingest", "--format", "documents", "--input", str(SHIPPED),
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 topics bring their request and 1 their questions" in printed
    ds = Dataset.load(out)
    assert len(ds.documents) == 5
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["ingest"]["counts"]["given_questions"] == 1


def test_distractors_are_optional_and_added(tmp_path):
    src = write_jsonl(tmp_path / "t.jsonl", ROWS[2:])
    distractors = ROOT / "resources" / "demo" / "raw" / "distractors.jsonl"
    out = tmp_path / "out"
    assert main(["ingest", "--format", "documents", "--input", str(src), "--output", str(out),
                 "--distractors", str(distractors)]) == 0
    ds = Dataset.load(out)
    n = len([x for x in distractors.read_text().splitlines() if x.strip()])
    assert len([d for d in ds.documents.values() if d.topic_id is None]) == n
    assert all(d.doc_id.startswith("own-distractors") for d in ds.documents.values()
               if d.topic_id is None)


BAD_JSONL = [
    ({"topic_id": "t", "documents": []}, "line 1: field 'documents': the topic has no documents"),
    ({"topic_id": "t"}, "line 1: field 'documents': missing"),
    ({"topic_id": "t", "documents": [{"doc_id": "a"}]},
     "line 1: field 'documents[0].text': missing"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "  \n"}]},
     "line 1: field 'documents[0].text': is empty"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}, {"doc_id": "a", "text": "y"}]},
     "line 1: field 'documents[1].doc_id': duplicate document id 'a'"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}], "questions": "Why?"},
     "line 1: field 'questions': expected a list of strings, got str"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}], "questions": ["Why?", 3]},
     "line 1: field 'questions': item 1 (3) is not a non-empty string"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}], "questions": []},
     "line 1: field 'questions': is an empty list"),
    ({"topic_id": "t 1", "documents": [{"doc_id": "a", "text": "x"}]},
     "line 1: field 'topic_id': topic id 't 1': letters, digits, '_', '.' and '-' only"),
    ({"topic_id": "t:1", "documents": [{"doc_id": "a", "text": "x"}]},
     "line 1: field 'topic_id': topic id 't:1': letters, digits, '_', '.' and '-' only"),
    ({"topic_id": "../../etc", "documents": [{"doc_id": "a", "text": "x"}]},
     "line 1: field 'topic_id': topic id '../../etc': letters, digits"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}], "request": 5},
     "line 1: field 'request': expected a string, got int"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x", "body": "y"}]},
     "line 1: field 'documents[0].body': unknown field"),
    ({"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}], "summary": "y"},
     "line 1: field 'summary': unknown field"),
]


@pytest.mark.parametrize("row, message", BAD_JSONL, ids=[m.split(": ", 1)[1][:40]
                                                         for _, m in BAD_JSONL])
def test_bad_jsonl_names_file_line_and_field_and_writes_nothing(tmp_path, capsys, row, message):
    src = write_jsonl(tmp_path / "topics.jsonl", [row])
    out = tmp_path / "out"
    assert main(["ingest", "--format", "documents", "--input", str(src),
                 "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cruxflow: error: ") and f"topics.jsonl: {message}" in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_duplicate_topic_names_both_lines(tmp_path):
    row = {"topic_id": "t", "documents": [{"doc_id": "a", "text": "x"}]}
    src = write_jsonl(tmp_path / "topics.jsonl", [row, ROWS[2], row])
    with pytest.raises(DataError, match=r"line 3: field 'topic_id': duplicate topic id 't' "
                                        r"\(first at line 1\)"):
        read(src)


def folder(tmp_path, files: dict[str, str]) -> Path:
    root = tmp_path / "own"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


BAD_FOLDERS = [
    ({"t/request.txt": "A request."}, "own/t: the topic has no documents"),
    ({"t/a.txt": "\n \n"}, "own/t/a.txt: field 'text': the document has no text"),
    ({"t/a.txt": "x", "t/questions.txt": "\n"}, "own/t/questions.txt: is empty"),
    ({"t 1/a.txt": "x"}, "own/t 1: topic t 1: field 'folder name': topic id 't 1'"),
    ({"README.txt": "not a topic"}, "own: holds no topic folder"),
]


@pytest.mark.parametrize("files, message", BAD_FOLDERS, ids=[m for _, m in BAD_FOLDERS])
def test_bad_folders(tmp_path, capsys, files, message):
    src = folder(tmp_path, files)
    out = tmp_path / "out"
    assert main(["ingest", "--format", "documents", "--input", str(src),
                 "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists()


def test_folder_questions_skip_blank_lines_and_hidden_folders_are_ignored(tmp_path):
    src = folder(tmp_path, {"t/b.txt": "second", "t/a.txt": "first",
                            "t/questions.txt": "Q one here?\n\n  Q two here?  \n",
                            ".git/a.txt": "not a topic", "notes.md": "ignored"})
    ds, _ = read(src)
    assert list(ds.topics) == ["t"]
    assert ds.topics["t"].questions == ["Q one here?", "Q two here?"]
    assert [ds.documents[d].text for d in ds.topics["t"].doc_ids] == ["first", "second"]


# --- the question stages on such topics -------------------------------------------------------

def test_a_dataset_of_summaries_gets_exactly_the_papers_prompts():
    topics = [Topic("a", "Summary A.", ["a:0"]), Topic("b", "Summary B.", ["b:0"])]
    docs = {"a:0": Document("a:0", "a", "doc"), "b:0": Document("b:0", "b", "doc")}
    # with or without the documents at hand: byte-identical prompts, so cached calls stay valid
    assert subquestion_prompts(topics, 10, docs) == subquestion_prompts(topics, 10) == [
        SUBQUESTIONS.render(n=10, document="Summary A."),
        SUBQUESTIONS.render(n=10, document="Summary B.")]
    assert report_request_prompts(topics, docs) == [REPORT_REQUEST.render(report="Summary A."),
                                                    REPORT_REQUEST.render(report="Summary B.")]


def test_topics_without_summary_are_asked_about_their_documents(tmp_path):
    ds, _ = read(write_jsonl(tmp_path / "t.jsonl", ROWS))
    todo, given = to_generate(list(ds.topics.values()), "questions")
    assert [t.topic_id for t in todo] == ["summary", "bare"] and list(given) == ["given"]
    prompts = subquestion_prompts(todo, 3, ds.documents)
    assert prompts[0] == SUBQUESTIONS.render(n=3, document="Congress meets once a year.")
    assert prompts[1] == SUBQUESTIONS_DOCUMENTS.render(
        n=3, documents="Document 1: one two three four five six\n\n"
                       "Document 2: seven eight nine ten")
    requests = report_request_prompts(todo, ds.documents)
    assert requests[1] == REPORT_REQUEST_DOCUMENTS.render(
        documents="Document 1: one two three four five six\n\n"
                  "Document 2: seven eight nine ten")


def test_documents_share_the_word_budget(monkeypatch, tmp_path):
    import cruxflow.stages.questions as q

    ds, _ = read(write_jsonl(tmp_path / "t.jsonl", ROWS[2:]))
    monkeypatch.setattr(q, "DOCUMENTS_MAX_WORDS", 6)
    text = q.documents_text(ds.topics["bare"], ds.documents, q.DOCUMENTS_MAX_WORDS)
    # 6 words over 2 documents: 3 each
    assert text == "Document 1: one two three\n\nDocument 2: seven eight nine"


def test_generated_questions_for_the_documents_prompt(tmp_path):
    ds, _ = read(write_jsonl(tmp_path / "t.jsonl", ROWS[2:]))
    runner = runner_for(lambda r: "What is counted first here?</q>\n<q>Which numbers follow "
                                  "after six?</q>")
    out = subquestions(list(ds.topics.values()), runner, 5, documents=ds.documents)
    assert out == {"bare": ["What is counted first here?", "Which numbers follow after six?"]}
    assert runner.backend.requests[0].prompt.startswith(
        "Instruction: Write 5 diverse questions that can reveal the information contained in "
        "the given documents.")


def test_rating_items_skip_the_summary_a_topic_does_not_have():
    with_summary = Topic("a", "Summary.", ["a:0"], "q", ["Q1?"])
    without = Topic("b", None, ["b:0"], "q", ["Q2?"])
    targets, items = rating_items([with_summary, without], {})
    assert targets == [("a", None)] and items == [(["Q1?"], "Summary.")]


def test_copy_of_the_shipped_folder_reads_the_same(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(SHIPPED, copy)
    assert read(copy)[0].topics == read(SHIPPED)[0].topics
