# The cost plan (docs/plan.md): requests, cached answers, tokens and time of every LLM stage,
# before any call. Not part of `all`: ask for it with `snakemake plan`.


rule plan:
    """What the LLM stages of this config will cost, from its inputs; loads no model."""
    output:
        json="results/plan.json",
        text="results/plan.txt",
    log:
        "logs/plan.log",
    benchmark:
        "benchmarks/results/plan.tsv"
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        config=config,
    script:
        "../workflow_scripts/plan.py"
