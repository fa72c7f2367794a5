"""Rule plan: the workflow's config and inputs -> results/plan.json and results/plan.txt."""

import time

from cruxflow.data.io import write_json
from cruxflow.data.outputs import atomic_write
from cruxflow.workflow.job import setup_logging
from cruxflow.workflow.plan import make_plan
from cruxflow.workflow.plan.rates import table_rate
from cruxflow.workflow.plan.report import Rates, plan_json, plan_table

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
start = time.perf_counter()
plan = make_plan(sm.params.config, root=".")
took = time.perf_counter() - start
# The rate table's H100 rates, one instance of each backend (`cruxflow plan` takes --gpus,
# --gpu-kind and --calibrate).
specs = sm.params.config["llm"]["backends"]
threads = sm.params.config["llm"]["threads"]
rates = Rates(backends={s.backend: table_rate(specs[s.backend], "h100", threads=threads)
                        for s in plan.stages})
write_json(sm.output.json, plan_json(plan, rates, took))
with atomic_write(sm.output.text) as f:
    f.write(plan_table(plan, rates))
log.info("planned %d LLM stages in %.1f s", len(plan.stages), took)
