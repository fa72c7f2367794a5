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
    """Top-``k`` ``(passage id, score)`` per query, best first."""
    prepare_pyserini()
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(index_dir))
    searcher.set_bm25(k1, b)
    qids = list(queries)
    hits = searcher.batch_search([queries[q] for q in qids], qids, k=k, threads=threads)
    searcher.close()
    return {q: [(h.docid, float(h.score)) for h in hits.get(q, [])] for q in qids}
