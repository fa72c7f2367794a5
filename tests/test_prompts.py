"""The CRUX prompts: faithful to the paper's Figures 6-9, and rendered safely."""


import pytest

from cruxflow.llm.prompts import PromptTemplate
from cruxflow.stages.prompts import (
    PASSAGES,
    PROMPTS,
    RATING,
    RATING_PASSAGE_FIRST,
    REPORT,
    REPORT_DIRECT,
    REPORT_REQUEST,
    REPORT_REQUEST_DOCUMENTS,
    SUBQUESTIONS,
    SUBQUESTIONS_DOCUMENTS,
)

# --------------------------------------------------------------------------- registry


def test_registry():
    """Every prompt of crux.toml under its own name, with a version; the paper's figures'
    prompts are version crux-v1, ours cruxflow-v1; every prompt the module names is one of
    the file's (or of the authors' later prompts', researchy.toml)."""
    from cruxflow.stages import prompts as module

    for name, prompt in PROMPTS.items():
        assert prompt.name == name and prompt.version
        assert prompt.id == f"{name}/{prompt.version}"
    assert {p.version for p in (SUBQUESTIONS, PASSAGES, RATING, REPORT_REQUEST)} == {"crux-v1"}
    assert {p.version for p in (RATING_PASSAGE_FIRST, REPORT, REPORT_DIRECT,
                                SUBQUESTIONS_DOCUMENTS, REPORT_REQUEST_DOCUMENTS)} == {
        "cruxflow-v1"}
    named = [v for k, v in vars(module).items() if k.isupper() and isinstance(v, PromptTemplate)]
    known = [*PROMPTS.values(), *module.RESEARCHY.values()]
    assert named and all(any(p is k for k in known) for p in named)


def test_fields():
    assert SUBQUESTIONS.fields == ("n", "document")
    assert PASSAGES.fields == ("document",)
    assert RATING.fields == ("question", "context")
    assert REPORT_REQUEST.fields == ("report",)
    assert REPORT.fields == ("query", "passages", "max_words")
    assert REPORT_DIRECT.fields == ("query", "max_words")
    assert SUBQUESTIONS_DOCUMENTS.fields == ("n", "documents")
    assert REPORT_REQUEST_DOCUMENTS.fields == ("documents",)


def test_templates_are_frozen():
    with pytest.raises(AttributeError):
        RATING.text = "x"  # type: ignore[misc]


@pytest.mark.parametrize("prompt", list(PROMPTS.values()), ids=list(PROMPTS))
def test_plain_ascii_markup(prompt):
    assert "`" not in prompt.text
    assert "*" not in prompt.text
    assert "\\" not in prompt.text
    assert "$\\{" not in prompt.text


# --------------------------------------------------------------------------- paper wording

SUBQUESTIONS_INSTRUCTION = (
    "Instruction: Write {n} diverse questions that can reveal the information contained in the "
    "given document. Each question should be self-contained and have the necessary context. "
    "Write the question within '<q>' and '</q>' tags."
)
PASSAGES_INSTRUCTION = (
    "Instruction: Break down the given document into 2-3 standalone passages of approximately "
    "200 words each, providing essential context and information. Use similar wording and "
    "phrasing as the original document. Write each passages within '<p>' and '</p>' tags."
)
RATING_INSTRUCTION = (
    "Instruction: Determine whether the question can be answered based on the provided context? "
    "Rate the context with on a scale from 0 to 5 according to the guideline below. Do not write "
    "anything except the rating."
)
GUIDELINE = [
    "- 5: The context is highly relevant, complete, and accurate.",
    "- 4: The context is mostly relevant and complete but may have minor gaps or inaccuracies.",
    "- 3: The context is partially relevant and complete, with noticeable gaps or inaccuracies.",
    "- 2: The context has limited relevance and completeness, with significant gaps or "
    "inaccuracies.",
    "- 1: The context is minimally relevant or complete, with substantial shortcomings.",
    "- 0: The context is not relevant or complete at all.",
]
REPORT_REQUEST_INSTRUCTION = (
    "Instruction: Create a statement of report request that corresponds to given report. Write "
    "the report request of approximately 50 words within <r> and </r> tags."
)
UFO_REQUEST = (
    "Report request: <r> Please produce a report on investigations within the United States in "
    "either the public or private sector into Unidentified Flying Objects (UFOs). The report "
    "should cover only investigative activities into still unidentified phenomena, and not the "
    "phenomena themselves. It should include information on the histories, costs, goals, and "
    "results of such investigations.</r>"
)


