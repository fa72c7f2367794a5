"""The field's released sets by name: a registry (:mod:`.registry`, the data in
``registry/*.toml``), the one command that downloads them (``cruxflow fetch``,
:mod:`.fetch`), and a name wherever a folder or a judgments file goes (:mod:`.by_name`);
:func:`load` reads a fetched set in the shapes :func:`cruxflow.evaluate` takes
(:mod:`.released`), a CoverageBench config as released (:mod:`.coveragebench`), and
:mod:`.irds` registers the sets with ir_datasets (``ir_datasets.load("crux/<name>")``).
docs/released-data.md walks through them. Each name is imported on first use, so that
``import cruxflow`` (which watches for ir_datasets through :mod:`.irds`) stays light.
"""

from cruxflow import lazy_names

# name -> (module, attribute): loaded when first asked for
_LAZY = {
    "load": ("cruxflow.datasets.released", "load"),
    "resolve": ("cruxflow.datasets.by_name", "resolve"),
    "resolve_judgments": ("cruxflow.datasets.by_name", "resolve_judgments"),
    "resolve_label_file": ("cruxflow.datasets.by_name", "resolve_label_file"),
}

__all__ = list(_LAZY)
__getattr__ = lazy_names(__name__, _LAZY)
