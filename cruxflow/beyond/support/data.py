"""The data of a support evaluation: support levels, answers (sentences and their citations),
label files, topic lists, and the items scored (a sentence with one cited passage).

Readers validate as they go: bad input raises one :class:`~cruxflow.data.errors.DataError`
naming the file, the line and the field. Formats: ``docs/support.md``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, read_text

# Support levels s(a_i, d_j) (Sec. 3.2); -1 leaves a pair out of every numerator and denominator.
FS, PS, NS, NOT_JUDGED = 2, 1, 0, -1
NAMES = {FS: "FS", PS: "PS", NS: "NS"}

_LABEL_NAMES = {
    "fs": FS, "full": FS, "full support": FS, "fully supported": FS, "supported": FS,
    "ps": PS, "partial": PS, "partial support": PS, "partially supported": PS,
    "ns": NS, "no": NS, "none": NS, "no support": NS, "not supported": NS, "unsupported": NS,
    "not judged": NOT_JUDGED, "unjudged": NOT_JUDGED, "nj": NOT_JUDGED,
}
_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
              dict: "object", type(None): "null"}


def _first_line(text: str) -> str:
    """The first non-blank line: a JSONL file starts with ``{``, a TSV does not."""
    return next((ln for ln in text.split("\n") if ln.strip()), "")


def _got(value) -> str:
    return f"got {_JSON_TYPE.get(type(value), type(value).__name__)} {json.dumps(value)[:40]}"


def parse_label_value(value, *, path=None, record=None, field=None) -> int:
    """A support label from an input file: 2, 1, 0 or -1 (integral floats and digit strings
    too), or a name ("FS", "Full Support", "partial", "NS", "no support", "not judged", any
    case). Anything else raises :class:`DataError` naming ``path``/``record``/``field``."""
    where = {"path": path, "record": record, "field": field}
    if isinstance(value, bool):
        raise DataError(f"expected a support label 2, 1, 0 or -1, {_got(value)}", **where)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        key = " ".join(value.replace("_", " ").split()).casefold()
        if re.fullmatch(r"-?\d+", key):
            value = int(key)
        elif key in _LABEL_NAMES:
            return _LABEL_NAMES[key]
    if isinstance(value, int) and value in (FS, PS, NS, NOT_JUDGED):
        return value
    raise DataError(f"expected a support label 2 (FS), 1 (PS), 0 (NS) or -1 (not judged), "
                    f"{_got(value)}", **where)


@dataclass
class Sentence:
    """One answer sentence: its passage ids in citation order and the given label of each
    (``None``: none given). ``own_label``: a label given to a sentence without citation."""

    text: str
    citations: list[str]
    labels: list[int | None]
    own_label: int | None = None
    field: str = ""   # where it is in its record, e.g. "answer[3]"


@dataclass
class Answer:
    """One (topic, run) answer; ``path`` and ``record`` ("line 12") locate it for messages."""

    topic_id: str
    run_id: str
    sentences: list[Sentence]
    path: str = ""
    record: str = ""
    topic: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.topic_id, self.run_id


def id_field(obj: dict, names: Sequence[str], where: dict) -> str:
    for name in names:
        if name in obj and obj[name] is not None:
            v = obj[name]
            if isinstance(v, bool) or not isinstance(v, str | int):
                raise DataError(f"expected a string, {_got(v)}", field=name, **where)
            v = str(v).strip()
            if not v or any(c.isspace() for c in v):
                raise DataError(f"identifier {v!r} is empty or contains whitespace",
                                field=name, **where)
            return v
    raise DataError("missing", field=names[0], **where)


def _parse_answer(obj: dict, path, lineno: int) -> Answer:
    where = {"path": path, "record": f"line {lineno}"}
    topic_id = id_field(obj, ("topic_id", "narrative_id", "qid"), where)
    run_id = id_field(obj, ("run_id",), where)
    if ("answer" in obj) == ("sentences" in obj):
        raise DataError("expected either 'answer' (TREC 2024 RAG format) or 'sentences', "
                        "exactly one of them", field="answer", **where)
    key = "answer" if "answer" in obj else "sentences"
    items = obj[key]
    if not isinstance(items, list):
        raise DataError(f"expected a list of sentences, {_got(items)}", field=key, **where)
    refs = obj.get("references")
    if refs is not None and (not isinstance(refs, list)
                             or not all(isinstance(r, str) and r.strip() for r in refs)):
        raise DataError("expected a list of passage ids (strings)", field="references", **where)
    sentences = []
    for i, s in enumerate(items):
        f = f"{key}[{i}]"
        if not isinstance(s, dict):
            raise DataError(f"expected an object with 'text' and 'citations', {_got(s)}",
                            field=f, **where)
        text = s.get("text")
        if "text" in s and (text is None or (isinstance(text, float) and math.isnan(text))):
            # NIST's 2024 file has "text": NaN in 11 sentences that carry support labels
            # (their export's missing value); the labels count, the text is simply not there
            text = ""
        if not isinstance(text, str):
            raise DataError(f"expected a string, {_got(text)}", field=f"{f}.text", **where)
        cites = s.get("citations", [])
        if cites is None:
            cites = []
        if not isinstance(cites, list):
            raise DataError(f"expected a list, {_got(cites)}", field=f"{f}.citations", **where)
        pids = []
        object_labels: list[int | None] = []   # NIST's citation objects carry their label
        for j, c in enumerate(cites):
            cf = f"{f}.citations[{j}]"
            if isinstance(c, dict):
                pid, label = _citation_object(c, where, cf)
                pids.append(pid)
                object_labels.append(label)
                continue
            if isinstance(c, bool) or not isinstance(c, int | str):
                raise DataError(f"expected an index into 'references', a passage id or a "
                                f"citation object {{reference, support}}, {_got(c)}",
                                field=cf, **where)
            if isinstance(c, int):
                if refs is None:
                    raise DataError(f"citation {c} is an index, but the record has no "
                                    "'references' list", field=cf, **where)
                if not 0 <= c < len(refs):
                    raise DataError(f"citation index {c} is outside 'references' "
                                    f"(0..{len(refs) - 1})", field=cf, **where)
                pids.append(refs[c].strip())
            else:
                if not c.strip():
                    raise DataError("empty passage id", field=cf, **where)
                if refs is not None and c.strip().isdigit() and c.strip() not in refs:
                    # "0" where 0 was meant would be looked up as a passage named "0"
                    raise DataError(f"citation {c!r} is a string: an index into 'references' "
                                    f"is a number ({c.strip()}, not {c!r})", field=cf, **where)
                pids.append(c.strip())
        labels: list[int | None] = [None] * len(pids)
        own = None
        given = s.get("support")
        sf = f"{f}.support"
        if object_labels:
            if len(object_labels) != len(pids):
                raise DataError("mixes citation objects with indices or passage ids",
                                field=f"{f}.citations", **where)
            if given is not None:
                raise DataError("labels given both here and in the citation objects",
                                field=sf, **where)
            labels = object_labels
        if isinstance(given, list):
            if len(given) != len(pids):
                raise DataError(f"{len(given)} labels for {len(pids)} citations",
                                field=sf, **where)
            labels = [None if v is None else
                      parse_label_value(v, field=f"{sf}[{j}]", **where)
                      for j, v in enumerate(given)]
        elif given is not None:
            label = parse_label_value(given, field=sf, **where)
            if pids:
                labels[0] = label
            else:
                own = label
        if not pids and own not in (None, NS, NOT_JUDGED):
            raise DataError(f"a sentence without citation is No Support (0); label {own} "
                            "cannot be given to it", field=sf, **where)
        sentences.append(Sentence(text, pids, labels, own, f))
    topic = obj.get("topic")
    return Answer(topic_id, run_id, sentences, str(path), f"line {lineno}",
                  topic if isinstance(topic, str) else None)


# NIST's released judgments spell the keys both ways (sentenceID/citationID in
# final.citation_judgments_without_prediction.*, sentenceId/citationId in the Webassess file).
_REFERENCE_KEYS = ("reference", "docid", "segment_id")


def _citation_object(c: dict, where: dict, cf: str) -> tuple[str, int | None]:
    """The passage id and the label (``None``: none given) of a citation object
    ``{"citationID"|"citationId"?, "reference": <segment id>, "support"?: "2"|"1"|"0"|"-1"}``
    (NIST's support judgments of the TREC 2024 RAG Track)."""
    key = next((k for k in _REFERENCE_KEYS if k in c), _REFERENCE_KEYS[0])
    pid = c.get(key)
    if not isinstance(pid, str) or not pid.strip():
        raise DataError(f"expected a passage id, {_got(pid)}", field=f"{cf}.{key}", **where)
    given = c.get("support")
    label = None if given is None else parse_label_value(given, field=f"{cf}.support", **where)
    return pid.strip(), label


def read_answers(path) -> list[Answer]:
    """Answers from a JSONL file, one (topic, run) per line, in either form (may be mixed):

    - TREC 2024 RAG: ``{"run_id", "topic_id", "topic", "references": [passage ids],
      "answer": [{"text", "citations": [indices into references]}]}``;
    - simple: ``{"topic_id", "run_id", "sentences": [{"text", "citations": [passage ids]}]}``;
    - NIST's released support judgments: the simple form whose citations are objects
      ``{"citationID", "reference": <segment id>, "support": "2"|"1"|"0"|"-1"}`` (also
      ``sentenceId``/``citationId``; other keys such as Webassess's ``verification_worthy``
      are ignored).

    A sentence may carry ``"support"``: one label (the first citation's, or an uncited
    sentence's), or a list with one label per citation (``null`` for none). A (topic, run)
    given twice is an error.
    """
    answers, seen = [], {}
    for lineno, obj in iter_jsonl(path):
        a = _parse_answer(obj, path, lineno)
        if a.key in seen:
            raise DataError(f"topic {a.topic_id!r} of run {a.run_id!r} was already given on "
                            f"{seen[a.key]}", path=path, record=f"line {lineno}",
                            field="topic_id")
        seen[a.key] = f"line {lineno}"
        answers.append(a)
    if not answers:
        raise DataError("no answers", path=path)
    return answers


LabelKey = tuple[str, str, int, str | None]   # topic, run, sentence index, passage id (None)
_LABEL_COLUMNS = ("topic_id", "run_id", "sentence_index", "passage_id", "label")
_NO_PASSAGE = {"", "-", "none", "null"}


def _sentence_index(value, where: dict) -> int:
    if isinstance(value, str) and re.fullmatch(r"\d+", value.strip()):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(f"expected a sentence index 0, 1, ..., {_got(value)}",
                        field="sentence_index", **where)
    return value


def _add_label(out: dict, key: LabelKey, label: int, where: dict) -> None:
    if key in out and out[key][0] != label:
        raise DataError(f"label {label} contradicts label {out[key][0]} given on "
                        f"{out[key][1]} for the same sentence and passage",
                        field="label", **where)
    out.setdefault(key, (label, where["record"]))


def read_label_file(path) -> dict[LabelKey, tuple[int, str]]:
    """Labels kept apart from the answers: ``{(topic, run, sentence, passage): (label,
    record)}``.

    - TSV (or whitespace-separated) ``topic_id run_id sentence_index passage_id label``, an
      optional header line starting with ``topic_id``; ``-`` as passage id for a sentence
      without citation;
    - JSONL with those keys (other keys are ignored, so the ``labels.jsonl`` that
      ``evaluate_support`` writes is read back as it is; ``passage_id`` null for a sentence
      without citation).

    The sentence index counts from 0 in the answer's order; labels as in
    :func:`parse_label_value`. The same key twice with different labels is an error.
    """
    out: dict[LabelKey, tuple[int, str]] = {}
    text = read_text(path)
    first = _first_line(text)
    if first.lstrip().startswith("{"):
        for lineno, obj in iter_jsonl(path):
            where = {"path": path, "record": f"line {lineno}"}
            if "label" not in obj:
                raise DataError("missing", field="label", **where)
            topic = id_field(obj, ("topic_id",), where)
            run = id_field(obj, ("run_id",), where)
            sent = _sentence_index(obj.get("sentence_index"), where)
            pid = obj.get("passage_id")
            if pid is not None and (not isinstance(pid, str) or not pid.strip()):
                raise DataError(f"expected a passage id or null, {_got(pid)}",
                                field="passage_id", **where)
            label = parse_label_value(obj["label"], field="label", **where)
            _add_label(out, (topic, run, sent, pid.strip() if pid else None), label, where)
        return out
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t") if "\t" in line else line.split()
        parts = [p.strip() for p in parts]
        if lineno == 1 and parts and parts[0].casefold() == "topic_id":
            continue
        where = {"path": path, "record": f"line {lineno}"}
        if len(parts) != 5:
            raise DataError(f"expected 5 columns '{' '.join(_LABEL_COLUMNS)}', got "
                            f"{len(parts)}", **where)
        topic, run, sent, pid, label = parts
        for name, v in (("topic_id", topic), ("run_id", run)):
            if not v:
                raise DataError("is empty", field=name, **where)
        key = (topic, run, _sentence_index(sent, where),
               None if pid.casefold() in _NO_PASSAGE else pid)
        _add_label(out, key, parse_label_value(label, field="label", **where), where)
    return out


def strip_labels(answers: Iterable[Answer]) -> list[Answer]:
    """Copies of ``answers`` without any given label."""
    return [dataclasses.replace(a, sentences=[
        dataclasses.replace(s, labels=[None] * len(s.citations), own_label=None)
        for s in a.sentences]) for a in answers]


def apply_labels(answers: Sequence[Answer], labels: Mapping[LabelKey, tuple[int, str]],
                 path) -> list[Answer]:
    """Copies of ``answers`` with ``labels`` (from :func:`read_label_file` of ``path``) over
    their given labels. A label applies to every citation of the passage in its sentence. A
    label for a (topic, run), sentence or passage the answers do not have is an error naming
    the label file's record."""
    out = {a.key: dataclasses.replace(a, sentences=[
        dataclasses.replace(s, labels=list(s.labels)) for s in a.sentences]) for a in answers}
    for (topic, run, i, pid), (label, record) in labels.items():
        where = {"path": path, "record": record}
        a = out.get((topic, run))
        if a is None:
            raise DataError(f"no answer of run {run!r} for topic {topic!r} in the input",
                            field="run_id", **where)
        if i >= len(a.sentences):
            raise DataError(f"the answer of run {run!r} for topic {topic!r} has "
                            f"{len(a.sentences)} sentences (0..{len(a.sentences) - 1}), "
                            f"not {i}", field="sentence_index", **where)
        s = a.sentences[i]
        if pid is None:
            if s.citations:
                raise DataError(f"sentence {i} cites passages; give the passage id",
                                field="passage_id", **where)
            if label not in (NS, NOT_JUDGED):
                raise DataError(f"a sentence without citation is No Support (0); label "
                                f"{label} cannot be given to it", field="label", **where)
            s.own_label = label
            continue
        if pid not in s.citations:
            raise DataError(f"sentence {i} of run {run!r} for topic {topic!r} does not cite "
                            f"{pid!r} (it cites {', '.join(s.citations) or 'nothing'})",
                            field="passage_id", **where)
        for j, c in enumerate(s.citations):
            if c == pid:
                s.labels[j] = label
    return [out[a.key] for a in answers]


def read_topic_ids(path) -> list[str]:
    """The topics of the track: one id per line (the first tab- or space-separated field, so a
    TREC topics TSV ``id<TAB>query`` works as it is), or a topics JSONL with ``id``,
    ``topic_id``, ``qid`` or ``query_id`` per line."""
    text = read_text(path)
    ids: list[str] = []
    first = _first_line(text)
    if first.lstrip().startswith("{"):
        for lineno, obj in iter_jsonl(path):
            ids.append(id_field(obj, ("id", "topic_id", "qid", "query_id"),
                                 {"path": path, "record": f"line {lineno}"}))
    else:
        ids = [ln.split()[0] for ln in text.split("\n") if ln.strip()]
    if not ids:
        raise DataError("no topic ids", path=path)
    return list(dict.fromkeys(ids))


@dataclass
class Item:
    """One judged unit: a (sentence, cited passage) pair, or a sentence without citation
    (``citation_index``/``passage_id`` ``None``, No Support by rule). ``source``: ``given``
    (from the input or a label file), ``judged`` (by the LLM), ``rule`` (no citation) or
    ``missing`` (no label: -1)."""

    topic_id: str
    run_id: str
    sentence_index: int
    citation_index: int | None
    passage_id: str | None
    label: int
    source: str
    sentence: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, int, int | None]:
        return self.topic_id, self.run_id, self.sentence_index, self.citation_index

    @property
    def cited(self) -> bool:
        return self.citation_index is not None

    def to_json(self) -> dict:
        return {"topic_id": self.topic_id, "run_id": self.run_id,
                "sentence_index": self.sentence_index, "citation_index": self.citation_index,
                "passage_id": self.passage_id, "label": self.label, "source": self.source,
                "sentence": self.sentence, **self.extra}


def collect_items(answers: Iterable[Answer], all_citations: bool = False) -> list[Item]:
    """The items to score: per sentence its first citation (the track's protocol, Sec. 3.3),
    or every citation with ``all_citations``; a sentence without citation is one No Support
    item (Sec. 3.2, footnote 2) unless it was given -1."""
    items = []
    for a in answers:
        for i, s in enumerate(a.sentences):
            if not s.citations:
                own = s.own_label
                label, source = (NOT_JUDGED, "given") if own == NOT_JUDGED else (NS, "rule")
                items.append(Item(a.topic_id, a.run_id, i, None, None, label, source, s.text))
                continue
            for j in range(len(s.citations) if all_citations else 1):
                given = s.labels[j]
                items.append(Item(a.topic_id, a.run_id, i, j, s.citations[j],
                                  NOT_JUDGED if given is None else given,
                                  "missing" if given is None else "given", s.text))
    return items


def is_answers_file(path) -> bool:
    """Whether ``path`` holds answers (a JSONL whose first record has ``answer`` or
    ``sentences``) rather than a label file."""
    text = read_text(path)
    first = _first_line(text)
    if not first.lstrip().startswith("{"):
        return False
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and ("answer" in obj or "sentences" in obj)


def check_same_answers(answers: Sequence[Answer], others: Sequence[Answer],
                       all_citations: bool = False) -> None:
    """Raise :class:`DataError` (naming ``others``' record) when an answer of ``others`` is one
    of ``answers`` (same topic and run) but not the same answer: another number of sentences,
    or a sentence whose compared citations (the first, or all with ``all_citations``) cite
    other passages. Answers in only one of them are fine: they are simply not paired."""
    by_key = {a.key: a for a in answers}
    for b in others:
        a = by_key.get(b.key)
        if a is None:
            continue
        where = {"path": b.path, "record": b.record}
        if len(a.sentences) != len(b.sentences):
            raise DataError(f"the answer of run {b.run_id!r} for topic {b.topic_id!r} has "
                            f"{len(b.sentences)} sentences here, {len(a.sentences)} in "
                            f"{a.path} ({a.record}): not the same answer",
                            field="sentences", **where)
        for sa, sb in zip(a.sentences, b.sentences, strict=True):
            ca, cb = ((sa.citations, sb.citations) if all_citations
                      else (sa.citations[:1], sb.citations[:1]))
            if ca != cb:
                raise DataError(f"cites {', '.join(cb) or 'nothing'} here, "
                                f"{', '.join(ca) or 'nothing'} in {a.path} ({a.record}): "
                                "not the same answer", field=f"{sb.field}.citations", **where)
