"""``cruxflow plan``: what the LLM stages of a workflow config will cost, before any call
(docs/plan.md)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cruxflow.workflow.plan_report import OUTPUT_TOKENS_PER_S, PROMPT_TOKENS_PER_S


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
    p.add_argument("--tokens-per-second", type=float, default=OUTPUT_TOKENS_PER_S,
                   help="generated tokens per second per GPU (default %(default)g: an 8B "
                        "model on one H100 with vLLM)")
    p.add_argument("--prompt-tokens-per-second", type=float, default=PROMPT_TOKENS_PER_S,
                   help="prompt (prefill) tokens per second per GPU (default %(default)g)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs working in parallel (default 1)")
    p.add_argument("--price-per-million", type=float, nargs=2, metavar=("PROMPT", "OUTPUT"),
                   help="the cost of a served model per million prompt and output tokens: "
                        "print money instead of time")
    p.add_argument("--json", type=Path, metavar="PATH",
                   help="also write the plan as JSON to PATH ('-': stdout, instead of the "
                        "table)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from cruxflow.data.errors import ConfigError
    from cruxflow.data.io import write_json
    from cruxflow.workflow.plan import load_config, make_plan
    from cruxflow.workflow.plan_report import Rates, plan_json, plan_table

    prices = args.price_per_million or (None, None)
    try:
        rates = Rates(args.tokens_per_second, args.prompt_tokens_per_second, args.gpus, *prices)
    except ValueError as e:
        print(f"cruxflow plan: error: {e}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        config = load_config(args.config, args.workdir)
    except ConfigError as e:
        print(f"cruxflow plan: {args.config}: {e}", file=sys.stderr)
        return 2
    plan = make_plan(config, root=args.workdir, tokenizer=args.tokenizer)
    took = time.perf_counter() - start
    if str(args.json) == "-":
        print(json.dumps(plan_json(plan, rates, took), indent=2))
        return 0
    print(plan_table(plan, rates), end="")
    print(f"planned in {took:.1f} s")
    if args.json:
        write_json(args.json, plan_json(plan, rates, took))
    return 0
