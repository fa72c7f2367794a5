# Second stages over the top-100 of every first stage (paper Sec. 4.1). Each reranker of
# retrieval.rerankers is matched to a rule by its kind (a wildcard constraint): listwise
# rerankers have their own, which calls an LLM backend or rank_llm in that one's environment.


rule rerank:
    """MMR over a sentence encoder (diversity), pointwise cross-encoder and monoT5 scores, or
    Setwise heapsort with Flan-T5: the reranker's kind picks the model in one script."""
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        "logs/rerank/{dataset}/{retriever}+{reranker}.log",
    benchmark:
        "benchmarks/results/rerank/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_of_kind("mmr", "cross-encoder", "monot5", "setwise"),
    priority: 10
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
    priority: 10
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
