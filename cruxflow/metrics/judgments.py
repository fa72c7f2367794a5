"""From an answerability matrix to everything the metrics need, for one threshold eta.

Per topic: the answerable sub-questions (filtering), the relevant passages P* (the judged
passages of the topic's documents), the required subset P** = Z* (greedy), and the files that
standard tools read: TREC qrels for P* and P**, ndeval diversity qrels (subtopic =
sub-question) and the oracle context as a TREC run.

Every judgments record carries the eta it was derived with: judgments of another threshold
give other Q and P**, and scoring with them would be silently wrong, so readers that know their
eta refuse a mismatch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.data.io import existing, iter_jsonl, write_jsonl, write_qrels, write_run
from cruxflow.data.model import Dataset
from cruxflow.metrics.judged import JudgedIndex, RatingPairs, TopicArrays
from cruxflow.metrics.options import DEFAULTS, RELEVANCE_GRADES, RelevanceGrades, check_eta


@dataclass
class TopicJudgments:
    topic_id: str
    n_questions: int
    kept: list[int]           # answerable question indices (the Q of Eq. 3-5)
    relevant: list[str]       # P*: judged passages of the topic
    required: list[str]       # P** = Z*, in the ideal (alpha-nDCG greedy) order
    eta: int | None = None    # the threshold they were derived with (None: an older file)

    def to_json(self) -> dict:
        return asdict(self)


def derive(dataset: Dataset, eta: int = DEFAULTS.eta,
           alpha: float = DEFAULTS.alpha) -> dict[str, TopicJudgments]:
    """Every topic's judgments at ``eta``: Q (the answerable sub-questions, Eq. 2), P* (the
    rated passages, in the order the dataset holds them) and Z* = P** (the greedy required
    set of Sec. 3.2) in the ideal order of Eq. 4, all from the judgments' arrays
    (:class:`~cruxflow.metrics.judged.TopicArrays`), for every topic at once."""
    check_eta(eta)
    arrays = judged_arrays(dataset, eta, alpha)
    index = arrays.index
    relevant: dict[str, list[str]] = {t: [] for t in dataset.topics}
    for tid, pid in dataset.ratings:
        relevant[tid].append(pid)
    ideal = arrays.ideal_rows.tolist()
    out = {}
    for tid, topic in dataset.topics.items():
        t = index.topic_index[tid]
        required = [index.pid(t, r) for r in ideal[t] if r != arrays.none]
        out[tid] = TopicJudgments(tid, len(topic.questions), arrays.kept[t], relevant[tid],
                                  required, eta)
    return out


def judged_arrays(dataset: Dataset, eta: int = DEFAULTS.eta, alpha: float = DEFAULTS.alpha,
                  grades: str = DEFAULTS.relevance_grades, judgments=None) -> TopicArrays:
    """The judgments' arrays of a dataset's ratings at ``eta`` (``judgments``: given Q and
    Z*, else derived)."""
    index = JudgedIndex(RatingPairs.from_pairs(dataset.ratings, dataset.topics),
                        topics=list(dataset.topics))
    return TopicArrays(index, eta, alpha, grades, judgments)


def relevance_grades(name: str) -> RelevanceGrades:
    if name not in RELEVANCE_GRADES:
        raise ValueError(f"relevance grades must be one of {sorted(RELEVANCE_GRADES)}, "
                         f"got {name!r}")
    return RELEVANCE_GRADES[name]


def relevance_qrels(judgments: dict[str, TopicJudgments],
                    matrix: dict[str, dict[str, list[int]]] | None = None,
                    grades: str = DEFAULTS.relevance_grades) -> dict[str, dict[str, int]]:
    """Graded qrels of P* per topic under ``grades`` (:data:`RELEVANCE_GRADES`: P** highest,
    the passages of P* that P** dominates on every sub-question lowest under "3-2-1"), from the
    judgments' arrays (:attr:`~cruxflow.metrics.judged.TopicArrays.grades`); ``matrix``:
    ``Dataset.ratings_by_topic()``, which "3-2-1" needs to find the dominated passages."""
    g = relevance_grades(grades)
    if matrix is None:
        if g.redundant != g.relevant:
            raise ValueError(f"relevance grades {grades!r} need the rating matrix")
        matrix = {t: {p: [] for p in j.relevant} for t, j in judgments.items()}
    eta = next((j.eta for j in judgments.values() if j.eta is not None), DEFAULTS.eta)
    index = JudgedIndex(matrix, topics=list(judgments))
    arrays = TopicArrays(index, eta, DEFAULTS.alpha, grades, judgments)
    out = {}
    for tid, j in judgments.items():
        t = index.topic_index[tid]
        rows = index.rows_of(np.full(len(j.relevant), t, dtype=np.int64),
                             index.numbers(j.relevant))
        out[tid] = dict(zip(j.relevant, arrays.grades[t, rows].tolist(), strict=True))
    return out


def diversity_rows(judgments: dict[str, TopicJudgments],
                   by_topic: dict[str, dict[str, list[int]]], eta: int):
    """ndeval qrels rows ``(topic, subtopic, passage, 1)``: subtopic = answerable question."""
    for tid, j in judgments.items():
        for q in j.kept:
            for pid in j.relevant:
                if by_topic[tid][pid][q] >= eta:
                    yield tid, str(q), pid, 1


def write_judgments(judgments: dict[str, TopicJudgments], dataset: Dataset, outdir,
                    eta: int, grades: str = DEFAULTS.relevance_grades) -> dict:
    """Write judgments.jsonl, the qrels (graded by ``grades``), diversity qrels and the oracle
    run; return counts."""
    out = Path(outdir)
    matrix = dataset.ratings_by_topic()
    write_jsonl(out / "judgments.jsonl", (j.to_json() for j in judgments.values()))
    write_qrels(out / "qrels.relevance.txt",
                ((t, "0", p, r) for t, docs in relevance_qrels(judgments, matrix, grades).items()
                 for p, r in docs.items()))
    write_qrels(out / "qrels.required.txt",
                ((t, "0", p, 1) for t, j in judgments.items() for p in j.required))
    write_qrels(out / "qrels.diversity.txt", diversity_rows(judgments, matrix, eta))
    write_run(out / "oracle.run",
              {tid: [(p, float(len(j.required) - r)) for r, p in enumerate(j.required)]
               for tid, j in judgments.items() if j.required}, tag="oracle")
    return {
        "topics": len(judgments),
        "topics_without_answerable_questions": sum(not j.kept for j in judgments.values()),
        "questions": sum(j.n_questions for j in judgments.values()),
        "questions_kept": sum(len(j.kept) for j in judgments.values()),
        "relevant_passages": sum(len(j.relevant) for j in judgments.values()),
        "required_passages": sum(len(j.required) for j in judgments.values()),
    }


def read_judgments(path, eta: int | None = None) -> dict[str, TopicJudgments]:
    """The judgments of a file this workflow wrote; with ``eta``, records of another threshold
    are an error."""
    out = {}
    for lineno, obj in iter_jsonl(path):
        j = _record(obj, {"path": path, "record": f"line {lineno}"}, eta)
        out[j.topic_id] = j
    return out


def _record(obj: dict, where: dict, eta: int | None) -> TopicJudgments:
    try:
        j = TopicJudgments(**obj)
    except TypeError as exc:
        raise DataError(f"not a judgments record ({exc})", **where) from None
    for name, ok, what in (("topic_id", isinstance(j.topic_id, str), "a string"),
                           ("n_questions", _is_int(j.n_questions), "an integer"),
                           ("eta", j.eta is None or _is_int(j.eta), "an integer rating"),
                           ("kept", isinstance(j.kept, list), "a list"),
                           ("relevant", isinstance(j.relevant, list), "a list"),
                           ("required", isinstance(j.required, list), "a list")):
        if not ok:  # "eta": "3" would pass as eta=3 in the message and fail every comparison
            raise DataError(f"{getattr(j, name)!r} is not {what}", field=name, **where)
    if eta is not None and j.eta != eta:
        if j.eta is None:
            raise DataError(f"no eta: written by an older cruxflow, it cannot be checked against "
                            f"eta={eta}; derive the judgments again", field="eta", **where)
        raise DataError(f"derived with eta={j.eta}, used with eta={eta}: Q and P** differ "
                        "between thresholds", field="eta", **where)
    return j


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_judgments(path, dataset: Dataset, eta: int | None = None) -> dict[str, TopicJudgments]:
    """A judgments.jsonl checked against the dataset and the eta it is used with (a file of
    another dataset, of other ratings or of another eta would otherwise fail deep inside the
    scorer, or score silently wrong)."""
    path = existing(path, "judgments file")
    matrix = dataset.ratings_by_topic()
    out: dict[str, TopicJudgments] = {}
    for lineno, obj in iter_jsonl(path):
        where = {"path": path, "record": f"line {lineno}"}
        j = _record(obj, where, eta)
        if j.topic_id not in dataset.topics:
            raise DataError(f"unknown topic {j.topic_id!r} (not in the dataset's topics)",
                            field="topic_id", **where)
        if j.topic_id in out:
            raise DataError(f"topic {j.topic_id!r} appears twice", field="topic_id", **where)
        n = len(dataset.topics[j.topic_id].questions)
        if j.n_questions != n:
            raise DataError(f"{j.n_questions} questions but the dataset's topic has {n}",
                            field="n_questions", **where)
        if any(not isinstance(q, int) or not 0 <= q < n for q in j.kept):
            raise DataError(f"question indices must lie in 0..{n - 1}", field="kept", **where)
        for name in ("relevant", "required"):
            for pid in getattr(j, name):
                if pid not in matrix[j.topic_id]:
                    raise DataError(f"passage {pid!r} has no rating for this topic",
                                    field=name, **where)
        out[j.topic_id] = j
    missing = [t for t in dataset.topics if t not in out]
    if missing:  # derive() writes every topic: a cut file or another dataset's, not "no answer"
        raise DataError(f"no record for {len(missing)} of the dataset's {len(dataset.topics)} "
                        f"topics ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})"
                        ": a judgments file of another dataset, or cut short", path=path)
    return out