def test_subquestions_text():
    text = SUBQUESTIONS.text
    assert text.startswith(SUBQUESTIONS_INSTRUCTION + "\n")
    assert "\nDocument: {document}\n" in text
    assert text.endswith("\n\nQuestions:\n<q>")


def test_passages_text():
    text = PASSAGES.text
    assert text.startswith(PASSAGES_INSTRUCTION + "\n")
    assert "\nDocument: {document}\n" in text
    assert text.endswith("\n\nPassages:\n<p>")


def test_rating_text():
    text = RATING.text
    assert text.startswith(RATING_INSTRUCTION + "\n")
    assert "Rate the context with on a scale from 0 to 5" in text  # the paper's wording, kept
    assert "\nGuideline:\n" + "\n".join(GUIDELINE) + "\n" in text
    assert "\nQuestion: {question}\n\nContext: {context}\n\nRating:" in text
    assert text.endswith("Rating:")


def test_report_request_text():
    text = REPORT_REQUEST.text
    assert text.startswith(REPORT_REQUEST_INSTRUCTION + "\n")
    assert "\nReport: Whether you dismiss UFOs as a fantasy" in text
    assert "\u201cProject Blue Book\u201d, commissioned by the U.S. Air Force" in text
    assert "studied reports of \u201cflying saucers\u201d but closed down in 1969" in text
    assert "spent $22 million looking into the issue once again." in text
    assert "\u201cworking group for the study of unidentified aerial phenomena\u201d." in text
    assert "renamed as \u201cUnidentified Aerial Phenomena\u201d examined.\n" in text
    assert "\n" + UFO_REQUEST + "\n" in text
    assert text.endswith("\n\nReport: {report}\n\nReport request: <r>")
    # The example comes before the report to convert.
    assert text.index("Whether you dismiss UFOs") < text.index("{report}")


# --------------------------------------------------------------------------- rendering


def test_render_subquestions():
    out = SUBQUESTIONS.render(n=15, document="The summary.")
    assert out.startswith("Instruction: Write 15 diverse questions that can reveal")
    assert "\nDocument: The summary.\n\nQuestions:\n<q>" in out
    assert "{" not in out


def test_render_passages():
    out = PASSAGES.render(document="Doc text.")
    assert out.endswith("Document: Doc text.\n\nPassages:\n<p>")


def test_render_rating():
    out = RATING.render(question="Who won?", context="Team A won.")
    assert out.endswith("Question: Who won?\n\nContext: Team A won.\n\nRating:")
    assert "\n".join(GUIDELINE) in out


def test_render_report_request_keeps_example_intact():
    out = REPORT_REQUEST.render(report="A new report.")
    assert out.endswith("Report: A new report.\n\nReport request: <r>")
    assert UFO_REQUEST in out
    assert "spent $22 million" in out
    assert out.count("\u201c") == 4 and out.count("\u201d") == 4
    assert out.count("Report: ") == 2


def test_render_braces_in_values_are_literal():
    value = "Use {n} and {document} and {} and {0} and {{x}} and }{"
    out = SUBQUESTIONS.render(n="{document}", document=value)
    assert "Write {document} diverse questions" in out
    assert f"Document: {value}\n" in out


def test_render_is_single_pass():
    out = RATING.render(question="{context}", context="{question}")
    assert "Question: {context}\n\nContext: {question}\n" in out


def test_render_missing_field():
    with pytest.raises(ValueError, match="context"):
        RATING.render(question="Q?")
    with pytest.raises(ValueError, match="n, document"):
        SUBQUESTIONS.render()


def test_render_ignores_extra_fields():
    assert PASSAGES.render(document="d", extra="x") == PASSAGES.render(document="d")


def test_render_converts_values_with_str():
    assert "Write 10 diverse" in SUBQUESTIONS.render(n=10, document="d")


def test_custom_template_literal_braces_and_inferred_fields():
    t = PromptTemplate(name="t", version="v0", text='JSON {"a": 1} for {name}: {name}!')
    assert t.fields == ("name",)
    assert t.id == "t/v0"
    assert t.render(name="x") == 'JSON {"a": 1} for x: x!'


def test_custom_template_declared_fields_only():
    t = PromptTemplate(name="t", version="v0", text="{a} and {b}", fields=("a",))
    assert t.render(a="1") == "1 and {b}"


def test_custom_template_rejects_absent_field():
    with pytest.raises(ValueError, match="missing"):
        PromptTemplate(name="t", version="v0", text="{a}", fields=("a", "missing"))


def test_template_without_fields():
    t = PromptTemplate(name="t", version="v0", text="no placeholders {}")
    assert t.fields == ()
    assert t.render() == "no placeholders {}"
