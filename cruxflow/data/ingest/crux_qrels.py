"""The diversity qrels of the CRUX release (``qrels/div_qrels-tau3.txt``) and of the paper-era
writer: ndeval's ``topic subtopic passage relevance`` lines, read by column (re-exported by
:mod:`cruxflow.data.ingest.crux_common`, which holds the other files every CRUX layout shares)."""

from __future__ import annotations

from itertools import compress
from pathlib import Path

import numpy as np

from cruxflow.data.columns import integers, split_fields
from cruxflow.data.errors import DataError
from cruxflow.data.io import decode_text, read_bytes


class DiversityQrels:
    """ndeval qrels ``topic subtopic passage relevance``, as read (file order), by column.

    Two conventions are published: the release's ``div_qrels-tau3.txt`` holds only the lines of
    relevance 1 with subtopics from 0; the authors' paper-era writer also emits the 0 lines and
    numbers subtopics from 1. Both read the same; ``zero_lines`` and ``subtopic_base`` say which
    one a file follows. Graded qrels (the 0-5 rating in the relevance column) read too.
    """

    def __init__(self, path, rows=None, *, columns: tuple | None = None):
        self.path = Path(path)
        if columns is None:
            rows = list(rows or ())
            columns = tuple([r[i] for r in rows] for i in range(4))
        self.topic_ids, self.subtopic_ids, self.passage_ids, relevance = columns
        self.relevance = np.asarray(relevance, dtype=np.int64).reshape(-1)

    @property
    def rows(self) -> list[tuple[str, str, str, int]]:
        return list(zip(self.topic_ids, self.subtopic_ids, self.passage_ids,
                        self.relevance.tolist(), strict=True))

    def __eq__(self, other) -> bool:
        return isinstance(other, DiversityQrels) and (self.path, self.rows) == (other.path,
                                                                                 other.rows)

    @property
    def zero_lines(self) -> int:
        return int(np.count_nonzero(self.relevance <= 0))

    @property
    def subtopic_base(self) -> int | None:
        numbers = [int(s) for s in dict.fromkeys(self.subtopic_ids) if s.isdigit()]
        return min(numbers) if numbers else None

    def topics(self) -> list[str]:
        return list(dict.fromkeys(self.topic_ids))

    def relevant_topics(self, threshold: int = 1) -> set[str]:
        """The topics with a line of relevance >= ``threshold``."""
        return set(compress(self.topic_ids, (self.relevance >= threshold).tolist()))

    def binary(self, threshold: int = 1) -> dict[str, dict[str, int]]:
        """``{topic: {passage: 1}}`` for passages with a line of relevance >= ``threshold``
        (rac_eval.py reads the diversity qrels this way for P and nDCG); topics without such a
        line are absent."""
        out: dict[str, dict[str, int]] = {}
        keep = (self.relevance >= threshold).tolist()
        for tid, pid in compress(zip(self.topic_ids, self.passage_ids, strict=True), keep):
            out.setdefault(tid, {})[pid] = 1
        return out

    def frame(self):
        """The rows as the frame ir_measures reads diversity qrels from (subtopic in
        ``iteration``)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["query_id", "iteration", "doc_id", "relevance"])

    def summary(self) -> dict:
        return {"file": str(self.path), "lines": len(self.topic_ids),
                "topics": len(self.topics()), "zero_lines": self.zero_lines,
                "subtopic_base": self.subtopic_base}


def read_diversity_qrels(path) -> DiversityQrels:
    """Read ndeval (diversity) qrels; a bad line names the file, line and column."""
    data = read_bytes(path)
    # a file of plain lines 'topic subtopic passage integer' (a release's holds 180,000 lines
    # and more) is checked on its bytes and split once; anything else line by line, which
    # names the first bad one
    split = split_fields(data, 4) if b"\r" not in data else None
    relevance = split and integers(split[0], split[1][3::4], split[2][3::4], signed=True)
    if relevance is not None:
        tokens = data.decode("ascii").split()
        columns = (tokens[0::4], tokens[1::4], tokens[2::4], relevance)
        if len(set(zip(*columns[:3], strict=True))) == len(relevance):
            return DiversityQrels(path, columns=columns)
    return _read_diversity_qrels_checked(path, decode_text(data, path))


def _read_diversity_qrels_checked(path, text: str) -> DiversityQrels:
    rows: list[tuple[str, str, str, int]] = []
    first: dict[tuple[str, str, str], int] = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        where = {"path": path, "record": f"line {lineno}"}
        if len(parts) != 4:
            raise DataError("expected 4 columns 'topic subtopic passage relevance', got "
                            f"{len(parts)}", **where)
        try:
            rel = int(parts[3])
        except ValueError:
            raise DataError(f"relevance {parts[3]!r} is not an integer", field="relevance",
                            **where) from None
        key = (parts[0], parts[1], parts[2])
        if key in first:
            raise DataError(f"passage {parts[2]} of topic {parts[0]} subtopic {parts[1]} is "
                            f"judged again (first at line {first[key]})", field="passage",
                            **where)
        first[key] = lineno
        rows.append((*key, rel))
    if not rows:
        raise DataError("no qrels lines", path=path)
    return DiversityQrels(Path(path), rows)
