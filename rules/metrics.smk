rule contexts:
    """The retrieval context Z of every judged topic: a system's top-k (k = |Z*|, 10, 20...)."""
    input:
        judgments="results/judgments/{dataset}/eta{eta}/judgments.jsonl",
        run=run_file,
    output:
        "results/contexts/{dataset}/eta{eta}/{system}.k{k}.jsonl",
    log:
        "logs/contexts/{dataset}/eta{eta}/{system}.k{k}.log",
    benchmark:
        "benchmarks/results/contexts/{dataset}/eta{eta}/{system}.k{k}.tsv"
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow_scripts/contexts.py"


rule context_metrics:
    """Score one system's contexts (every configured size k): CRUX and IR metrics per query."""
    input:
        **dataset_files(),
        judged=judged_files,
        collection=collection,
        judgments="results/judgments/{dataset}/eta{eta}/judgments.jsonl",
        run=run_file,
    output:
        per_query="results/metrics/{dataset}/eta{eta}/per_query/{system}.tsv",
    log:
        "logs/context_metrics/{dataset}/eta{eta}/{system}.log",
    benchmark:
        "benchmarks/results/context_metrics/{dataset}/eta{eta}/{system}.tsv"
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        eta=lambda wc: int(wc.eta),
        alpha=METRICS["alpha"],
        density_weight=METRICS["density_weight"],
        tokenizer=METRICS["tokenizer"],
        relevance_grades=METRICS["relevance_grades"],
        context_sizes=CONTEXT_SIZES,
    script:
        "../workflow_scripts/context_metrics.py"


rule context_metrics_table:
    """One table per dataset: every system x context size, means over topics."""
    input:
        lambda wc: expand(
            "results/metrics/{{dataset}}/eta{{eta}}/per_query/{system}.tsv",
            system=systems(wc.dataset),
        ),
    output:
        tsv="results/metrics/{dataset}/eta{eta}/context_metrics.tsv",
        markdown="results/metrics/{dataset}/eta{eta}/context_metrics.md",
        manifest="results/metrics/{dataset}/eta{eta}/manifest.json",
    log:
        "logs/context_metrics_table/{dataset}/eta{eta}.log",
    benchmark:
        "benchmarks/results/context_metrics_table/{dataset}/eta{eta}.tsv"
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        tokenizer=METRICS["tokenizer"],
        settings=workflow_config.parity_settings(config),
    script:
        "../workflow_scripts/context_metrics_table.py"
