"""Support evaluation of RAG answers as in the TREC 2024 RAG Track (Thakur et al., SIGIR 2025,
"Assessing Support for the TREC 2024 RAG Track").

An answer ``r = {a_1, ..., a_n}`` is a list of sentences; each sentence ``a_i`` cites passages
``d_j``; a judge (human or LLM) gives each (sentence, cited passage) pair a support level
``s(a_i, d_j)`` (Sec. 2, 3.2):

- 2 = FS, Full Support: all of the information in the sentence is supported by the passage;
- 1 = PS, Partial Support: some of it is, other parts are not;
- 0 = NS, No Support: the passage does not support any part of the sentence;
- -1 = not judged (left out of every numerator and denominator).

A sentence with no citation is No Support (Sec. 3.2, footnote 2). As in the track, only the
first citation of each sentence is judged by default (Sec. 3.3); ``all_citations`` judges every
citation (a sentence then scores the mean weight of its judged citations, the reference
code's rule). Weighted precision and recall (Sec. 3.4, weights FS = 1, PS = 0.5, NS = 0) are
computed per (topic, run) and averaged per run over all topics of the track, a topic the run has
no answer for counting 0, or over the run's own topics (see :func:`average_runs`). Two label sets
for the same answers (human vs LLM, two LLMs) are compared with a 3x3 confusion matrix, exact
agreement, Cohen's kappa (Sec. 4.2, 5) and Kendall's tau between the rankings they induce
(Sec. 4.1, Fig. 1) at run level, topic-averaged and over all paired (topic, run) rows. NIST's
released support judgments (``final.citation_judgments_*.jsonl``) are read as they are.

Formats, options and what differs from the paper: ``docs/support.md``.

- :mod:`cruxflow.beyond.support.data` -- support levels, answers, label files, topic lists, items;
- :mod:`cruxflow.beyond.support.prompts` -- the judge's prompts (the track's GPT-4o prompt by
  default), sampling and label parsers;
- :mod:`cruxflow.beyond.support.passages` -- passage texts for the judge (JSONL or Lucene index);
- :mod:`cruxflow.beyond.support.metric` -- weighted precision and recall, per-run means;
- :mod:`cruxflow.beyond.support.agreement` -- confusion matrix, kappa, Kendall's tau at run
  level, topic-averaged and over all paired rows, with bootstrap intervals;
- :mod:`cruxflow.beyond.support.judge` -- LLM judging of the pairs without a label;
- :mod:`cruxflow.beyond.support.options` -- :class:`SupportOptions`, the defaults;
- :mod:`cruxflow.beyond.support.run` -- :func:`evaluate_support` (file to file; the console
  command is :mod:`cruxflow.cli.support`).
"""

from __future__ import annotations

from cruxflow.beyond.support.agreement import (
    compare_label_sets,
    label_agreement,
    rank_agreement,
    rank_correlation,
)
from cruxflow.beyond.support.data import (
    FS,
    NAMES,
    NOT_JUDGED,
    NS,
    PS,
    Answer,
    Item,
    Sentence,
    apply_labels,
    check_same_answers,
    collect_items,
    parse_label_value,
    read_answers,
    read_label_file,
    read_topic_ids,
    strip_labels,
)
from cruxflow.beyond.support.judge import judge_items, judge_sampling, judge_support
from cruxflow.beyond.support.metric import (
    PER_TOPIC_COLUMNS,
    WEIGHTS,
    average_runs,
    score_answers,
    sentence_score,
    weighted_precision,
    weighted_recall,
)
from cruxflow.beyond.support.options import AVERAGES, JUDGE_MODES, PROMPTS, SupportOptions
from cruxflow.beyond.support.passages import PassageStore
from cruxflow.beyond.support.prompts import (
    JUDGE_CHOICES,
    JUDGE_PROMPTS,
    JUDGE_SAMPLING,
    RETRY_TEMPERATURE,
    SUPPORT_PROMPT,
    TREC2024_PROMPT,
    TREC2024_TEMPERATURE,
    parse_support_label,
    parse_trec2024_label,
)
from cruxflow.beyond.support.run import evaluate_support

__all__ = ["AVERAGES", "FS", "JUDGE_CHOICES", "JUDGE_MODES", "JUDGE_PROMPTS", "JUDGE_SAMPLING",
           "NAMES", "NOT_JUDGED", "NS", "PER_TOPIC_COLUMNS", "PROMPTS", "PS",
           "RETRY_TEMPERATURE", "SUPPORT_PROMPT", "TREC2024_PROMPT", "TREC2024_TEMPERATURE",
           "WEIGHTS", "Answer", "Item", "PassageStore", "Sentence", "SupportOptions",
           "apply_labels", "average_runs", "check_same_answers", "collect_items",
           "compare_label_sets", "evaluate_support", "judge_items", "judge_sampling",
           "judge_support", "label_agreement", "parse_label_value", "parse_support_label",
           "parse_trec2024_label", "rank_agreement", "rank_correlation", "read_answers",
           "read_label_file", "read_topic_ids", "score_answers", "sentence_score",
           "strip_labels", "weighted_precision", "weighted_recall"]
