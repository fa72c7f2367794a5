"""First-stage retrieval over a dataset's passages (pyserini / Lucene)."""
