"""The track's measures (Thakur et al., SIGIR 2025, Sec. 3.4): weighted precision over the
judged (sentence, cited passage) pairs of an answer, weighted recall over its sentences, each
weighted FS = 1, PS = 0.5, NS = 0, and their per-run means over the topics."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from cruxflow.beyond.support.data import FS, NOT_JUDGED, NS, PS, Item
from cruxflow.beyond.support.options import AVERAGES, DEFAULTS

# Sec. 3.4: "We assign a weight to s(a_i, d_j) of 1.0 to Full Support (FS), 0.5 to Partial
# Support (PS), and 0 to No Support (NS)".
WEIGHTS = {FS: 1.0, PS: 0.5, NS: 0.0}


def check_labels(labels: Iterable[int]) -> list[int]:
    """``labels`` as a list; ``ValueError`` for a value that is not a support level."""
    labels = list(labels)
    bad = [v for v in labels if v not in (FS, PS, NS, NOT_JUDGED)]
    if bad:
        raise ValueError(f"support labels are 2, 1, 0 or -1, not {bad[0]!r}")
    return labels


def _as_labels(sentence) -> list[int]:
    return check_labels([sentence] if isinstance(sentence, int) else sentence)


def sentence_score(citation_labels: Sequence[int]) -> float | None:
    """The support of one sentence from the labels of its selected citations: the mean weight
    of the judged ones (the reference code's rule for more than one judged citation,
    castorini/RAGDoll ``src/ragdoll/support/metrics.py``; with the first citation only, that
    citation's weight). No citation: No Support, 0 (Sec. 3.2, footnote 2). ``None`` when
    every citation (or an uncited sentence's own label) is -1, not judged."""
    labels = check_labels(citation_labels)
    if not labels:
        return WEIGHTS[NS]
    judged = [WEIGHTS[v] for v in labels if v != NOT_JUDGED]
    return math.fsum(judged) / len(judged) if judged else None


def _mean_of_sentences(sentences) -> float | None:
    scores = [sentence_score(_as_labels(s)) for s in sentences]
    judged = [v for v in scores if v is not None]
    return math.fsum(judged) / len(judged) if judged else None


def weighted_precision(cited_sentences: Iterable[Sequence[int] | int]) -> float | None:
    """Weighted precision of one answer r (Sec. 3.4, "the weighted proportion of citations
    that support each answer sentence")::

        WP(r) = sum_{a_i in C} s(a_i) / |C|,   s(a_i) = mean_{j judged} w(s(a_i, d_j))

    with w(FS) = 1, w(PS) = 0.5, w(NS) = 0, over the cited sentences C of r that have a
    judged citation. Each element is one cited sentence: the labels of its selected citations
    (the first, as the track judged, Sec. 3.3, or all of them), or one label. With first
    citations this is the mean weight of the judged pairs; -1 is in neither numerator nor
    denominator, and a sentence without citation does not count here (it does in recall).
    ``None`` when C is empty (0/0)."""
    return _mean_of_sentences(cited_sentences)


def weighted_recall(sentences: Iterable[Sequence[int] | int]) -> float | None:
    """Weighted recall of one answer r (Sec. 3.4, "the weighted proportion of answer sentences
    that are supported by their cited passages")::

        WR(r) = sum_{a_i in S} s(a_i) / |S|

    over the sentences S of r, each given as the labels of its selected citations (or one
    label; ``[]`` for a sentence without citation, which is No Support and counts in S). A
    sentence whose citations are all -1 is not in S. ``None`` when S is empty."""
    return _mean_of_sentences(sentences)


PER_TOPIC_COLUMNS = ["topic_id", "run_id", "weighted_precision", "weighted_recall",
                     "sentences", "uncited_sentences", "citations_judged",
                     "cited_sentences_judged", "sentences_judged", "fs", "ps", "ns",
                     "not_judged"]


def score_answers(items: Sequence[Item]) -> list[dict]:
    """Per (topic, run), in input order: weighted precision and recall and the counts behind
    them (``citations_judged``: judged (sentence, citation) pairs; ``cited_sentences_judged``:
    precision's denominator; ``sentences_judged``: recall's; ``fs``/``ps``/``ns``/
    ``not_judged`` count the selected cited pairs)."""
    groups: dict[tuple[str, str], list[Item]] = {}
    for it in items:
        groups.setdefault((it.topic_id, it.run_id), []).append(it)
    rows = []
    for (topic, run), group in groups.items():
        pairs = [it.label for it in group if it.cited]
        by_sentence: dict[int, list[int]] = {}
        cited: set[int] = set()
        for it in group:
            labels = by_sentence.setdefault(it.sentence_index, [])
            if it.cited:
                labels.append(it.label)
                cited.add(it.sentence_index)
            elif it.label == NOT_JUDGED:   # a sentence without citation given -1
                labels.append(NOT_JUDGED)
        scores = {i: sentence_score(v) for i, v in by_sentence.items()}
        counts = Counter(pairs)
        rows.append({
            "topic_id": topic, "run_id": run,
            "weighted_precision": weighted_precision(by_sentence[i] for i in cited),
            "weighted_recall": weighted_recall(by_sentence.values()),
            "sentences": len(by_sentence),
            "uncited_sentences": sum(not it.cited for it in group),
            "citations_judged": sum(v != NOT_JUDGED for v in pairs),
            "cited_sentences_judged": sum(scores[i] is not None for i in cited),
            "sentences_judged": sum(v is not None for v in scores.values()),
            "fs": counts[FS], "ps": counts[PS], "ns": counts[NS],
            "not_judged": counts[NOT_JUDGED],
        })
    return rows


def average_runs(per_topic: Sequence[dict], topics: Sequence[str] | None = None,
                 average: str = DEFAULTS.average) -> list[dict]:
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
