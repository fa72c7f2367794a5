"""Reading LLM outputs: key points with their spans (App. B's extraction format), span checks
against the source, the aggregation's point numbers with the paper's completeness check,
entailment labels and the AutoDS filter score (Eq. 3)."""

from __future__ import annotations

import re
import unicodedata

from cruxflow.beyond.kpr.prompts import EXTRACTION_DEMO_POINTS
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.logprobs import class_log_mass, share

_POINT_HEAD = re.compile(r"^[ \t>*#\-]*\**\s*point\s*\[?\s*\d+\s*\]?\s*\**\s*[:.)\]]",
                         re.IGNORECASE | re.MULTILINE)
_POINT_START = re.compile(r"<\s*point[_ ]?start\s*>", re.IGNORECASE)
_POINT_END = re.compile(r"<\s*/?\s*point[_ ]?end\s*>|</\s*point[_ ]?start\s*>", re.IGNORECASE)
_SPAN_START = re.compile(r"<\s*span[_ ]?start\s*>", re.IGNORECASE)
_SPAN_END = re.compile(r"<\s*/?\s*span[_ ]?end\s*>|</\s*span[_ ]?start\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<\s*/?\s*(?:point|span)[_ ]?(?:start|end)\s*>", re.IGNORECASE)


def _clean(text: str) -> str:
    """Collapse whitespace, drop stray tags and a wrapping pair of brackets or quotes (models
    copy the format's ``[content of point]`` literally)."""
    text = " ".join(_ANY_TAG.sub(" ", text).split())
    for _ in range(2):
        if len(text) > 1 and text[0] + text[-1] in ("[]", '""', "“”", "''", "**"):
            text = text[1:-1].strip()
    return text


def _parse_block(block: str) -> tuple[str, list[str]]:
    m = _POINT_START.search(block)
    if m:
        rest = block[m.end():]
        end = _POINT_END.search(rest)
        stop = _SPAN_START.search(rest)
        cut = min([x.start() for x in (end, stop) if x] or [len(rest)])
        content, tail = rest[:cut], rest[cut:]
    else:
        stop = _SPAN_START.search(block)
        if stop:
            content, tail = block[:stop.start()], block[stop.start():]
        else:  # "Point 1: text" without tags: the first line
            content, _, tail = block.strip().partition("\n")
    spans = []
    starts = list(_SPAN_START.finditer(tail))
    for i, s in enumerate(starts):
        stop_at = starts[i + 1].start() if i + 1 < len(starts) else len(tail)
        chunk = tail[s.end():stop_at]
        e = _SPAN_END.search(chunk)
        if e:
            chunk = chunk[:e.start()]
        else:  # an unclosed last span ends at the line's end
            chunk = chunk.split("\n", 1)[0]
        chunk = _clean(chunk)
        if chunk and chunk not in spans:
            spans.append(chunk)
    return _clean(content), spans


def parse_key_points(text: str | None) -> list[tuple[str, list[str]]]:
    """``(key point, spans)`` pairs from an extraction output (App. B format)::

        Point 1: <point_start>[content] <point_end><span_start>[span1]<span_end>...

    Tolerated: the format's brackets copied around content or spans, missing ``<point_end>``
    (the content ends at the first ``<span_start>``), missing ``<span_end>`` (a span ends at
    the next tag or the line's end), tags in any case or with a space for the underscore,
    Markdown around ``Point N:``, ``Point N:`` lines without any tag (content = the rest of
    the line, no span), ``<point_start>`` items without ``Point N:``. Empty points are dropped,
    repeated ones (same text) keep the first. An output with none gives ``[]``.
    """
    if not text:
        return []
    heads = list(_POINT_HEAD.finditer(text))
    if heads:
        blocks = [text[h.end():(heads[i + 1].start() if i + 1 < len(heads) else len(text))]
                  for i, h in enumerate(heads)]
    else:
        starts = list(_POINT_START.finditer(text))
        blocks = [text[s.start():(starts[i + 1].start() if i + 1 < len(starts) else len(text))]
                  for i, s in enumerate(starts)]
    out: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for block in blocks:
        content, spans = _parse_block(block)
        key = point_key(content)
        if content and key and key not in seen:
            seen.add(key)
            out.append((content, spans))
    return out


_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'",
                         "–": "-", "—": "-", "\u00a0": " "})


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).split())


