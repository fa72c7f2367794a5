"""``cruxflow evaluate --dataset DIR (--run FILE | --contexts FILE)``: score one retrieval run (or
its contexts) against a prepared dataset with the workflow's own scorer (docs/evaluate.md); with
``--crux-root`` (a CRUX release subset) or ``--qrel`` and ``--judge``, also with the CRUX authors'
evaluation script."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.data.errors import DataError
from cruxflow.data.io import nan_to_none, write_tsv
from cruxflow.metrics.evaluate import K_ALL, evaluate_run


def parse_k_list(text: str) -> list[int | str]:
    """``--k``: comma-separated context sizes, each ``oracle``, ``all`` or a positive integer."""
    from cruxflow.metrics.scorer import parse_context_size

    out: list[int | str] = []
    for part in (x.strip() for x in text.split(",")):
        try:
            k = K_ALL if part == K_ALL else parse_context_size(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"context size must be 'oracle', 'all' or a positive integer, got {part!r}"
            ) from None
        if k in out:
            raise argparse.ArgumentTypeError(f"context size {part!r} is given twice")
        out.append(k)
    return out


def _cmd_evaluate(args) -> int:
    from cruxflow.data.io import write_json
    from cruxflow.metrics.evaluate import evaluate_release

    release = args.crux_root is not None or args.qrel is not None or args.judge is not None
    authors = None
    if release:
        if args.run is None:
            raise DataError("--crux-root, --qrel and --judge score a --run")
        if args.crux_root is None and (args.qrel is None or args.judge is None):
            raise DataError("give --qrel and --judge together (or --crux-root)")
        result, authors = evaluate_release(
            run=args.run, crux_root=args.crux_root, qrel=args.qrel, judge=args.judge,
            dataset_dir=args.dataset, collection=args.collection,
            filter_by_oracle=args.filter_by_oracle, eta=args.eta, alpha=args.alpha, ks=args.k,
            density_weight=args.density_weight, tokenizer=args.tokenizer, name=args.name)
    else:
        if args.dataset is None:
            raise DataError("give --dataset, --crux-root, or --qrel with --judge")
        result = evaluate_run(args.dataset, run=args.run, contexts=args.contexts, eta=args.eta,
                              alpha=args.alpha, ks=args.k, density_weight=args.density_weight,
                              tokenizer=args.tokenizer, judgments=args.judgments,
                              collection=args.collection, name=args.name,
                              allow_empty=args.allow_empty,
                              relevance_grades=args.relevance_grades)
    if args.output is not None:
        if result is not None:
            write_tsv(args.output / "per_query.tsv", result.per_query)
            write_tsv(args.output / "aggregate.tsv", result.aggregate)
        if authors is not None:
            write_json(args.output / "crux_eval.json", authors.to_json())
    if args.json:
        out = {} if result is None else {
            **result.info, "aggregate": [{k: nan_to_none(v) for k, v in row.items()}
                                         for row in result.aggregate.to_dict(orient="records")]}
        if authors is not None:
            out["crux_eval"] = authors.to_json()
        print(json.dumps(out, indent=2))
        return 0
    if result is not None:
        _print_evaluation(result)
    elif authors is not None:
        print("the workflow's scorer needs the passage texts: give --collection, or clone "
              "crux-mds-corpus beside the subset folder")
    if authors is not None:
        print("\nthe CRUX authors' script (rac_eval.py):")
        print(authors.line())
        for w in authors.warnings:
            print(f"  {w}")
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def _print_evaluation(result) -> None:
    print(result.aggregate.to_markdown(index=False, floatfmt=".4f"))
    info = result.info
    print(f"\n{info['topics_evaluated']} topics evaluated (eta={info['eta']}, "
          f"judgments {info['judgments']}, tokens {info['tokenizer']})")
    for key, what in (("missing_in_run", "judged topics not in the input, scored as empty "
                       "contexts"),
                      ("topics_not_evaluated", "topics without an answerable question, "
                       "not evaluated")):
        ids = info[key]
        if ids:
            shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
            print(f"{len(ids)} {what}: {shown}")


def add_command(subparsers) -> None:
    """Add ``cruxflow evaluate`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "evaluate", help="score a retrieval run or contexts against a dataset",
        description="Score one retrieval run (TREC) or its contexts (JSONL) "
                    "against a prepared dataset: CRUX and IR metrics per topic "
                    "and their means per context size k. See docs/evaluate.md.")
    p.add_argument("--dataset", type=Path,
                   help="prepared dataset directory (topics.jsonl, passages/, "
                        "answerability.jsonl)")
    p.add_argument("--crux-root", type=Path,
                   help="a CRUX release subset folder (crux-mds-duc04): score --run with the "
                        "authors' script on its qrels/ and judge/, and with the workflow's "
                        "scorer on the dataset they make when the passage texts are known")
    p.add_argument("--qrel", type=Path,
                   help="with --judge: the diversity qrels of the authors' script")
    p.add_argument("--judge", type=Path,
                   help="with --qrel: the judge ratings (file or folder) of the authors' script")
    p.add_argument("--filter-by-oracle", action="store_true",
                   help="the authors' Cov@10 counts only the questions the judged passages "
                        "answer")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", type=Path, help="TREC run file: qid Q0 passage rank score tag")
    src.add_argument("--contexts", type=Path,
                     help='JSONL, one line per topic: {"topic_id": ..., "passages": [ids, best '
                          'first]} ("context" is accepted for "passages")')
    p.add_argument("--eta", type=types.eta, default=3,
                   help="answerability threshold, 1-5 (default 3)")
    p.add_argument("--alpha", type=types.unit_interval, default=0.5,
                   help="alpha-nDCG redundancy penalty (default 0.5)")
    p.add_argument("--k", type=parse_k_list, metavar="K[,K...]",
                   help="context sizes: 'oracle' (|Z*|), 'all' (each list as given) or a "
                        "number (default: oracle,10,20 for --run, all for --contexts)")
    p.add_argument("--density-weight", type=types.non_negative, default=0.5,
                   help="exponent w of Den, Eq. 6 (default 0.5)")
    p.add_argument("--tokenizer",
                   help="local tokenizer.json (or a directory holding one) for Den's token "
                        "counts (default: the regex counter)")
    p.add_argument("--relevance-grades", choices=["2-1", "3-2-1"], default="2-1",
                   help="nDCG's grades: P** 2, rest of P* 1 (default), or the CRUX authors' "
                        "P** 3, passages dominated by P** 1, rest of P* 2")
    p.add_argument("--judgments", type=Path,
                   help="judgments.jsonl to use instead of deriving them from the dataset's "
                        "ratings (derived with --eta: another eta is an error)")
    p.add_argument("--collection", type=Path,
                   help="passage collection (JsonCollection file, or a directory holding "
                        "passages.jsonl) when the run searched a corpus larger than the "
                        "dataset's own passages")
    p.add_argument("--name", help="system name in the tables (default: the input's file stem)")
    p.add_argument("--output", type=Path,
                   help="directory to write per_query.tsv and aggregate.tsv to (and "
                        "crux_eval.json, the authors' script's values)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--allow-empty", action="store_true",
                   help="score an empty run or contexts file (every topic as an empty context) "
                        "instead of failing")
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_evaluate,
                   writes=("per_query.tsv", "aggregate.tsv", "crux_eval.json"))
