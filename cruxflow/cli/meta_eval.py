"""``cruxflow meta-eval --judge J --human [NAME=]H ... [--run [NAME=]RUN ...]``: the judge's
ratings against annotators' ratings of the same (passage, question) pairs, beside the
annotators' agreement with each other, and the system rankings both give (docs/judge-trust.md)."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

from cruxflow.cli import vocabulary
from cruxflow.data.limits import bootstrap_seconds, long_work_note
from cruxflow.data.text import printable, printable_cells


def error_level(confidence: float) -> float:
    """PPI's alpha for a confidence level (0.95 -> 0.05, exactly)."""
    return round(1 - confidence, 12)


def _fmt(value, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def _runs(specs) -> dict:
    from cruxflow.data.io import read_run

    runs = {}
    for spec in specs:
        name, sep, path = str(spec).partition("=")
        if not sep or Path(spec).exists():
            name, path = Path(spec).name.split(".")[0], str(spec)
        runs[name] = {t: [r.doc_id for r in rows] for t, rows in read_run(path).items()}
    return runs


def _print(result, k: int) -> None:
    import pandas as pd

    print(f"Item level: (passage, question) pairs rated by both, answerable at eta = "
          f"{result.eta}; the first rater is the reference for precision and recall")
    rows = []
    for a in result.items:
        rows.append({"kind": a.kind, "reference": a.reference, "other": a.other, "n": a.n,
                     "exact": _fmt(a.exact), "kappa@eta": _fmt(a.kappa),
                     "kappa 0-5 (linear)": _fmt(a.kappa_linear),
                     "alpha (ordinal)": _fmt(a.alpha_ordinal), "precision": _fmt(a.precision),
                     "recall": _fmt(a.recall), "TP/FP/FN/TN": f"{a.tp}/{a.fp}/{a.fn}/{a.tn}",
                     "note": a.warning or ""})
    print(printable_cells(pd.DataFrame(rows)).to_markdown(index=False))
    skipped = result.counts["labels_of_pairs_the_judge_did_not_rate"]
    if any(skipped.values()):
        print("left out: labels of pairs the judge did not rate: "
              + ", ".join(f"{a} {n}" for a, n in skipped.items() if n))
    if result.judge_scores is None:
        return
    print(f"\nSystem level: {result.counts['topics_labelled']} topics labelled, "
          f"{result.counts['topics_judged']} judged; each run scored from the judge's and "
          "from the humans' ratings, ranked by its mean over the labelled topics where both "
          "are defined for every run (humans: the reference)")
    for r in result.ranks:
        _print_system_level(r)
    print(f"\nCov@{k} corrected by PPI (judge on every judged topic, humans on the labelled):")
    for system, res in result.ppi.items():
        system = printable(system)
        if isinstance(res, str):
            print(f"  {system}: undefined ({res})")
        else:
            print(f"  {system}: judge-only {res.judge_only:.3f}, human-only {res.human_only:.3f} "
                  f"[{res.human_ci_low:.3f}, {res.human_ci_high:.3f}], PPI {res.estimate:.3f} "
                  f"[{res.ci_low:.3f}, {res.ci_high:.3f}] ({res.n_labeled} of {res.n_total} "
                  "topics labelled)")


FEW_TOPICS = 30


def _print_system_level(r) -> None:
    from cruxflow.paper.meta_eval import LEFT_OUT

    left = ", ".join(f"{n} {LEFT_OUT[why]}" for why, n in r.left_out.items() if n)
    print(f"\n{r.metric} over {r.n_topics} of the {r.topics_labelled} labelled topics"
          + (f" (left out: {left})" if left else "") + ":")
    if not r.topics:
        print("  no topic left: no ranking to compare")
        return
    width = max(len(printable(s)) for s in r.systems + ["system"])
    print(f"  {'system':{width}s}   judge   human")
    for system in r.systems:
        print(f"  {printable(system):{width}s}  {r.judge_means[system]:.3f}   "
              f"{r.human_means[system]:.3f}")
    note = f" (only {r.n_topics} topics)" if r.n_topics < FEW_TOPICS else ""
    print(f"  Kendall tau {_fmt(r.tau)}{_why_undefined(r, r.tau)} "
          f"{_interval(r.tau_interval, r)}; tau_AP {_fmt(r.tau_ap)}"
          f"{_why_undefined(r, r.tau_ap)} {_interval(r.tau_ap_interval, r)}; "
          f"{r.n_systems} runs{note}")
    if r.tau_interval.resamples:
        undefined = [f"{what} {i.undefined}" for what, i in (("tau", r.tau_interval),
                                                            ("tau_AP", r.tau_ap_interval))
                     if i.undefined]
        print(f"  intervals: {r.tau_interval.describe()}"
              + (f"; resamples with an undefined value, left out: {', '.join(undefined)}"
                 if undefined else ""))


def _why_undefined(r, value) -> str:
    if value is not None:
        return ""
    if r.n_systems < 2:
        return " (fewer than 2 runs)"
    tied = [who for who, means in (("the judge's", r.judge_means), ("the humans'", r.human_means))
            if len(set(means.values())) == 1]
    return f" ({' and '.join(tied)} means tie for every run)" if tied else ""


def _interval(interval, r) -> str:
    if interval.low is not None:
        return f"[{interval.low:.3f}, {interval.high:.3f}]"
    if r.n_systems < 3:
        return "[no interval: fewer than 3 runs]"
    if r.n_topics < 2:
        return "[no interval: fewer than 2 topics]"
    if interval.resamples == 0:
        return "[no interval: no resamples]"
    return "[no interval: every resample undefined]"


def _cmd_meta_eval(args) -> int:
    from cruxflow.data.ingest.crux_common import read_ratings
    from cruxflow.data.ingest.crux_sources import sources_note
    from cruxflow.paper.meta_eval import meta_eval, read_human_ratings

    judge = read_ratings(list(args.judge))
    humans = read_human_ratings(args.human)
    if args.run and (note := long_work_note(
            f"the rank correlations' bootstrap ({args.bootstrap:,} resamples, 2 measures)",
            bootstrap_seconds(args.bootstrap, 2), "--bootstrap")):
        print(note, file=sys.stderr)
    result = meta_eval(judge, humans, eta=args.eta, runs=_runs(args.run or ()), k=args.k,
                       alpha=error_level(args.confidence), n_resamples=args.bootstrap,
                       seed=args.seed)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        _print(result, args.k)
        note = sources_note(judge.summary())
        if note:   # the judge's original ratings and added ones (cruxflow judge's)
            print(f"\n{note}")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow meta-eval`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "meta-eval",
        description="The judge's 0-5 ratings against one or more annotators' ratings of the "
                    "same (passage, question) pairs: Cohen's kappa (at eta and linear on 0-5), "
                    "Krippendorff's alpha, confusion, precision/recall, against each annotator "
                    "and their majority, beside the annotators' agreement with each other. "
                    "With --run, each run's Cov@k and alpha_nDCG_crux@k from both, Kendall "
                    "tau and tau_AP between the rankings, PPI-corrected Cov@k. Needs the "
                    "'judge' extra. See docs/judge-trust.md.")
    add = partial(vocabulary.add, p)
    add("judge", required=True)
    add("human", required=True)
    add("run", metavar="[NAME=]RUN", detail="here for the system level; NAME= names a run "
                                            "(else its file name up to the first dot)")
    add("k", default=10, single=True, detail="of the system level's Cov@k and "
                                             "alpha_nDCG_crux@k")
    add("eta")
    add("confidence", detail="here PPI's intervals'")
    add("bootstrap", default=1000, detail="here for the intervals of the rank correlations")
    add("seed", default=0, detail="here the bootstrap's")
    add("json")
    p.set_defaults(func=_cmd_meta_eval)
