"""A cost plan before any LLM call (docs/plan.md): per LLM stage and dataset, the requests the
workflow will send, how many the cache already answers, their prompt and output tokens, and
the time or money that the rest will cost.

One module per concept: :mod:`.base` (a stage's row, the plan, the plan's context, the token
helpers every stage uses), one module per kind of stage (:mod:`.generation`, :mod:`.ratings`,
:mod:`.holes`, :mod:`.rag`, :mod:`.lancer`), the inputs and their published sizes
(:mod:`.sizes`), the whole plan (:mod:`.make`), rates by model and GPU (:mod:`.rates`),
``--calibrate`` (:mod:`.calibrate`) and the plan as time, money, a table and JSON
(:mod:`.report`). This package's faces are those the command, the rule's script and the
benchmark use.
"""

from cruxflow.workflow.plan.base import (
    SAMPLE,
    Counter,
    Observed,
    Plan,
    StagePlan,
    choose_tokenizer,
)
from cruxflow.workflow.plan.make import load_config, make_plan

__all__ = ["SAMPLE", "Counter", "Observed", "Plan", "StagePlan", "choose_tokenizer",
           "load_config", "make_plan"]
