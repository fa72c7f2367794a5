# Metrics beyond CRUX, run on the user's own files (config: beyond): UDCG (Trappolini et al.
# 2025), the TREC 2024 RAG Track's support evaluation (Thakur et al. 2025) and Long2RAG's key
# point recall. The same functions back `cruxflow udcg`, `cruxflow support` and `cruxflow kpr`;
# every LLM call goes through the shared cache, and a job whose labels or scores are all in its
# input loads no model. One definition, one rule per metric (named after it):
#   udcg:    passage utilities and UDCG per context (Eq. 2-4); with protocol, Sec. 7.2's
#            correlation with graded answers beside nDCG, MRR, MAP, P and Hits;
#   support: weighted precision and recall of RAG answers' support (Sec. 3.4), from the labels
#            in the file or judged by the LLM;
#   kpr:     key points from the documents, judged against each response: KPR (Eq. 2), KPP, KPF.

for metric in ("udcg", "support", "kpr"):

    rule:
        """A metric beyond CRUX over one beyond.<metric>.<name> job (see above)."""
        name:
            metric
        input:
            unpack(beyond_job(metric)),
        output:
            [f"results/beyond/{metric}/{{name}}/{f}" for f in BEYOND_OUTPUTS[metric]],
        log:
            main=f"logs/beyond/{metric}/{{name}}.log",
            calls=f"logs/beyond/{metric}/{{name}}.calls.json",
        benchmark:
            f"benchmarks/results/beyond/{metric}/{{name}}.tsv"
        conda:
            BEYOND_LLM.env
        threads: BEYOND_LLM.threads
        resources:
            **BEYOND_LLM.resources,
        params:
            **BEYOND_LLM.params,
            options=beyond_options(metric),
            # the script path is read when the job runs, after the loop has moved on: it
            # takes the metric from the params, bound here
            metric=metric,
        script:
            "../workflow_scripts/{params.metric}.py"
