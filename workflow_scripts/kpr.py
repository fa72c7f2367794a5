"""Rule kpr: questions, documents (or key points) and responses -> KPR, KPP, KPF."""

from pathlib import Path

from cruxflow.beyond.kpr import KprOptions, run_kpr
from cruxflow.workflow.job import llm_runner, setup_logging, write_call_stats

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
summary = run_kpr(sm.input.input, Path(sm.output[0]).parent, KprOptions(**sm.params.options),
                  key_points=sm.input.get("key_points"),
                  runner=lambda: llm_runner(sm, f"kpr {sm.wildcards.name}"))
log.info("KPR over %d questions: %s", summary["n_questions"],
         {k: summary.get(k) for k in ("KPR", "KPP", "KPF")})
write_call_stats(sm, summary.get("llm"), log)
