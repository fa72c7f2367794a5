"""The UDCG prompts (Trappolini et al. 2025), copied from the paper's appendix figures.

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

from cruxflow.llm.prompts import PromptTemplate

VERSION = "udcg-v1"

ANSWER = PromptTemplate(
    name="udcg_answer",
    version=VERSION,
    fields=("documents", "question"),
    text=(
        "You are given a question and you must respond based on the provided documents. "
        "Respond directly without providing any premise or explanation. If none of the "
        "documents contain the answer, please respond with NO-RESPONSE. Do not try to respond "
        "based on your own knowledge.\n"
        "\n"
        "Documents:\n"
        "{documents}\n"
        "\n"
        "Question:\n"
        "{question}\n"
        "\n"
        "Answer:"
    ),
)

# The authors' released code (src/compute_abstention_probability.py): the system message is
# Fig. 4's instruction, word for word; the user message holds "Document: <text>\n" and the
# question. Their text goes in unchanged (no whitespace collapsing).
AUTHORS_SYSTEM = (
    "You are given a question and you must respond based on the provided documents. "
    "Respond directly without providing any premise or explanation. If none of the documents "
    "contain the answer, please respond with NO-RESPONSE. Do not try to respond based on your "
    "own knowledge."
)
AUTHORS_UTILITY = PromptTemplate(
    name="udcg_utility_authors",
    version=VERSION,
    fields=("document", "question"),
    text="Document: {document}\nQuestion: {question}\nAnswer:",
)

RELEVANCE = PromptTemplate(
    name="udcg_relevance",
    version=VERSION,
    fields=("question", "answers", "document"),
    text=(
        "Determine if a document is RELEVANT or IRRELEVANT for answering a question. A document "
        "is RELEVANT if it contains information that directly supports at least one acceptable "
        "answer.\n"
        "\n"
        "RELEVANT examples:\n"
        "\n"
        "- Q: \"where does the story the great gatsby take place\" | Answers: "
        "['Long Island of 1922']\n"
        "  Doc: \"The Great Gatsby...follows characters living in West Egg on Long Island in "
        "summer of 1922\"\n"
        "  \u2192 Contains the exact answer\n"
        "- Q: \"when did korn's follow the leader come out\" | Answers: ['August 18, 1998', "
        "'Summer 1998']\n"
        "  Doc: \"Follow the Leader...was released on August 18, 1998\"\n"
        "  \u2192 Contains the exact release date\n"
        "\n"
        "IRRELEVANT examples:\n"
        "\n"
        "- Q: \"where does the story the great gatsby take place\" | Answers: "
        "['Long Island of 1922']\n"
        "  Doc: \"While Long Island features prominently in American literature, the "
        "socioeconomic dynamics...\"\n"
        "  \u2192 Mentions Long Island but not as the story's setting\n"
        "- Q: \"who played bobby byrd in get on up\" | Answers: ['Nelsan Ellis']\n"
        "  Doc: \"Critics praised the casting of Bobby Byrd and the chemistry between the main "
        "characters...\"\n"
        "  \u2192 Discusses casting but doesn't name the specific actor\n"
        "\n"
        "Evaluation steps:\n"
        "\n"
        "1. Find the specific information needed to match an acceptable answer. Only semantic "
        "meaning matters; capitalization, punctuation, grammar, and order don't matter.\n"
        "2. Check if the document contains this information directly or through clear "
        "inference\n"
        "3. Check for these common errors:\n"
        "  - The document contains similar keywords/themes but not the actual answer\n"
        "  - The document contains partial information that would need to be combined with "
        "external knowledge\n"
        "  - The document discusses related topics but doesn't specifically answer the question\n"
        "\n"
        "Here is a new example. Don't apologize or correct yourself if there was a mistake; we "
        "are just trying to evaluate the relevance of the document.\n"
        "\n"
        "```\n"
        "Question: {question}\n"
        "Acceptable answers list: {answers}\n"
        "Document: {document}\n"
        "```\n"
        "\n"
        "Evaluate the document for this new question as one of:\n"
        "\n"
        "A: RELEVANT\n"
        "B: IRRELEVANT\n"
        "\n"
        "Return a JSON object with the following format:\n"
        "\n"
        "```\n"
        "{\n"
        "  \"motivation\": \"Brief explanation (max 2 sentences)\",\n"
        "  \"grade\": \"A\" or \"B\"\n"
        "}\n"
        "```"
    ),
)

GRADING = PromptTemplate(
    name="udcg_grading",
    version=VERSION,
    fields=("question", "target", "predicted_answer"),
    text=(
        "Your job is to grade a predicted answer as CORRECT, INCORRECT, or ABSTAINED against a "
        "list of acceptable answers.\n"
        "\n"
        "## Grading Rules\n"
        "\n"
        "A predicted answer is CORRECT if:\n"
        "- It contains the essential information from at least one acceptable answer\n"
        "- It contains no contradictory information\n"
        "- When the acceptable answer is a list, at least one item from that list is present\n"
        "\n"
        "A predicted answer is INCORRECT if:\n"
        "- It contradicts any acceptable answer\n"
        "- It contains factually wrong information (even with hedging like \"I think\" or "
        "\"possibly\")\n"
        "\n"
        "A predicted answer is ABSTAINED if:\n"
        "- It explicitly refuses to answer or states uncertainty without providing substantive "
        "information\n"
        "- It contains phrases like \"I don't know\", \"I'm not sure\", \"I cannot answer\", "
        "\"NO-RESPONSE\", \"I'm uncertain\"\n"
        "\n"
        "## Examples\n"
        "\n"
        "**CORRECT answers:**\n"
        "```\n"
        "Question: What are Barack Obama's children's names?\n"
        "Acceptable: ['Malia Obama and Sasha Obama', 'Natasha Marian and Malia Ann']\n"
        "\"Malia and Sasha\" (essential info present)\n"
        "\"I believe it's Malia and Sasha Obama\" (hedging with correct info)\n"
        "```\n"
        "\n"
        "**INCORRECT answers:**\n"
        "```\n"
        "Question: What are Barack Obama's children's names?\n"
        "Acceptable: ['Malia Obama and Sasha Obama']\n"
        "\"Only Malia\" (incomplete when both required)\n"
        "\"Malia, Sasha, and Susan\" (contains wrong info)\n"
        "\"He has no children\" (contradicts acceptable answer)\n"
        "```\n"
        "\n"
        "**ABSTAINED answers:**\n"
        "```\n"
        "Question: What are Barack Obama's children's names?\n"
        "\"I don't know the names of his children\"\n"
        "\"I'm not sure about this information\"\n"
        "\"I cannot provide that information\"\n"
        "\"I'm uncertain and don't want to guess\"\n"
        "\"NO-RESPONSE\"\n"
        "```\n"
        "\n"
        "## Important Notes\n"
        "- Ignore capitalization, punctuation, grammar, and order.\n"
        "- Don't penalize omitted information that's clearly inferred from the question.\n"
        "- Don't penalize minor typos in names.\n"
        "- Grade using only the question and acceptable answers provided, even if you know the "
        "answer is factually wrong.\n"
        "\n"
        "---\n"
        "\n"
        "Here is a new example. Don't apologize or correct yourself if there was a mistake; we "
        "are just trying to grade the answer.\n"
        "```\n"
        "Question: {question}\n"
        "Acceptable answers list: {target}\n"
        "Predicted answer: {predicted_answer}\n"
        "```\n"
        "\n"
        "Grade the predicted answer of this new question as one of:\n"
        "A: CORRECT\n"
        "B: INCORRECT\n"
        "C: ABSTAINED\n"
        "\n"
        "Return a JSON object with the following format:\n"
        "{\n"
        " \"motivation\": \"Your concise motivation for the grade here. Use maximum 2 "
        "sentences.\",\n"
        " \"grade\": \"A\", \"B\", or \"C\"\n"
        "}"
    ),
)

PROMPTS = {p.name: p for p in (ANSWER, AUTHORS_UTILITY, RELEVANCE, GRADING)}


def format_documents(texts: list[str]) -> str:
    """The ``Documents:`` block of Figure 4: one ``Document [i]: text`` line per passage, in
    context order. The paper does not print how several passages are laid out; a single passage
    (the utility prompt) is the k = 1 case of the same layout, so the utility prompt and the
    generation prompt differ only in how many passages they hold."""
    return "\n".join(f"Document [{i}]: {' '.join(t.split())}" for i, t in enumerate(texts, 1))


def format_answers(answers: list[str]) -> str:
    """The acceptable answers as the figures print them: a Python list, ``['a', 'b']``."""
    return repr([str(a) for a in answers])
