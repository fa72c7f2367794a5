"""Key Point Recall (KPR) of Long2RAG (Qi et al., 2024), with KPP and KPF (Sec. 6.4).

For each question q, key points x^q are extracted from its retrieved documents d^q; a response
y is scored by the fraction of key points it entails (Eq. 1, 2)::

    I(x, y) = 1 if y entails x else 0                              (Eq. 1)
    KPR     = 1/|Q| * sum_q  sum_{x in x^q} I(x, y_q) / |x^q|       (Eq. 2)

A question without key points has an undefined KPR (0/0): it is left out of every mean and
counted. An empty response entails nothing: KPR 0 (and KPP 0), with no LLM call. Failures are
not zeros: an unparseable verdict, or a response in which no point was extracted, is counted
and by default left out (``KprOptions.failures``). Key points come from the ``fast`` pipeline
(one round) or the paper's (rounds, LLM de-duplication, AutoDS filter at 0.7). See
docs/kpr.md.

The pieces, each usable on its own (the workflow applies them to its own RAG reports):

- :mod:`cruxflow.beyond.kpr.prompts` -- the paper's prompts (App. B extraction, entailment,
  aggregation; App. A.2 filter) as versioned templates, our demonstrations and later-round
  prompt, the decoding settings and the filter's threshold (0.7);
- :mod:`cruxflow.beyond.kpr.data` -- :class:`KPRItem`, :class:`KeyPoint`, :class:`Judgment`
  and the readers of the input and of a key-points file (errors name file, line and field);
- :mod:`cruxflow.beyond.kpr.parsing` -- extraction outputs into (key point, verbatim spans),
  span checks against the source, the aggregation's completeness/disjointness check, the
  entailment label (:mod:`cruxflow.llm.labels`), the AutoDS score (Eq. 3,
  :mod:`cruxflow.llm.logprobs`);
- :mod:`cruxflow.beyond.kpr.steps` -- the LLM steps: :func:`extract_key_points` (rounds,
  normalised deduplication, optional aggregation and filter), :func:`judge_key_points` (Eq. 1),
  :func:`extract_response_points` / :func:`judge_response_points` (KPP);
- :mod:`cruxflow.beyond.kpr.metric` -- Eq. 2 per question, KPP, KPF, :func:`kpr_scores` and
  :func:`aggregate_scores` (means overall and per value of any grouping column);
- :mod:`cruxflow.beyond.kpr.options` -- :class:`KprOptions` (every option and its default,
  once) and the named pipelines (``fast``, ``paper``);
- :mod:`cruxflow.beyond.kpr.run` -- :func:`run_kpr`, the file-to-file job (the console command
  is :mod:`cruxflow.cli.kpr`).
"""

from __future__ import annotations

from cruxflow.beyond.kpr.data import (
    Judgment,
    KeyPoint,
    KPRItem,
    SourceDocument,
    read_items,
    read_key_points_file,
)
from cruxflow.beyond.kpr.metric import (
    aggregate_scores,
    key_point_f1,
    key_point_precision,
    key_point_recall,
    kpr_scores,
    mean_score,
)
from cruxflow.beyond.kpr.options import PIPELINES, KprOptions
from cruxflow.beyond.kpr.parsing import (
    filter_score,
    parse_aggregation,
    parse_entailment,
    parse_key_points,
    span_in_text,
)
from cruxflow.beyond.kpr.prompts import (
    AGGREGATION,
    ENTAILMENT,
    EXTRACT_SAMPLING,
    EXTRACTION,
    EXTRACTION_DEMO_POINTS,
    EXTRACTION_DEMONSTRATION,
    EXTRACTION_MORE,
    FILTER,
    FILTER_THRESHOLD,
    JUDGE_SAMPLING,
    PROMPTS,
)
from cruxflow.beyond.kpr.run import run_kpr
from cruxflow.beyond.kpr.steps import (
    extract_key_points,
    extract_response_points,
    judge_key_points,
    judge_response_points,
)

__all__ = [
    "AGGREGATION",
    "ENTAILMENT",
    "EXTRACTION",
    "EXTRACTION_DEMONSTRATION",
    "EXTRACTION_DEMO_POINTS",
    "EXTRACTION_MORE",
    "EXTRACT_SAMPLING",
    "FILTER",
    "FILTER_THRESHOLD",
    "JUDGE_SAMPLING",
    "Judgment",
    "KPRItem",
    "KeyPoint",
    "KprOptions",
    "PIPELINES",
    "PROMPTS",
    "SourceDocument",
    "aggregate_scores",
    "extract_key_points",
    "extract_response_points",
    "filter_score",
    "judge_key_points",
    "judge_response_points",
    "key_point_f1",
    "key_point_precision",
    "key_point_recall",
    "kpr_scores",
    "mean_score",
    "parse_aggregation",
    "parse_entailment",
    "parse_key_points",
    "read_items",
    "read_key_points_file",
    "run_kpr",
    "span_in_text",
]
