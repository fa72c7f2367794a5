"""What is annotated and by whom: the items of a task, sampled (seeded) and assigned with overlap.

An *item* is one screen: a passage with the sub-questions to rate (Task 2) or a report with the
sub-questions to answer (Task 1). Only a topic's kept sub-questions are asked (those some judged
passage answers at eta, the Q of Eq. 3), as the authors' tool asks only the answerable ones.

Task 2 samples (passage, sub-question) *pairs*, not passages: ``--sample N`` draws N pairs, and
``uncertain_share`` draws that share of them from the pairs the judge rated 2-4 (the ratings on
either side of eta = 3, where a judge errs most), the rest from the others. The pairs drawn for
one passage share its screen. Task 1 samples whole reports.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl
from cruxflow.data.model import Dataset
from cruxflow.metrics.judgments import judged_arrays

RATINGS, REPORTS = "ratings", "reports"
TASKS = (RATINGS, REPORTS)
# The judge's ratings around eta = 3: "2" and "4" are one step from flipping the class.
UNCERTAIN = (2, 4)
RESERVED_NAMES = ("(mean)", "(all)")     # aggregate rows of the agreement tables
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Question:
    index: int                  # into the topic's questions (all of them, before filtering)
    text: str
    llm: int | None = None      # the judge's rating (Task 2), shown only in review mode
    uncertain: bool = False     # the judge's rating lies in UNCERTAIN


@dataclass(frozen=True)
class Item:
    topic_id: str
    target: str                 # the passage id (Task 2) or the system of the report (Task 1)
    text: str                   # the passage or the report, as annotated (span offsets index it)
    query: str | None
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Pair:
    topic_id: str
    passage_id: str
    question: int
    llm: int


@dataclass
class Report:
    topic_id: str
    system: str
    text: str
    where: dict = field(default_factory=dict)


def check_annotators(names: Sequence[str]) -> list[str]:
    names = [n.strip() for n in names]
    for name in names:
        if not _NAME.match(name) or name in RESERVED_NAMES:
            raise ValueError(f"annotator name {name!r}: use letters, digits, '_', '.', '-'")
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"annotator names must be given and differ: {', '.join(names)}")
    return names


def kept_questions(dataset: Dataset, eta: int) -> dict[str, list[int]]:
    """Per topic, the sub-questions some judged passage answers (rating >= eta)."""
    arrays = judged_arrays(dataset, eta)
    index = arrays.index
    return {tid: arrays.kept[index.topic_index[tid]] for tid in dataset.topics}


def rating_pairs(dataset: Dataset, eta: int) -> list[Pair]:
    """Every (judged passage with its text, kept sub-question) pair, in the dataset's order."""
    kept = kept_questions(dataset, eta)
    pairs = []
    for tid, matrix in dataset.ratings_by_topic().items():
        for pid, ratings in matrix.items():
            if pid in dataset.passages:
                pairs += [Pair(tid, pid, q, ratings[q]) for q in kept[tid]]
    return pairs


def is_uncertain(rating: int | None, uncertain: tuple[int, int] = UNCERTAIN) -> bool:
    return rating is not None and uncertain[0] <= rating <= uncertain[1]


def sample_pairs(pairs: Sequence[Pair], n: int | None, seed: int, *,
                 uncertain_share: float | None = None,
                 uncertain: tuple[int, int] = UNCERTAIN) -> list[Pair]:
    """``n`` pairs drawn without replacement (all of them when ``n`` is None or too large).

    With ``uncertain_share``, round(n * share) (halves up) come from the pairs whose judge rating
    lies in ``uncertain`` and the rest from the others; a stratum too small for its share gives
    its remainder to the other. The pairs keep their order in ``pairs``.
    """
    if n is not None and n < 1:
        raise ValueError(f"the sample size must be at least 1, got {n}")
    if uncertain_share is not None and not 0 <= uncertain_share <= 1:
        raise ValueError(f"the uncertain share must lie in 0..1, got {uncertain_share}")
    if n is None or n >= len(pairs):
        return list(pairs)
    rng = random.Random(seed)
    if uncertain_share is None:
        chosen = rng.sample(range(len(pairs)), n)
    else:
        unsure = [i for i, p in enumerate(pairs) if is_uncertain(p.llm, uncertain)]
        other = [i for i, p in enumerate(pairs) if not is_uncertain(p.llm, uncertain)]
        n_unsure = min(len(unsure), math.floor(n * uncertain_share + 0.5))
        n_other = min(len(other), n - n_unsure)
        n_unsure = n - n_other
        chosen = rng.sample(unsure, n_unsure) + rng.sample(other, n_other)
    return [pairs[i] for i in sorted(chosen)]


