"""Rule agreement_passages: human T2 ratings vs the dataset's LLM ratings (App. A.2)."""

from cruxflow.data.io import atomic_write, write_json
from cruxflow.data.model import Dataset
from cruxflow.paper.agreement import agreement_report, read_passage_ratings
from cruxflow.workflow.job import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
result = agreement_report(human_ratings=read_passage_ratings(sm.input.labels),
                          llm_ratings=dataset.ratings, eta=sm.params.eta)
with atomic_write(sm.output.table) as f:
    result.tables["judge_precision_recall"].to_csv(f, sep="\t", index=False, float_format="%.4f")
with atomic_write(sm.output.confusion) as f:
    result.tables["judge_confusion"].to_csv(f, sep="\t")
write_json(sm.output.summary, result.summary)
log.info("T2: %s", result.summary.get("t2"))
