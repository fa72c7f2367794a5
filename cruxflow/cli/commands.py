"""cruxflow's commands, in the order of ``cruxflow --help``, each with its one-line help: the
command's module (``cruxflow/cli/<name>.py``, with ``add_command(subparsers)``) builds its parser
with this line (:func:`cruxflow.cli.vocabulary.command`), and ``cruxflow --help`` lists them
without importing any."""

COMMANDS = {
    "init": "write a starting project for your own documents",
    "fetch": "download the released sets (CRUX, CoverageBench, TREC RAG qrels) by name",
    "ingest": "read a corpus into the CRUX data model",
    "export": "write a dataset's sub-questions and ratings as AutoNuggetizer or NuggetBank "
              "nuggets",
    "evaluate": "score retrieval runs or contexts against a dataset, with paired tests",
    "crux_eval": "the CRUX authors' evaluation script (P, nDCG, alpha-nDCG, Cov @10)",
    "judge": "rate the unjudged passages in runs' top k (the holes)",
    "agreement": "any two label sets or leaderboards compared, items and rankings, with "
                 "intervals (which judge can I trust)",
    "annotate": "collect human labels in a web app (paper App. A.2)",
    "meta_eval": "the old name of agreement (the same flags)",
    "ppi": "a judge's mean corrected by a few human labels, with an interval (PPI)",
    "udcg": "UDCG (Trappolini et al. 2025): utility- and distraction-aware scores of retrieved "
            "contexts, and their correlation with RAG answers",
    "support": "support of RAG answers by their citations (TREC 2024 RAG Track)",
    "kpr": "Long2RAG key point recall (KPR, KPP, KPF) of responses",
    "plan": "requests, cached answers, tokens and time or cost of the LLM stages",
    "llm_serve": "serve a GGUF model with llama.cpp's OpenAI-compatible server",
}
