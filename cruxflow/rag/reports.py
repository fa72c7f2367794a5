"""RAG generation from retrieval contexts and the judged final results y (paper Sec. 4.1-4.2).

Every context Z of a pipeline feeds one generator call per topic under the paper's controls:
the context has |Z*| passages (or k = 10, 20 for Table 3) and the report is bounded by
token(Z*), the token count of the oracle context (footnote 7: the prompt states the bound and a
longer output is truncated). The prompt states the bound in words (``WORDS_PER_TOKEN`` words
per token, the usual rate for English with Llama-style tokenizers), the generator may produce
at most ``budget`` tokens of its own, and the output is cut to ``budget`` tokens of the metric
tokenizer, so that Den(y) counts exactly what the bound allowed.

The reports are rated against every sub-question of their topic with the answerability prompt
(Fig. 8), like passages; Cov(y) (Eq. 3 over the report) and Den(y) (Eq. 6 with the report in
place of Z) follow for any threshold eta from the same ratings. The reference rows of Table 1
are ``direct`` (#1: the same prompt without passages), ``human`` (#2: the human summary y* as
the result, rated when the dataset was built) and ``oracle`` (#3: generation from Z*).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping, Sequence

import pandas as pd

from cruxflow.data.errors import DataError
from cruxflow.data.io import RunRow, existing, read_text
from cruxflow.llm import GENERATION, JUDGMENT, LLMRunner, Sampling
from cruxflow.llm.retry import ask_with_retries
from cruxflow.metrics.scorer import score_rated_texts
from cruxflow.stages.prompts import REPORT, REPORT_DIRECT
from cruxflow.stages.ratings import rate_texts

WORDS_PER_TOKEN = 0.75
FINAL_COLUMNS = ["tokens_y", "Cov_y", "Den_y"]


@dataclasses.dataclass
class ReportTask:
    """One generation: a topic's query, its context (``None`` for direct prompting), a bound."""

    topic_id: str
    query: str
    passage_ids: list[str]
    passages: list[str] | None
    budget: int


def format_passages(texts: Sequence[str], max_words: int | None = None) -> tuple[str, int]:
    """Numbered passages, ``[1] ...`` one per line, and the number of words left out.

    With ``max_words`` (the generator's context window is finite) the passages keep their rank
    order and the lowest-ranked words go first: the tail of the context is cut, never its head.
    """
    lines, used, dropped = [], 0, 0
    for i, text in enumerate(texts, 1):
        words = text.split()
        room = len(words) if max_words is None else max(0, max_words - used)
        keep = words[:room]
        dropped += len(words) - len(keep)
        used += len(keep)
        if keep:
            lines.append(f"[{i}] {' '.join(keep)}")
    return "\n".join(lines), dropped


def max_words(budget: int) -> int:
    return max(1, math.floor(budget * WORDS_PER_TOKEN))


def report_prompt(task: ReportTask, max_context_words: int | None = None) -> tuple[str, int]:
    """The rendered prompt of a task and the context words it left out."""
    if task.passages is None:
        return REPORT_DIRECT.render(query=task.query, max_words=max_words(task.budget)), 0
    text, dropped = format_passages(task.passages, max_context_words)
    return REPORT.render(query=task.query, passages=text, max_words=max_words(task.budget)), \
        dropped


def generate_reports(tasks: Sequence[ReportTask], runner: LLMRunner, *,
                     truncate: Callable[[str, int], str], count_tokens: Callable[[str], int],
                     sampling: Sampling = GENERATION, max_context_words: int | None = None,
                     attempts: int = 2) -> list[dict]:
    """One report per task, cut to its budget; an empty output is asked for again."""
    prompts, dropped = [], []
    for task in tasks:
        p, d = report_prompt(task, max_context_words)
        prompts.append(p)
        dropped.append(d)
    # One request per distinct bound: max_tokens is part of the request and of its cache key.
    by_budget: dict[int, list[int]] = {}
    for i, task in enumerate(tasks):
        by_budget.setdefault(max(1, task.budget), []).append(i)
    texts: list[str] = [""] * len(tasks)
    for budget, idx in by_budget.items():
        s = dataclasses.replace(sampling, max_tokens=budget)
        answers = ask_with_retries(runner, [prompts[i] for i in idx], s,
                                   lambda t: t.strip() or None, attempts=attempts)
        for i, answer in zip(idx, answers, strict=True):
            texts[i] = answer.text.strip()
    records = []
    for task, text, d in zip(tasks, texts, dropped, strict=True):
        report = truncate(text, task.budget)
        records.append({
            "topic_id": task.topic_id,
            "prompt": (REPORT_DIRECT if task.passages is None else REPORT).id,
            "passages": task.passage_ids,
            "budget": task.budget,
            "tokens": count_tokens(report),
            "truncated": report != text,
            "context_words_dropped": d,
            "report": report,
        })
    return records