def stratified_sample(pairs: Sequence[Pair], n: int | None, seed: int) -> list[Pair]:
    """``n`` pairs for prediction-powered inference: uniform within each topic, each topic's
    share in proportion to its number of pairs (largest remainders, ties to the earlier
    topic), so the sample is a uniform draw over the pairs whose metric is estimated with
    every topic represented. All pairs when ``n`` is None or too large; ``pairs``' order kept.
    """
    if n is not None and n < 1:
        raise ValueError(f"the sample size must be at least 1, got {n}")
    if n is None or n >= len(pairs):
        return list(pairs)
    by_topic: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_topic.setdefault(p.topic_id, []).append(i)
    quotas = {t: n * len(idx) / len(pairs) for t, idx in by_topic.items()}
    counts = {t: math.floor(q) for t, q in quotas.items()}
    order = sorted(by_topic, key=lambda t: -(quotas[t] - counts[t]))   # stable: ties by order
    for t in order[:n - sum(counts.values())]:
        counts[t] += 1
    rng = random.Random(seed)
    chosen = [i for t, idx in by_topic.items() for i in rng.sample(idx, counts[t])]
    return [pairs[i] for i in sorted(chosen)]


def rating_items(dataset: Dataset, pairs: Iterable[Pair],
                 uncertain: tuple[int, int] = UNCERTAIN) -> list[Item]:
    """One item per passage, with its pairs' questions, in the order of ``pairs``."""
    grouped: dict[tuple[str, str], list[Pair]] = {}
    for p in pairs:
        grouped.setdefault((p.topic_id, p.passage_id), []).append(p)
    items = []
    for (tid, pid), group in grouped.items():
        topic = dataset.topics[tid]
        items.append(Item(tid, pid, dataset.passages[pid].contents, topic.query, tuple(
            Question(p.question, topic.questions[p.question], p.llm,
                     is_uncertain(p.llm, uncertain)) for p in group)))
    return items


def read_reports(specs: Sequence[str], dataset: Dataset) -> list[Report]:
    """RAG reports (rule ``rag_generate``'s ``{"topic_id", "system", "report", ...}`` lines),
    from ``[SYSTEM=]PATH`` files; the system is the record's, else ``SYSTEM=``, else the file
    name up to its first dot."""
    reports: dict[tuple[str, str], Report] = {}
    for spec in specs:
        name, sep, path = str(spec).partition("=")
        if not sep or Path(spec).exists():
            name, path = None, str(spec)
        path = Path(path)
        if not path.is_file():
            raise DataError("no such reports file", path=path)
        for lineno, obj in iter_jsonl(path):
            where = {"path": path, "record": f"line {lineno}"}
            tid, text = obj.get("topic_id"), obj.get("report")
            system = obj.get("system") or name or path.name.split(".")[0]
            if tid not in dataset.topics:
                raise DataError(f"unknown topic {tid!r} (not in the dataset)", field="topic_id",
                                **where)
            if not isinstance(text, str) or not text.strip():
                raise DataError("missing or empty report text", field="report", **where)
            if not isinstance(system, str) or not re.match(r"^\S+$", system):
                raise DataError(f"system {system!r} must be a name without spaces",
                                field="system", **where)
            if (tid, system) in reports:
                first = reports[(tid, system)].where
                raise DataError(f"a second report of topic {tid!r} by system {system!r}; first "
                                f"at {first['path']}: {first['record']}", field="topic_id",
                                **where)
            reports[(tid, system)] = Report(tid, system, text, where)
    if not reports:
        raise DataError("no reports given", path=", ".join(map(str, specs)))
    return list(reports.values())


def report_items(dataset: Dataset, reports: Sequence[Report], eta: int, n: int | None,
                 seed: int) -> list[Item]:
    """One item per report whose topic has kept questions: ``n`` of them (seeded), in a seeded
    order, so that one topic's reports by several systems do not follow one another."""
    kept = kept_questions(dataset, eta)
    asked = [r for r in reports if kept[r.topic_id]]
    if n is not None and n < 1:
        raise ValueError(f"the sample size must be at least 1, got {n}")
    rng = random.Random(seed)
    order = rng.sample(range(len(asked)), len(asked) if n is None else min(n, len(asked)))
    items = []
    for i in order:
        r = asked[i]
        topic = dataset.topics[r.topic_id]
        items.append(Item(r.topic_id, r.system, r.text, topic.query, tuple(
            Question(q, topic.questions[q]) for q in kept[r.topic_id])))
    return items


def assign(n_items: int, annotators: Sequence[str], overlap: int) -> dict[str, list[int]]:
    """Item ``i`` goes to the ``overlap`` annotators from position ``i`` on (cyclically), so
    each gets about ``overlap / len(annotators)`` of the items and each item exactly ``overlap``
    annotators (the same number of labels per item, as Fleiss' kappa needs)."""
    n = len(annotators)
    if not 1 <= overlap <= n:
        raise ValueError(f"overlap {overlap} must lie in 1..{n} (the number of annotators)")
    queues: dict[str, list[int]] = {a: [] for a in annotators}
    for i in range(n_items):
        for j in range(overlap):
            queues[annotators[(i + j) % n]].append(i)
    return queues
