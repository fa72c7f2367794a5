"""``cruxflow ppi --judge-values J.tsv --human-values H.tsv``: a mean estimated from a judge's
scores on every item and human scores on some, by prediction-powered inference
(docs/judge-trust.md)."""

from __future__ import annotations

import json
import math
from functools import partial

from cruxflow.cli import vocabulary
from cruxflow.cli.agreement import error_level


def _cmd_ppi(args) -> int:
    from cruxflow.paper.ppi import ppi_files

    res = ppi_files(args.judge_values, args.human_values, alpha=error_level(args.confidence),
                    method=args.method)
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
    p = vocabulary.command(
        subparsers, "ppi",
        description="Prediction-powered inference of a mean (Angelopoulos et al., Science 2023; "
                    "PPI++) with the authors' ppi-python: the judge's values on every item, "
                    "human values on a subset. Prints the judge-only mean, the human-only mean "
                    "with its interval and the PPI estimate with its interval. Needs the "
                    "'judge' extra. See docs/judge-trust.md.")
    add = partial(vocabulary.add, p)
    add("judge-values", required=True)
    add("human-values", required=True)
    add("confidence", detail="here both intervals'")
    add("method")
    add("json", detail="here estimate, ci_low, ci_high, judge_only, human_only, n_labeled, "
                       "n_total, ...")
    p.set_defaults(func=_cmd_ppi)
