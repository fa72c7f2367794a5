"""Rule kpr: questions, documents (or key points) and responses -> KPR, KPP, KPF."""

from pathlib import Path

from cruxflow.beyond.kpr import KprOptions, run_kpr
from cruxflow.llm import make_runner
from cruxflow.workflow.job import llm_runner, setup_logging, write_call_stats

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
options = dict(sm.params.options)
# Other backends of llm.backends for the judge and the filter (the paper judged with another
# model than it extracted with); they share the job's resources, so serve them (kind openai).
roles = {role: options.pop(f"{role}_backend", None) for role in ("judge", "filter")}


def role_runner(role):
    name = roles[role]
    if name is None:
        return None
    return lambda: make_runner(sm.params.llm, name, threads=sm.threads,
                               desc=f"kpr {role} {sm.wildcards.name}")


summary = run_kpr(sm.input.questions, Path(sm.output[0]).parent, KprOptions(**options),
                  key_points=sm.input.get("key_points"),
                  runner=lambda: llm_runner(sm, f"kpr {sm.wildcards.name}"),
                  judge_runner=role_runner("judge"), filter_runner=role_runner("filter"))
log.info("KPR over %d questions (%s pipeline): %s", summary["n_questions"],
         summary["pipeline"]["pipeline"], {k: summary.get(k) for k in ("KPR", "KPP", "KPF")})
write_call_stats(sm, summary.get("llm"), log)
