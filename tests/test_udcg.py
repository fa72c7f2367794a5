"""UDCG (Trappolini et al. 2025): formulas against hand-computed values, the LLM steps with a
scripted backend, the protocol, the reader's errors, the command, and one end-to-end run with
the packaged SmolLM2."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import random
import re
import time
from pathlib import Path

import jsonschema
import pytest
from scripted import Scripted

from cruxflow.beyond.udcg import (
    ThetaWeights,
    UdcgOptions,
    first_token_probability,
    fit_udcg_theta,
    load_theta,
    no_response_probability,
    passage_utility,
    read_items,
    run_udcg,
    save_theta,
    steps,
    udcg,
    udcg_theta,
)
from cruxflow.beyond.udcg.metric import (
    abstention_frequency,
    is_abstention_text,
    is_abstention_token,
    is_bare_abstention,
    theta_features,
)
from cruxflow.beyond.udcg.options import UTILITY_MODES
from cruxflow.beyond.udcg.prompts import ANSWER, GRADING, RELEVANCE, format_documents
from cruxflow.beyond.udcg.protocol import correlations, ir_metrics, sample_contexts, spearman
from cruxflow.cli.udcg import add_command
from cruxflow.data.errors import DataError
from cruxflow.llm import Completion, LLMCache, LLMError, LLMRunner

DATA = Path(__file__).parent / "data" / "udcg"
AUTHORS = DATA / "authors_format.json"
OURS = DATA / "questions.jsonl"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def no_llm():
    raise AssertionError("no LLM should be needed")


def read_tsv(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


# ======================================================================= formulas (Eq. 1-4)

def test_passage_utility_eq2():
    # u = R * (1 - p): relevant +1 * (1 - 0.25) = 0.75; irrelevant -1 * 0.75 = -0.75
    assert passage_utility(True, 0.25) == pytest.approx(0.75)
    assert passage_utility(False, 0.25) == pytest.approx(-0.75)
    # an irrelevant passage the LLM always abstains on does no harm: exactly 0 (not -0.0)
    assert math.copysign(1, passage_utility(False, 1.0)) == 1.0
    with pytest.raises(ValueError):
        passage_utility(True, 1.5)


def test_udcg_eq4_hand_computed():
    # u = [0.9, -0.6, 0.5, -0.1, -0.3, 0.0], k = 6: sum u+ = 1.4, sum u- = -1.0
    # x = 1.4/6 + (1/3)(-1.0)/6 = 0.233333 - 0.055556 = 0.177778
    # sigma(x) = 1 / (1 + e^-0.177778) = 1 / 1.837129 = 0.544328
    assert udcg([0.9, -0.6, 0.5, -0.1, -0.3, 0.0]) == pytest.approx(0.544328, abs=1e-6)
    # gamma = 0 ignores distractors: sigma(1.4/6) = sigma(0.233333) = 0.558071
    assert udcg([0.9, -0.6, 0.5, -0.1, -0.3, 0.0], gamma=0) == pytest.approx(0.558071, abs=1e-6)


def test_udcg_context_with_only_irrelevant_passages():
    # u = -(1 - p) for p = .2 .5 .8 .95 .6 .3 .65: sum = -(0.8+0.5+0.2+0.05+0.4+0.7+0.35) = -3.0
    # x = (1/3)(-3.0)/7 = -1/7 = -0.142857; sigma(x) = 0.464346 < 0.5
    assert udcg([-0.8, -0.5, -0.2, -0.05, -0.4, -0.7, -0.35]) == pytest.approx(0.464346, abs=1e-6)
    # irrelevant passages the LLM always abstains on: x = 0, sigma = 0.5
    assert udcg([0.0, 0.0, 0.0]) == 0.5
    with pytest.raises(ValueError, match="empty"):
        udcg([])


# The authors' released example (github.com/GiovanniTRA/UDCG, data/dataset_with_udcg.json):
# (is_relevant, no_res_prob of Llama-3.2-3B-Instruct) per passage and the published UDCG. The
# file was computed with the irrelevant weight -0.333 (their script's default), i.e. gamma = 0.333:
# item 1: x = (1.9999845 - 0.333 * 2.6660767) / 5 = 0.2224362, sigma = 0.5553809.
PUBLISHED = [
    ([(True, 2.086162567138672e-06), (True, 1.341104507446289e-05), (False, 0.1318359375),
      (False, 0.1812744140625), (False, 0.02081298828125)], 0.5553808928170055),
    ([(True, 5.960464477539063e-08), (True, 6.616115570068359e-06),
      (False, 0.00018215179443359375), (False, 0.006114959716796875),
      (False, 0.0093536376953125)], 0.5501411475208001),
    ([(True, 3.0100345611572266e-05), (False, 0.00010311603546142578),
      (False, 0.007602691650390625), (False, 0.01299285888671875),
      (False, 0.00013053417205810547)], 0.4837510250741193),
]


def test_udcg_reproduces_the_authors_published_scores(tmp_path):
    for passages, published in PUBLISHED:
        utilities = [passage_utility(r, p) for r, p in passages]
        assert udcg(utilities, gamma=0.333) == pytest.approx(published, abs=1e-12)
        # with the paper's gamma = 1/3 the scores move by less than 1e-4
        assert udcg(utilities) == pytest.approx(published, abs=1e-4)
    # ... and through the reader and run_udcg, from models_info
    items = [{"example_id": f"example_{i}", "question": f"question {i}?",
              "passages": [{"doc_id": f"doc_{i}_{j}", "text": f"passage {j}", "is_relevant": r,
                            "models_info": {"meta-llama/Llama-3.2-3B-Instruct":
                                            {"no_res_prob": p}}}
                           for j, (r, p) in enumerate(passages)]}
             for i, (passages, _) in enumerate(PUBLISHED, 1)]
    src = tmp_path / "released.json"
    src.write_text(json.dumps(items), encoding="utf-8")
    summary = run_udcg(src, tmp_path / "out", UdcgOptions(utility="given", gamma=0.333),
                       runner=no_llm)
    rows = read_tsv(tmp_path / "out" / "contexts.tsv")
    assert [float(r["UDCG"]) for r in rows] == pytest.approx([p for _, p in PUBLISHED], abs=1e-6)
    assert summary["means"]["UDCG"] == pytest.approx(sum(p for _, p in PUBLISHED) / 3)
    assert summary["llm"] is None


SAMPLE = DATA / "authors_release_sample.json"   # shaped like the authors' dataset_with_udcg.json


def test_the_released_gamma_and_full_precision(tmp_path):
    """Issue 18, point 9: 1/3 stays the default; the released scores need 0.333; contexts.tsv
    carries every digit, so a reproduction can be checked."""
    assert UdcgOptions().gamma == 1 / 3
    summary = run_udcg(SAMPLE, tmp_path / "a", UdcgOptions(utility="given", gamma=0.333),
                       runner=no_llm)
    # example_1: u+ = 0.75 + 0.9375, u- = -(0.5 + 0.25); x = (1.6875 - 0.333 * 0.75) / 4
    # = 0.3594375, sigma(x) = 1 / (1 + e^-0.3594375) = 0.588904 (the file's 0.5889042618539172)
    rows = {r["item_id"]: r for r in read_tsv(tmp_path / "a" / "contexts.tsv")}
    assert float(rows["example_1"]["UDCG"]) == pytest.approx(0.588904, abs=1e-6)
    assert len(rows["example_1"]["UDCG"]) > 15                     # not 6 decimals
    assert float(rows["example_1"]["UDCG"]) == pytest.approx(0.5889042618539172, abs=1e-15)
    assert summary["released_udcg"]["items"] == 3
    assert summary["released_udcg"]["max_abs_difference"] < 1e-15
    # with the paper's 1/3 the largest difference is example_3's (only irrelevant passages):
    # dx = (1/3 - 0.333) * (0.875 + 0.984375) / 2 = 3.0990e-4 at x = -0.30959, where
    # sigma' = 0.42322 * 0.57678 = 0.24411: about 3.0990e-4 * 0.24411 = 7.565e-5
    summary = run_udcg(SAMPLE, tmp_path / "b", UdcgOptions(utility="given"), runner=no_llm)
    assert summary["released_udcg"]["max_abs_difference"] == pytest.approx(7.565e-5, rel=2e-3)
    assert summary["utility_estimate"] == {"mode": "given",
                                           "model": "meta-llama/Llama-3.2-3B-Instruct"}


def test_udcg_theta_eq3_hand_computed():
    w = ThetaWeights(alpha=[1.0, 2.0], beta=[0.5, 1.0])
    # features [u1+, u2+, u1-, u2-] of u = [0.6, -0.4]: [0.6, 0, 0, -0.4]
    assert list(theta_features([0.6, -0.4])) == [0.6, 0.0, 0.0, -0.4]
    # x = 1*0.6 + 2*0 + 0.5*0 + 1*(-0.4) = 0.2; sigma(0.2) = 0.549834
    assert udcg_theta([0.6, -0.4], w) == pytest.approx(0.549834, abs=1e-6)
    # alpha_i = 1/k and beta_i = gamma/k give back UDCG (Eq. 4 is Eq. 3 without positions)
    u = [0.9, -0.6, 0.5]
    flat = ThetaWeights([1 / 3] * 3, [(1 / 3) / 3] * 3)
    assert udcg_theta(u, flat) == pytest.approx(udcg(u))
    with pytest.raises(ValueError, match="k = 2"):
        udcg_theta([0.1, 0.2, 0.3], w)


# ======================================================================= p(NO-RESPONSE)

def test_no_response_probability_from_first_token_logprobs():
    ln = math.log
    top = {"NO": ln(0.3), " NO": ln(0.1), "No": ln(0.2), "N": ln(0.05), "NOT": ln(0.05),
           "The": ln(0.25)}
    # abstention tokens: "NO" (0.3) and " NO" (0.1); "No" (case), "N" (too short) and "NOT"
    # (not a prefix of NO-RESPONSE) are not: 0.3 + 0.1 = 0.4
    assert no_response_probability(top) == pytest.approx(0.4)
    assert no_response_probability({"Paris": ln(0.9)}) == 0.0
    assert no_response_probability(None) is None
    for tok in ("NO", "NO-", "NO-RESP", "NO-RESPONSE", "\u2581NO", "\u0120NO", " NO-RESPONSE."):
        assert is_abstention_token(tok), tok
    for tok in ("No", "no", "N", "-", "NOT", "NOW", "RESPONSE", ""):
        assert not is_abstention_token(tok), tok


def test_abstention_from_samples():
    assert is_abstention_text("NO-RESPONSE")
    assert is_abstention_text("  no response.")
    assert is_abstention_text("Answer: NO_RESPONSE")
    assert not is_abstention_text("Paris")
    assert not is_abstention_text("No, it was built in 1889.")
    # 2 of 5 samples abstain: 0.4
    assert abstention_frequency(["NO-RESPONSE", "Paris", "no-response", "Lyon", "Paris"]) == 0.4


def test_bare_abstention_is_the_whole_answer():
    for answer in ("NO-RESPONSE", "**NO-RESPONSE**.", '"no response"', "NO_RESPONSE", "", None):
        assert is_bare_abstention(answer), answer
    for answer in ("NO-RESPONSE, but maybe Paris", "Paris", "No"):
        assert not is_bare_abstention(answer), answer


# ======================================================================= prompts and parsing

def test_prompts_are_the_papers_figures():
    p = ANSWER.render(documents=format_documents(["A  passage\nwith lines."]), question="Why?")
    assert p.startswith("You are given a question and you must respond based on the provided "
                        "documents.")
    assert "please respond with NO-RESPONSE" in p
    assert p.endswith("Documents:\nDocument [1]: A passage with lines.\n\nQuestion:\nWhy?\n\n"
                      "Answer:")
    assert RELEVANCE.fields == ("question", "answers", "document")
    assert '"grade": "A" or "B"' in RELEVANCE.text
    assert GRADING.fields == ("question", "target", "predicted_answer")
    assert "C: ABSTAINED" in GRADING.text and '"grade": "A", "B", or "C"' in GRADING.text
    g = GRADING.render(question="q?", target="['x']", predicted_answer="y")
    assert "Acceptable answers list: ['x']\nPredicted answer: y\n```" in g


@pytest.mark.parametrize("text, expected", [
    ('{"motivation": "It names Paris.", "grade": "A"}', True),
    ('```json\n{\n  "motivation": "no",\n  "grade": "B"\n}\n```', False),
    ("{'motivation': 'x', 'grade': 'B'}", False),          # single quotes: loose grade key
    ('"grade": "A" because it states the date', True),
    ("B", False),
    ("A: RELEVANT", True),
    ("The document is IRRELEVANT to the question.", False),
    # issue 18, point 6: a negated label is its opposite (cruxflow.llm.labels)
    ("The document is not relevant.", False),
    ("It is not irrelevant: it names the city.", True),
    ('{"motivation": "x", "grade": "A" or "B"}', None),     # the template echoed back
    ("It is RELEVANT, or maybe IRRELEVANT.", None),
    ("", None),
    ("I cannot tell.", None),
])
def test_parse_relevance(text, expected):
    assert steps.parse_relevance(text) is expected


@pytest.mark.parametrize("text, expected", [
    ('{"motivation": "matches", "grade": "A"}', "CORRECT"),
    ('{"motivation": "wrong", "grade": "B"}', "INCORRECT"),
    ('```\n{"grade": "C"}\n```', "ABSTAINED"),
    ('{"grade": "INCORRECT"}', "INCORRECT"),
    ("C", "ABSTAINED"),
    ("The answer is INCORRECT.", "INCORRECT"),
    # issue 18, point 6: "not correct" was read as CORRECT, flipping the utility's sign
    ("The answer is not correct.", "INCORRECT"),
    ("The answer is not incorrect.", "CORRECT"),
    ("The model abstains.", "ABSTAINED"),
    ('{\n "grade": "A",\n "B",\n "C"\n}', None),            # the template echoed back
    ("CORRECT or INCORRECT", None),
    ("```\n```\n```", None),
])
def test_parse_grade(text, expected):
    assert steps.parse_grade(text) == expected


# ======================================================================= LLM steps (scripted)

def first_token_answers(r):
    ln = math.log
    if "Eiffel" in r.prompt:
        return Completion("Paris", top_logprobs={"Paris": ln(0.7), "NO": ln(0.2)})
    return Completion("NO", top_logprobs={"NO": ln(0.55), "\u0120NO": ln(0.05), "The": ln(0.3)})


def test_first_token_utilities_are_the_authors_computation():
    """Issue 18, point 8: the default is the authors' p(NO-RESPONSE): one token's softmax
    probability, the instruction as the system message, the passage as "Document: ..."."""
    assert UdcgOptions().utility == "first-token" and UdcgOptions().no_response_token == "NO"
    backend = Scripted(first_token_answers)
    got = steps.abstention_probabilities(LLMRunner(backend, None),
                                         [("where is it?", "The Eiffel Tower is in Paris."),
                                          ("where is it?", "Berlin  is in Germany.")])
    # p of the token "NO" alone: 0.2 and 0.55 (" NO", written "ĠNO", is another token)
    assert [a.p_no_response for a in got] == pytest.approx([0.2, 0.55])
    r = backend.requests[1]
    assert r.system == ("You are given a question and you must respond based on the provided "
                        "documents. Respond directly without providing any premise or "
                        "explanation. If none of the documents contain the answer, please "
                        "respond with NO-RESPONSE. Do not try to respond based on your own "
                        "knowledge.")
    assert r.prompt == "Document: Berlin  is in Germany.\nQuestion: where is it?\nAnswer:"
    assert (r.sampling.temperature, r.sampling.max_tokens, r.sampling.logprobs) == (0.0, 1, 20)
    # another token text, e.g. a SentencePiece tokenizer's "▁NO": 0.05
    got = steps.abstention_probabilities(LLMRunner(Scripted(first_token_answers), None),
                                         [("q?", "Berlin.")], no_response_token=" NO")
    assert got[0].p_no_response == pytest.approx(0.05)


def test_first_token_probability_hand_computed():
    ln = math.log
    top = {"NO": ln(0.3), " NO": ln(0.1), "No": ln(0.2), "NO-": ln(0.05)}
    # exactly the token's text: "NO" 0.3; " NO" 0.1 (also written "▁NO" or "ĠNO")
    assert first_token_probability(top) == pytest.approx(0.3)
    assert first_token_probability(top, " NO") == pytest.approx(0.1)
    assert first_token_probability({"\u2581NO": ln(0.4)}, " NO") == pytest.approx(0.4)
    assert first_token_probability({"Paris": ln(0.9)}) == 0.0       # not listed: 0
    assert first_token_probability(None) is None


def test_logprob_utilities_send_one_greedy_step_per_passage():
    backend = Scripted(first_token_answers)
    got = steps.abstention_probabilities(LLMRunner(backend, None),
                                         [("where is it?", "The Eiffel Tower is in Paris."),
                                          ("where is it?", "Berlin is in Germany.")],
                                         mode="logprobs")
    assert [a.p_no_response for a in got] == pytest.approx([0.2, 0.6])   # 0.55 + 0.05
    assert got[0].detail == {"first_token": "Paris"}
    for r in backend.requests:
        s = r.sampling
        assert (s.temperature, s.max_tokens, s.logprobs) == (0.0, 1, 20)
        assert r.prompt.count("Document [") == 1 and "Question:\nwhere is it?" in r.prompt


def test_logprob_utilities_without_logprobs_is_an_error():
    runner = LLMRunner(Scripted(lambda r: "Paris"), None)
    for mode in ("first-token", "logprobs"):
        with pytest.raises(LLMError, match="--utility sampling"):
            steps.abstention_probabilities(runner, [("q?", "passage")], mode=mode)


def test_sampled_utilities_are_the_abstention_frequency():
    # seeds 0..9; the script abstains for seeds 0, 4 and 8: 3/10
    backend = Scripted(lambda r: "NO-RESPONSE" if r.sampling.seed % 4 == 0 else "Paris")
    got = steps.abstention_probabilities(LLMRunner(backend, None), [("q?", "passage")],
                                         mode="sampling", samples=10, temperature=1.0)
    assert got[0].p_no_response == pytest.approx(0.3)
    assert got[0].detail == {"samples": 10, "abstained": 3}
    assert sorted(r.sampling.seed for r in backend.requests) == list(range(10))
    assert {(r.sampling.temperature, r.sampling.max_tokens)
            for r in backend.requests} == {(1.0, 16)}


def test_relevance_judge_retries_then_falls_back_to_irrelevant():
    def respond(r):
        if "Paris" in r.prompt.split("Document: ")[-1]:
            # unparseable when greedy; parsed on the retry (seed 1, temperature 0.7)
            return '{"grade": "A"}' if r.sampling.seed == 1 else "hmm"
        return "I do not know"

    backend = Scripted(respond)
    runner = LLMRunner(backend, None)
    got = steps.judge_relevance(runner, [("where?", ["Paris"], "It is in Paris."),
                                         ("where?", ["Paris"], "It is old.")], attempts=3)
    assert got == [(True, "judge"), (False, "judge_failed")]
    assert runner.stats.parse_failures == 1
    first = [r for r in backend.requests if "It is old." in r.prompt]
    assert [(r.sampling.seed, r.sampling.temperature) for r in first] == [(0, 0.0), (1, 0.7),
                                                                         (2, 0.7)]
    assert "Acceptable answers list: ['Paris']" in backend.requests[0].prompt


def test_grading_skips_the_judge_for_a_bare_no_response():
    backend = Scripted(lambda r: '{"motivation": "m", "grade": "A"}')
    got = steps.grade_answers(LLMRunner(backend, None),
                              [("q?", ["Paris"], "NO-RESPONSE."), ("q?", ["Paris"], ""),
                               ("q?", ["Paris"], "Paris")])
    assert [g[:2] for g in got] == [("ABSTAINED", "rule"), ("ABSTAINED", "rule"),
                                    ("CORRECT", "judge")]
    assert len(backend.requests) == 1 and "Predicted answer: Paris" in backend.requests[0].prompt


# ======================================================================= protocol pieces

def test_sampler_balances_contexts():
    relevant = [False] * 25
    relevant[3] = relevant[17] = True
    ctxs, info = sample_contexts(relevant + [True] * 5, n_contexts=10, size=5, depth=25,
                                 rng=random.Random(0))
    assert len(ctxs) == 10 and all(len(c) == 5 and len(set(c)) == 5 for c in ctxs)
    assert all(i < 25 for c in ctxs for i in c)                     # only the top 25
    with_rel = [any(relevant[i] for i in c) for c in ctxs]
    assert with_rel == [True] * 5 + [False] * 5
    assert info == {"balanced": True, "with_relevant": 5, "without_relevant": 5,
                    "duplicates": 0}
    again, _ = sample_contexts(relevant, n_contexts=10, size=5, depth=25, rng=random.Random(0))
    other, _ = sample_contexts(relevant, n_contexts=10, size=5, depth=25, rng=random.Random(1))
    assert again == ctxs and other != ctxs


def test_sampler_when_balance_is_impossible():
    # no relevant passage: every context without one
    ctxs, info = sample_contexts([False] * 8, n_contexts=4, size=3, depth=25,
                                 rng=random.Random(0))
    assert len(ctxs) == 4 and not info["balanced"] and info["without_relevant"] == 4
    # fewer than `size` irrelevant passages: every context holds a relevant one
    ctxs, info = sample_contexts([True, True, False, True], n_contexts=4, size=3, depth=25,
                                 rng=random.Random(0))
    assert info["with_relevant"] == 4 and not info["balanced"]
    # fewer passages than the context size: nothing
    assert sample_contexts([True, False], n_contexts=4, size=3, depth=25,
                           rng=random.Random(0))[0] == []


def test_ir_metrics_hand_computed():
    qrels = {"d1": 1, "d2": 0, "d3": 1, "d4": 0, "d5": 0, "d6": 0}
    got = ir_metrics({"c": ["d1", "d2", "d3", "d4", "d5", "d6"], "none": ["d2", "d4"]},
                     {"c": qrels, "none": qrels})
    # relevant at ranks 1 and 3 of 6: DCG = 1/log2(2) + 1/log2(4) = 1.5,
    # IDCG = 1 + 1/log2(3) = 1.630930, nDCG = 0.919721; RR = 1; AP = (1/1 + 2/3)/2 = 0.833333;
    # P@6 = 2/6; Success = 1
    assert got["c"] == pytest.approx({"nDCG": 0.919721, "MRR": 1.0, "MAP": 0.833333,
                                      "P": 1 / 3, "Hits": 1.0}, abs=1e-6)
    # k = 2, nothing relevant retrieved: 0 everywhere
    assert got["none"] == {"nDCG": 0.0, "MRR": 0.0, "MAP": 0.0, "P": 0.0, "Hits": 0.0}


def test_spearman_per_question_and_skips():
    # score ranks [4, 2, 1, 3], grade ranks [4, 3, 1.5, 1.5] (mean 2.5 each):
    # deviations [1.5, -0.5, -1.5, 0.5] and [1.5, 0.5, -1, -1]; covariance sum 3.0;
    # rho = 3 / sqrt(5 * 4.5) = 0.632456
    assert spearman([0.9, 0.5, 0.1, 0.7], [2, 1, 0, 0]) == pytest.approx(0.632456, abs=1e-6)
    assert spearman([0.5, 0.5, 0.5], [2, 1, 0]) is None               # constant metric



def test_correlations_average_every_metric_over_the_same_questions():
    """Issue 18, point 5: a question where one metric is constant is left out for all."""
    def q(item, m, m2, grades, relevant):
        return [{"item_id": item, "m": a, "m2": b, "grade_value": g, "relevant": r}
                for a, b, g, r in zip(m, m2, grades, relevant, strict=True)]

    rows = (q("a", [0.9, 0.5, 0.1, 0.7], [0.9, 0.5, 0.1, 0.7], [2, 1, 0, 0], [1, 1, 0, 1])
            + q("b", [0.1, 0.2], [0.1, 0.2], [0, 0], [1, 0])        # one grade: no rho at all
            + q("c", [0.1, 0.2], [0.1, 0.2], [0, 2], [0, 1])
            + q("d", [0.3, 0.6], [0.0, 0.0], [0, 3], [0, 0])        # m2 constant, no relevant
            + q("e", [0.3, 0.6], [0.5, 0.5], [1, 0], [1, 0]))       # m2 constant
    corr, questions = correlations(rows, ["m", "m2"])
    # the common questions a (0.632456, test above) and c (1.0): (0.632456 + 1) / 2
    for m in ("m", "m2"):
        assert corr[m]["spearman"] == pytest.approx(0.816228, abs=1e-6)
        assert corr[m]["questions"] == 2
    # m on its own questions a, c, d (+1), e (-1): (0.632456 + 1 + 1 - 1) / 4
    assert corr["m"]["spearman_where_defined"] == pytest.approx(0.408114, abs=1e-6)
    assert corr["m"]["questions_where_defined"] == 4
    assert questions == {"total": 5, "used": 2, "left_out": 3,
                         "reasons": {"grades_constant": 1, "no_relevant_passage": 1,
                                     "metric_constant": 1},
                         "undefined_per_metric": {"m": 1, "m2": 3}}


def test_fit_udcg_theta_learns_signs_and_round_trips(tmp_path):
    rng = random.Random(0)
    train = []
    for q in range(20):
        for _ in range(6):
            u = [rng.choice([0.9, 0.5, -0.1, -0.9]) for _ in range(3)]
            # better answers with more utility and fewer distractors
            score = sum(max(x, 0) for x in u) + 0.5 * sum(min(x, 0) for x in u)
            train.append((f"q{q}", u, 2 if score > 0.4 else (1 if score > -0.3 else 0)))
    w = fit_udcg_theta(train)
    assert w.k == 3 and w.info["questions"] == 20 and w.info["pairs"] > 0
    assert all(a > 0 for a in w.alpha) and all(b > 0 for b in w.beta)
    rhos = [spearman([udcg_theta(u, w) for qq, u, _ in train if qq == f"q{q}"],
                     [g for qq, _, g in train if qq == f"q{q}"]) for q in range(20)]
    assert sum(r for r in rhos if r is not None) / len([r for r in rhos if r]) > 0.8
    save_theta(tmp_path / "theta.json", w)
    back = load_theta(tmp_path / "theta.json")
    assert back.alpha == w.alpha and back.beta == w.beta and back.info["pairs"] == w.info["pairs"]
    with pytest.raises(ValueError, match="different answer grades"):
        fit_udcg_theta([("q", [0.1], 1), ("q", [0.2], 1)])


def test_load_theta_errors_name_the_field(tmp_path):
    bad = tmp_path / "w.json"
    bad.write_text('{"alpha": [1, 2], "beta": [1]}', encoding="utf-8")
    with pytest.raises(DataError, match=r"w\.json: field 'beta'"):
        load_theta(bad)
    bad.write_text('{"alpha": "x", "beta": [1]}', encoding="utf-8")
    with pytest.raises(DataError, match="field 'alpha'"):
        load_theta(bad)


# ======================================================================= reader

def test_reader_takes_both_formats():
    authors = read_items(AUTHORS)
    assert [it.id for it in authors] == ["nq-gatsby", "nq-berlin-wall", "nq-kilimanjaro"]
    assert [len(it.passages) for it in authors] == [6, 7, 8]
    p = authors[0].passages[0]
    assert (p.id, p.relevant, p.no_res_prob) == ("kilt-1001", True, {MODEL: 0.1})
    ours = read_items(OURS)
    assert ours[0].id == "q-eiffel" and ours[0].answers == ["Paris"]
    assert [p.relevant for p in ours[0].passages] == [True, False, False, None, False]


def test_reader_defaults_ids_and_reads_flat_scores(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_text(json.dumps({"question": "q?", "answers": "Paris", "passages": [
        {"text": "a", "is_relevant": 1, "no_res_prob_llama-3b": 0.25}, {"text": "b"}]}) + "\n",
        encoding="utf-8")
    [it] = read_items(src)
    assert it.id == "item1" and it.answers == ["Paris"] and it.record == "line 1"
    assert [p.id for p in it.passages] == ["p1", "p2"]
    assert it.passages[0].relevant is True and it.passages[0].no_res_prob == {"llama-3b": 0.25}


@pytest.mark.parametrize("item, record, field, message", [
    ({"passages": [{"text": "a"}]}, "item 2", "question", "question"),
    ({"question": "q", "passages": []}, "item 2", "passages", "non-empty list"),
    ({"question": "q", "passages": [{"doc_id": "d"}]}, "item 2", "passages[0].text", "text"),
    ({"question": "q", "passages": [{"text": "a", "is_relevant": "yes"}]}, "item 2",
     "passages[0].is_relevant", "relevance label"),
    ({"question": "q", "passages": [{"text": "a", "doc_id": 1}, {"text": "b", "doc_id": "1"}]},
     "item 2", "passages[1].doc_id", "twice"),
    ({"question": "q", "passages": [{"text": "a", "models_info": {"m": {"no_res_prob": 1.5}}}]},
     "item 2", "passages[0].models_info.m.no_res_prob", "[0, 1]"),
    ({"question": "q", "answers": [["x"]], "passages": [{"text": "a"}]}, "item 2", "answers",
     "list of strings"),
    ({"id": "a", "question": "q", "passages": [{"text": "a"}]}, "item 2", "id", "twice"),
])
def test_reader_errors_name_file_record_and_field(tmp_path, item, record, field, message):
    src = tmp_path / "bad.json"
    src.write_text(json.dumps([{"id": "a", "question": "q", "passages": [{"text": "t"}]}, item]),
                   encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(message)) as e:
        read_items(src)
    assert str(e.value).startswith(f"{src}: {record}: field '{field}'")


def test_reader_errors_in_jsonl_name_the_line(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"question": "q", "passages": [{"text": "a"}]}\n\n{"question": "q"}\n',
                   encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.jsonl: line 3: field 'passages'"):
        read_items(src)
    src.write_text('[{"question": ', encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        read_items(src)


# ======================================================================= run_udcg and the command

def test_given_utilities_reproduce_hand_computed_udcg_without_an_llm(tmp_path):
    summary = run_udcg(AUTHORS, tmp_path, UdcgOptions(utility="given"), runner=no_llm)
    rows = {r["item_id"]: r for r in read_tsv(tmp_path / "contexts.tsv")}
    # nq-gatsby: 0.544328 (test_udcg_eq4_hand_computed); nq-berlin-wall, only irrelevant:
    # 0.464346; nq-kilimanjaro: u+ = 1.0 + 0.8 = 1.8, u- = -(0.5+0.5+0.25+0.25+0.75+1.0) = -3.25,
    # x = 1.8/8 - (1/3)(3.25)/8 = 0.225 - 0.135417 = 0.089583, sigma = 0.522381
    assert {k: float(r["UDCG"]) for k, r in rows.items()} == pytest.approx(
        {"nq-gatsby": 0.544328, "nq-berlin-wall": 0.464346, "nq-kilimanjaro": 0.522381},
        abs=1e-6)
    assert float(rows["nq-gatsby"]["nDCG"]) == pytest.approx(0.919721, abs=1e-6)
    assert float(rows["nq-berlin-wall"]["Hits"]) == 0.0
    assert rows["nq-gatsby"]["passages"].split(",")[:2] == ["kilt-1001", "kilt-1002"]
    assert summary["model"] == MODEL and summary["passages"] == 21 and summary["llm"] is None
    assert summary["relevance"] == {"label": 21}
    assert summary["means"]["UDCG"] == pytest.approx((0.544328 + 0.464346 + 0.522381) / 3,
                                                     abs=1e-6)
    passages = [json.loads(line) for line in open(tmp_path / "passages.jsonl", encoding="utf-8")]
    assert passages[1] == {"item_id": "nq-gatsby", "passage_id": "kilt-1002", "rank": 2,
                           "relevant": False, "relevance_source": "label", "p_no_response": 0.4,
                           "utility": pytest.approx(-0.6), "utility_source": "given"}
    assert json.loads((tmp_path / "summary.json").read_text())["contexts"] == 3


def test_given_utilities_errors(tmp_path):
    with pytest.raises(DataError, match=r"models in the file: meta-llama"):
        run_udcg(AUTHORS, tmp_path, UdcgOptions(utility="given", given_model="gpt"),
                 runner=no_llm)
    items = json.loads(AUTHORS.read_text())
    del items[2]["passages"][4]["models_info"]
    src = tmp_path / "missing.json"
    src.write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(DataError) as e:
        run_udcg(src, tmp_path / "o", UdcgOptions(utility="given"), runner=no_llm)
    assert str(e.value).startswith(f"{src}: item 3: field 'passages[4].models_info.{MODEL}.")
    # the protocol and the relevance judge need reference answers: checked before any call
    no_answers = tmp_path / "no_answers.jsonl"
    no_answers.write_text(json.dumps({"question": "q?", "passages": [{"text": "a"}]}) + "\n",
                          encoding="utf-8")
    for opts in (UdcgOptions(utility="given", protocol=True), UdcgOptions(judge_relevance=True)):
        with pytest.raises(DataError, match=r"no_answers\.jsonl: line 1: field 'answers'"):
            run_udcg(no_answers, tmp_path / "o3", opts, runner=no_llm)
    # unlabelled passages need --judge-relevance
    with pytest.raises(DataError, match=r"questions\.jsonl: line 1: field 'passages\[3\]"
                                        r"\.relevant'"):
        run_udcg(OURS, tmp_path / "o2", UdcgOptions(), runner=no_llm)


def synthetic_file(path, questions: int, seed: int):
    """Questions with 2 relevant passages (containing the answer), 2 distractors (the scripted
    LLM answers wrongly from them) and 10 dull ones (it abstains)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for q in range(questions):
            kinds = ["rel"] * 2 + ["distract"] * 2 + ["dull"] * 10
            rng.shuffle(kinds)
            passages = [{"id": f"s{q}-{j}", "relevant": kind == "rel",
                         "text": {"rel": f"Source {j} says the answer is ANSWER{q}.",
                                  "distract": f"Misleading WRONG{j} claim about topic {q}.",
                                  "dull": f"Dull text number {j} about topic {q}."}[kind]}
                        for j, kind in enumerate(kinds)]
            f.write(json.dumps({"id": f"t{seed}-{q}", "question": f"what is thing {q}?",
                                "answers": [f"ANSWER{q}"], "passages": passages}) + "\n")


