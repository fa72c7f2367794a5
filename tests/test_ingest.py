"""Tests for the corpus readers (cruxflow.data.ingest) and `cruxflow ingest`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import IngestOptions, ingest, ingest_to, read_distractors
from cruxflow.data.ingest.common import IngestReport, RawArticle, RawCluster, assemble
from cruxflow.data.model import Dataset, Reference

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "demo"


# --- fixture helpers -----------------------------------------------------------------------------

def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def opts(**kw) -> IngestOptions:
    return IngestOptions(**{"prefix": "t", **kw})


# Multi-News hub rows: row 1 keeps a single article (skipped), rows 1 and 2 carry empty articles.
HUB_ROWS = [
    {"document": "Storm hits coast.\nPower is out.\n ||||| Second story on the storm.",
     "summary": "– A storm  hit the coast on Monday."},
    {"document": "Only one real article. |||||    ", "summary": "– Lonely summary."},
    {"document": "First report. |||||  ||||| Another report.\nWith a second paragraph.",
     "summary": "– The third   summary."},
]


def check_hub(ds, report):
    assert list(ds.topics) == ["t-0", "t-1"]
    assert ds.topics["t-0"].doc_ids == ["t-0:0", "t-0:1"]
    assert ds.topics["t-1"].doc_ids == ["t-1:0", "t-1:1"]
    assert ds.topics["t-0"].reference == "A storm hit the coast on Monday."
    assert ds.topics["t-1"].reference == "The third summary."
    assert ds.topics["t-1"].source_id == "2"
    assert ds.documents["t-0:0"].text == "Storm hits coast.\n\nPower is out."
    assert ds.documents["t-0:1"].text == "Second story on the storm."
    assert ds.documents["t-1:1"].text == "Another report.\n\nWith a second paragraph."
    assert ds.documents["t-1:1"].source_id == "row 2 article 2"
    assert report.clusters_read == 3
    assert report.empty_articles_skipped == 2
    assert report.clusters_skipped == [
        {"source_id": "1", "reason": "1 non-empty documents (< min_docs=2)"}]


def apw(docno: str, headline: str, body: str) -> str:
    return (f"<DOC>\n<DOCNO> {docno} </DOCNO>\n<DOCTYPE> NEWS STORY </DOCTYPE>\n"
            f"<DATE_TIME> 10/16/1998 08:26:00 </DATE_TIME>\n<BODY>\n<SLUG> BC-Cambodia </SLUG>\n"
            f"<HEADLINE>\n{headline}\n</HEADLINE>\n<TEXT>\n{body}\n</TEXT>\n</BODY>\n"
            f"<TRAILER>\nAP-NY-10-16-98 0826EDT\n</TRAILER>\n</DOC>\n")


def nyt(docno: str, headline: str, paragraphs: list[str]) -> str:
    body = "\n".join(f"<P>\n{p}\n</P>" for p in paragraphs)
    return (f"<DOC>\n<DOCNO> {docno} </DOCNO>\n<DOCTYPE> NEWS </DOCTYPE>\n"
            f"<TXTTYPE> NEWSWIRE </TXTTYPE>\n<BODY>\n<HEADLINE> {headline} </HEADLINE>\n"
            f"<TEXT>\n{body}\n</TEXT>\n</BODY>\n</DOC>\n")


APW_0240 = apw("APW19981016.0240", "Hun Sen &AMP; Ranariddh agree to talks", (
    "   PHNOM PENH, Cambodia (AP) -- Cambodia's two main political rivals\n"
    "agreed Friday to meet for talks on forming a coalition government,\n"
    "officials said.\n"
    "   The announcement came after King Norodom Sihanouk &AMP; his advisers\n"
    "urged the parties to end a three-month deadlock."))
NYT_0123 = nyt("NYT19981017.0123", "Cambodian Leaders Meet in Siem Reap", [
    "SIEM REAP, Cambodia -- Prime Minister Hun Sen and his chief rival\nmet on Saturday.",
    "Diplomats from the U.S. &AMP; Japan called it a first step."])
APW_0012 = apw("APW19981102.0012", "Typhoon nears Philippines",
               "   MANILA, Philippines (AP) -- A typhoon approached the northern\nPhilippines.")
XIE_0055 = apw("XIE19981103.0055", "Philippines evacuates coastal towns",
               "   MANILA, November 3 (Xinhua) -- Thousands were evacuated on Tuesday.")
MODELS = {
    "D30001.M.100.T.A": "Hun Sen and Ranariddh agreed to talks.\nThey met in Siem Reap.\n",
    "D30001.M.100.T.B": "Cambodia's rivals met to end a deadlock.\n",
    "D30001.M.100.T.C": "The King urged the parties to form a government.\n",
    "D30001.M.100.T.D": "Talks began after three months of deadlock.\n",
    "D30001.M.010.T.A": "Cambodia talks.\n",
    "D30002.M.100.T.A": "A typhoon forced evacuations in the Philippines.\n",
}


def make_duc(root: Path) -> Path:
    """A two-cluster DUC 2004 tree: d30001t (APW + NYT, four models), d30002t (APW + XIE)."""
    docs = {"d30001t": {"APW19981016.0240": APW_0240, "NYT19981017.0123": NYT_0123},
            "d30002t": {"APW19981102.0012": APW_0012, "XIE19981103.0055": XIE_0055}}
    for cluster, files in docs.items():
        (root / "docs" / cluster).mkdir(parents=True)
        for name, text in files.items():
            (root / "docs" / cluster / name).write_text(text, encoding="utf-8")
    (root / "models").mkdir()
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text, encoding="utf-8")
    return root


CRUX_TOPICS = [
    {"qid": "crux-0", "topic": "Report on the storm.", "questions": ["Where?", "When?"],
     "report": "A storm hit the coast."},
    {"id": "crux-1", "request": "Report on the strike.", "subtopics": ["Who?", "Why?", "How long?"],
     "docids": ["crux-1:0"], "report": "Dock workers struck for a week."},
]
CRUX_PASSAGES = [
    {"id": "crux-0:0#0", "contents": "The storm made landfall at dawn."},
    {"id": "crux-0:0#1", "contents": "Power was cut to 40,000 homes."},
    {"id": "crux-0:2#2", "contents": "Schools closed on Monday."},
    {"id": "crux-1:0#0", "contents": "Dock workers walked out."},
    {"id": "other-7:3#0", "contents": "A passage of a topic from another split."},
]
CRUX_JUDGEMENTS = [
    {"example_id": "crux-0", "pid": "crux-0:0#0", "rating": [5, 0]},
    {"example_id": "crux-1", "pid": "crux-1:0#0", "rating": [1, 2.0, 3]},
]


def make_crux(root: Path, topics=CRUX_TOPICS, passages=CRUX_PASSAGES,
              judgements=CRUX_JUDGEMENTS) -> Path:
    write_jsonl(root / "topics.jsonl", topics)
    write_jsonl(root / "passages.jsonl", passages)
    write_jsonl(root / "judgements.jsonl", judgements)
    return root


def data_error(call, *args, **kw) -> DataError:
    with pytest.raises(DataError) as info:
        call(*args, **kw)
    return info.value


# --- 1. Multi-News hub rows ----------------------------------------------------------------------

def test_multinews_jsonl(tmp_path):
    ds, report = ingest("multinews", write_jsonl(tmp_path / "test.jsonl", HUB_ROWS), opts())
    check_hub(ds, report)
    assert report.format == "multinews"


def test_multinews_parquet_reads_like_jsonl(tmp_path):
    pq.write_table(pa.Table.from_pylist(HUB_ROWS), tmp_path / "test.parquet")
    ds, report = ingest("multinews", tmp_path / "test.parquet", opts())
    check_hub(ds, report)


def test_multinews_id_scheme_source_and_min_docs(tmp_path):
    path = write_jsonl(tmp_path / "test.jsonl", HUB_ROWS)
    ds, _ = ingest("multinews", path, opts(id_scheme="source"))
    assert list(ds.topics) == ["t-0", "t-2"]
    assert ds.topics["t-2"].doc_ids == ["t-2:0", "t-2:1"]
    ds, report = ingest("multinews", path, opts(min_docs=1))
    assert list(ds.topics) == ["t-0", "t-1", "t-2"]
    assert ds.documents["t-1:0"].text == "Only one real article."
    assert report.clusters_skipped == [] and report.empty_articles_skipped == 2


def test_multinews_parquet_missing_column(tmp_path):
    pq.write_table(pa.Table.from_pylist([{"document": "a ||||| b"}]), tmp_path / "x.parquet")
    err = data_error(ingest, "multinews", tmp_path / "x.parquet", opts())
    assert err.path == str(tmp_path / "x.parquet") and err.field == "summary"


def test_multinews_jsonl_line_separator_inside_a_string(tmp_path):
    # Regression (cruxflow/data/io.py, iter_jsonl once used `text.splitlines()`): U+2028 is legal
    # unescaped inside a JSON string (json.dumps(ensure_ascii=False) writes it raw, as write_jsonl
    # does), but str.splitlines() also splits on it (and on \x85, \x1c-\x1e, \x0b, \x0c), which
    # cut a valid row in two and reported it as "invalid JSON: Unterminated string".
    row = {"document": "Para one\u2028still one. ||||| Second article.", "summary": "– Sum."}
    path = write_jsonl(tmp_path / "test.jsonl", [row])
    try:
        ds, _ = ingest("multinews", path, opts())
    except DataError as exc:
        pytest.fail(f"valid JSONL rejected: {exc}")
    assert ds.documents["t-0:1"].text == "Second article."


# --- 2. Multi-News .src / .tgt -------------------------------------------------------------------

SRC = [
    "Storm hits coast. NEWLINE_CHAR NEWLINE_CHAR Power is out. story_separator_special_tag "
    "Second story.",
    "Strike begins. story_separator_special_tag   story_separator_special_tag Port closed. "
    "NEWLINE_CHAR Ships wait.",
]
TGT = ["– A storm hit the coast.", "– Dock workers went on strike."]


def test_multinews_src_tgt(tmp_path):
    (tmp_path / "test.src").write_text("\n".join(SRC) + "\n", encoding="utf-8")
    (tmp_path / "test.tgt").write_text("\n".join(TGT) + "\n", encoding="utf-8")
    ds, report = ingest("multinews-src", tmp_path / "test.src", opts(prefix="mn"))
    assert list(ds.topics) == ["mn-0", "mn-1"]
    assert ds.documents["mn-0:0"].text == "Storm hits coast.\n\nPower is out."
    assert ds.documents["mn-0:1"].text == "Second story."
    assert ds.documents["mn-1:1"].text == "Port closed.\n\nShips wait."
    assert ds.topics["mn-1"].doc_ids == ["mn-1:0", "mn-1:1"]
    assert ds.topics["mn-1"].reference == "Dock workers went on strike."
    assert report.empty_articles_skipped == 1 and report.clusters_skipped == []


def test_multinews_src_line_count_mismatch(tmp_path):
    (tmp_path / "test.src").write_text("\n".join(SRC) + "\n", encoding="utf-8")
    (tmp_path / "test.tgt").write_text(TGT[0] + "\n", encoding="utf-8")
    err = data_error(ingest, "multinews-src", tmp_path / "test.src", opts())
    assert err.path == str(tmp_path / "test.src")
    assert "2 lines but test.tgt has 1" in str(err)


def test_multinews_src_without_tgt(tmp_path):
    (tmp_path / "test.src").write_text(SRC[0] + "\n", encoding="utf-8")
    err = data_error(ingest, "multinews-src", tmp_path / "test.src", opts())
    assert err.path == str(tmp_path / "test.src")
    assert "no matching .tgt file" in str(err) and "test.tgt" in str(err)


# --- 2b. The CRUX authors' topic set and numbering (docs/paper-parity.md, points 3 and 4) -------

PAPER = {"count_empty_documents": True, "chunk_documents": True}
FORMATS = ROOT / "tests" / "data" / "multinews_formats"


def test_authors_filter_counts_empty_pieces_and_numbers_after_it(tmp_path):
    # HUB_ROWS split on "|||||": row 0 has 2 pieces, row 1 has 2 (one empty), row 2 has 3 (one
    # empty). Counting empty pieces (the authors' ">= 2 documents" test) keeps row 1, so row 2
    # becomes topic 2; an empty piece keeps its document number without becoming a document.
    path = write_jsonl(tmp_path / "test.jsonl", HUB_ROWS)
    ds, report = ingest("multinews", path, opts(count_empty_documents=True))
    assert list(ds.topics) == ["t-0", "t-1", "t-2"]
    assert ds.topics["t-1"].source_id == "1" and ds.topics["t-1"].doc_ids == ["t-1:0"]
    assert ds.topics["t-2"].doc_ids == ["t-2:0", "t-2:2"]
    assert ds.documents["t-2:2"].text == "Another report.\n\nWith a second paragraph."
    assert report.clusters_skipped == [] and report.empty_articles_skipped == 2
    # Ours (the default) drops empty articles first: row 1 has 1 document and goes.
    ds, report = ingest("multinews", path, opts())
    assert ds.topics["t-1"].source_id == "2" and ds.topics["t-1"].doc_ids == ["t-1:0", "t-1:1"]
    # A single article and nothing else fails either test.
    one = write_jsonl(tmp_path / "one.jsonl", [{"document": "Lone article.", "summary": "S."}])
    _, report = ingest("multinews", one, opts(count_empty_documents=True))
    assert report.clusters_skipped == [
        {"source_id": "0", "reason": "1 documents, empty ones counted (< min_docs=2)"}]


def test_authors_cap_takes_the_first_topics_after_the_filter(tmp_path):
    # The authors kept the first 5,000 test clusters left by the filter (max_topics: 5000 in
    # presets/paper.yaml); here the first 2 of 3: rows 0 and 1 with the authors' filter, rows 0
    # and 2 with ours (row 1 is filtered out before the cap).
    path = write_jsonl(tmp_path / "test.jsonl", HUB_ROWS)
    ingest_to("multinews", path, tmp_path / "paper", opts(count_empty_documents=True),
              eta=None, max_topics=2)
    ingest_to("multinews", path, tmp_path / "ours", opts(), eta=None, max_topics=2)
    topics = {d: [json.loads(x) for x in (tmp_path / d / "topics.jsonl").read_text().split("\n")
                  if x] for d in ("paper", "ours")}
    assert [(t["topic_id"], t["source_id"]) for t in topics["paper"]] == [("t-0", "0"),
                                                                         ("t-1", "1")]
    assert [(t["topic_id"], t["source_id"]) for t in topics["ours"]] == [("t-0", "0"),
                                                                        ("t-1", "2")]


def test_chunked_documents_are_numbered_in_sequence():
    # 11 words over max 10: chunks of 4, 4, 3 take documents 0, 1, 2; the next article is 3.
    # At exactly max_document_words an article stays whole.
    words = " ".join(f"w{i}" for i in range(11))
    rows = [RawCluster("0", [RawArticle(words, source_id="a"), RawArticle("  "),
                             RawArticle(" ".join(words.split()[:10]), source_id="b")],
                       [Reference("r", "Summary.")])]
    o = opts(chunk_documents=True, max_document_words=10, chunk_words=4)
    ds = assemble(rows, o, IngestReport("x", "y"))
    assert ds.topics["t-0"].doc_ids == ["t-0:0", "t-0:1", "t-0:2", "t-0:3"]
    assert [ds.documents[d].text for d in ds.topics["t-0"].doc_ids] == [
        "w0 w1 w2 w3", "w4 w5 w6 w7", "w8 w9 w10", " ".join(words.split()[:10])]
    assert ds.documents["t-0:1"].source_id == "a chunk 1"
    assert ds.documents["t-0:3"].source_id == "b"
    # with count_empty_documents the empty article between them takes number 3
    ds = assemble(rows, opts(count_empty_documents=True, **{k: getattr(o, k) for k in (
        "chunk_documents", "max_document_words", "chunk_words")}), IngestReport("x", "y"))
    assert ds.topics["t-0"].doc_ids == ["t-0:0", "t-0:1", "t-0:2", "t-0:4"]


@pytest.mark.parametrize("paper", [False, True], ids=["ours", "authors"])
def test_hub_rows_and_src_tgt_give_byte_identical_datasets(tmp_path, paper):
    # The same four clusters in both distributed forms (tests/data/multinews_formats), with
    # paragraph breaks written NEWLINE_CHAR in both: the hub reader turns them into line breaks
    # as the .src reader does, so the two datasets are the same bytes.
    o = opts(prefix="mn", **(PAPER if paper else {}))
    for fmt, src in (("multinews", "test.jsonl"), ("multinews-src", "test.src")):
        ingest_to(fmt, FORMATS / src, tmp_path / fmt, o, eta=None)
    hub, orig = tmp_path / "multinews", tmp_path / "multinews-src"
    names = sorted(str(p.relative_to(hub)) for p in hub.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(orig)) for p in orig.rglob("*") if p.is_file())
    assert "documents.jsonl" in names and "topics.jsonl" in names
    for name in names:
        if name != "manifest.json":
            assert (hub / name).read_bytes() == (orig / name).read_bytes(), name
            assert b"NEWLINE_CHAR" not in (hub / name).read_bytes()
    manifests = [json.loads((d / "manifest.json").read_text()) for d in (hub, orig)]
    for m in manifests:   # the source and its format differ, and only they
        del m["ingest"]["format"], m["ingest"]["source"]
    assert manifests[0] == manifests[1]
    ds = Dataset.load(hub)
    assert ds.documents["mn-0:0"].text == (
        "Harbor ferry service resumed Tuesday after a two-day halt.\n\nThe operator blamed a "
        "faulty engine part.\n\nCommuters said the delays cost them hours.")
    assert ds.topics["mn-0"].reference == ("Ferries are running again after an engine fault. "
                                           "The council plans a review.")
    # Numbering by hand. Row 1: pieces 20 words, blank, 13 words. Row 2: one article and an
    # empty piece. Row 3: an article of 1,282 words (cut 512 + 512 + 258) and a short one.
    if paper:
        assert {t: v.doc_ids for t, v in ds.topics.items()} == {
            "mn-0": ["mn-0:0", "mn-0:1"], "mn-1": ["mn-1:0", "mn-1:2"], "mn-2": ["mn-2:0"],
            "mn-3": ["mn-3:0", "mn-3:1", "mn-3:2", "mn-3:3"]}
        assert [len(ds.documents[f"mn-3:{i}"].text.split()) for i in range(4)] == [
            512, 512, 258, 11]
    else:
        assert {t: v.doc_ids for t, v in ds.topics.items()} == {
            "mn-0": ["mn-0:0", "mn-0:1"], "mn-1": ["mn-1:0", "mn-1:1"],
            "mn-2": ["mn-2:0", "mn-2:1"]}
        assert len(ds.documents["mn-2:0"].text.split()) == 1282


# --- 3. DUC 2004 ---------------------------------------------------------------------------------

def test_duc2004_reads_clusters_and_models(tmp_path):
    ds, report = ingest("duc2004", make_duc(tmp_path / "duc"), opts(prefix="duc"))
    assert list(ds.topics) == ["duc-0", "duc-1"]
    t = ds.topics["duc-0"]
    assert t.source_id == "d30001t" and t.doc_ids == ["duc-0:0", "duc-0:1"]
    assert [r.id for r in t.references] == [f"D30001.M.100.T.{x}" for x in "ABCD"]
    assert t.references[0].text == "Hun Sen and Ranariddh agreed to talks. They met in Siem Reap."
    assert t.reference == "\n\n".join(r.text for r in t.references)
    assert t.reference.count("\n\n") == 3 and "Cambodia talks." not in t.reference
    a, n = ds.documents["duc-0:0"], ds.documents["duc-0:1"]
    assert (a.source_id, a.title) == ("APW19981016.0240", "Hun Sen & Ranariddh agree to talks")
    assert a.text == (
        "PHNOM PENH, Cambodia (AP) -- Cambodia's two main political rivals agreed Friday to "
        "meet for talks on forming a coalition government, officials said.\n\n"
        "The announcement came after King Norodom Sihanouk & his advisers urged the parties to "
        "end a three-month deadlock.")
    assert (n.source_id, n.title) == ("NYT19981017.0123", "Cambodian Leaders Meet in Siem Reap")
    assert n.text == (
        "SIEM REAP, Cambodia -- Prime Minister Hun Sen and his chief rival met on Saturday.\n\n"
        "Diplomats from the U.S. & Japan called it a first step.")
    assert ds.topics["duc-1"].reference == "A typhoon forced evacuations in the Philippines."
    assert ds.documents["duc-1:1"].source_id == "XIE19981103.0055"
    assert report.clusters_read == 2 and report.empty_articles_skipped == 0


def test_duc2004_reference_first(tmp_path):
    ds, _ = ingest("duc2004", make_duc(tmp_path / "duc"), opts(reference="first"))
    assert ds.topics["t-0"].reference == MODELS["D30001.M.100.T.A"].replace("\n", " ").strip()
    assert len(ds.topics["t-0"].references) == 4


# --- 4. malformed input --------------------------------------------------------------------------

@pytest.mark.parametrize("lines, record, field, reason", [
    ([json.dumps(HUB_ROWS[0]), "{'document': 'x'}"], "line 2", None, "invalid JSON"),
    ([json.dumps({"summary": "– S."})], "line 1", "document", "missing or not a string"),
    ([json.dumps(HUB_ROWS[0]), "", json.dumps({"document": "a ||||| b"})], "line 3", "summary",
     "missing or not a string"),
], ids=["not-json", "no-document", "no-summary"])
def test_multinews_bad_rows(tmp_path, lines, record, field, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = data_error(ingest, "multinews", path, opts())
    assert (err.path, err.record, err.field) == (str(path), record, field)
    assert str(err).startswith(f"{path}: {record}") and reason in str(err)
    if field:
        assert f"field {field!r}" in str(err)


@pytest.mark.parametrize("mangle, reason, field", [
    (lambda s: s.replace("<DOC>", "").replace("</DOC>", ""), "bad SGML: no <DOC> element", None),
    (lambda s: s.replace("</DOC>", ""), "bad SGML: <DOC> without </DOC>", None),
    (lambda s: re.sub(r"<DOCNO>.*?</DOCNO>", "", s), "bad SGML: no <DOCNO>", "DOCNO"),
    (lambda s: re.sub(r"<TEXT>.*?</TEXT>", "", s, flags=re.S), "bad SGML: no <TEXT>", "TEXT"),
    (lambda s: s.replace("APW19981016.0240", "APW19981016.0999"),
     "DOCNO 'APW19981016.0999' differs from the file name", "DOCNO"),
], ids=["no-DOC", "unclosed-DOC", "no-DOCNO", "no-TEXT", "DOCNO-not-file-name"])
def test_duc2004_bad_sgml(tmp_path, mangle, reason, field):
    root = make_duc(tmp_path / "duc")
    bad = root / "docs" / "d30001t" / "APW19981016.0240"
    bad.write_text(mangle(APW_0240), encoding="utf-8")
    err = data_error(ingest, "duc2004", root, opts())
    assert err.path == str(bad) and err.field == field
    assert str(err).startswith(str(bad)) and reason in str(err)


def test_duc2004_summary_without_documents(tmp_path):
    root = make_duc(tmp_path / "duc")
    (root / "models" / "D30003.M.100.T.B").write_text("An orphan summary.\n", encoding="utf-8")
    err = data_error(ingest, "duc2004", root, opts())
    assert err.path == str(root / "models" / "D30003.M.100.T.B")
    assert "summary without documents" in str(err) and "docs/d30003*/" in str(err)


def test_duc2004_cluster_without_summary(tmp_path):
    root = make_duc(tmp_path / "duc")
    (root / "models" / "D30002.M.100.T.A").unlink()
    err = data_error(ingest, "duc2004", root, opts())
    assert err.path == str(root / "docs" / "d30002t")
    assert "no reference summary D30002.M.100.T.<A-H>" in str(err)


def test_duc2004_bad_encoding_then_latin1(tmp_path):
    root = make_duc(tmp_path / "duc")
    bad = root / "docs" / "d30002t" / "XIE19981103.0055"
    data = XIE_0055.replace("Thousands", "Thousands in Cagayán").encode("latin-1")
    bad.write_bytes(data)
    err = data_error(ingest, "duc2004", root, opts())
    assert err.path == str(bad)
    offset = data.index("á".encode("latin-1"))
    assert f"not valid utf-8 at byte {offset}" in str(err)
    assert "--encoding" in str(err)
    ds, _ = ingest("duc2004", root, opts(encoding="latin-1"))
    assert ds.documents["t-1:1"].text == (
        "MANILA, November 3 (Xinhua) -- Thousands in Cagayán were evacuated on Tuesday.")


def test_distractors_duplicate_docno(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [
        {"docno": "XIE19981020.0011", "headline": "H", "text": "One.\n\nTwo."},
        {"docno": "XIE19981020.0011", "headline": "H", "text": "Again."}])
    err = data_error(read_distractors, path, "x")
    assert (err.path, err.record, err.field) == (str(path), "line 2", "docno")
    assert "duplicate docno 'XIE19981020.0011'" in str(err)


@pytest.mark.parametrize("files, name, record, field, reason", [
    ({"topics": CRUX_TOPICS + [CRUX_TOPICS[0]]},
     "topics.jsonl", "line 3", "qid", "duplicate topic 'crux-0'"),
    ({"topics": [{k: v for k, v in CRUX_TOPICS[0].items() if k != "report"}]},
     "topics.jsonl", "line 1", "report", "missing"),
    ({"passages": CRUX_PASSAGES + [CRUX_PASSAGES[1]]},
     "passages.jsonl", "line 6", "id", "duplicate passage id 'crux-0:0#1' (first at line 2)"),
    ({"judgements": [{"example_id": "crux-0", "pid": "crux-0:0#0", "rating": [5]}]},
     "judgements.jsonl", "line 1", "rating", "1 ratings but topic crux-0 has 2 questions"),
    ({"judgements": [CRUX_JUDGEMENTS[0],
                     {"example_id": "crux-0", "pid": "crux-0:0#1", "rating": [2, 7]}]},
     "judgements.jsonl", "line 2", "rating", "item 1 (7) is outside 0..5 or -1"),
    ({"judgements": [{"example_id": "crux-0", "pid": "crux-0:9#9", "rating": [1, 1]}]},
     "judgements.jsonl", "line 1", "pid", "unknown passage 'crux-0:9#9'"),
], ids=["duplicate-qid", "no-report", "duplicate-pid", "few-ratings", "rating-7", "unknown-pid"])
def test_crux_bad_records(tmp_path, files, name, record, field, reason):
    make_crux(tmp_path, **files)
    err = data_error(ingest, "crux", tmp_path, opts())
    assert (err.path, err.record, err.field) == (str(tmp_path / name), record, field)
    assert str(err) == f"{tmp_path / name}: {record}: field {field!r}: {reason}"


@pytest.mark.parametrize("topic, judgement", [
    # Regression (cruxflow/data/ingest/crux.py, read_crux): `docids` was not validated; a string
    # was turned into a list of its characters by `list(docids)` and accepted silently.
    ({**CRUX_TOPICS[0], "docids": "crux-0:0"}, CRUX_JUDGEMENTS[0]),
    # Regression (same function, `if tid not in topics`): a non-hashable example_id raised
    # TypeError ("unhashable type: 'list'") instead of a DataError naming the file and line.
    (CRUX_TOPICS[0], {**CRUX_JUDGEMENTS[0], "example_id": ["crux-0"]}),
], ids=["docids-string", "example_id-list"])
def test_crux_malformed_values_are_data_errors(tmp_path, topic, judgement):
    make_crux(tmp_path, topics=[topic], judgements=[judgement])
    try:
        ds, _ = ingest("crux", tmp_path, opts())
    except DataError:
        return
    except Exception as exc:
        pytest.fail(f"malformed CRUX record raised {type(exc).__name__}: {exc}, not DataError")
    pytest.fail(f"malformed CRUX record accepted: doc_ids={ds.topics['crux-0'].doc_ids}")


# --- 5. the CRUX release format ------------------------------------------------------------------

def test_crux_release_format(tmp_path):
    ds, report = ingest("crux", make_crux(tmp_path), opts())
    assert list(ds.topics) == ["crux-0", "crux-1"] and report.clusters_read == 2
    t0, t1 = ds.topics["crux-0"], ds.topics["crux-1"]
    assert (t0.query, t0.questions, t0.reference) == (
        "Report on the storm.", ["Where?", "When?"], "A storm hit the coast.")
    assert t0.doc_ids == ["crux-0:0", "crux-0:2"]           # derived from the passage ids
    assert (t1.query, t1.questions, t1.doc_ids) == (
        "Report on the strike.", ["Who?", "Why?", "How long?"], ["crux-1:0"])
    assert len(ds.passages) == 5
    other = ds.passages["other-7:3#0"]
    assert (other.topic_id, other.doc_id) == ("other-7", "other-7:3")
    assert ds.passages["crux-0:2#2"].doc_id == "crux-0:2"
    assert ds.ratings == {("crux-0", "crux-0:0#0"): [5, 0], ("crux-1", "crux-1:0#0"): [1, 2, 3]}
    assert ds.documents == {}


# --- 6. the embedded demo corpus -----------------------------------------------------------------

RAW_FORMS = [("multinews", "raw/multinews/demo.jsonl"),
             ("multinews", "raw/multinews/demo.parquet"),
             ("multinews-src", "raw/multinews/demo.src"), ("duc2004", "raw/duc2004")]


@pytest.fixture(scope="module")
def demo():
    return {path: ingest(fmt, DEMO / path, IngestOptions(prefix="demo"))
            for fmt, path in RAW_FORMS}


def test_demo_raw_forms_agree(demo):
    duc, duc_report = demo["raw/duc2004"]
    assert len(duc.topics) >= 8
    assert list(duc.topics) == [f"demo-{i}" for i in range(len(duc.topics))]
    assert all(3 <= len(t.doc_ids) <= 5 for t in duc.topics.values())
    assert duc_report.empty_articles_skipped == 0
    for _, path in RAW_FORMS[:3]:
        ds, report = demo[path]
        assert list(ds.topics) == list(duc.topics), path
        assert {k: t.reference for k, t in ds.topics.items()} == \
               {k: t.reference for k, t in duc.topics.items()}, path
        assert {k: t.doc_ids for k, t in ds.topics.items()} == \
               {k: t.doc_ids for k, t in duc.topics.items()}, path
        assert {k: d.text for k, d in ds.documents.items()} == \
               {k: d.text for k, d in duc.documents.items()}, path
        assert report.empty_articles_skipped == 1 and report.clusters_skipped == [], path


def test_demo_crux_form_matches(demo):
    duc, _ = demo["raw/duc2004"]
    crux, _ = ingest("crux", DEMO / "crux", IngestOptions(prefix="demo"))
    assert list(crux.topics) == list(duc.topics)
    by_doc: dict[str, list[str]] = {}
    for p in crux.passages.values():
        by_doc.setdefault(p.doc_id, []).append(p.contents)
    for doc in duc.documents.values():
        assert by_doc[doc.doc_id] == doc.text.split("\n\n"), doc.doc_id
    for t in crux.topics.values():
        assert t.doc_ids == duc.topics[t.topic_id].doc_ids
        assert len(t.questions) >= 1
    assert len(crux.ratings) == sum(len(by_doc[d]) for d in duc.documents)


def test_demo_build_check_is_clean():
    proc = subprocess.run([sys.executable, "resources/demo/build_demo.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- 7. the CLI ----------------------------------------------------------------------------------

def test_cli_ingest_duc2004(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["ingest", "--format", "duc2004", "--input", str(make_duc(tmp_path / "duc")),
               "--output", str(out), "--prefix", "demo"])
    stdout = capsys.readouterr().out
    assert rc == 0
    for key, value in (("topics", 2), ("documents", 4), ("summaries", 5), ("passages", 0)):
        assert re.search(rf"^  {key} +{value}$", stdout, re.M), stdout
    for name in ("topics.jsonl", "documents.jsonl", "passages/passages.jsonl",
                 "answerability.jsonl", "manifest.json"):
        assert (out / name).is_file(), name
    topics = [json.loads(line) for line in (out / "topics.jsonl").read_text().splitlines()]
    assert [t["topic_id"] for t in topics] == ["demo-0", "demo-1"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["documents"] == 4 and manifest["prefix"] == "demo"
    assert manifest["ingest"]["format"] == "duc2004"


def test_cli_ingest_with_distractors(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["ingest", "--format", "duc2004", "--input", str(DEMO / "raw" / "duc2004"),
               "--output", str(out), "--prefix", "demo",
               "--distractors", str(DEMO / "raw" / "distractors.jsonl")])
    assert rc == 0
    docs = [json.loads(x) for x in (out / "documents.jsonl").read_text().splitlines()]
    extra = [d for d in docs if d["topic_id"] is None]
    assert len(extra) == 50 and extra[0]["doc_id"] == "demo-distractors:0"
    assert extra[0]["source_id"] == "XIE20210714.0087"
    assert re.search(rf"^  documents +{len(docs)}$", capsys.readouterr().out, re.M)


def test_cli_malformed_input_writes_nothing(tmp_path, capsys):
    root = make_duc(tmp_path / "duc")
    (root / "docs" / "d30002t" / "APW19981102.0012").write_text(
        APW_0012.replace("</DOC>", ""), encoding="utf-8")
    out = tmp_path / "out"
    rc = main(["ingest", "--format", "duc2004", "--input", str(root), "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("cruxflow: error: ") and "APW19981102.0012" in err
    assert "<DOC> without </DOC>" in err
    assert not (out / "topics.jsonl").exists()
    assert not out.exists() or not any(out.rglob("*"))


def test_cli_distractors_with_crux_is_an_error(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["ingest", "--format", "crux", "--input", str(make_crux(tmp_path / "crux")),
               "--output", str(out), "--distractors", str(DEMO / "raw" / "distractors.jsonl")])
    assert rc == 2
    assert "--distractors does not apply to the crux format" in capsys.readouterr().err
    assert not (out / "topics.jsonl").exists()


def test_cli_crux_bad_run_file_writes_nothing(tmp_path, capsys):
    # Regression (ingest_to): the run files of a CRUX directory's runs/ were
    # validated only after dataset.save() and write_judgments() had written the output, so a
    # malformed run exited 2 but left a complete-looking dataset directory behind.
    src = tmp_path / "crux"
    shutil.copytree(DEMO / "crux", src)
    (src / "runs").mkdir()
    (src / "runs" / "bm25.run").write_text("demo-0 Q0 demo-0:0#0 1\n", encoding="utf-8")
    out = tmp_path / "out"
    rc = main(["ingest", "--format", "crux", "--input", str(src), "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "bm25.run" in err and "expected 6 columns" in err
    assert not (out / "topics.jsonl").exists(), \
        "a malformed runs/ file was reported only after topics.jsonl etc. were written"


def test_multinews_src_missing_tgt_message_lists_each_candidate_once(tmp_path):
    src = tmp_path / "demo.src"
    src.write_text("a story_separator_special_tag b\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"looked for demo\.tgt\)$"):
        ingest("multinews-src", src, IngestOptions())
    odd = tmp_path / "articles.txt"
    odd.write_text("a\n", encoding="utf-8")
    with pytest.raises(DataError, match="no '.src' part"):
        ingest("multinews-src", odd, IngestOptions())


# --- issue 21: hidden files, --allow-empty, runs and --max-topics --------------------------------

def test_duc2004_skips_hidden_files_a_copied_folder_carries(tmp_path):
    clean = tmp_path / "clean"
    shutil.copytree(DEMO / "raw" / "duc2004", clean)
    messy = tmp_path / "messy"
    shutil.copytree(clean, messy)
    (messy / "docs" / "d41001t" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (messy / "docs" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (messy / "docs" / ".hidden-cluster").mkdir()
    (messy / "models" / ".D41001.M.100.T.A.swp").write_text("editor swap file")
    want, _ = ingest("duc2004", clean, opts())
    got, report = ingest("duc2004", messy, opts())
    assert got.topics == want.topics and got.documents == want.documents
    assert len(got.topics["t-0"].doc_ids) == len(list((clean / "docs" / "d41001t").iterdir()))
    assert report.clusters_read == 10


def test_allow_empty_writes_an_empty_dataset(tmp_path, capsys):
    src = tmp_path / "empty.jsonl"
    src.write_text("")
    out = tmp_path / "out"
    assert main(["ingest", "--format", "multinews", "--input", str(src), "--output", str(out),
                 "--allow-empty", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["topics"] == 0 and (out / "topics.jsonl").read_text() == ""


def test_shipped_runs_lose_the_lines_of_topics_max_topics_drops(tmp_path, capsys):
    src = tmp_path / "crux"
    shutil.copytree(DEMO / "crux", src)
    # 3 topics in the run, 2 kept: demo-2's lines go, the others stay byte for byte
    run = ("demo-0 Q0 demo-0:0#0 1 2.5 bm25\n\n"
           "demo-2 Q0 demo-2:0#0 1 9 bm25\n"
           "demo-1 Q0 demo-1:0#0 1 1.25 bm25\n")
    (src / "runs").mkdir()
    (src / "runs" / "bm25.run").write_text(run)
    (src / "runs" / "empty.run").write_text("")
    out = tmp_path / "out"
    argv = ["ingest", "--format", "crux", "--input", str(src), "--output", str(out),
            "--max-topics", "2"]
    assert main(argv) == 2   # the empty run, without --allow-empty
    assert "empty.run: empty run file" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--allow-empty"]) == 0
    assert (out / "runs" / "bm25.run").read_text() == (
        "demo-0 Q0 demo-0:0#0 1 2.5 bm25\n\ndemo-1 Q0 demo-1:0#0 1 1.25 bm25\n")
    assert (out / "runs" / "empty.run").read_text() == ""
    assert [json.loads(x)["topic_id"] for x in
            (out / "topics.jsonl").read_text().splitlines()] == ["demo-0", "demo-1"]


# --- DUC 2004 numbered as a CRUX release numbers its clusters (--number-like) ----------------

DEMO_DUC = DEMO / "raw" / "duc2004"


def _release_passages(ds, numbers: dict[str, int], prefix: str) -> list[dict]:
    """Passages as a release writes them for ``ds``'s clusters under ``numbers``: ids
    <prefix>-<i>:<doc>#<n>, texts rewritten (each document's words reversed, half of them
    kept) so that the match is on words, not on equal text."""
    rows = []
    for t in ds.topics.values():
        i = numbers[t.source_id]
        for d, doc_id in enumerate(t.doc_ids):
            kept = ds.documents[doc_id].text.split()[::-1][::2]
            rows.append({"id": f"{prefix}-{i}:{d}#{len(rows)}", "contents": " ".join(kept)})
    return rows


def test_duc2004_numbered_like_the_release(tmp_path):
    plain, _ = ingest("duc2004", DEMO_DUC, opts(prefix="duc04-testb", id_scheme="source",
                                                 chunk_documents=True,
                                                 count_empty_documents=True))
    names = [t.source_id for t in plain.topics.values()]
    assert len(names) == 10
    numbers = {name: (7 * k + 3) % 10 for k, name in enumerate(names)}   # a permutation
    assert sorted(numbers.values()) == list(range(10))
    release = tmp_path / "testb_passages.jsonl"
    release.write_text("".join(json.dumps(r) + "\n"
                               for r in _release_passages(plain, numbers, "duc04-testb")))
    ds, report = ingest("duc2004", DEMO_DUC, opts(
        prefix="duc04-testb", chunk_documents=True, count_empty_documents=True,
        number_like=str(release)))
    got = {t.source_id: t.topic_id for t in ds.topics.values()}
    assert got == {name: f"duc04-testb-{i}" for name, i in numbers.items()}
    assert list(ds.topics) == [f"duc04-testb-{i}" for i in range(10)]
    # the cluster's documents follow its topic id, NIST's name stays the source id
    t = ds.topics["duc04-testb-3"]
    assert t.source_id == names[0] and t.doc_ids[0] == "duc04-testb-3:0"
    assert report.counts["numbered_like"]["clusters"][names[0]]["number"] == 3
    assert any("10 clusters numbered as the release" in n for n in report.notes)


def test_duc2004_numbered_like_refuses_what_does_not_match(tmp_path):
    plain, _ = ingest("duc2004", DEMO_DUC, opts(prefix="x", id_scheme="source",
                                                 chunk_documents=True,
                                                 count_empty_documents=True))
    names = [t.source_id for t in plain.topics.values()]
    rows = _release_passages(plain, {n: k for k, n in enumerate(names)}, "duc04-testb")
    release = tmp_path / "p.jsonl"
    # one topic's last document dropped: its cluster has a document more than the release's
    last = max(int(r["id"].split(":")[1].split("#")[0]) for r in rows
               if r["id"].startswith("duc04-testb-0:"))
    release.write_text("".join(json.dumps(r) + "\n" for r in rows
                               if not r["id"].startswith(f"duc04-testb-0:{last}#")))
    with pytest.raises(DataError, match="match no release topic with as many documents"):
        ingest("duc2004", DEMO_DUC, opts(prefix="duc04-testb", chunk_documents=True,
                                         count_empty_documents=True, number_like=str(release)))
    # every topic's text the same: two clusters cannot be told apart
    same = [dict(r, contents="the same words for every topic here") for r in rows]
    release.write_text("".join(json.dumps(r) + "\n" for r in same))
    with pytest.raises(DataError, match="match two release topics almost equally"):
        ingest("duc2004", DEMO_DUC, opts(prefix="duc04-testb", chunk_documents=True,
                                         count_empty_documents=True, number_like=str(release)))
