"""Metrics beyond CRUX: UDCG, TREC 2024 RAG support, Long2RAG key point recall."""
