"""Pieces shared by the corpus readers: the report, paragraph normalisation, topic assembly
(:class:`IngestOptions` lives with the formats it serves, :mod:`.formats`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cruxflow.data.ingest.formats import IngestOptions
from cruxflow.data.model import Dataset, Document, Reference, Topic, make_doc_id
from cruxflow.data.text import split_long_document

_WS = re.compile(r"\s+")


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


def cluster_documents(tid: str, articles: list[RawArticle], options: IngestOptions
                             ) -> list[Document]:
    """A cluster's documents, numbered in order: chunks of a long article each take a number
    (``chunk_documents``), an empty article takes one without becoming a document
    (``count_empty_documents``) or none."""
    out: list[Document] = []
    index = 0
    for art in articles:
        if not art.text.strip():
            index += options.count_empty_documents
            continue
        texts = (split_long_document(art.text, options.max_document_words, options.chunk_words)
                 if options.chunk_documents else [art.text])
        for c, text in enumerate(texts):
            source = art.source_id if len(texts) == 1 else f"{art.source_id} chunk {c}"
            out.append(Document(make_doc_id(tid, index), tid, text, art.title, source))
            index += 1
    return out


def assemble(clusters: list[RawCluster], options: IngestOptions, report: IngestReport) -> Dataset:
    """Number the clusters and documents the CRUX way and build the dataset."""
    topics: dict[str, Topic] = {}
    documents: dict[str, Document] = {}
    for cluster in clusters:
        report.clusters_read += 1
        non_empty = sum(1 for a in cluster.articles if a.text.strip())
        report.empty_articles_skipped += len(cluster.articles) - non_empty
        counted = len(cluster.articles) if options.count_empty_documents else non_empty
        if counted < options.min_docs:
            what = "documents, empty ones counted" if options.count_empty_documents \
                else "non-empty documents"
            report.clusters_skipped.append({
                "source_id": cluster.source_id,
                "reason": f"{counted} {what} (< min_docs={options.min_docs})",
            })
            continue
        if options.topic_numbers is not None:
            tid = f"{options.prefix}-{options.topic_numbers[cluster.source_id]}"
        elif options.id_scheme == "source":
            tid = f"{options.prefix}-{cluster.source_id}"
        else:
            tid = f"{options.prefix}-{len(topics)}"
        doc_ids = []
        for doc in cluster_documents(tid, cluster.articles, options):
            documents[doc.doc_id] = doc
            doc_ids.append(doc.doc_id)
        if options.reference == "first":
            reference = cluster.references[0].text
        else:
            reference = "\n\n".join(r.text for r in cluster.references)
        topics[tid] = Topic(tid, reference, doc_ids, references=cluster.references,
                            source_id=cluster.source_id)
    if options.topic_numbers is not None:  # in the release's order
        topics = dict(sorted(topics.items(), key=lambda kv: options.topic_numbers[
            kv[1].source_id]))
    return Dataset(topics, documents)
