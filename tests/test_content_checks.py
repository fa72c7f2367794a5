"""Checks of generated content a reader would notice (cruxflow/stages/checks.py): each rule on
inputs made by hand, counted by hand; the threshold; and the shipped hand-written demo data,
which passes every check. (The packaged model's content, flagged, is checked on the walk-through
project: tests/test_init.py::test_walk_through_summary_flags_the_content.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from cruxflow.data.model import Document, Passage, Topic
from cruxflow.stages import checks as C

REPO = Path(__file__).resolve().parents[1]


def test_content_words_are_lowercase_alphabetic_tokens_without_stopwords():
    # "What", "is", "the", "of", "a" are stopwords; "s" and "I" are one letter; "2023" is no
    # word; "Write" and "report" are the request genre's words
    assert C.content_words("Write a report: What is the Tully River's flood of 2023? I ask.") \
        == {"tully", "river", "flood", "ask"}
    assert C.content_words("How and why, when?") == set()


TOPICS = {"dam": Topic("dam", None, ["dam:0", "dam:1"]), "none": Topic("none", None, [])}
DOCS = {
    "dam:0": Document("dam:0", "dam", "The Halden Ridge Dam failed in 1958 after twenty five "
                                      "days of rain.", title="Dam failure"),
    "dam:1": Document("dam:1", "dam", "About 4,200 residents of Marlow Falls were evacuated."),
}


def test_a_request_sharing_no_content_word_with_the_documents_is_flagged():
    requests = {"dam": "Write a report on UFO sightings over Nevada and what people saw."}
    [counts] = C.request_checks(requests, TOPICS, DOCS)
    assert (counts.flagged, counts.checked, counts.topics) == (1, 1, {"dam": [1, 1]})
    assert "UFO sightings" in counts.example
    # one shared word is enough ("residents", from the second document; "failure" from a title)
    for text in ("Write a report on the residents.", "Describe the failure."):
        [counts] = C.request_checks({"dam": text}, TOPICS, DOCS)
        assert counts.flagged == 0 and counts.checked == 1


def test_sub_questions_off_topic_and_fewer_than_asked():
    topics = {**TOPICS, "b": Topic("b", None, ["dam:1"])}
    questions = {"dam": ["When did the dam fail?", "Who won the World Cup?"],   # 1 off topic
                 "b": ["How many residents left?", "Where is Marlow?", "Why?"],   # "Why?": none
                 "none": ["Anything?"]}   # a topic without documents: not compared
    off, few = C.subquestion_checks(questions, 3, topics, DOCS)
    assert off.check is C.OFF_TOPIC_QUESTION and few.check is C.TOO_FEW_QUESTIONS
    assert off.topics == {"dam": [1, 2], "b": [1, 3]}
    assert (off.flagged, off.checked) == (2, 5)
    # 2 of 3 asked (dam), 3 of 3 (b), 1 of 3 (none): 2 of 3 topics have fewer
    assert few.topics == {"dam": [1, 1], "b": [0, 1], "none": [1, 1]}
    assert few.example == "dam: 2 of 3 asked"


def test_entities_are_capitalised_words_not_starting_a_sentence_and_numbers():
    text = ('The dam, built in 1958 by Ridgeline Power, failed. It held 4,200 acre-feet; '
            '"Water rose," said Carla Nunez.\nSheriff Lee agreed. I saw it.')
    # left out: The and It (a sentence's first word), Water (a clause's, after "; " and a
    # quote), Sheriff (a line's), I (one letter); 4,200 is 4200
    assert C.entities_and_numbers(text) == ["Ridgeline", "Power", "Carla", "Nunez", "Lee",
                                            "1958", "4200"]


def test_spelled_numbers_count_as_the_number():
    assert C.spelled_numbers("twenty five Years, seven Years, forty-two, ninety") == {
        "20", "25", "5", "7", "40", "42", "2", "90"}


def test_a_passage_naming_what_its_document_lacks_is_flagged():
    passages = [
        Passage("dam:0#0", "The dam failed in 1958 after 25 days of rain.", "dam", "dam:0"),
        Passage("dam:0#1", "The Halden Ridge Dam was run by Acme Corp since 1960.", "dam",
                "dam:0"),
        Passage("dam:1#2", "Officials evacuated 4200 residents of Marlow Falls.", "dam", "dam:1"),
        Passage("x:0#0", "Nothing here names Paris or 1789.", None, "x:0"),
        Passage("y:0#0", "Not one of the documents given: Tokyo.", "y", "y:0"),
    ]
    docs = {**DOCS, "x:0": Document("x:0", None, "A distractor about Paris.")}
    [counts] = C.passage_checks(passages, docs)
    # dam:0#0: 1958 and 25 (spelled) are in dam:0; dam:0#1: Acme, Corp, 1960 are not;
    # dam:1#2: all in dam:1; x:0#0 (a distractor): 1789 is not; y:0#0: no such document
    assert counts.topics == {"dam": [1, 3], C.NO_TOPIC: [1, 1]}
    assert counts.example == "dam:0#1: Acme, Corp, 1960 not in dam:0"


def test_the_threshold_is_a_share_passed_not_reached():
    counts = C.CheckCounts(C.UNSUPPORTED_FACTS, {"a": [1, 4]})
    assert counts.share == 0.25 and not counts.unfit() and C.verdict("d", [counts]) is None
    counts = C.CheckCounts(C.UNSUPPORTED_FACTS, {"a": [1, 4], "b": [1, 1]})
    assert counts.share == 0.4 and counts.unfit()
    line = C.verdict("d", [counts, C.CheckCounts(C.OFF_TOPIC_REQUEST, {"a": [0, 2]})])
    assert line.startswith("d: the generated content is not fit for conclusions")
    assert "passages unsupported_facts 2 of 5 (40%)" in line
    assert "off_topic" not in line and "8B parameters or more" in line
    assert "\n" not in line


def test_shards_merge_into_one_count_per_stage_and_check():
    one = C.CheckCounts(C.UNSUPPORTED_FACTS, {"a": [1, 2]}, "a:0#1: X not in a:0")
    two = C.CheckCounts(C.UNSUPPORTED_FACTS, {"a": [0, 1], "b": [2, 2]}, "b:0#0: Y not in b:0")
    request = C.CheckCounts(C.OFF_TOPIC_REQUEST, {"a": [0, 1]})
    merged = C.merged([("passages", [one.to_json()]), ("passages", [two.to_json()]),
                       ("report_requests", [request.to_json()])])
    assert [(c.check, c.topics) for c in merged] == [
        (C.UNSUPPORTED_FACTS, {"a": [1, 3], "b": [2, 2]}), (C.OFF_TOPIC_REQUEST, {"a": [0, 1]})]
    assert merged[0].example == "a:0#1: X not in a:0"
    assert merged[0].describe() == ("3 of 5 passages name entities or numbers their source "
                                    "document lacks (a 1/3, b 2/2)")


@pytest.fixture(scope="module")
def demo():
    """The shipped hand-written demo: its documents (raw Multi-News and the distractors), and
    its requests, sub-questions and passages (the CRUX release form, resources/demo/crux)."""
    from cruxflow.data.ingest import IngestOptions, ingest, read_distractors

    raw, _ = ingest("multinews", REPO / "resources/demo/raw/multinews/demo.jsonl",
                    IngestOptions(prefix="demo"))
    crux, _ = ingest("crux", REPO / "resources/demo/crux", IngestOptions())
    documents = dict(raw.documents)
    documents.update((d.doc_id, d) for d in read_distractors(
        REPO / "resources/demo/raw/distractors.jsonl", "demo-distractors"))
    return raw, crux, documents


def test_the_hand_written_demo_passes_every_check(demo):
    raw, crux, documents = demo
    counts = [*C.request_checks({t: x.query for t, x in crux.topics.items()}, raw.topics,
                                documents),
              *C.subquestion_checks({t: x.questions for t, x in crux.topics.items()}, 10,
                                    raw.topics, documents),
              *C.passage_checks(crux.passages.values(), documents)]
    # 10 topics, 1 request and 10 sub-questions each; 99 passages of the topics' 41 documents
    # and 95 of the 50 distractors (resources/demo/README.md)
    assert [(c.check.stage, c.check.name, c.flagged, c.checked) for c in counts] == [
        ("report_requests", "off_topic", 0, 10), ("subquestions", "off_topic", 0, 100),
        ("subquestions", "too_few_questions", 0, 10),
        ("passages", "unsupported_facts", 0, 99 + 95)]
    assert C.verdict("demo-crux", counts) is None


def test_a_demo_passage_with_a_changed_fact_is_flagged(demo):
    """The same check on the demo, one passage's number and one's name changed by hand."""
    _, crux, documents = demo
    passages = list(crux.passages.values())[:3]
    first, second = passages[0].contents, passages[1].contents
    assert "1958" in first and "Ridgeline Power Co." in second
    passages[0] = Passage(passages[0].id, first.replace("1958", "1985"), "demo-0",
                          passages[0].doc_id)
    passages[1] = Passage(passages[1].id, second.replace("Ridgeline", "Riverline"), "demo-0",
                          passages[1].doc_id)
    [counts] = C.passage_checks(passages, documents)
    assert counts.topics == {"demo-0": [2, 3]}
    assert counts.example == "demo-0:0#0: 1985 not in demo-0:0"
