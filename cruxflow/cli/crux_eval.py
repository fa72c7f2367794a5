"""``cruxflow crux-eval --run RUN --qrel DIV_QRELS --judge FILE_OR_DIR``: the CRUX authors'
evaluation script (rac_eval.py) reproduced, with Den@10 and a paired test between two runs
(docs/evaluate.md, "The authors' script")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cruxflow.data.io import write_json


def _cmd_crux_eval(args) -> int:
    from cruxflow.data.ingest.crux_common import read_diversity_qrels, read_ratings
    from cruxflow.metrics.crux_eval import (
        collection_token_counts,
        compare_runs,
        crux_eval,
        read_run_top,
        read_token_counts,
    )

    qrels, judge = read_diversity_qrels(args.qrel), read_ratings(args.judge)
    runs = [args.run] + ([args.run_b] if args.run_b else [])
    counts = None
    if args.token_counts:
        counts = read_token_counts(args.token_counts)
    elif args.collection:
        pids = {p for r in runs for rows in read_run_top(r, args.k).topics.values()
                for p, _, _ in rows} | {p for _, p in judge.ratings}
        counts = collection_token_counts(args.collection, args.tokenizer, pids)
    results = [crux_eval(r, qrels, judge, k=args.k, filter_by_oracle=args.filter_by_oracle,
                         eta=args.eta, alpha=args.alpha, token_counts=counts,
                         density_weight=args.density_weight) for r in runs]
    out = {"runs": [r.to_json() for r in results]}
    if len(results) == 2:
        out["paired"] = compare_runs(*results, n_resamples=args.resamples, seed=args.seed)
    for r in results:
        for w in r.warnings:
            print(f"cruxflow: warning: {r.run}: {w}", file=sys.stderr)
    if args.output is not None:
        write_json(args.output, out)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for r in results:
        print(r.line())
    if "paired" in out:
        print(f"\npaired tests, {results[0].run} (a) vs {results[1].run} (b), two-sided:")
        print(f"{'measure':16s}{'topics':>7s}{'a':>9s}{'b':>9s}{'a - b':>9s}"
              f"{'p (t-test)':>12s}{'p (random.)':>13s}")
        for row in out["paired"]:
            cells = [_num(row[k]) for k in ("mean_a", "mean_b", "diff")]
            print(f"{row['measure']:16s}{row['topics']:7d}{cells[0]:>9s}{cells[1]:>9s}"
                  f"{cells[2]:>9s}{_num(row['p_t_test']):>12s}"
                  f"{_num(row['p_randomization']):>13s}")
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def add_command(subparsers) -> None:
    """Add ``cruxflow crux-eval`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "crux-eval", help="the CRUX authors' evaluation script (P, nDCG, alpha-nDCG, Cov @10)",
        description="Score a TREC run against the CRUX release's diversity qrels and judge "
                    "ratings exactly as the authors' rac_eval.py does, printing its line "
                    "(P@10, nDCG@10, alpha_nDCG@10, Cov@10); optionally Den@10 and a paired "
                    "test against a second run. See docs/evaluate.md.")
    p.add_argument("--run", required=True, type=Path, help="TREC run: qid Q0 docid rank score tag")
    p.add_argument("--qrel", required=True, type=Path,
                   help="diversity qrels, e.g. $CRUX_ROOT/crux-mds-duc04/qrels/div_qrels-tau3.txt")
    p.add_argument("--judge", required=True, type=Path,
                   help="judge ratings: one JSONL file or a folder of them (the release's judge/)")
    p.add_argument("--filter-by-oracle", "--filter_by_oracle", action="store_true",
                   help="Cov counts only the questions some judged passage of the topic answers")
    p.add_argument("--run-b", "--run_b", type=Path,
                   help="a second run: also print its line and paired tests per measure")
    p.add_argument("--k", type=int, default=10, help="cutoff: rank column <= k (default 10)")
    p.add_argument("--eta", type=int, default=3, help="answerability threshold (default 3)")
    p.add_argument("--alpha", type=float, default=0.5, help="alpha of alpha-nDCG (default 0.5)")
    dens = p.add_mutually_exclusive_group()
    dens.add_argument("--token-counts", type=Path,
                      help="Den@k from token counts: TSV passage<TAB>tokens or JSONL {id, tokens}")
    dens.add_argument("--collection", type=Path,
                      help="Den@k from passage texts (JSONL file or folder: id/_id, "
                           "contents/text), counted with --tokenizer")
    p.add_argument("--tokenizer", help="local tokenizer.json (or a folder with one) for "
                                       "--collection (default: the regex counter)")
    p.add_argument("--density-weight", type=float, default=0.5,
                   help="exponent w of Den, Eq. 6 (default 0.5)")
    p.add_argument("--resamples", type=int, default=9999,
                   help="randomization test resamples (exact when 2^topics is fewer)")
    p.add_argument("--seed", type=int, default=0, help="randomization test seed")
    p.add_argument("--json", action="store_true",
                   help="print every value as JSON, per topic at full precision")
    p.add_argument("--output", type=Path, help="write the JSON (per-topic values) to this file")
    p.set_defaults(func=_cmd_crux_eval)
