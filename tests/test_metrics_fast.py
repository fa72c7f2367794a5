"""The array route of ContextScorer (metrics.batch) against the per-topic reference functions.

The reference for every column is the route the scorer took before issue 19, one topic at a
time: crux.coverage / alpha_ndcg / density on the topic's rating rows, ir_measures.iter_calc
on the whole qrels for Recall / MAP / nDCG, and pyndeval (through ir.per_query_ndeval and the
diversity qrels) for the published alpha-nDCG. Random cases from fixed numpy seeds: ratings
with -1s and 0s and many ties, topics without rated passages or without answerable
questions, runs with passages of other topics and passages nobody rated, topics missing from
the run or with an empty list, k = |Z*|, k = 1 and k longer than the lists.
"""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pytest
from oracles import libraries as ir
from oracles.crux_formulas import alpha_ndcg, coverage, density

from cruxflow.data.io import RunRow
from cruxflow.data.model import Dataset, Passage, Topic
from cruxflow.metrics import judged as batch
from cruxflow.metrics.judgments import (
    derive,
    diversity_rows,
    relevance_grades,
    relevance_qrels,
)
from cruxflow.metrics.options import DEFAULTS, MetricOptions
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.tokens import regex_token_count

SIZES = ["oracle", 1, 3, 10, 20, 40]


def random_case(seed: int, n_topics: int = 16, max_passages: int = 30):
    rng = np.random.default_rng(seed)
    topics, passages, ratings = {}, {}, {}
    for t in range(n_topics):
        tid = f"t{t}"
        n_q = int(rng.integers(1, 13))
        topics[tid] = Topic(tid, "summary", [f"{tid}:0"], query="q",
                            questions=[f"q{i}?" for i in range(n_q)])
        # few distinct ratings: many passages answer the same questions (ties)
        levels = rng.choice([-1, 0, 1, 2, 3, 4, 5], size=int(rng.integers(2, 5)), replace=False)
        n_p = 0 if t == 0 else int(rng.integers(0, max_passages + 1))
        for j in rng.permutation(n_p):         # ids not in their rating order
            pid = f"{tid}:0#{j}"
            passages[pid] = Passage(pid, " ".join(["w"] * int(rng.integers(0, 9))), tid,
                                    f"{tid}:0")
            ratings[(tid, pid)] = rng.choice(levels, size=n_q).tolist()
    for j in range(20):                        # passages nobody rated
        pid = f"free:0#{j}"
        passages[pid] = Passage(pid, "x " * j, None, "free:0")
    everyone = list(passages)
    runs = []
    for _ in range(4):
        run = {}
        for tid in topics:
            if rng.random() < 0.15:
                continue                       # the topic is not in the run
            own = [p for p in everyone if p.startswith(f"{tid}:")]
            n_own = int(rng.integers(0, len(own) + 1))
            docs = list(rng.choice(own, size=n_own, replace=False)) if n_own else []
            docs += list(rng.choice(everyone, size=int(rng.integers(0, 6)), replace=False))
            docs = list(dict.fromkeys(docs))[:int(rng.integers(0, 30))]
            run[tid] = [RunRow(tid, d, r + 1, float(len(docs) - r)) for r, d in enumerate(docs)]
        runs.append(run)
    return Dataset(topics, {}, passages, ratings), runs


