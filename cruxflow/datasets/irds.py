"""The registered sets as ir_datasets datasets: ``ir_datasets.load("crux/<name>")`` gives a
fetched set's queries and qrels (read from cruxflow's cache; ir_datasets downloads nothing for
them, and a set not fetched says which ``cruxflow fetch`` to run).

ir_datasets has no plugin entry points: an extension registers its datasets when it is
imported (its documented ``ir_datasets.registry.register``). ``import cruxflow`` calls
:func:`watch`, which costs nothing when ir_datasets is never imported: it registers at once
if ir_datasets is already imported, else when it is.

What the qrels are, by kind of set (``qrels_defs`` says the same):

* TREC RAG qrels: the relevance judgments as released (``iteration`` the file's 2nd column);
* a CRUX subset, the labeling release: the graded answerability matrix, one qrel per rated
  (passage, sub-question), the sub-question's index as ``iteration`` and the 0-5 rating as
  ``relevance`` (what :func:`cruxflow.metrics.measures.graded_qrels` makes, and
  ``cruxflow.Cov`` reads through ir_measures);
* a CoverageBench config: its nugget labels as released, the nugget as ``iteration``.
"""

from __future__ import annotations

import sys
import warnings

PREFIX = "crux/"


def _queries(name: str):
    from cruxflow.datasets.released import load

    return load(name).topics


def _qrels(name: str):
    """``(query_id, doc_id, relevance, iteration)`` of a set, as the module's docstring says."""
    from cruxflow.datasets import coveragebench
    from cruxflow.datasets.cache import set_path
    from cruxflow.datasets.registry import get
    from cruxflow.datasets.released import judgments_of
    from cruxflow.metrics.inputs import as_judgments
    from cruxflow.metrics.options import DEFAULTS

    dataset = get(name)
    folder = set_path(dataset)
    if dataset.kind == "trec-qrels":
        path = folder / dataset.layout["judgments"]
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 4:
                yield parts[0], parts[2], int(parts[3]), parts[1]
        return
    if dataset.kind == "coveragebench":
        config = coveragebench.read_config(folder, dataset.layout, name)
        for topic, docs in config.labels.items():
            for doc, by_nugget in docs.items():
                for nugget, label in by_nugget.items():
                    yield topic, doc, label, nugget
        return
    ratings = as_judgments(judgments_of(dataset), DEFAULTS.eta).ratings or {}
    for topic, docs in ratings.items():
        for doc, values in docs.items():
            for i, r in enumerate(values):
                yield topic, doc, int(r), str(i)


def register_all() -> list[str]:
    """Register every set that has queries or qrels as ``crux/<name>``; the names added."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import BaseQrels, BaseQueries, GenericQuery, TrecQrel

    from cruxflow.datasets.registry import sets

    class Queries(BaseQueries):
        def __init__(self, name):
            self._name = name

        def queries_iter(self):
            for qid, text in _queries(self._name).items():
                yield GenericQuery(qid, text)

        def queries_cls(self):
            return GenericQuery

        def queries_namespace(self):
            return f"{PREFIX}{self._name}"

        def queries_lang(self):
            return "en"

    class Qrels(BaseQrels):
        def __init__(self, name, defs):
            self._name, self._defs = name, defs

        def qrels_iter(self):
            for qid, doc, rel, iteration in _qrels(self._name):
                yield TrecQrel(qid, doc, rel, iteration)

        def qrels_cls(self):
            return TrecQrel

        def qrels_defs(self):
            return self._defs

    defs = {
        "trec-qrels": {0: "not relevant", 1: "related", 2: "highly relevant",
                       3: "perfectly relevant", 4: "(2025) fully answers"},
        "coveragebench": {0: "does not support the nugget (iteration)",
                          1: "supports the nugget (iteration)"},
    }
    answerability = {r: f"answerability rating {r} of the sub-question (iteration)"
                     for r in range(-1, 6)}
    known = set(ir_datasets.registry)
    added = []
    for name, dataset in sets().items():
        if dataset.kind == "corpus" or PREFIX + name in known:
            continue
        parts = [Queries(name)]
        if dataset.layout.get("judgments") or dataset.kind == "coveragebench":
            parts.append(Qrels(name, defs.get(dataset.kind, answerability)))
        ir_datasets.registry.register(PREFIX + name, Dataset(*parts))
        added.append(PREFIX + name)
    return added


def _register_quietly() -> None:
    try:
        register_all()
    except Exception as exc:   # never break `import ir_datasets`
        warnings.warn(f"cruxflow could not register its sets with ir_datasets: {exc}",
                      stacklevel=2)


class _Watch:
    """Registers the sets right after ``ir_datasets`` is imported, once (a meta path finder
    that finds nothing itself: it wraps the loader the other finders give)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "ir_datasets":
            return None
        import importlib.util

        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _register_quietly()

        loader.exec_module = exec_module
        return spec


def watch() -> None:
    """Register the sets with ir_datasets now if it is imported, else when it is."""
    if "ir_datasets" in sys.modules:
        _register_quietly()
    elif not any(isinstance(f, _Watch) for f in sys.meta_path):
        sys.meta_path.insert(0, _Watch())
