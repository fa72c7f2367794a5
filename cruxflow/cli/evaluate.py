"""``cruxflow evaluate --dataset DIR (--run FILE | --contexts FILE)``: score one retrieval run (or
its contexts) against a prepared dataset with the workflow's own scorer (docs/evaluate.md); with
``--crux-root`` (a CRUX release subset) or ``--qrel`` and ``--judge``, also with the CRUX authors'
evaluation script."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.data.errors import DataError
from cruxflow.data.io import nan_to_none, write_tsv
from cruxflow.metrics.evaluate import K_ALL, evaluate_run
from cruxflow.metrics.options import DEFAULTS, RELEVANCE_GRADES, MetricOptions


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
    from cruxflow.metrics.evaluate import evaluate_release, load_texts

    inputs = args.run or args.contexts
    if args.name is not None and len(inputs) > 1:
        raise DataError("--name names one run; several runs are named by their file names")
    names = _system_names(inputs, args.name)
    release = args.crux_root is not None or args.qrel is not None or args.judge is not None
    results, authors = [], []
    options = MetricOptions(eta=args.eta, alpha=args.alpha, density_weight=args.density_weight,
                            tokenizer=args.tokenizer, relevance_grades=args.relevance_grades)
    if release:
        if args.run is None:
            raise DataError("--crux-root, --qrel and --judge score a --run")
        if args.crux_root is None and (args.qrel is None or args.judge is None):
            raise DataError("give --qrel and --judge together (or --crux-root)")
        for run, name in zip(inputs, names, strict=True):
            result, by_script = evaluate_release(
                run=run, crux_root=args.crux_root, qrel=args.qrel, judge=args.judge,
                dataset_dir=args.dataset, collection=args.collection,
                filter_by_oracle=args.filter_by_oracle, options=options, ks=args.k,
                name=name, strict_collection=args.strict_collection)
            results.append(result)
            authors.append(by_script)
    else:
        if args.dataset is None:
            raise DataError("give --dataset, --crux-root, or --qrel with --judge")
        # the dataset and passage texts are read once for every run
        dataset, texts = load_texts(args.dataset, args.collection)
        for source, name in zip(inputs, names, strict=True):
            kind = {"run": source} if args.run else {"contexts": source}
            result = evaluate_run(dataset=dataset, texts=texts, options=options, ks=args.k,
                                  judgments=args.judgments, name=name,
                                  allow_empty=args.allow_empty,
                                  strict_collection=args.strict_collection, **kind)
            result.info["dataset"] = str(args.dataset)
            results.append(result)
    scored = [r for r in results if r is not None]
    for r in scored:   # the tie warning, once per run
        for line in r.info.get("warnings", []):
            print(f"cruxflow: warning: {r.info['system']}: {line}", file=sys.stderr)
    paired = _paired(scored, args) if len(scored) > 1 and args.paired != "none" else None
    if len(inputs) == 1:
        return _report_one(args, results[0], authors[0] if authors else None)
    import pandas as pd

    per_query = pd.concat([r.per_query for r in scored], ignore_index=True) if scored else None
    table = pd.concat([r.aggregate for r in scored], ignore_index=True) if scored else None
    if args.output is not None:
        if per_query is not None:
            write_tsv(args.output / "per_query.tsv", per_query)
            write_tsv(args.output / "aggregate.tsv", table)
        if paired is not None:
            write_tsv(args.output / "paired.tsv", pd.DataFrame(paired))
        if authors:
            write_json(args.output / "crux_eval.json", {"runs": [a.to_json() for a in authors]})
    if args.json:
        out = {"runs": [r.info for r in scored],
               "aggregate": [] if table is None else [
                   {k: nan_to_none(v) for k, v in row.items()}
                   for row in table.to_dict(orient="records")],
               "paired": paired or []}
        if authors:
            out["crux_eval"] = [a.to_json() for a in authors]
        print(json.dumps(out, indent=2))
        return 0
    if table is not None:
        print(table.to_markdown(index=False, floatfmt=".4f"))
        for r in scored:
            _print_notes(r.info, f"{r.info['system']}: ")
    if paired:
        _print_paired(paired)
    if authors:
        print("\nthe CRUX authors' script (rac_eval.py):")
        for a in authors:
            print(a.line())
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def _system_names(inputs: list[Path], name: str | None) -> list[str]:
    """``--name``, or each input's file stem, a repeated one numbered (``bm25 (2)``)."""
    names: list[str] = []
    for path in inputs:
        label, n = name or path.stem, 1
        while label in names:
            n += 1
            label = f"{name or path.stem} ({n})"
        names.append(label)
    return names


