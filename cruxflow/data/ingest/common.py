"""Pieces shared by the corpus readers: options, paragraph normalisation, topic assembly."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cruxflow.data.model import Dataset, Document, Reference, Topic, make_doc_id

_WS = re.compile(r"\s+")


@dataclass
class IngestOptions:
    """How a raw corpus becomes topics.

    ``prefix`` starts every topic id; ids are ``<prefix>-<i>`` with ``i`` counting the clusters
    kept (the CRUX release numbers them this way, after dropping clusters with fewer than
    ``min_docs`` non-empty documents), or the cluster's own name with ``id_scheme="source"``.
    """

    prefix: str = "topic"
    id_scheme: str = "index"          # "index" (CRUX-compatible) or "source"
    min_docs: int = 2                 # the CRUX release keeps clusters with >= 2 documents
    encoding: str = "utf-8"
    summary_length: int = 100         # DUC: which model summaries (<CLUSTER>.M.<len>.T.<X>)
    reference: str = "concat"         # DUC: y* = all model summaries joined, or "first"
    corpus: str | None = None         # CRUX release: the passage collection (crux-mds-corpus)


@dataclass
class IngestReport:
    """What a reader did, for the manifest and the console."""

    format: str
    source: str
    clusters_read: int = 0
    clusters_skipped: list[dict] = field(default_factory=list)
    empty_articles_skipped: int = 0
    layout: str | None = None         # which published layout a multi-layout reader found
    counts: dict = field(default_factory=dict)   # what that reader counted (e.g. -1 ratings)
    notes: list[str] = field(default_factory=list)  # what a user must know about the import

    def to_json(self) -> dict:
        out = {
            "format": self.format,
            "source": self.source,
            "clusters_read": self.clusters_read,
            "clusters_skipped": self.clusters_skipped,
            "empty_articles_skipped": self.empty_articles_skipped,
        }
        if self.layout is not None:
            out.update(layout=self.layout, counts=self.counts, notes=self.notes)
        return out


def clean_paragraphs(paragraphs) -> str:
    """Collapse whitespace inside each paragraph, drop empty ones, separate by a blank line."""
    kept = [_WS.sub(" ", p).strip() for p in paragraphs]
    return "\n\n".join(p for p in kept if p)


@dataclass
class RawArticle:
    text: str
    title: str | None = None
    source_id: str | None = None


@dataclass
class RawCluster:
    source_id: str
    articles: list[RawArticle]
    references: list[Reference]


def assemble(clusters: list[RawCluster], options: IngestOptions, report: IngestReport) -> Dataset:
    """Number the clusters and documents the CRUX way and build the dataset."""
    topics: dict[str, Topic] = {}
    documents: dict[str, Document] = {}
    for cluster in clusters:
        report.clusters_read += 1
        articles = [a for a in cluster.articles if a.text.strip()]
        report.empty_articles_skipped += len(cluster.articles) - len(articles)
        if len(articles) < options.min_docs:
            report.clusters_skipped.append({
                "source_id": cluster.source_id,
                "reason": f"{len(articles)} non-empty documents (< min_docs={options.min_docs})",
            })
            continue
        if options.id_scheme == "source":
            tid = f"{options.prefix}-{cluster.source_id}"
        else:
            tid = f"{options.prefix}-{len(topics)}"
        doc_ids = []
        for i, art in enumerate(articles):
            did = make_doc_id(tid, i)
            documents[did] = Document(did, tid, art.text, art.title, art.source_id)
            doc_ids.append(did)
        if options.reference == "first":
            reference = cluster.references[0].text
        else:
            reference = "\n\n".join(r.text for r in cluster.references)
        topics[tid] = Topic(tid, reference, doc_ids, references=cluster.references,
                            source_id=cluster.source_id)
    return Dataset(topics, documents)
