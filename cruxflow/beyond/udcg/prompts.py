"""The UDCG prompts (Trappolini et al. 2025), copied from the paper's appendix figures, read from
``cruxflow/prompts/udcg.toml``.

- ``ANSWER`` -- Figure 4, "Prompt for evaluating the utility of a document and for answer
  generation": the passage utility (one passage in ``Documents:``) and the RAG answer of the
  correlation protocol (all passages of the context). Fields: ``documents``, ``question``
  (the figure's ``<document>`` and ``<question>``).
- ``RELEVANCE`` -- Figure 5, the LLM-as-a-judge relevance prompt (A: RELEVANT, B: IRRELEVANT,
  answered as JSON). Fields: ``question``, ``answers``, ``document``.
- ``AUTHORS_SYSTEM`` and ``AUTHORS_UTILITY`` -- the utility prompt as the authors' released
  code sends it (``format_abstention_prompt`` in ``src/compute_abstention_probability.py`` of
  github.com/GiovanniTRA/UDCG): Fig. 4's instruction as the system message and ``Document:
  <passage>\nQuestion: <question>\nAnswer:`` as the user message. Fields: ``document``,
  ``question``.
- ``GRADING`` -- Figure 6, the answer grading prompt (A: CORRECT, B: INCORRECT, C: ABSTAINED,
  answered as JSON). Fields: ``question``, ``target``, ``predicted_answer``.

Wording unchanged; the markdown of the paper's rendering is removed (the figures' line breaks
and bullets are kept as plain text). In Figure 6 the paper's text extraction shows the inner
code fences as ``...``; they are the triple backticks of the authors' released template
(``src/prompts.py`` of github.com/GiovanniTRA/UDCG), which we use.
"""

from __future__ import annotations

from cruxflow.llm.prompts import load_prompts

VERSION = "udcg-v1"

PROMPTS = load_prompts("udcg")
ANSWER = PROMPTS["udcg_answer"]
# The authors' released code (src/compute_abstention_probability.py): the system message is
# Fig. 4's instruction, word for word; the user message holds "Document: <text>\n" and the
# question. Their text goes in unchanged (no whitespace collapsing).
AUTHORS_SYSTEM = ANSWER.parts["instruction"]
AUTHORS_UTILITY = PROMPTS["udcg_utility_authors"]
RELEVANCE = PROMPTS["udcg_relevance"]
GRADING = PROMPTS["udcg_grading"]


def format_documents(texts: list[str]) -> str:
    """The ``Documents:`` block of Figure 4: one ``Document [i]: text`` line per passage, in
    context order. The paper does not print how several passages are laid out; a single passage
    (the utility prompt) is the k = 1 case of the same layout, so the utility prompt and the
    generation prompt differ only in how many passages they hold."""
    return "\n".join(f"Document [{i}]: {' '.join(t.split())}" for i, t in enumerate(texts, 1))


def format_answers(answers: list[str]) -> str:
    """The acceptable answers as the figures print them: a Python list, ``['a', 'b']``."""
    return repr([str(a) for a in answers])
