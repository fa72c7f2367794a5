"""Rule udcg: a file of questions with ranked passages -> utilities, UDCG, correlations."""

from pathlib import Path

from cruxflow.beyond.udcg import UdcgOptions, run_udcg
from cruxflow.workflow.job import llm_runner, setup_logging, write_call_stats

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
summary = run_udcg(sm.input.questions, Path(sm.output[0]).parent,
                   UdcgOptions(**sm.params.options),
                   runner=lambda: llm_runner(sm, f"udcg {sm.wildcards.name}"),
                   theta=sm.input.get("theta"), fit_theta=sm.input.get("fit_theta"))
log.info("UDCG over %s items: %s", summary.get("items"), summary.get("means"))
write_call_stats(sm, summary.get("llm"), log)
