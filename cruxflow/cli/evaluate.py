"""``cruxflow evaluate --dataset DIR (--run FILE [FILE ...] | --contexts FILE [FILE ...])``: score
retrieval runs (or their contexts), one or many in one call with paired tests between them,
against a prepared dataset with the workflow's own scorer (docs/evaluate.md); with
``--crux-root`` (a CRUX release subset) or ``--qrel`` and ``--judge``, also with the CRUX authors'
evaluation script."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.cli import vocabulary
from cruxflow.data.errors import DataError
from cruxflow.data.io import nan_to_none, write_tsv
from cruxflow.data.names import named_inputs
from cruxflow.data.text import printable, printable_cells
from cruxflow.metrics.evaluate import evaluate_runs
from cruxflow.metrics.options import MetricOptions


def _cmd_evaluate(args) -> int:
    from cruxflow.data.io import write_json
    from cruxflow.metrics.evaluate import evaluate_releases

    named = named_inputs(args.run or args.contexts, "runs" if args.run else "contexts files")
    inputs = [Path(path) for _, path in named]
    if args.run_name is not None and len(inputs) > 1:
        raise DataError("--run-name names one run; several runs are named by their file names")
    names = [args.run_name] if args.run_name is not None else [name for name, _ in named]
    if args.against is not None or args.measures is not None:
        return _against(args, names, inputs, options_of(args))
    # --judge alone (no --dataset) names the authors' files; with --dataset, its ratings
    release = args.crux_root is not None or args.qrel is not None or (
        args.judge is not None and args.dataset is None)
    results, authors = [], []
    options = options_of(args)
    if release:
        if args.run is None:
            raise DataError("--crux-root, --qrel and --judge score a --run")
        if args.crux_root is None and (args.qrel is None or args.judge is None):
            raise DataError("give --qrel and --judge together (or --crux-root)")
        # the release (and the dataset, the scorer) read and made once for every run
        for result, by_script in evaluate_releases(
                runs=inputs, crux_root=args.crux_root, qrel=args.qrel, judge=args.judge,
                dataset_dir=args.dataset, collection=args.collection,
                filter_by_oracle=args.filter_by_oracle, options=options, ks=args.k,
                names=names, strict_collection=args.strict_collection):
            results.append(result)
            authors.append(by_script)
    else:
        if args.dataset is None:
            raise DataError("give --dataset, --crux-root, or --qrel with --judge")
        # the dataset, its judgments and the scorer are made once for every run
        kind = {"runs": inputs} if args.run else {"contexts": inputs}
        results = evaluate_runs(args.dataset, options=options, ks=args.k,
                                judgments=args.judgments, collection=args.collection,
                                names=names, allow_empty=args.allow_empty,
                                strict_collection=args.strict_collection, judge=args.judge,
                                **kind)
        for result in results:
            result.info["dataset"] = str(args.dataset)
    scored = [r for r in results if r is not None]
    for r in scored:   # the tie warning, once per run
        for line in r.info.get("warnings", []):
            print(f"cruxflow: warning: {printable(r.info['system'])}: {line}", file=sys.stderr)
    policy = vocabulary.paired_policy(args)
    paired = _paired(scored, policy) if len(scored) > 1 and policy is not None else None
    authors_paired = None
    if len(authors) > 1 and policy is not None:   # the authors' script's measures, compared too
        from cruxflow.metrics.crux_eval import compare_runs

        authors_paired = compare_runs(authors, policy, names)
    if len(inputs) == 1:
        return _report_one(args, results[0], authors[0] if authors else None)
    import pandas as pd

    per_query = pd.concat([r.per_query for r in scored], ignore_index=True) if scored else None
    table = pd.concat([r.aggregate for r in scored], ignore_index=True) if scored else None
    if args.output is not None:
        if per_query is not None:
            write_tsv(args.output / "per_query.tsv", per_query)
            write_tsv(args.output / "aggregate.tsv", table)
        if paired is not None or authors_paired is not None:
            write_tsv(args.output / "paired.tsv", pd.DataFrame(
                [{"source": "cruxflow", **r} for r in paired or []]
                + [{"source": "crux_eval", **r} for r in authors_paired or []]))
        if authors:
            write_json(args.output / "crux_eval.json", {"runs": [a.to_json() for a in authors]})
    if args.json:
        out = {"runs": [r.info for r in scored],
               "aggregate": [] if table is None else [
                   {k: nan_to_none(v) for k, v in row.items()}
                   for row in table.to_dict(orient="records")],
               "paired": paired or []}
        if policy is not None and (paired or authors_paired):
            out["paired_policy"] = policy.to_json()
        if authors:
            out["crux_eval"] = [a.to_json() for a in authors]
        if authors_paired:
            out["crux_eval_paired"] = authors_paired
        print(json.dumps(out, indent=2))
        return 0
    if table is not None:
        print(printable_cells(table).to_markdown(index=False, floatfmt=".4f"))
        for r in scored:
            _print_notes(r.info, f"{printable(r.info['system'])}: ")
    _print_sources(scored[0] if scored else None, authors[0] if authors else None)
    if paired:
        _print_paired(paired, policy, "k and measure")
    if authors:
        print("\nthe CRUX authors' script (rac_eval.py):")
        for a in authors:
            print(a.line())
    if authors_paired:
        _print_paired(authors_paired, policy, "measure of the authors' script")
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def options_of(args) -> MetricOptions:
    return MetricOptions(eta=args.eta, alpha=args.alpha, density_weight=args.density_weight,
                         tokenizer=args.tokenizer, relevance_grades=args.relevance_grades)


# ``--against relevance=FILE``: the part of cruxflow.Judgments a file is given as
AGAINST_PARTS = ("relevance", "ratings", "qrels")


def _judgments_against(text: str):
    """``--against``'s value as cruxflow.evaluate's ``judgments``: ``relevance=FILE`` (and
    ``ratings=``, ``qrels=``) as that part of :class:`~cruxflow.metrics.inputs.Judgments`, a
    registered name as its set's judgments, anything else as cruxflow.evaluate reads it."""
    from cruxflow.datasets import resolve, resolve_judgments
    from cruxflow.metrics.inputs import Judgments

    part, sep, rest = text.partition("=")
    if sep and part in AGAINST_PARTS:
        return Judgments(**{part: resolve(rest)}, source=rest)
    return resolve_judgments(text)


