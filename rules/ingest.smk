rule ingest:
    """Read a corpus into the data model, in the dataset's format and with its options (the
    format registry, cruxflow/data/ingest/formats.py, declares both)."""
    input:
        ingest_inputs,
    output:
        **dataset_files(INGESTED),
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
        options=ingest_options,
    script:
        "../workflow_scripts/ingest.py"


rule prepare:
    """The dataset the metrics read: the ingested corpus, completed by the LLM stages' outputs
    (topics with query and sub-questions, passages, answerability) when it is generated.
    """
    input:
        unpack(prepare_inputs),
    output:
        **dataset_files(),
    log:
        "logs/prepare/{dataset}.log",
    benchmark:
        "benchmarks/results/prepare/{dataset}.tsv"
    priority: 20
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../workflow_scripts/prepare.py"
