"""``cruxflow ingest --format FORMAT --input PATH --output DIR``: read a raw corpus, write the
data model (docs/data-model.md) and print the counts. Its flags are built from the format
registry (:mod:`cruxflow.data.ingest.formats`): one flag per option of reading, with the
registry's help, default and formats."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import formats as registry
from cruxflow.data.ingest import ingest_to
from cruxflow.metrics.options import DEFAULTS


def flag(name: str) -> str:
    """An option's flag: ``max_topics`` -> ``--max-topics``."""
    return "--" + name.replace("_", "-")


def options_from_args(args) -> registry.IngestOptions:
    """The options the flags give (those not given keep the registry's defaults); a flag
    given for a format that does not read it is refused."""
    given = {name: getattr(args, name) for name in registry.options()
             if getattr(args, name) is not None}
    for name, why in registry.misapplied(args.format, given):
        value = given[name]
        raise DataError(f"{flag(name)} {why}", path=value if isinstance(value, Path) else None)
    paths = {name: [str(p) for p in value] if isinstance(value, list) else str(value)
             for name, value in given.items()
             if registry.options()[name].kind in ("path", "paths")}
    return registry.IngestOptions(**{**given, **paths})


def _cmd_ingest(args) -> int:
    summary = ingest_to(args.format, args.input, args.output, options_from_args(args),
                        eta=args.eta)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"wrote {summary['output']}")
        rows = [(key, summary[key]) for key in (
            "layout", "topics", "documents", "summaries", "passages", "rated_passages",
            "clusters_skipped", "empty_articles_skipped", "runs") if key in summary]
        rows += [(f"judgments.{key}", value)
                 for key, value in summary.get("judgments", {}).items()]
        width = max(len(key) for key, _ in rows) + 2
        for key, value in rows:
            print(f"  {key:{width}s}{value}")
        for note in summary.get("notes", []):
            print(f"  note: {note}")
    return 0


PREFIX = re.compile(registry.PREFIX_PATTERN)


# how each kind of option is read from the command line
_KINDS = {
    "text": {}, "encoding": {"type": types.encoding}, "count": {"type": types.positive_int},
    "flag": {"action": "store_const", "const": True}, "path": {"type": Path},
    "paths": {"type": Path, "nargs": "+"},
}


def _default_words(name: str, spec: registry.Option, default) -> str:
    if spec.default_help is not None:
        return spec.default_help
    if spec.kind == "flag":
        return "off"
    return str(default)


def add_command(subparsers) -> None:
    """Add ``cruxflow ingest`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "ingest", help="read a corpus into the CRUX data model",
        description="Read a corpus (" + "; ".join(
            f"{f.name}: {f.description}" for f in registry.FORMATS.values())
        + ") and write it as a dataset directory (docs/data-model.md), with its counts.")
    command = registry.COMMAND_FLAGS
    p.add_argument("--format", required=True, choices=list(registry.FORMATS),
                   help=command["format"].help)
    p.add_argument("--input", required=True, type=Path,
                   help=command["input"].help + ": " + "; ".join(
                       f"{f.name}: {f.input}" for f in registry.FORMATS.values()))
    p.add_argument("--output", required=True, type=Path, help=command["output"].help)
    plain = registry.defaults()
    for name, spec in registry.options().items():
        kwargs = dict(_KINDS.get(spec.kind, {}))
        if spec.kind == "choice":
            kwargs["choices"] = list(spec.choices)
        if name == "prefix":
            kwargs["type"] = types.name
        if spec.kind in ("path", "paths"):
            kwargs["metavar"] = "PATH"
        # None: not given (the option's default then holds, and a format that does not read
        # the option is not refused for it)
        p.add_argument(flag(name), default=None,
                       help=f"{registry.describe(name, flag)} (default: "
                            f"{_default_words(name, spec, plain[name])})", **kwargs)
    p.add_argument("--eta", type=types.eta, default=DEFAULTS.eta,
                   help=f"{command['eta'].help} (default: %(default)s)")
    p.add_argument("--json", action="store_true", help=command["json"].help)
    p.set_defaults(func=_cmd_ingest)
