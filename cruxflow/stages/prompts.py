"""The CRUX prompts (Ju et al. 2025) as versioned templates.

The texts are copied from the paper's appendix figures, wording unchanged (typos included,
e.g. "Rate the context with on a scale"), with the markdown of the paper's rendering removed:
tags are plain ASCII (``<q>``, ``<p>``, ``<r>``), without backticks or italics.

- ``SUBQUESTIONS`` -- Figure 6, "Sub-questions Generation": ``n`` diverse sub-questions from
  the oracle summary (``n = 15`` for CRUX-DUC, ``n = 10`` for Multi-News). Fields: ``n``,
  ``document``.
- ``PASSAGES`` -- Figure 7, "Passage Generation": 2-3 decontextualized passages per document
  (documents longer than 1024 words are segmented first, see
  :func:`cruxflow.llm.parsing.split_long_document`). Field: ``document``.
- ``RATING`` -- Figure 8, "Graded Rating Generation": 0-5 answerability of a question given a
  context, with the paper's guideline. Fields: ``question``, ``context``.
- ``REPORT_REQUEST`` -- Figure 9, "Open-ended Query Generation": a ~50-word report request
  from a report, with the paper's in-context example (the UFO report of Lawrie et al. 2024;
  its typographic quotes are kept, the LaTeX escape in ``\\$22 million`` is dropped).
  Field: ``report``.

Three more prompts are ours, versioned like the others. The paper does not print its RAG
generation prompt (Sec. 4.1 says only that all generations share one configuration, and
footnote 7 that the prompt states the length bound token(Z*) and longer outputs are truncated):

- ``REPORT`` -- the report of a RAG system: the open-ended query, the numbered context
  passages and the length bound. Fields: ``query``, ``passages``, ``max_words``.
- ``REPORT_DIRECT`` -- the same without context, for direct prompting (Table 1, row #1).
  Fields: ``query``, ``max_words``.
- ``RATING_PASSAGE_FIRST`` -- Figure 8 reordered (``llm.ratings.layout: passage_first``):
  the same instruction and guideline, then the context, then the question, then "Rating:".
  The ten to fifteen prompts that rate one passage then share everything up to the question,
  so a backend that reuses a prompt's KV prefix computes the passage once (docs/ratings.md).
  Fields: ``question``, ``context``.

Two more serve topics of one's own that come without a reference summary
(``cruxflow ingest --format documents``, docs/own-data.md). The paper always generates the
request and the sub-questions from the human summary y*; without one, these prompts ask the same
of the topic's documents, numbered and clipped to share a word budget. They are not the paper's
method, and a dataset built with them is not comparable with CRUX's:

- ``SUBQUESTIONS_DOCUMENTS`` -- Figure 6's instruction over a topic's documents instead of one
  summary. Fields: ``n``, ``documents``.
- ``REPORT_REQUEST_DOCUMENTS`` -- Figure 9's instruction, a report request that the documents
  together answer, without the paper's in-context example (a report, not documents). Field:
  ``documents``.

Each of the paper's prompts ends with its figure's primer ("Questions:\\n<q>",
"Passages:\\n<p>", "Rating:", "Report request: <r>"), so generations usually start inside the
first tagged item; see :func:`cruxflow.llm.parsing.extract_tagged`.
"""

from __future__ import annotations

from cruxflow.llm.prompts import PromptTemplate

__all__ = [
    "PASSAGES",
    "PROMPTS",
    "RATING",
    "RATING_PASSAGE_FIRST",
    "REPORT",
    "REPORT_DIRECT",
    "REPORT_REQUEST",
    "REPORT_REQUEST_DOCUMENTS",
    "SUBQUESTIONS",
    "SUBQUESTIONS_DOCUMENTS",
    "VERSION",
]

VERSION = "crux-v1"


SUBQUESTIONS = PromptTemplate(
    name="subquestions",
    version=VERSION,
    fields=("n", "document"),
    text=(
        "Instruction: Write {n} diverse questions that can reveal the information contained in "
        "the given document. Each question should be self-contained and have the necessary "
        "context. Write the question within '<q>' and '</q>' tags.\n"
        "\n"
        "Document: {document}\n"
        "\n"
        "Questions:\n"
        "<q>"
    ),
)

PASSAGES = PromptTemplate(
    name="passages",
    version=VERSION,
    fields=("document",),
    text=(
        "Instruction: Break down the given document into 2-3 standalone passages of "
        "approximately 200 words each, providing essential context and information. Use similar "
        "wording and phrasing as the original document. Write each passages within '<p>' and "
        "'</p>' tags.\n"
        "\n"
        "Document: {document}\n"
        "\n"
        "Passages:\n"
        "<p>"
    ),
)

# Fig. 8's instruction and guideline: shared by both layouts of the rating prompt.
_RATING_INSTRUCTIONS = (
    "Instruction: Determine whether the question can be answered based on the provided "
    "context? Rate the context with on a scale from 0 to 5 according to the guideline below. "
    "Do not write anything except the rating.\n"
    "\n"
    "Guideline:\n"
    "- 5: The context is highly relevant, complete, and accurate.\n"
    "- 4: The context is mostly relevant and complete but may have minor gaps or "
    "inaccuracies.\n"
    "- 3: The context is partially relevant and complete, with noticeable gaps or "
    "inaccuracies.\n"
    "- 2: The context has limited relevance and completeness, with significant gaps or "
    "inaccuracies.\n"
    "- 1: The context is minimally relevant or complete, with substantial shortcomings.\n"
    "- 0: The context is not relevant or complete at all.\n"
    "\n"
)

