"""CRUX metrics against values computed by hand (paper Table 5 and small cases)."""

import math

import ir_measures
import pandas as pd
import pytest
from oracles import libraries as ir
from oracles.crux_formulas import (
    alpha_ndcg,
    answerable_questions,
    coverage,
    density,
    ideal_order,
    select_required,
)
from scipy import stats

from cruxflow.metrics.stats import system_correlation

# Paper Table 5 (CRUX-Multi-News): three oracle passages, ten sub-questions.
P1 = [0, 0, 5, 5, 0, 0, 0, 0, 5, 0]   # answers q2, q3, q8 (0-based)
P2 = [5, 0, 0, 0, 5, 0, 5, 0, 0, 0]   # answers q0, q4, q6
P3 = [0, 0, 0, 0, 5, 5, 0, 0, 0, 5]   # answers q4, q5, q9
TABLE5 = {"p1": P1, "p2": P2, "p3": P3}
KEPT = [0, 2, 3, 4, 5, 6, 8, 9]       # q1 and q7 are answered by no passage: filtered
# The summary's vector in the paper has one rating per kept question (8 entries).
SUMMARY_ON_KEPT = [5, 0, 0, 0, 5, 5, 0, 5]


def summary_vector():
    full = [0] * 10
    for q, r in zip(KEPT, SUMMARY_ON_KEPT, strict=True):
        full[q] = r
    return full


def test_table5_filtering_keeps_eight_of_ten_questions():
    assert answerable_questions(TABLE5, 10, eta=3) == KEPT


def test_table5_required_subset_is_all_three_passages_in_greedy_order():
    # Each passage answers three open questions at first; ties go to the earlier passage.
    # After p1, p2 still adds {0, 4, 6} (3) and p3 {4, 5, 9} (3); after p2, p3 adds {5, 9}.
    assert select_required(TABLE5, KEPT, eta=3) == ["p1", "p2", "p3"]


def test_table5_summary_coverage_is_four_of_eight():
    assert coverage([summary_vector()], KEPT, eta=3) == pytest.approx(4 / 8)


def test_table5_oracle_coverage_and_partial_contexts():
    assert coverage([P1, P2, P3], KEPT) == 1.0
    assert coverage([P3, P2], KEPT) == pytest.approx(5 / 8)   # {4, 5, 9} | {0, 4, 6}
    assert coverage([P1], KEPT) == pytest.approx(3 / 8)
    assert coverage([], KEPT) == 0.0
    assert math.isnan(coverage([P1], []))


def test_eta_changes_what_counts_as_answered():
    four = [4, 0, 0]
    assert coverage([four], [0, 1, 2], eta=3) == pytest.approx(1 / 3)
    assert coverage([four], [0, 1, 2], eta=5) == 0.0


def test_select_required_stops_when_nothing_new_and_skips_redundant():
    m = {"a": [5, 5, 0], "dup": [5, 0, 0], "b": [0, 0, 4], "useless": [1, 2, 2]}
    assert select_required(m, [0, 1, 2]) == ["a", "b"]
    assert select_required(m, [0, 1, 2], eta=5) == ["a"]   # q2 is not answerable at eta 5


def test_an_unrated_judgment_minus_one_answers_nothing():
    # Free rating decoding writes -1 where the judge gave no digit: below every eta.
    m = {"a": [-1, 4, -1], "b": [3, -1, -1]}
    assert answerable_questions(m, 3, eta=0) == [0, 1]       # -1 < 0: q2 stays unanswered
    assert select_required(m, [0, 1], eta=3) == ["a", "b"]
    assert coverage([m["a"]], [0, 1], eta=3) == pytest.approx(1 / 2)
    assert coverage([[-1, -1, -1]], [0, 1], eta=0) == 0.0
    # a at rank 1 answers q1 (ng 1), b at rank 2 answers q0 (ng 1): ideal order a, b as well
    assert alpha_ndcg([m["b"], m["a"]], [m["a"], m["b"]], [0, 1]) == pytest.approx(1.0)


# alpha-nDCG by hand, alpha = 0.5, log2 discounts:
#   Z* ideal = [p1, p2, p3]: ng = 3, 3, 2.5 (q4 seen once before p3)
#   IDCG = 3/1 + 3/log2(3) + 2.5/2
IDCG = 3 + 3 / math.log2(3) + 2.5 / 2


def test_alpha_ndcg_of_the_oracle_in_ideal_order_is_one():
    assert ideal_order([P1, P2, P3], KEPT) == [0, 1, 2]
    assert alpha_ndcg([P1, P2, P3], [P1, P2, P3], KEPT) == pytest.approx(1.0)


