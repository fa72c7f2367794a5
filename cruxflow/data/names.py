"""The shared vocabulary: names of the reference systems and of a dataset directory's files.

Rules, workflow scripts, the scorer and the paper's tables all read these, so a name is
spelled once.
"""

from __future__ import annotations

# Reference systems (Table 1's rows #1-#3 and the lower bounds of the context tables).
ORACLE = "oracle"                  # #3: the oracle context Z* (and its RAG result)
DIRECT = "direct"                  # #1: a report without any retrieval context
HUMAN = "human"                    # #2: the human summary y* taken as the result
RANDOM = "random"                  # a seeded random ranking of the whole collection
RANDOM_RELEVANT = "random-relevant"  # a seeded random ranking of P* only
REFERENCE_SYSTEMS = (DIRECT, HUMAN, ORACLE)
REFERENCE_RUNS = (RANDOM, RANDOM_RELEVANT)

# The context size |Z*| as written in file names, tables and ``--k`` ("k = oracle").
ORACLE_K = "oracle"

# The files of a dataset directory (docs/data-model.md), relative to it.
TOPICS = "topics.jsonl"
DOCUMENTS = "documents.jsonl"
PASSAGES = "passages/passages.jsonl"
RATINGS = "answerability.jsonl"
REFERENCE_RATINGS = "reference_ratings.jsonl"
MANIFEST = "manifest.json"
DATASET_FILES = {
    "topics": TOPICS,
    "documents": DOCUMENTS,
    "passages": PASSAGES,
    "answerability": RATINGS,
    "reference_ratings": REFERENCE_RATINGS,
    "manifest": MANIFEST,
}


# A name that becomes part of a file name or a path: a dataset's topic id prefix (--prefix,
# datasets.<name>.prefix), the topic ids of one's own documents, a project's dataset name, a
# NuggetBank collection name. One rule for every door: "a/../b" would write outside results/,
# and ":" and "#" would break the passage ids <topic>:<doc>#<n>.
# The whole rule is the pattern, so that the config schema (which takes it through the format
# registry's PREFIX_PATTERN) and every flag (cruxflow.cli.args.name) refuse the same names.
NAME_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9_.-]+$"
NAME_RULE = "letters, digits, '_', '.' and '-' only, not '.' or '..'"


def name_problem(text) -> str | None:
    """Why ``text`` cannot be such a name (None: it can)."""
    import re

    if not isinstance(text, str) or not re.fullmatch(NAME_PATTERN, text):
        return f"{text!r}: {NAME_RULE} (it becomes part of file names)"
    return None


# --- the names of a command's inputs ------------------------------------------------------------

# Runs, annotators, label sets and leaderboards are named ``NAME=PATH``, else by the file's name
# without its last suffix (``a.r0.run`` is ``a.r0``). Two inputs of one kind with one name are
# refused: numbering them, or keeping one, would let a table speak of the wrong system.

def split_name(spec) -> tuple[str | None, str]:
    """``NAME=PATH`` as ``(NAME, PATH)``; a spec without ``=``, or naming an existing path as a
    whole (a file called ``a=b.run``), as ``(None, spec)``."""
    from pathlib import Path

    text = str(spec)
    name, sep, path = text.partition("=")
    if not sep or not name or Path(text).exists():
        return None, text
    return name, path


def input_name(path) -> str:
    """The name of an input given without ``NAME=``: its file name without its last suffix."""
    from pathlib import Path

    return Path(path).stem or Path(path).name


def named_inputs(specs, what: str = "inputs") -> list[tuple[str, str]]:
    """``(name, path)`` of each ``[NAME=]PATH`` spec, the names checked by
    :func:`check_unique`."""
    pairs = []
    for spec in specs:
        name, path = split_name(spec)
        pairs.append((name or input_name(path), path))
    check_unique(pairs, what)
    return pairs


def check_unique(pairs, what: str = "inputs") -> None:
    """Refuse two ``(name, source)`` pairs with one name (``what``: what they are, plural): a
    :class:`~cruxflow.data.errors.DataError` of one line naming both sources."""
    from cruxflow.data.errors import DataError

    first: dict[str, str] = {}
    for name, source in pairs:
        if name in first:
            raise DataError(f"two {what} named {name!r}: {first[name]} and {source} (name "
                            "them apart: NAME=PATH)")
        first[name] = str(source)