def reference(scorer: ContextScorer, run, k, grades: str) -> dict[str, dict]:
    """Every column for every topic, one topic at a time."""
    sizes = {tid: len(j.required) if k == "oracle" else k for tid, j in scorer.judgments.items()}
    ctxs = {tid: [r.doc_id for r in run.get(tid, [])[:sizes[tid]]] for tid in scorer.judgments}
    required = relevance_grades(grades).required
    matrix = scorer.dataset.ratings_by_topic()
    qrels = [ir_measures.Qrel(q, d, r) for q, docs in relevance_qrels(
        scorer.judgments, matrix, grades).items() for d, r in docs.items()]
    diversity = ir.diversity_frame(diversity_rows(scorer.judgments, matrix, scorer.eta))
    relevance = {t: {"R": 0.0, f"R(rel={required})": 0.0, "P": 0.0, "AP": 0.0, "nDCG": 0.0,
                     "alpha_nDCG": 0.0 if sizes[t] <= 20 else math.nan} for t in ctxs}
    # ir_measures at each topic's own cutoff: P@k, nDCG@k, alpha_nDCG@k (ndeval, k <= 20)
    for c in set(sizes.values()):
        group = {q: docs for q, docs in ctxs.items() if sizes[q] == c and docs}
        measures = {ir_measures.R @ 1000: "R", ir_measures.R(rel=required) @ 1000:
                    f"R(rel={required})", ir_measures.P @ c: "P", ir_measures.AP @ 1000: "AP",
                    ir_measures.nDCG @ c: "nDCG"}
        ranked = [ir_measures.ScoredDoc(q, d, float(len(docs) - i)) for q, docs in group.items()
                  for i, d in enumerate(docs)]
        if not ranked:
            continue
        for m in ir_measures.iter_calc(list(measures), qrels, ranked):
            if m.query_id in group:
                relevance[m.query_id][measures[m.measure]] = float(m.value)
        if c <= 20:
            for m in ir_measures.iter_calc([ir_measures.alpha_nDCG(alpha=scorer.alpha) @ c],
                                           diversity, ranked):
                if m.query_id in group:
                    relevance[m.query_id]["alpha_nDCG"] = float(m.value)
    ndeval = ir.per_query_ndeval(ctxs, diversity, scorer.alpha)
    out = {}
    for tid, j in scorer.judgments.items():
        rows = scorer.rating_rows(tid, ctxs[tid])
        oracle = scorer.rating_rows(tid, j.required)
        cov = coverage(rows, j.kept, scorer.eta)
        tokens = sum(regex_token_count(scorer.texts[p]) for p in ctxs[tid])
        oracle_tokens = sum(regex_token_count(scorer.texts[p]) for p in j.required)
        out[tid] = {
            "context_size": len(ctxs[tid]), "in_run": tid in run, "tokens": tokens, "Cov": cov,
            "alpha_nDCG_crux": alpha_ndcg(rows, oracle, j.kept, scorer.eta, scorer.alpha),
            "Den": density(cov, tokens, coverage(oracle, j.kept, scorer.eta), oracle_tokens,
                           scorer.weight),
            **relevance[tid], "alpha_nDCG_published": ndeval.get(tid, 0.0),
        }
    return out


def make_scorer(ds, judged, texts, options=DEFAULTS) -> ContextScorer:
    scorer = ContextScorer(ds, judged, texts, regex_token_count, options)
    scorer.dataset = ds     # for the reference's ratings
    return scorer


def assert_same(frame, expected: dict[str, dict]) -> None:
    assert list(frame["topic"]) == list(expected)
    for row in frame.to_dict("records"):
        for name, want in expected[row["topic"]].items():
            got = row[name]
            if isinstance(want, float) and math.isnan(want):
                assert math.isnan(got), (row["topic"], name, got)
            else:
                assert got == pytest.approx(want, abs=1e-12, rel=0), (row["topic"], name)


@pytest.mark.parametrize("seed,eta,alpha,grades", [
    (1, 3, 0.5, "2-1"), (2, 1, 0.5, "2-1"), (3, 5, 0.5, "3-2-1"),
    (4, 3, 0.3, "2-1"), (5, 2, 0.7, "3-2-1"), (6, 3, 0.0, "2-1"), (7, 4, 1.0, "2-1"),
])
def test_array_route_equals_the_per_topic_functions(seed, eta, alpha, grades):
    ds, runs = random_case(seed)
    texts = {p: x.contents for p, x in ds.passages.items()}
    scorer = make_scorer(ds, derive(ds, eta, alpha), texts,
                         MetricOptions(eta=eta, alpha=alpha, relevance_grades=grades))
    assert len(scorer.judgments) >= 4, "the case must have topics to score"
    for i, run in enumerate(runs):
        for k in SIZES:
            assert_same(scorer.score(run, f"s{i}", k), reference(scorer, run, k, grades))


