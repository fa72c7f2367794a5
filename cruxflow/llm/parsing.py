"""Tolerant parsers for the outputs of the CRUX prompts (see :mod:`cruxflow.stages.prompts`).

- :func:`extract_tagged` -- the items of a ``<q>``/``<p>``/``<r>`` tagged generation
  (Figures 6, 7, 9), robust to the usual malformations of LLM output.
- :func:`parse_rating` -- the 0-5 rating of a judgment (Figure 8) from its text; the paper
  regards an output with incorrect format as 0, which callers apply to ``None``.
- :func:`parse_free_rating` -- the CRUX authors' reading of a freely decoded judgment: the
  first digit, else ``UNRATED`` (-1).
- :class:`TextCheck` -- whether a generated item is text of the kind its prompt asked for;
  ``REPORT_REQUEST_TEXT``, ``SUBQUESTION_TEXT`` and ``PASSAGE_TEXT`` declare, once, what the
  CRUX stages keep. An item that fails is a parse failure like an untagged one.

The expected rating under the first token's logprobs is
:func:`cruxflow.llm.logprobs.expected_rating`; word counting and document segmentation are in
:mod:`cruxflow.data.text`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["PASSAGE_TEXT", "REPORT_REQUEST_TEXT", "SUBQUESTION_TEXT", "UNRATED", "TextCheck",
           "extract_tagged", "instructions_of", "line_items", "parse_free_rating", "parse_rating"]

UNRATED = -1   # a judgment without a rating: answers no question at any threshold

# Enumeration prefixes stripped from the start of an item: "1. ", "2) ", "(3) ", "#4: ",
# "(#5) ", "- ", "* ", "• ", "Q1: ", "Question 2. ", "Query 3: ", "P1) ", "Passage 3: ", and outline
# numbers "1.2. ", "1.1.1: " (small models number the query generator's lines so). A number
# without its mark ("1.5 million", "2024 was") is text, kept.
_ENUM_PREFIX = re.compile(
    r"""^(?:
        [-*+\u2022\u2013\u2014]                              # bullets
      | \(?\#?[0-9]{1,3}(?:\.[0-9]{1,3})*[.):\]]              # 1.  1)  (1)  #1:  1]  1.1.1:
      | (?:q|question|query|p|passage|r|request)\s*\#?[0-9]{1,3}\s*[.):\]-]   # Q1:  Question 2.
      | (?:question|query|passage|report\ request):            # Question:  Passage:
    )\s+""",
    re.IGNORECASE | re.VERBOSE,
)
_WHITESPACE = re.compile(r"\s+")


# Stray short tags of another kind inside an item ("<m>", "<p>" in a question): small models
# mix up the formats of the prompts.
_STRAY_TAG = re.compile(r"</?[A-Za-z]{1,10}>")


def _clean_item(item: str) -> str:
    text = _WHITESPACE.sub(" ", _STRAY_TAG.sub(" ", item)).strip()
    # Strip at most two stacked prefixes ("- 1. ...").
    for _ in range(2):
        stripped = _ENUM_PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped.strip()
    # An item wrapped whole in quotes ("Question: \"What ...?\"") loses them.
    if len(text) > 1 and text[0] + text[-1] in ('""', "\u201c\u201d", "''"):
        text = text[1:-1].strip()
    return text


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def line_items(text: str) -> list[str]:
    """Each non-empty line of ``text`` an item, cleaned as :func:`extract_tagged` cleans its
    items (enumeration prefixes stripped, whitespace collapsed, whole quotes taken off) and
    deduplicated (case-insensitive, the first kept)."""
    return _dedupe(_clean_item(line) for line in text.splitlines())


def extract_tagged(text: str, tag: str, *, primed: bool = True) -> list[str]:
    """Items between ``<tag>`` and ``</tag>`` in an LLM generation, in order, deduplicated.

    ``primed``: the prompt ended with ``<tag>``, so the generation starts inside the first
    item: text before the first tag counts as an item when that first tag is a closing one
    (``"a</q><q>b</q>"`` gives a and b). Text before a first *opening* tag is preamble.

    Tolerated: an unclosed last item (taken to the end), stray text between items (ignored),
    missing closing tags (``"<q>a <q>b"`` gives a and b), any case and inner whitespace in tags
    (``<Q >``, ``< /q>``), empty items (dropped), enumeration prefixes (``"1. "``, ``"- "``,
    ``"Q1: "``, stripped). Whitespace in items is collapsed to single spaces. When no ``tag``
    occurs at all, each non-empty line is an item. Duplicates (case-insensitive) keep the first.
    """
    if not text:
        return []
    name = tag.strip().strip("<>/").strip()
    if not name:
        raise ValueError("tag must be a non-empty tag name, e.g. 'q'")
    tags = re.compile(rf"<\s*(/?)\s*{re.escape(name)}\s*>", re.IGNORECASE)
    matches = list(tags.finditer(text))
    if not matches:
        return line_items(text)

    raw: list[str] = []
    if primed and matches[0].group(1):
        raw.append(text[: matches[0].start()])
    start: int | None = None  # start of the open item, None outside an item
    for m in matches:
        closing = bool(m.group(1))
        if start is not None:
            raw.append(text[start : m.start()])
            start = None
        if not closing:
            start = m.end()
    if start is not None:
        raw.append(text[start:])
    return _dedupe(_clean_item(item) for item in raw)


# A standalone integer: not inside a word, not a digit of a larger number or of a decimal
# ("2024", "3.5", "1,000"), optionally with an attached minus sign ("-1").
_INTEGER = re.compile(r"(?<![\w.-])(?<![0-9][.,])-?[0-9]+(?![\w]|[.,][0-9])")


def parse_rating(text: str | None, scale: Iterable[int] = range(0, 6)) -> int | None:
    """The rating in a judgment output, or ``None`` when it has none in ``scale``.

    The first standalone integer counts ("4", "4.", "Rating: 4", "4/5", "**4**",
    "4 - the context..."); when it is outside ``scale`` ("7", "-1", "10", "2024"), or there is
    none ("", "The context is relevant"), the result is ``None``.
    """
    if not text:
        return None
    m = _INTEGER.search(text)
    if m is None:
        return None
    value = int(m.group(0))
    return value if value in set(scale) else None


# \d, not [0-9]: the authors' regex matches any Unicode decimal digit and int() reads it, so a
# full-width "４" is 4 there
_FIRST_DIGIT = re.compile(r"-?\d")


def parse_free_rating(text: str | None, scale: Iterable[int] = range(0, 6)) -> int:
    """The rating of a freely decoded judgment as the CRUX authors read it: the first digit of
    the output ("Rating: 4" and " 4." give 4, "10" gives 1, a full-width "４" 4), with a minus
    sign right before it kept ("-2" is -2); :data:`UNRATED` when there is no digit.

    Their code (DylanJoo/crux, augmentation/gen_ratings.py on main) keeps whatever it finds; a
    value outside ``scale`` (a digit 6-9, a negative one) is :data:`UNRATED` here, so that
    every rating is on the paper's scale or says "no rating".
    """
    m = _FIRST_DIGIT.search(text or "")
    if m is None:
        return UNRATED
    value = int(m.group(0))
    return value if value in set(scale) else UNRATED


# --- is it text of the kind asked for?

_LETTER_WORD = re.compile(r"[^\W\d_]{2,}")     # two letters or more: a word, not "12" or "-"
_SHINGLE = 8            # words in a row taken from the prompt's own text: a copy of it


def _words_lower(text: str) -> list[str]:
    return [w.casefold() for w in _LETTER_WORD.findall(text)]


def instructions_of(template) -> str:
    """A prompt template's own text (its instructions, and its in-context example where it has
    one) with every field left empty: what an output must not copy."""
    return template.render(**{f: "" for f in template.fields})


@dataclass(frozen=True)
class TextCheck:
    """What a generated item of one kind must be to be kept: words (not digits and symbols),
    between ``min_words`` and ``max_words`` of them (the prompt's own length, with room either
    way: "far too short or long", not a quibble), and not a copy of the prompt's instructions
    (``_SHINGLE`` words in a row of them). :meth:`problem` says what is wrong, or ``None``."""

    kind: str
    min_words: int
    max_words: int

    def problem(self, item: str, instructions: str = "") -> str | None:
        words = _LETTER_WORD.findall(item)
        if not words:
            return "no words"
        letters = sum(c.isalpha() for c in item)
        visible = sum(not c.isspace() for c in item)
        if letters < visible / 2:
            return "mostly digits and symbols"
        if len(words) < self.min_words:
            return f"too short ({len(words)} words, fewer than {self.min_words})"
        if len(item.split()) > self.max_words:
            return f"too long ({len(item.split())} words, more than {self.max_words})"
        if instructions:
            own = _words_lower(instructions)
            shingles = {tuple(own[i:i + _SHINGLE]) for i in range(len(own) - _SHINGLE + 1)}
            mine = _words_lower(item)
            if any(tuple(mine[i:i + _SHINGLE]) in shingles
                   for i in range(len(mine) - _SHINGLE + 1)):
                return "a copy of the prompt's instructions"
        return None

    def with_min_words(self, min_words: int) -> TextCheck:
        return TextCheck(self.kind, min_words, self.max_words)


# The CRUX stages' items, with the limits their prompts set (cruxflow.stages.prompts):
# Fig. 9 asks for a report request "of approximately 50 words" (fewer than 3 is not one, more
# than 4 times that is a report); Fig. 7 for passages "of approximately 200 words each" (more
# than 3 times that is not a passage of the kind asked); Fig. 6 for questions, and sets no
# length: fewer than 3 words is a fragment ("Question:"), more than 60 several questions or a
# paragraph. A word here has two letters or more ("Q1", "12:30" and "-" are none).
REPORT_REQUEST_TEXT = TextCheck("report request", min_words=3, max_words=200)
SUBQUESTION_TEXT = TextCheck("sub-question", min_words=3, max_words=60)
PASSAGE_TEXT = TextCheck("passage", min_words=5, max_words=600)
