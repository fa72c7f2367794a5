"""Key Point Recall (KPR) of Long2RAG (Qi et al., 2024), with KPP and KPF (Sec. 6.4).

For each question q, key points x^q are extracted from its retrieved documents d^q; a response
y is scored by the fraction of key points it entails (Eq. 1, 2)::

    I(x, y) = 1 if y entails x else 0                              (Eq. 1)
    KPR     = 1/|Q| * sum_q  sum_{x in x^q} I(x, y_q) / |x^q|       (Eq. 2)

The pieces, each usable on its own (the workflow applies them to its own RAG reports):

- :func:`extract_key_points` -- the paper's extraction prompt (App. B, "Prompt for extracting
  key points") per retrieved document, parsed into (key point, verbatim spans) pairs, each span
  checked against its document; ``rounds`` rounds per document, each later round shown the
  points found so far and asked for overlooked ones (Sec. 3.3); normalised deduplication; and,
  optionally, the paper's LLM de-duplication/aggregation (App. B) with its completeness and
  disjointness check, and the AutoDS key-point filter (App. A.2, Eq. 3, threshold 0.7).
- :func:`judge_key_points` -- the paper's entailment prompt (App. B, "Prompt for entailment
  identification"), one greedy request per (key point, response); ``[yes]`` is entailed,
  ``[no]`` and ``[neutral]`` are not (Eq. 1 is binary: the paper's "incomplete expression"
  and "general expression" cases, Sec. 6.1, count as misses).
- :func:`extract_response_points` / :func:`judge_response_points` -- key point precision: the
  key points of the response (same extraction prompt, text = the response), each judged
  against the question's key points (or, optionally, its retrieved documents).
- :func:`kpr_scores` -- per-question KPR, KPP and KPF; :func:`aggregate_scores` -- their means
  overall and per value of any grouping column.
- :func:`run_kpr` -- the whole file-to-file job (``cruxflow kpr``), see docs/kpr.md.

A question without key points has an undefined KPR (0/0): it is left out of every mean and
counted. An empty response entails nothing: KPR 0 (and KPP 0), with no LLM call.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pandas as pd

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, nan_to_none, write_json, write_jsonl, write_tsv
from cruxflow.data.text import split_long_document
from cruxflow.llm import LazyRunner, LLMRunner, Request, Sampling
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.logprobs import class_log_mass, share
from cruxflow.llm.prompts import PromptTemplate
from cruxflow.llm.retry import ask_with_retries
from cruxflow.metrics.stats import mean_of_defined

log = logging.getLogger(__name__)

__all__ = [
    "AGGREGATION",
    "ENTAILMENT",
    "EXTRACTION",
    "EXTRACTION_MORE",
    "FILTER",
    "Judgment",
    "KPRItem",
    "KeyPoint",
    "PROMPTS",
    "SourceDocument",
    "aggregate_scores",
    "extract_key_points",
    "extract_response_points",
    "filter_score",
    "judge_key_points",
    "judge_response_points",
    "key_point_f1",
    "key_point_precision",
    "key_point_recall",
    "kpr_scores",
    "mean_score",
    "parse_aggregation",
    "parse_entailment",
    "parse_key_points",
    "read_items",
    "read_key_points_file",
    "run_kpr",
    "span_in_text",
]

VERSION = "kpr-v1"

# --- prompts ----------------------------------------------------------------------------------
#
# Copied from the paper's appendix (App. B and App. A.2), wording and typographic quotes
# unchanged. The paper's PDF wraps the prompt boxes at ~50 characters, so the line breaks are
# ours, and one token it breaks mid-word ("<span_s" / "tart>") is joined. The paper prints
# "<One-shot Demonstration>" where its demonstration went without giving it: that place is the
# ``{demonstration}`` field, filled with our own examples below.

EXTRACTION = PromptTemplate(
    name="kpr_extract",
    version=VERSION,
    fields=("demonstration", "query", "text"),
    text=(
        "Based on the text provided, identify key points in the text that directly help in "
        "responding to the query. Format your response as follows: each point should start "
        "with “Point [number]:”, followed by its content and spans in the text that entails "
        "the key point.\n"
        "IMPORTANT: The output must be of the format “ Point [number]: "
        "<point_start>[content of point] "
        "<point_end><span_start>[span1]<span_end><span_start>[span2]<span_end>”\n"
        "IMPORTANT: Ensure each point is helpful in responding to the query. Keep the point "
        "using the original language and do not add explanations.\n"
        "IMPORTANT: Each span must be a single consecutive verbatim span from the "
        "corresponding passages. Copy verbatim the spans, don’t modify any word!\n"
        "Here is an example:\n"
        "{demonstration}\n"
        "Remember:\n"
        "- key points can be abstracted or summarized, but the span must be a copy of the "
        "original text. The content of the key point does NOT need to be the same as that of "
        "the span.\n"
        "- These key points must be helpful in responding to the query.\n"
        "- Copy verbatim the spans, don’t modify any word! If there are multiple spans for a "
        "point, separate them with <span_start> and <span_end> tokens.\n"
        "[Query]: {query}\n"
        "[Text]: {text}\n"
        "[Key Point]\n"
    ),
)

# Ours: the paper runs "multiple rounds of extraction, each time prompting GPT-4 to consider
# previously overlooked information" (Sec. 3.3) without printing that prompt. A later round is
# the extraction prompt with the points found so far added before "[Key Point]".
EXTRACTION_MORE = PromptTemplate(
    name="kpr_extract_more",
    version=VERSION,
    fields=("demonstration", "query", "text", "points"),
    text=EXTRACTION.text.rsplit("[Key Point]\n", 1)[0] + (
        "[Key Points Found So Far]\n"
        "{points}\n"
        "Consider the information in the text that the key points found so far overlooked: "
        "identify the other key points in the text that directly help in responding to the "
        "query, in the same format. Do not repeat the key points found so far.\n"
        "[Key Point]\n"
    ),
)

ENTAILMENT = PromptTemplate(
    name="kpr_entailment",
    version=VERSION,
    fields=("document", "claim"),
    text=(
        "Your task is to determine whether a claim is entailed with a document.\n"
        "You should evaluate whether the information in the document supports or describes "
        "the claim provided.\n"
        "You must provide an answer based on whether the document does entail the claim, does "
        "not entail the claim, or is neutral.\n"
        "If the claim is entailed, you should provide snippets from the document that support "
        "this claim.\n"
        "Document: {document}\n"
        "Claim: {claim}\n"
        "Provide your answer as [yes], [no], or [neutral]. State your reason behind the "
        "answer and provide snippets from the document that support this claim if your answer "
        "is [yes].\n"
    ),
)

AGGREGATION = PromptTemplate(
    name="kpr_aggregate",
    version=VERSION,
    fields=("demonstration", "points"),
    text=(
        "Based on the points extracted from a piece of text, identify and remove any "
        "duplicate points to streamline the list.\n"
        "REMEMBER:\n"
        "- The de-duplicated points need to contain all the original points.\n"
        "- An original point cannot exist in two different de-duplicated points at the same "
        "time.\n"
        "- Format your response as follows: each unique point should start with “Point "
        "[number]:”, followed by its content and corresponding original point numbers. The "
        "corresponding original point numbers should be wrapped with [].\n"
        "Here is an example:\n"
        "{demonstration}\n"
        "Remember to not add any new points, only de-duplicate the existing ones. And do not "
        "add any explanations.\n"
        "[Original Points]\n"
        "{points}\n"
        "[De-duplicate Points]\n"
    ),
)

FILTER = PromptTemplate(
    name="kpr_filter",
    version=VERSION,
    fields=("question", "point"),
    text=(
        "You are a helpful AI assistant. Your role is to evaluate whether a piece of "
        "information can serve as a key point in answering the question.\n"
        "question: {question}\n"
        "information: {point}\n"
        "Can the above information directly help in addressing the question (thus being a "
        "key point)? You must respond with YES or NO."
    ),
)

PROMPTS = (EXTRACTION, EXTRACTION_MORE, ENTAILMENT, AGGREGATION, FILTER)

# Ours (the paper does not print its demonstrations).
EXTRACTION_DEMO_POINTS = (
    ("Trees stop making chlorophyll in autumn, so the green colour of the leaves fades.",
     "In autumn, trees stop producing chlorophyll, the green pigment that captures "
     "sunlight."),
    ("Yellow and orange carotenoids, present in the leaves all along, become visible.",
     "As the chlorophyll breaks down, yellow and orange carotenoids that were present all "
     "along become visible."),
    ("Red colours come from anthocyanins made from sugars trapped in the leaves.",
     "Some trees also make red anthocyanins from sugars trapped in the leaves."),
)
EXTRACTION_DEMONSTRATION = (
    "[Query]: Why do leaves change colour in autumn?\n"
    "[Text]: In autumn, trees stop producing chlorophyll, the green pigment that captures "
    "sunlight. As the chlorophyll breaks down, yellow and orange carotenoids that were present "
    "all along become visible. Some trees also make red anthocyanins from sugars trapped in "
    "the leaves. The park's visitor centre is open daily from 8 am.\n"
    "[Key Point]\n"
    + "".join(f"Point {i}: <point_start>{p}<point_end><span_start>{s}<span_end>\n"
              for i, (p, s) in enumerate(EXTRACTION_DEMO_POINTS, 1))
)
AGGREGATION_DEMONSTRATION = (
    "[Original Points]\n"
    "Point 1: Trees stop making chlorophyll in autumn.\n"
    "Point 2: Red colours come from anthocyanins.\n"
    "Point 3: In autumn trees no longer produce chlorophyll, so the green fades.\n"
    "[De-duplicate Points]\n"
    "Point 1: Trees stop producing chlorophyll in autumn, so the green fades. [1, 3]\n"
    "Point 2: Red colours come from anthocyanins. [2]\n"
)

# Decoding. The paper: greedy evaluation with a fixed seed (footnote 7); extraction with
# GPT-4-Turbo, settings not given: greedy here too, so that extraction is reproducible.
EXTRACT_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1024, seed=0)
JUDGE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=256, seed=0)
AGGREGATE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1024, seed=0)
FILTER_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=0, logprobs=20)
FILTER_THRESHOLD = 0.7  # App. A.2: 8.7% false positives at 0.7

# --- data -------------------------------------------------------------------------------------


@dataclass
class SourceDocument:
    id: str
    text: str


@dataclass
class KeyPoint:
    """A key point. ``spans``: verbatim evidence given by the extractor; ``spans_found[i]``:
    whether ``spans[i]`` occurs in its source text (whitespace-normalised). ``sources``: ids of
    the documents it was extracted from (after deduplication, all of them). ``score``: the
    AutoDS score (Eq. 3) when the filter ran."""

    id: str
    text: str
    spans: list[str] = field(default_factory=list)
    spans_found: list[bool] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    round: int | None = None
    score: float | None = None
    merged_from: list[str] = field(default_factory=list)

    @property
    def span_found(self) -> bool | None:
        """At least one span occurs verbatim in the source (``False`` for an extracted point
        without span); ``None`` for a given point whose spans were not checked."""
        if not self.spans:
            return None if self.round is None else False
        if len(self.spans_found) != len(self.spans):
            return None  # given with spans that were not checked
        return any(self.spans_found)

    def to_json(self) -> dict:
        out = {"id": self.id, "text": self.text, "spans": self.spans,
               "spans_found": self.spans_found, "span_found": self.span_found,
               "sources": self.sources, "round": self.round}
        if self.score is not None:
            out["score"] = self.score
        if self.merged_from:
            out["merged_from"] = self.merged_from
        return out


@dataclass
class KPRItem:
    """One question: its retrieved documents and/or key points, a response, other columns.

    ``key_points`` is ``None`` until extracted (or given); an empty list means the question has
    no key point. ``record`` says where the item came from (for error messages)."""

    id: str
    question: str
    documents: list[SourceDocument] = field(default_factory=list)
    key_points: list[KeyPoint] | None = None
    response: str | None = None
    extra: dict = field(default_factory=dict)
    record: str = ""
    extraction: dict = field(default_factory=dict)


@dataclass
class Judgment:
    """One entailment judgment. ``kind``: ``"recall"`` (key point vs the response) or
    ``"precision"`` (response point vs the reference). ``label``: ``yes``/``no``/``neutral``,
    ``None`` when unparseable or not asked (``note`` says why)."""

    item_id: str
    kind: str
    point_id: str
    point: str
    entailed: bool
    label: str | None
    raw: str | None
    note: str | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# --- reading input ----------------------------------------------------------------------------

_CORE_FIELDS = {"id", "question", "documents", "key_points", "response"}
_KP_FILE_FIELDS = {"id", "question", "key_points", "extraction"}


def _as_id(value, *, path, record, field_name) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise DataError(f"must be a non-empty string or integer, got {value!r}", path=path,
                        record=record, field=field_name)
    return str(value)


def _parse_key_point_list(value, *, path, record, item_id) -> list[KeyPoint]:
    if not isinstance(value, list):
        raise DataError(f"must be a list of strings or objects with 'text', got "
                        f"{type(value).__name__}", path=path, record=record, field="key_points")
    points = []
    for i, kp in enumerate(value):
        where = {"path": path, "record": record, "field": f"key_points[{i}]"}
        if isinstance(kp, str):
            text, spans, extra = kp, [], {}
        elif isinstance(kp, dict):
            text = kp.get("text", kp.get("point", kp.get("key_point")))
            spans = kp.get("spans") or []
            extra = kp
            if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
                raise DataError("'spans' must be a list of strings", **where)
        else:
            raise DataError(f"must be a string or an object with 'text', got "
                            f"{type(kp).__name__}", **where)
        if not isinstance(text, str) or not text.strip():
            raise DataError("a key point needs a non-empty text", **where)
        found = extra.get("spans_found")
        if not (isinstance(found, list) and len(found) == len(spans)):
            found = []
        kp_id = extra.get("id")
        points.append(KeyPoint(
            id=str(kp_id) if kp_id not in (None, "") else f"{item_id}-kp{i + 1}",
            text=" ".join(text.split()), spans=list(spans),
            spans_found=[bool(f) for f in found], sources=list(extra.get("sources") or []),
            round=extra.get("round"), score=extra.get("score"),
            merged_from=list(extra.get("merged_from") or [])))
    ids = [p.id for p in points]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise DataError(f"key point id {dup!r} occurs twice", path=path, record=record,
                        field="key_points")
    return points


def read_key_points_file(path) -> dict[str, tuple[str | None, list[KeyPoint], dict]]:
    """``{id: (question, key points, other columns)}`` from a JSONL file with one line per
    question, ``{"id", "key_points": [...], "question"?, ...}`` (what ``key_points.jsonl`` of
    an earlier run holds)."""
    out: dict[str, tuple[str | None, list[KeyPoint], dict]] = {}
    for lineno, obj in iter_jsonl(path):
        record = f"line {lineno}"
        if "id" not in obj:
            raise DataError("missing", path=path, record=record, field="id")
        item_id = _as_id(obj["id"], path=path, record=record, field_name="id")
        if item_id in out:
            raise DataError(f"id {item_id!r} occurs twice", path=path, record=record,
                            field="id")
        if "key_points" not in obj:
            raise DataError("missing", path=path, record=record, field="key_points")
        question = obj.get("question")
        if question is not None and not isinstance(question, str):
            raise DataError("must be a string", path=path, record=record, field="question")
        points = _parse_key_point_list(obj["key_points"], path=path, record=record,
                                       item_id=item_id)
        extra = {k: v for k, v in obj.items() if k not in _KP_FILE_FIELDS}
        out[item_id] = (question, points, extra)
    return out


def read_items(path, *, key_points=None, group_by: Sequence[str] = (),
               need_response: bool = True, need_documents: bool = False) -> list[KPRItem]:
    """Read the input JSONL (one line per question) into items.

    ``key_points``: an optional JSONL file of key points per id (:func:`read_key_points_file`);
    its points replace the line's own, its question and other columns fill what the line
    lacks. ``need_response``: every line must have a ``response`` string (all but
    ``--extract-only``). ``need_documents``: every line must have documents (precision against
    the documents). Every error names the file, the line and the field.
    """
    given = read_key_points_file(key_points) if key_points is not None else {}
    items: list[KPRItem] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(path):
        record = f"line {lineno}"
        where = {"path": path, "record": record}
        if "id" not in obj:
            raise DataError("missing", field="id", **where)
        item_id = _as_id(obj["id"], path=path, record=record, field_name="id")
        if item_id in seen:
            raise DataError(f"id {item_id!r} occurs twice", field="id", **where)
        seen.add(item_id)
        from_file = given.get(item_id)
        question = obj.get("question", from_file[0] if from_file else None)
        if not isinstance(question, str) or not question.strip():
            raise DataError("missing or not a non-empty string (give it here or in the "
                            "--key-points file)", field="question", **where)
        docs_raw = obj.get("documents", [])
        if not isinstance(docs_raw, list):
            raise DataError(f"must be a list, got {type(docs_raw).__name__}",
                            field="documents", **where)
        documents = []
        for j, d in enumerate(docs_raw):
            if isinstance(d, str):
                d = {"text": d}
            if not isinstance(d, dict):
                raise DataError(f"must be an object with 'text' or a string, got "
                                f"{type(d).__name__}", field=f"documents[{j}]", **where)
            text = d.get("text")
            if not isinstance(text, str):
                raise DataError("missing or not a string", field=f"documents[{j}].text",
                                **where)
            doc_id = d.get("id", f"{item_id}-d{j + 1}")
            doc_id = _as_id(doc_id, path=path, record=record, field_name=f"documents[{j}].id")
            documents.append(SourceDocument(doc_id, text))
        if len({d.id for d in documents}) != len(documents):
            raise DataError("two documents have the same id", field="documents", **where)
        points = None
        if from_file is not None:
            points = from_file[1]
            if "key_points" in obj:
                log.warning("%s %s: key points of id %r come from %s, not from the line",
                            path, record, item_id, key_points)
        elif "key_points" in obj:
            points = _parse_key_point_list(obj["key_points"], path=path, record=record,
                                           item_id=item_id)
        if points is None and not documents:
            raise DataError("no documents to extract key points from and no key points "
                            "(give 'documents', 'key_points' or a --key-points file with this "
                            "id)", field="documents", **where)
        if need_documents and not documents:
            raise DataError("precision against the documents needs them", field="documents",
                            **where)
        response = obj.get("response")
        if need_response and not isinstance(response, str):
            raise DataError("missing or not a string (an empty string is an empty response)",
                            field="response", **where)
        if response is not None and not isinstance(response, str):
            raise DataError("must be a string", field="response", **where)
        extra = dict(from_file[2]) if from_file else {}
        extra.update({k: v for k, v in obj.items() if k not in _CORE_FIELDS})
        for col in group_by:
            if col not in extra:
                raise DataError(f"no column {col!r} to group by", field=col, **where)
            if isinstance(extra[col], (dict, list)):
                raise DataError("a grouping column must hold a string or number", field=col,
                                **where)
        items.append(KPRItem(item_id, question, documents, points, response, extra, record))
    if not items:
        raise DataError("no questions in the input", path=path)
    return items


# --- parsing ----------------------------------------------------------------------------------

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
        key = _point_key(content)
        if content and key and key not in seen:
            seen.add(key)
            out.append((content, spans))
    return out


_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'",
                         "–": "-", "—": "-", "\u00a0": " "})


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).split())


def _key_points_or_none(text: str | None) -> list[tuple[str, list[str]]] | None:
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


def _point_key(text: str) -> str:
    """The deduplication key: NFKC, case-folded, whitespace collapsed, final punctuation
    dropped."""
    return _normalise(text).casefold().rstrip(" .;:,!?")


# a point repeating one of our demonstration's points or spans is a copy, not a key point
_DEMO_KEYS = {_point_key(x) for pair in EXTRACTION_DEMO_POINTS for x in pair}

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


# --- formulas ---------------------------------------------------------------------------------


def key_point_recall(entailed: Sequence[bool]) -> float | None:
    """One question's term of Eq. 2: ``sum_{x in x^q} I(x, y) / |x^q|``, with ``I`` of Eq. 1
    given as booleans. ``None`` for a question without key points (0/0)."""
    if not entailed:
        return None
    return sum(bool(e) for e in entailed) / len(entailed)


def key_point_precision(supported: Sequence[bool]) -> float:
    """Key point precision of one response (Sec. 6.4): the fraction of the key points in the
    response that are present in the retrieved information. A response without any key point
    (e.g. empty) has precision 0 (it contributes nothing)."""
    if not supported:
        return 0.0
    return sum(bool(s) for s in supported) / len(supported)


def key_point_f1(precision: float, recall: float) -> float:
    """Key point F1 of one question (Sec. 6.4, KPF): ``2 P R / (P + R)``, 0 when both are 0.

    Averaged over questions like KPR. (The paper's Table 4 is consistent with a mean of
    per-question F1, not the F1 of the means: for GPT-4o the F1 of KPP 0.323 and KPR 0.579
    would be 0.415, the table gives KPF 0.379.)"""
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def mean_score(values: Iterable[float | None]) -> float | None:
    """The mean over questions of Eq. 2 (``1/|Q| sum_q``), skipping undefined (``None``/NaN)
    per-question values; ``None`` when none is defined."""
    return mean_of_defined(values)


# --- extraction -------------------------------------------------------------------------------


def _format_points(points: Sequence[str]) -> str:
    return "\n".join(f"Point {i}: {p}" for i, p in enumerate(points, 1))


def _merge(points: Iterable[KeyPoint]) -> list[KeyPoint]:
    """Normalised deduplication: points with the same key (:func:`_point_key`) become one,
    the first text kept, spans and sources merged in order."""
    merged: dict[str, KeyPoint] = {}
    for p in points:
        key = _point_key(p.text)
        if key not in merged:
            merged[key] = dataclasses.replace(p, spans=list(p.spans),
                                              spans_found=list(p.spans_found),
                                              sources=list(p.sources))
            continue
        m = merged[key]
        for s, f in zip(p.spans, p.spans_found, strict=True):
            if s not in m.spans:
                m.spans.append(s)
                m.spans_found.append(f)
        m.sources.extend(x for x in p.sources if x not in m.sources)
        if p.round is not None and (m.round is None or p.round < m.round):
            m.round = p.round
    return list(merged.values())


def extract_key_points(items: Sequence[KPRItem], runner: LLMRunner, *, rounds: int = 1,
                       sampling: Sampling = EXTRACT_SAMPLING, attempts: int = 3,
                       drop_unfound: bool = False, max_words: int | None = None,
                       aggregate: bool = False, filter_threshold: float | None = None,
                       aggregate_sampling: Sampling = AGGREGATE_SAMPLING,
                       filter_sampling: Sampling = FILTER_SAMPLING,
                       demonstration: str = EXTRACTION_DEMONSTRATION) -> list[KPRItem]:
    """Items with their key points extracted from their documents (items that already have
    key points are returned unchanged).

    Per document (cut into ``max_words``-word pieces first when given, for small context
    windows), round 1 asks :data:`EXTRACTION`; rounds 2..``rounds`` ask
    :data:`EXTRACTION_MORE` with the piece's points so far, and a piece stops early when a
    round adds nothing new. A point repeating one of our demonstration's points or spans is
    dropped (a small model copies them; ``n_demo_copies``) and is not new. Each span is
    checked against the whole document (:func:`span_in_text`). Then, per question:
    normalised duplicates are merged (:func:`_merge`);
    with ``drop_unfound`` points none of whose spans was found are dropped (the paper keeps
    them and has humans check grounding, so the default keeps them); with ``aggregate`` the
    paper's LLM de-duplication runs (:data:`AGGREGATION`; an output failing its check is
    retried and then ignored, counted); with ``filter_threshold`` the AutoDS filter keeps
    points whose Eq. 3 score reaches it (the paper: 0.7; a point without a score is kept and
    counted). Point ids are ``<item id>-kp<n>``.

    A piece whose first-round output has no parseable point is retried with the next seed
    (when sampling is not greedy) and counted as a parse failure; an empty later round just
    ends that piece's extraction. ``item.extraction`` records the counts.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    todo = [it for it in items if it.key_points is None]
    # pieces: (item index in todo, document, text)
    pieces: list[tuple[int, SourceDocument, str]] = []
    for i, it in enumerate(todo):
        for doc in it.documents:
            texts = ([doc.text] if max_words is None
                     else split_long_document(doc.text, max_words, max_words))
            pieces.extend((i, doc, t) for t in texts if t.strip())
    found: list[list[KeyPoint]] = [[] for _ in pieces]
    raw_counts = [0] * len(pieces)
    demo_counts = [0] * len(pieces)
    active = list(range(len(pieces)))
    for rnd in range(1, rounds + 1):
        if not active:
            break
        if rnd == 1:
            prompts = [EXTRACTION.render(demonstration=demonstration,
                                         query=todo[pieces[k][0]].question,
                                         text=pieces[k][2]) for k in active]
        else:
            prompts = [EXTRACTION_MORE.render(demonstration=demonstration,
                                              query=todo[pieces[k][0]].question,
                                              text=pieces[k][2],
                                              points=_format_points([p.text for p in found[k]]))
                       for k in active]
        if rnd == 1:
            results = [(a.value, a.text) for a in ask_with_retries(
                runner, prompts, sampling, _key_points_or_none, attempts=attempts)]
        else:  # an empty later round is an answer ("nothing more"), not a failure
            outs = runner.generate([Request(p, sampling) for p in prompts])
            results = [(parse_key_points(o.text), o.text) for o in outs]
        still = []
        for k, (parsed, _) in zip(active, results, strict=True):
            _, doc, _ = pieces[k]
            keys = {_point_key(p.text) for p in found[k]}
            new = 0
            for text, spans in parsed or []:
                raw_counts[k] += 1
                if _point_key(text) in _DEMO_KEYS:
                    demo_counts[k] += 1
                    continue
                if _point_key(text) in keys:
                    continue
                keys.add(_point_key(text))
                found[k].append(KeyPoint(
                    id="", text=text, spans=spans,
                    spans_found=[span_in_text(s, doc.text) for s in spans],
                    sources=[doc.id], round=rnd))
                new += 1
            if new:
                still.append(k)
        active = still

    out_items = list(items)
    index = {id(it): n for n, it in enumerate(items)}
    per_item: list[list[KeyPoint]] = [[] for _ in todo]
    n_raw = [0] * len(todo)
    n_demo = [0] * len(todo)
    for k, (i, _, _) in enumerate(pieces):
        per_item[i].extend(found[k])
        n_raw[i] += raw_counts[k]
        n_demo[i] += demo_counts[k]
    for i, it in enumerate(todo):
        points = _merge(per_item[i])
        unfound = [p for p in points if not p.span_found]
        if drop_unfound:
            points = [p for p in points if p.span_found]
        it2 = dataclasses.replace(it, key_points=points, extraction={
            "n_pieces": sum(1 for x in pieces if x[0] == i), "n_parsed": n_raw[i],
            "n_demo_copies": n_demo[i], "n_after_dedup": len(points) + (
                len(unfound) if drop_unfound else 0),
            "n_span_not_found": len(unfound), "dropped_span_not_found": drop_unfound})
        out_items[index[id(it)]] = it2
        todo[i] = it2
    if aggregate:
        _aggregate(todo, runner, aggregate_sampling, attempts)
    if filter_threshold is not None:
        _filter(todo, runner, filter_threshold, filter_sampling)
    for it in todo:
        for n, p in enumerate(it.key_points or [], 1):
            p.id = f"{it.id}-kp{n}"
        it.extraction["n_key_points"] = len(it.key_points or [])
    return out_items


