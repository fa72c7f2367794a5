"""Decontextualized passages (paper Sec. 3.2, Fig. 7): every document, cut when long, rewritten
by the LLM into standalone passages that become the retrieval collection."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from cruxflow.data.model import Document, Passage
from cruxflow.data.text import count_words, split_long_document, split_sentences_into_passages
from cruxflow.llm import GENERATION, LLMRunner, Sampling
from cruxflow.llm.parsing import PASSAGE_TEXT, extract_tagged, instructions_of
from cruxflow.llm.retry import Checked, ask_with_retries
from cruxflow.stages.prompts import PASSAGES


def passage_group(doc: Document) -> str:
    """A document's topic, or for a distractor (no topic) the document itself. Passage numbers
    run over a group (the whole topic, as in the CRUX release), and shards never split one."""
    return doc.topic_id if doc.topic_id is not None else doc.doc_id


def document_pieces(documents: Iterable[Document], max_words: int = 1024,
                    chunk_words: int = 512, distractors: str = "llm",
                    ) -> list[tuple[Document, str]]:
    """``(document, text)`` for every piece that gets one decontextualization request: the
    document whole, or its ``chunk_words`` chunks when it has more than ``max_words`` words;
    none for a distractor under ``distractors="split"`` (see :func:`decontextualize`)."""
    return [(doc, chunk) for doc in documents if sends_to_llm(doc, distractors)
            for chunk in split_long_document(doc.text, max_words, chunk_words)]


def passage_prompt(piece: str) -> str:
    """Fig. 7's prompt for one piece of a document."""
    return PASSAGES.render(document=piece)


def decontextualize(documents: Iterable[Document], runner: LLMRunner, *,
                    sampling: Sampling = GENERATION, max_words: int = 1024,
                    chunk_words: int = 512, min_words: int = 5, max_passages: int | None = None,
                    attempts: int = 3, distractors: str = "llm",
                    split_words: int = 60) -> list[Passage]:
    """Standalone passages of every document, ids ``<doc_id>#<n>`` with ``n`` counting over the
    document's group (its topic) in document order.

    Documents over ``max_words`` words are cut into ``chunk_words`` pieces first, as the CRUX
    authors do; their passages keep the document's id. (The authors made each chunk a document
    of its own, numbered in sequence: ``IngestOptions.chunk_documents`` does that at ingest, and
    the pieces here are then whole documents.) ``max_passages`` keeps only the first passages of
    each piece's output (the authors kept 3; ``None`` keeps all). A piece whose output holds no
    passage of at least ``min_words`` words after ``attempts`` tries keeps its own text as one
    passage (counted as a parse failure), so no source text is lost.

    ``distractors="split"`` sends no distractor (a document of no topic) to the LLM: it is cut
    at sentence ends into passages of about ``split_words`` words (the demo's choice: 50 of its
    71 documents are distractors, and rewriting them showed nothing new; the paper
    decontextualizes every document, ``"llm"``). Passage ids are the same either way.
    """
    if distractors not in DISTRACTORS:
        raise ValueError(f"distractors must be one of {DISTRACTORS}, got {distractors!r}")
    documents = list(documents)
    pieces = document_pieces(documents, max_words, chunk_words, distractors)

    checked = Checked(PASSAGE_TEXT.with_min_words(min_words), runner)
    answers = ask_with_retries(runner, [passage_prompt(c) for _, c in pieces], sampling,
                               passage_parser(checked), attempts=attempts)
    checked.log(sum(a.failed for a in answers), "their own text kept as one passage")
    texts: dict[str, list[str]] = defaultdict(list)
    for (doc, chunk), answer in zip(pieces, answers, strict=True):
        texts[doc.doc_id].extend(kept_passages(answer.value, chunk, max_passages))
    counters: dict[str, int] = defaultdict(int)
    passages = []
    for doc in documents:
        if not sends_to_llm(doc, distractors):
            texts[doc.doc_id] = split_sentences_into_passages(doc.text, split_words)
        for text in texts[doc.doc_id]:
            group = passage_group(doc)
            passages.append(Passage(f"{doc.doc_id}#{counters[group]}", text, doc.topic_id,
                                    doc.doc_id))
            counters[group] += 1
    return passages


def passage_parser(checked: Checked):
    """How the passage stage reads an output: its ``<p>`` passages that are text of the kind
    asked for (``None`` when none is)."""
    instructions = instructions_of(PASSAGES)
    return lambda text: checked.keep(parse_passages(text, 1) or [], instructions) or None


def parse_passages(text: str, min_words: int = 5) -> list[str] | None:
    """The passages of one decontextualization output (Fig. 7's ``<p>`` tags), or ``None``
    when it holds none of at least ``min_words`` words."""
    return [p for p in extract_tagged(text, "p") if count_words(p) >= min_words] or None


DISTRACTORS = ("llm", "split")


def kept_passages(parsed: list[str] | None, piece: str, max_passages: int | None
                  ) -> list[str]:
    """The passages one piece gives the collection: those its output was parsed into, else
    (refused every time) its own text as one passage; the first ``max_passages`` of them."""
    return (parsed or [" ".join(piece.split())])[:max_passages]


def sends_to_llm(doc: Document, distractors: str = "llm") -> bool:
    """Whether the passage stage rewrites ``doc`` with the LLM (see :func:`decontextualize`)."""
    return doc.topic_id is not None or distractors == "llm"
