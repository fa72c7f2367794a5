"""Statistics shared by every report: means, rank correlations (Kendall's tau, Spearman's rho,
tau_AP), agreement coefficients (Cohen's and Fleiss' kappa, Krippendorff's alpha), bootstrap
intervals over topics, and the paired tests between runs with their multiple-testing
corrections. This module is their one home: the paper tables, ``meta-eval``, ``evaluate``,
``crux-eval``, the workflow's significance table and ``cruxflow.compare`` call it.

**Undefined is ``None``.** A statistic that has no value (a mean of nothing, a correlation with
fewer than two finite pairs or a constant side, a kappa whose chance agreement is 1, a paired
test over fewer than two topics) is returned as ``None``, never as NaN and never silently
dropped; the caller decides whether to leave it out and reports how many it left out. Code that
puts statistics into a pandas frame turns ``None`` into NaN there (:func:`nan_if_none`).

**One paired-test policy.** :data:`POLICY` (declared in :mod:`cruxflow.metrics.policy`) names
the default paired test, its resamples and seed, and the multiple-testing correction; every door
takes its defaults from it (docs/evaluate.md, "Several runs at once").

The package is cut by what a statistic is: :mod:`.values` (the undefined convention),
:mod:`.correlation` (rank correlations, tau_AP, system-level agreement), :mod:`.bootstrap`
(intervals over topics), :mod:`.kappa` (agreement coefficients) and :mod:`.paired` (the paired
tests and their corrections); this module gives them one import path.
"""

from cruxflow.metrics.policy import ALTERNATIVES, CORRECTIONS, POLICY, TESTS, Policy
from cruxflow.metrics.stats.bootstrap import Interval, mean_interval, topic_bootstrap
from cruxflow.metrics.stats.correlation import (
    METHODS,
    Correlation,
    RankCorrelation,
    kendall_tau,
    rank_correlation,
    system_correlation,
    tau_ap,
)
from cruxflow.metrics.stats.kappa import cohen_kappa, fleiss_kappa, krippendorff_alpha
from cruxflow.metrics.stats.paired import (
    SIGN_BLOCK,
    adjust,
    benjamini_hochberg,
    holm,
    paired_p_values,
    pairwise,
    pairwise_tests,
    randomization_p_values,
    t_test_p_value,
    wilcoxon_p_value,
)
from cruxflow.metrics.stats.values import defined, is_defined, mean_of_defined, nan_if_none

__all__ = [
    "ALTERNATIVES", "CORRECTIONS", "METHODS", "POLICY", "SIGN_BLOCK", "TESTS", "Correlation",
    "Interval", "Policy", "RankCorrelation", "adjust", "benjamini_hochberg",
    "cohen_kappa", "defined", "fleiss_kappa", "holm", "is_defined", "kendall_tau",
    "krippendorff_alpha", "mean_interval", "mean_of_defined", "nan_if_none", "paired_p_values",
    "pairwise", "pairwise_tests", "randomization_p_values", "rank_correlation",
    "system_correlation", "t_test_p_value", "tau_ap", "topic_bootstrap", "wilcoxon_p_value",
]
