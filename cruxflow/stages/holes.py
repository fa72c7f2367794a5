"""The holes in a dataset's judgments (issue 39): the passages in the top k of runs that no
original rating rates for their topic, rated against the topic's sub-questions and written as
*added* ratings, which every reader takes beside the original ones (the original kept where
both rate a pair: :mod:`cruxflow.data.ingest.crux_sources`).

CRUX scores an unrated passage as answering nothing, so a run over a larger corpus than the
judged passages loses the coverage its unrated passages may bring; ``Judged@k`` says how much
of the top k is rated. The CRUX authors' later code rates a run's top k on demand
(DylanJoo/crux ``crux/augmentation/gen_ratings_offload.py``: one request per (passage,
question), the passage's first 2,048 words, a free answer whose first digit is the rating,
a SLURM array of 100 shards over the topics) and merges the new ratings into the judge files
(``crux-researchy/merge_ratings.py``). Here:

* :func:`find_holes`: every (topic, passage) in the top k of any of the runs (the one tie
  policy: score, then passage id, descending) that no original rating rates, for the topics
  with sub-questions; a passage without a text is counted and left unrated;
* :func:`shard_holes`: one shard's holes, cut by topic and balanced by (passage, question)
  pairs, so that ``llm.shards`` jobs or ``cruxflow judge --shard i/n`` split the work;
* :func:`rate_holes`: their ratings with the dataset's own rating prompt and settings
  (``dataset``: Fig. 8 in ``llm.ratings``' layout and decoding) or the authors' augmentation
  prompt (``augmentation``: :data:`~cruxflow.stages.prompts.RATING_AUGMENTATION` with their
  settings), through the cached runner: a re-run, or a killed run resumed, pays only for the
  calls not cached yet;
* :func:`hole_records`: the ratings in the release's layout, each with its ``source``;
* :func:`add_ratings`: a dataset's ratings with added ones, as the workflow's judgments and
  metrics read them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.model import BLANK_QUESTIONS, Dataset, Topic

RATING_PROMPTS = ("dataset", "augmentation")
SOURCE_PREFIX = "cruxflow judge"
# The authors' augmentation (gen_ratings_offload.py): passage by passage, the passage's first
# 2,048 words joined by single spaces, up to 5 new tokens (their max_new_tokens), the first
# digit read as the rating, -1 without one (their merge_ratings.py).
AUGMENTATION = {"decoding": "free", "free_max_tokens": 5, "max_context_words": 2048,
                "layout": "passage_first"}


@dataclass
class Holes:
    """The holes of some runs' top k: ``pairs[topic]``, the topic's unrated passages in the
    order the runs first rank them, and what was left out."""

    k: int
    runs: list[str]
    pairs: dict[str, list[str]] = field(default_factory=dict)
    ranked: int = 0                 # distinct (topic, passage) pairs in some run's top k
    no_questions: list[str] = field(default_factory=list)    # run topics without questions
    unknown_topics: list[str] = field(default_factory=list)  # run topics the dataset lacks
    no_text: list[tuple[str, str]] = field(default_factory=list)   # holes without a text

    @property
    def count(self) -> int:
        return sum(len(p) for p in self.pairs.values())

    def summary(self) -> dict:
        return {"runs": self.runs, "k": self.k, "ranked_pairs": self.ranked,
                "holes": self.count, "topics_with_holes": len(self.pairs),
                "run_topics_without_questions": self.no_questions,
                "run_topics_not_in_the_dataset": self.unknown_topics,
                "holes_without_text": [f"{t} {p}" for t, p in self.no_text]}


def asked(topic: Topic) -> list[str]:
    """The questions a passage of the topic is rated on (a blank placeholder is asked
    nothing)."""
    return [q for q in topic.questions if q not in BLANK_QUESTIONS]


def find_holes(dataset: Dataset, runs: Mapping[str, object], k: int,
               texts: Mapping[str, str], judged=None) -> Holes:
    """The holes of ``runs`` (name -> a TREC run file, or ``{topic: [RunRow, ...]}`` in
    :func:`~cruxflow.data.io.trec_order`) at ``k``: the (topic, passage) pairs of their top k
    that ``judged`` (default: the dataset's ratings, every one an original) does not hold."""
    from cruxflow.data.io import read_run

    judged = set(dataset.ratings) if judged is None else judged
    holes = Holes(k, list(runs))
    seen: set[tuple[str, str]] = set()
    unknown: dict[str, None] = {}
    no_questions: dict[str, None] = {}
    for run in runs.values():
        ranked = read_run(run) if isinstance(run, (str, Path)) else run
        for tid, rows in ranked.items():
            topic = dataset.topics.get(tid)
            if topic is None:
                unknown[tid] = None
                continue
            if not asked(topic):
                no_questions[tid] = None
                continue
            for row in rows[:k]:
                key = (tid, row.doc_id)
                if key in seen:
                    continue
                seen.add(key)
                if key in judged:
                    continue
                if row.doc_id not in texts:
                    holes.no_text.append(key)
                    continue
                holes.pairs.setdefault(tid, []).append(row.doc_id)
    holes.ranked = len(seen)
    holes.unknown_topics, holes.no_questions = list(unknown), list(no_questions)
    return holes


def shard_holes(holes: Holes, dataset: Dataset, shard: int, shards: int) -> Holes:
    """The holes of shard ``shard`` (0-based) of ``shards``: whole topics, balanced by their
    (passage, question) pairs; every job computes the same split."""
    from cruxflow.stages.prepare import balanced_shards

    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} of {shards}: give 0 <= shard < shards")
    weights = {t: float(len(p) * len(asked(dataset.topics[t]))) for t, p in holes.pairs.items()}
    of = balanced_shards(weights, shards)
    return dataclasses.replace(holes, pairs={t: p for t, p in holes.pairs.items()
                                             if of[t] == shard})


