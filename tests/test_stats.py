"""metrics.stats: one convention (undefined is None) over scipy, statsmodels and scikit-learn;
the paired tests, corrections, tau, tau_AP and bootstrap checked against those libraries and
against values worked out by hand in the comments."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sp

from cruxflow.metrics import stats
from cruxflow.metrics.policy import POLICY, Policy
from cruxflow.metrics.stats import paired


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
    # linear weights on 0..2: a = 0,1,2, b = 0,2,2: observed mean |i-j| = 1/3; expected over
    # every pair of marginals: sum |a_i - b_j| / 9 = (2+2 + 1+1+1 + 0+0+0... ) -> by definition
    a, b = [0, 1, 2], [0, 2, 2]
    observed = sum(abs(x - y) for x, y in zip(a, b, strict=True)) / 3
    expected = sum(abs(x - y) for x in a for y in b) / 9
    assert stats.cohen_kappa(a, b, weights="linear") == pytest.approx(1 - observed / expected)
    # Fleiss: 2 items x 3 raters, item 1 all "1", item 2 two "0" and one "1":
    # P_1 = 1, P_2 = (2*1 + 0) / (3*2) = 1/3, P_bar = 2/3; p_0 = 2/6, p_1 = 4/6,
    # P_e = 1/9 + 4/9 = 5/9 -> kappa = (2/3 - 5/9) / (1 - 5/9) = 1/4
    assert stats.fleiss_kappa(np.array([[1, 1, 1], [0, 0, 1]]), 2) == pytest.approx(0.25)
    assert stats.fleiss_kappa(np.array([[1, 1], [1, 1]]), 2) is None


# --- tau and tau_AP -----------------------------------------------------------------------------

def tau_ap_by_enumeration(reference, estimate):
    """tau_AP from its definition, averaged over every way of breaking the ties of both
    rankings: an independent route to the closed form in stats.tau_ap."""
    n = len(reference)
    values = []
    for ref_order in itertools.permutations(range(n)):
        # a strict reference ranking consistent with the scores (ties broken by ref_order)
        if any(reference[ref_order[i]] < reference[ref_order[i + 1]] for i in range(n - 1)):
            continue
        above = {(ref_order[i], ref_order[j]) for i in range(n) for j in range(i + 1, n)}
        for est_order in itertools.permutations(range(n)):
            if any(estimate[est_order[i]] < estimate[est_order[i + 1]] for i in range(n - 1)):
                continue
            total = sum(sum((est_order[j], est_order[i]) in above for j in range(i)) / i
                        for i in range(1, n))
            values.append(2 * total / (n - 1) - 1)
    return sum(values) / len(values)


def test_tau_ap_by_hand_without_ties():
    ref = [4, 3, 2, 1]                                   # A > B > C > D
    assert stats.tau_ap(ref, [4, 3, 2, 1]) == pytest.approx(1.0)
    assert stats.tau_ap(ref, [1, 2, 3, 4]) == pytest.approx(-1.0)
    # estimate A, C, B, D: C(2) = 1/1, C(3) = 1/2 (A above B, C not), C(4) = 3/3
    assert stats.tau_ap(ref, [4, 2, 3, 1]) == pytest.approx(2 / 3 * 2.5 - 1)
    # estimate A, B, D, C: C(2) = 1, C(3) = 1, C(4) = 2/3; a swap at the bottom costs less
    assert stats.tau_ap(ref, [4, 3, 1, 2]) == pytest.approx(2 / 3 * (2 + 2 / 3) - 1)
    # Kendall's tau does not tell the two swaps apart
    assert sp.kendalltau(ref, [4, 2, 3, 1]).statistic == pytest.approx(
        sp.kendalltau(ref, [4, 3, 1, 2]).statistic)


def test_tau_and_tau_ap_of_the_issues_three_runs():
    # rand, good, bad: the humans' means rank bad > good > rand, the judge's good > rand > bad
    human, judge = [0.2, 0.5, 0.7], [0.4, 0.6, 0.1]
    # pairs: (rand, good) concordant, (rand, bad) and (good, bad) discordant: tau = -1/3
    assert stats.kendall_tau(human, judge) == pytest.approx(-1 / 3)
    assert stats.kendall_tau(human, judge) == pytest.approx(sp.kendalltau(human, judge).statistic)
    # judge order good, rand, bad; C(2) (rand): good above it in the humans' too -> 1/1;
    # C(3) (bad): the humans put it above both -> 0/2; tau_AP = 2/2 * (1 + 0) - 1 = 0
    assert stats.tau_ap(human, judge) == pytest.approx(0.0)


def test_two_runs_and_all_tied():
    # two runs in the same order on both sides: +1, reversed: -1 (never -1 for agreement)
    assert stats.kendall_tau([0.1, 0.3], [0.2, 0.9]) == pytest.approx(1.0)
    assert stats.tau_ap([0.1, 0.3], [0.2, 0.9]) == pytest.approx(1.0)
    assert stats.kendall_tau([0.1, 0.3], [0.9, 0.2]) == pytest.approx(-1.0)
    assert stats.tau_ap([0.1, 0.3], [0.9, 0.2]) == pytest.approx(-1.0)
    # every run tied on one side: no ranking, undefined (not -1), as scipy says NaN
    for ref, est in (([1.0, 1.0, 1.0], [0.2, 0.5, 0.3]), ([0.2, 0.5, 0.3], [1.0, 1.0, 1.0]),
                     ([1.0, 1.0], [1.0, 1.0])):
        assert stats.tau_ap(ref, est) is None and stats.kendall_tau(ref, est) is None
        assert math.isnan(sp.kendalltau(ref, est).statistic)
    assert stats.tau_ap([1.0], [2.0]) is None


def test_tau_ap_with_ties_by_hand_and_by_enumeration():
    # estimate ties A and B above C, reference A > B > C: breaking the tie A, B gives 1;
    # B, A gives C(2) = 0 (the humans put A above B), C(3) = 2/2: 2/2 * 1 - 1 = 0. Mean 1/2.
    assert stats.tau_ap([3, 2, 1], [2, 2, 1]) == pytest.approx(0.5)
    # reference ties A and B, estimate A > B > C: C(2) = 1/2 (a coin flip), C(3) = 2/2:
    # 2/2 * (1/2 + 1) - 1 = 1/2
    assert stats.tau_ap([2, 2, 1], [3, 2, 1]) == pytest.approx(0.5)
    # Kendall's tau-b with the same ties: scipy
    assert stats.kendall_tau([3, 2, 1], [2, 2, 1]) == pytest.approx(
        sp.kendalltau([3, 2, 1], [2, 2, 1]).statistic)
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(2, 6))
        ref = rng.integers(0, 3, n).tolist()
        est = rng.integers(0, 3, n).tolist()
        if len(set(ref)) == 1 or len(set(est)) == 1:
            assert stats.tau_ap(ref, est) is None
            continue
        assert stats.tau_ap(ref, est) == pytest.approx(tau_ap_by_enumeration(ref, est))
        if len(set(ref)) == n and len(set(est)) == n:   # no ties: Yilmaz et al. as such
            assert stats.tau_ap(ref, est) == pytest.approx(tau_ap_by_enumeration(ref, est))


# --- bootstrap ----------------------------------------------------------------------------------

def test_topic_bootstrap_is_scipys_where_every_resample_is_defined():
    rng = np.random.default_rng(2)
    values = rng.random(15)
    mine = stats.topic_bootstrap([values[:, None]], lambda m: float(m[0]), n_resamples=500,
                                 seed=4)
    ref = sp.bootstrap((values,), np.mean, n_resamples=500, method="percentile",
                       rng=np.random.default_rng(4)).confidence_interval
    assert (mine.low, mine.high) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert (mine.topics, mine.resamples, mine.undefined) == (15, 500, 0)
    assert mine.describe() == ("95% percentile bootstrap, 500 resamples of the 15 topics "
                               "with replacement")


def test_topic_bootstrap_counts_what_it_leaves_out():
    # three systems over two topics; on topic 0 every system ties: a resample drawing topic 0
    # twice (probability 1/4) has no ranking, and is counted, not used
    table = np.array([[0.5, 0.5, 0.5], [0.1, 0.2, 0.3]])
    res = stats.topic_bootstrap([table, table], stats.kendall_tau, n_resamples=400, seed=0)
    assert 60 < res.undefined < 140 and res.low == res.high == 1.0
    none = stats.topic_bootstrap([table[:1], table[:1]], stats.kendall_tau, n_resamples=10)
    assert none.low is None and none.resamples == 0          # one topic: nothing to resample


def test_system_kendall_tau_interval_matches_scipys_bootstrap():
    import pandas as pd

    rng = np.random.default_rng(3)
    recs = [{"topic": f"t{t}", "system": s, "x": rng.random() + i, "y": rng.random() + i * i}
            for t in range(8) for i, s in enumerate("abcd")]
    c = stats.system_correlation(pd.DataFrame(recs), "x", "y", n_resamples=300, seed=2)
    x = pd.DataFrame(recs).pivot(index="topic", columns="system", values="x").to_numpy()
    y = pd.DataFrame(recs).pivot(index="topic", columns="system", values="y").to_numpy()
    ref = sp.bootstrap((np.arange(8),), lambda i: sp.kendalltau(x[i].mean(0),
                                                                 y[i].mean(0)).statistic,
                       n_resamples=300, method="percentile", vectorized=False,
                       rng=np.random.default_rng(2)).confidence_interval
    assert (c.low, c.high) == pytest.approx((ref.low, ref.high))


# --- paired tests -------------------------------------------------------------------------------

def scipy_randomization(x, y, alternative="two-sided", n_resamples=9999):
    return sp.permutation_test((x, y), lambda a, b, axis: np.mean(a - b, axis=axis),
                               permutation_type="samples", vectorized=True,
                               n_resamples=n_resamples, alternative=alternative).pvalue


def test_exact_randomization_test_equals_scipys():
    rng = np.random.default_rng(3)
    checked = 0
    for trial in range(150):
        n = int(rng.integers(2, 12))
        scale = (3, 10, None)[trial % 3]     # thirds and tenths (many ties) or reals
        if scale:
            x, y = rng.integers(0, scale + 1, n) / scale, rng.integers(0, scale + 1, n) / scale
        else:
            x, y = rng.random(n), rng.random(n)
        d = x - y
        if abs(d.sum()) <= 100 * np.finfo(float).eps * np.abs(d).sum():
            continue     # the observed mean is 0 up to rounding: see the next test
        for alternative in ("two-sided", "less", "greater"):
            mine = stats.randomization_p_values([d], alternative=alternative)[0]
            assert mine == scipy_randomization(x, y, alternative), (x, y, alternative)
            checked += 1
    assert checked > 300


def test_randomization_by_hand_and_where_scipy_rounds():
    # differences 1, 1, 1, -1: 16 sign patterns, |mean| >= 0.5 in 10 of them -> p = 10/16
    x, y = [2.0, 3.0, 4.0, 1.0], [1.0, 2.0, 3.0, 2.0]
    assert stats.paired_p_values([(x, y)]) == [pytest.approx(10 / 16)]
    assert stats.randomization_p_values([np.array([0.5])]) == [None]
    # x - y = 1/3 - 0 and 2/3 - 1: 1/3 and -1/3 in exact arithmetic, mean 0; in floats the sum
    # is -5.6e-17, so scipy (its tolerance scaled by that mean) does not count the flipped
    # pattern (+5.6e-17) as reaching it. By hand: of the 4 patterns, means -1/3, 0, 0, 1/3:
    # "less" counts the three <= 0, p = 3/4; two-sided 2 * min(3/4, 3/4) capped: 1.
    x, y = np.array([1 / 3, 2 / 3]), np.array([0.0, 1.0])
    d = x - y
    assert d.sum() < 0
    assert stats.randomization_p_values([d], alternative="less") == [0.75]
    assert stats.randomization_p_values([d]) == [1.0]
    assert scipy_randomization(x, y, "less") == 0.5           # scipy's rounding, not ours


def test_sampled_randomization_is_seeded_shared_and_independent_of_the_call(monkeypatch):
    rng = np.random.default_rng(8)
    diffs = [rng.normal(0.02, 0.2, 300), rng.normal(0, 0.2, 40), rng.normal(0.05, 0.3, 1000)]
    first = stats.randomization_p_values(diffs, resamples=2500, seed=1)
    assert first == stats.randomization_p_values(diffs, resamples=2500, seed=1)
    assert first != stats.randomization_p_values(diffs, resamples=2500, seed=2)
    # a test's p-value depends on its own differences only, not on the others of the call
    # (the signs of the first n topic positions do not depend on the longest test) ...
    assert stats.randomization_p_values(diffs[1:2], resamples=2500, seed=1) == first[1:2]
    # ... nor on how many tests are held at once
    monkeypatch.setattr(paired, "_MAX_CELLS", 1000)
    assert stats.randomization_p_values(diffs, resamples=2500, seed=1) == first
    # a sampled p is (count + 1) / (R + 1); near scipy's, whose draws differ (Monte Carlo
    # error of a p near 0.3 with 2,500 draws: about 0.01)
    for d, p in zip(diffs, first, strict=True):
        assert p * 2501 / 2 == pytest.approx(round(p * 2501 / 2), abs=1e-6) or p == 1.0
        assert p == pytest.approx(scipy_randomization(d, np.zeros_like(d), n_resamples=2500),
                                  abs=0.04)
    # no resample reaches an all-positive difference: p = 2 * 1 / (R + 1)
    assert stats.randomization_p_values([np.full(50, 0.1)], resamples=999) == [0.002]


def test_sampled_sums_are_exact_and_shared_columns_give_the_differences_p_values(monkeypatch):
    from fractions import Fraction

    # a vector split into integer parts is the vector exactly (checked in rationals), and a
    # value with bits below the parts' last one is not split (its pairs go the other route)
    rng = np.random.default_rng(11)
    v = np.concatenate((rng.random(200), rng.integers(0, 11, 50) / 10, [0.0, 1 - 2**-52]))
    parts = paired._integer_parts(v, 13, 0)
    assert parts is not None
    e, f = 51 - 13, 51 - 13
    for value, hi, lo in zip(v.tolist(), *(p.tolist() for p in parts), strict=True):
        assert hi == int(hi) and lo == int(lo) and abs(hi) <= 2 ** (51 - 13)
        assert Fraction(int(hi), 2 ** e) + Fraction(int(lo), 2 ** (e + f)) == Fraction(value)
    assert paired._integer_parts(np.array([0.5, 2.0 ** -80]), 13, 0) is None
    # six runs over 600 topics (tenths: many ties; one pair nearly equal; one run with a
    # tiny value that cannot be split): the p-values of pairs that share column objects are
    # those of their vectors of differences, and of the same pairs given as copies
    runs = [rng.integers(0, 11, 600) / 10 for _ in range(6)]
    runs[1] = runs[0].copy()
    runs[1][:4] += 0.1
    runs[5][7] = 2.0 ** -80
    runs[3] = np.minimum(runs[3] + 0.1, 1.0)      # better than the others: small p-values
    pairs = [(runs[i], runs[j]) for i in range(6) for j in range(i + 1, 6)]
    shared = stats.paired_p_values(pairs)
    assert shared == stats.paired_p_values([(x.copy(), y.copy()) for x, y in pairs])
    assert shared == stats.randomization_p_values([x - y for x, y in pairs])
    assert len(set(shared)) > 3 and min(shared) < 0.01 < max(shared)
    # ... and of the vectors of differences multiplied by the signs in floats (no split)
    monkeypatch.setattr(paired, "_integer_parts", lambda *_: None)
    assert shared == stats.paired_p_values(pairs)


def test_t_test_and_wilcoxon_equal_scipy_and_statsmodels():
    from statsmodels.stats.weightstats import DescrStatsW

    # differences 1, 1, 1, -1: mean 0.5, sd 1 -> t = 0.5 / (1/2) = 1 with 3 df, p = 0.391
    x, y = [2.0, 3.0, 4.0, 1.0], [1.0, 2.0, 3.0, 2.0]
    assert stats.t_test_p_value(x, y) == pytest.approx(0.3910022, abs=1e-6)
    rng = np.random.default_rng(4)
    for n in (5, 12, 60):
        x, y = rng.random(n), rng.random(n) * 0.9
        p = stats.paired_p_values([(x, y)], Policy(test="t-test"))[0]
        assert p == sp.ttest_rel(x, y).pvalue
        assert p == pytest.approx(DescrStatsW(x - y).ttest_mean()[1], rel=1e-12)
        w = stats.paired_p_values([(x, y)], Policy(test="wilcoxon"))[0]
        assert w == sp.wilcoxon(x - y, zero_method="wilcox").pvalue
    for test in ("t-test", "wilcoxon", "randomization"):
        policy = Policy(test=test)
        assert stats.paired_p_values([([0.2, 0.4], [0.2, 0.4])], policy) == [1.0]
        assert stats.paired_p_values([([0.2], [0.1])], policy) == [None]


def test_corrections_equal_statsmodels_and_hand_values():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.04, 0.5, 0.0001]
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")):
        assert stats.adjust(p, ours) == pytest.approx(list(multipletests(p, method=theirs)[1]),
                                                      rel=1e-15)
    assert stats.adjust(p, "bh") == pytest.approx(list(sp.false_discovery_control(p)))
    assert stats.adjust(p, "none") == p
    # by hand: sorted p = .01, .02, .04 with m = 3; BH: .03, .03, .04; Holm: .03, .04, .04;
    # Bonferroni: .03, .06, .12. None (undefined) stays None and is not in the family
    raw = [0.04, None, 0.01, 0.02]
    assert stats.adjust(raw, "bh") == pytest.approx([0.04, None, 0.03, 0.03])
    assert stats.adjust(raw, "holm") == pytest.approx([0.04, None, 0.03, 0.04])
    assert stats.adjust(raw, "bonferroni") == pytest.approx([0.12, None, 0.03, 0.06])
    assert stats.adjust([0.02, None, float("nan"), 0.5], "holm") == [0.04, None, None, 0.5]
    assert stats.adjust([], "holm") == []
    with pytest.raises(ValueError, match="unknown correction 'fdr'"):
        stats.adjust(p, "fdr")


def test_pairwise_tests_by_hand():
    # three systems over four topics; a - b = .1, .1, .1, .2: mean .125; exact sign flips
    # (16 <= 9,999): only all-plus and all-minus reach |mean| >= .125 -> p = 2/16
    a = {"t1": 0.5, "t2": 0.6, "t3": 0.7, "t4": 0.8}
    b = {"t1": 0.4, "t2": 0.5, "t3": 0.6, "t4": 0.6}
    c = {"t1": 0.1, "t2": 0.6, "t3": 0.2, "t4": None}       # t4 undefined for c
    per_topic = {name: {t: {"m": v} for t, v in vals.items()}
                 for name, vals in (("a", a), ("b", b), ("c", c))}
    rows = stats.pairwise(per_topic, ["m"])
    assert [(r["a"], r["b"], r["topics"]) for r in rows] == [("a", "b", 4), ("a", "c", 3),
                                                             ("b", "c", 3)]
    assert rows[0]["p"] == pytest.approx(2 / 16) and rows[0]["diff"] == pytest.approx(0.125)
    assert rows[1]["mean_b"] == pytest.approx(0.3)             # over t1-t3 only
    assert {(r["test"], r["correction"]) for r in rows} == {("randomization", "holm")}
    assert [r["p_adjusted"] for r in rows] == pytest.approx(
        stats.adjust([r["p"] for r in rows], "holm"))
    # the order in which topics come does not change a p-value (sorted before the signs)
    shuffled = {name: dict(reversed(list(v.items()))) for name, v in per_topic.items()}
    again = stats.pairwise(shuffled, ["m"], Policy(resamples=5, seed=3))
    assert again == stats.pairwise(per_topic, ["m"], Policy(resamples=5, seed=3))


def test_policy_is_declared_once_and_checked():
    assert (POLICY.test, POLICY.correction, POLICY.resamples, POLICY.seed,
            POLICY.alternative) == ("randomization", "holm", 9999, 0, "two-sided")
    assert stats.POLICY is POLICY
    assert POLICY.with_(test="t-test", seed=None).seed == 0
    assert POLICY.describe() == (
        "two-sided paired randomization test (sign flips) of the mean difference (9,999 "
        "resamples, exact when 2^topics <= 9,999; seed 0); p-values Holm-adjusted over the "
        "pairs of each measure")
    assert Policy(correction="none").adjusted_header == "p (not adjusted)"
    for bad in ({"test": "ttest"}, {"correction": "fdr"}, {"resamples": 0},
                {"alternative": "both"}):
        with pytest.raises(ValueError):
            Policy(**bad)