@pytest.mark.parametrize("seed", [61, 62])
def test_tied_run_scores_are_broken_as_trec_eval_breaks_them(seed):
    """Runs whose scores take three values (many ties; passages of other topics and passages
    nobody rated among them), each topic's lines shuffled: every column equals the per-topic
    reference on the same lines sorted by Python's sort, score descending and, among equal
    scores, passage id descending (trec_eval's order, the measures' default)."""
    ds, runs = random_case(seed)
    rng = np.random.default_rng(seed)
    scorer = make_scorer(ds, derive(ds, 3), {p: x.contents for p, x in ds.passages.items()})
    for i, run in enumerate(runs):
        tied, ordered = {}, {}
        for tid, rows in run.items():
            scores = rng.integers(0, 3, size=len(rows)).astype(float).tolist()
            lines = [RunRow(tid, r.doc_id, 0, s) for r, s in zip(rows, scores, strict=True)]
            lines = [lines[j] for j in rng.permutation(len(lines))]
            tied[tid] = [RunRow(tid, r.doc_id, n + 1, r.score) for n, r in enumerate(lines)]
            by_id = sorted(tied[tid], key=lambda r: r.doc_id, reverse=True)
            ordered[tid] = sorted(by_id, key=lambda r: -r.score)    # stable: ids stay descending
        assert any(len({r.score for r in v}) < len(v) for v in tied.values()), "no tie"
        for k in SIZES:
            assert_same(scorer.score(tied, f"s{i}", k), reference(scorer, ordered, k, "2-1"))


@pytest.mark.parametrize("seed,alpha", [(11, 0.3), (12, 0.5), (13, 0.9)])
def test_judgments_whose_required_set_is_not_in_the_ideal_order(seed, alpha):
    """alpha_ndcg orders Z* itself (crux.ideal_order): a judgments file may list it in any
    order, or list passages with overlapping answers, and the array route must find the same
    ideal (ties to the earlier passage). Here Z* is a random sample of P*."""
    ds, runs = random_case(seed, max_passages=40)
    texts = {p: x.contents for p, x in ds.passages.items()}
    judged = derive(ds, 3)
    rng = np.random.default_rng(seed)
    for j in (j for j in judged.values() if j.relevant):
        size = int(rng.integers(1, min(len(j.relevant), 10) + 1))
        j.required = list(rng.choice(j.relevant, size=size, replace=False))
    scorer = make_scorer(ds, judged, texts, MetricOptions(alpha=alpha))
    for k in ("oracle", 20):
        assert_same(scorer.score(runs[0], "s", k), reference(scorer, runs[0], k, "2-1"))


def test_many_judged_passages_and_small_chunks(monkeypatch):
    """More than 20 judged passages (ndeval's ideal is cut at 20), and the topics processed
    in chunks of a few topics."""
    monkeypatch.setattr(batch, "_CHUNK_CELLS", 50)
    ds, runs = random_case(21, n_topics=6, max_passages=60)
    texts = {p: x.contents for p, x in ds.passages.items()}
    scorer = make_scorer(ds, derive(ds, 2), texts, MetricOptions(eta=2))
    for k in ("oracle", 20, 40):
        assert_same(scorer.score(runs[1], "s", k), reference(scorer, runs[1], k, "2-1"))


def test_an_empty_run_scores_zero_everywhere():
    ds, _ = random_case(31)
    texts = {p: x.contents for p, x in ds.passages.items()}
    scorer = make_scorer(ds, derive(ds, 3), texts)
    frame = scorer.score({}, "empty", 10)
    assert_same(frame, reference(scorer, {}, 10, "2-1"))
    # nothing retrieved: every measure 0 (Den too: Cov is 0), no topic in the run
    assert not frame["in_run"].any() and (frame["context_size"] == 0).all()
    measures = ["Cov", "alpha_nDCG_crux", "Den", "nDCG", "alpha_nDCG", "alpha_nDCG_published"]
    assert (frame[measures] == 0).all().all()


def test_judgments_without_a_topic_give_an_empty_table():
    """No topic judged, a run whose passages nobody judged: a table with every column and no
    row, at |Z*| and at k (it was an IndexError in the token counts and ndeval's sum)."""
    scorer = make_scorer(Dataset({}, {}, {}, {}), {}, {})
    run = {"t0": [RunRow("t0", "x", 1, 1.0)]}
    for k in ("oracle", 10):
        frame = scorer.score(run, "s", k)
        assert frame.empty and {"Cov", "Den", "alpha_nDCG_published"} <= set(frame.columns)


