"""Leaderboards as ``cruxflow agreement --leaderboard`` reads them: the scores of many systems
under one or more measures, per topic where the file has them. The formats are those of
trec_eval, ir_measures and TREC AutoJudge's ``autojudge-evaluate`` (its
``eval_results/io.py``: trec_eval, tot, ir_measures, ranking, jsonl), and a plain TSV:

===========  ===============================================  ===============================
format       a line                                            the system
===========  ===============================================  ===============================
trec_eval    ``measure  topic  value`` (``trec_eval -q``)       the file (one file a system)
ir_measures  ``topic  measure  value`` (``ir_measures -q``)     the file
             ``run  topic  measure  value`` (autojudge's)       the line
tot          ``run  measure  topic  value``                     the line
ranking      ``topic  Q0  run  rank  value  measure``           the line
jsonl        ``{"run_id", "topic_id", "measure", "value"}``     the line (else the file:
             (``query_id`` for ``topic_id`` in ir_measures')     ``ir_measures -o jsonl``)
tsv          ``run<TAB>score``: a mean per system, no topic     the line
===========  ===============================================  ===============================

A leaderboard is a file or a folder of files (each one system's, named by its file:
:func:`cruxflow.data.names.named_inputs`'s rule, two files of one name refused). The topic
``all`` is an aggregate: left out where per-topic values exist (the means are recomputed from
them), used as the system's mean where none do. Lines whose value is not a number (trec_eval's
``runid``) are skipped. The format is told from the lines, or forced.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_lines
from cruxflow.data.names import check_unique, input_name
from cruxflow.paper.system_agreement import Scores

FORMATS = ("trec_eval", "ir_measures", "tot", "ranking", "jsonl", "tsv")
AGGREGATE = "all"


def _rows(path: Path) -> list[tuple[int, str]]:
    rows = [(n, line) for n, line in iter_lines(path) if line.strip()]
    if not rows:
        raise DataError("empty leaderboard file", path=path)
    return rows


def detect_format(path: Path, rows: list[tuple[int, str]]) -> str:
    """The leaderboard format of a file's lines (see the module's table); a file whose format
    cannot be told (``tot`` and autojudge's ``ir_measures`` share their shape) is an error
    asking for ``--format``."""
    first = rows[0][1].strip()
    if first.startswith("{"):
        return "jsonl"
    widths = {len(line.split()) for _, line in rows}
    if len(widths) > 1:
        raise DataError(f"lines of {sorted(widths)} columns: not one leaderboard format",
                        path=path)
    width = widths.pop()
    columns = list(zip(*(line.split() for _, line in rows), strict=True))
    if width == 2:
        return "tsv"
    if width == 6:
        return "ranking"
    if width == 3:
        if AGGREGATE in columns[1] or "runid" in columns[0]:
            return "trec_eval"
        if AGGREGATE in columns[0]:
            return "ir_measures"
    if width == 4:
        # tot: run measure topic value; ir_measures: run topic measure value. The topic
        # column holds the aggregate 'all', or else the only all-numeric ids.
        if AGGREGATE in columns[2] and AGGREGATE not in columns[1]:
            return "tot"
        if AGGREGATE in columns[1] and AGGREGATE not in columns[2]:
            return "ir_measures"
        numeric = [all(v.lstrip("-").isdigit() for v in columns[i]) for i in (1, 2)]
        if numeric == [False, True]:
            return "tot"
        if numeric == [True, False]:
            return "ir_measures"
    raise DataError(f"cannot tell the leaderboard format of these {width}-column lines; give "
                    f"--format ({', '.join(FORMATS)})", path=path)


def _value(text, where: dict) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value):
        raise DataError(f"value {text!r} is not a finite number", field="value", **where)
    return value


def _entries(path: Path, fmt: str | None):
    """(system or None for the file's, topic, measure, value, where) of a file's lines."""
    rows = _rows(path)
    fmt = fmt or detect_format(path, rows)
    for lineno, line in rows:
        where = {"path": path, "record": f"line {lineno}"}
        if fmt == "jsonl":
            try:
                obj = json.loads(line)
            except ValueError:
                raise DataError("not a JSON object", **where) from None
            if not isinstance(obj, dict) or "measure" not in obj or "value" not in obj:
                raise DataError("expected {run_id, topic_id, measure, value}", **where)
            topic = obj.get("topic_id", obj.get("query_id"))
            yield (obj.get("run_id"), AGGREGATE if topic is None else str(topic),
                   str(obj["measure"]), obj["value"], where)
            continue
        parts = line.split()
        expected = {"trec_eval": (3,), "ir_measures": (3, 4), "tot": (4,), "ranking": (6,),
                    "tsv": (2,)}[fmt]
        if len(parts) not in expected:
            raise DataError(f"{fmt} lines have {' or '.join(map(str, expected))} columns, got "
                            f"{len(parts)}", **where)
        if fmt == "trec_eval":
            measure, topic, value = parts
            yield None, topic, measure, value, where
        elif fmt == "ir_measures" and len(parts) == 3:
            topic, measure, value = parts
            yield None, topic, measure, value, where
        elif fmt == "ir_measures":
            run, topic, measure, value = parts
            yield run, topic, measure, value, where
        elif fmt == "tot":
            run, measure, topic, value = parts
            yield run, topic, measure, value, where
        elif fmt == "ranking":
            topic, _, run, _, value, measure = parts
            yield run, topic, measure, value, where
        else:
            run, value = parts
            yield run, AGGREGATE, "score", value, where


def read_leaderboard(name: str, path, *, measure: str | None = None,
                     fmt: str | None = None) -> Scores:
    """The leaderboard ``path`` (a file or a folder of one file per system) under ``measure``
    (needed where it holds several) as :class:`~cruxflow.paper.system_agreement.Scores`."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise DataError("no leaderboard file in the folder", path=path)
        check_unique([(input_name(f), f) for f in files], "systems")
    elif path.is_file():
        files = [path]
    else:
        raise DataError("no such leaderboard file or folder", path=path)
    values: dict[str, dict[str, dict[str, float]]] = {}   # measure -> system -> topic -> value
    first: dict[tuple, str] = {}
    for file in files:
        for system, topic, m, text, where in _entries(file, fmt):
            value = _value(text, where)
            if value is None:
                continue                     # trec_eval's runid, a name where a value goes
            system = system if system is not None else input_name(file)
            key = (m, system, topic)
            if key in first:
                raise DataError(f"a second value of {m} for system {system!r} topic {topic!r} "
                                f"(first at {first[key]})", **where)
            first[key] = f"{where['path']}: {where['record']}"
            values.setdefault(m, {}).setdefault(system, {})[topic] = value
    if not values:
        raise DataError("no value in the leaderboard", path=path)
    if measure is None:
        if len(values) > 1:
            raise DataError(f"holds {len(values)} measures ({', '.join(sorted(values))}): "
                            "give --measure", path=path)
        measure = next(iter(values))
    if measure not in values:
        raise DataError(f"no measure {measure!r} (it holds {', '.join(sorted(values))})",
                        path=path)
    by_system = values[measure]
    per_topic = {s: {t: v for t, v in topics.items() if t != AGGREGATE}
                 for s, topics in by_system.items()}
    if any(per_topic.values()):
        return Scores(name, measure, per_topic=per_topic, source=str(path))
    return Scores(name, measure, means={s: t[AGGREGATE] for s, t in by_system.items()},
                  source=str(path))