def _aggregate(items: list[KPRItem], runner: LLMRunner, sampling: Sampling,
               attempts: int) -> None:
    """The paper's LLM de-duplication and aggregation, in place (see :func:`parse_aggregation`)."""
    todo = [it for it in items if len(it.key_points or []) >= 2]
    prompts = [AGGREGATION.render(demonstration=AGGREGATION_DEMONSTRATION,
                                  points=_format_points([p.text for p in it.key_points]))
               for it in todo]
    parsers = [partial(parse_aggregation, n=len(it.key_points)) for it in todo]
    results = [a.value for a in ask_with_retries(runner, prompts, sampling, parsers,
                                                 attempts=attempts)]
    for it in items:
        it.extraction.setdefault("aggregation", "not needed")
    for it, parsed in zip(todo, results, strict=True):
        if parsed is None:
            it.extraction["aggregation"] = "failed (kept the de-duplicated points)"
            continue
        old = it.key_points
        new = []
        for content, numbers in parsed:
            members = [old[n - 1] for n in numbers]
            spans, found, sources = [], [], []
            for m in members:
                for s, f in zip(m.spans, m.spans_found, strict=True):
                    if s not in spans:
                        spans.append(s)
                        found.append(f)
                sources.extend(x for x in m.sources if x not in sources)
            rounds = [m.round for m in members if m.round is not None]
            new.append(KeyPoint("", content, spans, found, sources,
                                min(rounds) if rounds else None,
                                merged_from=[m.text for m in members]))
        it.key_points = _merge(new)
        it.extraction["aggregation"] = "ok"


