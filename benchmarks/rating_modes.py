"""Benchmark: the two ways of decoding answerability ratings, side by side on the packaged model.

* constrained (cruxflow's default): chat template, one token restricted to 0-5, logprobs;
* free (the CRUX authors' way, presets/paper.yaml): raw completion without a chat template,
  up to 5 tokens, the first digit taken, -1 when there is none.

Rates the same (passage, sub-question) pairs of the demo corpus (resources/demo/crux: the first
``--passages-per-topic`` passages of each of the first ``--topics`` topics, against all ten of
the topic's questions) both ways and prints how often the two ratings agree exactly and at
eta = 3 (both >= 3 or both below; -1 counts as below), Cohen's kappa of each, how many free
ratings found no digit, each mode's agreement with the demo's hand ratings, and the wall time.
``--grid`` adds the two mixed settings (constrained on the raw completion, free decoding under
the chat template) to tell the endpoint's part from the decoding's.

    .venv/bin/python benchmarks/rating_modes.py [--topics 3] [--passages-per-topic 2]
        [--threads 2] [--model SPEC] [--grid]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from cruxflow.llm import JUDGMENT, LLMRunner
from cruxflow.llm.llamacpp import LlamaCppBackend
from cruxflow.metrics.stats import cohen_kappa
from cruxflow.stages.ratings import rate_texts
from cruxflow.weights import DEFAULT_GGUF

DEMO = Path(__file__).resolve().parents[1] / "resources/demo/crux"


def demo_items(n_topics: int, per_topic: int) -> tuple[list[tuple[list[str], str]], list[int]]:
    """``(questions, passage text)`` items and the hand ratings of their pairs, flattened."""
    read = lambda name: [json.loads(x) for x in (DEMO / name).read_text().splitlines()]  # noqa: E731
    topics = read("topics.jsonl")[:n_topics]
    texts = {p["id"]: p["contents"] for p in read("passages.jsonl")}
    hand = {j["pid"]: j["rating"] for j in read("judgements.jsonl")}
    items, labels = [], []
    for t in topics:
        pids = [pid for pid in texts if pid.split(":")[0] == t["qid"]][:per_topic]
        for pid in pids:
            items.append((t["questions"], texts[pid]))
            labels += hand[pid]
    return items, labels


def at_eta(r: int, eta: int = 3) -> bool:
    return r >= eta


def share(pairs) -> float:
    pairs = list(pairs)
    return sum(a == b for a, b in pairs) / len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=3)
    ap.add_argument("--passages-per-topic", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=DEFAULT_GGUF)
    ap.add_argument("--grid", action="store_true")
    args = ap.parse_args()

    items, hand = demo_items(args.topics, args.passages_per_topic)
    settings = [("constrained", "chat"), ("free", "completion")]
    if args.grid:
        settings += [("constrained", "completion"), ("free", "chat")]
    ratings, seconds = {}, {}
    for mode, endpoint in settings:
        runner = LLMRunner(LlamaCppBackend(args.model, endpoint=endpoint, threads=args.threads),
                           None, batch_size=16)
        t0 = time.perf_counter()
        rated = rate_texts(items, runner, sampling=JUDGMENT, decoding=mode)
        seconds[mode, endpoint] = time.perf_counter() - t0
        ratings[mode, endpoint] = [r for rs, _ in rated for r in rs]
        runner.close()
    mixed = {k: v for k, v in ratings.items() if k not in settings[:2]}
    ratings = {"constrained": ratings[settings[0]], "free": ratings[settings[1]], **mixed}
    seconds = {"constrained": seconds[settings[0]], "free": seconds[settings[1]],
               **{k: seconds[k] for k in mixed}}

    c, f = ratings["constrained"], ratings["free"]
    n = len(c)
    print(f"model {args.model}, {n} pairs ({len(items)} passages x their questions)")
    print(f"constrained (chat, 1 token 0-5): {seconds['constrained']:.1f} s, "
          f"ratings {dict(sorted(Counter(c).items()))}")
    print(f"free (completion, <= 5 tokens):  {seconds['free']:.1f} s, "
          f"ratings {dict(sorted(Counter(f).items()))}, no digit (-1): {f.count(-1)}")
    print(f"agreement exact: {share(zip(c, f, strict=True)):.3f} "
          f"({sum(a == b for a, b in zip(c, f, strict=True))}/{n}); "
          f"kappa {cohen_kappa(c, f)}")
    bc, bf = [at_eta(r) for r in c], [at_eta(r) for r in f]
    print(f"agreement at eta 3: {share(zip(bc, bf, strict=True)):.3f} "
          f"({sum(a == b for a, b in zip(bc, bf, strict=True))}/{n}); "
          f"kappa {cohen_kappa(bc, bf)}; answerable: constrained {sum(bc)}, free {sum(bf)}")
    for (mode, endpoint), rs in mixed.items():
        b = [at_eta(r) for r in rs]
        print(f"{mode} on {endpoint} ({seconds[mode, endpoint]:.1f} s): vs constrained-chat "
              f"exact {share(zip(c, rs, strict=True)):.3f}, at eta 3 "
              f"{share(zip(bc, b, strict=True)):.3f}; vs free-completion exact "
              f"{share(zip(f, rs, strict=True)):.3f}, "
              f"at eta 3 {share(zip(bf, b, strict=True)):.3f}")
    bh = [at_eta(r) for r in hand]
    for mode, rs in ratings.items():
        b = [at_eta(r) for r in rs]
        print(f"{mode} vs the demo's hand ratings: exact {share(zip(rs, hand, strict=True)):.3f}, "
              f"at eta 3 {share(zip(b, bh, strict=True)):.3f} (hand: {sum(bh)} answerable)")


if __name__ == "__main__":
    main()
