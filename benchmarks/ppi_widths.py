"""How many human labels give what interval width: PPI (and PPI++) against the human-only
interval, simulated with a judge biased by +0.1 (docs/judge-trust.md, "How many labels").

Two kinds of items: per-topic scores in [0, 1] (a run's Cov@10 per topic: sd 0.25 around 0.5,
the judge adding +0.1 and Gaussian noise of sd 0.1 or 0.3), and binary pair labels
(answerable or not, 40% answerable; the judge says "answerable" regardless on 10% or 30%
of the pairs, a bias of +0.06 or +0.18). For each number n of labelled items, among
``--total`` items, it prints the mean 95% half-width of each interval and the share of draws
whose interval covers the truth.

    .venv/bin/python benchmarks/ppi_widths.py [--draws 500] [--total 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from cruxflow.paper.ppi import ppi_interval


def scores(rng, n, noise):
    y = np.clip(rng.normal(0.5, 0.25, n), 0, 1)
    return y, y + 0.1 + rng.normal(0, noise, n)


def pairs(rng, n, lapse):
    y = (rng.random(n) < 0.4).astype(float)
    # the judge reads the pair right, except a share `lapse` of the time, when it says
    # "answerable" whatever the passage says (bias +0.6 * lapse)
    return y, np.where(rng.random(n) < lapse, 1.0, y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--total", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    z = stats.norm.ppf(0.975)
    truth = {"scores": None, "pairs": 0.4}
    settings = [("scores", "judge noise sd 0.1", lambda r, n: scores(r, n, 0.1)),
                ("scores", "judge noise sd 0.3", lambda r, n: scores(r, n, 0.3)),
                ("pairs", "judge lapses 10%", lambda r, n: pairs(r, n, 0.1)),
                ("pairs", "judge lapses 30%", lambda r, n: pairs(r, n, 0.3))]
    # the clipped normal's mean, from a large sample (the truth of the score setting)
    big = np.clip(np.random.default_rng(1).normal(0.5, 0.25, 2_000_000), 0, 1)
    truth["scores"] = float(big.mean())
    print("| items | judge | labelled n | human-only ±, cover | PPI ±, cover | PPI++ ±, cover |"
          " judge-only bias |")
    print("| --- | --- | ---: | --- | --- | --- | ---: |")
    for kind, name, draw in settings:
        for n in (10, 20, 50, 100, 200):
            rng = np.random.default_rng(args.seed)
            out = {"human": [], "ppi": [], "ppi++": []}
            bias = []
            for _ in range(args.draws):
                y, yhat = draw(rng, args.total)
                half = z * y[:n].std() / math.sqrt(n)
                out["human"].append((half, abs(y[:n].mean() - truth[kind]) <= half))
                for method in ("ppi", "ppi++"):
                    _, low, high, _ = ppi_interval(y[:n], yhat[:n], yhat[n:], method=method)
                    out[method].append(((high - low) / 2, low <= truth[kind] <= high))
                bias.append(yhat.mean() - truth[kind])
            cells = [f"{np.mean([h for h, _ in v]):.3f}, {np.mean([c for _, c in v]):.2f}"
                     for v in out.values()]
            print(f"| {kind} | {name} | {n} | {' | '.join(cells)} | {np.mean(bias):+.3f} |")


if __name__ == "__main__":
    main()
