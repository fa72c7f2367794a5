"""Score one retrieval run (TREC) or its contexts (JSONL) against a prepared dataset, as the
workflow's ``context_metrics`` rule does: the library behind ``cruxflow evaluate``
(see docs/evaluate.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cruxflow.data.contexts import read_contexts
from cruxflow.data.errors import DataError
from cruxflow.data.io import existing, read_run
from cruxflow.data.model import Dataset, load_records, passage_from_json
from cruxflow.data.names import ORACLE_K, PASSAGES
from cruxflow.stages.judgments import derive, load_judgments

if TYPE_CHECKING:
    import pandas as pd

K_ALL = "all"   # the whole ranked list of each topic, as given
RUN_DEFAULT_K: list[int | str] = [ORACLE_K, 10, 20]
CONTEXTS_DEFAULT_K: list[int | str] = [K_ALL]



@dataclass
class Evaluation:
    per_query: pd.DataFrame
    aggregate: pd.DataFrame
    info: dict = field(default_factory=dict)


def load_texts(dataset_dir, collection=None) -> tuple[Dataset, dict[str, str]]:
    """The dataset and the passage texts that contexts may name (its own, or ``collection``)."""
    if collection is None:
        dataset = Dataset.load(dataset_dir, with_passages=True)
        texts = {pid: p.contents for pid, p in dataset.passages.items()}
        source = Path(dataset_dir) / PASSAGES
    else:
        dataset = Dataset.load(dataset_dir, with_passages=False)
        source = existing(collection, "passage collection")
        if source.is_dir():
            source = existing(source / "passages.jsonl", "passage collection")
        texts = {pid: p.contents
                 for pid, p in load_records(source, passage_from_json, lambda p: p.id).items()}
    if not texts:
        raise DataError("no passages: the dataset has not been prepared that far", path=source)
    return dataset, texts


def evaluate_run(dataset_dir, *, run=None, contexts=None, eta: int = 3, alpha: float = 0.5,
                 ks: list[int | str] | None = None, density_weight: float = 0.5,
                 tokenizer: str | None = None, judgments=None, collection=None,
                 name: str | None = None, relevance_grades: str = "2-1") -> Evaluation:
    """Score a TREC run or a contexts JSONL against a dataset, as rule context_metrics does."""
    # imported here: pandas and ir_measures would slow down every other subcommand's start
    import pandas as pd

    from cruxflow.metrics.scorer import ContextScorer, aggregate, check_run
    from cruxflow.metrics.tokens import make_token_counter

    if (run is None) == (contexts is None):
        raise ValueError("give exactly one of run and contexts")
    source = existing(run if run is not None else contexts,
                       "run file" if run is not None else "contexts file")
    dataset, texts = load_texts(dataset_dir, collection)
    judged = derive(dataset, eta, alpha) if judgments is None \
        else load_judgments(judgments, dataset)
    if run is not None:
        ranking = read_run(source)
    else:
        ranking = read_contexts(source, topics=dataset.topics, passages=texts)
    check_run(ranking, dataset, texts, source)
    try:
        count_tokens = make_token_counter(tokenizer)
    except FileNotFoundError as exc:
        raise DataError(str(exc), path=tokenizer) from None
    scorer = ContextScorer(dataset, judged, texts, count_tokens, eta=eta, alpha=alpha,
                           density_weight=density_weight, grades=relevance_grades)
    if not scorer.judgments:
        raise DataError(f"no topic has an answerable question at eta={eta}: nothing to score",
                        path=judgments or dataset_dir)
    system = name or source.stem
    ks = ks or (RUN_DEFAULT_K if run is not None else CONTEXTS_DEFAULT_K)
    frames = []
    for k in ks:
        if k == K_ALL:
            # a cut at the longest list keeps every list whole
            longest = max((len(ranking.get(t, [])) for t in scorer.judgments), default=0)
            frame = scorer.score(ranking, system, max(longest, 1))
            frame["k"] = K_ALL
        else:
            frame = scorer.score(ranking, system, k)
        frames.append(frame)
    per_query = pd.concat(frames, ignore_index=True)
    info = {
        "dataset": str(dataset_dir), "input": str(source), "system": system, "eta": eta,
        "alpha": alpha, "density_weight": density_weight, "tokenizer": tokenizer or "regex",
        "relevance_grades": relevance_grades,
        "judgments": str(judgments) if judgments is not None else "derived",
        "k": [str(k) for k in ks],
        "topics_evaluated": len(scorer.judgments),
        "topics_not_evaluated": [t for t in dataset.topics if t not in scorer.judgments],
        "missing_in_run": [t for t in scorer.judgments if t not in ranking],
    }
    return Evaluation(per_query, aggregate(per_query), info)


