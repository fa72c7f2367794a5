"""The input formats that ``cruxflow ingest`` and the workflow's datasets read, and the options
of reading them: each declared once, here (the one home of both).

* :data:`FORMATS`: each format's reader, default topic prefix, whether the workflow takes it,
  whether it comes with ratings (then the workflow's LLM stages do not run on it), what its
  input is, a one-line description, and the traits that set it apart (:class:`Format`: the
  runs its input ships, its input's own field names, what gives a rated one ratings);
  :func:`ingest` reads an input in its format.
* :class:`IngestOptions`: every option of reading, with its default, its help and the formats
  it applies to (the field's metadata, an :class:`Option`); :data:`COMMAND_FLAGS`: the few
  flags of the command that are not options of reading (the format, input and output, the
  judgments' eta, JSON printing), each with where the workflow has it.

Built from it: the command's flags (``cruxflow.cli.ingest``: names, types, choices, help with
the default), the config schema's format enum and dataset keys with their defaults
(:func:`schema_properties`, filled into ``cruxflow/schemas/config.schema.json`` when the
workflow loads it: :func:`schema_with_registry`), the options the ingest rule and
``cruxflow plan`` build from a dataset's entry (:func:`options_from_config`), the checks that
refuse an option given for a format that does not read it (:func:`misapplied`) and the
workflow's format-dependent defaults (``cruxflow.workflow.config``).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.merge import DEFAULT_MERGE, MERGE_RULES
from cruxflow.data.names import NAME_PATTERN

# --- formats -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """One input format. Besides what every format has, the traits that set one apart, each
    read by ``ingest_to`` (:mod:`cruxflow.data.ingest.write`) or the notes, never by a test of
    the format's name: ``runs``, the runs its input ships (copied into the dataset's ``runs/``
    and counted); ``input_fields``, the input's own name of each field the reader renames (an
    error names what the user wrote); ``ratings_hint``, for a rated format, what gives a
    dataset of it without ratings some."""

    name: str
    reader: str               # "<module of cruxflow.data.ingest>:<function>"
    prefix: str | None        # default topic prefix; None: topic ids are the input's own
    workflow: bool            # a workflow dataset may have this format
    rated: bool               # comes with ratings: the workflow's LLM stages do not run on it
    input: str                # what the input is
    description: str
    runs: str | None = None   # "<module>:<function>(path, options) -> run files it ships"
    input_fields: Mapping[str, str] = field(default_factory=dict)
    ratings_hint: str | None = None

    def read(self, path, options: IngestOptions):
        return _function(self.reader)(path, resolved(self.name, options))

    def shipped_runs(self, path, options: IngestOptions) -> list[Path]:
        """The TREC run files the input ships (none for a format without ``runs``)."""
        return [] if self.runs is None else _function(self.runs)(path, options)


def _function(where: str):
    """The function ``<module of cruxflow.data.ingest>:<name>``, its module imported now (a
    command that reads one format does not import every reader)."""
    module, name = where.split(":")
    return getattr(importlib.import_module(f"cruxflow.data.ingest.{module}"), name)


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("multinews", "multinews:read_multinews", "multi_news-test", True, False,
           "a .jsonl or .parquet file of the dataset hub's Multi-News",
           "Multi-News clusters as the dataset hub distributes them"),
    Format("multinews-src", "multinews:read_multinews_src", "multi_news-test", True, False,
           "the .src file (its line-aligned .tgt beside it)",
           "Multi-News in its original .src/.tgt pair"),
    Format("duc2004", "duc2004:read_duc2004", "duc04-test", True, False,
           "the folder holding NIST's docs/ and models/",
           "DUC 2004 tasks 1-2 as NIST distributes them"),
    Format("crux", "crux:read_crux", None, True, True,
           "a release subset folder, a paper-era folder (or its topics file) or a crux folder",
           "the CRUX authors' data in any published layout, with its ratings and runs",
           runs="crux:crux_runs",
           input_fields={"topic_id": "qid", "query": "topic", "reference": "report",
                         "doc_ids": "docids"},
           ratings_hint="--judge names ratings (judge/ of a release, any ratings layout, or "
                        "the CRUX labeling tool's human annotator qrels.jsonl)"),
    Format("documents", "documents:read_documents", "own", True, False,
           "a .jsonl file of topics or a folder of topic folders (command only: irds:<id>)",
           "one's own documents (docs/own-data.md)",
           input_fields={"query": "request", "source_id": "doc_id"}),
    Format("nuggets", "nuggets:read_nuggets", None, True, True,
           "AutoNuggetizer JSONL, or a folder with nuggets.jsonl and assignments.jsonl",
           "a track's nuggets as sub-questions, their assignments as ratings (docs/nuggets.md)",
           ratings_hint="its assignment records are its ratings"),
)}


def ingest(fmt: str, path, options: IngestOptions | None = None):
    """Read ``path`` in format ``fmt`` and return ``(Dataset, report)``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}")
    return FORMATS[fmt].read(path, options or IngestOptions())


