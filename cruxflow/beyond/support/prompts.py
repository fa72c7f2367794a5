"""The support judge's prompt, its sampling and the parser of its answers (Thakur et al.,
SIGIR 2025, Sec. 3.2): one (sentence, cited passage) pair per prompt, answered with one of
three support levels."""

from __future__ import annotations

from cruxflow.beyond.support.data import FS, NS, PS
from cruxflow.llm import Sampling
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.parsing import parse_rating
from cruxflow.llm.prompts import PromptTemplate

# The paper does not print its judge prompt (Sec. 3.2: "The prompt used for support evaluation
# with GPT-4o is described in Thakur et al. [21]"). This one is ours, faithful to the track's
# assessment: the three level descriptions are Sec. 3.2's wording verbatim, the judge sees only
# the sentence and its cited passage and answers "without any explanation" (Sec. 3.2).
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
# Greedy, a few tokens, the three labels as constrained choices where the backend can (a
# grammar on llama.cpp, structured outputs on vLLM); others parse the free text.
JUDGE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=8, seed=0,
                          choices=JUDGE_CHOICES)

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
