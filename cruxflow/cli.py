"""Console entry point: ``cruxflow ingest``.

``cruxflow ingest --format {multinews,multinews-src,duc2004,crux} --input PATH --output DIR``
reads a raw corpus, writes the data model (see docs/data-model.md) and prints the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

from cruxflow.errors import DataError
from cruxflow.ingest import READERS, IngestOptions, ingest, read_distractors
from cruxflow.ingest.crux import crux_runs
from cruxflow.io import read_run
from cruxflow.judgments import derive, write_judgments
from cruxflow.models import DEFAULT_GGUF


def ingest_to(fmt: str, src, out, options: IngestOptions, *, distractors=None,
              eta: int | None = 3, alpha: float = 0.5, max_topics: int | None = None) -> dict:
    """Read, validate and write one corpus; return the summary printed by the CLI."""
    if distractors and fmt == "crux":
        raise DataError("--distractors does not apply to the crux format: its passages.jsonl "
                        "already holds the whole corpus", path=distractors)
    dataset, report = ingest(fmt, src, options)
    if max_topics is not None:
        dataset = dataset.head(max_topics)
    runs = crux_runs(src) if fmt == "crux" else []
    for run in runs:
        read_run(run)  # validate everything before writing anything
    if distractors:
        for doc in read_distractors(distractors, f"{options.prefix}-distractors",
                                    options.encoding):
            dataset.documents[doc.doc_id] = doc
    counts = dataset.save(out, extra_manifest={"ingest": report.to_json(),
                                               "prefix": options.prefix,
                                               "max_topics": max_topics})
    summary = {"output": str(out), **counts,
               "clusters_skipped": len(report.clusters_skipped),
               "empty_articles_skipped": report.empty_articles_skipped}
    if dataset.ratings and eta is not None:
        jdir = Path(out) / "judgments" / f"eta{eta}"
        summary["judgments"] = write_judgments(derive(dataset, eta, alpha), dataset, jdir, eta)
    if fmt == "crux":
        for run in runs:
            dest = Path(out) / "runs" / run.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run, dest)
        summary["runs"] = len(runs)
    return summary


def _cmd_ingest(args) -> int:
    options = IngestOptions(prefix=args.prefix or _default_prefix(args.format),
                            id_scheme=args.id_scheme, min_docs=args.min_docs,
                            encoding=args.encoding, summary_length=args.summary_length,
                            reference=args.reference)
    summary = ingest_to(args.format, args.input, args.output, options,
                        distractors=args.distractors, eta=args.eta,
                        max_topics=args.max_topics)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"wrote {summary['output']}")
        for key in ("topics", "documents", "summaries", "passages", "rated_passages",
                    "clusters_skipped", "empty_articles_skipped", "runs"):
            if key in summary:
                print(f"  {key:24s}{summary[key]}")
        for key, value in summary.get("judgments", {}).items():
            print(f"  judgments.{key:14s}{value}")
    return 0


def _default_prefix(fmt: str) -> str:
    return {"multinews": "multi_news-test", "multinews-src": "multi_news-test",
            "duc2004": "duc04-test", "crux": "crux"}[fmt]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cruxflow", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ingest", help="read a raw corpus into the CRUX data model")
    p.add_argument("--format", required=True, choices=sorted(READERS))
    p.add_argument("--input", required=True, type=Path,
                   help="multinews: .jsonl/.parquet; multinews-src: the .src file (the .tgt "
                        "beside it); duc2004: the directory with docs/ and models/; crux: the "
                        "release directory")
    p.add_argument("--output", required=True, type=Path, help="dataset directory to write")
    p.add_argument("--prefix", help="topic id prefix (default: multi_news-test, duc04-test)")
    p.add_argument("--id-scheme", choices=["index", "source"], default="index")
    p.add_argument("--min-docs", type=int, default=2,
                   help="drop clusters with fewer non-empty documents (CRUX: 2)")
    p.add_argument("--encoding", default="utf-8")
    p.add_argument("--summary-length", type=int, default=100,
                   help="DUC: read <CLUSTER>.M.<len>.T.* summaries")
    p.add_argument("--reference", choices=["concat", "first"], default="concat",
                   help="DUC: y* = all model summaries joined (CRUX) or the first")
    p.add_argument("--distractors", type=Path, help="JSONL of unrelated articles to add")
    p.add_argument("--max-topics", type=int, help="keep only the first N topics")
    p.add_argument("--eta", type=int, default=3, help="answerability threshold for judgments")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_cmd_ingest)

    p = sub.add_parser("llm-serve",
                       help="serve a GGUF model with llama.cpp's OpenAI-compatible server")
    p.add_argument("--model", default=DEFAULT_GGUF,
                   help=f"GGUF path or package:<module>/<file> (default {DEFAULT_GGUF})")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--n-ctx", type=int, default=4096, help="context window per slot")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--parallel", type=int, default=1, help="requests served at once")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=_cmd_llm_serve)
    return parser



def _cmd_llm_serve(args) -> int:
    from cruxflow.llm.llamacpp import serve

    server = serve(args.model, host=args.host, port=args.port, n_ctx=args.n_ctx,
                   threads=args.threads, n_parallel=args.parallel, verbose=args.verbose)
    print(f"serving {args.model} at {server.listening_address}/v1 (Ctrl-C stops)", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DataError as exc:
        print(f"cruxflow: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
