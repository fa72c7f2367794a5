"""``cruxflow plan --calibrate``: measure the configured backends instead of trusting a table
(docs/plan.md, "Calibrating").

For every stage of the plan, a short batch of real requests of that stage's shape (its mean
prompt tokens, its mean output tokens as ``max_tokens``) is sent to the stage's backend through
cruxflow's LLM layer, without the cache: calibration requests must really run, and must not
answer a later run's requests. Each batch is timed; prompt and output tokens are counted by the
plan's own counter (so that the rates are in the units the plan counts), and one prefill rate
and one generation rate per backend are fitted to all its batches by non-negative least
squares: seconds = prompt tokens / prefill rate + output tokens / generation rate.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass

from cruxflow.llm import Request, Sampling, make_backend
from cruxflow.workflow.plan import Counter, Plan
from cruxflow.workflow.plan_rates import InstanceRate
from cruxflow.workflow.plan_sizes import FILLER

ASK = "\n\nRewrite the text above in your own words, at full length:\n"
MODEL_TOKENS_PER_COUNTED = 1.3   # max_tokens is in the model's tokens; a margin over ours


@dataclass
class Batch:
    stage: str
    backend: str
    requests: int
    prompt_tokens: int
    output_tokens: int
    seconds: float


def stage_prompt(counter: Counter, tokens: int, salt: int) -> str:
    """Plain prose of about ``tokens`` counted tokens, ending with a request to write; each
    ``salt`` starts elsewhere in the text, so that no two prompts share a prefix that a
    prompt cache could reuse."""
    per_word = counter.per_word([" ".join(FILLER)])
    n = max(1, round((tokens - counter.one(ASK)) / per_word))
    words = [FILLER[(salt * 7 + i) % len(FILLER)] for i in range(n)]
    return f"[{salt}] " + " ".join(words) + ASK


def measure(plan: Plan, config: dict, counter: Counter, *, n: int = 3) -> list[Batch]:
    """Time ``n`` requests of every stage's shape on its backend (each backend built once)."""
    llm = config["llm"]
    by_backend = defaultdict(list)
    for s in plan.stages:
        if s.requests:
            by_backend[s.backend].append(s)
    batches = []
    salt = 0
    for name, stages in by_backend.items():
        backend = make_backend(llm["backends"][name], threads=llm["threads"])
        try:
            # one throw-away request: the first call pays for loading and warming up
            list(backend.generate_iter([Request(stage_prompt(counter, 16, -1),
                                                Sampling(max_tokens=1))]))
            for s in stages:
                prompt_tokens = max(1, round(s.prompt_tokens / s.requests))
                output_tokens = max(1, round(s.output_tokens / s.requests))
                requests = []
                for _ in range(n):
                    salt += 1
                    requests.append(Request(
                        stage_prompt(counter, prompt_tokens, salt),
                        Sampling(temperature=0.7, top_p=0.95, seed=0,
                                 max_tokens=math.ceil(output_tokens * MODEL_TOKENS_PER_COUNTED))))
                start = time.perf_counter()
                outputs = [out for _, out in backend.generate_iter(requests)]
                took = time.perf_counter() - start
                batches.append(Batch(s.stage, name, n,
                                     sum(counter.many(r.prompt for r in requests)),
                                     sum(counter.many(o.text for o in outputs)), took))
        finally:
            backend.close()
    return batches


def fit(batches: list[Batch]) -> dict[str, InstanceRate]:
    """One prefill and one generation rate per backend, fitted to its batches."""
    import numpy as np
    from scipy.optimize import nnls

    rates = {}
    for name in dict.fromkeys(b.backend for b in batches):
        mine = [b for b in batches if b.backend == name]
        a = np.array([[b.prompt_tokens, b.output_tokens] for b in mine], dtype=float)
        t = np.array([b.seconds for b in mine])
        (per_prompt, per_output), _ = nnls(a, t)
        # A coefficient at 0 (too few shapes to tell them apart): charge all time to the other.
        if per_prompt <= 0:
            per_prompt = 1e-9
        if per_output <= 0:
            per_output = 1e-9
        rates[name] = InstanceRate(
            1 / per_prompt, 1 / per_output, 1,
            f"measured: {sum(b.requests for b in mine)} requests in {len(mine)} stage-shaped "
            f"batches, {sum(b.seconds for b in mine):.1f} s")
    return rates


def calibrate(plan: Plan, config: dict, counter: Counter, *, n: int = 3
              ) -> tuple[dict[str, InstanceRate], list[Batch]]:
    batches = measure(plan, config, counter, n=n)
    rates = fit(batches)
    # A measured instance uses the GPUs its backend entry names (llama.cpp: the CPU).
    for name, rate in rates.items():
        spec = config["llm"]["backends"][name]
        tp = 0 if spec["kind"] == "llamacpp" else int(spec.get("gpus") or 1)
        rates[name] = InstanceRate(rate.prompt_tokens_per_s, rate.output_tokens_per_s, tp,
                                   rate.source)
    return rates, batches
