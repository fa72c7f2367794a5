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
