"""``cruxflow export --format autonuggetizer|nuggetbank``: a dataset's sub-questions and passage
ratings as nuggets (docs/nuggets.md)."""

from __future__ import annotations

from functools import partial

from cruxflow.cli import vocabulary
from cruxflow.data.errors import DataError
from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.data.nuggets import FORMATS, autonuggetizer_records, nugget_banks


def _cmd_export(args) -> int:
    out = args.output.resolve()
    if out.exists() and not out.is_dir():
        raise DataError("is a file, not a directory", path=args.output)
    dataset = Dataset.load(args.dataset)
    if not dataset.ratings:
        raise DataError("has no answerability ratings to export (run the workflow's LLM "
                        "stages or ingest a rated CRUX release first)", path=args.dataset)
    collection = args.collection_name or args.dataset.resolve().name
    if args.format == "autonuggetizer":
        created, assigned = autonuggetizer_records(dataset, args.eta)
        files = {"nuggets.jsonl": created, "assignments.jsonl": assigned}
    else:
        files = {"nugget_banks.jsonl": nugget_banks(dataset, args.eta, collection)}
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
                    "assignments.jsonl, or NuggetBank (v3) records. See docs/nuggets.md.")
    add = partial(vocabulary.add, p)
    add("format", required=True, choices=FORMATS, detail="here the nuggets'")
    add("dataset", required=True, detail="here a rated one")
    add("output", required=True, detail="here nuggets.jsonl and assignments.jsonl "
                                        "(autonuggetizer) or nugget_banks.jsonl (nuggetbank)")
    add("eta", detail="here a passage rated this or more supports the question")
    add("collection-name")
    p.set_defaults(func=_cmd_export)
