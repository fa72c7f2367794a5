"""``cruxflow annotate``: collect the paper's two human labels in a small web app (App. A.2).

Task 1 (``reports``): is each kept sub-question answered by a RAG report, with the supporting
span. Task 2 (``ratings``): rate (passage, sub-question) pairs 0-5 on the judge's rubric (Fig. 8),
with a highlighted rationale. ``assign`` builds the items (sampling, overlap), ``store`` keeps
every label in SQLite the moment it is given, ``export`` writes the formats of
docs/human-labels.md; only ``app`` needs the web framework (the ``annotate`` extra).
"""
