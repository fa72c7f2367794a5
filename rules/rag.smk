# RAG generation from every retrieval context, the judged final results y, and the paper's
# tables and figures (Sec. 4; Tables 1-3, Figure 5). Reports and their ratings go through the
# shared LLM cache like every other LLM call.


rule rag_generate:
    """One report per topic from a system's contexts of size k, bounded by token(Z*)."""
    input:
        unpack(rag_generate_inputs),
    output:
        "results/rag/{dataset}/eta{eta}/reports/{system}.k{k}.jsonl",
    log:
        main="logs/rag_generate/{dataset}/eta{eta}/{system}.k{k}.log",
        calls="logs/rag_generate/{dataset}/eta{eta}/{system}.k{k}.calls.json",
    benchmark:
        "benchmarks/results/rag_generate/{dataset}/eta{eta}/{system}.k{k}.tsv"
    conda:
        GENERATOR_LLM.env
    threads: GENERATOR_LLM.threads
    resources:
        **GENERATOR_LLM.resources,
    params:
        **GENERATOR_LLM.params,
        tokenizer=METRICS["tokenizer"],
        max_tokens=RAG["max_tokens"],
        max_topics=RAG["max_topics"],
        max_context_words=RAG["max_context_words"],
    script:
        "../workflow_scripts/rag_generate.py"


rule rag_judge:
    """Rate every report against every sub-question of its topic (Fig. 8's prompt)."""
    input:
        **dataset_files(),
        reports="results/rag/{dataset}/eta{eta}/reports/{system}.k{k}.jsonl",
    output:
        "results/rag/{dataset}/eta{eta}/ratings/{system}.k{k}.jsonl",
    log:
        main="logs/rag_judge/{dataset}/eta{eta}/{system}.k{k}.log",
        calls="logs/rag_judge/{dataset}/eta{eta}/{system}.k{k}.calls.json",
    benchmark:
        "benchmarks/results/rag_judge/{dataset}/eta{eta}/{system}.k{k}.tsv"
    conda:
        JUDGE_LLM.env
    threads: JUDGE_LLM.threads
    resources:
        **JUDGE_LLM.resources,
    params:
        **JUDGE_LLM.params,
    script:
        "../workflow_scripts/rag_judge.py"


rule sample_runs:
    """Figure 5's random contexts: samples.n draws of samples.size passages from the top
    samples.depth of a first stage, per topic, seeded, written as runs."""
    input:
        run="results/runs/{dataset}/{retriever}.run",
    output:
        expand(
            "results/runs/{{dataset}}/samples/{{retriever}}.{sample}.run",
            sample=SAMPLE_IDS,
        ),
    log:
        "logs/sample_runs/{dataset}/{retriever}.log",
    benchmark:
        "benchmarks/results/sample_runs/{dataset}/{retriever}.tsv"
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        size=SAMPLES["size"],
        depth=SAMPLES["depth"],
        seed=SAMPLES["seed"],
    script:
        "../workflow_scripts/sample_runs.py"


rule rag_metrics:
    """Per query: the context metrics of Z beside Cov(y) and Den(y), for every threshold of
    rag.etas (the same reports and contexts rescored); "main" adds #2, the human summary.
    """
    input:
        unpack(rag_metrics_inputs),
    output:
        "results/rag/{dataset}/eta{eta}/per_query.{which}.tsv",
    log:
        "logs/rag_metrics/{dataset}/eta{eta}/{which}.log",
    benchmark:
        "benchmarks/results/rag_metrics/{dataset}/eta{eta}/{which}.tsv"
    wildcard_constraints:
        which="main|samples",
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        pairs=lambda wc: rag_pairs(wc.dataset, wc.which),
        etas=lambda wc: sorted({int(wc.eta), *RAG["etas"]}),
        max_topics=RAG["max_topics"],
        alpha=METRICS["alpha"],
        density_weight=METRICS["density_weight"],
        tokenizer=METRICS["tokenizer"],
        relevance_grades=METRICS["relevance_grades"],
    script:
        "../workflow_scripts/rag_metrics.py"


