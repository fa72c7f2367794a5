"""``cruxflow evaluate --dataset DIR (--run FILE | --contexts FILE)``: score one retrieval run (or
its contexts) against a prepared dataset with the workflow's own scorer (docs/evaluate.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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
    result = evaluate_run(args.dataset, run=args.run, contexts=args.contexts, eta=args.eta,
                          alpha=args.alpha, ks=args.k, density_weight=args.density_weight,
                          tokenizer=args.tokenizer, judgments=args.judgments,
                          collection=args.collection, name=args.name,
                          relevance_grades=args.relevance_grades)
    if args.output is not None:
        write_tsv(args.output / "per_query.tsv", result.per_query)
        write_tsv(args.output / "aggregate.tsv", result.aggregate)
    if args.json:
        rows = [{k: nan_to_none(v) for k, v in row.items()}
                for row in result.aggregate.to_dict(orient="records")]
        print(json.dumps({**result.info, "aggregate": rows}, indent=2))
        return 0
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
    if args.output is not None:
        print(f"wrote {args.output / 'per_query.tsv'} and {args.output / 'aggregate.tsv'}")
    return 0




def add_command(subparsers) -> None:
    """Add ``cruxflow evaluate`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "evaluate", help="score a retrieval run or contexts against a dataset",
        description="Score one retrieval run (TREC) or its contexts (JSONL) "
                    "against a prepared dataset: CRUX and IR metrics per topic "
                    "and their means per context size k. See docs/evaluate.md.")
    p.add_argument("--dataset", required=True, type=Path,
                   help="prepared dataset directory (topics.jsonl, passages/, "
                        "answerability.jsonl)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", type=Path, help="TREC run file: qid Q0 passage rank score tag")
    src.add_argument("--contexts", type=Path,
                     help='JSONL, one line per topic: {"topic_id": ..., "passages": [ids, best '
                          'first]} ("context" is accepted for "passages")')
    p.add_argument("--eta", type=int, default=3, help="answerability threshold (default 3)")
    p.add_argument("--alpha", type=float, default=0.5,
                   help="alpha-nDCG redundancy penalty (default 0.5)")
    p.add_argument("--k", type=parse_k_list, metavar="K[,K...]",
                   help="context sizes: 'oracle' (|Z*|), 'all' (each list as given) or a "
                        "number (default: oracle,10,20 for --run, all for --contexts)")
    p.add_argument("--density-weight", type=float, default=0.5,
                   help="exponent w of Den, Eq. 6 (default 0.5)")
    p.add_argument("--tokenizer",
                   help="local tokenizer.json (or a directory holding one) for Den's token "
                        "counts (default: the regex counter)")
    p.add_argument("--relevance-grades", choices=["2-1", "3-2-1"], default="2-1",
                   help="nDCG's grades: P** 2, rest of P* 1 (default), or the CRUX authors' "
                        "P** 3, passages dominated by P** 1, rest of P* 2")
    p.add_argument("--judgments", type=Path,
                   help="judgments.jsonl to use instead of deriving them from the dataset's "
                        "ratings (must match --eta)")
    p.add_argument("--collection", type=Path,
                   help="passage collection (JsonCollection file, or a directory holding "
                        "passages.jsonl) when the run searched a corpus larger than the "
                        "dataset's own passages")
    p.add_argument("--name", help="system name in the tables (default: the input's file stem)")
    p.add_argument("--output", type=Path,
                   help="directory to write per_query.tsv and aggregate.tsv to")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_evaluate)
