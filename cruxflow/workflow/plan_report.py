"""A cost plan (:mod:`cruxflow.workflow.plan`) as time at a throughput or money at a price, as
a table for people and JSON for tools (docs/plan.md).

Time: the tokens the cache does not answer, prompts at the prefill rate and outputs at the
generation rate, per GPU, spread over ``gpus`` GPUs (data parallel). The defaults are for one
H100-class GPU serving an 8B model with vLLM:

* ``OUTPUT_TOKENS_PER_S`` = 5,777: Llama-3.1-8B (FP8) with vLLM 0.10 on one H100, MLPerf
  Inference v5.1 offline scenario, Red Hat's submission (their blog post "Efficient and
  reproducible LLM inference: Red Hat MLPerf Inference v5.1 results"). MLPerf counts generated
  tokens per second of a summarization workload with long prompts, so prefill is inside it:
  as a pure generation rate it errs on the slow side.
* ``PROMPT_TOKENS_PER_S`` = 30,000: an assumption, not a measurement: prefill is compute bound,
  about 2 x 8e9 FLOPs per token for an 8B model, and an H100's ~990 dense BF16 TFLOP/s at
  roughly half utilization gives ~31,000 tokens per second.

For a 70B model expect roughly a ninth of both per GPU (FLOPs and weights scale with the
parameters); give your own figures (``--tokens-per-second``, ``--prompt-tokens-per-second``).
"""

from __future__ import annotations

from dataclasses import dataclass

from cruxflow.workflow.plan import Plan, StagePlan

OUTPUT_TOKENS_PER_S = 5777.0
PROMPT_TOKENS_PER_S = 30000.0


@dataclass(frozen=True)
class Rates:
    """Throughput per GPU (tokens per second) and GPUs; or prices per million tokens."""

    output_tokens_per_s: float = OUTPUT_TOKENS_PER_S
    prompt_tokens_per_s: float = PROMPT_TOKENS_PER_S
    gpus: int = 1
    price_in: float | None = None    # per million prompt tokens
    price_out: float | None = None   # per million output tokens

    def __post_init__(self):
        if self.output_tokens_per_s <= 0 or self.prompt_tokens_per_s <= 0 or self.gpus < 1:
            raise ValueError("throughputs must be positive and gpus at least 1")
        if (self.price_in is None) != (self.price_out is None):
            raise ValueError("give both prices (prompt and output tokens) or neither")

    def seconds(self, s: StagePlan) -> float:
        return (s.todo_prompt_tokens / self.prompt_tokens_per_s
                + s.todo_output_tokens / self.output_tokens_per_s) / self.gpus

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
                     "estimate" if estimated else "counted", "estimate" if estimated else "")


def plan_json(plan: Plan, rates: Rates, seconds_to_plan: float | None = None) -> dict:
    out = plan.to_json()
    for row, s in zip(out["stages"], plan.stages, strict=True):
        row.update(seconds=rates.seconds(s), money=rates.money(s))
    t = total(plan)
    out["total"] = {"requests": t.requests, "cached": t.cached, "prompt_tokens": t.prompt_tokens,
                    "output_tokens": t.output_tokens, "todo_prompt_tokens": t.todo_prompt_tokens,
                    "todo_output_tokens": t.todo_output_tokens, "seconds": rates.seconds(t),
                    "money": rates.money(t)}
    out["rates"] = {"output_tokens_per_s_per_gpu": rates.output_tokens_per_s,
                    "prompt_tokens_per_s_per_gpu": rates.prompt_tokens_per_s, "gpus": rates.gpus,
                    "price_per_million_prompt": rates.price_in,
                    "price_per_million_output": rates.price_out}
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


def plan_table(plan: Plan, rates: Rates) -> str:
    """The plan as a fixed-width table with its assumptions underneath."""
    money = rates.price_in is not None
    head = ["stage", "dataset", "backend", "requests", "cached", "prompt tok", "output tok",
            "cost" if money else "time", "prompts/outputs"]
    rows = []
    for s in [*plan.stages, total(plan)]:
        value = (f"{rates.money(s):,.2f}" if money else duration(rates.seconds(s)))
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
    tok = plan.tokenizer
    out.append("tokens: " + (f"counted with {tok['path']}" if tok["kind"] == "tokenizer"
                             else "regex counter (words and punctuation), an estimate")
               + (f" ({tok['note']})" if tok.get("note") else ""))
    if money:
        out.append(f"cost: of the uncached requests, at {rates.price_in:g} per million prompt "
                   f"and {rates.price_out:g} per million output tokens")
    else:
        out.append(f"time: of the uncached requests, at {rates.prompt_tokens_per_s:,.0f} prompt "
                   f"and {rates.output_tokens_per_s:,.0f} output tokens/s per GPU on "
                   f"{rates.gpus} GPU(s) (docs/plan.md)")
    out.append("counted: built from the real inputs; estimate: from the configured limits "
               "(cached '?': not known before the inputs exist); limit: the configured maximum")
    out.append("first attempts only: outputs that do not parse are asked again (llm.attempts)")
    for s in plan.stages:
        if s.note:
            out.append(f"{s.stage} {s.dataset}: {s.note}")
    if plan.not_planned:
        out.append("not planned (LLM calls on your own files): " + ", ".join(plan.not_planned))
    return "\n".join(out) + "\n"
