"""File to file: ``run_kpr`` extracts what key points are missing, judges the responses and
writes the scores; ``cruxflow kpr`` is its console command, the workflow's rule ``kpr`` its
other caller. :class:`KprOptions` declares every option and its default once."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cruxflow.beyond.kpr.data import KP_FILE_FIELDS, KPRItem, read_items
from cruxflow.beyond.kpr.metric import aggregate_scores, kpr_scores
from cruxflow.beyond.kpr.prompts import EXTRACT_SAMPLING, JUDGE_SAMPLING, PROMPTS
from cruxflow.beyond.kpr.steps import (
    extract_key_points,
    extract_response_points,
    judge_key_points,
    judge_response_points,
)
from cruxflow.data.io import nan_to_none, write_json, write_jsonl, write_tsv
from cruxflow.llm import LazyRunner, LLMRunner

PRECISION_REFERENCES = ("key_points", "documents")


@dataclass
class KprOptions:
    """Everything ``run_kpr`` can be told. These defaults are the only ones: the console
    command's flags and the workflow's config (whose schema declares none) read them here."""

    extract_only: bool = False          # only key_points.jsonl; no response needed
    rounds: int = 1                     # extraction rounds per document (Sec. 3.3)
    group_by: Sequence[str] = ()        # columns to average by, besides overall
    precision: bool = True              # also KPP and KPF (Sec. 6.4)
    precision_reference: str = "key_points"   # key_points | documents
    drop_unfound: bool = False          # drop extracted points with no span in the document
    aggregate: bool = False             # the paper's LLM de-duplication (App. B)
    filter_threshold: float | None = None     # the AutoDS filter (App. A.2; the paper: 0.7)
    max_words: int | None = None        # cut longer documents into pieces before extraction
    extract_max_tokens: int = EXTRACT_SAMPLING.max_tokens
    judge_max_tokens: int = JUDGE_SAMPLING.max_tokens
    attempts: int = 3                   # tries per unparseable output (sampled decoding only)

    def check(self) -> None:
        """Raise ``ValueError`` naming the first invalid option."""
        if self.precision_reference not in PRECISION_REFERENCES:
            raise ValueError(f"precision_reference must be one of "
                             f"{', '.join(PRECISION_REFERENCES)}, got {self.precision_reference!r}")
        for name in ("rounds", "extract_max_tokens", "judge_max_tokens", "attempts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_words is not None and self.max_words < 1:
            raise ValueError(f"max_words must be at least 1, got {self.max_words}")
        t = self.filter_threshold
        if t is not None and not (math.isfinite(t) and 0 <= t <= 1):
            raise ValueError(f"filter_threshold must be between 0 and 1, got {t}")
        if isinstance(self.group_by, str) or not all(isinstance(c, str) for c in self.group_by):
            raise ValueError(f"group_by must be a list of column names, got {self.group_by!r}")


def _key_points_rows(items: Sequence[KPRItem]) -> list[dict]:
    return [{"id": it.id, "question": it.question,
             "key_points": [p.to_json() for p in it.key_points or []],
             **({"extraction": it.extraction} if it.extraction else {}),
             **{k: v for k, v in it.extra.items() if k not in KP_FILE_FIELDS}}
            for it in items]


def run_kpr(input_path, output_dir, options: KprOptions | None = None, *,
            runner: LLMRunner | Callable[[], LLMRunner] | None = None,
            key_points=None) -> dict:
    """Read ``input_path``, extract what is missing, judge, score, write ``output_dir``.

    Writes ``key_points.jsonl``; unless ``extract_only`` also ``judgments.jsonl``,
    ``response_key_points.jsonl`` (with ``precision``), ``per_question.tsv``, ``grouped.tsv``;
    always ``summary.json``, which is also returned. ``runner``: an :class:`LLMRunner` (the
    caller closes it) or a function that builds one, called only when some request is needed
    (the runner is then closed here). ``key_points``: a ``key_points.jsonl`` of an earlier run
    whose points are used for the same ids.
    """
    opts = options or KprOptions()
    opts.check()
    output_dir = Path(output_dir)
    group_by = list(opts.group_by)
    precision = opts.precision and not opts.extract_only
    items = read_items(input_path, key_points=key_points, group_by=group_by,
                       need_response=not opts.extract_only,
                       need_documents=precision and opts.precision_reference == "documents")
    extract_sampling = dataclasses.replace(EXTRACT_SAMPLING, max_tokens=opts.extract_max_tokens)
    judge_sampling = dataclasses.replace(JUDGE_SAMPLING, max_tokens=opts.judge_max_tokens)
    lazy = LazyRunner(runner, needed_for="key point extraction and judging")
    try:
        if any(it.key_points is None for it in items):
            items = extract_key_points(
                items, lazy.get(), rounds=opts.rounds, drop_unfound=opts.drop_unfound,
                max_words=opts.max_words, aggregate=opts.aggregate,
                filter_threshold=opts.filter_threshold, sampling=extract_sampling,
                attempts=opts.attempts)
        output_dir.mkdir(parents=True, exist_ok=True)
        write_jsonl(output_dir / "key_points.jsonl", _key_points_rows(items))
        summary: dict = {
            "input": str(input_path), "key_points_file": None if key_points is None
            else str(key_points),
            "n_questions": len(items),
            "n_key_points": sum(len(it.key_points or []) for it in items),
            "n_extracted": sum(1 for it in items if it.extraction),
            "settings": {**dataclasses.asdict(opts), "group_by": group_by,
                         "precision": precision},
            "prompts": [p.id for p in PROMPTS],
        }
        if not opts.extract_only:
            summary.update(_judge_and_score(items, lazy, opts, output_dir, extract_sampling,
                                            judge_sampling))
        summary["llm"] = lazy.stats()
        write_json(output_dir / "summary.json", summary)
        return summary
    finally:
        lazy.close()


def _judge_and_score(items: list[KPRItem], lazy: LazyRunner, opts: KprOptions,
                     output_dir: Path, extract_sampling, judge_sampling) -> dict:
    """Judge every item's response, write the judgments and the scores; the summary's
    figures."""
    needs_llm = any(it.key_points and it.response and it.response.strip() for it in items)
    llm = lazy.get() if needs_llm else None
    recall = judge_key_points(items, llm, sampling=judge_sampling, attempts=opts.attempts)
    prec = None
    if opts.precision:
        rpoints = (extract_response_points(items, llm, sampling=extract_sampling,
                                           attempts=opts.attempts)
                   if llm is not None else {it.id: [] for it in items})
        prec = judge_response_points(items, rpoints, llm, reference=opts.precision_reference,
                                     sampling=judge_sampling, attempts=opts.attempts)
        write_jsonl(output_dir / "response_key_points.jsonl",
                    [{"id": it.id, "key_points": [p.to_json() for p in rpoints[it.id]]}
                     for it in items])
    judged = [*recall, *(prec or [])]
    write_jsonl(output_dir / "judgments.jsonl", [j.to_json() for j in judged])
    group_by = list(opts.group_by)
    per_question = kpr_scores(items, recall, prec, group_by)
    overall, grouped = aggregate_scores(per_question, group_by)
    write_tsv(output_dir / "per_question.tsv", per_question)
    write_tsv(output_dir / "grouped.tsv", grouped)
    return {
        **overall,
        "without_key_points": per_question.loc[per_question["KPR"].isna(), "id"].tolist(),
        "n_judgments": sum(j.raw is not None for j in judged),
        "judge_unparseable": sum(j.raw is not None and j.label is None for j in judged),
        "empty_responses": sorted({j.item_id for j in recall if j.note == "empty response"}),
        "grouped": [{k: nan_to_none(v) for k, v in row.items()}
                    for row in grouped.to_dict(orient="records")],
    }
