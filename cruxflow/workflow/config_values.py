"""What a workflow config holds, checked before and beside its schema: keys that are names (a
string, never the boolean YAML reads ``yes:`` as), nesting, counts within the bounds every door
applies (:mod:`cruxflow.data.limits`), finite numbers, and the LLM cache a database of its own;
and its files read strictly (:func:`read_config_files`), as the workflow reads them before
Snakemake's own reader. :mod:`cruxflow.workflow.config` makes the one check with them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

# What to say where a name (a string) is wanted and YAML read the value as something else.
NOT_A_NAME = ("YAML reads yes, no, on, off, true and false unquoted as booleans and 1.0 as a "
              "number: quote a name")


def yaml_text(value) -> str:
    """How ``value`` was probably written in YAML (True: yes or true; 1.0)."""
    return {True: "yes", False: "no"}.get(value, str(value)) if isinstance(value, bool) \
        else str(value)


def key_problems(value, key: str = "") -> Iterator[tuple[str, str]]:
    """Every mapping key of the config that is not a string: YAML reads ``yes:`` as the key
    True and ``1.0:`` as a number, which no schema pattern checks (a pattern applies to strings
    only) and which breaks the workflow later (a dataset name True has no ``.replace``).
    Snakemake reads the config with its own loader; this check holds whatever read it."""
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{key}.{k}" if key else str(k)
            if not isinstance(k, str):
                yield where, (f"the key {k!r} is not a string ({NOT_A_NAME}: "
                              f"'{yaml_text(k)}')")
            yield from key_problems(v, where)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from key_problems(v, f"{key}[{i}]")


def nesting_depth(value, stop: int) -> int:
    """How deep the mappings and lists of ``value`` nest (a config built in Python may nest
    deeper than a YAML file could), counted without recursion and once per shared object (an
    alias bomb is measured in a few steps), up to ``stop + 1``."""
    heights: dict[int, int] = {}
    open_: set[int] = set()   # being measured: a cycle (a recursive alias) counts once
    todo = [(value, False)]
    while todo:
        item, done = todo.pop()
        if not isinstance(item, dict | list) or id(item) in heights:
            continue
        children = [c for c in (item.values() if isinstance(item, dict) else item)
                    if isinstance(c, dict | list)]
        if done:
            open_.discard(id(item))
            heights[id(item)] = 1 + max((heights.get(id(c), 0) for c in children), default=0)
            if heights[id(item)] > stop:
                return heights[id(item)]
        elif id(item) not in open_:
            open_.add(id(item))
            todo.append((item, True))
            todo += [(c, False) for c in children
                     if id(c) not in heights and id(c) not in open_]
    return heights.get(id(value), 0)


def count_problems(value, key: str = "") -> Iterator[tuple[str, str]]:
    """Every count of the config (an integer whose key names one of
    :data:`cruxflow.data.limits.COUNTS`: resamples, bootstrap, attempts, threads, ...) at most
    what the command line's flags and the public functions allow (its least is the schema's
    minimum: ``gpus: 0`` is a CPU job here, where ``plan --gpus`` counts GPUs to plan on)."""
    from cruxflow.data.limits import COUNTS

    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{key}.{k}" if key else str(k)
            if k in COUNTS and isinstance(v, int) and not isinstance(v, bool):
                if v > COUNTS[k].most:
                    yield where, COUNTS[k].problem(v)
            else:
                yield from count_problems(v, where)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from count_problems(v, f"{key}[{i}]")


def number_problems(value, key: str = "") -> Iterator[tuple[str, str]]:
    """NaN and infinities pass the schema's "number" and its bounds (NaN compares false with
    everything): every float of the config must be finite."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from number_problems(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from number_problems(v, f"{key}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        yield key, f"{value} is not a finite number"


SQLITE_HEADER = b"SQLite format 3\x00"


def cache_problems(path, found: Path, inputs: list[tuple[str, Path]]) -> list[tuple[str, str]]:
    """``llm.cache`` (``path`` as the config gives it, ``found`` where it is) is an SQLite
    database the workflow may write, or not there yet: never a folder, another kind of file,
    or one of the config's ``inputs`` (key, path; which the cache would destroy), nor inside a
    folder that an input names."""
    from cruxflow.data.outputs import same_file

    if not (isinstance(path, str) and path):
        return []
    for key, given in inputs:
        if same_file(found, given) or (given.is_dir() and any(
                same_file(parent, given) for parent in found.absolute().parents)):
            where = "is" if same_file(found, given) else "lies inside"
            return [("llm.cache", f"{path} {where} the input {key} ({given}): the cache is a "
                                  "file of its own, which the workflow writes")]
    if found.is_dir():
        return [("llm.cache", f"is a folder, expected an SQLite file (or none yet): {path}")]
    if found.exists():
        if not found.is_file():
            return [("llm.cache", f"is a special file, expected an SQLite file: {path}")]
        with open(found, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
        if head and head != SQLITE_HEADER:
            return [("llm.cache", f"is not an SQLite database (an LLM cache): {path}; name "
                                  "another file, or move this one away")]
    elif any(p.exists() and not p.is_dir() for p in found.parents):
        return [("llm.cache", f"a file stands where its folder should be: {path}")]
    return []


def read_config_files(paths) -> None:
    """Read each config file of ``paths`` that exists strictly (:func:`cruxflow.data.io.
    read_yaml`: no key given twice, no key that is not a string, bounded nesting), as
    ``cruxflow plan`` reads its config; the workflow calls it before Snakemake's own reader,
    which lets the last of two keys win and fails on deep nesting with a traceback. Raises
    :class:`cruxflow.data.errors.DataError` naming the file, line and key."""
    from cruxflow.data.io import read_yaml

    for path in paths:
        if Path(path).is_file():
            read_yaml(path)
