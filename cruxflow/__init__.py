"""cruxflow: evaluate retrieval for long-form RAG (CRUX and beyond).

``cruxflow.evaluate(run, judgments, measures=["Cov@10", ...])`` scores a run from Python
(:mod:`cruxflow.metrics.api`); ``cruxflow.compare(runs, judgments, measures)`` scores several
runs and tests every pair under the one statistics policy (:mod:`cruxflow.metrics.compare`);
``cruxflow.Judgments`` says which judgments are which (ratings,
diversity qrels, relevance qrels: :mod:`cruxflow.metrics.inputs`); ``cruxflow.MetricOptions``
holds eta, alpha, the density weight, the relevance grades and the tokenizer;
``cruxflow.parse_measure`` reads a measure name (:mod:`cruxflow.metrics.names`);
``cruxflow.graded_qrels`` turns ratings into the graded diversity qrels the ir_measures measures
read (:mod:`cruxflow.metrics.inputs`);
``cruxflow.Cov``, ``cruxflow.alpha_nDCG_crux`` and ``cruxflow.Den`` are CRUX's measures as
ir_measures measure objects (:mod:`cruxflow.metrics.measures`). Each is imported on first
use, so ``import cruxflow`` stays light.
"""

import importlib
import sys

__version__ = "0.1.0"


def lazy_names(package: str, table: dict[str, tuple[str, str]]):
    """The ``__getattr__`` of ``package`` (PEP 562) that imports each name of ``table``
    (``{name: (module, attribute)}``) when first asked for, and keeps it: this package's and
    :mod:`cruxflow.datasets`'s, so that importing them stays light."""

    def __getattr__(name):
        if name in table:
            module, attribute = table[name]
            value = getattr(importlib.import_module(module), attribute)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


# name -> (module, attribute): loaded when first asked for
_LAZY = {
    "evaluate": ("cruxflow.metrics.api", "evaluate"),
    "compare": ("cruxflow.metrics.compare", "compare"),
    "Judgments": ("cruxflow.metrics.inputs", "Judgments"),
    "MetricOptions": ("cruxflow.metrics.options", "MetricOptions"),
    "parse_measure": ("cruxflow.metrics.names", "parse"),
    "graded_qrels": ("cruxflow.metrics.inputs", "graded_qrels"),
    "Cov": ("cruxflow.metrics.measures", "Cov"),
    "alpha_nDCG_crux": ("cruxflow.metrics.measures", "alpha_nDCG_crux"),
    "Den": ("cruxflow.metrics.measures", "Den"),
}

__all__ = ["__version__", *_LAZY]
__getattr__ = lazy_names(__name__, _LAZY)


def _watch_ir_datasets() -> None:
    """``ir_datasets.load("crux/<name>")`` for the registered sets: registered when
    ir_datasets is imported, at no cost otherwise (:mod:`cruxflow.datasets.irds`)."""
    from cruxflow.datasets.irds import watch

    watch()


_watch_ir_datasets()
