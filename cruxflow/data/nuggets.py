"""A CRUX dataset's sub-questions and passage ratings in the field's nugget formats
(``cruxflow export``; docs/nuggets.md).

* AutoNuggetizer (castorini/nuggetizer), its JSONL records as its CLI writes them:
  ``nuggets.jsonl`` ("create" output: ``{"query", "qid", "nuggets": [{"text", "importance"}]}``)
  and ``assignments.jsonl`` (retrieval-mode "assign" output, one record per rated passage:
  ``{"text", "qid", "candidate_text", "docid", "nuggets": [{"text", "importance",
  "assignment"}]}``).
* TREC AutoJudge NuggetBank v3 (trec-auto-judge/auto-judge-base, ``autojudge_base.nugget_data``):
  ``nugget_banks.jsonl``, one ``NuggetBank`` per topic, the form its loader reads line by line.
  Each sub-question is a ``NuggetQuestion`` keyed by its text (as ``NuggetBank.add_nuggets``
  keys them) whose ``references`` are the passages that answer it (rating >= eta), with the
  rating as ``quality``.

The mapping, one place for both formats:

* assignment of a (passage, question) pair from its 0-5 rating: ``support`` at rating >= eta
  (answerable, the CRUX judgment); ``partial_support`` at 2 <= rating < eta (Fig. 8's "limited
  relevance ... significant gaps" and up); ``not_support`` at 0-1 and for -1 (no rating).
* importance of a question: ``vital`` when the topic's human summary y* answers it (its own
  rating >= eta: the information a good report holds), ``okay`` when it does not; every
  question of a topic whose summary was not rated is ``vital`` (CRUX weighs them all alike).
"""

from __future__ import annotations

from collections.abc import Iterator

from cruxflow.data.model import Dataset

SUPPORT, PARTIAL, NOT_SUPPORT = "support", "partial_support", "not_support"
VITAL, OKAY = "vital", "okay"
PARTIAL_MIN = 2
FORMATS = ("autonuggetizer", "nuggetbank")


def assignment(rating: int, eta: int) -> str:
    if rating >= eta:
        return SUPPORT
    return PARTIAL if rating >= PARTIAL_MIN else NOT_SUPPORT


def importances(dataset: Dataset, topic_id: str, eta: int) -> list[str]:
    """``vital`` / ``okay`` per question of the topic (see the module's mapping)."""
    questions = dataset.topics[topic_id].questions
    ref = dataset.reference_ratings.get(topic_id)
    if ref is None or len(ref.ratings) != len(questions):
        return [VITAL] * len(questions)
    return [VITAL if r >= eta else OKAY for r in ref.ratings]


def _rated_passages(dataset: Dataset, topic_id: str) -> Iterator[tuple[str, list[int]]]:
    for (tid, pid), ratings in dataset.ratings.items():
        if tid == topic_id:
            yield pid, ratings


def autonuggetizer_records(dataset: Dataset, eta: int) -> tuple[list[dict], list[dict]]:
    """``(nuggets records, assignment records)`` of AutoNuggetizer's create and retrieval-mode
    assign outputs."""
    created, assigned = [], []
    for tid, topic in dataset.topics.items():
        query = topic.query or ""
        imp = importances(dataset, tid, eta)
        created.append({"query": query, "qid": tid, "nuggets": [
            {"text": q, "importance": i} for q, i in zip(topic.questions, imp, strict=True)]})
        for pid, ratings in _rated_passages(dataset, tid):
            passage = dataset.passages.get(pid)
            assigned.append({
                "text": query, "qid": tid,
                "candidate_text": passage.contents if passage else "",
                "docid": pid,
                "nuggets": [{"text": q, "importance": i, "assignment": assignment(r, eta)}
                            for q, i, r in zip(topic.questions, imp, ratings, strict=True)]})
    return created, assigned


def nugget_banks(dataset: Dataset, eta: int, collection: str) -> list[dict]:
    """One NuggetBank (v3) record per topic."""
    banks = []
    for tid, topic in dataset.topics.items():
        imp = importances(dataset, tid, eta)
        rated = list(_rated_passages(dataset, tid))
        questions: dict[str, dict] = {}
        for i, (text, importance) in enumerate(zip(topic.questions, imp, strict=True)):
            refs = [{"doc_id": pid, "collection": collection, "quality": ratings[i],
                     **({"text": dataset.passages[pid].contents}
                        if pid in dataset.passages else {})}
                    for pid, ratings in rated if ratings[i] >= eta]
            if text in questions:   # NuggetBank keys by text: a repeated question merges
                seen = {r["doc_id"] for r in questions[text]["references"]}
                questions[text]["references"] += [r for r in refs if r["doc_id"] not in seen]
                questions[text]["metadata"]["question_indices"].append(i)
                if importance == VITAL:
                    questions[text]["importance"] = VITAL
                continue
            questions[text] = {"question": text, "question_id": f"{tid}-q{i}",
                               "query_id": tid, "test_collection": collection,
                               "importance": importance, "references": refs,
                               "metadata": {"question_indices": [i]}}
        banks.append({"query_id": tid, "title_query": topic.query or "",
                      "test_collection": collection, "format_version": "v3",
                      "nugget_bank": questions,
                      "metadata": {"source": "cruxflow", "eta": eta}})
    return banks
