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
from cruxflow.llm.prompts import PromptTemplate, load_prompts

# The track's GPT-4o support prompt, verbatim (cruxflow/prompts/support.toml, with its source).
# The script sends it as the only (user) message at temperature 0.1, with the cited segment as
# "<title>: <segment>".
TREC2024_PROMPT = load_prompts("support")["support_trec2024"]
TREC2024_TEMPERATURE = 0.1   # the script's --temperature default, with which the track ran

# Ours, written before the track's prompt was found (the paper does not print it; Sec. 3.2
# refers to Thakur et al. [21]): the three level descriptions (its rubric) are Sec. 3.2's
# wording verbatim, the judge sees only the sentence and its cited passage and answers
# "without any explanation" (Sec. 3.2).
SUPPORT_PROMPT = load_prompts("support")["support"]
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