def _filter(items: list[KPRItem], runner: LLMRunner, threshold: float,
            sampling: Sampling) -> None:
    """The AutoDS key-point filter (App. A.2), in place: keep points scoring >= threshold."""
    slots = [(it, p) for it in items for p in it.key_points or []]
    outs = runner.generate([Request(FILTER.render(question=it.question, point=p.text),
                                    sampling) for it, p in slots])
    for (_, p), out in zip(slots, outs, strict=True):
        p.score = filter_score(out.top_logprobs, out.text)
        if p.score is None:
            runner.stats.parse_failures += 1
    for it in items:
        before = it.key_points or []
        it.key_points = [p for p in before if p.score is None or p.score >= threshold]
        it.extraction["filter_threshold"] = threshold
        it.extraction["n_filtered_out"] = len(before) - len(it.key_points)
        it.extraction["n_without_score"] = sum(p.score is None for p in before)


# --- judging ----------------------------------------------------------------------------------


def _judge(pairs: list[tuple[str, str, str, str, str]], runner: LLMRunner, kind: str,
           sampling: Sampling, attempts: int) -> list[Judgment]:
    """``pairs``: (item id, point id, point, document text, note-if-skipped-or-empty)."""
    asked = [k for k, (*_, note) in enumerate(pairs) if not note]
    prompts = [ENTAILMENT.render(document=pairs[k][3], claim=pairs[k][2]) for k in asked]
    results = [(a.value, a.text) for a in ask_with_retries(
        runner, prompts, sampling, parse_entailment, attempts=attempts)]
    answers = dict(zip(asked, results, strict=True))
    out = []
    for k, (item_id, point_id, point, _, note) in enumerate(pairs):
        if k in answers:
            label, raw = answers[k]
            out.append(Judgment(item_id, kind, point_id, point, label == "yes", label, raw,
                                None if label else "unparseable (counted as not entailed)"))
        else:
            out.append(Judgment(item_id, kind, point_id, point, False, None, None, note))
    return out


