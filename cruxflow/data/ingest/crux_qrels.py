"""The diversity qrels of the CRUX release (``qrels/div_qrels-tau3.txt``) and of the paper-era
writer: ndeval's ``topic subtopic passage relevance`` lines, read by column (re-exported by
:mod:`cruxflow.data.ingest.crux_common`, which holds the other files every CRUX layout shares)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cruxflow.data.columns import Codes, has_repeat, integers, split_fields
from cruxflow.data.errors import DataError
from cruxflow.data.io import decode_text, read_bytes, read_line_blocks


class DiversityQrels:
    """ndeval qrels ``topic subtopic passage relevance``, as read (file order), by column.

    Two conventions are published: the release's ``div_qrels-tau3.txt`` holds only the lines of
    relevance 1 with subtopics from 0; the authors' paper-era writer also emits the 0 lines and
    numbers subtopics from 1. Both read the same; ``zero_lines`` and ``subtopic_base`` say which
    one a file follows. Graded qrels (the 0-5 rating in the relevance column) read too.

    The three id columns are held as :class:`~cruxflow.data.columns.Codes` (:meth:`codes`:
    one integer per line into the column's distinct ids, by first appearance); the lists
    ``topic_ids``, ``subtopic_ids`` and ``passage_ids`` are made when asked.
    """

    def __init__(self, path, rows=None, *, columns: tuple | None = None,
                 codes: tuple[Codes, Codes, Codes] | None = None, relevance=None):
        self.path = Path(path)
        if codes is None:
            if columns is None:
                rows = list(rows or ())
                columns = tuple([r[i] for r in rows] for i in range(4))
            codes = (Codes(), Codes(), Codes())
            for coded, column in zip(codes, columns[:3], strict=False):
                coded.add(list(column))
            relevance = columns[3]
        self._codes = codes
        self.relevance = np.asarray(relevance, dtype=np.int64).reshape(-1)

    def codes(self) -> tuple[tuple[list[str], np.ndarray], ...]:
        """``((topics, topic code of each line), (subtopics, ...), (passages, ...))``: each
        column's distinct ids by first appearance, and each line's index into them."""
        return tuple((c.values, c.codes()) for c in self._codes)

    def passage_index(self) -> dict[str, int]:
        """Each distinct passage id's index in :meth:`codes`' passages."""
        return self._codes[2].index

    def _column(self, i: int) -> list[str]:
        values, codes = self.codes()[i]
        return list(map(values.__getitem__, codes.tolist()))

    @property
    def topic_ids(self) -> list[str]:
        return self._column(0)

    @property
    def subtopic_ids(self) -> list[str]:
        return self._column(1)

    @property
    def passage_ids(self) -> list[str]:
        return self._column(2)

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
        numbers = [int(s) for s in self._codes[1].values if s.isdigit()]
        return min(numbers) if numbers else None

    def topics(self) -> list[str]:
        return self._codes[0].values

    def relevant_topics(self, threshold: int = 1) -> set[str]:
        """The topics with a line of relevance >= ``threshold``."""
        topics, codes = self.codes()[0]
        # (a count per topic: np.unique would import numpy.ma, 12 ms of a command's start)
        found = np.bincount(codes[self.relevance >= threshold], minlength=len(topics))
        return {topics[t] for t in np.flatnonzero(found).tolist()}

    def binary(self, threshold: int = 1) -> dict[str, dict[str, int]]:
        """``{topic: {passage: 1}}`` for passages with a line of relevance >= ``threshold``
        (rac_eval.py reads the diversity qrels this way for P and nDCG); topics without such a
        line are absent."""
        (topics, t), _, (passages, p) = self.codes()
        t, p = t.tolist(), p.tolist()
        out: dict[str, dict[str, int]] = {}
        for i in np.flatnonzero(self.relevance >= threshold).tolist():
            out.setdefault(topics[t[i]], {})[passages[p[i]]] = 1
        return out

    def frame(self):
        """The rows as the frame ir_measures reads diversity qrels from (subtopic in
        ``iteration``)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["query_id", "iteration", "doc_id", "relevance"])

    def summary(self) -> dict:
        return {"file": str(self.path), "lines": len(self.relevance),
                "topics": len(self.topics()), "zero_lines": self.zero_lines,
                "subtopic_base": self.subtopic_base}


def read_diversity_qrels(path) -> DiversityQrels:
    """Read ndeval (diversity) qrels; a bad line names the file, line and column."""
    # a file of plain lines 'topic subtopic passage integer' (a release's holds 180,000 lines
    # and more) is read a block at a time, each checked on its bytes and its ids coded;
    # anything else is read whole, line by line, which names the first bad one
    fast = _plain_qrels(path)
    return fast if fast is not None else _read_diversity_qrels_checked(
        path, decode_text(read_bytes(path), path))


def _plain_qrels(path) -> DiversityQrels | None:
    codes, relevance = (Codes(), Codes(), Codes()), []
    for block in read_line_blocks(path):
        split = split_fields(block, 4) if b"\r" not in block else None
        values = split and integers(split[0], split[1][3::4], split[2][3::4], signed=True)
        if values is None:
            return None
        text = block.decode("ascii")   # ASCII: byte offsets are character offsets
        for i, coded in enumerate(codes):
            coded.add_fields(text, split[0], split[1][i::4], split[2][i::4])
        relevance.append(values)
    if not relevance or has_repeat(*(c.codes() for c in codes)):
        return None   # empty, or a (topic, subtopic, passage) twice: the line reader says where
    return DiversityQrels(path, codes=codes, relevance=np.concatenate(relevance))


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
