# First-stage retrieval (paper Sec. 4.1): a real Lucene index per dataset, top-k per query.


rule bm25_index:
    """Index the dataset's passages (a pyserini JsonCollection) with Lucene."""
    input:
        **dataset_files(),
    output:
        directory("results/indexes/{dataset}/bm25"),
    log:
        "logs/bm25_index/{dataset}.log",
    benchmark:
        "benchmarks/results/bm25_index/{dataset}.tsv"
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
        index="results/indexes/{dataset}/bm25",
    output:
        "results/runs/{dataset}/bm25.run",
    log:
        "logs/bm25_search/{dataset}.log",
    benchmark:
        "benchmarks/results/bm25_search/{dataset}.tsv"
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


rule dense_index:
    """Encode the dataset's passages (retrieval.dense.model) into a FAISS index."""
    input:
        **dataset_files(),
    output:
        directory("results/indexes/{dataset}/dense"),
    log:
        "logs/dense_index/{dataset}.log",
    benchmark:
        "benchmarks/results/dense_index/{dataset}.tsv"
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
        "../workflow_scripts/dense_index.py"


rule dense_search:
    """Dense retrieval for every topic's open-ended query: a TREC run."""
    input:
        **dataset_files(),
        index="results/indexes/{dataset}/dense",
    output:
        "results/runs/{dataset}/dense.run",
    log:
        "logs/dense_search/{dataset}.log",
    benchmark:
        "benchmarks/results/dense_search/{dataset}.tsv"
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
