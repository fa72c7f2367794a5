"""The support judge's prompts, their sampling and the parsers of their answers (Thakur et al.,
SIGIR 2025, Sec. 3.2): one (sentence, cited passage) pair per prompt, answered with one of
three support levels.

Two prompts, by name (:data:`JUDGE_PROMPTS`): ``trec2024`` (default), the GPT-4o prompt the
track used, and ``cruxflow-v1``, ours from before it was found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cruxflow.beyond.support.data import FS, NS, PS
from cruxflow.llm import Sampling
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.parsing import parse_rating
from cruxflow.llm.prompts import PromptTemplate

# The track's GPT-4o support prompt, verbatim (leading and trailing newline and trailing spaces
# included): SUPPORT_EVAL_PROMPT of the track's evaluation script, kept as an upstream fixture in
# castorini/RAGDoll, tests/fixtures/upstream/trec2024-rag/support_evaluation_individual_gpt4o.py.
# The script sends it as the only (user) message at temperature 0.1, with the cited segment as
# "<title>: <segment>".
TREC2024_PROMPT = PromptTemplate(
    name="support_trec2024",
    version="gpt4o",
    fields=("statement", "citation"),
    text=(
        "\nIn this task, you will evaluate whether each statement is supported by its "
        "corresponding citations. \nNote that the system responses may appear very fluent and "
        "well-formed, but contain slight inaccuracies that are not easy to discern at first "
        "glance. \nPay close attention to the text. Read it carefully as you would when "
        "proofreading.\n\nYou will be provided with a statement and its corresponding "
        "citation. It may be helpful to ask yourself whether it is accurate to say \"according "
        "to the citation\" with a\nstatement following this phrase. Be sure to check all of "
        "the information in the statement. You will be given three options:\n\n- \"Full "
        "Support\": All of the information in the statement is supported in the citation.\n- "
        "\"Partial Support\": Only some of the information is supported in the citation, but "
        "other parts of the information are missing from the citation.\n- \"No Support\": This "
        "citation does not support any part of the statement.\n\nPlease provide your response "
        "based on the information in the citation. If you are unsure, use your best judgment. "
        "\nRespond as either \"Full Support\", \"Partial Support\", or \"No Support\" with no "
        "additional information.\n\nStatement: {statement}\n\nCitation: {citation}\n\n"
        "Response:\n"
    ),
)
TREC2024_TEMPERATURE = 0.1   # the script's --temperature default, with which the track ran

# Ours, written before the track's prompt was found (the paper does not print it; Sec. 3.2
# refers to Thakur et al. [21]): the three level descriptions are Sec. 3.2's wording verbatim,
# the judge sees only the sentence and its cited passage and answers "without any
# explanation" (Sec. 3.2).
SUPPORT_PROMPT = PromptTemplate(
    name="support",
    version="support-v1",
    text=(
        "In this task, you will judge whether a sentence from an answer is supported by the "
        "passage it cites. Read the sentence and the passage carefully and check all of the "
        "information in the sentence against the passage only, not against what you know "
        "about the topic. Choose one of three support levels:\n"
        "\n"
        "- Full Support: All of the information in the answer sentence is factually "
        "consistent with and supported by the cited passage.\n"
        "- Partial Support: Some of the information in the answer sentence is factually "
        "consistent with and supported by the cited passage, but other parts of the sentence "
        "are not supported.\n"
        "- No Support: The cited passage is completely irrelevant and does not support any "
        "part of the answer sentence.\n"
        "\n"
        "Answer sentence: {sentence}\n"
        "\n"
        "Cited passage: {passage}\n"
        "\n"
        "Answer with the support level only (Full Support, Partial Support or No Support), "
        "without any explanation.\n"
        "\n"
        "Support level:"
    ),
)
JUDGE_CHOICES = ("Full Support", "Partial Support", "No Support")
# The track's temperature, a few tokens, the three labels as constrained choices where the
# backend can (a grammar on llama.cpp, structured outputs on vLLM); others parse the free text.
JUDGE_SAMPLING = Sampling(temperature=TREC2024_TEMPERATURE, top_p=1.0, max_tokens=8, seed=0,
                          choices=JUDGE_CHOICES)
# An unparseable output is asked again with the next seed; under greedy decoding (temperature
# 0) the same request would repeat it, so the retries sample at this temperature.
RETRY_TEMPERATURE = 0.7

# The judge's label phrases; "not fully supported" (a negated FS) is partial support.
SUPPORT_LABELS = LabelSet(
    phrases={r"ful(?:l|ly)|entirely|completely": FS, r"partial(?:ly)?": PS,
             r"(?:no|not|non|un)[\s-]*support\w*|none|irrelevant": NS,
             "fs": FS, "ps": PS, "ns": NS},
    negations={FS: PS}, stages=("anywhere",), pick="first")


def parse_support_label(text: str | None) -> int | None:
    """The support level in a judge's output: 2 (FS), 1 (PS), 0 (NS), or ``None``.

    Tolerant: any case, markdown around it, a preamble ("Support level: Partial Support"), the
    abbreviations ("FS", "PS", "NS"), "fully supported", "not supported", "unsupported". When
    several label phrases occur, the first one counts. Without any phrase, a standalone
    2, 1 or 0 counts ("2", "Label: 1").
    """
    label = parse_label(text, SUPPORT_LABELS)
    return label if label is not None else parse_rating(text, scale=(0, 1, 2))


def parse_trec2024_label(text: str | None) -> int | None:
    """The track's reading of its judge's answer (the script's ``postprocess``): "full
    support" anywhere (any case) is FS, else "partial support" PS, else "no support" NS. An
    answer with none of the three falls back to :func:`parse_support_label`."""
    low = (text or "").lower()
    for phrase, label in (("full support", FS), ("partial support", PS), ("no support", NS)):
        if phrase in low:
            return label
    return parse_support_label(text)


def _title_colon_text(title: str | None, text: str) -> str:
    return f"{title}: {text}" if title else text


def _title_and_text(title: str | None, text: str) -> str:
    return f"Title: {title}\nText: {text}" if title else text


@dataclass(frozen=True)
class JudgePrompt:
    """A judge prompt with how its passage is laid out and its answers read."""

    template: PromptTemplate
    sentence_field: str
    passage_field: str
    passage_layout: Callable[[str | None, str], str]   # (title, text) -> the passage shown
    parse: Callable[[str | None], int | None]

    def render(self, sentence: str, title: str | None, text: str) -> str:
        return self.template.render(**{self.sentence_field: sentence,
                                       self.passage_field: self.passage_layout(title, text)})


JUDGE_PROMPTS = {
    "trec2024": JudgePrompt(TREC2024_PROMPT, "statement", "citation", _title_colon_text,
                            parse_trec2024_label),
    "cruxflow-v1": JudgePrompt(SUPPORT_PROMPT, "sentence", "passage", _title_and_text,
                               parse_support_label),
}
