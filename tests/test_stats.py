"""metrics.stats: one convention (undefined is None) over scipy, statsmodels and scikit-learn."""

import math

import numpy as np
import pytest

from cruxflow.metrics import stats


def test_means_and_undefined():
    assert stats.mean_of_defined([1.0, None, float("nan"), 3.0]) == 2.0
    assert stats.mean_of_defined([None, float("nan")]) is None
    assert math.isnan(stats.nan_if_none(None)) and stats.nan_if_none(0.5) == 0.5


def test_rank_correlation_by_hand():
    # x = 1,2,3,4; y = 1,3,2,4: 5 concordant, 1 discordant pair -> tau = 4/6
    res = stats.rank_correlation([1, 2, 3, 4], [1, 3, 2, 4])
    assert res.value == pytest.approx(4 / 6) and res.n == 4
    # Spearman: d = 0,1,1,0 -> rho = 1 - 6*2 / (4*15) = 0.8
    assert stats.rank_correlation([1, 2, 3, 4], [1, 3, 2, 4], "spearman").value == \
        pytest.approx(0.8)
    # undefined: a constant side, or fewer than two defined pairs (None/NaN pairs dropped)
    assert stats.rank_correlation([1, 2, 3], [5, 5, 5]).value is None
    assert stats.rank_correlation([1, None, float("nan")], [1, 2, 3]).value is None


def test_kappas_by_hand():
    # a = 1,1,0,0; b = 1,0,0,0: p_o = 3/4, p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2 -> kappa 1/2
    assert stats.cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert stats.cohen_kappa([1, 1], [1, 1]) is None            # chance agreement 1
    # Fleiss: 2 items x 3 raters, item 1 all "1", item 2 two "0" and one "1":
    # P_1 = 1, P_2 = (2*1 + 0) / (3*2) = 1/3, P_bar = 2/3; p_0 = 2/6, p_1 = 4/6,
    # P_e = 1/9 + 4/9 = 5/9 -> kappa = (2/3 - 5/9) / (1 - 5/9) = 1/4
    assert stats.fleiss_kappa(np.array([[1, 1, 1], [0, 0, 1]]), 2) == pytest.approx(0.25)
    assert stats.fleiss_kappa(np.array([[1, 1], [1, 1]]), 2) is None


def test_paired_tests_by_hand():
    # differences 1, 1, 1, -1: mean 0.5, sd 1 -> t = 0.5 / (1/2) = 1 with 3 df, p = 0.391
    x, y = [2.0, 3.0, 4.0, 1.0], [1.0, 2.0, 3.0, 2.0]
    assert stats.paired_t(x, y) == pytest.approx(0.3910022, abs=1e-6)
    assert stats.paired_t(x, x) == 1.0 and stats.paired_t([1.0], [0.0]) is None
    # exact sign-flip test: 16 sign patterns, |mean| >= 0.5 in 10 of them -> p = 10/16
    assert stats.paired_randomization(x, y) == pytest.approx(10 / 16)
    assert stats.paired_randomization([], []) is None
    assert stats.wilcoxon([0.0, 0.0]) == 1.0 and stats.wilcoxon([]) is None


def test_benjamini_hochberg_by_hand():
    # sorted p = .01, .02, .04 with m = 3: .03, .03, .04; None stays None
    assert stats.benjamini_hochberg([0.04, None, 0.01, 0.02]) == pytest.approx(
        [0.04, None, 0.03, 0.03])


def test_holm_equals_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.04, 0.5, 0.0001]
    assert stats.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert stats.holm([0.02, None, float("nan"), 0.5]) == [0.04, None, None, 0.5]
    assert stats.holm([]) == []
