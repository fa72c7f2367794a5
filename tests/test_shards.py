"""Cutting the LLM stages into shards by work (issue 19), and the demo's split distractors."""

from __future__ import annotations

import pytest
from scripted import runner_for

from cruxflow.data.model import Dataset, Document, Topic
from cruxflow.data.text import split_sentences_into_passages
from cruxflow.stages.passages import decontextualize
from cruxflow.stages.prepare import balanced_shards, documents_of_shard, topics_of_shard


def test_balanced_shards_by_hand():
    # Greedy, heaviest first: a=306 -> shard 0; c=100 -> 1; d=60 -> 1 (160); b=38 -> 1 (198);
    # e=0 -> 1 (198 < 306). Totals 306 / 198 (by count, round-robin gave a,c,e=406 / b,d=98).
    weights = {"a": 306, "b": 38, "c": 100, "d": 60, "e": 0}
    assert balanced_shards(weights, 2) == {"a": 0, "b": 1, "c": 1, "d": 1, "e": 1}
    # ties: the order given decides which key goes first; the lowest shard takes it
    assert balanced_shards({"x": 5, "y": 5, "z": 5}, 2) == {"x": 0, "y": 1, "z": 0}
    assert balanced_shards({"x": 1}, 3) == {"x": 0}
    with pytest.raises(ValueError, match="shards"):
        balanced_shards({"x": 1}, 0)


def _dataset() -> Dataset:
    docs = [Document("T1:d1", "T1", "w " * 300), Document("T2:d1", "T2", "w " * 100),
            Document("T2:d2", "T2", "w " * 150), Document("X:a", None, "w " * 400)]
    topics = {t: Topic(t, "summary", [], "query", ["q1", "q2"]) for t in ("T1", "T2")}
    return Dataset(topics=topics, documents={d.doc_id: d for d in docs})


def test_documents_are_cut_by_the_words_sent_to_the_llm():
    data = _dataset()
    # llm: X:a 400 -> shard 0; T1 300 -> 1; T2 250 -> 1 (550)
    assert [d.doc_id for d in documents_of_shard(data, 0, 2)] == ["X:a"]
    assert [d.doc_id for d in documents_of_shard(data, 1, 2)] == ["T1:d1", "T2:d1", "T2:d2"]
    # split: X:a weighs 0; T1 300 -> 0; T2 250 -> 1; X:a 0 -> 1 (250 < 300)
    assert [d.doc_id for d in documents_of_shard(data, 0, 2, "split")] == ["T1:d1"]
    assert [d.doc_id for d in documents_of_shard(data, 1, 2, "split")] == [
        "T2:d1", "T2:d2", "X:a"]


def test_topics_are_cut_by_pairs():
    data = _dataset()
    assert [t.topic_id for t in topics_of_shard(data, 0, 2, {"T1": 3, "T2": 30})] == ["T2"]
    assert [t.topic_id for t in topics_of_shard(data, 1, 2, {"T1": 3, "T2": 30})] == ["T1"]
    # no weights: one each, so by order
    assert [t.topic_id for t in topics_of_shard(data, 0, 2)] == ["T1"]


def test_split_sentences_into_passages():
    text = "One two three. Four five!  Six seven eight nine? Ten. Eleven"
    # words=4: "One two three." (3) + "Four five!" -> 5 words, cut; "Six .. nine?" 4, cut;
    # "Ten." + "Eleven" = 2 = 4/2, not shorter than half: its own passage
    assert split_sentences_into_passages(text, 4) == [
        "One two three. Four five!", "Six seven eight nine?", "Ten. Eleven"]
    # words=5: the tail "Ten. Eleven" (2 < 2.5) joins the passage before it
    assert split_sentences_into_passages(text, 5) == [
        "One two three. Four five!", "Six seven eight nine? Ten. Eleven"]
    assert split_sentences_into_passages("no end mark at all", 60) == ["no end mark at all"]
    assert split_sentences_into_passages("", 10) == []


def test_split_distractors_make_no_llm_call_and_keep_ids():
    docs = [Document("T1:d1", "T1", "topic text"),
            Document("X:a", None, "A b c. D e f. G h i. J k.")]
    six = "this passage has six words"
    runner = runner_for(lambda r: f"{six} one</p>")
    passages = decontextualize(docs, runner, distractors="split", split_words=3)
    # 3 words each; the tail "J k." (2 words, not under 3 / 2) stays a passage of its own
    assert [(p.id, p.contents) for p in passages] == [
        ("T1:d1#0", f"{six} one"), ("X:a#0", "A b c."), ("X:a#1", "D e f."),
        ("X:a#2", "G h i."), ("X:a#3", "J k.")]
    assert runner.stats.calls == 1
    assert passages[1].topic_id is None and passages[1].doc_id == "X:a"
    with pytest.raises(ValueError, match="distractors"):
        decontextualize(docs, runner, distractors="drop")