def _against(args, names: list[str], inputs: list[Path], options: MetricOptions) -> int:
    """``--against JUDGMENTS --measures NAME...``: each run scored by cruxflow.evaluate (the
    Python API's values, its topics and its conventions), the means per run printed."""
    import pandas as pd

    from cruxflow.metrics.api import DEFAULT_MEASURES, evaluate
    from cruxflow.metrics.inputs import as_judgments

    if args.against is None:
        raise DataError("--measures scores --run against --against JUDGMENTS")
    other = [f for f in ("dataset", "crux_root", "qrel", "judge", "judgments", "contexts")
             if getattr(args, f) is not None]
    if other:
        raise DataError(f"--against gives the judgments: not with --{other[0].replace('_', '-')}"
                        " (score contexts as a run)")
    judgments = as_judgments(_judgments_against(args.against), options.eta)   # read once
    measures = args.measures or list(DEFAULT_MEASURES)
    frames, rows = [], []
    for name, run in zip(names, inputs, strict=True):
        frame = evaluate(run, judgments, measures, options=options)
        per = frame.reset_index()
        per.insert(0, "system", name)
        frames.append(per)
        rows.append({"system": name, "topics": len(frame),
                     "missing_in_run": len(frame.attrs["missing_in_run"]),
                     **frame.mean().to_dict()})
    per_query, table = pd.concat(frames, ignore_index=True), pd.DataFrame(rows)
    if args.output is not None:
        write_tsv(args.output / "per_query.tsv", per_query)
        write_tsv(args.output / "aggregate.tsv", table)
    if args.json:
        print(json.dumps({"judgments": judgments.source, "measures": measures,
                          "aggregate": [{k: nan_to_none(v) for k, v in r.items()}
                                        for r in table.to_dict(orient="records")],
                          "per_query": [{k: nan_to_none(v) for k, v in r.items()}
                                        for r in per_query.to_dict(orient="records")]},
                         indent=2))
        return 0
    print(table.to_markdown(index=False, floatfmt=".4f"))
    print(f"\nagainst {args.against} (eta={options.eta}), as cruxflow.evaluate scores: the "
          "mean of each measure over the topics it covers (docs/evaluate.md)")
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def _paired(results, policy) -> list[dict]:
    """Paired tests between every pair of systems, per context size and measure, by
    ``policy`` (:func:`cruxflow.metrics.stats.pairwise_tests`; the family: the pairs of one
    k and measure)."""
    from cruxflow.metrics.stats import pairwise_tests

    first = results[0].aggregate
    metrics = [c for c in first.columns if c not in ("system", "k", "topics", "missing_in_run")]
    families = []
    for k in first["k"].unique():
        frames = {r.info["system"]: r.per_query[r.per_query["k"] == k].set_index("topic")
                  for r in results}
        families += [({"k": str(k), "measure": m},
                      {name: frame[m].to_dict() for name, frame in frames.items()})
                     for m in metrics]
    topics = max(r.per_query["topic"].nunique() for r in results)
    types.say_paired_work(policy, topics, len(families) * len(results) * (len(results) - 1) // 2)
    return pairwise_tests(families, policy)



def _print_paired(rows, policy, family: str) -> None:
    print(f"\npaired tests between every pair of systems over the topics both define: "
          f"{policy.describe(family)}:")
    keys = ["k"] if "k" in rows[0] else []
    header = (*keys, "measure", "a", "b", "topics", "a - b", "p", policy.adjusted_header)
    table = [header] + [
        (*(r[k] for k in keys), r["measure"], printable(r["a"]), printable(r["b"]),
         str(r["topics"]), _num(r["diff"]), _num(r["p"]), _num(r["p_adjusted"])) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) if i < len(keys) + 3 else c.rjust(w)
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
    _print_sources(result, authors)
    if result is None and authors is not None:
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
    print(printable_cells(result.aggregate).to_markdown(index=False, floatfmt=".4f"))
    info = result.info
    print(f"\n{info['topics_evaluated']} topics evaluated (eta={info['eta']}, "
          f"judgments {info['judgments']}, tokens {info['tokenizer']}); a measure's column in "
          "the row of size k is that measure @k (Cov in row 10: Cov@10; docs/evaluate.md)")
    _print_notes(info)


def _print_sources(result, authors) -> None:
    """How many of the ratings read are original and how many added (cruxflow judge's), when
    some are added: one line (the runs of one call read the same ratings)."""
    from cruxflow.data.ingest.crux_human import merge_note
    from cruxflow.data.ingest.crux_sources import sources_note

    summary = result.info.get("ratings") if result is not None else None
    summary = summary or (authors.info.get("judge") if authors is not None else None)
    if summary is None and result is not None and result.info.get("dataset"):
        summary = _ingested_ratings(result.info["dataset"])
    for note in (sources_note(summary), merge_note(summary)):
        if note:
            print(note)


def _ingested_ratings(dataset) -> dict | None:
    """What ingest counted of a dataset's ratings (its manifest's), for the notes above."""
    from cruxflow.data.io import read_json
    from cruxflow.data.names import MANIFEST

    path = Path(dataset) / MANIFEST
    if not path.is_file():
        return None
    counts = read_json(path).get("ingest", {}).get("counts", {})
    return counts.get("judge") if isinstance(counts, dict) else None


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
    p = vocabulary.command(
        subparsers, "evaluate",
        description="Score retrieval runs (TREC) or their contexts (JSONL), one or many in "
                    "one call, against a prepared dataset, a CRUX release or judgments: CRUX "
                    "and IR metrics per topic and their means per context size k, with "
                    "paired tests between every pair of runs. See docs/evaluate.md.")
    add = partial(vocabulary.add, p)
    add("dataset")
    add("crux-root", detail="scores --run with both")
    add("qrel", detail="with --judge, scores --run with the authors' script")
    add("judge", detail="read as one, original and added ratings together (docs/ratings.md, "
                        "'Holes'); with --dataset, in place of its ratings; with --crux-root, in "
                        "place of its judge/; with --qrel, scores --run with the authors' "
                        "script")
    add("filter-by-oracle")
    src = p.add_mutually_exclusive_group(required=True)
    vocabulary.add(src, "run", detail="several are also compared pairwise")
    vocabulary.add(src, "contexts")
    add("eta")
    add("alpha")
    add("k", default=None, default_text="oracle 10 20 for --run, all for --contexts")
    add("density-weight")
    add("tokenizer", detail="here Den's token counts")
    add("relevance-grades")
    add("judgments")
    add("against", detail="here scores --run with cruxflow.evaluate, in place of --dataset")
    add("measures", detail="here with --against")
    add("collection", detail="for a run that searched a corpus larger than the dataset's own "
                             "passages")
    add("run-name")
    vocabulary.add_paired_options(p)
    add("output", detail="here per_query.tsv and aggregate.tsv (and crux_eval.json, the "
                         "authors' script's values; paired.tsv for several runs)")
    add("json")
    add("strict-collection")
    add("allow-empty", detail="here every topic then scores as an empty context")
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_evaluate,
                   writes=("per_query.tsv", "aggregate.tsv", "crux_eval.json", "paired.tsv"))
