"""Parsers of LLM outputs: tagged items, ratings, expected ratings, document segmentation."""

import math

import pytest

from cruxflow.data.text import count_words, split_long_document
from cruxflow.llm.logprobs import expected_rating
from cruxflow.llm.parsing import (
    PASSAGE_TEXT,
    REPORT_REQUEST_TEXT,
    SUBQUESTION_TEXT,
    extract_tagged,
    instructions_of,
    parse_free_rating,
    parse_rating,
)

# --------------------------------------------------------------------------- extract_tagged


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Well-formed, unprimed.
        ("<q>What is A?</q><q>What is B?</q>", ["What is A?", "What is B?"]),
        # Primed: the generation starts inside the first item.
        ("What is A?</q>\n<q>What is B?</q>", ["What is A?", "What is B?"]),
        # Unclosed last item runs to the end.
        ("What is A?</q>\n<q>What is B?", ["What is A?", "What is B?"]),
        ("<q>What is A?</q><q>What is B?\n", ["What is A?", "What is B?"]),
        # Missing closing tags between items.
        ("<q>a <q>b", ["a", "b"]),
        ("<q>a\n<q>b</q>\n<q>c", ["a", "b", "c"]),
        # Stray text between items is ignored.
        ("A?</q>\nand now another one:\n<q>B?</q> Done! I hope this helps.", ["A?", "B?"]),
        # Uppercase and spaced tags.
        ("<Q>A?</Q> <q >B?< /q> < Q>C?</ q >", ["A?", "B?", "C?"]),
        # Empty items are dropped.
        ("<q></q><q>  </q><q>A?</q><q>\n</q>", ["A?"]),
        # Numbering and bullets are stripped.
        (
            "1. A?</q>\n<q>2) B?</q><q>- C?</q><q>Q4: D?</q><q>(5) E?</q><q>* F?</q>",
            ["A?", "B?", "C?", "D?", "E?", "F?"],
        ),
        ("<q>Question 1: A?</q><q>- 2. B?</q><q>#3. C?</q>", ["A?", "B?", "C?"]),
        # Whitespace is collapsed.
        ("<q>  What\n is \t A? </q>", ["What is A?"]),
        # Duplicates (case-insensitive) keep the first occurrence.
        ("<q>What is A?</q><q>what is a?</q><q>B?</q><q>WHAT IS A?</q>", ["What is A?", "B?"]),
        ("1. A?</q><q>A?</q>", ["A?"]),
    ],
)
def test_extract_tagged(text, expected):
    assert extract_tagged(text, "q") == expected


def test_extract_tagged_preamble_before_opening_tag_is_ignored():
    text = "Sure! Here are the questions:\n<q>A?</q>\n<q>B?</q>"
    assert extract_tagged(text, "q") == ["A?", "B?"]


def test_extract_tagged_unprimed_ignores_text_before_first_closing_tag():
    text = "A?</q>\n<q>B?</q>"
    assert extract_tagged(text, "q", primed=False) == ["B?"]
    assert extract_tagged(text, "q", primed=True) == ["A?", "B?"]


def test_extract_tagged_only_splits_on_the_requested_tag_and_drops_stray_tags():
    # Other short tags do not split items; small models leak them ("<m>", "<r>"), so they go.
    text = "First passage.</p>\n<p>Second <q>not a tag of interest</q> passage.</p>"
    assert extract_tagged(text, "p") == [
        "First passage.",
        "Second not a tag of interest passage.",
    ]
    assert extract_tagged("What?</q><q><m>Ridgeline said no. Why?</q>", "q") == [
        "What?", "Ridgeline said no. Why?"]


def test_extract_tagged_accepts_bracketed_tag_name():
    assert extract_tagged("<r>A request.</r>", "<r>") == ["A request."]


def test_extract_tagged_report_request_primed():
    text = " Please produce a report on X. It should cover Y.</r>\n\nReport: something else"
    assert extract_tagged(text, "r") == ["Please produce a report on X. It should cover Y."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is A?\nWhat is B?\n", ["What is A?", "What is B?"]),
        (
            "1. What is A?\n\n2. What is B?\n3) What is C?",
            ["What is A?", "What is B?", "What is C?"],
        ),
        ("- A?\n* B?\n  \nQ3: C?\nA?", ["A?", "B?", "C?"]),
    ],
)
def test_extract_tagged_without_tags_falls_back_to_lines(text, expected):
    assert extract_tagged(text, "q") == expected


def test_extract_tagged_keeps_numbers_that_are_not_enumerations():
    text = "<q>2024 was a record year: why?</q><q>1.5 million people attended what?</q>"
    assert extract_tagged(text, "q") == [
        "2024 was a record year: why?",
        "1.5 million people attended what?",
    ]


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "<q></q>", "</q>"])
def test_extract_tagged_empty(text):
    assert extract_tagged(text, "q") == []


def test_extract_tagged_rejects_empty_tag():
    with pytest.raises(ValueError):
        extract_tagged("<q>a</q>", "")