def judge_key_points(items: Sequence[KPRItem], runner: LLMRunner, *,
                     sampling: Sampling = JUDGE_SAMPLING, attempts: int = 3) -> list[Judgment]:
    """Eq. 1 for every (key point, response) pair: :data:`ENTAILMENT` with the response as the
    document and the key point as the claim, greedy, one request per pair.

    ``[yes]`` is entailed; ``[no]``, ``[neutral]`` and an unparseable output (after
    ``attempts`` tries, which only differ when sampling is not greedy; counted in
    ``runner.stats.parse_failures``) are not. An empty response entails nothing and is not
    sent. Items need key points (run :func:`extract_key_points` first).
    """
    pairs = []
    for it in items:
        if it.key_points is None:
            raise ValueError(f"item {it.id}: no key points (extract them first)")
        if it.response is None:
            raise ValueError(f"item {it.id}: no response to judge")
        empty = "" if it.response.strip() else "empty response"
        pairs.extend((it.id, p.id, p.text, it.response, empty) for p in it.key_points)
    return _judge(pairs, runner, "recall", sampling, attempts)


def extract_response_points(items: Sequence[KPRItem], runner: LLMRunner, *,
                            sampling: Sampling = EXTRACT_SAMPLING, attempts: int = 3,
                            demonstration: str = EXTRACTION_DEMONSTRATION,
                            ) -> dict[str, list[KeyPoint]]:
    """The key points of each response, for KPP: :data:`EXTRACTION` with the response as the
    text (one round), spans checked against the response, normalised duplicates and copies of
    the demonstration dropped. Ids ``<item id>-rp<n>``. Items without key points (excluded
    from every mean) and empty responses get none, without a call."""
    todo = [it for it in items if it.key_points and it.response and it.response.strip()]
    prompts = [EXTRACTION.render(demonstration=demonstration, query=it.question,
                                 text=it.response) for it in todo]
    results = [(a.value, a.text) for a in ask_with_retries(
        runner, prompts, sampling, _key_points_or_none, attempts=attempts)]
    out: dict[str, list[KeyPoint]] = {it.id: [] for it in items}
    for it, (parsed, _) in zip(todo, results, strict=True):
        points = _merge(KeyPoint("", t, s, [span_in_text(x, it.response) for x in s],
                                 ["response"], 1)
                        for t, s in parsed or [] if _point_key(t) not in _DEMO_KEYS)
        for n, p in enumerate(points, 1):
            p.id = f"{it.id}-rp{n}"
        out[it.id] = points
    return out