def test_alpha_ndcg_of_a_partial_context_by_hand():
    # [p3, p2]: ng = 3, then p2 answers q0, q6 (new) and q4 (seen once): 1 + 1 + 0.5
    expected = (3 + 2.5 / math.log2(3)) / IDCG
    assert alpha_ndcg([P3, P2], [P1, P2, P3], KEPT) == pytest.approx(expected)
    assert expected == pytest.approx(0.745154, abs=1e-6)   # 4.57732 / 6.14279


def test_alpha_ndcg_alpha_zero_ignores_redundancy_and_ideal_is_reordered():
    # With alpha = 0 repeated answers count fully; the ideal puts the largest gain first.
    oracle = [[5, 0, 0], [5, 5, 5]]
    assert ideal_order(oracle, [0, 1, 2], alpha=0.0) == [1, 0]
    assert alpha_ndcg([[5, 5, 5]], oracle, [0, 1, 2], alpha=0.0) == pytest.approx(
        3 / (3 + 1 / math.log2(3)))


def test_alpha_ndcg_equals_ndeval_when_the_ideals_coincide():
    # ndeval takes its ideal over all judged passages; with P* = P** the two definitions meet.
    div = ir.diversity_frame(
        (("t", str(q), pid, 1) for pid, r in TABLE5.items() for q in KEPT if r[q] >= 3))
    ndeval = ir.per_query_ndeval({"t": ["p3", "p2"]}, div, alpha=0.5)["t"]
    assert ndeval == pytest.approx(alpha_ndcg([P3, P2], [P1, P2, P3], KEPT), abs=1e-4)


def test_density_by_hand():
    # Z = [p3, p2] with 80 + 120 tokens covers 5/8; Z* (300 tokens) covers all.
    assert density(5 / 8, 200, 1.0, 300, weight=0.5) == pytest.approx(math.sqrt(0.9375))
    assert density(5 / 8, 200, 1.0, 300, weight=1.0) == pytest.approx(0.9375)
    assert density(1.0, 150, 1.0, 300) == pytest.approx(math.sqrt(2))   # denser than Z*
    assert density(0.0, 200, 1.0, 300) == 0.0
    assert math.isnan(density(0.5, 200, 0.0, 300))


# --- ir_measures: our wrapper must return exactly what ir_measures computes ------------------

QRELS = {"q1": {"d1": 2, "d2": 1, "d3": 1}, "q2": {"d9": 1}}
RUN = {"q1": ["d2", "x", "d1"], "q2": ["x", "y"]}