rule paper_tables:
    """Tables 1-3 (CSV, Markdown, LaTeX), paired tests between systems, Cov(Z) vs Cov(y)."""
    input:
        expand(
            "results/rag/{dataset}/eta{eta}/per_query.main.tsv",
            dataset=RAG["datasets"],
            eta=ETA,
        ),
    output:
        **{
            f"{t}_{ext}": (
                report(
                    f"{TABLES}/{t}.{ext}",
                    caption=f"../report/{t}.rst",
                    category="Tables",
                    labels={"table": t, "format": ext},
                )
                if ext == "csv"
                else f"{TABLES}/{t}.{ext}"
            )
            for t in ("table1", "table2", "table3")
            for ext in ("csv", "md", "tex")
        },
        significance_csv=report(
            f"{TABLES}/significance.csv",
            caption="../report/significance.rst",
            category="Tables",
            labels={"table": "paired tests", "format": "csv"},
        ),
        significance_md=f"{TABLES}/significance.md",
        manifest=f"{TABLES}/manifest.json",
        scatter=report(
            "results/figures/cov_z_vs_cov_y.png",
            caption="../report/scatter.rst",
            category="Figures",
            labels={"figure": "Cov(Z) vs Cov(y)", "view": "all rows"},
        ),
        scatter_zoom=report(
            "results/figures/cov_z_vs_cov_y.zoom.png",
            caption="../report/scatter.rst",
            category="Figures",
            labels={"figure": "Cov(Z) vs Cov(y)", "view": "pipelines"},
        ),
    log:
        "logs/paper_tables.log",
    benchmark:
        "benchmarks/results/paper_tables.tsv"
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        eta=ETA,
        etas=sorted({ETA, *RAG["etas"]}),
        bootstrap=RAG["bootstrap"],
        significance=RAG["significance"],
        seed=METRICS["random_seed"],
        captions=TABLE_CAPTIONS,
        tokenizer=METRICS["tokenizer"],
        settings=workflow_config.parity_settings(config),
    script:
        "../workflow_scripts/paper_tables.py"


rule figure5:
    """Figure 5: Kendall tau between metrics over the randomly sampled contexts."""
    input:
        "results/rag/{dataset}/eta{eta}/per_query.samples.tsv",
    output:
        tsv="results/figures/{dataset}/eta{eta}/figure5.tsv",
        png=report(
            "results/figures/{dataset}/eta{eta}/figure5.png",
            caption="../report/figure5.rst",
            category="Figures",
            labels={"figure": "5: tau between metrics", "dataset": "{dataset}"},
        ),
    log:
        "logs/figure5/{dataset}/eta{eta}.log",
    benchmark:
        "benchmarks/results/figure5/{dataset}/eta{eta}.tsv"
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        eta=lambda wc: int(wc.eta),
    script:
        "../workflow_scripts/figure5.py"


rule agreement_reports:
    """Figure 4: LLM-judged vs human coverage of the RAG reports (Spearman rho per
    annotator, Fleiss' kappa), from the dataset's human_labels.reports file (T1)."""
    input:
        **dataset_files(),
        judgments="results/judgments/{dataset}/eta{eta}/judgments.jsonl",
        per_query="results/rag/{dataset}/eta{eta}/per_query.main.tsv",
        labels=lambda wc: human_labels(wc.dataset, "reports"),
    output:
        summary="results/agreement/{dataset}/eta{eta}/reports.json",
        coverage="results/agreement/{dataset}/eta{eta}/human_coverage.tsv",
        spearman=report(
            "results/agreement/{dataset}/eta{eta}/spearman.tsv",
            caption="../report/agreement.rst",
            category="Agreement",
            labels={
                "table": "Spearman rho, LLM vs human Cov(y)",
                "dataset": "{dataset}",
            },
        ),
        png=report(
            "results/agreement/{dataset}/eta{eta}/figure4.png",
            caption="../report/agreement.rst",
            category="Agreement",
            labels={"figure": "4: LLM vs human coverage", "dataset": "{dataset}"},
        ),
    log:
        "logs/agreement_reports/{dataset}/eta{eta}.log",
    benchmark:
        "benchmarks/results/agreement_reports/{dataset}/eta{eta}.tsv"
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow_scripts/agreement_reports.py"


rule agreement_passages:
    """App. A.2, T2: precision/recall of the dataset's LLM ratings against human graded
    ratings of (passage, sub-question) pairs (human_labels.passages)."""
    input:
        **dataset_files(),
        labels=lambda wc: human_labels(wc.dataset, "passages"),
    output:
        summary="results/agreement/{dataset}/eta{eta}/passages.json",
        table=report(
            "results/agreement/{dataset}/eta{eta}/judge_precision_recall.tsv",
            caption="../report/agreement.rst",
            category="Agreement",
            labels={"table": "LLM judge precision/recall", "dataset": "{dataset}"},
        ),
        confusion="results/agreement/{dataset}/eta{eta}/judge_confusion.tsv",
    log:
        "logs/agreement_passages/{dataset}/eta{eta}.log",
    benchmark:
        "benchmarks/results/agreement_passages/{dataset}/eta{eta}.tsv"
    conda:
        "../envs/plot.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        eta=lambda wc: int(wc.eta),
    script:
        "../workflow_scripts/agreement_passages.py"
