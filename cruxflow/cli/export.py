"""``cruxflow export --format autonuggetizer|nuggetbank``: a dataset's sub-questions and passage
ratings as nuggets (docs/nuggets.md)."""

from __future__ import annotations

from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.data.errors import DataError
from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.data.nuggets import FORMATS, autonuggetizer_records, nugget_banks
from cruxflow.metrics.options import DEFAULTS


def _cmd_export(args) -> int:
    out = args.output.resolve()
    if out.exists() and not out.is_dir():
        raise DataError("is a file, not a directory", path=args.output)
    dataset = Dataset.load(args.dataset)
    if not dataset.ratings:
        raise DataError("has no answerability ratings to export (run the workflow's LLM "
                        "stages or ingest a rated CRUX release first)", path=args.dataset)
    collection = args.collection or args.dataset.resolve().name
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
    p = subparsers.add_parser("export", help="write a dataset's sub-questions and ratings as "
                                             "AutoNuggetizer or NuggetBank nuggets")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--dataset", required=True, type=Path, help="a rated dataset directory")
    p.add_argument("--output", required=True, type=Path,
                   help="directory for nuggets.jsonl and assignments.jsonl (autonuggetizer) or "
                        "nugget_banks.jsonl (nuggetbank)")
    p.add_argument("--eta", type=types.eta, default=DEFAULTS.eta,
                   help="rating from which a passage supports a question (default %(default)s)")
    p.add_argument("--collection", type=types.name,
                   help="NuggetBank test_collection, a name (default: the dataset folder's "
                        "name)")
    p.set_defaults(func=_cmd_export)
