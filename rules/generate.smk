# The LLM stages (paper Sec. 3.2, App. A.1): decontextualized passages, the open-ended report
# request, sub-questions and answerability ratings. Every call goes through the shared cache
# (llm.cache), so a re-run or a resumed crash pays only for what is missing. The passage and
# rating stages are split into llm.shards jobs; GPU backends ask for resources gpu.
# Priorities: these stages (20) and the retrieval behind the contexts (10) gate every table;
# the scheduler runs them before jobs nothing waits for (beyond-CRUX metrics, direct-prompting
# reports). Without them the demo's encoders waited 2 minutes behind such jobs.


rule passages:
    """Decontextualize one shard of the documents into standalone passages (Fig. 7)."""
    input:
        **dataset_files(INGESTED),
    output:
        GENERATED_PASSAGES,
    log:
        main="logs/passages/{dataset}/shard{shard}-of{shards}.log",
        calls="logs/passages/{dataset}/shard{shard}-of{shards}.calls.json",
        checks="logs/passages/{dataset}/shard{shard}-of{shards}.checks.json",
    benchmark:
        "benchmarks/results/passages/{dataset}/shard{shard}-of{shards}.tsv"
    priority: 20
    conda:
        DATASET_LLM.env
    threads: DATASET_LLM.threads
    resources:
        **DATASET_LLM.resources,
    params:
        **DATASET_LLM.params,
    script:
        "../workflow_scripts/passages.py"


rule report_requests:
    """The open-ended query x of every topic, from its human summary (Fig. 9)."""
    input:
        **dataset_files(INGESTED),
    output:
        "results/generated/{dataset}/report_requests.jsonl",
    log:
        main="logs/report_requests/{dataset}.log",
        calls="logs/report_requests/{dataset}.calls.json",
        checks="logs/report_requests/{dataset}.checks.json",
    benchmark:
        "benchmarks/results/report_requests/{dataset}.tsv"
    priority: 20
    conda:
        DATASET_LLM.env
    threads: DATASET_LLM.threads
    resources:
        **DATASET_LLM.resources,
    params:
        **DATASET_LLM.params,
    script:
        "../workflow_scripts/report_requests.py"


rule subquestions:
    """n sub-questions per topic from its human summary (Fig. 6), or from its report request
    with the CRUX authors' Researchy prompt (questions_from: request)."""
    input:
        unpack(subquestion_inputs),
    output:
        "results/generated/{dataset}/subquestions.jsonl",
    log:
        main="logs/subquestions/{dataset}.log",
        calls="logs/subquestions/{dataset}.calls.json",
        checks="logs/subquestions/{dataset}.checks.json",
    benchmark:
        "benchmarks/results/subquestions/{dataset}.tsv"
    priority: 20
    conda:
        DATASET_LLM.env
    threads: DATASET_LLM.threads
    resources:
        **DATASET_LLM.resources,
    params:
        **DATASET_LLM.params,
        n=lambda wc: DATASETS[wc.dataset]["n_questions"],
        questions_from=lambda wc: DATASETS[wc.dataset]["questions_from"],
    script:
        "../workflow_scripts/subquestions.py"


rule ratings:
    """Rate every (passage, sub-question) pair of one shard's topics, and each topic's human
    summary, on the 0-5 answerability scale (Fig. 8). Shards are cut by pairs, so each reads
    every passage shard. With questions_from: request, the summaries only: the passages rated
    are those of the pool (rule judge_holes)."""
    input:
        **dataset_files(INGESTED),
        generated_passages=shard_files(GENERATED_PASSAGES),
        subquestions="results/generated/{dataset}/subquestions.jsonl",
    output:
        ratings=GENERATED_RATINGS,
        references=GENERATED_REFERENCE_RATINGS,
    log:
        main="logs/ratings/{dataset}/shard{shard}-of{shards}.log",
        calls="logs/ratings/{dataset}/shard{shard}-of{shards}.calls.json",
    benchmark:
        "benchmarks/results/ratings/{dataset}/shard{shard}-of{shards}.tsv"
    priority: 20
    conda:
        DATASET_LLM.env
    threads: DATASET_LLM.threads
    resources:
        **DATASET_LLM.resources,
    params:
        **DATASET_LLM.params,
        questions_from=lambda wc: DATASETS[wc.dataset]["questions_from"],
    script:
        "../workflow_scripts/ratings.py"
