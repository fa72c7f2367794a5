"""``cruxflow plan``: what the LLM stages of a workflow config will cost, before any call
(docs/plan.md)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cruxflow.cli import args as types


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow plan`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "plan", help="requests, cached answers, tokens and time or cost of the LLM stages",
        description="Read a workflow config and its inputs and print, per LLM stage and in "
                    "total, the requests, how many the LLM cache already answers, the prompt "
                    "and output tokens, and the time at a throughput (or the cost at a price) "
                    "of the rest. Loads no model. See docs/plan.md.")
    p.add_argument("--config", type=Path, default=Path("config.yaml"),
                   help="a complete workflow config (default: config.yaml; e.g. "
                        "presets/paper.yaml)")
    p.add_argument("--workdir", type=Path, default=Path("."),
                   help="the workflow's working directory: the config's relative paths and "
                        "results/ (default: the current directory)")
    p.add_argument("--tokenizer",
                   help="a tokenizer.json (or a directory holding one) to count with "
                        "(default: metrics.tokenizer, else the regex counter, an estimate)")
    p.add_argument("--gpus", type=types.positive_int,
                   help="GPUs available: each backend runs as many instances as fit (its "
                        "'gpus' is one instance, tensor parallel); default: one instance of "
                        "every backend")
    p.add_argument("--gpu-kind", default="h100",
                   help="the GPUs' kind, for the rate table (default %(default)s; see "
                        "docs/plan.md: h100, h200, a100, l40s, mi250x, mi250x-gcd, mi210, "
                        "mi300x)")
    p.add_argument("--calibrate", action="store_true",
                   help="measure the configured backends (a few real requests of each "
                        "stage's shape, never cached) and plan with the measured rates")
    p.add_argument("--calibrate-requests", type=types.positive_int, default=3, metavar="N",
                   help="requests per stage when calibrating (default %(default)s; for a "
                        "batching server, about its batch size)")
    p.add_argument("--tokens-per-second", type=types.positive_number,
                   help="generated tokens per second of one instance of every backend "
                        "(instead of the table)")
    p.add_argument("--prompt-tokens-per-second", type=types.positive_number,
                   help="prompt (prefill) tokens per second of one instance (instead of the "
                        "table)")
    p.add_argument("--price-per-million", type=types.non_negative, nargs=2,
                   metavar=("PROMPT", "OUTPUT"),
                   help="the cost of a served model per million prompt and output tokens: "
                        "print money instead of time")
    p.add_argument("--json", type=Path, metavar="PATH",
                   help="also write the plan as JSON to PATH ('-': stdout, instead of the "
                        "table)")
    p.set_defaults(func=run)
    return p


def _rates(args, config, plan):
    from cruxflow.workflow.plan_rates import InstanceRate, table_rate
    from cruxflow.workflow.plan_report import Rates

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
        from cruxflow.workflow.plan import Counter, choose_tokenizer
        from cruxflow.workflow.plan_calibrate import calibrate

        counter = Counter(choose_tokenizer(config, args.tokenizer)[0])
        measured, batches = calibrate(plan, config, counter, n=args.calibrate_requests)
        for b in batches:
            print(f"calibration: {b.stage} on {b.backend}: {b.requests} requests, "
                  f"{b.prompt_tokens:,} prompt and {b.output_tokens:,} output tokens in "
                  f"{b.seconds:.1f} s", file=sys.stderr)
        backends.update(measured)
    return Rates(gpus=args.gpus, price_in=prices[0], price_out=prices[1], backends=backends)


def run(args) -> int:
    from cruxflow.data.errors import ConfigError
    from cruxflow.data.io import write_json
    from cruxflow.workflow.plan import load_config, make_plan
    from cruxflow.workflow.plan_report import plan_json, plan_table

    start = time.perf_counter()
    try:
        config = load_config(args.config, args.workdir)
        plan = make_plan(config, root=args.workdir, tokenizer=args.tokenizer)
    except ConfigError as e:
        print(f"cruxflow plan: {args.config}: {e}", file=sys.stderr)
        return 2
    took = time.perf_counter() - start
    try:
        rates = _rates(args, config, plan)
    except ValueError as e:
        print(f"cruxflow plan: error: {e}", file=sys.stderr)
        return 2
    if str(args.json) == "-":
        print(json.dumps(plan_json(plan, rates, took), indent=2))
        return 0
    print(plan_table(plan, rates), end="")
    print(f"planned in {took:.1f} s")
    if args.json:
        write_json(args.json, plan_json(plan, rates, took))
    return 0
