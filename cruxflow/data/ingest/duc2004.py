"""DUC 2004 tasks 1-2 as NIST distributes them.

Layout: ``docs/<cluster>/<DOCNO>`` files holding one SGML ``<DOC>`` each (cluster ``d30001t``,
DOCNO ``APW19981016.0240``) and reference summaries ``models/<CLUSTER>.M.100.T.<A-H>`` (cluster
``D30001``: the directory name upper-cased without its trailing selector letter).

The SGML is not XML (bare ``&``, unclosed elements), so it is read with tolerant patterns; what
must be there (``<DOC>``, ``<DOCNO>``, ``<TEXT>``) is checked and reported with the file name.
Paragraphs are ``<P>`` elements (NYT) or indented lines (APW, XIE); wrapped lines are joined.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import (
    IngestOptions,
    IngestReport,
    RawArticle,
    RawCluster,
    assemble,
    clean_paragraphs,
)
from cruxflow.data.ingest.formats import RELEASE_PREFIX
from cruxflow.data.io import existing, read_text, wrong_kind
from cruxflow.data.model import Reference

_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
_HEADLINE = re.compile(r"<HEADLINE>(.*?)</HEADLINE>", re.S | re.I)
_TEXT = re.compile(r"<TEXT>(.*?)</TEXT>", re.S | re.I)
_P = re.compile(r"<P>(.*?)(?:</P>|(?=<P>)|$)", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_MODEL = re.compile(r"^(?P<cluster>D\d+)\.M\.(?P<length>\d+)\.T\.(?P<annotator>[A-H])$")
_CLUSTER_DIR = re.compile(r"^(?P<key>d\d+)[a-z]?$", re.I)


def _unescape(text: str) -> str:
    # DUC uses SGML entities such as &AMP; and &UR; (formatting codes): decode the standard
    # ones, drop the codes.
    text = re.sub(r"&(AMP|amp);", "&", text)
    text = re.sub(r"&[A-Z]{2};", " ", text)
    return html.unescape(text)


def _paragraphs(body: str) -> list[str]:
    if re.search(r"<P>", body, re.I):
        return [_TAG.sub(" ", p) for p in _P.findall(body)]
    # Indented lines start paragraphs; blank lines end them; other lines are wrapped text.
    paras, cur = [], []
    for line in _TAG.sub(" ", body).split("\n"):
        if not line.strip():
            if cur:
                paras.append(" ".join(cur))
                cur = []
            continue
        if line[:1] in (" ", "\t") and cur:
            paras.append(" ".join(cur))
            cur = []
        cur.append(line.strip())
    if cur:
        paras.append(" ".join(cur))
    return paras


def parse_sgml_doc(path: Path, encoding: str = "utf-8") -> tuple[str, str | None, str]:
    """Return ``(docno, headline, text)`` of the single ``<DOC>`` in ``path``."""
    raw = read_text(path, encoding)
    docs = _DOC.findall(raw)
    if not docs:
        what = "<DOC> without </DOC>" if re.search(r"<DOC>", raw, re.I) else "no <DOC> element"
        raise DataError(f"bad SGML: {what}", path=path)
    if len(docs) > 1:
        raise DataError(f"bad SGML: {len(docs)} <DOC> elements, expected one per file",
                        path=path)
    doc = docs[0]
    m = _DOCNO.search(doc)
    if not m or not m.group(1):
        raise DataError("bad SGML: no <DOCNO>", path=path, field="DOCNO")
    docno = m.group(1)
    where = {"path": path, "record": f"DOCNO {docno}"}
    if docno != path.name:
        raise DataError(f"DOCNO {docno!r} differs from the file name", field="DOCNO", **where)
    t = _TEXT.search(doc)
    if not t:
        what = "<TEXT> without </TEXT>" if re.search(r"<TEXT>", doc, re.I) else "no <TEXT>"
        raise DataError(f"bad SGML: {what}", field="TEXT", **where)
    h = _HEADLINE.search(doc)
    headline = " ".join(_unescape(_TAG.sub(" ", h.group(1))).split()) if h else None
    text = clean_paragraphs(_unescape(p) for p in _paragraphs(t.group(1)))
    return docno, headline, text


def _find(root: Path, name: str) -> Path:
    if not root.is_dir():
        raise wrong_kind(root, "the DUC 2004 folder (docs/ and models/)")
    p = root / name
    if not p.is_dir():
        raise DataError(f"no {name}/ directory (expected the NIST layout docs/ and models/)",
                        path=root)
    return p


def _visible(directory: Path, hidden: list[Path] | None = None):
    """The entries of ``directory`` but hidden ones (``.DS_Store``, an editor's ``.*.swp``):
    copied folders carry them, and they are never NIST's documents; those skipped are added to
    ``hidden`` so the summary can say so."""
    entries = sorted(directory.iterdir())
    if hidden is not None:
        hidden += [p for p in entries if p.name.startswith(".")]
    return [p for p in entries if not p.name.startswith(".")]


def read_duc2004(path, options: IngestOptions) -> tuple:
    root = Path(path)
    docs_dir, models_dir = _find(root, "docs"), _find(root, "models")
    report = IngestReport("duc2004", str(root))

    models: dict[str, list[tuple[str, Path]]] = {}
    for f in sorted(models_dir.iterdir()):
        m = _MODEL.match(f.name)
        if not m:
            continue
        if int(m["length"]) == options.summary_length:
            models.setdefault(m["cluster"], []).append((m["annotator"], f))

    clusters, keys_with_docs, hidden = [], set(), []
    for cdir in sorted(p for p in _visible(docs_dir, hidden) if p.is_dir()):
        m = _CLUSTER_DIR.match(cdir.name)
        if not m:
            raise DataError("cluster directory name is not like d30001t", path=cdir)
        key = m["key"].upper()
        keys_with_docs.add(key)
        articles, seen = [], set()
        for f in _visible(cdir, hidden):
            if f.is_dir():  # NIST's clusters are flat: a folder here is another layout
                raise DataError("a folder inside a cluster directory (NIST's hold document "
                                "files only): move it out", path=f)
            if not f.is_file():  # a dangling symlink, a loop of them, a FIFO
                raise DataError("not a readable document file (a broken symlink, a loop of "
                                "them, or a special file)", path=f)
            docno, headline, text = parse_sgml_doc(f, options.encoding)
            if docno in seen:
                raise DataError(f"duplicate DOCNO {docno!r}", path=f)
            seen.add(docno)
            articles.append(RawArticle(text, headline, docno))
        refs = []
        for _annotator, f in models.get(key, []):
            text = " ".join(read_text(f, options.encoding).split())
            if not text:
                raise DataError("reference summary is empty", path=f)
            refs.append(Reference(f.name, text))
        if not refs:
            raise DataError(f"no reference summary {key}.M.{options.summary_length}.T.<A-H> in "
                            f"{models_dir}", path=cdir)
        clusters.append(RawCluster(cdir.name, articles, refs))

    orphans = sorted(set(models) - keys_with_docs)
    if orphans:
        f = models[orphans[0]][0][1]
        raise DataError(f"reference summary without documents: no docs/{orphans[0].lower()}*/ "
                        f"directory ({len(orphans)} such cluster(s): {', '.join(orphans[:5])})",
                        path=f)
    if not clusters:
        raise DataError("no cluster directories under docs/", path=docs_dir)
    if hidden:
        names = sorted({p.name for p in hidden})
        report.notes.append(f"{len(hidden)} hidden files skipped ({', '.join(names[:3])}"
                            f"{', ...' if len(names) > 3 else ''})")
    if options.number_like:
        options = _numbered_like_the_release(clusters, options, report)
    elif options.prefix == RELEASE_PREFIX and options.id_scheme == "index":
        options = _numbered_as_the_release(clusters, options, report, root)
    return assemble(clusters, options, report), report


def _numbered_as_the_release(clusters: list[RawCluster], options: IngestOptions,
                             report: IngestReport, root: Path) -> IngestOptions:
    """``options`` with the CRUX release's numbers of DUC 2004's clusters, from the table that
    ships with cruxflow (:func:`~cruxflow.data.ingest.release_order.duc2004_release_order`):
    ``duc04-testb-N`` is then the release's cluster N."""
    import dataclasses

    from cruxflow.data.ingest.release_order import DUC2004_RELEASE_ORDER, duc2004_release_order

    table = duc2004_release_order()
    unknown = [c.source_id for c in clusters if c.source_id.lower() not in table]
    if unknown:
        raise DataError(f"{len(unknown)} clusters are not DUC 2004 task 2's "
                        f"({', '.join(unknown[:5])}), whose CRUX release numbers the prefix "
                        f"{RELEASE_PREFIX} gives: "
                        "choose another --prefix, or --number-like the passages of the release "
                        "they come from", path=root)
    numbers = {c.source_id: table[c.source_id.lower()] for c in clusters}
    report.counts["numbered_like"] = {"file": str(DUC2004_RELEASE_ORDER), "clusters": {
        name: {"number": number} for name, number in numbers.items()}}
    report.notes.append(f"{len(numbers)} clusters numbered as the CRUX release numbers them "
                        f"(the table that ships with cruxflow: {DUC2004_RELEASE_ORDER.name})")
    return dataclasses.replace(options, topic_numbers=numbers)


def _numbered_like_the_release(clusters: list[RawCluster], options: IngestOptions,
                               report: IngestReport) -> IngestOptions:
    """``options`` with the release's topic numbers (see :mod:`release_order`): each cluster's
    documents, made as the options make them, matched to the release's passages."""
    import dataclasses

    from cruxflow.data.ingest.release_order import match_clusters, read_release_topics, words

    path = existing(options.number_like, "release passages file")
    release = read_release_topics(path, options.prefix, options.encoding)
    plain = dataclasses.replace(options, number_like=None, id_scheme="source")
    draft = assemble(clusters, plain, IngestReport("duc2004", report.source))
    by_source = {}
    for t in draft.topics.values():
        by_source[t.source_id] = (len(t.doc_ids),
                                  words(draft.documents[d].text for d in t.doc_ids))
    numbers, detail = match_clusters(by_source, release, path)
    report.counts["numbered_like"] = {"file": str(path), "clusters": detail}
    report.notes.append(f"{len(numbers)} clusters numbered as the release numbers them "
                        f"(matched by document count and words to {path.name}; lowest "
                        f"share {min(d['share'] for d in detail.values()):.2f}, lowest margin "
                        f"{min(d['margin'] for d in detail.values()):.2f})")
    return dataclasses.replace(options, topic_numbers=numbers)
