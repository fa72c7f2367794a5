"""Plain-text helpers shared by the stages: word counts, clipping, the segmentation of long
documents before passage generation (paper Figure 7 caption), and text from the inputs made
printable where it meets a terminal, a log or a table (:func:`printable`)."""

from __future__ import annotations

import re

# Characters that act instead of showing: C0 and C1 controls (ESC starts a terminal's colours
# and title, BEL rings, CR overwrites the line), and the bidirectional controls that reorder
# what a reader sees (Trojan Source). A name from the inputs (a run file's name, a run's tag,
# an annotator) may hold any of them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                      "\u202a-\u202e\u2066-\u2069]")


def printable(text, keep: str = "") -> str:
    """``text`` (made a string) with every control character shown as its escape, never
    sent: ESC as ``\\x1b``, BEL as ``\\x07``, a newline as ``\\n``, U+202E as
    ``\\u202e``; those in ``keep`` (``"\\n"`` for a log) stay as they are. The one helper
    for every place that prints or tabulates text from the inputs; text without such a
    character comes back unchanged."""
    text = str(text)
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else
                        m.group().encode("unicode_escape").decode("ascii"), text)


def printable_cells(frame):
    """A copy of the pandas DataFrame ``frame`` whose text (cells, column names, index) is
    :func:`printable`, for a printed table or a TSV file; ``frame`` itself when none needs
    it."""
    def needs(values) -> bool:
        return any(isinstance(v, str) and _CONTROL.search(v) for v in values)

    # text: object, pandas 3's str and categorical columns alike (dtype kind "O")
    cells = [c for c in frame.columns if frame[c].dtype.kind == "O" and needs(frame[c])]
    if not cells and not needs(frame.columns) and not needs(frame.index):
        return frame
    out = frame.copy()
    for c in cells:
        out[c] = out[c].map(lambda v: printable(v) if isinstance(v, str) else v)
    out.columns = [printable(c) if isinstance(c, str) else c for c in out.columns]
    if needs(out.index):
        out.index = [printable(i) if isinstance(i, str) else i for i in out.index]
    return out


def count_words(text: str) -> int:
    """Number of whitespace-separated words."""
    return len(text.split())


def clip_words(text: str, max_words: int | None) -> str:
    """The first ``max_words`` whitespace-separated words of ``text`` (joined by single
    spaces); ``text`` unchanged when it is short enough or ``max_words`` is ``None``/0."""
    if not max_words:
        return text
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words])


def split_long_document(text: str, max_words: int = 1024, chunk_words: int = 512) -> list[str]:
    """Segment a document before passage generation (Figure 7 caption).

    A document of at most ``max_words`` words is returned whole, unchanged. A longer one is cut
    into consecutive chunks of ``chunk_words`` words (the last one may be shorter), each joined
    by single spaces. Requires ``max_words >= chunk_words > 0``.
    """
    if not (max_words >= chunk_words > 0):
        raise ValueError(
            f"need max_words >= chunk_words > 0, got max_words={max_words}, "
            f"chunk_words={chunk_words}"
        )
    words = text.split()
    if len(words) <= max_words:
        return [text]
    return [" ".join(words[i : i + chunk_words]) for i in range(0, len(words), chunk_words)]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences_into_passages(text: str, words: int) -> list[str]:
    """Cut ``text`` at sentence ends (., ! or ? then whitespace) into passages of at least
    ``words`` words, whitespace normalised; a tail shorter than ``words / 2`` joins the passage
    before it. No sentence is cut, so a passage can be longer than ``words``."""
    if words < 1:
        raise ValueError(f"need words >= 1, got {words}")
    passages: list[list[str]] = []
    current: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        current.extend(sentence.split())
        if len(current) >= words:
            passages.append(current)
            current = []
    if current:
        if passages and len(current) < words / 2:
            passages[-1].extend(current)
        else:
            passages.append(current)
    return [" ".join(p) for p in passages]
