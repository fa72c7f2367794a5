rule contexts:
    """Figure 5's sampled runs: the context Z of every judged topic, the run's top k (the
    systems that context_metrics scores get theirs from it)."""
    input:
        judgments="results/judgments/{dataset}/eta{eta}/judgments.jsonl",
        run=run_file,
    output:
        "results/contexts/{dataset}/eta{eta}/{system}.k{k}.jsonl",
    log:
        "logs/contexts/{dataset}/eta{eta}/{system}.k{k}.log",
    benchmark:
        "benchmarks/results/contexts/{dataset}/eta{eta}/{system}.k{k}.tsv"
    wildcard_constraints:
        system=SAMPLE_SYSTEM.pattern,
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow_scripts/contexts.py"


rule context_metrics:
    """Score one system's contexts (every configured size k): CRUX and IR metrics per query;
    and write its context Z of every size that the metrics or the RAG stage use (one job per
    system, not one per size: the demo's 57 contexts jobs were a third of its jobs)."""
    input:
        **dataset_files(),
        judged=judged_files,
        collection=collection,
        judgments="results/judgments/{dataset}/eta{eta}/judgments.jsonl",
        run=run_file,
    output:
        per_query="results/metrics/{dataset}/eta{eta}/per_query/{system}.tsv",
        contexts=expand(
            "results/contexts/{{dataset}}/eta{{eta}}/{{system}}.k{k}.jsonl",
            k=CONTEXT_FILE_SIZES,
        ),
    log:
        "logs/context_metrics/{dataset}/eta{eta}/{system}.log",
    benchmark:
        "benchmarks/results/context_metrics/{dataset}/eta{eta}/{system}.tsv"
    wildcard_constraints:
        system=SCORED_SYSTEM,
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
        context_files=CONTEXT_FILE_SIZES,
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
