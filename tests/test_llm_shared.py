"""The LLM-output helpers every stage shares: the retry helper, the closed-set label parser and
the first-token probability mass."""

import math

import pytest
from scripted import Scripted

from cruxflow.llm import LLMRunner, Sampling
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.logprobs import class_log_mass, expected_rating, mass, share, strip_token
from cruxflow.llm.retry import ask_with_retries, retry_sampling

# ----------------------------------------------------------------------------- retries

SAMPLED = Sampling(temperature=0.7, seed=5)
GREEDY = Sampling(temperature=0.0, seed=5)


def test_retry_sampling_seeds_and_temperature():
    assert retry_sampling(SAMPLED, 1) is SAMPLED
    assert (retry_sampling(SAMPLED, 3).seed, retry_sampling(SAMPLED, 3).temperature) == (7, 0.7)
    assert retry_sampling(GREEDY, 2) is None                       # the same output again
    s = retry_sampling(GREEDY, 2, retry_temperature=0.9)
    assert (s.seed, s.temperature) == (6, 0.9)
    assert retry_sampling(Sampling(seed=None), 2).seed == 1        # no seed: 0 + 1


def test_ask_with_retries_retries_only_failures_and_records_the_fallback():
    # "b" parses on its third attempt (seed 7), "c" never does
    def respond(r):
        if "a" in r.prompt:
            return "ok-a"
        if "b" in r.prompt:
            return "ok-b" if r.sampling.seed == 7 else "junk"
        return "junk"

    backend = Scripted(respond)
    runner = LLMRunner(backend, None)
    answers = ask_with_retries(runner, ["a", "b", "c"], SAMPLED,
                               lambda t: t[3:] if t.startswith("ok-") else None, attempts=3,
                               fallback=lambda text: f"fallback({text})")
    assert [(a.value, a.attempts, a.failed) for a in answers] == [
        ("a", 1, False), ("b", 3, False), ("fallback(junk)", 3, True)]
    assert backend.seeds("b") == [5, 6, 7] and backend.seeds("a") == [5]
    assert runner.stats.parse_failures == 1


def test_ask_with_retries_greedy_asks_once_and_false_is_a_value():
    backend = Scripted(lambda r: "no")
    runner = LLMRunner(backend, None)
    answers = ask_with_retries(runner, ["x", "y"], GREEDY,
                               lambda t: False if t == "no" else None, attempts=5)
    assert [a.value for a in answers] == [False, False] and len(backend.requests) == 2
    assert runner.stats.parse_failures == 0
    failing = ask_with_retries(runner, ["z"], GREEDY, lambda t: None, attempts=5)
    assert failing[0].failed and failing[0].value is None and len(backend.requests) == 3


def test_ask_with_retries_one_parser_per_prompt_and_no_prompt_no_runner():
    runner = LLMRunner(Scripted(lambda r: "3"), None)
    answers = ask_with_retries(runner, ["p", "q"], SAMPLED,
                               [lambda t: int(t), lambda t: None], attempts=1)
    assert [a.value for a in answers] == [3, None]
    assert ask_with_retries(None, [], SAMPLED, lambda t: t) == []
    with pytest.raises(ValueError, match="1 parsers for 2 prompts"):
        ask_with_retries(runner, ["p", "q"], SAMPLED, [lambda t: t])


# ----------------------------------------------------------------------------- labels

RELEVANCE = LabelSet(phrases={"relevant": "R", "irrelevant": "I"},
                     negations={"R": "I", "I": "R"}, letters={"A": "R", "B": "I"},
                     json_keys=("grade",), stages=("json", "letter", "anywhere"))


@pytest.mark.parametrize("text, label", [
    ("The document is not relevant.", "I"),            # the bug this parser fixes
    ("It isn't relevant to the question", "I"),
    ("The passage is not at all relevant.", "I"),      # two words between
    ("This is not irrelevant.", "R"),
    ("Not relevant: it is about cats.", "I"),
    ("The document is relevant.", "R"),
    ("RELEVANT or IRRELEVANT", None),                  # two labels: no answer
    ('{"motivation": "not relevant at all", "grade": "A"}', "R"),   # the grade decides
    ("B", "I"),
    ("There is no relevant information here.", "I"),
    ("The question is not answered, but the passage is relevant.", "R"),  # negation too far
])
def test_negation_aware_labels(text, label):
    assert parse_label(text, RELEVANCE) == label


def test_pick_first_and_stages():
    first = LabelSet(phrases={"full": 2, "partial": 1, "no support": 0}, negations={2: 1},
                     stages=("anywhere",), pick="first")
    assert parse_label("No support, though some would say full", first) == 0
    assert parse_label("It is not full", first) == 1
    entail = LabelSet(phrases={"yes": "yes", "no": "no"}, stages=("bracket", "leading"))
    assert parse_label("I think [no] because", entail) == "no"
    assert parse_label("Options: [yes], [no]. My answer: [yes]", entail) == "yes"  # echo dropped
    assert parse_label("The text has no answer", entail) is None   # "no" mid-sentence
    assert parse_label("The answer is yes.", entail) == "yes"
    with pytest.raises(ValueError, match="unknown stage"):
        LabelSet(phrases={"a": 1}, stages=("everywhere",))


# ----------------------------------------------------------------------------- token mass

def test_class_log_mass_groups_stripped_tokens():
    lp = {" YES": math.log(0.3), "Yes": math.log(0.1), "\u2581NO": math.log(0.2),
          "The": math.log(0.4), "maybe": float("nan")}
    lm = class_log_mass(lp, lambda t: t.upper() if t.upper() in ("YES", "NO") else None)
    assert mass(lm["YES"]) == pytest.approx(0.4) and mass(lm["NO"]) == pytest.approx(0.2)
    assert share(lm, "YES", ["NO"]) == pytest.approx(0.4 / 0.6)
    assert share({}, "YES", ["NO"]) is None and share({"NO": 0.0}, "YES", ["NO"]) == 0.0
    assert mass(None) == 0.0 and mass(0.01) == 1.0          # clipped to 1
    assert strip_token("\u0120 3\n") == "3"


def test_expected_rating_far_below_float_range():
    # p(1) : p(2) = e^-1000 : e^-1001 -> weights 1 and 1/e: E = (1 + 2/e) / (1 + 1/e)
    expected, m = expected_rating({"1": -1000.0, "2": -1001.0})
    assert expected == pytest.approx((1 + 2 / math.e) / (1 + 1 / math.e))
    assert m == 0.0
