rule judgments:
    """Filter sub-questions, select P** = Z*, write qrels, diversity qrels and the oracle run."""
    input:
        **dataset_files(),
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
    """Seeded random rankings (whole collection, and P* only) to read the metrics against."""
    input:
        **dataset_files(),
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
