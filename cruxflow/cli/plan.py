"""``cruxflow plan``: what the LLM stages of a workflow config will cost, before any call
(docs/plan.md)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

from cruxflow.cli import vocabulary

PLAN_FILE = "plan.json"


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow plan`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "plan",
        description="Read a workflow config and its inputs and print, per LLM stage and in "
                    "total, the requests, how many the LLM cache already answers, the prompt "
                    "and output tokens, and the time at a throughput (or the cost at a price) "
                    "of the rest. Loads no model. See docs/plan.md.")
    add = partial(vocabulary.add, p)
    add("config", default=Path("config.yaml"), default_text="config.yaml",
        detail="a complete one, e.g. presets/paper.yaml")
    add("workdir")
    add("tokenizer", default_text="metrics.tokenizer, else the regex counter, an estimate",
        detail="here the prompts' and outputs' tokens")
    add("gpus")
    add("gpu-kind")
    add("calibrate")
    add("calibrate-requests")
    add("tokens-per-second")
    add("prompt-tokens-per-second")
    add("price-per-million")
    add("json", detail="here the plan")
    add("output", detail=f"here {PLAN_FILE}, the plan as JSON, beside the table")
    p.set_defaults(func=run, writes=(PLAN_FILE,))
    return p


def _rates(args, config, plan):
    """The rates the plan is priced at, and the plan (made again with what --calibrate saw)."""
    from cruxflow.workflow.plan.rates import InstanceRate, table_rate
    from cruxflow.workflow.plan.report import Rates

    prices = args.price_per_million or (None, None)
    used = list(dict.fromkeys(s.backend for s in plan.stages))
    specs = config["llm"]["backends"]
    threads = config["llm"]["threads"]
    backends = {b: table_rate(specs[b], args.gpu_kind, threads=threads) for b in used}
    if args.tokens_per_second or args.prompt_tokens_per_second:
        backends = {b: InstanceRate(args.prompt_tokens_per_second or r.prompt_tokens_per_s,
                                    args.tokens_per_second or r.output_tokens_per_s,
                                    r.gpus_per_instance, "given on the command line")
                    for b, r in backends.items()}
    if args.calibrate:
        from cruxflow.workflow.plan import Counter, choose_tokenizer, make_plan
        from cruxflow.workflow.plan.calibrate import calibrate

        counter = Counter(choose_tokenizer(config, args.tokenizer)[0])
        measured = calibrate(plan, config, counter, n=args.calibrate_requests)
        if measured is None:
            print("calibration: the cache answers every request: nothing to measure",
                  file=sys.stderr)
        else:
            for b in measured.batches:
                print(f"calibration: {b.stage} on {b.backend}: {b.requests} "
                      f"{'of its own' if b.real else 'stand-in'} requests, "
                      f"{b.prompt_tokens:,} prompt and {b.output_tokens:,} output tokens in "
                      f"{b.seconds:.1f} s", file=sys.stderr)
            backends.update(measured.rates)
            plan = make_plan(config, root=args.workdir, tokenizer=args.tokenizer,
                             observed=measured.observed)
    return Rates(gpus=args.gpus, price_in=prices[0], price_out=prices[1],
                 backends=backends), plan


def run(args) -> int:
    from cruxflow.data.errors import ConfigError
    from cruxflow.data.io import write_json
    from cruxflow.llm import LLMError
    from cruxflow.workflow.plan import load_config, make_plan
    from cruxflow.workflow.plan.report import plan_json, plan_table

    start = time.perf_counter()
    try:
        config = load_config(args.config, args.workdir)
        plan = make_plan(config, root=args.workdir, tokenizer=args.tokenizer)
    except ConfigError as e:
        print(f"cruxflow plan: {args.config}: {e}", file=sys.stderr)
        return 2
    took = time.perf_counter() - start
    try:
        rates, plan = _rates(args, config, plan)
    except (ValueError, LLMError) as e:
        print(f"cruxflow plan: error: {e}", file=sys.stderr)
        return 2
    if args.output is not None:
        write_json(args.output / PLAN_FILE, plan_json(plan, rates, took))
    if args.json:
        print(json.dumps(plan_json(plan, rates, took), indent=2))
        return 0
    print(plan_table(plan, rates), end="")
    print(f"planned in {took:.1f} s")
    if args.output is not None:
        print(f"wrote {args.output / PLAN_FILE}")
    return 0
