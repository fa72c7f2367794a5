# First-stage retrieval (paper Sec. 4.1): a knowledge corpus, real indexes per corpus (Lucene
# for BM25 and SPLADE impacts, FAISS for dense), top-k per query for every dataset.
# Dense and SPLADE encoding scatter and gather: retrieval.encoding_shards GPU jobs per corpus
# (dense_encode, splade_encode) each encode one contiguous slice of the passages, cut at batch
# boundaries, into results/indexes/<corpus>/{dense,splade}.shards/; one CPU job per index
# (dense_index, splade_index) gathers the shards in order into the same index as one job would.


rule corpus:
    """The knowledge corpus: the passages of its datasets, one pyserini JsonCollection."""
    input:
        lambda wc: [
            dataset_files(f"results/data/{d}")["passages"] for d in CORPORA[wc.corpus]
        ],
    output:
        "results/corpus/{corpus}/collection/passages.jsonl",
    log:
        "logs/corpus/{corpus}.log",
    benchmark:
        "benchmarks/results/corpus/{corpus}.tsv"
    priority: 10
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../workflow_scripts/corpus.py"


rule bm25_index:
    """Index the corpus with Lucene (Anserini through pyserini)."""
    input:
        "results/corpus/{corpus}/collection/passages.jsonl",
    output:
        directory("results/indexes/{corpus}/bm25"),
    log:
        "logs/bm25_index/{corpus}.log",
    benchmark:
        "benchmarks/results/bm25_index/{corpus}.tsv"
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    script:
        "../workflow_scripts/bm25_index.py"


rule bm25_search:
    """BM25 (k1, b from the config) for every topic's open-ended query: a TREC run."""
    input:
        **dataset_files(),
        collection=collection,
        index=index_of("bm25"),
    output:
        "results/runs/{dataset}/bm25.run",
    log:
        "logs/bm25_search/{dataset}.log",
    benchmark:
        "benchmarks/results/bm25_search/{dataset}.tsv"
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        k1=RETRIEVAL["bm25"]["k1"],
        b=RETRIEVAL["bm25"]["b"],
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/bm25_search.py"


rule dense_encode:
    """Encode one shard of the corpus (retrieval.dense.model): ids and embeddings."""
    input:
        "results/corpus/{corpus}/collection/passages.jsonl",
    output:
        DENSE_SHARD,
    log:
        "logs/dense_encode/{corpus}/shard{shard}-of{shards}.log",
    benchmark:
        "benchmarks/results/dense_encode/{corpus}/shard{shard}-of{shards}.tsv"
    wildcard_constraints:
        shard=r"\d+",
        shards=r"\d+",
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=RETRIEVAL["dense"]["gpus"],
    params:
        dense=RETRIEVAL["dense"],
    script:
        "../workflow_scripts/dense_encode.py"


rule dense_index:
    """Gather the corpus's dense shards, in order, into one FAISS inner-product index."""
    input:
        encoding_shards(DENSE_SHARD),
    output:
        directory("results/indexes/{corpus}/dense"),
    log:
        "logs/dense_index/{corpus}.log",
    benchmark:
        "benchmarks/results/dense_index/{corpus}.tsv"
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        shards=ENCODING_SHARDS,
    script:
        "../workflow_scripts/dense_index.py"


rule dense_search:
    """Dense retrieval for every topic's open-ended query: a TREC run."""
    input:
        **dataset_files(),
        collection=collection,
        index=index_of("dense"),
    output:
        "results/runs/{dataset}/dense.run",
    log:
        "logs/dense_search/{dataset}.log",
    benchmark:
        "benchmarks/results/dense_search/{dataset}.tsv"
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        dense=RETRIEVAL["dense"],
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/dense_search.py"


rule splade_encode:
    """Encode one shard of the corpus with SPLADE (retrieval.splade.model): a
    JsonVectorCollection file of quantised impacts."""
    input:
        "results/corpus/{corpus}/collection/passages.jsonl",
    output:
        SPLADE_SHARD,
    log:
        "logs/splade_encode/{corpus}/shard{shard}-of{shards}.log",
    benchmark:
        "benchmarks/results/splade_encode/{corpus}/shard{shard}-of{shards}.tsv"
    wildcard_constraints:
        shard=r"\d+",
        shards=r"\d+",
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=480,
        gpu=RETRIEVAL["splade"]["gpus"],
    params:
        splade=RETRIEVAL["splade"],
    script:
        "../workflow_scripts/splade_encode.py"


rule splade_index:
    """Gather the corpus's SPLADE shards into one Lucene impact index (Anserini)."""
    input:
        encoding_shards(SPLADE_SHARD),
    output:
        directory("results/indexes/{corpus}/splade"),
    log:
        "logs/splade_index/{corpus}.log",
    benchmark:
        "benchmarks/results/splade_index/{corpus}.tsv"
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        shards=ENCODING_SHARDS,
    script:
        "../workflow_scripts/splade_index.py"


rule splade_search:
    """Learned-sparse retrieval for every topic's open-ended query: a TREC run."""
    input:
        **dataset_files(),
        collection=collection,
        index=index_of("splade"),
    output:
        "results/runs/{dataset}/splade.run",
    log:
        "logs/splade_search/{dataset}.log",
    benchmark:
        "benchmarks/results/splade_search/{dataset}.tsv"
    priority: 10
    conda:
        "../envs/pyserini.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        splade=RETRIEVAL["splade"],
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/splade_search.py"
