"""Rule agreement_reports: human T1 labels vs the LLM's Cov(y) of the same reports (Fig. 4)."""

import pandas as pd

from cruxflow.data.io import write_json
from cruxflow.data.model import Dataset
from cruxflow.data.names import ORACLE_K
from cruxflow.data.outputs import atomic_write
from cruxflow.metrics.judgments import read_judgments
from cruxflow.paper.agreement import agreement_report, plot_agreement
from cruxflow.paper.human_labels import read_report_label_files
from cruxflow.workflow.job import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
eta = int(sm.wildcards.eta)
# our T1 format or the labeling tool's exports (a file, or a folder of one file per annotator)
topics = Dataset.load(dataset_dir(sm), with_passages=False).topics
labels = read_report_label_files([sm.input.labels], topics=topics)
kept = {t: j.kept for t, j in read_judgments(sm.input.judgments).items()}
per_query = pd.read_csv(sm.input.per_query, sep="\t", dtype={"k": str, "topic": str})
llm_cov = per_query[(per_query["eta"] == eta) & (per_query["k"] == ORACLE_K)][
    ["topic", "system", "Cov_y"]]
result = agreement_report(labels=labels, kept=kept, llm_cov=llm_cov, eta=eta)
for name in ("human_coverage", "spearman"):  # annotator_spearman is in the summary
    with atomic_write(getattr(sm.output, "coverage" if name == "human_coverage" else name)) as f:
        result.tables[name].to_csv(f, sep="\t", index=False, float_format="%.4f")
write_json(sm.output.summary, result.summary)
plot_agreement(result.tables["human_coverage"], llm_cov, sm.output.png)
log.info("T1: %s", result.summary.get("t1"))
