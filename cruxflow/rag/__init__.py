"""RAG generation from retrieval contexts and the judged final results y (paper Sec. 4)."""
