"""Benchmark: answerability ratings on the CPU with the embedded default model.

Rates real (passage, sub-question) pairs of the demo corpus (resources/demo/crux) with the
paper's prompt (Fig. 8) and prints, for a cold cache and then a warm one:
LLM calls per rating, ratings per second, prompt tokens per rating, and the wall time; and,
for comparison, what letting the judge write up to 5 tokens (the CRUX authors' setting) costs
against the single constrained step with logprobs that cruxflow uses.

    .venv/bin/python benchmarks/llm_ratings.py [--pairs 120] [--threads 2] [--model SPEC]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from cruxflow.llm import JUDGMENT, LLMCache, LLMRunner, Request
from cruxflow.llm.llamacpp import LlamaCppBackend
from cruxflow.llm.logprobs import expected_rating
from cruxflow.llm.parsing import parse_rating
from cruxflow.stages.prompts import RATING
from cruxflow.weights import DEFAULT_GGUF

DEMO = Path(__file__).resolve().parents[1] / "resources/demo/crux"


def pairs(n: int) -> list[str]:
    topics = [json.loads(x) for x in (DEMO / "topics.jsonl").read_text().splitlines()]
    passages = [json.loads(x) for x in (DEMO / "passages.jsonl").read_text().splitlines()]
    by_topic: dict[str, list[str]] = {}
    for p in passages:
        by_topic.setdefault(p["id"].split(":")[0], []).append(p["contents"])
    prompts = []
    for t in topics:  # question-major within a topic, as the ratings stage sends them
        for q in t["questions"]:
            for text in by_topic.get(t["qid"], []):
                prompts.append(RATING.render(question=q, context=text))
    return prompts[:n]


def run(runner: LLMRunner, requests: list[Request]) -> tuple[float, list]:
    t0 = time.perf_counter()
    outs = runner.generate(requests)
    return time.perf_counter() - t0, outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=DEFAULT_GGUF)
    args = ap.parse_args()

    prompts = pairs(args.pairs)
    judge = [Request(p, JUDGMENT) for p in prompts]
    t0 = time.perf_counter()
    backend = LlamaCppBackend(args.model, threads=args.threads)
    load_s = time.perf_counter() - t0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = LLMCache(Path(tmp) / "cache.sqlite")
        for label in ("cold cache", "warm cache"):
            runner = LLMRunner(backend, cache, batch_size=16)
            secs, outs = run(runner, judge)
            rows.append((label, runner.stats, secs, outs))
        reuse = LlamaCppBackend(args.model, threads=args.threads, prompt_cache=True)
        runner = LLMRunner(reuse, None)
        secs, outs = run(runner, judge)
        rows.append(("no cache, prompt_cache on", runner.stats, secs, outs))
        free = [Request(p, dataclasses.replace(JUDGMENT, max_tokens=5, choices=None, logprobs=0))
                for p in prompts]
        runner = LLMRunner(backend, None)
        secs5, outs5 = run(runner, free)

    n = len(prompts)
    print(f"model {args.model}, {args.threads} threads, load {load_s:.2f} s, {n} ratings")
    print(f"{'setting':44s} {'calls/rating':>12s} {'ratings/s':>10s} {'wall s':>8s} "
          f"{'prompt tok':>10s} {'unparsed':>8s}")
    for label, stats, secs, outs in rows:
        tok = sum(o.prompt_tokens or 0 for o in outs) / n
        bad = sum(parse_rating(o.text) is None for o in outs)
        print(f"{'1 step, grammar 0-5, ' + label:44s} {stats.calls / n:12.2f} {n / secs:10.1f} "
              f"{secs:8.2f} {tok:10.0f} {bad:8d}")
    bad5 = sum(parse_rating(o.text) is None for o in outs5)
    print(f"{'up to 5 tokens, free text':44s} {1.0:12.2f} {n / secs5:10.1f} {secs5:8.2f} "
          f"{'':>10s} {bad5:8d}")
    changed = sum(parse_rating(a.text) != parse_rating(b.text)
                  for a, b in zip(rows[0][3], rows[2][3], strict=True))
    print(f"greedy ratings that change when the prompt prefix is reused: {changed}/{n}")
    exp = [expected_rating(o.top_logprobs) for o in rows[0][3]]
    found = [e for e, _ in exp if e is not None]
    mass = sum(m for _, m in exp) / n
    dist = {k: sum(parse_rating(o.text) == k for o in rows[0][3]) for k in range(6)}
    print(f"expected rating available for {len(found)}/{n} ratings; mean probability mass on "
          f"0-5 among the top-{JUDGMENT.logprobs} tokens: {mass:.2f}")
    print(f"greedy ratings: {dist}")


if __name__ == "__main__":
    main()
