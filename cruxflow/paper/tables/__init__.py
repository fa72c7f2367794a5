"""The paper's result tables (Sec. 4) built from one per-query frame.

* :func:`table1` -- Table 1: Cov(Z), alpha-nDCG (published computation), alpha-nDCG (Eq. 4),
  Cov(y), Den(Z), Den(y) of every system (means over topics x 100) at one eta and k = |Z*|, the
  reference rows (#1)-(#3) first, and a last row with Kendall tau between context and
  final-result metrics over the pipelines.
* :func:`table2` -- Table 2: Cov(y) and Cov(Z) "mean (sd)" over the pipelines' system means, and
  their tau, for each answerability threshold eta.
* :func:`table3` -- Table 3: tau against Cov(y) of Cov(Z), both alpha-nDCGs, Recall, MAP, nDCG,
  and of Den(Z) against Den(y), for each dataset and context size k (|Z*|, 10, 20).

The paired significance tests between systems are in :mod:`cruxflow.paper.significance`.

Input: a per-query frame with columns ``dataset``, ``eta``, ``system``, ``k`` (``"oracle"``,
``"10"``, ...), ``topic``, the context metrics of :mod:`cruxflow.metrics.scorer` (``Cov``,
``alpha_nDCG_published``, ``alpha_nDCG_crux``, ``Den``, ``R``, ``AP``, ``nDCG``) and the
final-result metrics ``Cov_y``, ``Den_y``. A metric that does not exist for a system (Cov(Z) of
direct prompting) is NaN.

Systems fall in three kinds (:func:`cruxflow.paper.labels.system_kind`): the paper's
references ``direct`` (#1), ``human`` (#2, the human summary y*) and ``oracle`` (#3, the
context Z*); our random baselines
``random`` and ``random-relevant``; and pipelines, i.e. every other name (first stages, first
stage + re-ranker, user runs). Taus, best/worst markers and Table 2's mean and sd use the
pipelines only, as in the paper. Every tau and its bootstrap CI come from
:func:`cruxflow.metrics.stats.system_correlation`; a pipeline whose mean of either metric
is undefined (NaN) is left out of that tau.

Builders return frames; the writers (:func:`to_csv`, ``table*_markdown``, ``table*_latex``) turn
a frame into text. Table 1's frame is long: one row per (dataset, system, metric), see
:func:`table1`.
"""

from cruxflow.paper.tables.common import (
    MIN_TAU_TOPICS,
    format_number,
    latex_escape,
    md_escape,
    select,
    to_csv,
    too_few_topics_note,
)
from cruxflow.paper.tables.table1 import (
    TABLE1_COLUMNS,
    table1,
    table1_latex,
    table1_markdown,
    table1_wide,
)
from cruxflow.paper.tables.table2 import (
    TABLE2_COLUMNS,
    TABLE2_PAPER_NOTE,
    table2,
    table2_latex,
    table2_markdown,
)
from cruxflow.paper.tables.table3 import table3, table3_latex, table3_markdown

__all__ = ["MIN_TAU_TOPICS", "TABLE1_COLUMNS", "TABLE2_COLUMNS", "TABLE2_PAPER_NOTE",
           "format_number", "latex_escape", "md_escape", "select", "table1", "table1_latex",
           "table1_markdown", "table1_wide", "table2", "table2_latex", "table2_markdown",
           "table3", "table3_latex", "table3_markdown", "to_csv", "too_few_topics_note"]
