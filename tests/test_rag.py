"""RAG generation and the judged final results: length bound, prompts, Cov(y) and Den(y) by hand,
against a scripted backend; one real generation with the packaged SmolLM2."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_evaluate import tiny_dataset
from test_generation import MODEL, runner_for

from cruxflow.data.errors import DataError
from cruxflow.llm import LLMRunner
from cruxflow.metrics.judgments import derive
from cruxflow.metrics.options import MetricOptions
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.tokens import regex_token_count, regex_truncate
from cruxflow.rag.reports import (
    ReportTask,
    final_scores,
    format_passages,
    generate_reports,
    judge_reports,
    max_words,
    rag_topics,
    read_topic_list,
    report_prompt,
)


def test_regex_truncate_keeps_whole_tokens():
    assert regex_truncate("Hello, big world!", 2) == "Hello,"
    assert regex_truncate("Hello, big world!", 3) == "Hello, big"
    assert regex_truncate("Hello, big world!", 10) == "Hello, big world!"
    assert regex_truncate("Hello", 0) == ""
    text = "a b c d e f"
    assert regex_token_count(regex_truncate(text, 4)) == 4


def test_format_passages_cuts_the_tail_first():
    text, dropped = format_passages(["a b c", "d e f", "g h"], max_words=5)
    assert text == "[1] a b c\n[2] d e"
    assert dropped == 3
    assert format_passages(["a b", "c"]) == ("[1] a b\n[2] c", 0)


def test_prompts_state_the_bound_in_words():
    task = ReportTask("t", "report on x", ["p1", "p2"], ["first passage", "second one"], 100)
    prompt, dropped = report_prompt(task)
    assert max_words(100) == 75 and "at most 75 words" in prompt
    assert "Report request: report on x" in prompt and dropped == 0
    assert "[1] first passage\n[2] second one" in prompt
    direct, _ = report_prompt(ReportTask("t", "report on x", [], None, 100))
    assert "Passages" not in direct and "at most 75 words" in direct


def test_generate_reports_bounds_truncates_and_retries_empty_outputs():
    calls = []

    def respond(request):
        calls.append((request.sampling.max_tokens, request.sampling.seed))
        if "empty please" in request.prompt and request.sampling.seed == 0:
            return "   "
        return "one two three four five six seven eight"

    runner = runner_for(respond)
    tasks = [ReportTask("a", "q a", ["p"], ["ctx"], 5),
             ReportTask("b", "empty please", ["p"], ["ctx"], 20),
             ReportTask("c", "q c", [], None, 5)]
    out = generate_reports(tasks, runner, truncate=regex_truncate,
                           count_tokens=regex_token_count)
    assert [r["topic_id"] for r in out] == ["a", "b", "c"]
    assert out[0]["report"] == "one two three four five" and out[0]["truncated"]
    assert out[0]["tokens"] == 5 and out[0]["budget"] == 5
    assert out[1]["report"].endswith("eight") and not out[1]["truncated"]
    assert out[2]["prompt"] == "report_direct/cruxflow-v1"
    assert out[0]["prompt"] == "report/cruxflow-v1"
    # max_tokens is the bound; the empty output was asked for again with the next seed
    assert sorted(calls) == [(5, 0), (5, 0), (20, 0), (20, 1)]


def test_judge_reports_rates_every_question_and_skips_empty_reports():
    sent = []

    def respond(request):
        sent.append(request.prompt)
        return "4" if "q1?" in request.prompt else "1"

    out = judge_reports([(["q0?", "q1?"], "a report"), (["q0?"], "  ")], runner_for(respond))
    assert out[0][0] == [1, 4] and out[1][0] == [0]
    assert len(sent) == 2   # the empty report costs no call


def scorer(eta=3):
    ds = tiny_dataset()
    texts = {p: x.contents for p, x in ds.passages.items()}
    return ContextScorer(ds, derive(ds, eta), texts, regex_token_count, MetricOptions(eta=eta))


def test_final_scores_by_hand():
    # tiny_dataset: kept questions q0-q2 at eta 3; Z* = t:0#0 + t:1#2, 10 tokens, Cov(Z*) = 1
    s = scorer()
    frame = final_scores(s, "bm25", "oracle", {"t": [5, 0, 3, 5]}, {"t": 40},
                         {"t": ["t:0#0", "x:0#0"]})
    row = frame.iloc[0]
    assert row.Cov == pytest.approx(2 / 3)            # t:0#0 answers q0 and q1
    assert row.Cov_y == pytest.approx(2 / 3)          # the report: q0 and q2 (q3 is not kept)
    assert row.Den_y == pytest.approx(math.sqrt((2 / 3 / 40) / (1 / 10)))
    assert row.k == "oracle" and row.eta == 3 and row.tokens_y == 40
    # #1 and #2 have no context: only the final metrics; a missing report counts as empty
    direct = final_scores(s, "direct", "oracle", {}, {}, None).iloc[0]
    assert direct.Cov_y == 0.0 and direct.Den_y == 0.0 and "Cov" not in direct


def test_final_scores_at_a_higher_threshold():
    # eta 5: only q0 (t:0#0) and q2 (t:1#2) are answerable; a report rated 4 on q0 fails
    frame = final_scores(scorer(5), "bm25", "oracle", {"t": [4, 0, 5, 0]}, {"t": 10},
                         {"t": ["t:1#2"]})
    row = frame.iloc[0]
    assert row.Cov == pytest.approx(0.5) and row.Cov_y == pytest.approx(0.5)
    assert row.eta == 5


@pytest.mark.model
def test_a_real_report_from_smollm2():
    from cruxflow.llm.llamacpp import LlamaCppBackend

    runner = LLMRunner(LlamaCppBackend(MODEL, n_ctx=2048, threads=1), None)
    task = ReportTask("t", "Please write a report on the 2004 Athens Olympic Games.", ["p"],
                      ["The 2004 Summer Olympics were held in Athens, Greece, from 13 to 29 "
                       "August 2004. 10,625 athletes from 201 countries took part."], 30)
    out = generate_reports([task], runner, truncate=regex_truncate,
                           count_tokens=regex_token_count)[0]
    runner.close()
    assert out["report"].strip() and out["tokens"] <= 30


def test_topic_list_chooses_the_rag_topics(tmp_path):
    known = {"mn-2", "mn-10", "mn-13", "mn-40"}
    path = tmp_path / "topics.txt"
    path.write_text("# the paper's topics\nmn-13\n\nmn-40  # a comment\nmn-2\n")
    chosen = read_topic_list(path, known)
    assert chosen == ["mn-13", "mn-40", "mn-2"]
    judged = {"mn-2": 1, "mn-10": 1, "mn-13": 1}    # mn-40 has no answerable question
    assert rag_topics(judged, None, chosen) == ["mn-13", "mn-2"]
    assert rag_topics(judged, 1, chosen) == ["mn-13"]
    assert rag_topics(judged) == ["mn-10", "mn-13", "mn-2"]
    path.write_text("mn-13\nmn-7\n")
    with pytest.raises(DataError) as e:
        read_topic_list(path, known)
    assert (e.value.path, e.value.record, e.value.field) == (str(path), "line 2", "topic_id")
    assert "mn-7" in str(e.value)
    path.write_text("mn-13\nmn-2\nmn-13\n")
    with pytest.raises(DataError, match="listed twice .first at line 1"):
        read_topic_list(path, known)
    with pytest.raises(DataError, match="no such topic list"):
        read_topic_list(tmp_path / "missing.txt", known)


def test_the_papers_topic_list_names_100_multinews_topics():
    # presets/paper_rag_topics: the ids of the CRUX authors' released RAG examples
    path = Path(__file__).resolve().parents[1] / "presets/paper_rag_topics/multi_news-test.txt"
    ids = read_topic_list(path, {f"multi_news-test-{i}" for i in range(5000)})
    assert len(ids) == 100 and ids[0] == "multi_news-test-13"


def test_rag_topics_and_the_topic_filter():
    assert rag_topics({"b": 1, "a": 1, "c": 1}, 2) == ["a", "b"]
    assert rag_topics({"b": 1, "a": 1}) == ["a", "b"]
    s = scorer()
    assert final_scores(s, "direct", "oracle", {}, {}, None, topics=[]).empty
    assert len(final_scores(s, "direct", "oracle", {}, {}, None, topics=["t"])) == 1
