# Second stages over the top-100 of every first stage (paper Sec. 4.1). Each reranker of
# retrieval.rerankers is matched to a rule by the environment its kind runs in
# (cruxflow/rerank/registry.py, a wildcard constraint): the torch models in envs/rerank.yaml,
# the LLM rerankers (listwise windows, LANCER) in their LLM backend's environment or rank_llm's.


rule rerank:
    """The torch rerankers (cross-encoder, monoT5, Setwise heapsort; MMR where its entry picks
    some first stages), one job per first stage: the reranker's kind picks the model in one
    script."""
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
        reranker=rerankers_in_env("rerank"),
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
        depth=reranker_depth,
        run_depth=RETRIEVAL["depth"],
    script:
        "../workflow_scripts/rerank.py"


if RETRIEVERS:

    rule rerank_pooled:
        """The torch rerankers whose kind works per dataset (registry.per_dataset: MMR), over
        every first stage in one job: the model loads once and a passage that several first
        stages retrieve is encoded once."""
        input:
            **dataset_files(),
            collection=collection,
            runs=[f"results/runs/{{dataset}}/{r}.run" for r in RETRIEVERS],
        output:
            [f"results/runs/{{dataset}}/{r}+{{reranker}}.run" for r in RETRIEVERS],
        log:
            "logs/rerank/{dataset}/{reranker}.log",
        benchmark:
            "benchmarks/results/rerank/{dataset}/{reranker}.tsv"
        wildcard_constraints:
            reranker=rerankers_in_env("rerank", per_dataset=True),
        priority: 10
        conda:
            "../envs/rerank.yaml"
        threads: 2
        resources:
            mem_mb=reranker_resource("mem_mb", 8000),
            runtime=reranker_resource("runtime", 240 * len(RETRIEVERS)),
            gpu=reranker_resource("gpus", 0),
        params:
            spec=reranker_spec,
            depth=reranker_depth,
            run_depth=RETRIEVAL["depth"],
        script:
            "../workflow_scripts/rerank.py"


rule rerank_llm:
    """The LLM rerankers: listwise windows (RankZephyr, FIRST; cruxflow's LLM layer or
    rank_llm) and LANCER's sub-question coverage, through cruxflow's cached LLM layer.
    """
    input:
        **dataset_files(),
        collection=collection,
        run="results/runs/{dataset}/{retriever}.run",
    output:
        "results/runs/{dataset}/{retriever}+{reranker}.run",
    log:
        main="logs/rerank_llm/{dataset}/{retriever}+{reranker}.log",
        calls="logs/rerank_llm/{dataset}/{retriever}+{reranker}.calls.json",
    benchmark:
        "benchmarks/results/rerank_llm/{dataset}/{retriever}+{reranker}.tsv"
    wildcard_constraints:
        reranker=rerankers_in_env("llm"),
    priority: 10
    conda:
        reranker_env
    threads: 2
    resources:
        mem_mb=reranker_resource("mem_mb", 8000),
        runtime=reranker_resource("runtime", 240),
        gpu=reranker_resource("gpus", 0),
    params:
        spec=reranker_spec,
        depth=reranker_depth,
        run_depth=RETRIEVAL["depth"],
        llm=LLM,
    script:
        "../workflow_scripts/rerank.py"