def _reference(it: KPRItem, reference: str) -> str:
    if reference == "key_points":
        return "\n".join(f"{n}. {p.text}" for n, p in enumerate(it.key_points or [], 1))
    if reference == "documents":
        if not it.documents:
            raise ValueError(f"item {it.id}: precision against the documents needs documents")
        return "\n\n".join(d.text for d in it.documents)
    raise ValueError(f"reference must be 'key_points' or 'documents', not {reference!r}")


def judge_response_points(items: Sequence[KPRItem], response_points: dict[str, list[KeyPoint]],
                          runner: LLMRunner, *, reference: str = "key_points",
                          sampling: Sampling = JUDGE_SAMPLING,
                          attempts: int = 3) -> list[Judgment]:
    """Whether each key point of a response is present in the retrieved information (KPP,
    Sec. 6.4): :data:`ENTAILMENT` with the reference as the document and the response point
    as the claim. ``reference``: ``"key_points"`` (the question's key points, numbered, one a
    line; default) or ``"documents"`` (its retrieved documents, concatenated)."""
    pairs = []
    for it in items:
        points = response_points.get(it.id, [])
        if not points:
            continue
        ref = _reference(it, reference)
        pairs.extend((it.id, p.id, p.text, ref, "") for p in points)
    return _judge(pairs, runner, "precision", sampling, attempts)


