"""Benchmark: answerability ratings on the CPU with the embedded default model.

Part 1, layouts (docs/ratings.md): the same (passage, sub-question) pairs of the demo corpus
(resources/demo/crux: a few passages of each of the first topics, each against all its
topic's questions) rated by :func:`cruxflow.stages.ratings.rate_texts` with the paper's
layout (Fig. 8, question first) and the passage-first one, each with llama.cpp's prompt cache
off and on. Printed per setting: prefill tokens per rating (prompt tokens minus those the
server reused, from its usage/timings), ratings per second (best of ``--repeats``, the
settings interleaved), and how many greedy ratings differ from the same layout without reuse;
then the agreement between the two layouts' ratings (exact, and on either side of eta).

Part 2, decoding and the LLM cache (``--modes``): the paper's prompt, for a cold cache and
then a warm one: LLM calls per rating, ratings per second, prompt tokens per rating, and the
wall time; and what letting the judge write up to 5 tokens (the CRUX authors' setting) costs
against the single constrained step with logprobs that cruxflow uses.

    .venv/bin/python benchmarks/llm_ratings.py [--pairs 120] [--threads 2] [--repeats 2]
        [--modes] [--model SPEC]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path

from cruxflow.llm import JUDGMENT, LLMCache, LLMRunner, Request
from cruxflow.llm.llamacpp import LlamaCppBackend
from cruxflow.llm.logprobs import expected_rating
from cruxflow.llm.parsing import parse_rating
from cruxflow.stages.prompts import RATING
from cruxflow.stages.ratings import rate_texts
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


def items(n: int, per_topic: int = 4) -> list[tuple[list[str], str]]:
    """``(questions, passage)`` items holding about ``n`` pairs: the first ``per_topic``
    passages of each topic in file order, each with all its topic's questions."""
    topics = [json.loads(x) for x in (DEMO / "topics.jsonl").read_text().splitlines()]
    passages = [json.loads(x) for x in (DEMO / "passages.jsonl").read_text().splitlines()]
    out: list[tuple[list[str], str]] = []
    for t in topics:
        own = [p["contents"] for p in passages if p["id"].split(":")[0] == t["qid"]]
        for text in own[:per_topic]:
            if sum(len(q) for q, _ in out) >= n:
                return out
            out.append((t["questions"], text))
    return out


SETTINGS = [("paper", False), ("paper", True), ("passage_first", False),
            ("passage_first", True)]


def layouts(args) -> None:
    rated = items(args.pairs)
    n = sum(len(q) for q, _ in rated)
    backends = {reuse: LlamaCppBackend(args.model, threads=args.threads, prompt_cache=reuse)
                for reuse in (False, True)}
    best: dict = {}
    ratings: dict = {}
    prefill: dict = {}
    for rep in range(args.repeats):
        for layout, reuse in SETTINGS if rep % 2 == 0 else SETTINGS[::-1]:
            runner = LLMRunner(backends[reuse], None)
            t0 = time.perf_counter()
            out = rate_texts(rated, runner, layout=layout)
            secs = time.perf_counter() - t0
            key = (layout, reuse)
            best[key] = min(best.get(key, secs), secs)
            flat = [r for rs, _ in out for r in rs]
            ratings.setdefault(key, flat)  # the first repeat's, from a slot as a run starts it
            prefill[key] = (runner.stats.prompt_tokens - runner.stats.cached_tokens) / n
            print(f"  repeat {rep + 1}: {layout:13s} reuse {reuse!s:5s} {secs:7.1f} s",
                  flush=True)
    for b in backends.values():
        b.close()
    base = ("paper", False)
    print(f"\n{n} (passage, question) pairs ({len(rated)} passages), {args.threads} threads, "
          f"best of {args.repeats}; load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{'layout':14s} {'reuse':>5s} {'prefill tok/rating':>18s} {'ratings/s':>9s} "
          f"{'vs paper, no reuse':>18s} {'changed by reuse':>16s}")
    for layout, reuse in SETTINGS:
        key = (layout, reuse)
        pairs_ = list(zip(ratings[(layout, False)], ratings[key], strict=True))
        changed = sum(a != b for a, b in pairs_)
        across = sum((a >= 3) != (b >= 3) for a, b in pairs_)
        print(f"{layout:14s} {'on' if reuse else 'off':>5s} {prefill[key]:18.1f} "
              f"{n / best[key]:9.2f} "
              f"{prefill[base] / max(prefill[key], 1e-9):8.1f}x tok, "
              f"{best[base] / best[key]:4.1f}x r/s {changed:10d}/{n} "
              f"({across} across eta=3)")
    for reuse in (False, True):
        a, b = ratings[("paper", reuse)], ratings[("passage_first", reuse)]
        exact = sum(x == y for x, y in zip(a, b, strict=True))
        at_eta = sum((x >= 3) == (y >= 3) for x, y in zip(a, b, strict=True))
        print(f"layout agreement (reuse {'on' if reuse else 'off'}): exact {exact}/{n} "
              f"({exact / n:.0%}), at eta=3 {at_eta}/{n} ({at_eta / n:.0%}); "
              f"ratings >= 3: paper {sum(x >= 3 for x in a)}, passage_first "
              f"{sum(y >= 3 for y in b)}")


def run(runner: LLMRunner, requests: list[Request]) -> tuple[float, list]:
    t0 = time.perf_counter()
    outs = runner.generate(requests)
    return time.perf_counter() - t0, outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=DEFAULT_GGUF)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", action="store_true",
                    help="also part 2: decoding modes and the LLM cache")
    args = ap.parse_args()
    layouts(args)
    if args.modes:
        modes(args)


def modes(args) -> None:
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
