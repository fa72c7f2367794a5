"""Learned sparse retrieval (the paper's LSR): SPLADE vectors in a Lucene impact index.

A passage's vector is SPLADE-max, as ``naver/splade-v3`` computes it: for each vocabulary entry
``j``, ``w_j = max over tokens of log(1 + relu(logit_j))``, padding masked out. Lucene stores
integers, so weights are quantised (``round(w * quant)``, zeros dropped) and keyed by the
vocabulary token, the form pyserini's ``JsonVectorCollection`` and ``SpladeQueryEncoder`` use.
Anserini indexes each weight as a term frequency (``-impact -pretokenized``) and scores a query
as the sum of query weight times document weight: the integer dot product of the two vectors.

Models are a local path, a ``package:`` spec, or an id already in the local Hugging Face cache
(``local_files_only``): nothing is downloaded. The same encoder serves documents and queries
unless a different ``model`` is passed to :func:`search`.

A large corpus is encoded in shards, one job each (:func:`encode_shard`: one JsonVectorCollection
file), and :func:`index_shards` indexes all the shard files at once into the same index as
:func:`build_index`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from itertools import islice
from pathlib import Path

import numpy as np

from cruxflow._extras import require
from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_lines
from cruxflow.data.outputs import atomic_write
from cruxflow.retrieval.corpus import claim_passage
from cruxflow.retrieval.java import prepare_pyserini
from cruxflow.weights import resolve_model

require(__name__, "retrieval", "torch", "transformers", "pyserini")

log = logging.getLogger(__name__)

# Anserini's SPLADE indexes (splade-v3, SPLADE++ ED) quantise document weights by 100.
DEFAULT_QUANT = 100


class SpladeEncoder:
    """Text to SPLADE-max weights with a masked-language model (``AutoModelForMaskedLM``)."""

    def __init__(self, model: str, *, max_length: int = 256, device: str = "cpu"):
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        path = resolve_model(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForMaskedLM.from_pretrained(path, local_files_only=True)
        self.model.to(device).eval()
        self.max_length = max_length
        self.device = device
        # Logit j scores vocabulary id j; ids the tokenizer does not know (embedding rows padded
        # to a round size) have no token to index under and are left out.
        by_id = {i: t for t, i in self.tokenizer.get_vocab().items()}
        self.tokens = [by_id.get(i) for i in range(self.model.config.vocab_size)]

    def weights(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), vocab_size)`` float SPLADE-max weights."""
        import torch

        enc = self.tokenizer(texts, max_length=self.max_length, truncation=True, padding=True,
                             return_tensors="pt").to(self.device)
        with torch.no_grad():
            logits = self.model(**enc).logits
            padding = enc["attention_mask"].unsqueeze(-1) == 0
            # log(1 + relu(x)) never decreases, so taking the max over tokens first gives the
            # same weights, with the activation on (batch, vocab) values instead of
            # (batch, length, vocab), by far the largest tensor.
            top = logits.masked_fill_(padding, float("-inf")).amax(dim=1)
            return torch.log1p(torch.relu(top)).float().cpu().numpy()

    def encode(self, texts: list[str], *, quant: int = DEFAULT_QUANT) -> list[dict[str, int]]:
        """Integer impacts ``{token: round(w * quant)}`` per text, zeros dropped."""
        impacts = np.rint(self.weights(texts) * quant).astype(np.int64)
        return [self._sparse(row) for row in impacts]

    def _sparse(self, row: np.ndarray) -> dict[str, int]:
        return {self.tokens[j]: int(row[j]) for j in np.flatnonzero(row)
                if self.tokens[j] is not None}