# --------------------------------------------------------------------------- parse_rating


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4", 4),
        (" 4", 4),
        ("4.", 4),
        ("4\n", 4),
        ("Rating: 4", 4),
        ("4/5", 4),
        ("**4**", 4),
        ("4 - the context is mostly relevant", 4),
        ("0", 0),
        ("5", 5),
        ("Rating: 0 (not relevant)", 0),
        ("I would rate it 3 out of 5.", 3),
        ("Q1 is answered: 2", 2),  # "1" in "Q1" is not standalone
    ],
)
def test_parse_rating(text, expected):
    assert parse_rating(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "The context is relevant",
        "7",
        "-1",
        "Rating: -1",
        "10",
        "2024",
        "In 2024 the rating is 3",  # first standalone integer is 2024: outside the scale
        "3.5",
        "1,000",
        "five",
        None,
    ],
)
def test_parse_rating_none(text):
    assert parse_rating(text) is None


def test_parse_rating_custom_scale():
    assert parse_rating("7", scale=range(0, 11)) == 7
    assert parse_rating("10", scale=range(0, 11)) == 10
    assert parse_rating("0", scale=range(1, 6)) is None
    assert parse_rating("1", scale=[0, 1]) == 1


def test_parse_rating_returns_plain_int():
    assert type(parse_rating("3")) is int


# --------------------------------------------------------------------------- parse_free_rating
# The CRUX authors' reading of up to 5 freely decoded tokens (augmentation/gen_ratings.py on
# their main branch): the first digit, else -1.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" 4", 4),
        ("4.", 4),
        ("Rating: 3\n\nQuestion", 3),
        ("**5**", 5),
        ("10", 1),                   # the first digit, not the number
        ("3.5", 3),
        ("Q1 is answered: 2", 1),    # unlike parse_rating: any digit, even inside a word
        ("", -1),
        ("   ", -1),
        ("The context is relevant", -1),
        (None, -1),
        ("7", -1),                   # a first digit off the 0-5 scale: no rating
        ("-2", -1),                  # a minus sign before it is part of it: off the scale
        ("-", -1),
        ("\uff14", 4),              # full-width 4: the authors' \\d matches it, int() reads it
        ("Rating: \uff13.", 3),
        ("\uff17", -1),             # full-width 7: off the scale like "7"
    ],
)
def test_parse_free_rating(text, expected):
    assert parse_free_rating(text) == expected
    assert type(parse_free_rating(text)) is int


# --------------------------------------------------------------------------- expected_rating


def test_expected_rating_hand_computed():
    lp = {"3": math.log(0.5), "4": math.log(0.25), "The": math.log(0.25)}
    expected, mass = expected_rating(lp)
    assert expected == pytest.approx((3 * 0.5 + 4 * 0.25) / 0.75)  # 3.3333...
    assert expected == pytest.approx(10 / 3)
    assert mass == pytest.approx(0.75)


def test_expected_rating_sums_whitespace_variants():
    lp = {" 3": math.log(0.25), "3": math.log(0.25), "5": math.log(0.5)}
    expected, mass = expected_rating(lp)
    assert expected == pytest.approx(3 * 0.5 + 5 * 0.5)  # 4.0
    assert mass == pytest.approx(1.0)


def test_expected_rating_ignores_tokens_outside_scale():
    lp = {
        "2": math.log(0.2),
        "6": math.log(0.3),
        "10": math.log(0.1),
        "-1": math.log(0.1),
        "Rating": math.log(0.2),
        "0": math.log(0.1),
    }
    expected, mass = expected_rating(lp)
    assert expected == pytest.approx((2 * 0.2 + 0 * 0.1) / 0.3)
    assert mass == pytest.approx(0.3)


def test_expected_rating_single_token():
    expected, mass = expected_rating({"5": 0.0})
    assert expected == 5.0
    assert mass == 1.0


def test_expected_rating_tokenizer_space_markers():
    lp = {"\u25814": math.log(0.5), "\u01202": math.log(0.5)}  # "▁4", "Ġ2"
    expected, mass = expected_rating(lp)
    assert expected == pytest.approx(3.0)
    assert mass == pytest.approx(1.0)


@pytest.mark.parametrize(
    "lp",
    [None, {}, {"The": -0.1, "Rating": -2.5}, {"3": -math.inf}, {"3": float("nan")}],
)
def test_expected_rating_none(lp):
    assert expected_rating(lp) == (None, 0.0)


def test_expected_rating_numerically_stable_with_tiny_probabilities():
    # exp(-1000) underflows to 0.0: a naive implementation would divide by zero.
    lp = {"1": -1000.0, "2": -1000.0 - math.log(3.0)}
    expected, mass = expected_rating(lp)
    assert expected == pytest.approx((1 * 1.0 + 2 * (1 / 3)) / (1 + 1 / 3))
    assert 0.0 <= mass < 1e-300


def test_expected_rating_mass_clipped_and_plain_floats():
    np = pytest.importorskip("numpy")
    lp = {"4": np.float32(0.0), " 4": np.float32(-0.5)}  # rounding: probabilities sum above 1
    expected, mass = expected_rating(lp)
    assert expected == pytest.approx(4.0)
    assert mass == 1.0
    assert type(expected) is float and type(mass) is float


