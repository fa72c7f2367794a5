"""``cruxflow crux-eval --run RUN [RUN ...] --qrel DIV_QRELS --judge FILE_OR_DIR``: the CRUX
authors' evaluation script (rac_eval.py) reproduced, for one run or many in one call, with
Den@10 and paired tests between every pair of runs (docs/evaluate.md, "The authors' script")."""

from __future__ import annotations

import json
import os
import sys
from functools import partial

from cruxflow.cli import args as types
from cruxflow.cli import vocabulary
from cruxflow.data.io import paused_gc
from cruxflow.data.text import printable

OUTPUT_FILE = "crux_eval.json"


def _cmd_crux_eval(args) -> int:
    # The inputs are millions of small objects, none in a reference cycle, alive until the
    # command ends: the cyclic collector, run again and again over all of them as they are
    # made and once more when a library call turns it back on, would add a tenth of the
    # call's time. The command does without it, and gives it back to a caller that runs
    # the command in its own process (cruxflow.cli.main from Python).
    with paused_gc():
        return _crux_eval(args)


def _crux_eval(args) -> int:
    from pathlib import Path

    from cruxflow.data.names import named_inputs

    named = named_inputs(args.run + ([args.run_b] if args.run_b else []), "runs")
    runs, labels = [Path(path) for _, path in named], [name for name, _ in named]
    if len(runs) == 1 or args.authors_line or vocabulary.paired_policy(args) is None:
        _one_blas_thread()
    from cruxflow.data.runs import read_run_file
    from cruxflow.metrics.crux_eval import (
        CruxEvalInputs,
        compare_runs,
        crux_eval_runs,
    )
    from cruxflow.metrics.tokens import collection_token_counts, read_token_counts

    ks = types.rank_cutoffs(args.k, "crux-eval", "the script's cut, the lines whose rank "
                            "column is at most k")
    counts = None
    if args.token_counts:
        counts = read_token_counts(args.token_counts)
    options = dict(filter_by_oracle=args.filter_by_oracle, eta=args.eta, alpha=args.alpha,
                   token_counts=counts, density_weight=args.density_weight)
    # one k at a time, as the script scores; the qrels and ratings read once for every k
    inputs = [CruxEvalInputs(args.qrel, args.judge, k=ks[0], **options)]
    inputs += [CruxEvalInputs(inputs[0].div, inputs[0].ratings, k=k, **options) for k in ks[1:]]
    if args.collection:
        # the texts to count are those of the runs' contexts and of the judged passages
        read = {k: [read_run_file(r, max_rank=k) for r in runs] for k in ks}
        pids = {p for top in read[max(ks)] for rows in top.topics.values() for p, _, _ in rows}
        pids |= {p for _, p in inputs[0].ratings.ratings}
        tokens = collection_token_counts(args.collection, args.tokenizer, pids)
        for at_k in inputs:
            at_k.set_token_counts(tokens)
        by_k = [crux_eval_runs(read[at_k.k], at_k, None) for at_k in inputs]
    else:
        by_k = [crux_eval_runs(runs, at_k, None) for at_k in inputs]
    results = [r for at_k in by_k for r in at_k]
    out: dict = {"runs": [r.to_json() for r in results]}
    policy = vocabulary.paired_policy(args)
    if len(runs) > 1 and policy is not None and not args.authors_line:
        out["paired_policy"] = policy.to_json()
        types.say_paired_work(policy, max(len(r.per_topic) for r in results),
                              sum(len(at_k[0].measures) for at_k in by_k)
                              * len(runs) * (len(runs) - 1) // 2)
        out["paired"] = [row for at_k in by_k for row in compare_runs(at_k, policy, labels)]
    warned, label = set(), dict(zip(map(str, runs), labels, strict=True))
    for r in results:
        for w in r.warnings:
            if (r.run, w) not in warned:   # the same at every k: once
                warned.add((r.run, w))
                print(f"cruxflow: warning: {printable(label[r.run])}: {w}", file=sys.stderr)
    if args.output is not None:
        from cruxflow.data.io import write_json

        write_json(args.output / OUTPUT_FILE, out)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if args.authors_line:
        for r in results:
            print(r.line())
        return 0
    for at_k in by_k:
        _print_table(at_k, [printable(label) for label in labels])
    if "paired" in out:
        _print_paired(out["paired"], policy)
    if args.output is not None:
        print(f"wrote {args.output / OUTPUT_FILE}")
    return 0


def _one_blas_thread() -> None:
    """A call without paired tests multiplies no large matrix (the paired tests' one product
    of signs is the only one), so OpenBLAS's worker threads, which numpy starts as it is
    imported, are only cost: measured 0.05-0.1 s of a 0.7 s call for one run on 2 cores,
    more where there are more cores. One thread, unless the user chose a number (or numpy
    was imported already)."""
    if "numpy" in sys.modules or any(v in os.environ for v in (
            "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


def _print_table(results, runs) -> None:
    """The means of one k: a row per run under short labels (``P@10``), the legend of the
    labels' full names under it (:mod:`cruxflow.metrics.labels`), lines of at most
    :data:`~cruxflow.metrics.labels.WIDTH` characters but for a long run name."""
    from cruxflow.data.ingest.crux_human import merge_note
    from cruxflow.data.ingest.crux_sources import sources_note
    from cruxflow.metrics import labels

    first = results[0]
    print(f"rac_eval.py's measures (its line: --authors-line); k={first.k}, "
          f"eta={first.info['eta']}, alpha={first.info['alpha']}")
    columns = first.measures
    short = labels.short_labels(columns)
    width = max(len(run) for run in [*runs, "run"])
    cell = [max(len(short[c]), 6) for c in columns]
    print(f"{'run':{width}s} " + " ".join(f"{short[c]:>{w}s}" for c, w in zip(
        columns, cell, strict=True)))
    for run, r in zip(runs, results, strict=True):   # a run's own names, by position
        print(f"{run:{width}s} " + " ".join(f"{labels.marked(r.aggregate[m]):>{w}s}" for m, w
                                            in zip(r.measures, cell, strict=True)))
    judged = first.measures[-1]
    print("\n".join(labels.legend(
        {short[c]: (f"{c}, the script's {first.authors_names[c]}" if c in first.authors_names
                    else f"{c}: the judged share of the lines Cov reads (not the script's)"
                    if c == judged else labels.gloss(c)) for c in columns}, "labels:")))
    for note in (sources_note(first.info.get("judge")), merge_note(first.info.get("judge"))):
        if note:
            print(note)
    for run, r in zip(runs, results, strict=True):
        other = [m for m in r.measures if m not in columns]
        if other:   # alpha-nDCG over every qrels topic: the run lacks only 0-line topics
            print(f"{run}: " + ", ".join(f"{m} in the column of {short[c]}" for m, c in zip(
                r.measures, columns, strict=True) if m in other))


def _print_paired(rows, policy) -> None:
    import textwrap

    from cruxflow.metrics import labels

    print()
    print("\n".join(textwrap.wrap(f"paired tests between every pair of runs over the topics "
                                  f"both define: {policy.describe()} ({_pairs(rows)} pairs):",
                                  labels.WIDTH)))
    short = labels.short_labels(dict.fromkeys(r["measure"] for r in rows))
    header = ("measure", "a", "b", "topics", "mean a", "mean b", "a - b", "p",
              policy.adjusted_header)
    table = [header] + [
        (short[r["measure"]], printable(r["a"]), printable(r["b"]), str(r["topics"]),
         _num(r["mean_a"]), _num(r["mean_b"]), _num(r["diff"]), _num(r["p"]),
         _num(r["p_adjusted"])) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))


def _pairs(rows) -> int:
    return len({(r["a"], r["b"]) for r in rows})


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def add_command(subparsers) -> None:
    """Add ``cruxflow crux-eval`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "crux-eval",
        description="Score TREC runs against the CRUX release's diversity qrels and judge "
                    "ratings exactly as the authors' rac_eval.py does (P@10, nDCG@10, "
                    "alpha_nDCG@10, Cov@10 in its definitions, named by what they differ in "
                    "from the workflow's), optionally Den@10, and paired tests between every "
                    "pair of runs. See docs/evaluate.md.")
    add = partial(vocabulary.add, p)
    add("run", required=True, detail="several are also compared pairwise")
    add("qrel", required=True)
    add("judge", required=True, detail="read as one, original and added ratings together "
                                       "(docs/judge.md)")
    add("filter-by-oracle")
    add("run-b")
    add("k", default=[10], detail="here positive integers, the authors' cut: the lines whose "
                                  "rank column is at most k; each k is scored as the script "
                                  "scores its one k, a table (and paired tests) per k")
    add("eta")
    add("alpha")
    dens = p.add_mutually_exclusive_group()
    vocabulary.add(dens, "token-counts", detail="they give Den@k")
    vocabulary.add(dens, "collection", detail="they give Den@k, counted with --tokenizer")
    add("tokenizer", detail="here Den's token counts of --collection")
    add("density-weight")
    vocabulary.add_paired_options(p)
    shown = p.add_mutually_exclusive_group()
    vocabulary.add(shown, "json", detail="here every value, per topic at full precision")
    vocabulary.add(shown, "authors-line")
    add("output", detail=f"here {OUTPUT_FILE} (every value, per topic)")
    p.set_defaults(func=_cmd_crux_eval, writes=("crux_eval.json",))
