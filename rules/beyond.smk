# Metrics beyond CRUX, run on the user's own files (config: beyond): UDCG (Trappolini et al.
# 2025), the TREC 2024 RAG Track's support evaluation (Thakur et al. 2025) and Long2RAG's key
# point recall. The same functions back `cruxflow udcg`, `cruxflow support` and `cruxflow kpr`;
# every LLM call goes through the shared cache, and a job whose labels or scores are all in its
# input loads no model.


rule udcg:
    """Passage utilities and UDCG per context (Eq. 2-4); with protocol, Sec. 7.2's correlation
    with graded answers beside nDCG, MRR, MAP, P and Hits."""
    input:
        unpack(beyond_job("udcg")),
    output:
        expand("results/beyond/udcg/{{name}}/{f}", f=BEYOND_OUTPUTS["udcg"]),
    log:
        main="logs/beyond/udcg/{name}.log",
        calls="logs/beyond/udcg/{name}.calls.json",
    benchmark:
        "benchmarks/results/beyond/udcg/{name}.tsv"
    conda:
        BEYOND_LLM.env
    threads: BEYOND_LLM.threads
    resources:
        **BEYOND_LLM.resources,
    params:
        **BEYOND_LLM.params,
        options=beyond_options("udcg"),
    script:
        "../workflow_scripts/udcg.py"


rule support:
    """Weighted precision and recall of RAG answers' support (Sec. 3.4), from the labels in
    the file or judged by the LLM."""
    input:
        unpack(beyond_job("support")),
    output:
        expand("results/beyond/support/{{name}}/{f}", f=BEYOND_OUTPUTS["support"]),
    log:
        main="logs/beyond/support/{name}.log",
        calls="logs/beyond/support/{name}.calls.json",
    benchmark:
        "benchmarks/results/beyond/support/{name}.tsv"
    conda:
        BEYOND_LLM.env
    threads: BEYOND_LLM.threads
    resources:
        **BEYOND_LLM.resources,
    params:
        **BEYOND_LLM.params,
        options=beyond_options("support"),
    script:
        "../workflow_scripts/support.py"


rule kpr:
    """Key points from the documents, judged against each response: KPR (Eq. 2), KPP, KPF."""
    input:
        unpack(beyond_job("kpr")),
    output:
        expand("results/beyond/kpr/{{name}}/{f}", f=BEYOND_OUTPUTS["kpr"]),
    log:
        main="logs/beyond/kpr/{name}.log",
        calls="logs/beyond/kpr/{name}.calls.json",
    benchmark:
        "benchmarks/results/beyond/kpr/{name}.tsv"
    conda:
        BEYOND_LLM.env
    threads: BEYOND_LLM.threads
    resources:
        **BEYOND_LLM.resources,
    params:
        **BEYOND_LLM.params,
        options=beyond_options("kpr"),
    script:
        "../workflow_scripts/kpr.py"