# --- scores -----------------------------------------------------------------------------------


def kpr_scores(items: Sequence[KPRItem], recall: Sequence[Judgment],
               precision: Sequence[Judgment] | None = None,
               group_by: Sequence[str] = ()) -> pd.DataFrame:
    """Per question: ``id``, ``n_key_points``, ``n_entailed``, ``KPR`` (Eq. 2's term; NaN for
    a question without key points), and with ``precision`` judgments ``n_response_points``,
    ``n_supported``, ``KPP``, ``KPF`` (NaN where KPR is), then the ``group_by`` columns."""
    by_item: dict[str, list[bool]] = {}
    for j in recall:
        by_item.setdefault(j.item_id, []).append(j.entailed)
    prec: dict[str, list[bool]] = {}
    for j in precision or []:
        prec.setdefault(j.item_id, []).append(j.entailed)
    rows = []
    for it in items:
        n = len(it.key_points or [])
        entailed = by_item.get(it.id, [])
        if len(entailed) != n:
            raise ValueError(f"item {it.id}: {len(entailed)} judgments for {n} key points")
        r = key_point_recall(entailed)
        row = {"id": it.id, "n_key_points": n, "n_entailed": sum(entailed),
               "KPR": math.nan if r is None else r}
        if precision is not None:
            supported = prec.get(it.id, [])
            p = key_point_precision(supported)
            row.update(n_response_points=len(supported), n_supported=sum(supported),
                       KPP=math.nan if r is None else p,
                       KPF=math.nan if r is None else key_point_f1(p, r))
        for col in group_by:
            row[col] = it.extra.get(col)
        rows.append(row)
    return pd.DataFrame(rows)