class _Readers(Mapping):
    """Format name -> reader, as :data:`FORMATS` declares them, each reader's module imported
    when it is first called: a command that reads one CRUX file (``crux-eval``) need not import
    every corpus reader (a sixth of its start)."""

    def __getitem__(self, fmt: str):
        return FORMATS[fmt].read

    def __iter__(self):
        return iter(FORMATS)

    def __len__(self) -> int:
        return len(FORMATS)


READERS = _Readers()

# groups of formats an option applies to
CLUSTERS = ("multinews", "multinews-src", "duc2004")   # clusters numbered <prefix>-<i>
GENERATED = (*CLUSTERS, "documents")                    # raw documents the LLM stages rewrite
ALL = tuple(FORMATS)

# DUC 2004 under this prefix takes the CRUX release's topic numbers (release_order.py)
RELEASE_PREFIX = "duc04-testb"
PREFIX_PATTERN = NAME_PATTERN


# --- options -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """What one option of reading is, for every door. ``kind``: text, choice, count (an integer
    >= 1), flag (off by default), path, paths (one or more), encoding. ``help`` may name other
    options as ``{name}``: each door writes them its own way (``--max-topics``,
    ``max_topics``). ``workflow``: the config key that gives it, ``datasets.<name>.<option>``
    unless set."""

    help: str
    formats: tuple[str, ...]
    kind: str
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    workflow: str | None = None
    default_help: str | None = None   # the default in words, where the value is None

    def key(self, name: str) -> str:
        return self.workflow or f"datasets.<name>.{name}"


def _option(default, help: str, formats=ALL, kind: str = "text", **more):
    spec = Option(help, tuple(formats), kind, **more)
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"option": spec})
    return field(default=default, metadata={"option": spec})


@dataclass
class IngestOptions:
    """How a raw corpus becomes topics; every field but ``topic_numbers`` is an option of both
    doors (see the module's docstring), declared by its metadata.

    Ids are ``<prefix>-<i>`` with ``i`` counting the clusters kept (the CRUX release numbers
    them this way, after dropping clusters with fewer than ``min_docs`` documents), or the
    cluster's own name with ``id_scheme="source"``; DUC 2004 under ``duc04-testb`` takes the
    release's numbers (:mod:`cruxflow.data.ingest.release_order`).

    Two choices follow the CRUX authors' code when set (``presets/paper.yaml`` sets both;
    docs/paper-parity.md, points 3 and 4): ``count_empty_documents`` (an empty article counts
    in the ``min_docs`` test and takes a document number, never becoming a document) and
    ``chunk_documents`` (an article of more than ``max_document_words`` words is cut into
    ``chunk_words``-word chunks, each its own document numbered in sequence, so passage ids
    count chunks as the release's do).
    """

    prefix: str | None = _option(
        None, "topic id prefix: ids are <prefix>-<i>; duc2004 clusters under duc04-testb take "
        "the CRUX release's numbers (documents: names the distractors only)", GENERATED,
        pattern=PREFIX_PATTERN,
        default_help="the format's: " + ", ".join(
            f"{f.name} {f.prefix}" for f in FORMATS.values() if f.prefix))
    id_scheme: str = _option(
        "index", "topic ids: index (<prefix>-<i>, counting the clusters kept, as the CRUX "
        "release) or source (<prefix>-<the cluster's own name>)", CLUSTERS, "choice",
        choices=("index", "source"))
    min_docs: int = _option(
        2, "drop clusters with fewer documents (non-empty ones, unless {count_empty_documents}; "
        "the CRUX release: 2)", CLUSTERS, "count")
    encoding: str = _option("utf-8", "text encoding of the input files", ALL, "encoding")
    summary_length: int = _option(
        100, "which model summaries are the reference: <CLUSTER>.M.<length>.T.<A-H>",
        ("duc2004",), "count")
    reference: str = _option(
        "concat", "the reference y*: every model summary joined (concat, the CRUX release) or "
        "the first", ("duc2004",), "choice", choices=("concat", "first"))
    count_empty_documents: bool = _option(
        False, "count empty articles (empty pieces between separators) in {min_docs} and in "
        "document numbering, as the CRUX authors' code does; they never become documents "
        "(docs/paper-parity.md, point 4)", CLUSTERS, "flag")
    chunk_documents: bool = _option(
        False, "cut documents of more than {max_document_words} words into {chunk_words}-word "
        "chunks at ingest, each its own document numbered in sequence, so that passage ids "
        "count chunks as the CRUX release's do; off: the passage stage cuts long documents and "
        "their passages keep the article's number (docs/paper-parity.md, point 3)", GENERATED,
        "flag")
    max_document_words: int = _option(
        1024, "a document longer than this many words is cut into chunks", GENERATED, "count",
        workflow="llm.passages.max_document_words")
    chunk_words: int = _option(
        512, "the length in words of the chunks of a long document", GENERATED, "count",
        workflow="llm.passages.chunk_words")
    distractors: str | None = _option(
        None, "JSONL of unrelated articles ({docno, headline, text}) added to the collection "
        "as documents of no topic", GENERATED, "path", default_help="none")
    collection: str | None = _option(
        None, "the passage collection: crux: JSONL {id, contents} (a file, a folder of them, "
        ".jsonl.gz too, or a folder of one-record files such as the labeling tool's documents/); "
        "nuggets: the segments (MS MARCO v2.1 segmented JSONL) the assignments cite",
        ("crux", "nuggets"), "path",
        default_help="crux: a release subset's docs/ or crux-mds-corpus beside it, else none; "
        "nuggets: the records' candidate_text")
    judge: list[str] = _option(
        [], "ratings of the dataset's passages, files or folders read as one, in place of those "
        "the input holds: any layout crux-eval's judge reads, the CRUX labeling tool's human "
        "annotator*/qrels.jsonl included (several annotators merged by {judge_merge})",
        ("crux",), "paths", default_help="the input's own (a release's judge/, the ratings "
        "files of a folder)")
    judge_merge: str = _option(
        DEFAULT_MERGE, "how the ratings of one (passage, question) by several annotators "
        "become one (the rule of cruxflow agreement's --merge too): the mean of those who rated "
        "it, rounded half up (3 and 2 give 3), their majority (the lower median: 2 and 4 give "
        "2), the min or the max; a question an annotator did not rate (-1) takes the others' "
        "ratings", ("crux",), "choice", choices=tuple(MERGE_RULES))
    strict_collection: bool = _option(
        False, "refuse a shipped run that ranks a passage outside the passage collection "
        "(off: it counts as an unjudged passage)", ("crux",), "flag")
    number_like: str | None = _option(
        None, "number the clusters as the CRUX release whose passages (JSONL {id, contents}, "
        "ids <prefix>-<i>:<doc>#<n>) this file holds, by matching each cluster's documents to "
        "them (docs/data-model.md); not needed for DUC 2004 under duc04-testb, whose release "
        "numbers ship with cruxflow", ("duc2004",), "path", default_help="NIST's name "
        "order, or the release's numbers under duc04-testb")
    questions_from: str = _option(
        "documents", "the sub-questions of a topic that brings none: documents (without a "
        "reference summary, from its documents: cruxflow's prompt, not the paper's method) or "
        "request (from its report request with the CRUX authors' Researchy prompt, for every "
        "topic; a topic may then bring only its request, and its ratings are those of the pool "
        "of runs' top k, holes.<name>: docs/judge.md)", ("documents",), "choice",
        choices=("documents", "request"))
    max_topics: int | None = _option(
        None, "keep only the first N topics (and their documents); distractors are kept",
        ALL, "count", default_help="all")
    allow_empty: bool = _option(
        False, "write a dataset with no topic (or go on with an empty distractors or run file) "
        "instead of failing", ALL, "flag")
    # source id -> topic number, set by the DUC 2004 reader (not an option)
    topic_numbers: dict[str, int] | None = None


def options() -> dict[str, Option]:
    """Every option of :class:`IngestOptions`, by name, in declaration order."""
    return {f.name: f.metadata["option"] for f in dataclasses.fields(IngestOptions)
            if "option" in f.metadata}


def defaults() -> dict:
    """Every option's default."""
    plain = IngestOptions()
    return {name: getattr(plain, name) for name in options()}


@dataclass(frozen=True)
class CommandFlag:
    """A flag of ``cruxflow ingest`` that is not an option of reading, and where the workflow
    has it (``workflow``) or why it has none (``why``)."""

    help: str
    workflow: str | None = None
    why: str | None = None


COMMAND_FLAGS = {
    "format": CommandFlag("the input's format", "datasets.<name>.format"),
    "input": CommandFlag("the corpus to read", "datasets.<name>.input"),
    "output": CommandFlag(
        "dataset directory to write; an earlier dataset there (its manifest.json written by "
        "ingest, no other file) is replaced as a whole; any other non-empty directory and a "
        "path inside the input are refused", why="results/ingested/<name>, the workflow's own"),
    "eta": CommandFlag(
        "answerability threshold of the judgments written beside rated datasets (1-5)",
        "metrics.eta"),
    "json": CommandFlag("print the summary as JSON", why="printing only"),
}


# --- what the options mean for one format ------------------------------------------------------


def resolved(fmt: str, options: IngestOptions) -> IngestOptions:
    """``options`` with the format's defaults where the value is None (the topic prefix)."""
    if options.prefix is None and FORMATS[fmt].prefix is not None:
        return dataclasses.replace(options, prefix=FORMATS[fmt].prefix)
    return options


def no_ratings_note(fmt: str) -> str:
    """What ``ingest`` says of a dataset without ratings, and what would give it some."""
    if FORMATS[fmt].rated:
        return f"no ratings: nothing can be scored against it yet; {FORMATS[fmt].ratings_hint}"
    return ("no ratings yet: the workflow's LLM stages rate its passages (docs/ratings.md); "
            "to score runs now, ingest rated data (--format crux, with --judge)")


def misapplied(fmt: str, given: Mapping[str, object]) -> list[tuple[str, str]]:
    """(option, why) for each of ``given`` (options set away from their defaults) that the
    format does not read: set in vain, it would be skipped in silence."""
    out = []
    for name, spec in options().items():
        if name in given and fmt not in spec.formats:
            out.append((name, f"does not apply to the {fmt} format (it applies to "
                              f"{', '.join(spec.formats)})"))
    return out


def given_options(options: IngestOptions) -> dict:
    """The options of ``options`` that are away from their defaults."""
    return {name: getattr(options, name) for name, default in defaults().items()
            if getattr(options, name) != default}


def options_from_config(config: Mapping, name: str) -> IngestOptions:
    """The options a workflow dataset's entry (defaults filled in by the schema) and the
    sections an option lives in (``llm.passages``) give."""
    entry = config["datasets"][name]
    values = {}
    for option, spec in options().items():
        if spec.workflow is None:
            values[option] = entry[option]
        else:
            node = config
            for part in spec.workflow.split("."):
                node = node[part]
            values[option] = node
    for name, spec in options().items():   # one path or a list of them
        if spec.kind == "paths" and isinstance(values[name], str):
            values[name] = [values[name]]
    return IngestOptions(**values)


def option_paths(opts: IngestOptions) -> list[str]:
    """Every file or folder the options name (distractors, collection, judge, ...)."""
    out: list[str] = []
    for name, spec in options().items():
        value = getattr(opts, name)
        if spec.kind == "path" and value:
            out.append(str(value))
        elif spec.kind == "paths":
            out += [str(v) for v in value or ()]
    return out


def under(opts: IngestOptions, root) -> IngestOptions:
    """``opts`` with its relative paths taken under ``root``."""
    changes = {}
    for name, spec in options().items():
        value = getattr(opts, name)
        if spec.kind == "path" and value:
            changes[name] = str(Path(root) / value)
        elif spec.kind == "paths" and value:
            changes[name] = [str(Path(root) / v) for v in value]
    return dataclasses.replace(opts, **changes)


# --- the config schema -------------------------------------------------------------------------

_SCHEMA_KINDS = {
    "text": {"type": "string"}, "encoding": {"type": "string"},
    "count": {"type": "integer", "minimum": 1}, "flag": {"type": "boolean"},
    "path": {"type": ["string", "null"]},
    "paths": {"type": ["string", "array"], "items": {"type": "string"}},
}


def _in_words(text: str, style) -> str:
    """``text`` with each ``{option}`` named in ``style`` (other braces stay)."""
    names = options()
    return re.sub(r"\{(\w+)\}", lambda m: style(m[1]) if m[1] in names else m[0], text)


def describe(name: str, style=lambda n: n) -> str:
    """An option's help as one door writes it (``style`` spells the other options' names),
    with the formats it applies to."""
    spec = options()[name]
    text = _in_words(spec.help, style)
    if spec.formats != ALL:
        text += f" [{', '.join(spec.formats)}]"
    return text


def schema_properties() -> dict:
    """The dataset entry's keys of the config schema that this registry declares: ``format``,
    ``input`` and every option whose workflow key is in the entry, in declaration order."""
    props = {
        "format": {"enum": [f.name for f in FORMATS.values() if f.workflow],
                   "description": "; ".join(f"{f.name}: {f.description}"
                                            for f in FORMATS.values() if f.workflow) + "."},
        "input": {"type": "string",
                  "description": "File or directory, as cruxflow ingest --input: " + "; ".join(
                      f"{f.name}: {f.input}" for f in FORMATS.values() if f.workflow) + "."},
    }
    plain = defaults()
    for name, spec in options().items():
        if spec.workflow is not None:
            continue
        prop = {"enum": list(spec.choices)} if spec.kind == "choice" \
            else dict(_SCHEMA_KINDS[spec.kind])
        if plain[name] is None and prop.get("type") in ("string", "integer"):
            prop["type"] = [prop["type"], "null"]
        if spec.pattern:
            prop["pattern"] = spec.pattern
        prop["default"] = plain[name]
        description = describe(name)
        if spec.default_help:
            description += f"; null: {spec.default_help}"
        prop["description"] = description[0].upper() + description[1:] + "."
        props[name] = prop
    return props


def markdown() -> str:
    """The formats and the options as docs/ingest.md shows them (a test checks it does)."""
    from cruxflow.metrics.options import DEFAULTS

    flag = lambda n: "--" + n.replace("_", "-")   # noqa: E731 - as cruxflow.cli.ingest

    def text(words) -> str:   # outside code, a bare <prefix> would be read as an HTML tag
        return str(words).replace("<", "&lt;").replace(">", "&gt;")

    rows = ["| format | input | topic prefix | workflow | comes rated | what |",
            "| --- | --- | --- | --- | --- | --- |"]
    rows += [f"| `{f.name}` | {text(f.input)} | {f'`{f.prefix}`' if f.prefix else 'its own ids'}"
             f" | {'yes' if f.workflow else 'no'} | {'yes' if f.rated else 'no'} | "
             f"{text(f.description)} |" for f in FORMATS.values()]
    rows += ["", "| flag | config key | default | formats | what |",
             "| --- | --- | --- | --- | --- |"]
    plain = defaults()
    for name, spec in options().items():
        default = spec.default_help or ("off" if spec.kind == "flag" else plain[name])
        where = "all" if spec.formats == ALL else ", ".join(spec.formats)
        rows.append(f"| `{flag(name)}` | `{spec.key(name)}` | {text(default)} | {where} | "
                    f"{text(_in_words(spec.help, flag))} |")
    for name, spec in COMMAND_FLAGS.items():
        key = f"`{spec.workflow}`" if spec.workflow else f"none: {text(spec.why)}"
        default = DEFAULTS.eta if name == "eta" else ""
        rows.append(f"| `{flag(name)}` | {key} | {default} | all | {text(spec.help)} |")
    return "\n".join(rows) + "\n"


def schema_with_registry(schema: dict) -> dict:
    """``schema`` (cruxflow/schemas/config.schema.json, which leaves them out) with its dataset
    entry's registry keys as :func:`schema_properties` gives them, first, then the entry's other
    keys (the workflow's own) in their order: :func:`cruxflow.workflow.config.config_schema`."""
    entry = schema["properties"]["datasets"]["additionalProperties"]
    ours = schema_properties()
    entry["properties"] = {**ours, **{k: v for k, v in entry["properties"].items()
                                      if k not in ours}}
    return schema


DOCS = Path(__file__).resolve().parents[3] / "docs" / "ingest.md"


def rewrite_docs(path=DOCS) -> None:
    """Write the registry's tables (:func:`markdown`) over the two tables that ``path`` (a
    checkout's docs/ingest.md) shows from its ``| format | input |`` line on."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| format | input |"))
    end = start
    for table in range(2):      # the formats, a blank line, the options
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        if table == 0:
            end += 1
    lines[start:end] = markdown().rstrip("\n").split("\n")
    path.write_text("\n".join(lines), encoding="utf-8")
