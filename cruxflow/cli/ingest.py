"""``cruxflow ingest --format FORMAT --input PATH --output DIR``: read a raw corpus, write the
data model (docs/data-model.md) and print the counts."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.data.ingest import READERS, IngestOptions, ingest_to
from cruxflow.metrics.options import DEFAULTS


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


# The config schema's rule for datasets.<name>.prefix: topic ids become parts of file names,
# so "a/../b" would write outside results/, and "" would silently be the default.
PREFIX = re.compile(r"^[A-Za-z0-9_.-]+$")


def _prefix(text: str) -> str:
    if not PREFIX.match(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(f"{text!r}: letters, digits, '_', '.' and '-' only "
                                         "(topic ids become file names)")
    return text


def _default_prefix(fmt: str) -> str:
    return {"multinews": "multi_news-test", "multinews-src": "multi_news-test",
            "duc2004": "duc04-test", "crux": "crux", "documents": "own",
            "nuggets": "nuggets"}[fmt]


def add_command(subparsers) -> None:
    """Add ``cruxflow ingest`` to the CLI's subparsers."""
    p = subparsers.add_parser("ingest", help="read a raw corpus into the CRUX data model")
    p.add_argument("--format", required=True, choices=sorted(READERS))
    p.add_argument("--input", required=True, type=Path,
                   help="multinews: .jsonl/.parquet; multinews-src: the .src file (the .tgt "
                        "beside it); duc2004: the directory with docs/ and models/; crux: the "
                        "release directory; documents: a .jsonl file of topics or a folder "
                        "of topic folders (docs/own-data.md); nuggets: AutoNuggetizer JSONL or "
                        "a folder with nuggets.jsonl and assignments.jsonl (docs/nuggets.md)")
    p.add_argument("--output", required=True, type=Path,
                   help="dataset directory to write; an earlier dataset there (its "
                        "manifest.json written by ingest, no other file) is replaced as a "
                        "whole; any other non-empty directory and a path inside the input are "
                        "refused")
    p.add_argument("--prefix", type=_prefix,
                   help="topic id prefix (default: multi_news-test, duc04-test)")
    p.add_argument("--id-scheme", choices=["index", "source"], default="index")
    p.add_argument("--min-docs", type=types.positive_int, default=2,
                   help="drop clusters with fewer non-empty documents (CRUX: 2)")
    p.add_argument("--encoding", type=types.encoding, default="utf-8")
    p.add_argument("--summary-length", type=types.positive_int, default=100,
                   help="DUC: read <CLUSTER>.M.<len>.T.* summaries")
    p.add_argument("--reference", choices=["concat", "first"], default="concat",
                   help="DUC: y* = all model summaries joined (CRUX) or the first")
    p.add_argument("--count-empty-documents", action="store_true",
                   help="count empty articles in --min-docs and in document numbering, as the "
                        "CRUX authors did (they never become documents)")
    p.add_argument("--chunk-documents", action="store_true",
                   help="cut documents over --max-document-words words into --chunk-words "
                        "chunks, each its own document (the CRUX release's numbering)")
    p.add_argument("--max-document-words", type=types.positive_int, default=1024)
    p.add_argument("--chunk-words", type=types.positive_int, default=512)
    p.add_argument("--distractors", type=Path, help="JSONL of unrelated articles to add")
    p.add_argument("--corpus", type=Path,
                   help="crux: the passage collection of a release clone (default: the "
                        "crux-mds-corpus folder beside the subset folder, if any); nuggets: "
                        "the segments (MS MARCO v2.1 segmented JSONL) the assignments cite")
    p.add_argument("--max-topics", type=types.positive_int, help="keep only the first N topics")
    p.add_argument("--eta", type=types.eta, default=DEFAULTS.eta,
                   help="answerability threshold for judgments (1-5, default %(default)s)")
    p.add_argument("--number-like", type=Path, metavar="PASSAGES",
                   help="duc2004: number the clusters as the CRUX release whose passages "
                        "(JSONL {id, contents}, ids <prefix>-<i>:<doc>#<n>) this file holds, "
                        "matching each cluster's documents to them (docs/data-model.md)")
    p.add_argument("--strict-collection", action="store_true",
                   help="crux: refuse a shipped run that ranks a passage outside the passage "
                        "collection (default: count it as an unjudged passage)")
    p.add_argument("--allow-empty", action="store_true",
                   help="write a dataset with no topic (or go on with an empty distractors or "
                        "run file) instead of failing")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_cmd_ingest)
