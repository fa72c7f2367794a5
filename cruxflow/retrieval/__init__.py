"""First-stage retrieval over a dataset's passages (pyserini / Lucene, FAISS)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def topic_queries(dataset) -> dict[str, str]:
    """``{topic_id: open-ended query}``; topics without a query are logged and left out."""
    queries = {t.topic_id: t.query for t in dataset.topics.values() if t.query}
    missing = sorted(set(dataset.topics) - set(queries))
    if missing:
        log.warning("%d topics have no query and get no ranking: %s", len(missing), missing[:5])
    return queries
