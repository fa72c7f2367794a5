"""Rule subquestions: human summary -> n sub-questions (Fig. 6)."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.stages.questions import subquestions
from cruxflow.workflow.job import dataset_dir, llm_runner, log_llm_stats, sampling, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
cfg = sm.params.llm
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
runner = llm_runner(sm, f"sub-questions {sm.wildcards.dataset}")
questions = subquestions(list(dataset.topics.values()), runner, sm.params.n,
                         attempts=cfg["attempts"],
                         sampling=sampling(cfg, "generation",
                                           max_tokens=cfg["subquestions"]["max_tokens"]))
write_jsonl(sm.output[0], ({"topic_id": t, "questions": q} for t, q in questions.items()))
counts = [len(q) for q in questions.values()]
log.info("%d topics, %d sub-questions (min %d, max %d per topic; asked for %d)",
         len(counts), sum(counts), min(counts, default=0), max(counts, default=0), sm.params.n)
log_llm_stats(sm, runner, log)
runner.close()
