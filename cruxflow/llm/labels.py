"""One parser for a judge's closed-set answer: a label out of a few (RELEVANT/IRRELEVANT,
CORRECT/INCORRECT/ABSTAINED, Full/Partial/No Support, yes/no/neutral) from free text.

A :class:`LabelSet` names the labels by their phrases (regular expressions, matched as whole
words in any case) and, optionally, by the prompt's letters (``A: RELEVANT``) and JSON keys
(``{"grade": "A"}``). :func:`parse_label` reads the text in stages and the first stage that
finds an answer decides:

1. ``json``: the key of a JSON object (also in code fences or with single quotes), then a loose
   ``grade: B``; an echo of the template's alternatives (``"grade": "A" or "B"``) is no answer;
2. ``bracket``: the first bracketed label (``[yes]``, ``[ No ]``, ``[**neutral**]``), after
   dropping echoes of the option list (``[yes], [no], or [neutral]``);
3. ``letter``: an option letter alone at the start (``B``, ``(C)``, ``A: RELEVANT``);
4. ``leading``: a label phrase opening the text (``**No** - ...``, ``Answer: neutral``) or
   following "the answer is";
5. ``anywhere``: every label phrase in the text. **Negation counts**: a phrase preceded by
   "not", "n't", "never" or "no" within two words ("is not relevant", "isn't correct", "not
   fully supported") votes for the label the set gives its negation (IRRELEVANT, INCORRECT,
   PS), or for nothing when the set has none. With ``pick="only"`` the votes must agree (a
   text naming two labels is no answer); with ``pick="first"`` the earliest vote wins.

Stages a set does not enable are skipped. ``None`` means no answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

STAGES = ("json", "bracket", "letter", "leading", "anywhere")
_NEGATION = re.compile(r"(?:\bnot|n't|\bnever|\bno)\s+(?:[\w-]+\s+){0,2}$", re.IGNORECASE)
_MARKUP = "\"'*_`([{<>~#-:.; \t\r\n"


@dataclass(frozen=True)
class LabelSet(Generic[T]):
    """The labels a judge may answer with.

    ``phrases`` maps a regular expression (matched as a whole word, any case) to its label;
    ``negations`` gives the label a negated phrase of a label stands for; ``letters`` maps the
    prompt's option letters to labels; ``json_keys`` are the JSON fields that hold the answer;
    ``stages`` the stages of :func:`parse_label` to use, in order; ``pick`` how ``anywhere``
    decides between several phrases ("only" or "first").
    """

    phrases: Mapping[str, T]
    negations: Mapping[T, T] = field(default_factory=dict)
    letters: Mapping[str, T] = field(default_factory=dict)
    json_keys: Sequence[str] = ()
    stages: Sequence[str] = STAGES
    pick: str = "only"

    def __post_init__(self) -> None:
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; choose from {STAGES}")
        if self.pick not in ("only", "first"):
            raise ValueError(f"pick must be 'only' or 'first', got {self.pick!r}")
        # longest patterns first, so "no support" wins over "support" at the same place
        ordered = sorted(self.phrases, key=len, reverse=True)
        object.__setattr__(self, "_phrase_re", re.compile(
            "|".join(f"(?P<p{i}>(?<![\\w-]){p}(?![\\w-]))" for i, p in enumerate(ordered)),
            re.IGNORECASE))
        object.__setattr__(self, "_ordered", ordered)

    def label_of_word(self, word: str) -> T | None:
        """The label a whole word or phrase names (a letter or a phrase), else ``None``."""
        w = word.strip(_MARKUP)
        letters = {k.upper(): v for k, v in self.letters.items()}
        if w[:1].upper() in letters and (len(w) == 1 or not w[1].isalpha()):
            return letters[w[:1].upper()]
        for pattern in self._ordered:
            if re.fullmatch(pattern, w, re.IGNORECASE):
                return self.phrases[pattern]
        return None

    def match_at(self, text: str, pos: int) -> T | None:
        """The label of a phrase starting exactly at ``pos``, else ``None``."""
        m = self._phrase_re.match(text, pos)
        return self.phrases[self._ordered[int(m.lastgroup[1:])]] if m else None

    def votes(self, text: str) -> list[tuple[int, T]]:
        """``(position, label)`` of every phrase in ``text``, negation applied."""
        out = []
        for m in self._phrase_re.finditer(text):
            pattern = self._ordered[int(m.lastgroup[1:])]
            label = self.phrases[pattern]
            if _NEGATION.search(text[:m.start()]):
                if label not in self.negations:
                    continue
                label = self.negations[label]
            out.append((m.start(), label))
        return out


def parse_label(text: str | None, labels: LabelSet[T]) -> T | None:
    """The label ``text`` answers with, or ``None`` (see the module docstring)."""
    if not text or not text.strip():
        return None
    for stage in labels.stages:
        found = _STAGE[stage](text, labels)
        if found is not None:
            return found
    return None


# --- stages -----------------------------------------------------------------------------------

def _json_stage(text: str, labels: LabelSet[T]) -> T | None:
    for m in re.finditer(r"\{.*?\}", text, re.DOTALL):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            for key in labels.json_keys:
                if isinstance(obj.get(key), str):
                    found = labels.label_of_word(obj[key])
                    if found is not None:
                        return found
    for key in labels.json_keys:
        # "grade": "B" in loose text, but not the template echoed back ("grade": "A" or "B").
        m = re.search(rf"""["']?{re.escape(key)}["']?\s*[:=]\s*["'(\[*]*\s*([A-Za-z]\w*)\b"""
                      r"""(?!["']?\s*(?:,|or)\s*["']?[A-Za-z]\b)""", text, re.IGNORECASE)
        if m:
            found = labels.label_of_word(m.group(1))
            if found is not None:
                return found
    return None


_BRACKETED = r"\[\s*\**\s*([\w-]+(?:\s+[\w-]+)?)\s*\**\s*\]"


def _bracket_stage(text: str, labels: LabelSet[T]) -> T | None:
    # an echo of the option list: two or more bracketed labels joined by commas or "or"
    echo = re.compile(rf"{_BRACKETED}(?:\s*,?\s*(?:or\s+)?{_BRACKETED})+", re.IGNORECASE)
    text = echo.sub(" ", text)
    for m in re.finditer(_BRACKETED, text):
        found = labels.label_of_word(m.group(1))
        if found is not None:
            return found
    return None


def _letter_stage(text: str, labels: LabelSet[T]) -> T | None:
    m = _LONE_LETTER.match(text)
    return labels.letters.get(m.group(1)) if m else None


def _leading_stage(text: str, labels: LabelSet[T]) -> T | None:
    for m in (_OPENING.match(text), _ANSWER_IS.search(text)):
        if m:
            phrase = labels.match_at(text, m.end())
            if phrase is not None:
                return phrase
    return None


def _anywhere_stage(text: str, labels: LabelSet[T]) -> T | None:
    votes = labels.votes(text)
    if not votes:
        return None
    if labels.pick == "first":
        return min(votes, key=lambda v: v[0])[1]
    distinct = {label for _, label in votes}
    return distinct.pop() if len(distinct) == 1 else None


_STAGE = {"json": _json_stage, "bracket": _bracket_stage, "letter": _letter_stage,
          "leading": _leading_stage, "anywhere": _anywhere_stage}
# "B", "(C)", "A: RELEVANT", "**B**": an option letter alone at the start.
_LONE_LETTER = re.compile(r"""^\s*[("'*\[]*([A-Z])\s*(?:[:.)\]"'*]|$)""")
# Markup and an "Answer:" before the first word.
_OPENING = re.compile(r"^[\W_]*(?:(?:final\s+)?answer\s*(?:is)?\s*[:\-]?[\W_]*)?", re.IGNORECASE)
_ANSWER_IS = re.compile(r"\banswer\s*(?:is|:)\s*\W{0,3}", re.IGNORECASE)