def rate_holes(holes: Holes, dataset: Dataset, texts: Mapping[str, str], runner, *,
               prompt: str = "dataset", sampling=None, options: Mapping | None = None
               ) -> dict[tuple[str, str], list[int]]:
    """The ratings of every hole against its topic's questions, in the holes' order.
    ``prompt``: ``dataset`` (Fig. 8 with ``options``, the keyword arguments of
    :func:`~cruxflow.stages.ratings.rating_options`) or ``augmentation`` (the authors' prompt
    and settings, :data:`AUGMENTATION`); ``sampling``: the judge's (default
    :data:`~cruxflow.llm.JUDGMENT`)."""
    from cruxflow.llm import JUDGMENT
    from cruxflow.stages.ratings import rate_texts

    keys = [(t, p) for t, passages in holes.pairs.items() for p in passages]
    if not keys:
        return {}
    questions = {t: dataset.topics[t].questions for t in holes.pairs}
    if prompt == "augmentation":
        from cruxflow.stages.prompts import RATING_AUGMENTATION

        # the authors' context: the words of the passage joined by single spaces
        items = [(questions[t], " ".join(texts[p].split())) for t, p in keys]
        kwargs = {**AUGMENTATION, "template": RATING_AUGMENTATION}
    elif prompt == "dataset":
        items = [(questions[t], texts[p]) for t, p in keys]
        kwargs = dict(options or {})
    else:
        raise ValueError(f"rating prompt must be one of {RATING_PROMPTS}, got {prompt!r}")
    rated = rate_texts(items, runner, sampling=sampling or JUDGMENT, **kwargs)
    return {key: ratings for key, (ratings, _) in zip(keys, rated, strict=True)}


def judge_runs(dataset: Dataset, runs: Mapping[str, object], texts: Mapping[str, str],
               make_runner, *, k: int, shard: int = 0, shards: int = 1,
               prompt: str = "dataset", sampling=None, options: Mapping | None = None,
               judged=None) -> tuple[list[dict], dict, object]:
    """The whole job of ``cruxflow judge`` and of the workflow's ``judge_holes`` rule: the
    holes of ``runs`` at ``k`` (:func:`find_holes`), those of one shard, rated
    (:func:`rate_holes`) by the runner ``make_runner()`` builds (none is built when the shard
    has no hole). Returns (the records, a summary, the runner or None), the runner still open
    for its call counts."""
    found = find_holes(dataset, runs, k, texts, judged)
    mine = shard_holes(found, dataset, shard, shards)
    runner = make_runner() if mine.count else None
    ratings = rate_holes(mine, dataset, texts, runner, prompt=prompt, sampling=sampling,
                         options=options) if runner is not None else {}
    model = runner.backend.model if runner is not None else "none"
    source = judge_source(prompt, model, options)
    summary = {**found.summary(), "shard": f"{shard}/{shards}", "rated": len(ratings),
               "rated_pairs": sum(len(r) for r in ratings.values()), "source": source}
    return hole_records(ratings, source), summary, runner


def prompt_id(prompt: str, options: Mapping | None = None) -> str:
    """The id of the prompt ``prompt`` rates with (``rating/crux-v1``, ...)."""
    from cruxflow.stages.prompts import RATING_AUGMENTATION
    from cruxflow.stages.ratings import rating_prompt

    if prompt == "augmentation":
        return RATING_AUGMENTATION.id
    return rating_prompt((options or {}).get("layout", "paper")).id


def judge_source(prompt: str, model: str, options: Mapping | None = None) -> str:
    """What the added ratings' ``source`` says: the judge, its prompt and its model."""
    return f"{SOURCE_PREFIX} ({prompt_id(prompt, options)}, {model})"


def hole_records(ratings: Mapping[tuple[str, str], list[int]], source: str) -> list[dict]:
    """The ratings as records of the release's layout, each naming its ``source``."""
    from cruxflow.data.ingest.crux_sources import SOURCE

    return [{"id": t, "docid": p, "rating": list(r), SOURCE: source}
            for (t, p), r in ratings.items()]


def add_ratings(dataset: Dataset, paths: Sequence) -> tuple[Dataset, dict]:
    """``dataset`` with the ratings of ``paths`` (added ones, any layout, read as one) beside
    its own, which are kept where both rate a pair; and how many came from each source."""
    from cruxflow.data.ingest.crux_common import read_ratings
    from cruxflow.data.ingest.crux_paper import attach_ratings
    from cruxflow.data.ingest.crux_sources import ORIGINAL

    counts = {ORIGINAL: len(dataset.ratings)}
    if not paths:
        return dataset, {"sources": counts, "original_kept": 0}
    read = read_ratings([Path(p) for p in paths], n_questions={
        t: len(x.questions) for t, x in dataset.topics.items() if x.questions})
    ratings, _ = attach_ratings(read, dataset.topics, {})
    merged, kept = dict(dataset.ratings), 0
    for key, r in ratings.items():
        if key in merged:
            kept += 1
            continue
        merged[key] = r
        source = read.sources.get(key, ORIGINAL)
        counts[source] = counts.get(source, 0) + 1
    return dataclasses.replace(dataset, ratings=merged), {"sources": counts,
                                                          "original_kept": kept}