def test_ir_wrapper_matches_ir_measures_directly():
    ours = ir.per_query(RUN, QRELS)
    qrels = [ir_measures.Qrel(q, d, r) for q, ds in QRELS.items() for d, r in ds.items()]
    run = [ir_measures.ScoredDoc(q, d, float(len(ds) - i))
           for q, ds in RUN.items() for i, d in enumerate(ds)]
    for name, measure in ir.DEFAULT_MEASURES.items():
        direct = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
        for q in RUN:
            assert ours[q][name] == pytest.approx(direct.get(q, 0.0)), (name, q)
    # and the values are the textbook ones for q1
    assert ours["q1"]["R"] == pytest.approx(2 / 3)
    assert ours["q1"]["R(rel=2)"] == pytest.approx(1.0)
    assert ours["q1"]["AP"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert ours["q2"] == dict.fromkeys(ir.DEFAULT_MEASURES, 0.0)


# --- alpha-nDCG as published (ndeval, ideal over P*) against Eq. 4 (ideal over Z*) ------------

# P* = Table 5's three passages and a redundant p4 that answers q0 and q2, both already
# answered by P** = [p1, p2, p3] (select_required never picks it).
P4 = [4, 0, 3, 0, 0, 0, 0, 0, 0, 0]
P_STAR = {**TABLE5, "p4": P4}


def _diversity(matrix):
    return ir.diversity_frame(("t", str(q), pid, 1) for pid, r in matrix.items()
                              for q in KEPT if r[q] >= 3)


def test_published_alpha_ndcg_takes_its_ideal_over_all_of_p_star():
    assert select_required(P_STAR, KEPT) == ["p1", "p2", "p3"]
    # ndeval's greedy ideal over P*: p1, p2, p3 (ng 3, 3, 2.5 as in IDCG above), then p4 with
    # q0 and q2 each seen once: ng = 0.5 + 0.5 = 1 at rank 4. Eq. 4's ideal stops at |Z*| = 3.
    ideal_p_star = IDCG + 1 / math.log2(5)            # 6.14279 + 0.43068 = 6.57347
    div = _diversity(P_STAR)
    oracle = ir.per_query_ndeval({"t": ["p1", "p2", "p3"]}, div)["t"]
    assert oracle == pytest.approx(IDCG / ideal_p_star, abs=1e-4)       # 0.93448
    assert oracle == pytest.approx(0.93448, abs=1e-4)
    assert alpha_ndcg([P1, P2, P3], [P1, P2, P3], KEPT) == pytest.approx(1.0)
    # [p3, p2]: DCG 3 + 2.5 / log2(3) = 4.57732 (see the Eq. 4 case above)
    partial = ir.per_query_ndeval({"t": ["p3", "p2"]}, div)["t"]
    assert partial == pytest.approx(4.57732 / 6.57347, abs=1e-4)        # 0.69634
    assert alpha_ndcg([P3, P2], [P1, P2, P3], KEPT) == pytest.approx(4.57732 / 6.14279,
                                                                     abs=1e-5)


def test_published_alpha_ndcg_counts_the_first_twenty_passages():
    div = ir.diversity_frame([("t", "0", "a", 1), ("t", "1", "b", 1)])
    filler = [f"x{i}" for i in range(19)]
    # "a" at rank 20 (1 / log2(21)) of an ideal a, b (1 + 1 / log2(3)); at rank 21 unseen
    at_20 = ir.per_query_ndeval({"t": [*filler, "a"]}, div)["t"]
    assert at_20 == pytest.approx((1 / math.log2(21)) / (1 + 1 / math.log2(3)), abs=1e-4)
    assert ir.per_query_ndeval({"t": [*filler, "y", "a"]}, div)["t"] == 0.0


def test_ndeval_orders_equal_scores_by_passage_id():
    # The CRUX authors' code scored every context passage 3 (crux/evaluation/prejudge on their
    # master branch); ndeval then reads a context in ascending passage-id order, not rank order.
    div = _diversity(P_STAR)
    equal = pd.DataFrame({"query_id": "t", "doc_id": ["p3", "p4", "p1"], "score": 3.0})
    measure = ir_measures.alpha_nDCG(alpha=0.5) @ 20
    value = next(ir_measures.iter_calc([measure], div, equal)).value
    by_id = ir.per_query_ndeval({"t": ["p1", "p3", "p4"]}, div)["t"]
    as_ranked = ir.per_query_ndeval({"t": ["p3", "p4", "p1"]}, div)["t"]
    # In id order p1, p3, p4: p1 answers q2 q3 q8 (ng 3); p3 q4 q5 q9 (3); p4 q0 (new, 1) and
    # q2 (seen once, 0.5): ng 1.5. In rank order p3, p4, p1: ng 3, 2, 2.5 (5.5119 / 6.57347).
    assert by_id == pytest.approx((3 + 3 / math.log2(3) + 1.5 / 2) / 6.57347, abs=1e-4)
    assert value == pytest.approx(by_id, abs=1e-9)
    assert as_ranked != pytest.approx(by_id, abs=1e-3)


def test_diversity_qrels_numbering_and_zero_lines_leave_ndeval_unchanged():
    # Ours: subtopic = 0-based question index, only the lines with relevance 1. The authors'
    # (augmentation/create_ranking_data.py): subtopics from 1, and a 0 line for every other
    # (passage, question) pair. ndeval's alpha-nDCG is the same for both.
    ours = _diversity(P_STAR)
    theirs = ir.diversity_frame(("t", str(q + 1), pid, int(r[q] >= 3))
                                for pid, r in P_STAR.items() for q in range(10))
    for ctx in (["p3", "p2"], ["p4", "x", "p1"], ["p2", "p1", "p4", "p3"]):
        assert ir.per_query_ndeval({"t": ctx}, theirs)["t"] == pytest.approx(
            ir.per_query_ndeval({"t": ctx}, ours)["t"], abs=1e-12)


# --- correlations --------------------------------------------------------------------------

def per_query_frame():
    # three systems, four topics; system means: x = [1, 2, 3], y = [1, 3, 2]
    rows = []
    for t, noise in enumerate([-0.1, 0.1, -0.05, 0.05]):
        for s, (x, y) in {"A": (1, 1), "B": (2, 3), "C": (3, 2)}.items():
            rows.append({"topic": f"t{t}", "system": s, "x": x + noise, "y": y - noise})
    return pd.DataFrame(rows)


def test_system_kendall_tau_is_scipys_on_system_means():
    c = system_correlation(per_query_frame(), "x", "y", n_resamples=200, seed=1)
    assert c.value == pytest.approx(1 / 3)   # one discordant pair of three
    assert c.value == pytest.approx(stats.kendalltau([1, 2, 3], [1, 3, 2]).statistic)
    assert c.n_systems == 3 and c.n_topics == 4
    assert c.low <= c.value <= c.high
    again = system_correlation(per_query_frame(), "x", "y", n_resamples=200, seed=1)
    assert (again.low, again.high) == (c.low, c.high)   # seeded


def test_system_spearman():
    c = system_correlation(per_query_frame(), "x", "y", method="spearman", n_resamples=0)
    assert c.value == pytest.approx(0.5)
    assert c.low is None and c.high is None   # no resamples: undefined