def judge_reports(reports: Sequence[tuple[Sequence[str], str]], runner: LLMRunner, *,
                  sampling: Sampling = JUDGMENT, max_context_words: int = 2048,
                  decoding: str = "constrained", free_max_tokens: int = 5,
                  layout: str = "paper") -> list[tuple[list[int], list[float | None]]]:
    """Rate each ``(questions, report)`` against every question (decoded, laid out and sent in
    the order that :func:`cruxflow.stages.ratings.rate_texts` says); an empty report rates 0
    everywhere without a call (there is nothing to read)."""
    todo = [i for i, (_, text) in enumerate(reports) if text.strip()]
    rated = rate_texts([reports[i] for i in todo], runner, sampling=sampling,
                       max_context_words=max_context_words, decoding=decoding,
                       free_max_tokens=free_max_tokens, layout=layout)
    out: list[tuple[list[int], list[float | None]]] = [
        ([0] * len(qs), [None] * len(qs)) for qs, _ in reports]
    for i, r in zip(todo, rated, strict=True):
        out[i] = r
    return out


def read_topic_list(path, known: Collection[str]) -> list[str]:
    """The topic ids of a topic-list file (``rag.topics``): one per line, blank lines and
    ``#`` comments skipped. An id that is not a topic of the dataset (``known``), or that comes
    twice, is a :class:`DataError` naming the file and line: a list written for another
    ingest (other ids) must not quietly shrink the experiment."""
    path = existing(path, "topic list")
    ids: dict[str, int] = {}
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        tid = line.split("#", 1)[0].strip()
        if not tid:
            continue
        where = {"path": path, "record": f"line {lineno}", "field": "topic_id"}
        if tid not in known:
            raise DataError(f"unknown topic {tid!r} (not in the dataset's topics)", **where)
        if tid in ids:
            raise DataError(f"topic {tid!r} is listed twice (first at line {ids[tid]})",
                            **where)
        ids[tid] = lineno
    return list(ids)


def rag_topics(judged: Mapping[str, object], max_topics: int | None = None,
               chosen: Collection[str] | None = None) -> list[str]:
    """The topics that get reports: the judged ones (of ``chosen`` only, when a topic list
    gives it) in id order, the first ``max_topics``. A chosen topic without an answerable
    question at this eta has nothing to score and is left out, as in the context metrics."""
    topics = sorted(t for t in judged if chosen is None or t in chosen)
    return topics if max_topics is None else topics[:max_topics]


def context_run(contexts: Mapping[str, Sequence[str]]) -> dict[str, list[RunRow]]:
    """A context file's passage lists as a run, so the context scorer reads them unchanged."""
    return {t: [RunRow(t, p, i + 1, float(len(ids) - i)) for i, p in enumerate(ids)]
            for t, ids in contexts.items()}


def final_scores(scorer, system: str, k: str, ratings: Mapping[str, Sequence[int]],
                 tokens: Mapping[str, int], contexts: Mapping[str, Sequence[str]] | None,
                 topics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per topic: the context metrics of Z (none for #1 and #2) beside Cov(y) and Den(y).

    ``scorer`` is a :class:`cruxflow.metrics.scorer.ContextScorer` for the threshold to report;
    ``ratings``/``tokens`` are the report's 0-5 ratings (all of the topic's questions) and its
    token count per topic. Topics without answerable questions at this threshold are left out,
    as in the context metrics, and so are topics not in ``topics`` (when given: the topics
    that got reports); a topic without a report counts as an empty one (Cov(y) = 0).
    """
    if contexts is not None:
        # the contexts are the run's top k already: scoring them at k gives the names @k
        size = k if k == "oracle" else int(k) if str(k).isdigit() else 10**9
        frame = scorer.score(context_run(contexts), system, size)
    else:
        frame = pd.DataFrame({"system": system, "topic": list(scorer.judgments)})
    if topics is not None:
        frame = frame[frame["topic"].isin(set(topics))]
    frame["k"] = k
    topics_shown = frame["topic"].tolist()
    judged = scorer.judgments
    texts = [(tid, list(ratings.get(tid, [0] * judged[tid].n_questions)))
             for tid in topics_shown]
    counts = [int(tokens.get(tid, 0)) for tid in topics_shown]
    values = score_rated_texts(texts, ["Cov@1", "Den@1"], judged, scorer.given.ratings,
                               tokens=counts, passage_texts=scorer.texts,
                               count_tokens=scorer.count_tokens, options=scorer.options)
    frame = pd.concat([frame.reset_index(drop=True), pd.DataFrame(
        {"tokens_y": counts, "Cov_y": values["Cov@1"], "Den_y": values["Den@1"]})], axis=1)
    frame.insert(0, "eta", scorer.eta)
    return frame
