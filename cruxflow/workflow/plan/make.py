"""The whole cost plan (docs/plan.md): per LLM stage and dataset, the requests the workflow
will send, how many the cache already answers, their prompt and output tokens. Where an input
does not exist yet (ratings before any passage), the row is an estimate from the configured
limits and the assumptions of :mod:`cruxflow.workflow.plan.base`, and says so. Nothing here
loads a model."""

from __future__ import annotations

from pathlib import Path

from cruxflow.workflow import config as workflow_config
from cruxflow.workflow.plan import sizes
from cruxflow.workflow.plan.base import (
    CacheLookup,
    Context,
    Counter,
    Observed,
    Plan,
    StagePlan,
    choose_tokenizer,
)
from cruxflow.workflow.plan.generation import plan_generation
from cruxflow.workflow.plan.holes import plan_holes
from cruxflow.workflow.plan.lancer import plan_lancer
from cruxflow.workflow.plan.rag import plan_rag


def _scaled(rows: list[StagePlan], loaded: sizes.Loaded) -> list[StagePlan]:
    """A stand-in's rows at the published number of topics, all estimates."""
    if loaded.topics is None:
        return rows
    scale = loaded.scale
    keys = ("requests", "prompt_tokens", "output_tokens", "todo_prompt_tokens",
            "todo_output_tokens")
    return [StagePlan(**{**r.public(), **{k: round(getattr(r, k) * scale) for k in keys},
                         "cached": None,
                         "prompts": "estimate", "outputs": "estimate"}, sample=r.sample)
            for r in rows]


def _with_observed_outputs(rows: list[StagePlan], observed: Observed) -> list[StagePlan]:
    """Rows whose outputs are estimates, at the mean output that --calibrate measured; the
    tokens still to pay for, times the requests that outputs asked again add."""
    for r in rows:
        mean = observed.output_tokens.get(r.stage)
        if mean is not None and r.outputs in ("estimate", "limit"):
            todo = r.requests - (r.cached or 0)
            r.output_tokens, r.todo_output_tokens = round(mean * r.requests), round(mean * todo)
            r.outputs = "calibrated"
        if r.stage in observed.asked_again:
            factor, share = observed.asked_again[r.stage]
            r.todo_prompt_tokens = round(r.todo_prompt_tokens * factor)
            r.todo_output_tokens = round(r.todo_output_tokens * factor)
            r.reused_prompt_tokens = round(r.reused_prompt_tokens * factor)
            r.note = "; ".join(filter(None, [
                r.note, f"x {factor:.2f} for outputs asked again (--calibrate's first "
                        f"outputs: {share:.0%} refused)"]))
    return rows


def make_plan(config: dict, *, root=".", tokenizer: str | None = None,
              observed: Observed | None = None) -> Plan:
    """The plan of a validated, resolved config (:func:`cruxflow.workflow.config.resolve`),
    with its relative paths under ``root`` (the workflow's working directory); ``observed``:
    what --calibrate measured, used instead of the assumptions it replaces."""
    root = Path(root)
    spec, described = choose_tokenizer(config, tokenizer)
    ctx = Context(config, Counter(spec), CacheLookup(root / config["llm"]["cache"]
                                                      if config["llm"]["cache"] else None),
                   observed or Observed())
    stages, loaded, assumed = [], {}, []
    sizes.check_backends(config, root, assumed)
    for name, d in config["datasets"].items():
        if d["generate"]:
            loaded[name] = sizes.load_or_stand_in(config, name, root, assumed)
            stages += _scaled(plan_generation(ctx, name, loaded[name].dataset, root),
                              loaded[name])
    for name in config["holes"]:
        if name not in loaded:
            loaded[name] = sizes.load_or_stand_in(config, name, root, assumed)
        generated = (sizes.generated(root, name, config["llm"]["shards"])
                     if config["datasets"][name]["generate"] else {})
        stages += _scaled([plan_holes(ctx, name, loaded[name].dataset, root, generated)],
                          loaded[name])
    for name in config["rag"]["datasets"]:
        if name not in loaded:
            loaded[name] = sizes.load_or_stand_in(config, name, root, assumed)
        stages += plan_rag(ctx, name, loaded[name].dataset, root, loaded[name].topics)
    if any(r["kind"] == "lancer" for r in config["retrieval"]["rerankers"].values()):
        evaluated = [d for d in workflow_config.rated_datasets(config)
                     if config["datasets"][d]["evaluate"] or d in config["rag"]["datasets"]]
        for name in evaluated:
            if name not in loaded:
                loaded[name] = sizes.load_or_stand_in(config, name, root, assumed)
            stages += _scaled(plan_lancer(ctx, name, loaded[name].dataset, loaded[name].topics),
                              loaded[name])
    not_planned = [f"beyond.{metric}.{job}" for metric in ("udcg", "support", "kpr")
                   for job in config["beyond"][metric]]
    not_planned += [f"retrieval.rerankers.{n} (listwise, cruxflow engine)"
                    for n, r in config["retrieval"]["rerankers"].items()
                    if r["kind"] == "listwise" and r.get("engine", "cruxflow") == "cruxflow"]
    return Plan(_with_observed_outputs(stages, ctx.observed), described, not_planned, assumed)


def load_config(path, basedir=".") -> dict:
    """A workflow config file, checked as ``rules/common.smk`` checks it (one check: the
    schema, the keys across, the files it names relative to ``basedir``), except that the
    datasets' inputs may be missing: they are planned from published sizes."""
    from cruxflow.data.io import read_yaml

    return workflow_config.check(read_yaml(path), basedir, data_optional=True)
