"""``cruxflow ppi --judge J.tsv --human H.tsv``: a mean estimated from a judge's scores on every
item and human scores on some, by prediction-powered inference (docs/judge-trust.md)."""

from __future__ import annotations

import argparse
import json
import math


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}")
    return value


def _cmd_ppi(args) -> int:
    from cruxflow.paper.ppi import ppi_files

    res = ppi_files(args.judge, args.human, alpha=args.alpha, method=args.method)
    if args.json:
        out = {k: (None if isinstance(v, float) and math.isnan(v) else v)
               for k, v in res.to_json().items()}
        print(json.dumps(out, indent=2))
        return 0
    level = f"{100 * (1 - res.alpha):g}%"
    print(f"judge-only mean  {res.judge_only:.4f}  ({res.n_total} items; no interval: a judge's "
          "bias does not shrink with more items)")
    print(f"human-only mean  {res.human_only:.4f}  {level} CI [{res.human_ci_low:.4f}, "
          f"{res.human_ci_high:.4f}]  ({res.n_labeled} labelled items)")
    lam = "" if math.isnan(res.lam) else f", lambda {res.lam:.3f}"
    print(f"{res.method.upper():<6} estimate  {res.estimate:.4f}  {level} CI [{res.ci_low:.4f}, "
          f"{res.ci_high:.4f}]  ({res.n_labeled} labelled + {res.n_total - res.n_labeled} "
          f"judge-only items{lam})")
    if res.n_labeled < 30:
        print(f"warning: {res.n_labeled} labelled items (< 30): the intervals rest on a normal "
              "approximation that few items make rough")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow ppi`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "ppi", help="a judge's mean corrected by a few human labels, with an interval (PPI)",
        description="Prediction-powered inference of a mean (Angelopoulos et al., Science 2023; "
                    "PPI++) with the authors' ppi-python: the judge's values on every item, "
                    "human values on a subset. Prints the judge-only mean, the human-only mean "
                    "with its interval and the PPI estimate with its interval. Needs the "
                    "'judge' extra. See docs/judge-trust.md.")
    p.add_argument("--judge", required=True, metavar="J.tsv",
                   help="item<TAB>value per line, every item (e.g. a run's per-topic Cov@10 "
                        "from the judge's ratings)")
    p.add_argument("--human", required=True, metavar="H.tsv",
                   help="item<TAB>value for the labelled items (a subset of the judge's)")
    p.add_argument("--alpha", type=_alpha, default=0.05,
                   help="error level: the interval covers with probability 1 - alpha "
                        "(default 0.05)")
    p.add_argument("--method", choices=["ppi", "ppi++"], default="ppi",
                   help="ppi: classic PPI (lambda 1); ppi++: lambda tuned to the data, never "
                        "wider than the human-only interval asymptotically (default ppi)")
    p.add_argument("--json", action="store_true", help="print estimate, ci_low, ci_high, "
                                                       "judge_only, human_only, n_labeled, "
                                                       "n_total, ... as JSON")
    p.set_defaults(func=_cmd_ppi)
