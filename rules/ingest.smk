rule ingest:
    """Read a raw corpus (Multi-News, DUC 2004 or a CRUX release) into the data model."""
    input:
        lambda wc: DATASETS[wc.dataset]["input"],
    output:
        **dataset_files(),
    log:
        "logs/ingest/{dataset}.log",
    benchmark:
        "benchmarks/results/ingest/{dataset}.tsv"
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        format=lambda wc: DATASETS[wc.dataset]["format"],
        prefix=lambda wc: DATASETS[wc.dataset]["prefix"],
        id_scheme=lambda wc: DATASETS[wc.dataset]["id_scheme"],
        min_docs=lambda wc: DATASETS[wc.dataset]["min_docs"],
        encoding=lambda wc: DATASETS[wc.dataset]["encoding"],
        summary_length=lambda wc: DATASETS[wc.dataset]["summary_length"],
        reference=lambda wc: DATASETS[wc.dataset]["reference"],
        distractors=lambda wc: DATASETS[wc.dataset]["distractors"],
    script:
        "../workflow_scripts/ingest.py"
