"""``cruxflow fetch NAME...``: download registered sets into the cache, every file checked
(cruxflow.datasets.fetch); ``--list`` shows the registry (docs/released-data.md). The only
command that downloads anything."""

from __future__ import annotations

import json
from functools import partial

from cruxflow.cli import vocabulary
from cruxflow.data.errors import DataError


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def _list(as_json: bool) -> int:
    from cruxflow.datasets.cache import set_dir, state
    from cruxflow.datasets.registry import sets

    known = sets()
    if as_json:
        print(json.dumps([{
            "name": s.name, "title": s.title, "kind": s.kind, "license": s.license,
            "source": s.source.describe(), "pinned": s.pinned, "cached": state(s) == "cached",
            "files": [{"url": s.url_of(f), "path": f.path, "size": f.size, "sha256": f.sha256,
                       "checked": f.checked} for f in s.files]} for s in known.values()],
            indent=2))
        return 0
    width = max(len(n) for n in known)
    for s in known.values():
        size = f"{_size(s.size)} in {len(s.files)} files" if s.pinned else "size unknown"
        where = f": {set_dir(s.name)}" if state(s) == "cached" else ""
        print(f"{s.name:{width}s}  {state(s)}{where}  ({size}; {s.source.describe()})")
    return 0


def _cmd_fetch(args) -> int:
    if args.list:
        if args.names or args.pin:
            raise DataError("--list shows every set: give it no name and no --pin")
        return _list(args.json)
    if not args.names:
        raise DataError("name the sets to fetch (`cruxflow fetch --list` shows them)")
    if args.json:
        raise DataError("--json goes with --list")
    from cruxflow.datasets.fetch import fetch, pin
    from cruxflow.datasets.registry import get

    for name in dict.fromkeys(args.names):
        dataset = get(name)
        if args.pin:
            dataset = pin(dataset)
            path = fetch(dataset)
            print(f"{name}: pinned at {dataset.source.revision} ({len(dataset.files)} files, "
                  f"{_size(dataset.size)}), fetched to {path}")
        else:
            path = fetch(dataset)
            print(f"{name}: {path} ({len(dataset.files)} files, {_size(dataset.size)}, "
                  "verified)")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow fetch`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "fetch",
        description="Download the field's released sets by name (the CRUX release, its "
                    "corpora and labeling release, CoverageBench, TREC RAG qrels) into "
                    "$CRUXFLOW_HOME (default ~/.cache/cruxflow), checking every file's size "
                    "and sha256; a set fetched is read by its name wherever a folder or "
                    "judgments go. See docs/released-data.md.")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="the sets to fetch (`cruxflow fetch --list` shows every one)")
    add = partial(vocabulary.add, p)
    add("list")
    add("pin")
    add("json", detail="here with --list")
    p.set_defaults(func=_cmd_fetch)
