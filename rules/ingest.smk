rule ingest:
    """Read a raw corpus (Multi-News, DUC 2004 or a CRUX release) into the data model."""
    input:
        lambda wc: DATASETS[wc.dataset]["input"],
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
        prefix=lambda wc: DATASETS[wc.dataset]["prefix"],
        id_scheme=lambda wc: DATASETS[wc.dataset]["id_scheme"],
        min_docs=lambda wc: DATASETS[wc.dataset]["min_docs"],
        encoding=lambda wc: DATASETS[wc.dataset]["encoding"],
        summary_length=lambda wc: DATASETS[wc.dataset]["summary_length"],
        reference=lambda wc: DATASETS[wc.dataset]["reference"],
        distractors=lambda wc: DATASETS[wc.dataset]["distractors"],
        corpus=lambda wc: DATASETS[wc.dataset]["corpus"],
        max_topics=lambda wc: DATASETS[wc.dataset]["max_topics"],
        count_empty_documents=lambda wc: DATASETS[wc.dataset]["count_empty_documents"],
        chunk_documents=lambda wc: DATASETS[wc.dataset]["chunk_documents"],
        # the passage stage's sizes: one place says where long documents are cut
        max_document_words=LLM["passages"]["max_document_words"],
        chunk_words=LLM["passages"]["chunk_words"],
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
