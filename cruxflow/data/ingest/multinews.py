"""Multi-News (Fabbri et al., 2019) in its two distributed forms.

* Dataset-hub rows (JSONL or parquet): ``document`` holds the articles joined by ``|||||``,
  ``summary`` the human summary.
* The original line-aligned ``<split>.src`` / ``<split>.tgt`` files: line i of the ``.src`` file
  holds the articles of cluster i separated by ``story_separator_special_tag``, with newlines
  written as ``NEWLINE_CHAR``; line i of the ``.tgt`` file holds its summary.

Hub rows of some conversions still carry the literal ``NEWLINE_CHAR`` too: both readers turn it
into a line break, in articles and summaries alike, so that the two forms of one corpus give
byte-identical datasets.

The real data contains empty articles (and clusters left with fewer than two articles): they are
skipped and counted in the report, never silently. Whether an empty article counts in the
two-document test and in document numbering, as in the CRUX authors' code, is
``IngestOptions.count_empty_documents``.
"""

from __future__ import annotations

import re
from pathlib import Path

from cruxflow._extras import extra
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import (
    IngestOptions,
    IngestReport,
    RawArticle,
    RawCluster,
    assemble,
    clean_paragraphs,
)
from cruxflow.data.io import iter_jsonl, read_text, wrong_kind
from cruxflow.data.model import Reference

HUB_SEPARATOR = "|||||"
SRC_SEPARATOR = "story_separator_special_tag"
SRC_NEWLINE = "NEWLINE_CHAR"


def _summary(text: str) -> str:
    # Multi-News summaries start with an en dash ("– "), an artefact of the source site.
    return re.sub(r"^\s*[\u2013-]\s+", "", " ".join(text.split()))


def _lines(text: str) -> str:
    return text.replace(SRC_NEWLINE, "\n")


def _cluster(row_index: int, articles: list[str], summary: str, where: dict) -> RawCluster:
    """One cluster from its raw articles (already split) and summary, in either form."""
    summary = _lines(summary)
    if not summary.strip():
        raise DataError("summary is empty", field="summary", **where)
    raw = [RawArticle(clean_paragraphs(_lines(a).split("\n")),
                      source_id=f"row {row_index} article {j}")
           for j, a in enumerate(articles)]
    # A row whose articles are all empty (the real data has some) reaches assemble(), which
    # skips it through min_docs and lists it in the report.
    ref = Reference(f"multinews-{row_index}", _summary(summary))
    return RawCluster(str(row_index), raw, [ref])


def _hub_rows(path: Path, encoding: str):
    if path.suffix == ".parquet":
        with extra(__name__, "parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise DataError(f"not a readable parquet file ({exc})", path=path) from None
        for col in ("document", "summary"):
            if col not in table.column_names:
                raise DataError(f"missing column (has {table.column_names})", path=path,
                                field=col)
        for i, row in enumerate(table.select(["document", "summary"]).to_pylist()):
            yield i, f"row {i}", row
    else:
        for i, (lineno, row) in enumerate(iter_jsonl(path, encoding)):
            yield i, f"line {lineno}", row


def read_multinews(path, options: IngestOptions) -> tuple:
    """Read Multi-News as distributed on the dataset hub (``.jsonl`` or ``.parquet``)."""
    path = Path(path)
    if not path.is_file():
        raise wrong_kind(path, "a Multi-News .jsonl or .parquet file")
    report = IngestReport("multinews", str(path))
    clusters = []
    for i, record, row in _hub_rows(path, options.encoding):
        where = {"path": path, "record": record}
        for col in ("document", "summary"):
            if not isinstance(row.get(col), str):
                raise DataError("missing or not a string", field=col, **where)
        clusters.append(_cluster(i, row["document"].split(HUB_SEPARATOR), row["summary"], where))
    return assemble(clusters, options, report), report


def _tgt_for(src: Path) -> Path:
    """The .tgt file line-aligned with ``src`` (``test.src`` or ``test.src.cleaned``)."""
    head, sep, tail = src.name.rpartition(".src")
    if not sep:
        raise DataError("name has no '.src' part, so its .tgt file cannot be found", path=src)
    candidates = list(dict.fromkeys([src.with_name(head + ".tgt" + tail),
                                     src.with_name(head + ".tgt")]))
    for c in candidates:
        if c.is_file():
            return c
    raise DataError("no matching .tgt file next to it (looked for "
                    + ", ".join(c.name for c in candidates) + ")", path=src)


def read_multinews_src(path, options: IngestOptions) -> tuple:
    """Read the original ``.src``/``.tgt`` pair; ``path`` is the ``.src`` file."""
    src = Path(path)
    if not src.is_file():
        raise wrong_kind(src, "a Multi-News .src file")
    tgt = _tgt_for(src)
    src_lines = read_text(src, options.encoding).split("\n")
    tgt_lines = read_text(tgt, options.encoding).split("\n")
    for lines in (src_lines, tgt_lines):  # a final newline is not an extra record
        if lines and lines[-1] == "":
            lines.pop()
    if len(src_lines) != len(tgt_lines):
        raise DataError(f"{len(src_lines)} lines but {tgt.name} has {len(tgt_lines)}; the two "
                        "files must be line-aligned", path=src)
    report = IngestReport("multinews-src", str(src))
    clusters = []
    for i, (s, t) in enumerate(zip(src_lines, tgt_lines, strict=True)):
        where = {"path": tgt, "record": f"line {i + 1}"}
        clusters.append(_cluster(i, s.split(SRC_SEPARATOR), t, where))
    return assemble(clusters, options, report), report
