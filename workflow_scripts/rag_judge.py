"""Rule rag_judge: reports -> 0-5 answerability ratings for every sub-question (Fig. 8)."""

from cruxflow.data.io import iter_jsonl, write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.rag.reports import judge_reports
from cruxflow.stages.ratings import rating_options
from cruxflow.workflow.job import dataset_dir, llm_runner, log_llm_stats, sampling, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
wc = sm.wildcards
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
reports = [obj for _, obj in iter_jsonl(sm.input.reports)]
runner = llm_runner(sm, f"judge {wc.dataset} {wc.system} k={wc.k}")
rated = judge_reports([(dataset.topics[r["topic_id"]].questions, r["report"]) for r in reports],
                      runner, sampling=sampling(sm.params.llm, "judgment"),
                      **rating_options(sm.params.llm))
write_jsonl(sm.output[0], ({"topic_id": r["topic_id"], "ratings": ratings, "expected": expected}
                           for r, (ratings, expected) in zip(reports, rated, strict=True)))
log.info("%d reports rated against %d questions", len(reports),
         sum(len(x[0]) for x in rated))
log_llm_stats(sm, runner, log)
runner.close()