@pytest.mark.parametrize("seed", range(12))
def test_score_orders_equal_one_sort_of_every_line(seed):
    """RunIndex's score orders start from the run's lines by topic and score (no sort where
    the run is written that way) and reorder only the tied lines and the topic blocks; the
    result must equal one stable sort of every line by (judged topic index, -score, -/+ the
    passage id's place among the tied ids), the definition, on runs sorted and shuffled,
    with many ties, topics in another order than the judgments' and unjudged topics."""
    from cruxflow.data.runs import RunLines, score_order
    from cruxflow.metrics.cuts import RunIndex

    rng = np.random.default_rng(seed)
    ds, _ = random_case(seed)
    scorer = make_scorer(ds, derive(ds, 3), {})
    topics = list(rng.permutation(list(ds.topics))) + ["unjudged-1", "unjudged-2"]
    qids, pids, scores = [], [], []
    for tid in topics:
        n = int(rng.integers(0, 25))
        qids += [tid] * n
        pids += [f"{tid}#{rng.integers(10**6)}-{i}" for i in range(n)]
        # few distinct scores: many ties; sorted best first within the topic, or not
        score = rng.integers(0, 4, size=n).astype(float)
        scores += sorted(score, reverse=True) if seed % 2 else list(score)
    if seed % 3 == 0:   # lines shuffled across topics too
        perm = rng.permutation(len(qids))
        qids, pids, scores = ([x[i] for i in perm] for x in (qids, pids, scores))
    lines = RunLines.from_columns(qids, pids, np.array(scores))
    index = RunIndex(scorer.index, lines)
    at = np.flatnonzero(index.topic >= 0)
    base = np.lexsort((-lines.score, lines.topic))
    assert np.array_equal(score_order(lines.topic, lines.score), base)
    for order, sign in (("score", -1), ("ndeval", 1)):
        want = at[np.lexsort((sign * index.tie[at], -lines.score[at], index.topic[at]))]
        assert np.array_equal(index.ordered(order), want), order
    # the tie ranks: the string order of the tied passage ids, checked on one topic by hand
    mine = np.flatnonzero(lines.topic == 0)
    for s in set(lines.score[mine].tolist()):
        tied = mine[lines.score[mine] == s]
        if len(tied) > 1:
            by_id = sorted(tied.tolist(), key=lambda i: lines.passages[lines.passage[i]])
            assert [int(index.tie[i]) for i in by_id] == sorted(index.tie[tied].tolist())


def test_the_same_run_object_is_read_once_and_a_new_one_again():
    ds, runs = random_case(41)
    texts = {p: x.contents for p, x in ds.passages.items()}
    scorer = make_scorer(ds, derive(ds, 3), texts)
    first = scorer.run_index(runs[0])
    assert scorer.run_index(runs[0]) is first
    assert scorer.run_index(runs[1]) is not first
    assert_same(scorer.score(runs[0], "s", 10), reference(scorer, runs[0], 10, "2-1"))


def test_judgments_derived_in_arrays_equal_the_per_topic_derivation():
    """Without a judgments file the scorer derives Q and Z* itself, for all topics at once
    (judgments.select_required_rows): the same as judgments.derive, topic by topic, ties
    included (the random cases have many passages with equal ratings)."""
    for seed, eta in ((61, 3), (62, 2), (63, 4)):
        ds, runs = random_case(seed, max_passages=40)
        texts = {p: x.contents for p, x in ds.passages.items()}
        options = MetricOptions(eta=eta, relevance_grades="3-2-1")
        derived = make_scorer(ds, None, texts, options)
        given = make_scorer(ds, derive(ds, eta), texts, options)
        want = {t: j for t, j in derive(ds, eta).items() if j.kept}
        got = derived.judgments
        assert list(got) == list(given.judgments) == sorted(want, key=batch.natural_key)
        for t, j in want.items():
            assert (got[t].kept, sorted(got[t].required)) == (j.kept, sorted(j.required)), t
        for k in ("oracle", 3, 20):
            pd_equal = derived.score(runs[0], "s", k).equals(given.score(runs[0], "s", k))
            assert pd_equal, k


