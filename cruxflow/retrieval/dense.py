"""Dense retrieval (the paper's DR): pyserini's encoders, an exact FAISS inner-product index.

The index directory is pyserini's FAISS layout (``index`` + ``docid``), so pyserini's own
``FaissSearcher`` reads it. Encoders are a model path or id (resolved from the local cache,
never downloaded) with its pooling: the paper's ``facebook/contriever-msmarco`` is mean pooling
without normalisation; the packaged all-MiniLM-L6-v2 of the default is mean pooling, L2-normed.

A large corpus is encoded in shards, one job each (:func:`encode_shard`: an ``.npz`` file of
``ids`` and ``vectors``), that :func:`gather_index` adds to one index in shard order. With the
shards cut at batch boundaries (:func:`cruxflow.retrieval.corpus.shard_bounds`) this is the
index that :func:`build_index` writes encoding everything at once, vector for vector.
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from cruxflow._extras import require
from cruxflow.data.errors import DataError
from cruxflow.data.outputs import atomic_write
from cruxflow.retrieval.corpus import claim_passage
from cruxflow.retrieval.java import prepare_pyserini
from cruxflow.weights import resolve_model

require(__name__, "retrieval", "torch", "faiss", "pyserini")


def _encoder_args(model: str, pooling: str, l2_norm: bool, device: str = "cpu") -> dict:
    return {"model_name": resolve_model(model), "pooling": pooling, "l2_norm": l2_norm,
            "device": device}


def encode(passages: Iterable[tuple[str, str]], *, model: str, pooling: str = "mean",
           l2_norm: bool = True, batch_size: int = 64, max_length: int = 256,
           device: str = "cpu", progress: bool = False) -> tuple[list[str], np.ndarray]:
    """``(ids, embeddings)`` of ``(id, text)`` pairs, encoded in batches of ``batch_size``:
    float32, one row per passage; no passages give 0 rows of the model's width."""
    prepare_pyserini()
    from pyserini.encode import AutoDocumentEncoder

    encoder = AutoDocumentEncoder(**_encoder_args(model, pooling, l2_norm, device))
    passages = list(passages)
    ids = [i for i, _ in passages]
    texts = [t for _, t in passages]
    if not texts:
        return ids, np.zeros((0, encoder.model.config.hidden_size), dtype=np.float32)
    batches = range(0, len(texts), batch_size)
    if progress:
        from tqdm import tqdm
        batches = tqdm(batches, desc="encoding", unit="batch")
    vectors = np.concatenate([encoder.encode(texts[i:i + batch_size], titles=None,
                                             max_length=max_length) for i in batches])
    return ids, np.ascontiguousarray(vectors, dtype=np.float32)


def encode_shard(passages: Iterable[tuple[str, str]], path, **encoding) -> int:
    """Encode one shard of a corpus (see :func:`encode` for the options) into an ``.npz`` file
    of ``ids`` and ``vectors``, atomically; the passage count. An empty shard is a file with
    0 rows, which :func:`gather_index` accepts."""
    ids, vectors = encode(passages, **encoding)
    with atomic_write(path, "wb") as out:
        np.savez(out, ids=np.array(ids, dtype=str), vectors=vectors)
    return len(ids)


def read_shard(path) -> tuple[list[str], np.ndarray]:
    """``(ids, vectors)`` of a file of :func:`encode_shard`, checked for shape."""
    try:
        with np.load(path, allow_pickle=False) as arrays:
            ids, vectors = arrays["ids"], arrays["vectors"]
    except KeyError as e:
        raise DataError(f"no array {e}: not a file of dense.encode_shard", path=path) from e
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise DataError(f"unreadable embeddings: {e}", path=path) from e
    if ids.ndim != 1 or vectors.ndim != 2 or len(ids) != len(vectors):
        raise DataError(f"{ids.shape} ids for embeddings of shape {vectors.shape}", path=path)
    return ids.tolist(), vectors


def gather_index(shard_files: Iterable, index_dir) -> Path:
    """The FAISS index (as :func:`build_index` writes it) of the embeddings of
    :func:`encode_shard` files, in the given order, atomically. Shards are read one at a
    time; a passage id in two shards, or embeddings of another width than the first shard's,
    is an error that names the file."""
    return _write_index(((p, *read_shard(p)) for p in shard_files), index_dir)


def build_index(passages: Iterable[tuple[str, str]], index_dir, *, model: str,
                pooling: str = "mean", l2_norm: bool = True, batch_size: int = 64,
                max_length: int = 256, device: str = "cpu", progress: bool = False) -> Path:
    """Encode ``(id, text)`` pairs and write a flat inner-product FAISS index, atomically."""
    passages = list(passages)
    if not passages:
        raise ValueError("no passages to index")
    ids, vectors = encode(passages, model=model, pooling=pooling, l2_norm=l2_norm,
                          batch_size=batch_size, max_length=max_length, device=device,
                          progress=progress)
    return _write_index([(None, ids, vectors)], index_dir)


def _write_index(parts: Iterable[tuple], index_dir) -> Path:
    """pyserini's FAISS layout of ``(source, ids, vectors)`` parts, added in order."""
    prepare_pyserini()
    import faiss

    index = width_of = None
    seen: dict[str, object] = {}
    ids: list[str] = []
    for source, part_ids, vectors in parts:
        if index is None:
            index, width_of = faiss.IndexFlatIP(vectors.shape[1]), source
        elif vectors.shape[1] != index.d:
            raise DataError(f"embeddings of dimension {vectors.shape[1]}, but {index.d} in "
                            f"{width_of} (another model?)", path=source)
        for pid in part_ids:
            claim_passage(seen, pid, source)
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        ids.extend(part_ids)
    if not ids:
        raise ValueError("no passages to index")
    index_dir = Path(index_dir)
    tmp = index_dir.with_name(index_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        faiss.write_index(index, str(tmp / "index"))
        (tmp / "docid").write_text("".join(f"{i}\n" for i in ids))
        shutil.rmtree(index_dir, ignore_errors=True)
        tmp.rename(index_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
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
