# Second stages over the top-100 of every first stage (paper Sec. 4.1). Each reranker of
# retrieval.rerankers is matched to the rule of its kind by a wildcard constraint.


rule rerank_mmr:
    """Maximal marginal relevance over a sentence encoder (diversity)."""
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        "logs/rerank_mmr/{dataset}/{retriever}+{reranker}.log",
    benchmark:
        "benchmarks/results/rerank_mmr/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_of_kind("mmr"),
    conda:
        "../envs/rerank.yaml"
    threads: 2
    resources:
        mem_mb=lambda wc: reranker_spec(wc).get("mem_mb", 8000),
        runtime=lambda wc: reranker_spec(wc).get("runtime", 240),
        gpu=lambda wc: reranker_spec(wc).get("gpus", 0),
    params:
        spec=reranker_spec,
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/rerank.py"


rule rerank_cross_encoder:
    """Pointwise cross-encoder scores (miniLM in the paper)."""
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        "logs/rerank_cross_encoder/{dataset}/{retriever}+{reranker}.log",
    benchmark:
        "benchmarks/results/rerank_cross_encoder/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_of_kind("cross-encoder"),
    conda:
        "../envs/rerank.yaml"
    threads: 2
    resources:
        mem_mb=lambda wc: reranker_spec(wc).get("mem_mb", 8000),
        runtime=lambda wc: reranker_spec(wc).get("runtime", 240),
        gpu=lambda wc: reranker_spec(wc).get("gpus", 0),
    params:
        spec=reranker_spec,
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/rerank.py"


rule rerank_monot5:
    """Pointwise monoT5: log P(true) per passage."""
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        "logs/rerank_monot5/{dataset}/{retriever}+{reranker}.log",
    benchmark:
        "benchmarks/results/rerank_monot5/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_of_kind("monot5"),
    conda:
        "../envs/rerank.yaml"
    threads: 2
    resources:
        mem_mb=lambda wc: reranker_spec(wc).get("mem_mb", 8000),
        runtime=lambda wc: reranker_spec(wc).get("runtime", 240),
        gpu=lambda wc: reranker_spec(wc).get("gpus", 0),
    params:
        spec=reranker_spec,
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/rerank.py"


rule rerank_setwise:
    """Setwise heapsort with a Flan-T5 model (top k reordered)."""
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        "logs/rerank_setwise/{dataset}/{retriever}+{reranker}.log",
    benchmark:
        "benchmarks/results/rerank_setwise/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_of_kind("setwise"),
    conda:
        "../envs/rerank.yaml"
    threads: 2
    resources:
        mem_mb=lambda wc: reranker_spec(wc).get("mem_mb", 8000),
        runtime=lambda wc: reranker_spec(wc).get("runtime", 240),
        gpu=lambda wc: reranker_spec(wc).get("gpus", 0),
    params:
        spec=reranker_spec,
        depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/rerank.py"


rule rerank_listwise:
    """Listwise LLM windows (RankZephyr, FIRST): cruxflow's LLM layer or rank_llm."""
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        main="logs/rerank_listwise/{dataset}/{retriever}+{reranker}.log",
        calls="logs/rerank_listwise/{dataset}/{retriever}+{reranker}.calls.json",
    benchmark:
        "benchmarks/results/rerank_listwise/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_of_kind("listwise"),
    conda:
        listwise_env
    threads: 2
    resources:
        mem_mb=lambda wc: reranker_spec(wc).get("mem_mb", 8000),
        runtime=lambda wc: reranker_spec(wc).get("runtime", 240),
        gpu=lambda wc: reranker_spec(wc).get("gpus", 0),
    params:
        spec=reranker_spec,
        depth=RETRIEVAL["depth"],
        llm=LLM,
    script:
        "../workflow_scripts/rerank.py"
