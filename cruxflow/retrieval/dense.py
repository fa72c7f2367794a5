"""Dense retrieval (the paper's DR): pyserini's encoders, an exact FAISS inner-product index.

The index directory is pyserini's FAISS layout (``index`` + ``docid``), so pyserini's own
``FaissSearcher`` reads it. Encoders are a model path or id (resolved from the local cache,
never downloaded) with its pooling: the paper's ``facebook/contriever-msmarco`` is mean pooling
without normalisation; the packaged all-MiniLM-L6-v2 of the default is mean pooling, L2-normed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from cruxflow.models import resolve_model
from cruxflow.retrieval.java import prepare_pyserini


def _encoder_args(model: str, pooling: str, l2_norm: bool) -> dict:
    return {"model_name": resolve_model(model), "pooling": pooling, "l2_norm": l2_norm,
            "device": "cpu"}


def build_index(passages: Iterable[tuple[str, str]], index_dir, *, model: str,
                pooling: str = "mean", l2_norm: bool = True, batch_size: int = 64,
                max_length: int = 256, progress: bool = False) -> Path:
    """Encode ``(id, text)`` pairs and write a flat inner-product FAISS index, atomically."""
    prepare_pyserini()
    import faiss
    from pyserini.encode import AutoDocumentEncoder

    encoder = AutoDocumentEncoder(**_encoder_args(model, pooling, l2_norm))
    passages = list(passages)
    if not passages:
        raise ValueError("no passages to index")
    ids = [i for i, _ in passages]
    texts = [t for _, t in passages]
    batches = range(0, len(texts), batch_size)
    if progress:
        from tqdm import tqdm
        batches = tqdm(batches, desc="encoding", unit="batch")
    vectors = np.concatenate([encoder.encode(texts[i:i + batch_size], titles=None,
                                             max_length=max_length) for i in batches])
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    index_dir = Path(index_dir)
    tmp = index_dir.with_name(index_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    faiss.write_index(index, str(tmp / "index"))
    (tmp / "docid").write_text("".join(f"{i}\n" for i in ids))
    shutil.rmtree(index_dir, ignore_errors=True)
    tmp.rename(index_dir)
    return index_dir


def search(index_dir, queries: Mapping[str, str], *, model: str, pooling: str = "mean",
           l2_norm: bool = True, k: int = 100) -> dict[str, list[tuple[str, float]]]:
    """Top-``k`` ``(passage id, inner product)`` per query with pyserini's FaissSearcher."""
    prepare_pyserini()
    from pyserini.encode import AutoQueryEncoder
    from pyserini.search.faiss import FaissSearcher

    args = _encoder_args(model, pooling, l2_norm)
    encoder = AutoQueryEncoder(args.pop("model_name"), **args)
    searcher = FaissSearcher(str(index_dir), encoder)
    return {q: [(h.docid, float(h.score)) for h in searcher.search(text, k=k)]
            for q, text in queries.items()}