def _batches(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def _encode_into(files: list, passages: Iterable[tuple[str, str]], *, model: str,
                 batch_size: int, max_length: int, quant: int, device: str,
                 progress: bool) -> int:
    """Encode ``(id, text)`` pairs as JsonVectorCollection lines, batch ``b`` into
    ``files[b % len(files)]``; the passage count. Only one batch is in memory."""
    encoder = SpladeEncoder(model, max_length=max_length, device=device)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(passages) if hasattr(passages, "__len__") else None,
                   desc="SPLADE encoding", unit="passage")
    n = empty = 0
    for b, batch in enumerate(_batches(passages, batch_size)):
        vectors = encoder.encode([text for _, text in batch], quant=quant)
        files[b % len(files)].writelines(
            json.dumps({"id": pid, "contents": text, "vector": vec}) + "\n"
            for (pid, text), vec in zip(batch, vectors, strict=True))
        n += len(batch)
        empty += sum(not v for v in vectors)
        if bar is not None:
            bar.update(len(batch))
    if bar is not None:
        bar.close()
    if empty:
        log.warning("%d of %d passages have an empty SPLADE vector: no query can retrieve them",
                    empty, n)
    return n


def write_vectors(passages: Iterable[tuple[str, str]], directory, *, model: str,
                  batch_size: int = 32, max_length: int = 256, quant: int = DEFAULT_QUANT,
                  device: str = "cpu", shards: int = 1, progress: bool = False) -> int:
    """Encode ``(id, text)`` pairs into a pyserini JsonVectorCollection; the passage count.

    Batches go round-robin to ``shards`` JSONL files because Anserini indexes one file per
    thread. Passages stream through: only one batch is in memory.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        files = [stack.enter_context(open(directory / f"vectors{s:03d}.jsonl", "w"))
                 for s in range(shards)]
        return _encode_into(files, passages, model=model, batch_size=batch_size,
                            max_length=max_length, quant=quant, device=device,
                            progress=progress)


def encode_shard(passages: Iterable[tuple[str, str]], path, *, model: str,
                 batch_size: int = 32, max_length: int = 256, quant: int = DEFAULT_QUANT,
                 device: str = "cpu", progress: bool = False) -> int:
    """Encode one shard of a corpus into one JsonVectorCollection file, atomically; the
    passage count. An empty shard is an empty file, which :func:`index_shards` accepts."""
    with atomic_write(path) as out:
        return _encode_into([out], passages, model=model, batch_size=batch_size,
                            max_length=max_length, quant=quant, device=device,
                            progress=progress)


def index_vectors(vectors_dir, index_dir, *, threads: int | None = None) -> Path:
    """Anserini impact index of a JsonVectorCollection at ``index_dir`` (written as is), with
    one thread per file (at most ``threads``)."""
    prepare_pyserini()
    from pyserini.pyclass import autoclass

    files = len(list(Path(vectors_dir).glob("*.jsonl")))
    threads = min(files, threads) if threads else files
    autoclass("io.anserini.index.IndexCollection").main([
        "-collection", "JsonVectorCollection", "-input", str(vectors_dir),
        "-index", str(index_dir), "-generator", "DefaultLuceneDocumentGenerator",
        "-impact", "-pretokenized", "-threads", str(max(threads, 1))])
    index_dir = Path(index_dir)
    if not index_dir.exists() or not any(index_dir.iterdir()):
        raise RuntimeError(f"Anserini wrote no index for {vectors_dir}")
    return index_dir


def _index_atomically(index_dir, write_vectors_to, *, threads: int | None = None) -> Path:
    """Fill a vectors directory next to ``index_dir`` (``.vectors.tmp``) with
    ``write_vectors_to(directory)`` (which returns the passage count), index it into
    ``.tmp`` and move that into place when complete: a failure leaves any previous index as
    it was and nothing else behind."""
    index_dir = Path(index_dir)
    tmp = index_dir.with_name(index_dir.name + ".tmp")
    vectors = index_dir.with_name(index_dir.name + ".vectors.tmp")
    try:
        for stale in (tmp, vectors):
            shutil.rmtree(stale, ignore_errors=True)
        vectors.mkdir(parents=True)
        if write_vectors_to(vectors) == 0:
            raise ValueError("no passages to index")
        index_vectors(vectors, tmp, threads=threads)
        shutil.rmtree(index_dir, ignore_errors=True)
        tmp.rename(index_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(vectors, ignore_errors=True)
    return index_dir


def build_index(passages: Iterable[tuple[str, str]], index_dir, *, model: str,
                batch_size: int = 32, max_length: int = 256, quant: int = DEFAULT_QUANT,
                device: str = "cpu", threads: int = 1, progress: bool = False) -> Path:
    """Encode ``(id, text)`` pairs with SPLADE and build a Lucene impact index, atomically.

    Vectors and index are written next to ``index_dir`` (``.vectors.tmp``, ``.tmp``) and the
    index is moved into place when complete: a failed build leaves any previous index as it was
    and nothing else behind. Passages whose vector is empty get no document (Anserini skips
    them) and can never be retrieved.
    """
    return _index_atomically(index_dir, lambda vectors: write_vectors(
        passages, vectors, model=model, batch_size=batch_size, max_length=max_length,
        quant=quant, device=device, shards=threads, progress=progress))


def index_shards(shard_files: Iterable, index_dir, *, threads: int = 1) -> Path:
    """The Lucene impact index (as :func:`build_index` writes it) of the files of
    :func:`encode_shard`, atomically. Anserini reads a directory, so the non-empty shards are
    gathered, hard-linked where the file system allows and copied otherwise, into the
    ``.vectors.tmp`` directory; a passage id in two shards is an error that names the file.
    """
    def gather(directory: Path) -> int:
        seen: dict[str, Path] = {}
        for s, path in enumerate(map(Path, shard_files)):
            count = 0
            for line, pid in _vector_ids(path):
                claim_passage(seen, pid, path, record=f"line {line}")
                count += 1
            if count:
                target = directory / f"shard{s:05d}.jsonl"
                try:
                    os.link(path, target)
                except OSError:
                    shutil.copyfile(path, target)
        return len(seen)

    return _index_atomically(index_dir, gather, threads=threads)


def _vector_ids(path) -> Iterator[tuple[int, str]]:
    """``(line number, id)`` of a JsonVectorCollection file, streamed (shards are large)."""
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"invalid JSON: {e.msg}", path=path,
                            record=f"line {number}") from None
        if not (isinstance(row, dict) and isinstance(row.get("id"), str)
                and isinstance(row.get("vector"), dict)):
            raise DataError("not a JsonVectorCollection line (id, contents, vector)",
                            path=path, record=f"line {number}")
        yield number, row["id"]


class _Encoded:
    """pyserini query encoder over vectors encoded beforehand, in batches (pyserini itself
    would encode one query at a time, and load an encoder given a name)."""

    def __init__(self, vectors: Mapping[str, dict[str, int]]):
        self.vectors = vectors

    def encode(self, text: str) -> dict[str, int]:
        return self.vectors[text]


def _allow_clauses(n: int) -> None:
    # Each query term is a Lucene clause; Lucene refuses queries over 1024 clauses
    # (JVM-wide). SPLADE queries are far shorter, but long ones or untrained models are not.
    from pyserini.pyclass import autoclass

    searcher = autoclass("org.apache.lucene.search.IndexSearcher")
    if n > searcher.getMaxClauseCount():
        searcher.setMaxClauseCount(n)


def search(index_dir, queries: Mapping[str, str], *, model: str, k: int = 100,
           batch_size: int = 32, max_length: int = 256, quant: int = DEFAULT_QUANT,
           device: str = "cpu", threads: int = 1) -> dict[str, list[tuple[str, float]]]:
    """Top-``k`` ``(passage id, score)`` per query, best first; the score is the integer dot
    product of the quantised query and passage vectors.

    Every query term found in the index is kept: pyserini's default (``min_idf=0``) would drop
    terms that occur in every passage, which only matters, and then wrongly, for small indexes.
    """
    prepare_pyserini()
    from pyserini.search.lucene import LuceneImpactSearcher

    qids = list(queries)
    texts = sorted({queries[q] for q in qids})
    encoder = SpladeEncoder(model, max_length=max_length, device=device)
    vectors = {}
    for batch in _batches(texts, batch_size):
        vectors.update(zip(batch, encoder.encode(batch, quant=quant), strict=True))
    _allow_clauses(max((len(v) for v in vectors.values()), default=0))
    searcher = LuceneImpactSearcher(str(index_dir), _Encoded(vectors), min_idf=-1)
    hits = searcher.batch_search([queries[q] for q in qids], qids, k=k, threads=threads)
    searcher.close()
    return {q: [(h.docid, float(h.score)) for h in hits.get(q, [])] for q in qids}