def scripted_rag(r):
    """A fake LLM for the whole protocol, driven by markers in the prompts."""
    ln = math.log
    if r.system is not None and r.prompt.startswith("Document: "):   # the authors' layout
        doc = r.prompt.split("Document: ", 1)[1].split("\nQuestion: ", 1)[0]
        p = 0.9 if "Dull" in doc else 0.1
        return Completion("x", top_logprobs={"NO": ln(p), "Other": ln(1 - p)})
    if r.prompt.startswith("You are given a question"):
        docs = r.prompt.split("Documents:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        if r.sampling.max_tokens == 1:     # utility of one passage
            p = 0.9 if "Dull" in docs else 0.1
            return Completion("x", top_logprobs={"NO": ln(p), "Other": ln(1 - p)})
        # the answer when the relevant passages are at least as many as the distractors, else
        # a distractor's wrong answer; NO-RESPONSE when there is neither
        answers, wrong = re.findall(r"ANSWER\d+", docs), re.findall(r"WRONG\d+", docs)
        if answers and len(answers) >= len(wrong):
            return answers[0]
        return wrong[0] if wrong else "NO-RESPONSE"
    if r.prompt.startswith("Your job is to grade"):
        target = r.prompt.split("Acceptable answers list: ")[-1].split("\n")[0]
        predicted = r.prompt.split("Predicted answer: ")[-1].split("\n")[0]
        return json.dumps({"motivation": "m", "grade": "A" if predicted in target else "B"})
    if r.prompt.startswith("Determine if a document"):
        doc = r.prompt.split("Document: ")[-1]
        return json.dumps({"motivation": "m", "grade": "A" if "ANSWER" in doc else "B"})
    raise AssertionError(r.prompt[:60])


def test_protocol_with_a_scripted_llm(tmp_path):
    src = tmp_path / "test.jsonl"
    synthetic_file(src, 6, seed=1)
    backend = Scripted(scripted_rag)
    runner = LLMRunner(backend, LLMCache(tmp_path / "c.sqlite"))
    opts = UdcgOptions(protocol=True, contexts_per_question=10, context_size=5, depth=25)
    summary = run_udcg(src, tmp_path / "out", opts, runner=runner)
    out = tmp_path / "out"
    contexts = read_tsv(out / "contexts.tsv")
    assert len(contexts) == 60 and {r["k"] for r in contexts} == {"5"}
    assert summary["sampler"] == {"questions": 6, "unbalanced_questions": 0,
                                  "duplicate_contexts": 0}
    answers = [json.loads(line) for line in open(out / "answers.jsonl", encoding="utf-8")]
    assert len(answers) == 60
    # only a context with a relevant passage can be answered correctly (the script)
    for r, a in zip(contexts, answers, strict=True):
        assert a["grade"] == r["grade"] and (r["grade"] != "CORRECT" or int(r["relevant"]) > 0)
    assert {r["grade"] for r in contexts} == {"CORRECT", "INCORRECT", "ABSTAINED"}
    rule = sum(a["grade_source"] == "rule" for a in answers)
    assert rule == summary["grades"]["ABSTAINED"] > 0
    # requests: one utility per distinct passage used, one answer per context, one grade per
    # answer that is not a bare NO-RESPONSE; identical grading requests (same question, same
    # answer) are sent once
    used = len({p for r in contexts for p in r["passages"].split(",")})
    assert summary["llm"]["requests"] == used + 60 + (60 - rule)
    graded = {(a["item_id"], a["answer"]) for a in answers if a["grade_source"] == "judge"}
    assert summary["llm"]["calls"] == used + 60 + len(graded)
    corr = {r["metric"]: r for r in read_tsv(out / "correlation.tsv")}
    assert set(corr) == {"UDCG", "nDCG", "MRR", "MAP", "P", "Hits"}
    # UDCG sees the distractors, the relevance metrics cannot: it correlates best (the paper's
    # finding, in miniature), and among contexts without a relevant passage (all P = 0) it
    # ranks the abstentions above the wrong answers
    rho = {m: float(c["spearman"]) for m, c in corr.items()}
    assert rho["UDCG"] > max(rho[m] for m in ("nDCG", "MRR", "MAP", "P", "Hits")) > 0
    no_rel = [r for r in contexts if r["relevant"] == "0"]
    mean = {g: sum(float(r["UDCG"]) for r in no_rel if r["grade"] == g)
            / sum(r["grade"] == g for r in no_rel) for g in ("ABSTAINED", "INCORRECT")}
    assert mean["ABSTAINED"] > mean["INCORRECT"]
    assert summary["correlation"]["UDCG"]["questions"] == 6
    # a second run is answered from the cache
    runner2 = LLMRunner(Scripted(scripted_rag), LLMCache(tmp_path / "c.sqlite"))
    run_udcg(src, tmp_path / "out2", opts, runner=runner2)
    assert runner2.stats.calls == 0
    assert (out / "contexts.tsv").read_text() == (tmp_path / "out2" / "contexts.tsv").read_text()


def test_ideal_grade_sec_6_2():
    from cruxflow.beyond.udcg.protocol import IDEAL_VALUE, ideal_grade

    assert UdcgOptions().grading == "context-aware"
    # completely correct only with a relevant passage in the context, else partially correct
    assert ideal_grade("CORRECT", 1) == "CORRECT"
    assert ideal_grade("CORRECT", 0) == "PARTIALLY_CORRECT"
    assert ideal_grade("ABSTAINED", 0) == "ABSTAINED"
    assert ideal_grade("INCORRECT", 2) == "INCORRECT"
    assert ideal_grade("CORRECT", 0, "answer-only") == "CORRECT"
    # the order: correct > partially correct > abstained > incorrect
    assert [IDEAL_VALUE[g] for g in ("CORRECT", "PARTIALLY_CORRECT", "ABSTAINED",
                                     "INCORRECT")] == [3, 2, 1, 0]
    with pytest.raises(ValueError, match="grading"):
        ideal_grade("CORRECT", 0, "lenient")


def test_protocol_grades_a_correct_answer_without_relevant_passage_partially(tmp_path):
    src = tmp_path / "test.jsonl"
    synthetic_file(src, 2, seed=5)
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    for p in lines[0]["passages"]:          # the answer is there, but no passage is labelled so
        p["relevant"] = False
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    runner = LLMRunner(Scripted(scripted_rag), LLMCache(tmp_path / "c.sqlite"))
    opts = UdcgOptions(protocol=True, contexts_per_question=6, context_size=4, depth=14)
    summary = run_udcg(src, tmp_path / "out", opts, runner=runner)
    answers = [json.loads(x) for x in open(tmp_path / "out" / "answers.jsonl", encoding="utf-8")]
    first = [a for a in answers if a["item_id"] == lines[0]["id"]]
    # every context of question 0 has relevant = 0: a CORRECT answer is PARTIALLY_CORRECT
    judged_correct = [a for a in first if a["judge_grade"] == "CORRECT"]
    assert judged_correct and all(a["grade"] == "PARTIALLY_CORRECT" for a in judged_correct)
    other = [a for a in answers if a["item_id"] != lines[0]["id"]]
    assert all(a["grade"] == a["judge_grade"] for a in other)
    assert summary["grades"]["PARTIALLY_CORRECT"] == len(judged_correct)
    assert summary["grading"] == "context-aware"
    # answer-only keeps the grader's grades (same calls: all from the cache)
    again = run_udcg(src, tmp_path / "o2", dataclasses.replace(opts, grading="answer-only"),
                     runner=runner)
    assert "PARTIALLY_CORRECT" not in again["grades"]
    # question 0 has no relevant passage: the IR metrics are 0 on all its contexts, so it is
    # left out of every metric's mean, and said why
    q = summary["correlation_questions"]
    assert (q["total"], q["used"], q["left_out"]) == (2, 1, 1)
    assert q["reasons"] == {"grades_constant": 0, "no_relevant_passage": 1,
                            "metric_constant": 0}
    assert q["undefined_per_metric"]["UDCG"] == 0 and q["undefined_per_metric"]["nDCG"] == 1
    assert all(c["questions"] == 1 for c in summary["correlation"].values())
    assert summary["correlation"]["UDCG"]["questions_where_defined"] == 2


def test_fit_theta_on_a_training_file_and_apply_it(tmp_path):
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    synthetic_file(train, 8, seed=2)
    synthetic_file(test, 4, seed=3)
    runner = LLMRunner(Scripted(scripted_rag), None)
    opts = UdcgOptions(protocol=True, contexts_per_question=6, context_size=4, depth=10)
    summary = run_udcg(test, tmp_path / "out", opts, runner=runner, fit_theta=train)
    theta = load_theta(tmp_path / "out" / "theta.json")
    assert theta.k == 4 and theta.info["trained_on"] == str(train)
    assert summary["theta_training"]["contexts"] == 48
    assert summary["correlation"]["UDCG_theta"]["spearman"] > 0
    rows = read_tsv(tmp_path / "out" / "contexts.tsv")
    assert all(0 < float(r["UDCG_theta"]) < 1 for r in rows)
    # a training file whose contexts all get the same grade has nothing to learn from
    flat = tmp_path / "flat.jsonl"
    flat.write_text(json.dumps({"id": "f", "question": "q?", "answers": ["x"], "passages": [
        {"id": f"d{i}", "text": f"Dull text {i}.", "relevant": False} for i in range(6)]}) + "\n",
        encoding="utf-8")
    with pytest.raises(DataError, match=r"flat\.jsonl: cannot fit UDCG_theta"):
        run_udcg(test, tmp_path / "out2", opts, runner=runner, fit_theta=flat)
    # weights for another k leave UDCG_theta empty for these contexts (and count them)
    summary = run_udcg(test, tmp_path / "out3", UdcgOptions(protocol=True, context_size=3),
                       runner=runner, theta=theta)
    assert summary["theta_skipped_contexts"] == summary["contexts"] > 0
    assert {r["UDCG_theta"] for r in read_tsv(tmp_path / "out3" / "contexts.tsv")} == {""}


def test_a_separate_judge_llm_grades_and_judges(tmp_path):
    src = tmp_path / "test.jsonl"
    synthetic_file(src, 2, seed=4)
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    lines[0]["passages"][0]["relevant"] = None            # one passage to judge
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rag, judge = Scripted(scripted_rag), Scripted(scripted_rag)
    summary = run_udcg(src, tmp_path / "out", UdcgOptions(protocol=True, judge_relevance=True,
                                                          contexts_per_question=4),
                       runner=LLMRunner(rag, None), judge_runner=LLMRunner(judge, None))
    # answers (Fig. 4) and utilities (the authors' layout)
    assert {r.prompt[:10] for r in rag.requests} == {"You are gi", "Document: "}
    assert {r.prompt[:10] for r in judge.requests} == {"Your job i", "Determine "}
    assert summary["relevance"] == {"label": 27, "judge": 1}
    assert summary["judge_llm"]["calls"] == len(judge.requests) > 1
    assert summary["llm"]["calls"] == len(rag.requests)


def test_judge_relevance_and_sampling_with_a_scripted_llm(tmp_path):
    def respond(r):
        if r.prompt.startswith("Determine"):
            return scripted_rag(r) if "Paris" not in r.prompt.split("Document: ")[-1] else \
                '{"grade": "A"}'
        return "NO-RESPONSE" if r.sampling.seed < 2 else "Paris"   # 2 of 4 samples abstain

    runner = LLMRunner(Scripted(respond), None)
    summary = run_udcg(OURS, tmp_path, UdcgOptions(utility="sampling", samples=4,
                                                   judge_relevance=True), runner=runner)
    assert summary["relevance"] == {"label": 8, "judge": 2}
    passages = [json.loads(line) for line in open(tmp_path / "passages.jsonl", encoding="utf-8")]
    e4 = next(p for p in passages if p["passage_id"] == "e4")
    m3 = next(p for p in passages if p["passage_id"] == "m3")
    assert (e4["relevant"], e4["relevance_source"], m3["relevant"]) == (True, "judge", False)
    assert {p["p_no_response"] for p in passages} == {0.5}
    assert e4["samples"] == 4 and e4["abstained"] == 2
    # calls: 2 judgments + 10 passages x 4 samples
    assert summary["llm"]["calls"] == 2 + 40


def command(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cruxflow")
    add_command(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["udcg", *map(str, argv)])


def test_command_on_given_utilities(tmp_path, capsys):
    args = command(["--questions", AUTHORS, "--output", tmp_path / "o", "--utility", "given",
                    "--gamma", "1/3"])
    assert args.gamma == pytest.approx(1 / 3)
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert re.search(r"UDCG\s+0\.5104", printed)      # (0.544328+0.464346+0.522381)/3
    assert "3 questions, 3 contexts, 21 passages" in printed
    assert not (tmp_path / "o" / "llm_cache.sqlite").exists()   # no LLM was built
    for name in ("passages.jsonl", "contexts.tsv", "summary.json"):
        assert (tmp_path / "o" / name).exists()
    with pytest.raises(SystemExit):
        command(["--questions", AUTHORS, "--output", tmp_path, "--theta", "a", "--fit-theta", "b"])


def test_command_bad_options_are_refused(tmp_path, capsys):
    # argparse refuses what its type knows (a positive integer) ...
    with pytest.raises(SystemExit):
        command(["--questions", AUTHORS, "--output", tmp_path, "--context-size", "0"])
    assert "argument --context-size: must be at least 1, got 0" in capsys.readouterr().err
    # ... and UdcgOptions.check() the rest, as a DataError naming the option
    args = command(["--questions", AUTHORS, "--output", tmp_path, "--utility", "given"])
    args.temperature = -1.0
    with pytest.raises(DataError, match="temperature"):
        args.func(args)


def test_options_defaults_are_declared_once():
    """UdcgOptions holds the defaults; the config schema declares none for an option (so a job
    that leaves one out gets the dataclass's) and argparse reads them from the dataclass."""
    schema = json.loads((Path(__file__).parents[1] / "cruxflow/schemas/config.schema.json")
                        .read_text(encoding="utf-8"))
    job = schema["definitions"]["udcg_job"]
    files = {"questions", "theta", "fit_theta"}
    options = {f.name: f.default for f in dataclasses.fields(UdcgOptions)}
    assert set(job["properties"]) - files == set(options)   # every option, nothing else
    for name in options:
        assert "default" not in job["properties"][name], name
    for name in files - {"questions"}:
        assert job["properties"][name].get("default") is None, name
    assert job["properties"]["utility"]["enum"] == list(UTILITY_MODES)
    # the defaults are valid config values, and the schema's minimums are check()'s
    jsonschema.validate({"questions": "x.json", **options}, job)
    for name, spec in job["properties"].items():
        if spec.get("minimum") == 1:
            with pytest.raises(ValueError, match=name):
                UdcgOptions(**{name: 0}).check()
    # argparse: every option is a flag whose default is the dataclass's
    args = command(["--questions", "x.json", "--output", "out"])
    for name, default in options.items():
        assert getattr(args, name) == default, name
    assert args.gamma == pytest.approx(1 / 3)   # the paper's gamma, Eq. 4


# ======================================================================= end to end, SmolLM2

@pytest.mark.model
def test_end_to_end_with_the_packaged_model(tmp_path, capsys):
    from cruxflow.weights import DEFAULT_GGUF, resolve_model

    try:
        resolve_model(DEFAULT_GGUF)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    argv = ["--questions", OURS, "--output", tmp_path / "out", "--protocol",
            "--contexts-per-question", "2", "--context-size", "2", "--depth", "5",
            "--judge-relevance", "--attempts", "1", "--max-answer-tokens", "16",
            "--judge-max-tokens", "32", "--threads", "2", "--cache", tmp_path / "c.sqlite"]
    start = time.monotonic()
    args = command(argv)
    assert args.func(args) == 0
    elapsed = time.monotonic() - start
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    llm = summary["llm"]
    # 2 judgments (e4, m3), at most 8 utilities (2 x 2 contexts x 2 passages), 4 answers and at
    # most 4 gradings
    assert 6 <= llm["calls"] <= 18 and llm["cache_hits"] == 0
    assert summary["relevance"] == {"label": 8, "judge": 2} or \
        summary["relevance"].get("judge_failed", 0) + summary["relevance"].get("judge", 0) == 2
    assert summary["contexts"] == 4 and summary["sampler"]["questions"] == 2
    for p in map(json.loads, open(tmp_path / "out" / "passages.jsonl", encoding="utf-8")):
        assert 0.0 <= p["p_no_response"] <= 1.0 and -1.0 <= p["utility"] <= 1.0
        assert abs(p["utility"]) == pytest.approx(1 - p["p_no_response"])
    rows = read_tsv(tmp_path / "out" / "contexts.tsv")
    assert len(rows) == 4 and all(0 < float(r["UDCG"]) < 1 for r in rows)
    assert {r["grade"] for r in rows} <= {"CORRECT", "INCORRECT", "ABSTAINED"}
    assert len(read_tsv(tmp_path / "out" / "correlation.tsv")) == 6
    with capsys.disabled():
        print(f"\nend to end: {llm['calls']} LLM calls in {elapsed:.1f} s")
    # a re-run makes no LLM call
    args = command(argv)
    assert args.func(args) == 0
    again = json.loads((tmp_path / "out" / "summary.json").read_text())["llm"]
    assert again["calls"] == 0 and again["cache_hits"] == again["requests"] > 0
    assert "0 calls" in capsys.readouterr().out
