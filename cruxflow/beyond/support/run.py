"""File to file: :func:`evaluate_support` reads answers and labels, judges what is asked for,
scores and writes the results; ``cruxflow support`` (:mod:`cruxflow.cli.support`) and the
workflow's rule ``support`` call it."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from cruxflow.beyond.support.agreement import compare_label_sets
from cruxflow.beyond.support.data import (
    NAMES,
    NOT_JUDGED,
    Item,
    apply_labels,
    check_same_answers,
    collect_items,
    is_answers_file,
    read_answers,
    read_label_file,
    read_topic_ids,
    strip_labels,
)
from cruxflow.beyond.support.judge import judge_items, judge_sampling
from cruxflow.beyond.support.metric import PER_TOPIC_COLUMNS, average_runs, score_answers
from cruxflow.beyond.support.options import SupportOptions
from cruxflow.beyond.support.passages import PassageStore
from cruxflow.beyond.support.prompts import JUDGE_PROMPTS
from cruxflow.data.errors import DataError
from cruxflow.data.io import write_json, write_jsonl, write_tsv
from cruxflow.llm import LazyRunner, LLMRunner
from cruxflow.metrics.stats import mean_of_defined

log = logging.getLogger(__name__)

PER_RUN_COLUMNS = ["run_id", "weighted_precision", "weighted_recall", "topics_answered",
                   "precision_topics", "recall_topics"]


def _label_counts(items: Sequence[Item]) -> dict:
    counts = Counter(NAMES.get(it.label, "not_judged") for it in items if it.cited)
    return {"FS": counts["FS"], "PS": counts["PS"], "NS": counts["NS"],
            "not_judged": counts["not_judged"],
            "uncited_sentences": sum(not it.cited for it in items)}


def _write_tsv(path, rows: Sequence[dict], columns: Sequence[str]) -> None:
    import pandas as pd

    write_tsv(path, pd.DataFrame(list(rows), columns=list(columns)))


def evaluate_support(input_path, output_dir, options: SupportOptions | None = None, *,
                     labels=None, passages=None, topics=None, compare=None,
                     runner: LLMRunner | Callable[[], LLMRunner] | None = None) -> dict:
    """Read answers (``input_path``), take labels from them and from ``labels`` (a label
    file, which wins), judge with the LLM what ``options.judge_pairs`` asks for (``None``: nothing,
    ``"missing"``, ``"all"``; passages from ``passages``), score, and write into
    ``output_dir``: ``labels.jsonl``, ``per_topic.tsv``, ``per_run.tsv``, ``summary.json``
    and, with ``compare`` (a second label set for the same answers: an answers JSONL with
    inline labels or a label file), ``agreement.json``. ``topics``: a topics file defining
    the track's topics (default: every topic in the input). ``runner``: an
    :class:`LLMRunner` or a function that builds one, called only when something is to be
    judged. Returns the summary.
    """
    opts = options or SupportOptions()
    opts.check()
    if passages is not None and opts.judge_pairs is None:   # a named input is read or refused
        raise DataError("only the LLM judge reads passage texts (--judge-pairs): add "
                        "--judge-pairs, or leave --passages out", path=passages)
    output_dir = Path(output_dir)
    answers = read_answers(input_path)
    if labels is not None:
        answers = apply_labels(answers, read_label_file(labels), labels)
    items = collect_items(answers, opts.all_citations)
    lazy = LazyRunner(runner, needed_for="judging support")
    if opts.judge_pairs is not None:
        store = None
        needed = {it.passage_id for it in items
                  if it.cited and (opts.judge_pairs == "all" or it.label == NOT_JUDGED)}
        if needed and passages is not None:
            store = PassageStore(passages, needed)
        elif passages is not None:
            log.warning("%s not read: every cited pair has a label (--judge-pairs missing)",
                        passages)
        try:
            items, _ = judge_items(items, answers, store, lazy.get, judge=opts.judge_pairs,
                                   prompt=opts.prompt,
                                   sampling=judge_sampling(opts.temperature),
                                   attempts=opts.attempts,
                                   max_passage_words=opts.max_passage_words)
        finally:
            lazy.close()
    topic_ids = read_topic_ids(topics) if topics is not None else None
    per_topic = score_answers(items)
    per_run = average_runs(per_topic, topic_ids, opts.average)
    universe = topic_ids if topic_ids is not None else list(
        dict.fromkeys(a.topic_id for a in answers))
    answered, known = {a.topic_id for a in answers}, set(universe)
    sources = Counter(it.source for it in items)
    summary = {
        "input": str(input_path), "labels": None if labels is None else str(labels),
        "judge": opts.judge_pairs, "citations": "all" if opts.all_citations else "first",
        "average": opts.average,
        "topics": len(universe),
        "topics_from": "input" if topics is None else str(topics),
        "topics_without_answers": [t for t in universe if t not in answered],
        "answers": len(answers),
        "answers_outside_topics": sum(a.topic_id not in known for a in answers),
        "runs": len(per_run),
        "sentences": sum(len(a.sentences) for a in answers),
        "label_counts": _label_counts(items),
        "sources": {k: sources[k] for k in ("given", "judged", "rule", "missing")},
        "per_run": per_run,
        "mean_over_runs": {m: mean_of_defined(r[m] for r in per_run)
                           for m in ("weighted_precision", "weighted_recall")},
        "llm": lazy.stats(),
    }
    if opts.judge_pairs is not None:
        summary["prompt"] = JUDGE_PROMPTS[opts.prompt].template.id
        summary["temperature"] = opts.temperature
    agreement = None
    if compare is not None:
        if is_answers_file(compare):
            # answers with their own labels (NIST's file against an LLM judge's): each set is
            # scored on its own rows, and rows in both are paired
            answers_b = read_answers(compare)
            check_same_answers(answers, answers_b, opts.all_citations)
            items_b = collect_items(answers_b, opts.all_citations)
        else:   # labels kept apart: they label the input's answers
            items_b = collect_items(apply_labels(strip_labels(answers),
                                                 read_label_file(compare), compare),
                                    opts.all_citations)
        agreement = {"input": str(input_path), "compare": str(compare),
                     "citations": summary["citations"], "average": opts.average,
                     **compare_label_sets(items, items_b, topic_ids, opts.average,
                                          n_resamples=opts.bootstrap)}
        summary["agreement"] = {k: agreement[k] for k in
                                ("n", "exact_agreement", "cohen_kappa", "topics", "rows",
                                 "kendall_tau")}
    write_jsonl(output_dir / "labels.jsonl", (it.to_json() for it in items))
    _write_tsv(output_dir / "per_topic.tsv", per_topic, PER_TOPIC_COLUMNS)
    _write_tsv(output_dir / "per_run.tsv", per_run, PER_RUN_COLUMNS)
    if agreement is not None:
        write_json(output_dir / "agreement.json", agreement)
    write_json(output_dir / "summary.json", summary)
    return summary
