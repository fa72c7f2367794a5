"""Rule agreement_passages: human T2 ratings vs the dataset's LLM ratings (App. A.2)."""

from cruxflow.data.io import write_json
from cruxflow.data.model import Dataset
from cruxflow.data.outputs import atomic_write
from cruxflow.paper.agreement import agreement_report
from cruxflow.paper.human_labels import read_passage_label_files
from cruxflow.workflow.job import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
# our T2 format or the labeling tool's exports (a file, or a folder of one file per annotator)
human, not_labelled = read_passage_label_files([sm.input.labels])
result = agreement_report(human_ratings=human, llm_ratings=dataset.ratings, eta=sm.params.eta)
result.summary["t2_not_labelled"] = not_labelled
with atomic_write(sm.output.table) as f:
    result.tables["judge_precision_recall"].to_csv(f, sep="\t", index=False, float_format="%.4f")
with atomic_write(sm.output.confusion) as f:
    result.tables["judge_confusion"].to_csv(f, sep="\t")
write_json(sm.output.summary, result.summary)
log.info("T2: %s", result.summary.get("t2"))