def aggregate_scores(per_question: pd.DataFrame, group_by: Sequence[str] = (),
                     ) -> tuple[dict, pd.DataFrame]:
    """The means over questions with key points (Eq. 2's ``1/|Q| sum_q``), overall and for
    each value of each ``group_by`` column separately (as the paper's per-domain Fig. 4 and
    per-category Table 1). Returns ``(overall, grouped)``; ``grouped`` has columns
    ``group_by``, ``group``, ``n_questions``, the metrics, ``n_without_key_points``."""
    metrics = [m for m in ("KPR", "KPP", "KPF") if m in per_question.columns]
    scored = per_question[per_question["KPR"].notna()] if len(per_question) else per_question
    overall: dict = {m: mean_score(scored[m]) for m in metrics}
    overall["n_questions"] = int(len(per_question))
    overall["n_scored"] = int(len(scored))
    overall["n_without_key_points"] = int(len(per_question) - len(scored))
    rows = []
    for col in group_by:
        for value, group in per_question.groupby(per_question[col].astype(str), sort=True):
            ok = group[group["KPR"].notna()]
            rows.append({"group_by": col, "group": value, "n_questions": int(len(ok)),
                         **{m: mean_score(ok[m]) for m in metrics},
                         "n_without_key_points": int(len(group) - len(ok))})
    grouped = pd.DataFrame(rows, columns=["group_by", "group", "n_questions", *metrics,
                                          "n_without_key_points"])
    return overall, grouped


