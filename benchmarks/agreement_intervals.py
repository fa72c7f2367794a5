"""Do ``cruxflow agreement``'s intervals cover what they claim? Simulated with a known truth
(docs/judge-trust.md, "How far the intervals can be trusted").

* **Per-topic kappa** (the percentile bootstrap over a topic's items,
  :func:`cruxflow.paper.item_agreement.per_topic_kappa`): two raters' grades 0-3 drawn from a
  fixed joint distribution whose Cohen's kappa is known exactly; for each number of items n,
  the share of draws whose 95% interval covers that kappa.
* **System level** (the percentile bootstrap over topics of
  :func:`cruxflow.paper.system_agreement.compare_rankings`): S systems whose true means differ
  between a reference and a judge (the judge adds a bias of its own to each system), per-topic
  scores drawn around them with a topic effect and noise; the truth is Kendall's tau-b, tau_AP,
  Spearman's rho and the top-k overlap of the two sides' true means; for each number of topics,
  the share of draws whose 95% interval covers it, and the mean width.

    .venv/bin/python benchmarks/agreement_intervals.py [--draws 200] [--resamples 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cruxflow.metrics.stats import kendall_tau, rank_correlation, tau_ap
from cruxflow.paper.item_agreement import per_topic_kappa
from cruxflow.paper.system_agreement import Scores, compare_rankings, top_overlap

# two raters' joint distribution of grades 0-3 (rows: the first rater): mostly on the
# diagonal or next to it, as two assessors of one scale
JOINT = np.array([[0.20, 0.05, 0.01, 0.00],
                  [0.06, 0.18, 0.06, 0.01],
                  [0.01, 0.06, 0.16, 0.04],
                  [0.00, 0.01, 0.04, 0.11]])
JOINT = JOINT / JOINT.sum()


def true_kappa(joint: np.ndarray) -> float:
    observed = np.trace(joint)
    chance = float(joint.sum(axis=1) @ joint.sum(axis=0))
    return (observed - chance) / (1 - chance)


def kappa_coverage(n_items: int, draws: int, resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    truth = true_kappa(JOINT)
    flat = JOINT.ravel()
    covered, widths = 0, []
    for d in range(draws):
        cells = rng.choice(len(flat), size=n_items, p=flat)
        x, y = cells // 4, cells % 4
        (row,) = per_topic_kappa([("t", i) for i in range(n_items)], x, y,
                                 n_resamples=resamples, seed=d)
        if row.ci_low is not None:
            covered += row.ci_low <= truth <= row.ci_high
            widths.append(row.ci_high - row.ci_low)
    return covered / draws, float(np.mean(widths))


def system_coverage(n_topics: int, n_systems: int, draws: int, resamples: int,
                    seed: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    truth_rng = np.random.default_rng(12345)
    # the reference's true means; the judge's: the same plus a bias of its own per system
    mu = np.sort(truth_rng.uniform(0.2, 0.6, n_systems))[::-1]
    nu = mu + truth_rng.normal(0, 0.04, n_systems)
    k = min(5, n_systems - 1)
    truth = {"tau": kendall_tau(mu, nu), "tau_ap": tau_ap(mu, nu),
             "spearman": rank_correlation(list(mu), list(nu), "spearman").value,
             "overlap": top_overlap(mu, nu, k)}
    hits = {key: [] for key in truth}
    widths = {key: [] for key in truth}
    systems = [f"s{i}" for i in range(n_systems)]
    for d in range(draws):
        topic = rng.normal(0, 0.15, (n_topics, 1))          # a topic is hard for every system
        ref = mu + topic + rng.normal(0, 0.1, (n_topics, n_systems))
        est = nu + topic + rng.normal(0, 0.05, (n_topics, 1)) \
            + rng.normal(0, 0.1, (n_topics, n_systems))
        sides = [Scores(name, "m", per_topic={s: {str(t): float(table[t, i])
                                                  for t in range(n_topics)}
                                              for i, s in enumerate(systems)})
                 for name, table in (("ref", ref), ("judge", est))]
        r = compare_rankings(*sides, top=k, n_resamples=resamples, seed=d, ppi_alpha=None)
        for key, stat in (("tau", r.tau), ("tau_ap", r.tau_ap), ("spearman", r.spearman),
                          ("overlap", r.overlap)):
            i = stat.interval
            if i.low is not None:
                hits[key].append(i.low <= truth[key] <= i.high)
                widths[key].append(i.high - i.low)
    return {key: (float(np.mean(hits[key])), float(np.mean(widths[key])), truth[key])
            for key in truth}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    start = time.perf_counter()
    print(f"Per-topic kappa, 95% percentile bootstrap over the topic's items; true kappa "
          f"{true_kappa(JOINT):.3f}; {args.draws} draws, {args.resamples} resamples each")
    print("| items | coverage | mean width |")
    print("| ---: | ---: | ---: |")
    for n in (20, 50, 100, 300):
        cover, width = kappa_coverage(n, args.draws, args.resamples, args.seed)
        print(f"| {n} | {cover:.3f} | {width:.3f} |")
    print(f"\nSystem level, {args.systems} systems, 95% percentile bootstrap over topics (every "
          f"system's scores drawn together); {args.draws} draws, {args.resamples} resamples")
    print("| topics | statistic | truth | coverage | mean width |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for n in (10, 25, 50, 100):
        res = system_coverage(n, args.systems, args.draws, args.resamples, args.seed)
        for key, (cover, width, truth) in res.items():
            print(f"| {n} | {key} | {truth:.3f} | {cover:.3f} | {width:.3f} |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
