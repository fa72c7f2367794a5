"""Read retrieval contexts given as JSONL (one ranked list of passage ids per topic) as a run.

One line per topic, best passage first::

    {"topic_id": "demo-0", "passages": ["demo-0:3#9", "demo-0:0#1"]}

``context`` is accepted as another name for ``passages``; other keys (``k``, ``oracle_size``
in the workflow's own ``results/contexts/`` files) are ignored. The contexts become the same
structure :func:`cruxflow.data.io.read_run` returns (rank 1.., descending scores), so a context
file and the equivalent TREC run are scored identically.
"""

from __future__ import annotations

from collections.abc import Container

from cruxflow.data.errors import DataError
from cruxflow.data.io import RunRow, iter_jsonl

PASSAGES_KEY, ALIAS_KEY = "passages", "context"


def read_contexts(path, *, topics: Container[str] | None = None,
                  passages: Container[str] | None = None) -> dict[str, list[RunRow]]:
    """``{topic_id: [RunRow, ...]}`` in the file's order, validated line by line.

    With ``topics`` / ``passages`` given, an id outside them is an error naming the line, so a
    typo is reported where it is rather than scored as an irrelevant passage.
    """
    run: dict[str, list[RunRow]] = {}
    first_line: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        where = {"path": path, "record": f"line {lineno}"}
        tid = obj.get("topic_id")
        if tid is None:
            raise DataError("missing", field="topic_id", **where)
        if not isinstance(tid, str) or not tid.strip():
            raise DataError(f"expected a non-empty string, got {tid!r}", field="topic_id",
                            **where)
        if tid in first_line:
            raise DataError(f"topic {tid!r} appears twice (first at line {first_line[tid]})",
                            field="topic_id", **where)
        if topics is not None and tid not in topics:
            raise DataError(f"unknown topic {tid!r} (not in the dataset's topics)",
                            field="topic_id", **where)
        first_line[tid] = lineno
        key = _passages_key(obj, where)
        pids = obj[key]
        if not isinstance(pids, list):
            raise DataError(f"expected a list of passage ids, got {type(pids).__name__}",
                            field=key, **where)
        seen: set[str] = set()
        for i, pid in enumerate(pids):
            if not isinstance(pid, str) or not pid.strip():
                raise DataError(f"item {i} ({pid!r}) is not a non-empty string", field=key,
                                **where)
            if pid in seen:
                raise DataError(f"passage {pid!r} appears twice (item {i})", field=key, **where)
            if passages is not None and pid not in passages:
                raise DataError(f"unknown passage {pid!r} (item {i}; not in the passage "
                                "collection)", field=key, **where)
            seen.add(pid)
        n = len(pids)
        run[tid] = [RunRow(tid, pid, i + 1, float(n - i)) for i, pid in enumerate(pids)]
    return run


def _passages_key(obj: dict, where: dict) -> str:
    has = [k for k in (PASSAGES_KEY, ALIAS_KEY) if k in obj]
    if not has:
        raise DataError(f"missing (or its alias {ALIAS_KEY!r})", field=PASSAGES_KEY, **where)
    if len(has) == 2:
        raise DataError(f"give {PASSAGES_KEY!r} or {ALIAS_KEY!r}, not both", field=ALIAS_KEY,
                        **where)
    return has[0]
