"""``irds:<id>`` as the input of ``cruxflow ingest --format documents``: a collection that
ir_datasets provides, read through it (``pip install 'cruxflow[irds]'``).

Each query with at least one relevant document (qrels relevance >= 1) becomes a topic: the
query's text is its request, its relevant documents (in qrels order) are its documents. Nothing
here downloads: ir_datasets reads what its own cache (``IR_DATASETS_HOME``) holds, or fetches it
itself when asked, outside cruxflow's control; the tests register a local collection.
"""

from __future__ import annotations

from cruxflow._extras import extra
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import RawArticle
from cruxflow.data.ingest.documents import IRDS_PREFIX as PREFIX


def _text(doc) -> str:
    return doc.default_text() if hasattr(doc, "default_text") else getattr(doc, "text", "")


def read_irds(name: str, builder, report) -> None:
    """Add the topics of the ir_datasets collection ``irds:<id>`` to ``builder``."""
    ident = name[len(PREFIX):]
    with extra(__name__, "irds"):
        import ir_datasets
    try:
        ds = ir_datasets.load(ident)
    except KeyError:
        raise DataError("ir_datasets has no such dataset", path=name) from None
    for need in ("docs", "queries", "qrels"):
        if not getattr(ds, f"has_{need}")():
            raise DataError(f"the ir_datasets dataset has no {need}: topics need queries and "
                            "the documents their qrels judge relevant", path=name)
    relevant: dict[str, list[str]] = {}
    for q in ds.qrels_iter():
        if q.relevance >= 1 and q.doc_id not in relevant.setdefault(q.query_id, []):
            relevant[q.query_id].append(q.doc_id)
    store = ds.docs_store()
    skipped = 0
    for query in ds.queries_iter():
        ids = relevant.get(query.query_id, [])
        if not ids:
            skipped += 1
            report.clusters_skipped.append({"source_id": query.query_id,
                                            "reason": "no relevant document in the qrels"})
            continue
        docs = store.get_many(ids)
        missing = [d for d in ids if d not in docs]
        if missing:
            raise DataError(f"qrels of query {query.query_id} name documents not in the "
                            f"collection: {', '.join(missing[:3])}", path=name, field="doc_id")
        articles = [RawArticle(" ".join(_text(docs[d]).split()), getattr(docs[d], "title", None)
                               or None, d) for d in ids]
        where = {"path": name, "record": f"query {query.query_id}"}
        builder.add(query.query_id, articles, None, _text(query), None, where, "query_id")