# --- the whole job ----------------------------------------------------------------------------


def _key_points_rows(items: Sequence[KPRItem]) -> list[dict]:
    return [{"id": it.id, "question": it.question,
             "key_points": [p.to_json() for p in it.key_points or []],
             **({"extraction": it.extraction} if it.extraction else {}),
             **{k: v for k, v in it.extra.items() if k not in _KP_FILE_FIELDS}}
            for it in items]


def run_kpr(input_path, output_dir, *, runner: LLMRunner | None = None,
            runner_factory: Callable[[], LLMRunner] | None = None, key_points=None,
            extract_only: bool = False, rounds: int = 1, group_by: Sequence[str] = (),
            precision: bool = True, precision_reference: str = "key_points",
            drop_unfound: bool = False, aggregate: bool = False,
            filter_threshold: float | None = None, max_words: int | None = None,
            extract_max_tokens: int = EXTRACT_SAMPLING.max_tokens,
            judge_max_tokens: int = JUDGE_SAMPLING.max_tokens, attempts: int = 3) -> dict:
    """Read ``input_path``, extract what is missing, judge, score, write ``output_dir``.

    Writes ``key_points.jsonl``; unless ``extract_only`` also ``judgments.jsonl``,
    ``response_key_points.jsonl`` (with ``precision``), ``per_question.tsv``, ``grouped.tsv``;
    always ``summary.json``, which is also returned. The LLM is ``runner`` or, built only
    when some request is needed, ``runner_factory()`` (then closed here).
    """
    output_dir = Path(output_dir)
    group_by = list(group_by)
    items = read_items(input_path, key_points=key_points, group_by=group_by,
                       need_response=not extract_only,
                       need_documents=precision and precision_reference == "documents"
                       and not extract_only)
    lazy = LazyRunner(runner if runner is not None else runner_factory,
                      needed_for="key point extraction and judging")
    try:
        if any(it.key_points is None for it in items):
            items = extract_key_points(
                items, lazy.get(), rounds=rounds, drop_unfound=drop_unfound,
                max_words=max_words, aggregate=aggregate, filter_threshold=filter_threshold,
                sampling=dataclasses.replace(EXTRACT_SAMPLING, max_tokens=extract_max_tokens),
                attempts=attempts)
        output_dir.mkdir(parents=True, exist_ok=True)
        write_jsonl(output_dir / "key_points.jsonl", _key_points_rows(items))
        summary: dict = {
            "input": str(input_path), "key_points_file": None if key_points is None
            else str(key_points),
            "n_questions": len(items),
            "n_key_points": sum(len(it.key_points or []) for it in items),
            "n_extracted": sum(1 for it in items if it.extraction),
            "settings": {"rounds": rounds, "drop_unfound": drop_unfound,
                         "aggregate": aggregate, "filter_threshold": filter_threshold,
                         "max_words": max_words, "precision": precision and not extract_only,
                         "precision_reference": precision_reference,
                         "extract_max_tokens": extract_max_tokens,
                         "judge_max_tokens": judge_max_tokens, "group_by": group_by},
            "prompts": [p.id for p in PROMPTS],
        }
        if not extract_only:
            jsampling = dataclasses.replace(JUDGE_SAMPLING, max_tokens=judge_max_tokens)
            needs_llm = any(it.key_points and it.response and it.response.strip()
                            for it in items)
            llm = lazy.get() if needs_llm else None
            recall = judge_key_points(items, llm, sampling=jsampling, attempts=attempts)
            prec = None
            if precision:
                rpoints = (extract_response_points(
                    items, llm, attempts=attempts,
                    sampling=dataclasses.replace(EXTRACT_SAMPLING,
                                                 max_tokens=extract_max_tokens))
                    if llm is not None else {it.id: [] for it in items})
                prec = judge_response_points(items, rpoints, llm, reference=precision_reference,
                                             sampling=jsampling, attempts=attempts)
                write_jsonl(output_dir / "response_key_points.jsonl",
                            [{"id": it.id, "key_points": [p.to_json() for p in rpoints[it.id]]}
                             for it in items])
            write_jsonl(output_dir / "judgments.jsonl",
                        [j.to_json() for j in [*recall, *(prec or [])]])
            per_question = kpr_scores(items, recall, prec, group_by)
            overall, grouped = aggregate_scores(per_question, group_by)
            write_tsv(output_dir / "per_question.tsv", per_question)
            write_tsv(output_dir / "grouped.tsv", grouped)
            judged = [*recall, *(prec or [])]
            summary.update(overall)
            summary["without_key_points"] = per_question.loc[
                per_question["KPR"].isna(), "id"].tolist()
            summary["n_judgments"] = sum(j.raw is not None for j in judged)
            summary["judge_unparseable"] = sum(j.raw is not None and j.label is None
                                               for j in judged)
            summary["empty_responses"] = sorted({j.item_id for j in recall
                                                 if j.note == "empty response"})
            summary["grouped"] = [{k: nan_to_none(v) for k, v in row.items()}
                                  for row in grouped.to_dict(orient="records")]
        summary["llm"] = lazy.stats()
        write_json(output_dir / "summary.json", summary)
        return summary
    finally:
        lazy.close()