def test_expected_rating_custom_scale():
    lp = {"7": math.log(0.5), "9": math.log(0.5)}
    assert expected_rating(lp) == (None, 0.0)
    expected, mass = expected_rating(lp, scale=range(0, 11))
    assert expected == pytest.approx(8.0)
    assert mass == pytest.approx(1.0)


# --------------------------------------------------------------------------- segmentation


def _doc(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_count_words():
    assert count_words("") == 0
    assert count_words("  one\ttwo\n\nthree  ") == 3
    assert count_words(_doc(1025)) == 1025


def test_split_long_document_at_limit_is_whole_and_unchanged():
    text = "  " + _doc(1024).replace(" w5 ", "\n\nw5\t") + "\n"
    assert count_words(text) == 1024
    assert split_long_document(text) == [text]


def test_split_long_document_1025_words():
    chunks = split_long_document(_doc(1025))
    assert [count_words(c) for c in chunks] == [512, 512, 1]
    assert chunks[0] == _doc(512)
    assert chunks[2] == "w1024"


def test_split_long_document_2000_words():
    text = "\n".join(_doc(2000).split())  # newlines become single spaces in chunks
    chunks = split_long_document(text)
    assert [count_words(c) for c in chunks] == [512, 512, 512, 464]
    assert " ".join(chunks) == _doc(2000)
    assert all("\n" not in c for c in chunks)


def test_split_long_document_short_and_empty():
    assert split_long_document("a short document") == ["a short document"]
    assert split_long_document("") == [""]


def test_split_long_document_custom_sizes():
    assert split_long_document("a b c d e", max_words=4, chunk_words=2) == ["a b", "c d", "e"]
    assert split_long_document("a b c d", max_words=4, chunk_words=2) == ["a b c d"]
    assert split_long_document("a b c", max_words=2, chunk_words=2) == ["a b", "c"]


@pytest.mark.parametrize(("max_words", "chunk_words"), [(512, 1024), (10, 0), (0, 0), (10, -1)])
def test_split_long_document_validates_sizes(max_words, chunk_words):
    with pytest.raises(ValueError):
        split_long_document("a b c", max_words=max_words, chunk_words=chunk_words)


# --- text of the kind asked for (TextCheck), on outputs written by hand


@pytest.mark.parametrize("item, problem", [
    # issue 38: the 135M model's "report request" for topic congress
    ("2021-04-25 23:38:39.132-12-25-2022-01-10-158.77-14.30.7.2-268-23-1.222.8.2020-02-04",
     "no words"),
    ("", "no words"),
    ("?? -- 1) ...", "no words"),
    ("Dam: 42 17 99 1000 2024 12 13 14", "mostly digits and symbols"),
    ("Write " + "about dams and levees " * 50, "too long (201 words, more than 200)"),
    ("Please produce a report on the history of the levees of New Orleans and the floods that "
     "broke them.", None),
])
def test_report_request_checks(item, problem):
    assert REPORT_REQUEST_TEXT.problem(item) == problem


def test_words_are_two_letters_or_more():
    # "a" and "I" are not counted; "it", "on" are: three words is the least request
    assert REPORT_REQUEST_TEXT.problem("a I x on it") == "too short (2 words, fewer than 3)"
    assert REPORT_REQUEST_TEXT.problem("Report on it") is None


def test_a_copy_of_the_prompt_is_caught_and_the_inputs_words_are_not():
    from cruxflow.stages.prompts import PASSAGES, REPORT_REQUEST, SUBQUESTIONS

    own = instructions_of(REPORT_REQUEST)
    # the prompt's own example request (its in-context example), copied
    example = ("Please produce a report on investigations within the United States in either "
               "the public or private sector into Unidentified Flying Objects (UFOs).")
    assert REPORT_REQUEST_TEXT.problem(example, own) == "a copy of the prompt's instructions"
    # eight words in a row of the instruction, lower case and punctuation aside
    echo = "break down the given document into 2-3 standalone passages, then more text here"
    assert PASSAGE_TEXT.problem(echo, instructions_of(PASSAGES)) == \
        "a copy of the prompt's instructions"
    # seven in a row are not a copy; a passage repeating its document is what Fig. 7 asks
    assert PASSAGE_TEXT.problem("break down the given document into 2-3 pieces of text",
                                instructions_of(PASSAGES)) is None
    question = "Write diverse questions that can reveal the information contained in it?"
    assert SUBQUESTION_TEXT.problem(question, instructions_of(SUBQUESTIONS)) == \
        "a copy of the prompt's instructions"


def test_length_limits_are_the_prompts_own():
    assert PASSAGE_TEXT.problem(" ".join(["word"] * 600)) is None          # 3 x ~200
    assert PASSAGE_TEXT.problem(" ".join(["word"] * 601)).startswith("too long")
    assert PASSAGE_TEXT.with_min_words(20).problem("a few words only here").startswith(
        "too short")
    assert SUBQUESTION_TEXT.problem("Why?") == "too short (1 words, fewer than 3)"
    assert SUBQUESTION_TEXT.problem("Why did the river rise?") is None
