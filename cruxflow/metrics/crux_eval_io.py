"""The files of ``cruxflow crux-eval`` beyond the release's qrels and ratings
(:mod:`cruxflow.data.ingest.crux_common` reads those): a TREC run cut by its rank column as the
authors' loader cuts it, read once and fast, and the token counts of Den."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cruxflow.data.columns import integers, plain_decimals, split_fields
from cruxflow.data.errors import DataError
from cruxflow.data.io import decode_text, read_bytes, read_run, read_text


@dataclass
class TopRun:
    """The lines of a run with rank <= k, per topic in file order: (passage, score, line)."""

    path: Path
    k: int
    topics: dict[str, list[tuple[str, float, int]]]
    beyond_k: int = 0   # lines left out by the rank column

    def scores(self) -> dict[str, dict[str, float]]:
        return {t: {pid: score for pid, score, _ in rows} for t, rows in self.topics.items()}


# lines of a run handled at once, small so that each block's arrays and strings reuse the
# memory of the block before: a page of fresh memory costs a fault (about 7 us in a virtual
# machine, measured), and a 500,000-line run read in blocks of 50,000 lines faulted in 150 MB
# (0.21 s; in blocks of 2,000: 42 MB, 0.17 s; benchmarks/crux_eval.py's inputs)
BLOCK_LINES = 2_000


def read_run_top(path, k: int = 10) -> TopRun:
    """A run's lines whose rank column is <= ``k``, in file order, the file read once.

    Every line is checked (six columns, an integer rank, a score that is a number and not
    NaN) and the kept lines for a passage given twice for a topic; a file that fails a check
    is read again by :func:`cruxflow.data.io.read_run`, whose error names the file, line and
    field. (A passage repeated below the cut changes no number, as in the script, whose loader
    keeps the lines of rank <= k only.)

    Half a million lines split one by one cost more than the rest of the evaluation, so a
    file of plain ASCII lines is read in blocks of bytes, each checked with numpy
    (:func:`_plain_rows`: six fields a line, digit ranks, plain decimal scores) and only its
    rows within the cut split. Any other block (an exponent or a sign in a score, a control
    character, a file with a byte-order mark, CRLF line ends or non-ASCII text, read as
    :func:`~cruxflow.data.io.read_text` reads it) gets its columns from one ``str.split`` and
    the same six-columns check on its bytes (a block with other white space than ASCII's
    between fields is checked line by line instead).
    """
    data = read_bytes(path)
    plain = data.isascii() and b"\r" not in data
    text = data if plain else decode_text(data, path)
    topics: dict[str, list[tuple[str, float, int]]] = {}
    seen: set[tuple[str, str]] = set()
    rows = beyond = 0
    first_line = 1
    for block in _blocks(text):
        fast = _plain_rows(block, k) if plain else None
        if plain:
            block = block.decode("ascii")   # ASCII: byte offsets are character offsets
        if fast is not None:
            n_rows, lines_of, starts, ends = fast
            kept = [block[a:b].split() for a, b in zip(starts.tolist(), ends.tolist(),
                                                       strict=True)]
            qids, pids = [f[0] for f in kept], [f[2] for f in kept]
            scores = [float(f[4]) for f in kept]
            lines_of = lines_of.tolist()
        else:
            tokens = block.split()
            line_of_row = _six_fields(block, len(tokens))
            if line_of_row is None:
                _refuse(path)
            qids, pids = tokens[0::6], tokens[2::6]
            n_rows = len(qids)
            try:
                rank = np.fromiter(map(int, tokens[3::6]), np.int64, len(qids))
                score = np.fromiter(map(float, tokens[4::6]), np.float64, len(qids))
            except ValueError:
                _refuse(path)
            if np.isnan(score).any():
                _refuse(path)
            kept_at = np.flatnonzero(rank <= k).tolist()
            lines_of = line_of_row[kept_at].tolist()
            scores = score.tolist()
        if fast is None:
            qids, pids, scores = ([column[j] for j in kept_at]
                                  for column in (qids, pids, scores))
        keys = list(zip(qids, pids, strict=True))
        before = len(seen)
        seen.update(keys)
        if len(seen) != before + len(keys):
            _refuse(path)   # a passage twice for a topic within the cut
        shift = first_line - 1
        for qid, row in zip(qids, zip(pids, scores, (line + shift for line in lines_of),
                                      strict=True), strict=True):
            topics.setdefault(qid, []).append(row)
        rows += n_rows
        beyond += n_rows - len(keys)
        first_line += block.count("\n")
    if not rows:
        return TopRun(Path(path), k, {}, 0)
    return TopRun(Path(path), k, topics, beyond)


class ReadAhead:
    """A run read by :func:`read_run_top` in a thread of its own (while the caller builds its
    inputs or scores another run: most of the reading is numpy on the file's bytes, which
    runs beside the other thread's Python); :meth:`result` waits for it and raises its
    error. A thread, not ``concurrent.futures``, whose import alone costs 1% of a call."""

    def __init__(self, run, k: int):
        self._top: TopRun | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, args=(run, k), daemon=True,
                                        name="crux-eval-read")
        self._thread.start()

    def _read(self, run, k: int) -> None:
        try:
            with paused_gc():
                self._top = run if isinstance(run, TopRun) else read_run_top(run, k)
        except BaseException as exc:   # handed to the caller by result()
            self._error = exc

    def result(self) -> TopRun:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._top


_gc_lock = threading.Lock()
_gc_paused = [0, False]   # sections open, and whether the collector was on before the first


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the section. Reading the inputs makes millions of
    small objects and none with a cycle; the collector, run again and again meanwhile over
    every object alive, doubles the time of a call. Sections of two threads may overlap
    (:class:`ReadAhead`): the collector is back on, if it was on, when the last one ends."""
    with _gc_lock:
        if _gc_paused[0] == 0:
            _gc_paused[1] = gc.isenabled()
            gc.disable()
        _gc_paused[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_paused[0] -= 1
            if _gc_paused[0] == 0 and _gc_paused[1]:
                gc.enable()


def _blocks(text: str | bytes):
    """``text`` in blocks of about :data:`BLOCK_LINES` whole lines (each but the last ending
    with its newline)."""
    newline = "\n" if isinstance(text, str) else b"\n"
    start, sample = 0, min(len(text), 1 << 20)
    step = (sample // max(1, text.count(newline, 0, sample)) + 1) * BLOCK_LINES
    while start < len(text):
        end = text.find(newline, start + step) if start + step < len(text) else -1
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _six_fields(text: str, n_tokens: int) -> np.ndarray | None:
    """The line number (from 1) of every row, when every non-blank line has six fields and
    ``str.split`` found the same fields; None otherwise."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    # str.split's ASCII whitespace: \t \n \v \f \r, the separators \x1c-\x1f, space
    space = ((data >= 9) & (data <= 13)) | ((data >= 28) & (data <= 32))
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    if len(starts) != n_tokens or n_tokens % 6:
        return None
    line = np.cumsum(data == 10, dtype=np.int32)[starts]   # newlines before each field
    row_line = line[0::6]
    # each row's six fields on one line, and no line holding fields of two rows
    if not (np.array_equal(row_line, line[5::6]) and np.all(np.diff(row_line) > 0)):
        return None
    return row_line + 1


def _plain_rows(block: bytes, k: int
                ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
    """Of an ASCII block whose lines all have six fields separated by spaces and tabs, a rank
    of digits and a plain decimal score (:mod:`cruxflow.data.columns`): (number of rows; of
    each row of rank <= k, its line number from 1, and the offsets where its first field
    starts and its last ends), so only the kept rows need splitting. None for any other
    block (a control character, an exponent, a sign, NaN, a bad line), which is read field by
    field."""
    split = split_fields(block, 6)
    if split is None:
        return None
    data, starts, ends, row_line = split
    rank = integers(data, starts[3::6], ends[3::6])
    if rank is None or not plain_decimals(data, starts[4::6], ends[4::6]):
        return None
    keep = np.flatnonzero(rank <= k)
    return len(row_line), row_line[keep], starts[0::6][keep], ends[5::6][keep]


def _refuse(path) -> None:
    read_run(path)   # raises the error that names the line
    raise DataError("not a TREC run (qid Q0 docid rank score tag)", path=path)


def read_token_counts(path) -> dict[str, int]:
    """Token counts per passage: TSV ``passage<TAB>tokens`` or JSONL ``{"id", "tokens"}``."""
    from cruxflow.data.io import iter_jsonl

    p = Path(path)
    counts: dict[str, int] = {}
    if p.suffix == ".jsonl":
        rows = ((f"line {ln}", obj.get("id"), obj.get("tokens")) for ln, obj in iter_jsonl(p))
    else:
        rows = ((f"line {ln}", *(line.split("\t") + [None, None])[:2])
                for ln, line in enumerate(read_text(p).split("\n"), 1) if line.strip())
    for record, pid, value in rows:
        try:
            tokens = int(value)
            if tokens < 0 or str(value).strip() not in (str(tokens), f"{tokens}.0"):
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(f"expected a non-negative integer, got {value!r}", path=p,
                            record=record, field="tokens") from None
        if not isinstance(pid, str) or not pid.strip():
            raise DataError("missing passage id", path=p, record=record, field="id")
        counts[pid.strip()] = tokens
    return counts


def collection_token_counts(collection, tokenizer: str | None, pids) -> dict[str, int]:
    """Token counts of the passages ``pids`` that the collection holds (the others are reported
    where a context needs them), counted with a local tokenizer or the regex counter."""
    from cruxflow.data.ingest.crux_common import read_collection
    from cruxflow.metrics.tokens import make_token_counter

    texts, _ = read_collection(collection)
    try:
        count = make_token_counter(tokenizer)
    except FileNotFoundError as exc:
        raise DataError(str(exc), path=tokenizer) from None
    return {pid: count(texts[pid]) for pid in pids if pid in texts}
