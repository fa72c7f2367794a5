"""The CRUX labeling tool's human ratings read as ratings: its Task 2 exports
(DylanJoo/crux-labeling, ``results/annotator1/qrels_a1.jsonl``, ``annotations/annotatorN/
qrels.jsonl``), one file per annotator, one line per passage::

    {"id": topic, "document": passage, "relevances": {"0": 3, "1": -1, ...}, "rationales": {...}}

``relevances`` maps a sub-question's index to the annotator's 0-5 rating on the judge's rubric,
-1 where the annotator did not rate it. :func:`cruxflow.data.ingest.crux_common.read_ratings`
reads these records beside the judge layouts, so every door that reads ratings (``--judge`` of
crux-eval, evaluate, agreement and meta-eval, ingest of a CRUX folder, the API) reads them too.

A (topic, passage) becomes one rating list, one rating per sub-question: -1 (answers nothing)
where no annotator rated the question, else the annotators' ratings merged by a rule
(:data:`cruxflow.data.merge.MERGE_RULES`, by default the mean rounded half up: the one rule
``cruxflow agreement`` and its PPI use too). A topic has as many questions as
its topics file says where the reader knows them, else as its records' largest index + 1. One
annotator rating a passage twice is an error naming both lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.merge import MERGE_RULES
from cruxflow.data.model import RATING_UNRATED, parse_ratings

# (layout, topic field, passage field, ratings field), as crux_common's RATING_LAYOUTS
HUMAN = ("labeling-tool", "id", "document", "relevances")


def parse_relevances(value, where: dict, name: str = HUMAN[3]) -> dict[int, int]:
    """``{question index: rating}`` of a ``relevances`` object (ratings 0-5 or -1)."""
    if not isinstance(value, dict):
        raise DataError("expected an object {question index: rating}", field=name, **where)
    keys = list(value)
    for key in keys:
        if not isinstance(key, str) or not key.isdigit():
            raise DataError(f"key {key!r} is not a question index", field=name, **where)
    ratings = parse_ratings(list(value.values()), where, name=name, unrated_ok=True)
    return dict(zip(map(int, keys), ratings, strict=True))


class HumanRatings:
    """The labeling tool's records of one read, each annotator's (file's) labels kept apart
    until :meth:`lists` merges them."""

    def __init__(self):
        # (topic, passage) -> question -> the labels of the annotators who rated it
        self.labels: dict[tuple[str, str], dict[int, list[int]]] = {}
        self.where: dict[tuple[str, str], dict] = {}            # its first record
        self.seen: dict[tuple[tuple[str, str], Path], dict] = {}  # per annotator
        self.files: list[Path] = []
        self.not_rated = 0       # -1 values: questions an annotator did not rate

    def __bool__(self) -> bool:
        return bool(self.labels)

    def add(self, tid: str, pid: str, value, where: dict) -> None:
        key, path = (tid, pid), Path(where["path"])
        relevances = parse_relevances(value, where)
        first = self.seen.get((key, path))
        if first is not None:
            raise DataError(f"passage {pid} of topic {tid} rated twice by one annotator (first "
                            f"at {first['record']})", field=HUMAN[2], **where)
        self.seen[(key, path)] = where
        if path not in self.files:
            self.files.append(path)
        self.where.setdefault(key, where)
        by_question = self.labels.setdefault(key, {})
        for q, rating in relevances.items():
            if rating == RATING_UNRATED:
                self.not_rated += 1
                by_question.setdefault(q, [])
            else:
                by_question.setdefault(q, []).append(rating)

    def lists(self, n_questions: Mapping[str, int] | None, merge: str
              ) -> tuple[dict[tuple[str, str], list[int]], dict]:
        """One rating list per (topic, passage), merged by ``merge``, and what was counted."""
        if merge not in MERGE_RULES:
            raise DataError(f"unknown merge rule {merge!r}; choose one of "
                            f"{', '.join(MERGE_RULES)}", field="judge_merge")
        rule = MERGE_RULES[merge]
        width: dict[str, int] = {}
        for (tid, _), by_question in self.labels.items():
            width[tid] = max(width.get(tid, 0), max(by_question, default=-1) + 1)
        out: dict[tuple[str, str], list[int]] = {}
        labels = several = disagreeing = 0
        for key, by_question in self.labels.items():
            tid = key[0]
            n = n_questions.get(tid, width[tid]) if n_questions is not None else width[tid]
            ratings = [RATING_UNRATED] * n
            for q, got in by_question.items():
                if q >= n:
                    raise DataError(f"question {q}, but topic {tid} has {n} questions",
                                    field=HUMAN[3], **self.where[key])
                if got:
                    ratings[q] = rule(got)
                labels += len(got)
                several += len(got) > 1
                disagreeing += len(set(got)) > 1
            out[key] = ratings
        counts = {"annotator_files": [str(f) for f in self.files], "human_labels": labels,
                  "not_rated_by_an_annotator": self.not_rated,
                  "questions_rated_by_several": several,
                  "questions_rated_differently": disagreeing, "merge": merge}
        return out, counts


def merge_note(summary) -> str | None:
    """The one line a door prints of ratings merged from several annotators (a
    ``JudgeRatings.summary()``, or a dataset manifest's ``judge`` counts): how many and by which
    rule; None for one annotator or a judge."""
    from cruxflow.data.merge import describe

    human = (summary or {}).get("human") if isinstance(summary, dict) else None
    if not human or len(human.get("annotator_files", ())) < 2:
        return None
    return (f"human ratings of {len(human['annotator_files'])} annotators, "
            f"{describe(human['merge'])}: {human['questions_rated_by_several']} questions rated "
            f"by several, {human['questions_rated_differently']} of them differently")
