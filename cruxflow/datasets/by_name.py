"""A registered name wherever a folder or a judgments file goes.

:func:`resolve` turns ``NAME`` (a set of the registry: ``cruxflow fetch --list``) into its
folder in the cache, and ``NAME/SUB/PATH`` into that path inside it; anything else is a path
and stays one. A path that exists wins over a name, so a clone called ``crux-mds-duc04`` in
the working folder is read as before. A name whose set is not fetched is one line saying which
``cruxflow fetch`` to run: nothing here downloads.

:func:`resolve_label_file` is what ``cruxflow agreement --labels`` calls: a set with one file of
judgments (TREC RAG qrels) becomes that file.

:func:`resolve_judgments` is what :func:`cruxflow.evaluate` and :func:`cruxflow.compare` call
on their ``judgments`` argument: a set's name becomes the judgments of that set in the form
:func:`~cruxflow.metrics.inputs.as_judgments` reads (TREC qrels as relevance qrels, a
CoverageBench config's nugget labels as ratings, a release subset's folder, the labeling tool's
rating files); any other value is returned as it is.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from cruxflow.data.errors import DataError
from cruxflow.datasets.cache import set_path
from cruxflow.datasets.registry import DataSet, sets


def split_name(value) -> tuple[DataSet, str] | None:
    """``(set, subpath)`` when ``value`` is a string naming a registered set (``NAME`` or
    ``NAME/SUB/PATH``) and no file or folder of that path exists; else None."""
    if not isinstance(value, str) or not value or os.path.lexists(value):
        return None
    head, _, rest = value.replace(os.sep, "/").partition("/")
    known = sets()
    if head not in known:
        return None
    sub = PurePosixPath(rest) if rest else None
    if sub is not None and (sub.is_absolute() or ".." in sub.parts):
        raise DataError(f"{value}: a path inside the set {head}, without '..'")
    return known[head], rest.strip("/")


def resolve(value):
    """``value`` as a path: a registered name (or ``NAME/SUBPATH``) as its place in the cache,
    a string as a :class:`~pathlib.Path`; any other value (a Path, a dict, a frame) as it is."""
    named = split_name(value)
    if named is not None:
        return set_path(*named)
    return Path(value) if isinstance(value, str) else value


def resolve_judgments(value):
    """``value`` as :func:`cruxflow.evaluate` reads judgments: a set's name as that set's
    judgments (see the module's docstring), ``NAME/SUBPATH`` as that path, anything else as it
    is."""
    named = split_name(value)
    if named is None:
        return value
    dataset, sub = named
    if sub:
        return set_path(dataset, sub)
    from cruxflow.datasets.released import judgments_of

    return judgments_of(dataset)


def resolve_label_file(value):
    """``value`` as a label file or folder (``cruxflow agreement --labels``): a set whose
    judgments the registry lays out as one file or folder inside it (``trec-rag25``: its
    qrels) as that path, ``NAME/SUBPATH`` as that path, anything else as a
    :class:`~pathlib.Path`. A set whose judgments are several files, the whole set or none
    is refused in one line naming what it holds, to be given as ``NAME/SUBPATH``."""
    named = split_name(value)
    if named is None:
        return Path(value) if isinstance(value, str) else value
    dataset, sub = named
    if sub:
        return set_path(dataset, sub)
    held = dataset.laid_out("judgments")
    if len(held) == 1 and held[0] != ".":      # "." is the whole set (a CRUX subset)
        return set_path(dataset, held[0])
    what = ", ".join(f"{dataset.name}/{p}" for p in held if p != ".")
    raise DataError(f"{dataset.name} is not one file of labels ({dataset.kind}); name the file "
                    "inside it as NAME/PATH" + (f": its judgments are {what}" if what else ""))
