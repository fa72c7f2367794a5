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
from cruxflow.data.text import printable
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
    if args.against is not None:
        return _against(args, names, inputs, options_of(args))
    # --judge alone (no --dataset) names the authors' files; with --dataset, its ratings
    release = args.crux_root is not None or args.qrel is not None or (
        args.judge is not None and args.dataset is None)
    results, authors = [], []
    options = options_of(args)
    shown = shown_columns(args.measures, options)
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
    paired = _paired(scored, policy, shown) if len(scored) > 1 and policy is not None \
        else None
    authors_paired = None
    if len(authors) > 1 and policy is not None:   # the authors' script's measures, compared too
        from cruxflow.metrics.crux_eval import compare_runs

        authors_paired = compare_runs(authors, policy, names)
    if len(inputs) == 1:
        return _report_one(args, results[0], authors[0] if authors else None, shown)
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
        out = {"runs": [r.info for r in scored], "names": column_names(options),
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
        print_table(per_query, table, shown, options)
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


def shown_columns(measures, options: MetricOptions) -> list[str]:
    """The measure columns a printed table shows: ``--measures`` (bare column names, ``all``)
    or the paper's (:data:`cruxflow.metrics.names.PAPER_COLUMNS`); the files and the JSON
    keep every column."""
    from cruxflow.metrics.names import PAPER_COLUMNS, table_columns

    columns = table_columns(options)
    if measures is None:
        return [c for c in PAPER_COLUMNS if c in columns]
    if [m.strip() for m in measures] == ["all"]:
        return columns
    out = []
    for text in measures:
        name = text.strip()
        if "@" in name:
            raise DataError(f"--measures {name}: a table's column holds its measure at every k "
                            f"of --k (give {name.split('@')[0]} and --k "
                            f"{name.split('@')[1]}), or score names with --against")
        if name not in columns:
            raise DataError(f"--measures {name}: not a column of the table (its columns: "
                            f"{' '.join(columns)}; or all)")
        out.append(name)
    return out


def column_names(options: MetricOptions) -> dict[str, str]:
    """``{column: its full name at the row's k}`` (``Judged``: ``Judged(order='score',
    topics='judged')@k``)."""
    from cruxflow.metrics.names import qualified, table_columns

    return {c: qualified(c, "k", options) for c in table_columns(options)}


def print_table(per_query, table, shown: list[str], options: MetricOptions) -> None:
    """The means of ``table`` (system, k, topics and the ``shown`` columns) as a Markdown
    table, a value above 1 and a mean over fewer topics than the row's marked, the notes on
    the marks and the legend of the columns under it (:mod:`cruxflow.metrics.labels`)."""
    from cruxflow.metrics import labels

    defined = per_query.groupby(["system", "k"], sort=False)[shown].count()
    header = ["system", "k", "topics", *shown]
    lines = ["| " + " | ".join(header) + " |", "|:---|:---|---:|" + "---:|" * len(shown)]
    above, undefined = [], {}
    for row in table.to_dict(orient="records"):
        counts = defined.loc[(row["system"], row["k"])]
        cells = []
        for c in shown:
            cells.append(labels.marked(row[c], defined=int(counts[c]), of=int(row["topics"])))
            if labels.ABOVE_ONE in cells[-1]:
                above.append(c)
            if labels.UNDEFINED in cells[-1]:   # the ks of one run with the same counts
                undefined.setdefault(c, {}).setdefault(
                    (printable(row["system"]), int(counts[c]), int(row["topics"])),
                    []).append(str(row["k"]))
        lines.append(f"| {printable(row['system'])} | {row['k']} | {int(row['topics'])} | "
                     + " | ".join(cells) + " |")
    print("\n".join(lines))
    notes = labels.footnotes(above, {c: [f"{system} k={','.join(ks)}: {n} of {of} topics"
                                         for (system, n, of), ks in where.items()]
                                     for c, where in undefined.items()})
    full = column_names(options)
    legend = labels.legend({c: labels.gloss(full[c]) for c in shown},
                           "columns (each at the row's k; oracle: k = |Z*|, the oracle "
                           "context's size):")
    print("\n" + "\n".join(notes + legend))


def print_means(scored: list, measures: list[str]) -> None:
    """``--against``'s table: each run's means (``scored``: ``(name, cruxflow.evaluate's
    frame)``) under short labels, marked as :func:`print_table` marks them (a mean over fewer
    topics than the name covers: some undefined, ``attrs["undefined"]``), the legend of the
    labels that shorten a name under it."""
    from cruxflow.metrics import labels

    short = labels.short_labels(measures)
    lines = ["| system | topics | missing_in_run | " + " | ".join(short.values()) + " |",
             "|:---|---:|---:|" + "---:|" * len(measures)]
    above, undefined = [], {}
    for name, frame in scored:
        cells = []
        for m in measures:
            n = int(frame[m].count())
            left = len(frame.attrs["undefined"].get(m, []))
            cells.append(labels.marked(frame[m].mean(), defined=n, of=n + left))
            if labels.ABOVE_ONE in cells[-1]:
                above.append(m)
            if left:
                undefined.setdefault(short[m], []).append(
                    f"{printable(name)}: {n} of {n + left} topics")
        lines.append(f"| {printable(name)} | {len(frame)} | "
                     f"{len(frame.attrs['missing_in_run'])} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    notes = labels.footnotes(above, undefined)
    legend = labels.legend({label: labels.gloss(m) for m, label in short.items()
                            if label != m}, "labels:")
    if notes or legend:
        print("\n" + "\n".join(notes + legend))


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
    import warnings

    import pandas as pd

    from cruxflow.metrics.api import evaluate
    from cruxflow.metrics.inputs import as_judgments, read_texts, texts_beside

    if args.against is None:
        raise DataError("--measures scores --run against --against JUDGMENTS")
    other = [f for f in ("dataset", "crux_root", "qrel", "judge", "judgments", "contexts")
             if getattr(args, f) is not None]
    if other:
        raise DataError(f"--against gives the judgments: not with --{other[0].replace('_', '-')}"
                        " (score contexts as a run)")
    resolved = _judgments_against(args.against)
    judgments = as_judgments(resolved, options.eta)   # read once, and the texts
    texts = read_texts(args.collection) if args.collection else texts_beside(resolved)[0]
    frames, rows, scored = [], [], []
    for name, run in zip(names, inputs, strict=True):
        with warnings.catch_warnings(record=True) as said:   # as the other routes say them
            warnings.simplefilter("always")
            frame = evaluate(run, judgments, args.measures, options=options, texts=texts)
        for w in said:
            print(f"cruxflow: warning: {printable(name)}: {w.message}", file=sys.stderr)
        measures = list(frame.columns)
        scored.append((name, frame))
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
    print_means(scored, measures)
    print(f"\nagainst {args.against} (eta={options.eta}), as cruxflow.evaluate scores: the "
          "mean of each measure over the topics it covers (docs/evaluate.md)")
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def _paired(results, policy, metrics: list[str]) -> list[dict]:
    """Paired tests between every pair of systems, per context size and measure (of the
    table's ``metrics``), by ``policy`` (:func:`cruxflow.metrics.stats.pairwise_tests`; the
    family: the pairs of one k and measure)."""
    from cruxflow.metrics.stats import pairwise_tests

    first = results[0].aggregate
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
    import textwrap

    from cruxflow.metrics.labels import WIDTH

    print()
    print("\n".join(textwrap.wrap(f"paired tests between every pair of systems over the "
                                  f"topics both define: {policy.describe(family)}:", WIDTH)))
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


def _report_one(args, result, authors, shown: list[str]) -> int:
    from cruxflow.data.io import write_json

    if args.output is not None:
        if result is not None:
            write_tsv(args.output / "per_query.tsv", result.per_query)
            write_tsv(args.output / "aggregate.tsv", result.aggregate)
        if authors is not None:
            write_json(args.output / "crux_eval.json", authors.to_json())
    if args.json:
        out = {} if result is None else {
            **result.info, "names": column_names(options_of(args)),
            "aggregate": [{k: nan_to_none(v) for k, v in row.items()}
                                         for row in result.aggregate.to_dict(orient="records")]}
        if authors is not None:
            out["crux_eval"] = authors.to_json()
        print(json.dumps(out, indent=2))
        return 0
    if result is not None:
        _print_evaluation(result, shown, options_of(args))
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


def _print_evaluation(result, shown: list[str], options: MetricOptions) -> None:
    print_table(result.per_query, result.aggregate, shown, options)
    info = result.info
    print(f"\n{info['topics_evaluated']} topics evaluated (eta={info['eta']}, "
          f"judgments {info['judgments']}, tokens {info['tokenizer']}); --measures all "
          "prints every column (docs/what-to-report.md)")
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
    from cruxflow.metrics.evaluate import evaluation_notes

    for line in evaluation_notes(info):
        print(f"{prefix}{line}")


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
    add("measures", detail="here, with --against, names (Cov@10 nDCG@10); else the table's "
                           "columns to print, bare (nDCG R), or all (without it: Cov "
                           "alpha_nDCG_crux Den Judged); the files and --json keep every "
                           "column")
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
