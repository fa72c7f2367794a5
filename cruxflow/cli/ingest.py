"""``cruxflow ingest --format FORMAT --input PATH --output DIR``: read a raw corpus, write the
data model (docs/data-model.md) and print the counts."""

from __future__ import annotations

import json
from functools import partial

from cruxflow.cli import vocabulary
from cruxflow.data.ingest import READERS, IngestOptions, ingest_to


def _cmd_ingest(args) -> int:
    if args.number_like is not None and args.format != "duc2004":
        from cruxflow.data.errors import DataError

        raise DataError("--number-like numbers DUC 2004 clusters (--format duc2004)",
                        path=args.number_like)
    options = IngestOptions(prefix=args.prefix or _default_prefix(args.format),
                            id_scheme=args.id_scheme, min_docs=args.min_docs,
                            encoding=args.encoding, summary_length=args.summary_length,
                            reference=args.reference, corpus=args.corpus,
                            count_empty_documents=args.count_empty_documents,
                            chunk_documents=args.chunk_documents,
                            max_document_words=args.max_document_words,
                            chunk_words=args.chunk_words,
                            strict_collection=args.strict_collection,
                            number_like=args.number_like and str(args.number_like))
    summary = ingest_to(args.format, args.input, args.output, options,
                        distractors=args.distractors, eta=args.eta,
                        max_topics=args.max_topics, allow_empty=args.allow_empty)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"wrote {summary['output']}")
        rows = [(key, summary[key]) for key in (
            "layout", "topics", "documents", "summaries", "passages", "rated_passages",
            "clusters_skipped", "empty_articles_skipped", "runs") if key in summary]
        rows += [(f"judgments.{key}", value)
                 for key, value in summary.get("judgments", {}).items()]
        width = max(len(key) for key, _ in rows) + 2
        for key, value in rows:
            print(f"  {key:{width}s}{value}")
        for note in summary.get("notes", []):
            print(f"  note: {note}")
    return 0


def _default_prefix(fmt: str) -> str:
    return {"multinews": "multi_news-test", "multinews-src": "multi_news-test",
            "duc2004": "duc04-test", "crux": "crux", "documents": "own",
            "nuggets": "nuggets"}[fmt]


def add_command(subparsers) -> None:
    """Add ``cruxflow ingest`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "ingest", help="read a raw corpus into the CRUX data model",
        description="Read a raw corpus (Multi-News, DUC 2004, a CRUX release, your own "
                    "documents, nuggets) and write it as a dataset directory of the CRUX data "
                    "model, with its counts. See docs/ingest.md and docs/data-model.md.")
    add = partial(vocabulary.add, p)
    add("format", required=True, choices=sorted(READERS), detail="here the input's")
    add("input", required=True,
        detail="multinews: .jsonl/.parquet; multinews-src: the .src file (the .tgt beside "
               "it); duc2004: the directory with docs/ and models/; crux: the release "
               "directory; documents: a .jsonl file of topics or a folder of topic folders "
               "(docs/own-data.md); nuggets: AutoNuggetizer JSONL or a folder with "
               "nuggets.jsonl and assignments.jsonl (docs/nuggets.md)")
    add("output", required=True,
        detail="the dataset; an earlier dataset there (its manifest.json written by ingest, no "
               "other file) is replaced as a whole; any other non-empty directory and a path "
               "inside the input are refused")
    add("prefix")
    add("id-scheme")
    add("min-docs")
    add("encoding")
    add("summary-length")
    add("reference")
    add("count-empty-documents")
    add("chunk-documents")
    add("max-document-words")
    add("chunk-words")
    add("distractors")
    add("corpus")
    add("max-topics")
    add("eta", detail="here for the judgments")
    add("number-like")
    add("strict-collection", detail="crux: a run shipped with the release")
    add("allow-empty", detail="here a dataset with no topic, or an empty distractors or run "
                              "file")
    add("json", detail="here the summary")
    p.set_defaults(func=_cmd_ingest)
