"""A cost plan (:mod:`cruxflow.workflow.plan`) as time at a throughput or money at a price, as
a table for people and JSON for tools (docs/plan.md).

Time: the tokens the cache does not answer, prompts at the prefill rate and outputs at the
generation rate of one model instance of the row's backend, divided by the instances that the
available GPUs hold. The rates come from :mod:`cruxflow.workflow.plan.rates` (a table by model
size and GPU kind, each row sourced), from ``cruxflow plan --calibrate`` (measured on the
configured backend) or from the command line (one rate for every backend).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cruxflow.workflow.plan.base import Plan, StagePlan
from cruxflow.workflow.plan.rates import ANCHOR_OUTPUT, ANCHOR_PROMPT, InstanceRate, instances

OUTPUT_TOKENS_PER_S = ANCHOR_OUTPUT
PROMPT_TOKENS_PER_S = ANCHOR_PROMPT


@dataclass(frozen=True)
class Rates:
    """Throughput of one model instance per backend (``backends``; any other backend: the two
    rates given here, one GPU per instance), the GPUs available (``None``: one instance of
    every backend), or prices per million tokens."""

    output_tokens_per_s: float = OUTPUT_TOKENS_PER_S
    prompt_tokens_per_s: float = PROMPT_TOKENS_PER_S
    gpus: int | None = None
    price_in: float | None = None    # per million prompt tokens
    price_out: float | None = None   # per million output tokens
    backends: Mapping[str, InstanceRate] = field(default_factory=dict)

    def __post_init__(self):
        if self.output_tokens_per_s <= 0 or self.prompt_tokens_per_s <= 0:
            raise ValueError("throughputs must be positive")
        if self.gpus is not None and self.gpus < 1:
            raise ValueError("--gpus must be at least 1")
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("give both prices (prompt and output tokens) or neither")
        for name in self.backends:   # too few GPUs: fail now, not half-way through a table
            self.instances(name)

    def rate(self, backend: str) -> InstanceRate:
        return self.backends.get(backend) or InstanceRate(
            self.prompt_tokens_per_s, self.output_tokens_per_s, 1, "given")

    def instances(self, backend: str) -> int:
        rate = self.rate(backend)
        return 1 if self.gpus is None else instances(self.gpus, rate.gpus_per_instance, backend)

    def seconds(self, s: StagePlan) -> float:
        rate = self.rate(s.backend)
        computed = s.todo_prompt_tokens - s.reused_prompt_tokens
        todo = s.requests - (s.cached or 0)
        tokens = (computed / rate.prompt_tokens_per_s
                  + s.todo_output_tokens / rate.output_tokens_per_s + todo * rate.request_s)
        # each job starts its backend once; jobs run side by side on the instances
        return (tokens + s.jobs * rate.startup_s) / self.instances(s.backend)

    def total_seconds(self, plan: Plan) -> float:
        """Stages one after the other, each on all the GPUs (its backend's instances)."""
        return sum(self.seconds(s) for s in plan.stages)

    def money(self, s: StagePlan) -> float | None:
        if self.price_in is None:
            return None
        return (s.todo_prompt_tokens * self.price_in + s.todo_output_tokens * self.price_out) / 1e6


def total(plan: Plan) -> StagePlan:
    """The sum of every row (``cached`` summed over the rows that know it)."""
    rows = plan.stages
    known = [s.cached for s in rows if s.cached is not None]
    estimated = any("estimate" in (s.prompts, s.outputs) for s in rows)
    return StagePlan("total", "", "", sum(s.requests for s in rows), sum(known) if known else None,
                     sum(s.prompt_tokens for s in rows), sum(s.output_tokens for s in rows),
                     sum(s.todo_prompt_tokens for s in rows),
                     sum(s.todo_output_tokens for s in rows),
                     "estimate" if estimated else "counted", "estimate" if estimated else "",
                     reused_prompt_tokens=sum(s.reused_prompt_tokens for s in rows))


def _used_backends(plan: Plan) -> list[str]:
    return list(dict.fromkeys(s.backend for s in plan.stages))


def plan_json(plan: Plan, rates: Rates, seconds_to_plan: float | None = None) -> dict:
    out = plan.to_json()
    for row, s in zip(out["stages"], plan.stages, strict=True):
        row.update(seconds=rates.seconds(s), money=rates.money(s))
    t = total(plan)
    out["total"] = {"requests": t.requests, "cached": t.cached, "prompt_tokens": t.prompt_tokens,
                    "output_tokens": t.output_tokens, "todo_prompt_tokens": t.todo_prompt_tokens,
                    "todo_output_tokens": t.todo_output_tokens,
                    "reused_prompt_tokens": t.reused_prompt_tokens,
                    "seconds": rates.total_seconds(plan), "money": rates.money(t)}
    out["rates"] = {"gpus_available": rates.gpus,
                    "price_per_million_prompt": rates.price_in,
                    "price_per_million_output": rates.price_out,
                    "backends": {b: {"prompt_tokens_per_s": rates.rate(b).prompt_tokens_per_s,
                                     "output_tokens_per_s": rates.rate(b).output_tokens_per_s,
                                     "gpus_per_instance": rates.rate(b).gpus_per_instance,
                                     "startup_s": rates.rate(b).startup_s,
                                     "request_s": rates.rate(b).request_s,
                                     "instances": rates.instances(b),
                                     "source": rates.rate(b).source}
                                 for b in _used_backends(plan)}}
    if seconds_to_plan is not None:
        out["seconds_to_plan"] = seconds_to_plan
    return out


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _basis(s: StagePlan) -> str:
    return f"{s.prompts}/{s.outputs}" if s.outputs else s.prompts


# What the table's rows add up to, by part of the workflow.
PARTS = {"passages": "data generation", "report_requests": "data generation",
         "subquestions": "data generation", "ratings": "data generation",
         "judge_holes": "holes' ratings", "rag_generate": "RAG", "rag_judge": "RAG",
         "lancer": "LANCER reranking"}


def plan_table(plan: Plan, rates: Rates) -> str:
    """The plan as a fixed-width table with its assumptions underneath."""
    money = rates.price_in is not None
    head = ["stage", "dataset", "backend", "requests", "cached", "prompt tok", "output tok",
            "cost" if money else "time", "prompts/outputs"]
    rows = []
    for s in [*plan.stages, total(plan)]:
        seconds = rates.total_seconds(plan) if s.stage == "total" else rates.seconds(s)
        value = f"{rates.money(s):,.2f}" if money else duration(seconds)
        rows.append([s.stage, s.dataset, s.backend, f"{s.requests:,}",
                     "?" if s.cached is None else f"{s.cached:,}", f"{s.prompt_tokens:,}",
                     f"{s.output_tokens:,}", value, _basis(s)])
    numeric = {3, 4, 5, 6, 7}
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(head), rule, *map(line, rows[:-1]), rule, line(rows[-1]), ""]
    if not money:
        parts = {}
        for s in plan.stages:
            part = PARTS.get(s.stage.split(":")[0], s.stage)
            parts[part] = parts.get(part, 0.0) + rates.seconds(s)
        if len(parts) > 1:
            out.append("by part: " + ", ".join(f"{p} {duration(t)}" for p, t in parts.items()))
    tok = plan.tokenizer
    out.append("tokens: " + (f"counted with {tok['path']}" if tok["kind"] == "tokenizer"
                             else "regex counter (words and punctuation), an estimate")
               + (f" ({tok['note']})" if tok.get("note") else ""))
    if money:
        out.append(f"cost: of the uncached requests, at {rates.price_in:g} per million prompt "
                   f"and {rates.price_out:g} per million output tokens")
    else:
        out.append("time: of the uncached requests, stages one after the other (docs/plan.md):")
        for b in _used_backends(plan):
            r = rates.rate(b)
            where = (f"{r.gpus_per_instance} GPU(s)" if r.gpus_per_instance
                     else "the CPU")
            start = (f"{r.startup_s:.1f} s to start each job" if r.startup_s else
                     "jobs' start-up (process, model load) not counted: --calibrate measures it")
            out.append(f"  {b}: {r.prompt_tokens_per_s:,.0f} prompt and "
                       f"{r.output_tokens_per_s:,.0f} output tokens/s per instance on "
                       f"{where}, {rates.instances(b)} instance(s); {r.source}")
            if not r.startup_s:
                out.append(f"  {b}: {start}")
    out.append("counted: built from the real inputs; estimate: from the configured limits "
               "(cached '?': not known before the inputs exist); limit: the configured maximum; "
               "calibrated: as long as --calibrate saw the model write")
    out.append("first attempts only: outputs that do not parse are asked again (llm.attempts), "
               "which --calibrate counts where it saw some")
    for s in plan.stages:
        if s.note:
            out.append(f"{s.stage} {s.dataset}: {s.note}")
        if s.reused_prompt_tokens:
            out.append(f"{s.stage} {s.dataset}: {s.reused_prompt_tokens:,} of the "
                       f"{s.todo_prompt_tokens:,} prompt tokens are a passage's (or report's) "
                       "again, computed once by the prompt cache (passage-first layout)")
    for note in plan.assumed:
        out.append(note)
    if plan.not_planned:
        out.append("not planned (LLM calls on your own files): " + ", ".join(plan.not_planned))
    return "\n".join(out) + "\n"