def _paired(results, args) -> list[dict]:
    """Paired tests between every pair of systems, per context size and metric, Holm-adjusted
    over the pairs (:func:`cruxflow.metrics.stats.compare`)."""
    from cruxflow.metrics.stats import compare

    first = results[0].aggregate
    metrics = [c for c in first.columns if c not in ("system", "k", "topics", "missing_in_run")]
    rows = []
    for k in first["k"].unique():
        per_topic = {}
        for r in results:
            frame = r.per_query[r.per_query["k"] == k].set_index("topic")[metrics]
            per_topic[r.info["system"]] = {t: {m: nan_to_none(v) for m, v in row.items()}
                                           for t, row in frame.iterrows()}
        rows += [{"k": str(k), **row} for row in compare(
            per_topic, metrics, n_resamples=args.resamples, seed=args.seed,
            tests=types.PAIRED_CHOICES[args.paired])]
    return rows


def _print_paired(rows) -> None:
    print("\npaired tests between every pair of systems, two-sided, over the topics both "
          "define; p-values Holm-adjusted over the pairs of each k and metric:")
    header = ("k", "metric", "a", "b", "topics", "a - b", "p t-test", "(Holm)", "p random.",
              "(Holm)")
    table = [header] + [
        (r["k"], r["measure"], r["a"], r["b"], str(r["topics"]), _num(r["diff"]),
         _num(r["p_t_test"]), _num(r["p_t_test_holm"]), _num(r["p_randomization"]),
         _num(r["p_randomization_holm"])) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) if i < 4 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _report_one(args, result, authors) -> int:
    from cruxflow.data.io import write_json

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
          f"judgments {info['judgments']}, tokens {info['tokenizer']}); a measure's column in "
          "the row of size k is that measure @k (Cov in row 10: Cov@10; docs/evaluate.md)")
    _print_notes(info)


def _print_notes(info: dict, prefix: str = "") -> None:
    for key, what in (("missing_in_run", "judged topics not in the input, scored as empty "
                       "contexts"),
                      ("topics_not_evaluated", "topics without an answerable question, "
                       "not evaluated")):
        ids = info[key]
        if ids:
            shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
            print(f"{prefix}{len(ids)} {what}: {shown}")
    if info.get("run_lines_outside_collection"):
        print(f"{prefix}warning: {info['run_lines_outside_collection']} run lines rank a "
              "passage outside the collection: scored as unjudged (rated 0); "
              "--strict-collection refuses them")
    for k, ids in info.get("den_undefined_no_text", {}).items():
        print(f"{prefix}warning: Den undefined at k={k} for {len(ids)} topics whose context "
              "ranks a passage without text: " + ", ".join(ids[:10])
              + (", ..." if len(ids) > 10 else ""))


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
    src.add_argument("--run", type=Path, nargs="+", action="extend", metavar="RUN",
                     help="TREC run file(s): qid Q0 passage rank score tag; several (--run a b, "
                          "or --run a --run b) are scored in one call and compared pairwise")
    src.add_argument("--contexts", type=Path, nargs="+", action="extend", metavar="FILE",
                     help='JSONL, one line per topic: {"topic_id": ..., "passages": [ids, best '
                          'first]} ("context" is accepted for "passages"); several as --run')
    p.add_argument("--eta", type=types.eta, default=DEFAULTS.eta,
                   help="answerability threshold, 1-5 (default %(default)s)")
    p.add_argument("--alpha", type=types.unit_interval, default=DEFAULTS.alpha,
                   help="alpha-nDCG redundancy penalty (default %(default)s)")
    p.add_argument("--k", type=parse_k_list, metavar="K[,K...]",
                   help="context sizes: 'oracle' (|Z*|), 'all' (each list as given) or a "
                        "number (default: oracle,10,20 for --run, all for --contexts)")
    p.add_argument("--density-weight", type=types.non_negative, default=DEFAULTS.density_weight,
                   help="exponent w of Den, Eq. 6 (default %(default)s)")
    p.add_argument("--tokenizer",
                   help="local tokenizer.json (or a directory holding one) for Den's token "
                        "counts (default: the regex counter)")
    p.add_argument("--relevance-grades", choices=sorted(RELEVANCE_GRADES),
                   default=DEFAULTS.relevance_grades,
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
    p.add_argument("--paired", choices=list(types.PAIRED_CHOICES), default="both",
                   help="several runs: paired tests between every pair, Holm-adjusted: t-test "
                        "and randomization test (both, the default), t-test only, or none")
    p.add_argument("--resamples", type=types.positive_int, default=9999,
                   help="several runs: randomization test resamples (exact when 2^topics is "
                        "fewer)")
    p.add_argument("--seed", type=types.non_negative_int, default=0,
                   help="several runs: randomization test seed")
    p.add_argument("--output", type=types.output_dir, metavar="DIR",
                   help="directory to write per_query.tsv and aggregate.tsv to (and "
                        "crux_eval.json, the authors' script's values; paired.tsv for several "
                        "runs)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--strict-collection", action="store_true",
                   help="refuse a run that ranks a passage outside the collection (default: "
                        "score it as an unjudged passage, rated 0, and warn)")
    p.add_argument("--allow-empty", action="store_true",
                   help="score an empty run or contexts file (every topic as an empty context) "
                        "instead of failing")
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_evaluate,
                   writes=("per_query.tsv", "aggregate.tsv", "crux_eval.json", "paired.tsv"))
