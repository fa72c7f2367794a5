"""CRUX data creation (paper Sec. 3.2): LLM stages, dataset assembly, judgments at eta."""
