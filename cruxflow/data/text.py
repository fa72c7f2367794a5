"""Plain-text helpers shared by the stages: word counts, clipping, and the segmentation of long
documents before passage generation (paper Figure 7 caption)."""

from __future__ import annotations

import re


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
