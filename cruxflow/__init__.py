"""cruxflow: evaluate retrieval for long-form RAG (CRUX and beyond)."""

__version__ = "0.1.0"
