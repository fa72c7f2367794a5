"""``cruxflow export --format autonuggetizer|nuggetbank|tevatron``: a dataset's sub-questions
and passage ratings as nuggets (docs/nuggets.md), or its topics with a run's passages bucketed
by coverage as Tevatron training data (docs/training-data.md)."""

from __future__ import annotations

from functools import partial

from cruxflow.cli import vocabulary
from cruxflow.data.errors import DataError
from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.data.names import split_name
from cruxflow.data.nuggets import FORMATS as NUGGET_FORMATS
from cruxflow.data.nuggets import autonuggetizer_records, nugget_banks
from cruxflow.data.training import (
    CARD_FILE,
    TevatronOptions,
    training_data,
    write_training_data,
)
from cruxflow.data.training import FORMAT as TEVATRON
from cruxflow.metrics.options import DEFAULTS

FORMATS = (*NUGGET_FORMATS, TEVATRON)


def _tevatron(args, dataset: Dataset, collection: str) -> dict:
    """The files of ``--format tevatron`` written, with their row counts."""
    options = TevatronOptions(
        eta=TevatronOptions.eta if args.eta is None else args.eta,
        positive_depth=args.positive_depth, negative_depth=args.negative_depth,
        negatives=args.negatives)
    data = training_data(dataset, split_name(args.run)[1], options, name=collection,
                         strict_collection=args.strict_collection)
    for note in data.notes:
        print(f"warning: {note}")
    if data.without_text:
        shown = ", ".join(data.without_text[:3]) + (", ..." if len(data.without_text) > 3 else "")
        print(f"warning: {len(data.without_text)} passages of the rows have no text in the "
              f"dataset, so no corpus row ({shown}): ingest the whole collection "
              "(--collection) to have them; --strict-collection refuses them")
    written = write_training_data(data, args.output)
    empty = [split for split, rows in data.splits.items() if not rows]
    if empty:
        print(f"no row of {', '.join(empty)}: not written")
    return written


def _cmd_export(args) -> int:
    out = args.output.resolve()
    if out.exists() and not out.is_dir():
        raise DataError("is a file, not a directory", path=args.output)
    if (args.run is None) != (args.format != TEVATRON):
        raise DataError(f"--run goes with --format {TEVATRON} (the run whose passages are "
                        "sorted into positives and negatives), and only with it")
    dataset = Dataset.load(args.dataset)
    if not dataset.ratings:
        raise DataError("has no answerability ratings to export (run the workflow's LLM "
                        "stages or ingest a rated CRUX release first)", path=args.dataset)
    collection = args.collection_name or args.dataset.resolve().name
    if args.format == TEVATRON:
        for path, n in _tevatron(args, dataset, collection).items():
            print(f"wrote {path} ({n} records)")
        print(f"wrote {args.output / CARD_FILE} (the dataset card: datasets.load_dataset reads "
              "the folder)")
        return 0
    eta = DEFAULTS.eta if args.eta is None else args.eta
    if args.format == "autonuggetizer":
        created, assigned = autonuggetizer_records(dataset, eta)
        files = {"nuggets.jsonl": created, "assignments.jsonl": assigned}
    else:
        files = {"nugget_banks.jsonl": nugget_banks(dataset, eta, collection)}
    for name, rows in files.items():
        n = write_jsonl(args.output / name, rows)
        print(f"wrote {args.output / name} ({n} records)")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow export`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "export",
        description="Write a rated dataset's sub-questions as nuggets and its passage ratings "
                    "from --eta on as their support: AutoNuggetizer's nuggets.jsonl and "
                    "assignments.jsonl, or NuggetBank (v3) records (docs/nuggets.md). Or "
                    "(tevatron) write its topics with the passages of --run sorted by "
                    "coverage into positives and negatives, the splits and corpus the CoveR "
                    "authors train with, as JSONL that datasets.load_dataset('json') reads "
                    "(docs/training-data.md).")
    add = partial(vocabulary.add, p)
    add("format", required=True, choices=FORMATS, detail="here the nuggets' or tevatron")
    add("dataset", required=True, detail="here a rated one")
    add("output", required=True, detail="here nuggets.jsonl and assignments.jsonl "
                                        "(autonuggetizer), nugget_banks.jsonl (nuggetbank), "
                                        "or one <split>.jsonl per split and corpus.jsonl "
                                        "(tevatron)")
    add("eta", default=None, keep_unset=True,
        detail="here a passage rated this or more supports the question; tevatron: the "
               f"CoveR authors' tau, {TevatronOptions.eta} unless given")
    add("collection-name")
    add("run", single=True, detail="tevatron, and required there: its passages are the "
                                   "training rows'")
    add("positive-depth", default=TevatronOptions.positive_depth, detail="tevatron")
    add("negative-depth", default=TevatronOptions.negative_depth,
        detail="tevatron: those of the plain split; the deep ones that pad the others come "
               "after the first N + 1, as in the authors' script")
    add("negatives", default=TevatronOptions.negatives, detail="tevatron")
    add("strict-collection")
    p.set_defaults(func=_cmd_export)
