"""Your own documents (docs/own-data.md), in two forms.

* JSONL, one topic per line::

      {"topic_id": "t1", "documents": [{"doc_id": "d1", "text": "...", "title": "..."}, ...],
       "reference": "...", "request": "...", "questions": ["...", ...]}

  ``title``, ``reference``, ``request`` and ``questions`` are optional.
* A folder with one sub-folder per topic (its name is the topic id) and one ``.txt`` file per
  document (its name without ``.txt`` is the document id), read in name order; beside them an
  optional ``reference.txt``, ``request.txt`` and ``questions.txt`` (one question per line).

Topic ids are kept as given (runs and qrels of one's own name them); documents get the data
model's ids ``<topic>:<i>`` with the given id as ``source_id``. Paragraphs are blank-line
separated; the lines inside one are joined (so hard-wrapped text such as Project Gutenberg's
reads as prose).

What the LLM stages do with a topic follows from what it brings: a given request or given
questions are used as they are (those stages skip the topic); otherwise they are generated from
the reference summary as in the paper, or, without one, from the documents themselves with
prompts of ours (``cruxflow.stages.prompts``; not the paper's method). With ``questions_from:
request`` (the CRUX authors' Researchy way) the questions come from the request, and a topic may
bring its request alone, without documents.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import (
    IngestOptions,
    IngestReport,
    RawArticle,
    cluster_documents,
)
from cruxflow.data.io import (
    iter_jsonl,
    list_folder,
    not_used_note,
    read_text,
    regular_files,
    wrong_kind,
)
from cruxflow.data.model import Dataset, Document, Reference, Topic
from cruxflow.data.names import name_problem

IRDS_PREFIX = "irds:"   # an input read through ir_datasets: irds:<dataset id>

# What a topic id must not hold: passage ids are <topic>:<doc>#<n> (cruxflow.data.model).
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
FOLDER_FILES = {"reference": "reference.txt", "request": "request.txt",
                "questions": "questions.txt"}
_TOPIC_FIELDS = {"topic_id", "documents", "reference", "request", "questions"}
_DOC_FIELDS = {"doc_id", "text", "title"}


def _prose(text: str) -> str:
    """Paragraphs separated by one blank line, the lines of each joined, whitespace collapsed."""
    return "\n\n".join(p for p in (" ".join(par.split()) for par in
                                   _PARAGRAPHS.split(text.replace("\r\n", "\n"))) if p)


def _string(obj: dict, name: str, where: dict, *, optional: bool) -> str | None:
    value = obj.get(name)
    if value is None:
        if optional:
            return None
        raise DataError("missing", field=name, **where)
    if not isinstance(value, str):
        raise DataError(f"expected a string, got {type(value).__name__}", field=name, **where)
    if not value.strip():
        raise DataError("is empty", field=name, **where)
    return value


def _topic_id(value: str, where: dict, name: str = "topic_id") -> str:
    if problem := name_problem(value):   # --prefix's rule: ids become parts of file names
        raise DataError(f"topic id {problem}; passage ids are <topic>:<doc>#<n>", field=name,
                        **where)
    return value


def _questions(value, where: dict, name: str = "questions") -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise DataError(f"expected a list of strings, got {type(value).__name__}", field=name,
                        **where)
    for i, q in enumerate(value):
        if not isinstance(q, str) or not q.strip():
            raise DataError(f"item {i} ({q!r}) is not a non-empty string", field=name, **where)
    if not value:
        raise DataError("is an empty list (leave it out to generate the questions)",
                        field=name, **where)
    return [" ".join(q.split()) for q in value]


class _Builder:
    """Topics and documents in input order, with the counts of what each topic brings."""

    def __init__(self, options: IngestOptions, report: IngestReport):
        self.options, self.report = options, report
        self.topics: dict[str, Topic] = {}
        self.documents: dict[str, Document] = {}
        self.where_seen: dict[str, str] = {}
        self.from_request = options.questions_from == "request"
        for key in ("given_requests", "given_questions", "from_reference", "from_documents"):
            report.counts[key] = 0
        if self.from_request:
            report.counts["from_request"] = 0

    def add(self, tid: str, articles: list[RawArticle], reference: str | None,
            request: str | None, questions: list[str] | None, where: dict, id_field: str):
        if tid in self.topics:
            raise DataError(f"duplicate topic id {tid!r} (first at {self.where_seen[tid]})",
                            field=id_field, **where)
        self.where_seen[tid] = where["record"]
        self.report.clusters_read += 1
        doc_ids = []
        for doc in cluster_documents(tid, articles, self.options):
            self.documents[doc.doc_id] = doc
            doc_ids.append(doc.doc_id)
        refs = [Reference(f"{tid}-reference", reference)] if reference is not None else []
        self.topics[tid] = Topic(tid, reference, doc_ids, request, questions or [], refs, tid)
        counts = self.report.counts
        counts["given_requests"] += request is not None
        counts["given_questions"] += questions is not None
        if self.from_request:   # the questions from the request, a missing request as before
            counts["from_request"] += questions is None
            if request is None:
                counts["from_reference" if reference is not None else "from_documents"] += 1
        elif request is None or questions is None:
            counts["from_reference" if reference is not None else "from_documents"] += 1

    def no_documents(self, request: str | None, where: dict, field: str | None = None) -> None:
        """A topic without documents: an error, unless it brings its request and the questions
        come from it (``questions_from: request``)."""
        if self.from_request and request is not None:
            return
        why = "the topic has no documents" + (
            " and no request (questions_from: request needs one of them)" if self.from_request
            else "")
        raise DataError(why, field=field, **where) if field else DataError(
            why + f" (no .txt file besides {', '.join(FOLDER_FILES.values())})", **where)

    def dataset(self) -> Dataset:
        c = self.report.counts
        if c["given_requests"] or c["given_questions"]:
            self.report.notes.append(
                f"{c['given_requests']} topics bring their request and {c['given_questions']} "
                "their questions: the LLM stages skip those for them")
        if c["from_documents"]:
            what = "request is" if self.from_request else "request or questions are"
            self.report.notes.append(
                f"{c['from_documents']} topics have no reference summary: their missing {what} "
                "generated from their documents (cruxflow's prompts, not the paper's method; "
                "docs/own-data.md)")
        if c.get("from_request"):
            self.report.notes.append(
                f"{c['from_request']} topics get their questions from their request (the CRUX "
                "authors' Researchy prompt); every topic's ratings are those of the pool of "
                "runs' top k (the workflow's holes; docs/own-data.md)")
        return Dataset(self.topics, self.documents)


def _check_doc_id(seen: dict[str, str], doc_id: str, here: str, where: dict, field: str):
    if doc_id in seen:
        raise DataError(f"duplicate document id {doc_id!r} in this topic (also {seen[doc_id]})",
                        field=field, **where)
    seen[doc_id] = here


def _read_jsonl(path: Path, options: IngestOptions, builder: _Builder) -> None:
    for lineno, obj in iter_jsonl(path, options.encoding):
        where = {"path": path, "record": f"line {lineno}"}
        unknown = sorted(set(obj) - _TOPIC_FIELDS)
        if unknown:
            raise DataError(f"unknown field (expected {sorted(_TOPIC_FIELDS)})",
                            field=unknown[0], **where)
        tid = _topic_id(_string(obj, "topic_id", where, optional=False), where)
        docs = obj.get("documents")
        request = _string(obj, "request", where, optional=True)
        if docs is None and builder.from_request and request is not None:
            docs = []
        if not isinstance(docs, list):
            raise DataError("missing or not a list of documents" if docs is None else
                            f"expected a list of documents, got {type(docs).__name__}",
                            field="documents", **where)
        if not docs:
            builder.no_documents(request, where, "documents")
        articles, seen = [], {}
        for i, d in enumerate(docs):
            name = f"documents[{i}]"
            if not isinstance(d, dict):
                raise DataError(f"expected an object, got {type(d).__name__}", field=name,
                                **where)
            unknown = sorted(set(d) - _DOC_FIELDS)
            if unknown:
                raise DataError(f"unknown field (expected {sorted(_DOC_FIELDS)})",
                                field=f"{name}.{unknown[0]}", **where)
            try:
                doc_id = _string(d, "doc_id", where, optional=False)
                text = _prose(_string(d, "text", where, optional=False))
                title = _string(d, "title", where, optional=True)
            except DataError as e:
                raise DataError(e.reason, field=f"{name}.{e.field}", **where) from None
            _check_doc_id(seen, doc_id, name, where, f"{name}.doc_id")
            articles.append(RawArticle(text, title, doc_id))
        reference = _string(obj, "reference", where, optional=True)
        builder.add(tid, articles, reference and _prose(reference),
                    request and " ".join(request.split()),
                    _questions(obj.get("questions"), where), where, "topic_id")


def _read_folders(root: Path, options: IngestOptions, builder: _Builder) -> None:
    """One topic per folder of ``root``; every entry is read or refused, and those no reader
    takes (a README beside the folders, a PDF inside one) are counted in a note."""
    entries = [p for p in list_folder(root) if not p.name.startswith(".")]
    folders = [p for p in entries if p.is_dir()]
    unused = [p for p in entries if not p.is_dir()]
    if not folders:
        raise DataError("holds no topic folder (one folder per topic, one .txt per document)",
                        path=root)
    for folder in folders:
        where = {"path": folder, "record": f"topic {folder.name}"}
        tid = _topic_id(folder.name, where, "folder name")
        inside = [p for p in list_folder(folder) if not p.name.startswith(".")]
        given = {}
        for key, name in FOLDER_FILES.items():
            found = regular_files([folder / name])
            text = read_text(found[0], options.encoding) if found else None
            if text is not None and not text.strip():
                raise DataError("is empty (remove it to have it generated)", path=folder / name)
            given[key] = text
        questions = None
        if given["questions"] is not None:
            questions = [q.strip() for q in given["questions"].splitlines() if q.strip()]
        files = regular_files(p for p in inside
                              if p.suffix == ".txt" and p.name not in FOLDER_FILES.values())
        unused += [p for p in inside if p.suffix != ".txt"]
        if not files:
            builder.no_documents(given["request"], {"path": folder})
        articles = []
        for f in files:
            text = _prose(read_text(f, options.encoding))
            if not text:
                raise DataError("the document has no text", path=f, field="text")
            articles.append(RawArticle(text, None, f.stem))
        request = given["request"]
        builder.add(tid, articles, given["reference"] and _prose(given["reference"]),
                    request and " ".join(request.split()), questions, where, "folder name")
    if note := not_used_note(unused, root, "read (only topic folders and their .txt files "
                                           "are)"):
        builder.report.notes.append(note)


def read_documents(path, options: IngestOptions) -> tuple:
    """Read one's own documents: a JSONL file of topics or a folder of topic folders."""
    report = IngestReport("documents", str(path))
    builder = _Builder(options, report)
    if str(path).startswith(IRDS_PREFIX):
        # ir_datasets collections are read by `cruxflow ingest` alone (a workflow input names a
        # file): the module is imported by name so the workflow's environments, which do not
        # install ir_datasets, are not asked to (tests/test_cluster.py follows named imports)
        irds = importlib.import_module("cruxflow.data.ingest.irds")
        report.layout = "ir_datasets"
        irds.read_irds(str(path), builder, report)
        return builder.dataset(), report
    path = Path(path)
    if path.is_dir():
        report.layout = "folders"
        _read_folders(path, options, builder)
    elif path.is_file():
        report.layout = "jsonl"
        _read_jsonl(path, options, builder)
    else:
        raise wrong_kind(path, "a .jsonl file of topics or a folder of topic folders")
    return builder.dataset(), report