def test_relevance_evaluator_by_hand_and_through_ir_measures_iter_calc():
    """qrels a: x=1, y=2; context a: x, q (unjudged), y; b has an empty context."""
    qrels = {"a": {"x": 1, "y": 2}, "b": {"z": 1}}
    evaluator = ir.RelevanceEvaluator(qrels)
    assert evaluator._trec_evaluators is not None      # the direct pytrec_eval route
    direct = evaluator.per_query({"a": ["x", "q", "y"], "b": []})
    evaluator._trec_evaluators = None                    # ir_measures' iter_calc
    generic = evaluator.per_query({"a": ["x", "q", "y"], "b": []})
    assert direct == generic
    a = direct["a"]
    assert a["R"] == 1.0 and a["R(rel=2)"] == 1.0          # 2/2 and 1/1
    assert a["AP"] == pytest.approx((1 / 1 + 2 / 3) / 2)              # x at 1, y at 3
    assert a["NumRelRet"] == 2   # P@3 = 2 / 3 in the scorer
    # DCG = 1/log2(2) + 2/log2(4) = 2; ideal = 2/log2(2) + 1/log2(3)
    assert a["nDCG@10"] == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert direct["b"] == dict.fromkeys(ir.DEFAULT_MEASURES, 0.0)


def test_the_authors_grades_through_ir_measures():
    ds, runs = random_case(51)
    texts = {p: x.contents for p, x in ds.passages.items()}
    scorer = make_scorer(ds, derive(ds, 3), texts, MetricOptions(relevance_grades="3-2-1"))
    for k in ("oracle", 10):
        assert_same(scorer.score(runs[2], "s", k), reference(scorer, runs[2], k, "3-2-1"))


def test_ranks_counted_by_one_cumsum_or_a_rank_at_a_time_agree(monkeypatch):
    """ndeval.seen_before counts a small array's earlier hits with one cumsum and a large
    one's a rank at a time: the tables come out identical either way (integers)."""
    from cruxflow.metrics import ndeval

    ds, runs = random_case(71, max_passages=40)
    texts = {p: x.contents for p, x in ds.passages.items()}
    frames = {}
    for cells in (0, 1 << 40):       # every array a rank at a time; every one by cumsum
        monkeypatch.setattr(ndeval, "_CUMSUM_CELLS", cells)
        scorer = make_scorer(ds, derive(ds, 3), texts)
        frames[cells] = [scorer.score(run, "s", k) for run in runs[:2] for k in SIZES]
    assert all(a.equals(b) for a, b in zip(*frames.values(), strict=True))


@pytest.mark.parametrize("seed,eta,alpha,grades,stack_rows", [
    (81, 3, 0.5, "2-1", 1 << 13), (82, 2, 0.3, "3-2-1", 80), (83, 4, 0.9, "2-1", 33),
])
def test_many_runs_in_one_call_equal_one_call_each(monkeypatch, seed, eta, alpha, grades,
                                                   stack_rows):
    """score_many stacks the contexts of several runs (one k, one width) and calls each
    measure once per stack, against the arrays taken per topic row (TopicArrays.take): the
    frame must be identical, to the last bit, to score() called run by run and k by k, with
    stacks of every run (8,192 rows), of three runs (80 rows, 16 topics) and of two (33),
    on runs with ties, passages of other topics, passages nobody rated, an empty run and
    topics missing from a run; and the same topics reported without text for Den."""
    import pandas as pd

    from cruxflow.metrics import per_query

    ds, runs = random_case(seed, max_passages=40)
    rng = np.random.default_rng(seed)
    tied = {tid: [RunRow(tid, r.doc_id, n + 1, float(rng.integers(0, 3)))
                  for n, r in enumerate(rows)] for tid, rows in runs[0].items()}
    runs = [{}, tied, *runs]      # (den_undefined keeps the last run of each k)
    texts = {p: x.contents for p, x in ds.passages.items() if not p.endswith("#3")}
    options = MetricOptions(eta=eta, alpha=alpha, relevance_grades=grades)
    cases = [(run, f"s{i}", k) for k in SIZES for i, run in enumerate(runs)]
    one = make_scorer(ds, derive(ds, eta, alpha), texts, options)
    want = pd.concat([one.score(*case) for case in cases], ignore_index=True)
    monkeypatch.setattr(per_query, "STACK_ROWS", stack_rows)
    many = make_scorer(ds, derive(ds, eta, alpha), texts, options)
    got = many.score_many(cases)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert many.den_undefined == one.den_undefined and any(one.den_undefined.values())
    assert len(got) == len(cases) * len(one.topics) > 0
