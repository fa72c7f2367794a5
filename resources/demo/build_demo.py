"""Render the authored demo corpus (source/) into the raw distribution formats (raw/, crux/).

    python resources/demo/build_demo.py            # (re)write raw/ and crux/
    python resources/demo/build_demo.py --check    # exit 1 if the committed files are stale

Outputs, all derived from source/clusters/*.json and source/distractors.jsonl:

* raw/multinews/demo.jsonl, demo.parquet: dataset-hub rows, articles joined by "|||||";
* raw/multinews/demo.src, demo.tgt: the original line-aligned files (story_separator_special_tag,
  NEWLINE_CHAR);
* raw/duc2004/docs/<cluster>/<DOCNO> (SGML, one <DOC> per file) and
  raw/duc2004/models/<CLUSTER>.M.100.T.A;
* raw/distractors.jsonl: the unrelated articles;
* crux/: the same clusters in the CRUX release format (topics, passages, judgements), with the
  hand-assigned answerability ratings of source/.

Like the real Multi-News data, the Multi-News forms carry one empty article (in the third
cluster), which the readers must skip; the DUC form has none, so both read to the same topics.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREFIX = "demo"
EMPTY_ARTICLE_CLUSTER = 2


def load_source():
    clusters = [json.loads(p.read_text(encoding="utf-8"))
                for p in sorted((HERE / "source" / "clusters").glob("*.json"))]
    distractors = [json.loads(line) for line in
                   (HERE / "source" / "distractors.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip()]
    return clusters, distractors


def article_text(article) -> str:
    return "\n\n".join(article["passages"])


def sgml_escape(text: str) -> str:
    return text.replace("&", "&AMP;")


def sgml(article) -> str:
    docno = article["docno"]
    src, date = docno[:3], docno[3:11]
    wrap = textwrap.TextWrapper(width=72, break_on_hyphens=False, break_long_words=False)
    indented = textwrap.TextWrapper(width=72, initial_indent="   ", break_on_hyphens=False,
                                     break_long_words=False)
    if src == "NYT":
        body = "\n".join("<P>\n" + "\n".join(wrap.wrap(sgml_escape(p))) + "\n</P>"
                         for p in article["passages"])
        head = "<DOCTYPE> NEWS </DOCTYPE>\n<TXTTYPE> NEWSWIRE </TXTTYPE>\n"
    else:
        body = "\n".join("\n".join(indented.wrap(sgml_escape(p)))
                         for p in article["passages"])
        head = f"<DOCTYPE> NEWS STORY </DOCTYPE>\n<DATE_TIME> {date[4:6]}/{date[6:]}/{date[:4]} " \
               "</DATE_TIME>\n"
    return (f"<DOC>\n<DOCNO> {docno} </DOCNO>\n{head}<BODY>\n"
            f"<HEADLINE> {sgml_escape(article['headline'])} </HEADLINE>\n<TEXT>\n{body}\n</TEXT>\n"
            f"</BODY>\n<TRAILER> {src}-{date} </TRAILER>\n</DOC>\n")


def split_paragraphs(text: str, min_words: int = 80) -> list[str]:
    """Group a distractor's paragraphs into passages of at least ``min_words`` words."""
    out, cur = [], []
    for para in [p.strip() for p in text.split("\n\n") if p.strip()]:
        cur.append(para)
        if sum(len(p.split()) for p in cur) >= min_words:
            out.append(" ".join(cur))
            cur = []
    if cur:
        if out:
            out[-1] += " " + " ".join(cur)
        else:
            out.append(" ".join(cur))
    return out


def build(out: Path) -> None:
    clusters, distractors = load_source()
    mn = out / "raw" / "multinews"
    mn.mkdir(parents=True)
    hub_rows, src_lines, tgt_lines = [], [], []
    for i, c in enumerate(clusters):
        texts = [article_text(a) for a in c["articles"]]
        if i == EMPTY_ARTICLE_CLUSTER:
            texts.insert(1, "")
        hub_rows.append({"document": " \n ||||| ".join(texts), "summary": "\u2013 " + c["summary"]})
        src_lines.append(" story_separator_special_tag ".join(
            t.replace("\n\n", " NEWLINE_CHAR NEWLINE_CHAR ") for t in texts))
        tgt_lines.append("\u2013 " + c["summary"])
    with open(mn / "demo.jsonl", "w", encoding="utf-8") as f:
        for row in hub_rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (mn / "demo.src").write_text("\n".join(src_lines) + "\n", encoding="utf-8")
    (mn / "demo.tgt").write_text("\n".join(tgt_lines) + "\n", encoding="utf-8")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(hub_rows), mn / "demo.parquet")

    duc = out / "raw" / "duc2004"
    for c in clusters:
        cdir = duc / "docs" / c["cluster"]
        cdir.mkdir(parents=True)
        for a in c["articles"]:
            (cdir / a["docno"]).write_text(sgml(a), encoding="utf-8")
        models = duc / "models"
        models.mkdir(exist_ok=True)
        key = c["cluster"][:-1].upper()
        (models / f"{key}.M.100.T.A").write_text(
            "\n".join(textwrap.wrap(c["summary"], 72, break_on_hyphens=False)) + "\n",
            encoding="utf-8")
    with open(out / "raw" / "distractors.jsonl", "w", encoding="utf-8") as f:
        for d in distractors:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")

    crux = out / "crux"
    crux.mkdir()
    topics, passages, judgements = [], [], []
    for i, c in enumerate(clusters):
        tid = f"{PREFIX}-{i}"
        n = 0
        for j, a in enumerate(c["articles"]):
            for k, text in enumerate(a["passages"]):
                pid = f"{tid}:{j}#{n}"
                passages.append({"id": pid, "contents": text})
                judgements.append({"example_id": tid, "pid": pid,
                                   "rating": c["ratings"][f"{a['docno']}#{k}"]})
                n += 1
        topics.append({"qid": tid, "topic": c["query"], "questions": c["questions"],
                       "docids": [f"{tid}:{j}" for j in range(len(c["articles"]))],
                       "report": c["summary"]})
    n = 0
    for j, d in enumerate(distractors):
        for text in split_paragraphs(d["text"]):
            passages.append({"id": f"{PREFIX}-distractors:{j}#{n}", "contents": text})
            n += 1
    for name, rows in (("topics", topics), ("passages", passages), ("judgements", judgements)):
        with open(crux / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build(tmp)
        targets = ("raw", "crux")
        if args.check:
            # parquet files embed writer metadata; compare their rows instead of bytes
            stale = []
            for t in targets:
                for f in (tmp / t).rglob("*"):
                    if f.is_file() and f.suffix != ".parquet":
                        g = HERE / f.relative_to(tmp)
                        if not g.is_file() or g.read_bytes() != f.read_bytes():
                            stale.append(str(f.relative_to(tmp)))
            if stale:
                print("stale demo files (run build_demo.py):", *stale[:10], sep="\n  ")
                return 1
            return 0
        for t in targets:
            shutil.rmtree(HERE / t, ignore_errors=True)
            shutil.copytree(tmp / t, HERE / t)
    print(f"wrote {HERE / 'raw'} and {HERE / 'crux'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
