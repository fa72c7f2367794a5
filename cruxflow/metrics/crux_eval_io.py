"""The files of ``cruxflow crux-eval`` beyond the release's qrels and ratings
(:mod:`cruxflow.data.ingest.crux_common` reads those): a TREC run cut by its rank column as the
authors' loader cuts it, read once and fast, and the token counts of Den."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.data.io import read_run, read_text


@dataclass
class TopRun:
    """The lines of a run with rank <= k, per topic in file order: (passage, score, line)."""

    path: Path
    k: int
    topics: dict[str, list[tuple[str, float, int]]]
    beyond_k: int = 0   # lines left out by the rank column

    def scores(self) -> dict[str, dict[str, float]]:
        return {t: {pid: score for pid, score, _ in rows} for t, rows in self.topics.items()}


# lines of a run handled at once: the split of a whole 500,000-line run alone holds 3 million
# strings (250 MB); a block of this many lines holds a tenth of them
BLOCK_LINES = 50_000


def read_run_top(path, k: int = 10) -> TopRun:
    """A run's lines whose rank column is <= ``k``, in file order, the file read once.

    Every line is checked (six columns, an integer rank, a score that is a number and not
    NaN) and the kept lines for a passage given twice for a topic; a file that fails a check
    is read again by :func:`cruxflow.data.io.read_run`, whose error names the file, line and
    field. (A passage repeated below the cut changes no number, as in the script, whose loader
    keeps the lines of rank <= k only.)

    Half a million lines split one by one cost more than the rest of the evaluation, so a
    block of plain lines (:func:`_plain_block`: ASCII, digit ranks, plain decimal scores) is
    checked on its bytes with numpy and only its rows within the cut are split; any other
    block gets its columns from one ``str.split`` and the same six-columns check on the bytes
    (a file with other whitespace than ASCII between fields is checked line by line instead).
    """
    text = read_text(path)
    topics: dict[str, list[tuple[str, float, int]]] = {}
    seen: set[tuple[str, str]] = set()
    rows = beyond = 0
    first_line = 1
    for block in _blocks(text):
        fast = _plain_block(block, k)
        if fast is not None:
            n_rows, kept_lines = fast
            lines = block.split("\n")
            kept = [(lines[i - 1].split(), i) for i in kept_lines.tolist()]
            qids, pids = [f[0] for f, _ in kept], [f[2] for f, _ in kept]
            scores = [float(f[4]) for f, _ in kept]
            kept_at = range(len(kept))
            lines_of = [i for _, i in kept]
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
        for j, line in zip(kept_at, lines_of, strict=True):
            if (qids[j], pids[j]) in seen:
                _refuse(path)
            seen.add((qids[j], pids[j]))
            topics.setdefault(qids[j], []).append((pids[j], scores[j], line + first_line - 1))
        rows += n_rows
        beyond += n_rows - len(kept_at)
        first_line += block.count("\n")
    if not rows:
        return TopRun(Path(path), k, {}, 0)
    return TopRun(Path(path), k, topics, beyond)


def _blocks(text: str):
    """``text`` in blocks of about :data:`BLOCK_LINES` whole lines (each but the last ending
    with its newline)."""
    start, sample = 0, min(len(text), 1 << 20)
    step = (sample // max(1, text.count("\n", 0, sample)) + 1) * BLOCK_LINES
    while start < len(text):
        end = text.find("\n", start + step) if start + step < len(text) else -1
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


_DIGIT, _DOT, _MINUS = np.uint8(ord("0")), np.uint8(ord(".")), np.uint8(ord("-"))


def _plain_block(text: str, k: int) -> tuple[int, np.ndarray] | None:
    """(number of rows, line number from 1 of each row of rank <= k) of a block whose lines
    all have six fields, a rank of ASCII digits and a plain decimal score (digits, at most one
    point, a leading minus): ``int`` and ``float`` read those without fail and no such score
    is NaN, so only the kept rows need splitting. None for any other block (an exponent, a
    sign, NaN, a non-ASCII character, a bad line), which is read field by field."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    if len(data) == 0 or data.max() >= 128:
        return None   # str.split splits on non-ASCII white space too (U+00A0, U+2028 ...)
    space = ((data >= 9) & (data <= 13)) | ((data >= 28) & (data <= 32))
    edge = np.diff(space.view(np.int8), prepend=np.int8(1), append=np.int8(1))
    starts, ends = np.flatnonzero(edge == -1), np.flatnonzero(edge == 1)
    if len(starts) == 0 or len(starts) % 6:
        return None
    line = np.cumsum(data == 10, dtype=np.int32)[starts]   # newlines before each field
    row_line = line[0::6]
    if not (np.array_equal(row_line, line[5::6]) and np.all(np.diff(row_line) > 0)):
        return None
    columns = []
    for col, width in ((3, 9), (4, 24)):
        first, length = starts[col::6], ends[col::6] - starts[col::6]
        if length.max() > width:
            return None
        at = np.arange(width)
        inside = at[None, :] < length[:, None]
        chars = np.where(inside, data[np.minimum(first[:, None] + at, len(data) - 1)],
                         _DIGIT)
        columns.append((chars, inside))
    (rank_chars, rank_inside), (score_chars, score_inside) = columns
    digits = rank_chars - _DIGIT
    if (digits > 9).any():
        return None
    # a rank's value: its digits shifted right to the last column, read in base 10
    width = rank_chars.shape[1]
    shift = width - rank_inside.sum(axis=1)
    power = 10 ** np.maximum(width - 1 - np.arange(width)[None, :] - shift[:, None], 0)
    rank = np.where(rank_inside, digits.astype(np.int64) * power, 0).sum(axis=1)
    is_digit = (score_chars - _DIGIT <= 9) & score_inside
    dots, minus = score_chars == _DOT, score_chars == _MINUS
    if not ((is_digit | dots | minus | ~score_inside).all()
            and (dots.sum(axis=1) <= 1).all() and not minus[:, 1:].any()
            and is_digit.any(axis=1).all()):
        return None
    return len(row_line), row_line[rank <= k] + 1


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
