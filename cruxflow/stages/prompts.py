"""The CRUX prompts (Ju et al. 2025) as versioned templates, read from ``cruxflow/prompts/
crux.toml`` (:func:`cruxflow.llm.prompts.load_prompts`), where each keeps its named parts (the
instruction, the rating rubric, the in-context example) beside its template.

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

Two more are the CRUX authors' later prompts, from their code for CRUX-Researchy (DylanJoo/crux
at commit dabfb0a; ``cruxflow/prompts/researchy.toml``, byte for byte what their code sends):

- ``RATING_AUGMENTATION`` -- ``crux/augmentation/gen_ratings_offload.py``: the 0-5 rating of
  one (passage, question) pair that they send for the unjudged passages of a run's top k;
  ``cruxflow judge --rating-prompt augmentation`` rates the holes with it (docs/ratings.md,
  "Holes"). Fields: ``question``, ``context``.
- ``SUBQUESTIONS_REQUEST`` -- ``crux/prompts/researchy.py``'s query generator: ten search
  queries or questions from a user request, one per line; the sub-questions of a topic that
  brings only its request (``questions_from: request``, docs/own-data.md). Field: ``request``.

Each of the paper's prompts ends with its figure's primer ("Questions:\\n<q>",
"Passages:\\n<p>", "Rating:", "Report request: <r>"), so generations usually start inside the
first tagged item; see :func:`cruxflow.llm.parsing.extract_tagged`.
"""

from __future__ import annotations

from cruxflow.llm.prompts import PromptTemplate, load_prompts

__all__ = [
    "PASSAGES",
    "PROMPTS",
    "RATING",
    "RATING_AUGMENTATION",
    "RATING_PASSAGE_FIRST",
    "REPORT",
    "REPORT_DIRECT",
    "REPORT_REQUEST",
    "REPORT_REQUEST_DOCUMENTS",
    "SUBQUESTIONS",
    "SUBQUESTIONS_DOCUMENTS",
    "SUBQUESTIONS_REQUEST",
    "VERSION",
]

VERSION = "crux-v1"

PROMPTS: dict[str, PromptTemplate] = load_prompts("crux")

SUBQUESTIONS = PROMPTS["subquestions"]
PASSAGES = PROMPTS["passages"]
# Fig. 8 in two layouts; both are built from the same instruction and rubric, which the
# annotation app shows to people (cruxflow.annotate.app.rubric).
RATING = PROMPTS["rating"]
RATING_PASSAGE_FIRST = PROMPTS["rating-passage-first"]
REPORT_REQUEST = PROMPTS["report_request"]
REPORT = PROMPTS["report"]
REPORT_DIRECT = PROMPTS["report_direct"]
SUBQUESTIONS_DOCUMENTS = PROMPTS["subquestions_documents"]
REPORT_REQUEST_DOCUMENTS = PROMPTS["report_request_documents"]
# the CRUX authors' later prompts (CRUX-Researchy)
RESEARCHY: dict[str, PromptTemplate] = load_prompts("researchy")
RATING_AUGMENTATION = RESEARCHY["rating-augmentation"]
SUBQUESTIONS_REQUEST = RESEARCHY["query_generator"]
