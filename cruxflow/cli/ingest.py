"""``cruxflow ingest --format FORMAT --input PATH --output DIR``: read a raw corpus, write the
data model (docs/data-model.md) and print the counts. Its flags are built from the format
registry (:mod:`cruxflow.data.ingest.formats`): one flag per option of reading, declared in the
vocabulary from the registry's help, kind, default and formats
(:func:`cruxflow.cli.vocabulary.option_flag`)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from cruxflow.cli import vocabulary
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import formats as registry
from cruxflow.data.ingest import ingest_to


def flag(name: str) -> str:
    """An option's flag: ``max_topics`` -> ``--max-topics``."""
    return "--" + vocabulary.option_flag(name)


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
    source = args.input
    if args.format == "crux":   # a fetched set's name (crux-labeling/annotator_1/crux_testb)
        from cruxflow.datasets import resolve

        source = str(resolve(source))
    summary = ingest_to(args.format, source, args.output, options_from_args(args),
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


def add_command(subparsers) -> None:
    """Add ``cruxflow ingest`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "ingest",
        description="Read a corpus (" + "; ".join(
            f"{f.name}: {f.description}" for f in registry.FORMATS.values())
        + ") and write it as a dataset directory (docs/data-model.md), with its counts. "
          "See docs/ingest.md.")
    # the flags of other commands too: their meaning, then what the registry says of them here
    command = {name: f"here: {spec.help}" for name, spec in registry.COMMAND_FLAGS.items()}
    add = partial(vocabulary.add, p)
    add("format", required=True, choices=list(registry.FORMATS), detail=command["format"])
    add("input", required=True, detail=command["input"] + ": " + "; ".join(
        f"{f.name}: {f.input}" for f in registry.FORMATS.values()))
    add("output", required=True, detail=command["output"])
    for name, spec in registry.options().items():
        # None: not given (the option's default then holds, and a format that does not read
        # the option is not refused for it)
        option = vocabulary.option_flag(name)
        if option in vocabulary.SHARED_OPTIONS:
            add(option, default=None, keep_unset=True,
                detail=f"here: {vocabulary.option_help(name)}",
                default_text=None if spec.kind == "flag" else vocabulary.option_default_text(name))
        else:
            add(option, default=None, keep_unset=True)
    add("eta", detail=command["eta"])
    add("json", detail=command["json"])
    p.set_defaults(func=_cmd_ingest)
