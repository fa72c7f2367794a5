"""Rule plan: the workflow's config and inputs -> results/plan.json and results/plan.txt."""

import time

from cruxflow.data.io import atomic_write, write_json
from cruxflow.workflow.job import setup_logging
from cruxflow.workflow.plan import make_plan
from cruxflow.workflow.plan_report import Rates, plan_json, plan_table

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
start = time.perf_counter()
plan = make_plan(sm.params.config, root=".")
took = time.perf_counter() - start
rates = Rates()
write_json(sm.output.json, plan_json(plan, rates, took))
with atomic_write(sm.output.text) as f:
    f.write(plan_table(plan, rates))
log.info("planned %d LLM stages in %.1f s", len(plan.stages), took)
