rule judge_holes:
    """Rate the passages in the top k of the runs of holes.<dataset> that no original rating
    rates for their topic (one shard of the topics), as added ratings: cruxflow judge's job
    (docs/judge.md). The judgments and the metrics read them beside the dataset's.
    """
    input:
        **dataset_files(),
        collection=collection,
        runs=holes_runs,
    output:
        JUDGED,
    log:
        main="logs/judge_holes/{dataset}/shard{shard}-of{shards}.log",
        calls="logs/judge_holes/{dataset}/shard{shard}-of{shards}.calls.json",
    benchmark:
        "benchmarks/results/judge_holes/{dataset}/shard{shard}-of{shards}.tsv"
    priority: 10
    conda:
        HOLES_LLM.env
    threads: HOLES_LLM.threads
    resources:
        **HOLES_LLM.resources,
    params:
        **HOLES_LLM.params,
        systems=lambda wc: holes_systems(wc.dataset),
        k=lambda wc: HOLES[wc.dataset]["k"],
        rating_prompt=lambda wc: HOLES[wc.dataset]["rating_prompt"],
    script:
        "../workflow_scripts/judge_holes.py"


rule judgments:
    """Filter sub-questions, select P** = Z*, write qrels, diversity qrels and the oracle run
    (from the dataset's ratings and the added ones of its holes)."""
    input:
        **dataset_files(),
        judged=judged_files,
    output:
        judgments="results/judgments/{dataset}/eta{eta}/judgments.jsonl",
        relevance="results/judgments/{dataset}/eta{eta}/qrels.relevance.txt",
        required="results/judgments/{dataset}/eta{eta}/qrels.required.txt",
        diversity="results/judgments/{dataset}/eta{eta}/qrels.diversity.txt",
        oracle="results/judgments/{dataset}/eta{eta}/oracle.run",
        summary="results/judgments/{dataset}/eta{eta}/summary.json",
    log:
        "logs/judgments/{dataset}/eta{eta}.log",
    benchmark:
        "benchmarks/results/judgments/{dataset}/eta{eta}.tsv"
    priority: 10
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        alpha=METRICS["alpha"],
        relevance_grades=METRICS["relevance_grades"],
    script:
        "../workflow_scripts/judgments.py"


rule reference_runs:
    """Seeded random rankings (whole collection, and P* only) to read the metrics against;
    P* with the added ratings of the dataset's holes."""
    input:
        **dataset_files(),
        judged=judged_files,
    output:
        random="results/runs/{dataset}/random.run",
        random_relevant="results/runs/{dataset}/random-relevant.run",
    log:
        "logs/reference_runs/{dataset}.log",
    benchmark:
        "benchmarks/results/reference_runs/{dataset}.tsv"
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        seed=METRICS["random_seed"],
        depth=100,
    script:
        "../workflow_scripts/reference_runs.py"