RATING = PromptTemplate(
    name="rating",
    version=VERSION,
    fields=("question", "context"),
    text=(
        _RATING_INSTRUCTIONS
        + "Question: {question}\n"
        "\n"
        "Context: {context}\n"
        "\n"
        "Rating:"
    ),
)

RATING_PASSAGE_FIRST = PromptTemplate(
    name="rating-passage-first",
    version="cruxflow-v1",
    fields=("question", "context"),
    text=(
        _RATING_INSTRUCTIONS
        + "Context: {context}\n"
        "\n"
        "Question: {question}\n"
        "\n"
        "Rating:"
    ),
)

_UFO_REPORT = (
    "Whether you dismiss UFOs as a fantasy or believe that extraterrestrials are visiting the "
    "Earth and flying rings around our most sophisticated aircraft, the U.S. government has been "
    "taking them seriously for quite some time. \u201cProject Blue Book\u201d, commissioned by "
    "the U.S. Air Force, studied reports of \u201cflying saucers\u201d but closed down in 1969 "
    "with a conclusion that they did not present a threat to the country. As the years went by "
    "UFO reports continued to be made and from 2007 to 2012 the Aerospace Threat Identification "
    "Program, set up under the sponsorship of Senator Harry Reid, spent $22 million looking into "
    "the issue once again. Later, the Pentagon formed a \u201cworking group for the study of "
    "unidentified aerial phenomena\u201d. This study, staffed with personnel from Naval "
    "Intelligence, was not aimed at finding extraterrestrials, but rather at determining whether "
    "craft were being flown by potential U.S. opponents with new technologies. In June, 2022, in "
    "a report issued by the Office of the Director for National Intelligence and based on the "
    "observations made by members of the U.S. military and intelligence from 2004 to 2021 it was "
    "stated that at that time there was, with one exception, not enough information to explain "
    "the 144 cases of what were renamed as \u201cUnidentified Aerial Phenomena\u201d examined."
)

_UFO_REQUEST = (
    "Please produce a report on investigations within the United States in either the public or "
    "private sector into Unidentified Flying Objects (UFOs). The report should cover only "
    "investigative activities into still unidentified phenomena, and not the phenomena "
    "themselves. It should include information on the histories, costs, goals, and results of "
    "such investigations."
)

REPORT_REQUEST = PromptTemplate(
    name="report_request",
    version=VERSION,
    fields=("report",),
    text=(
        "Instruction: Create a statement of report request that corresponds to given report. "
        "Write the report request of approximately 50 words within <r> and </r> tags.\n"
        "\n"
        f"Report: {_UFO_REPORT}\n"
        "\n"
        f"Report request: <r> {_UFO_REQUEST}</r>\n"
        "\n"
        "Report: {report}\n"
        "\n"
        "Report request: <r>"
    ),
)

REPORT = PromptTemplate(
    name="report",
    version="cruxflow-v1",
    fields=("query", "passages", "max_words"),
    text=(
        "Instruction: Write a report that responds to the report request below. Use the "
        "information in the given passages; they were retrieved for this request and some may "
        "be irrelevant or repeat each other. Write at most {max_words} words, in plain prose. "
        "Write only the report.\n"
        "\n"
        "Report request: {query}\n"
        "\n"
        "Passages:\n"
        "{passages}\n"
        "\n"
        "Report:"
    ),
)

REPORT_DIRECT = PromptTemplate(
    name="report_direct",
    version="cruxflow-v1",
    fields=("query", "max_words"),
    text=(
        "Instruction: Write a report that responds to the report request below. Write at most "
        "{max_words} words, in plain prose. Write only the report.\n"
        "\n"
        "Report request: {query}\n"
        "\n"
        "Report:"
    ),
)

SUBQUESTIONS_DOCUMENTS = PromptTemplate(
    name="subquestions_documents",
    version="cruxflow-v1",
    fields=("n", "documents"),
    text=(
        "Instruction: Write {n} diverse questions that can reveal the information contained in "
        "the given documents. Each question should be self-contained and have the necessary "
        "context. Write the question within '<q>' and '</q>' tags.\n"
        "\n"
        "Documents:\n"
        "{documents}\n"
        "\n"
        "Questions:\n"
        "<q>"
    ),
)

REPORT_REQUEST_DOCUMENTS = PromptTemplate(
    name="report_request_documents",
    version="cruxflow-v1",
    fields=("documents",),
    text=(
        "Instruction: Create a statement of report request that the given documents together "
        "answer. Write the report request of approximately 50 words within <r> and </r> tags.\n"
        "\n"
        "Documents:\n"
        "{documents}\n"
        "\n"
        "Report request: <r>"
    ),
)

PROMPTS: dict[str, PromptTemplate] = {
    p.name: p for p in (SUBQUESTIONS, PASSAGES, RATING, RATING_PASSAGE_FIRST, REPORT_REQUEST,
                        REPORT, REPORT_DIRECT, SUBQUESTIONS_DOCUMENTS, REPORT_REQUEST_DOCUMENTS)
}
