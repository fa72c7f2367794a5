"""Rule report_requests: human summary -> open-ended report request x (Fig. 9)."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.stages.questions import report_requests
from cruxflow.workflow.job import dataset_dir, llm_runner, log_llm_stats, sampling, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
cfg = sm.params.llm
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
runner = llm_runner(sm, f"report requests {sm.wildcards.dataset}")
topics = list(dataset.topics.values())
queries = report_requests(topics, runner, attempts=cfg["attempts"],
                          sampling=sampling(cfg, "generation",
                                            max_tokens=cfg["report_request"]["max_tokens"]))
write_jsonl(sm.output[0], ({"topic_id": t, "query": q} for t, q in queries.items()))
log.info("%d report requests", len(queries))
log_llm_stats(sm, runner, log)
runner.close()
