"""BM25 with a real Lucene index (Anserini through pyserini), as the paper's first stage (LR).

Defaults are Anserini's (k1 = 0.9, b = 0.4). Indexing and search run in this process, after
:func:`cruxflow.retrieval.java.prepare_pyserini`.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from cruxflow._extras import require
from cruxflow.retrieval.java import prepare_pyserini

require(__name__, "retrieval", "pyserini")


def build_index(collection_dir, index_dir, *, threads: int = 1) -> Path:
    """Index a pyserini JsonCollection directory (``{"id", "contents"}`` JSONL files).

    The index is built next to ``index_dir`` and moved into place when complete, so an
    interrupted build never leaves a half-written index behind.
    """
    prepare_pyserini()
    from pyserini.pyclass import autoclass

    index_dir = Path(index_dir)
    tmp = index_dir.with_name(index_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    autoclass("io.anserini.index.IndexCollection").main([
        "-collection", "JsonCollection", "-input", str(collection_dir), "-index", str(tmp),
        "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads),
        "-storePositions", "-storeDocvectors", "-storeRaw"])
    if not tmp.exists() or not any(tmp.iterdir()):
        raise RuntimeError(f"Anserini wrote no index for {collection_dir}")
    shutil.rmtree(index_dir, ignore_errors=True)
    tmp.rename(index_dir)
    return index_dir


def search(index_dir, queries: Mapping[str, str], *, k: int = 100, k1: float = 0.9,
           b: float = 0.4, threads: int = 1) -> dict[str, list[tuple[str, float]]]:
    """Top-``k`` ``(passage id, score)`` per query, best first: Anserini's ``SimpleSearcher``,
    the Java class behind pyserini's ``LuceneSearcher``, called as that wrapper calls it
    (``set_bm25``, then ``batch_search`` over lists of queries and ids). Not through the wrapper:
    importing ``pyserini.search.lucene`` imports its impact searcher and with it torch,
    transformers and scikit-learn, 6.6 of a BM25 job's 12 s, none of which BM25 uses."""
    prepare_pyserini()
    from pyserini.pyclass import autoclass

    array = autoclass("java.util.ArrayList")
    searcher = autoclass("io.anserini.search.SimpleSearcher")(str(index_dir))
    try:
        searcher.set_bm25(float(k1), float(b))
        qids = list(queries)
        texts, ids = array(), array()
        for q in qids:
            texts.add(queries[q])
            ids.add(q)
        results = searcher.batch_search(texts, ids, int(k), int(threads))
        hits = {e.getKey(): e.getValue() for e in results.entrySet().toArray()}
    finally:
        searcher.close()
    return {q: [(h.docid, float(h.score)) for h in hits.get(q, [])] for q in qids}
