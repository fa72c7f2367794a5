"""Rule support: RAG answers with citations -> weighted support precision and recall."""

from pathlib import Path

from cruxflow.beyond.support import SupportOptions, evaluate_support
from cruxflow.workflow.job import llm_runner, setup_logging, write_call_stats

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
summary = evaluate_support(sm.input.answers, Path(sm.output[0]).parent,
                           SupportOptions(**sm.params.options),
                           labels=sm.input.get("labels"), passages=sm.input.get("passages"),
                           topics=sm.input.get("topics"),
                           runner=lambda: llm_runner(sm, f"support {sm.wildcards.name}"))
log.info("%d runs over %d topics: mean weighted precision/recall %s", summary["runs"],
         summary["topics"], summary["mean_over_runs"])
write_call_stats(sm, summary.get("llm"), log)