def key_points_or_none(text: str | None) -> list[tuple[str, list[str]]] | None:
    """:func:`parse_key_points` for :func:`ask_with_retries`: no point is a failed attempt."""
    return parse_key_points(text) or None


def span_in_text(span: str, text: str) -> bool:
    """Whether ``span`` occurs verbatim in ``text``, after normalising both: Unicode NFKC,
    typographic quotes and dashes to ASCII, runs of whitespace to one space, and an ellipsis
    (``...``/``…``) at either end of the span dropped. Case matters. An empty span is not
    found."""
    s = _normalise(span)
    s = re.sub(r"^(?:\.\.\.|…)\s*|\s*(?:\.\.\.|…)$", "", s).strip()
    return bool(s) and s in _normalise(text)


def point_key(text: str) -> str:
    """The deduplication key: NFKC, case-folded, whitespace collapsed, final punctuation
    dropped."""
    return _normalise(text).casefold().rstrip(" .;:,!?")


# a point repeating one of our demonstration's points or spans is a copy, not a key point
DEMO_KEYS = {point_key(x) for pair in EXTRACTION_DEMO_POINTS for x in pair}

ENTAILMENT_LABELS = LabelSet(phrases={"yes": "yes", "no": "no", "neutral": "neutral"},
                             stages=("bracket", "leading"))


def parse_entailment(text: str | None) -> str | None:
    """The label of an entailment output: ``"yes"``, ``"no"`` or ``"neutral"``; ``None``
    when there is none.

    The first bracketed label counts (``[yes]``, ``[ No ]``, ``[**neutral**]``), after removing
    an echo of the prompt's "[yes], [no], or [neutral]"; without brackets, a label opening the
    output ("Yes, the document ...", "Answer: no", "**Neutral**") or following "answer is" /
    "answer:" (:func:`cruxflow.llm.labels.parse_label`).
    """
    label = parse_label(text, ENTAILMENT_LABELS)
    return None if label is None else label.lower()


_AGG_NUMBERS = re.compile(r"\[\s*(\d+(?:\s*(?:,|;|and|\s)\s*\d+)*)\s*\]\s*\.?\s*$")


def parse_aggregation(text: str | None, n: int) -> list[tuple[str, list[int]]] | None:
    """The de-duplicated points of an aggregation output (App. B): ``Point k: content
    [i, j]`` with the original point numbers (1-based) in brackets at the end.

    Returns ``[(content, [original numbers])]`` only when the paper's check passes (Sec. 3.3):
    every original point 1..n is in exactly one aggregated point. Otherwise (unparseable, a
    point in two aggregates or in none, a number out of range) ``None``.
    """
    if not text:
        return None
    heads = list(_POINT_HEAD.finditer(text))
    if not heads:
        return None
    out: list[tuple[str, list[int]]] = []
    for i, h in enumerate(heads):
        block = text[h.end():(heads[i + 1].start() if i + 1 < len(heads) else len(text))]
        line = " ".join(block.strip().split("\n", 1)[0].split())
        m = _AGG_NUMBERS.search(line)
        if not m:
            return None
        numbers = [int(x) for x in re.findall(r"\d+", m.group(1))]
        content = _clean(line[:m.start()].strip().rstrip("-:").strip())
        if not content:
            return None
        out.append((content, numbers))
    members = [x for _, nums in out for x in nums]
    if sorted(members) != list(range(1, n + 1)):
        return None
    return out


def filter_score(top_logprobs: dict[str, float] | None, text: str | None = None,
                 ) -> float | None:
    """The AutoDS score of a key point (App. A.2, Eq. 3)::

        Score = exp(logit("YES")) / (exp(logit("YES")) + exp(logit("NO")))

    computed from the first generated token's top log-probabilities (the softmax
    normaliser cancels, so log-probabilities give the same ratio as logits). Tokens are
    matched case-insensitively after stripping whitespace and tokenizer space markers, and the
    probabilities of matching variants ("YES", " Yes") add up. When neither YES nor NO is among
    the top tokens, the output text decides (1.0 for yes, 0.0 for no); otherwise ``None``.
    """
    log_mass = class_log_mass(top_logprobs,
                              lambda t: t.upper() if t.upper() in ("YES", "NO") else None)
    score = share(log_mass, "YES", ["NO"])
    if score is not None:
        return score
    if text:
        m = re.match(r"\W*(yes|no)\b", text, re.IGNORECASE)
        if m:
            return 1.0 if m.group(1).lower() == "yes" else 0.0
    return None


