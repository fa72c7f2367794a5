"""What a printed table shows for a measure: a short column label, the legend under the table
that gives each label's full name, and the markers that flag a cell a reader should not take at
face value (JSON and TSV outputs keep the full names and the bare values).

* :func:`short_labels`: ``Cov(cut='rank',order='file',questions='all',topics='run')@10`` is
  shown as ``Cov@10``; names that would share a label keep the parameters they differ in
  (``Cov[order=file]@10`` beside ``Cov[order=score]@10``);
* :func:`legend`: one line per label, the label and the full name (and what it is), wrapped to
  :data:`WIDTH` characters;
* :func:`marked` and :func:`footnotes`: :data:`ABOVE_ONE` after a value above 1 (a measure whose
  normaliser allows it, ``alpha_nDCG_crux`` when k > |Z*|, paper Eq. 4), :data:`UNDEFINED` after
  a mean over fewer topics than the row's (the measure is undefined for the others), and the
  notes under the table that say why.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from cruxflow.metrics.names import REGISTRY, parse

WIDTH = 120      # the longest line a table's legend and notes print
ABOVE_ONE = "[a]"
UNDEFINED = "[b]"


def short_labels(names: Iterable[str]) -> dict[str, str]:
    """``{full name: label}``: the measure and its cutoff; names that would share a label keep
    the parameters whose values differ among them, in brackets (but the one whose parameters
    are all its measure's defaults)."""
    parsed = {str(n): parse(n) for n in names}
    base = {n: _label(p.measure, p.cutoff) for n, p in parsed.items()}
    out = {}
    for full, label in base.items():
        group = [n for n, other in base.items() if other == label]
        if len(group) == 1 or str(parsed[full]) == label:   # the bare name keeps its label
            out[full] = label
            continue
        params = [dict(parsed[n].params) for n in group]
        differ = [key for key in params[0] if len({repr(p[key]) for p in params}) > 1]
        mine = dict(parsed[full].params)
        inner = ",".join(f"{key}={mine[key]}" for key in differ)
        out[full] = _label(f"{parsed[full].measure}[{inner}]", parsed[full].cutoff)
    return out


def _label(measure: str, cutoff) -> str:
    return measure if cutoff is None else f"{measure}@{cutoff}"


def legend(entries: Mapping[str, str], heading: str = "columns:") -> list[str]:
    """``heading`` and one line per ``{label: what it is}`` (the full name, and a gloss),
    labels aligned, each entry wrapped to :data:`WIDTH` characters."""
    if not entries:
        return []
    width = max(len(label) for label in entries)
    lines = [heading]
    for label, what in entries.items():
        lines += textwrap.wrap(what, WIDTH, initial_indent=f"  {label:<{width}}  ",
                               subsequent_indent=" " * (width + 4), break_on_hyphens=False,
                               break_long_words=False)
    return lines


def gloss(full_name: str) -> str:
    """``full_name`` and the registry's short label of its measure (``Cov@10``: ``Cov@10,
    Cov(Z)``)."""
    measure = re.match(r"[A-Za-z_][A-Za-z0-9_]*", full_name)[0]   # "Cov@k" is no name to parse
    return f"{full_name}, {REGISTRY[measure].label}"


def marked(value, *, digits: int = 4, defined: int | None = None, of: int | None = None) -> str:
    """``value`` printed with ``digits`` decimals, followed by :data:`ABOVE_ONE` when it is
    above 1 and by :data:`UNDEFINED` when it is a mean over ``defined`` topics of ``of``
    (fewer); ``undefined`` for a NaN or None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "undefined"
    text = f"{value:.{digits}f}"
    if value > 1 + 1e-12:
        text += f" {ABOVE_ONE}"
    if defined is not None and of is not None and defined < of:
        text += f" {UNDEFINED}"
    return text


def footnotes(above_one: Sequence[str], undefined: Mapping[str, Sequence[str]]) -> list[str]:
    """The notes for the markers a table printed: ``above_one``, the measures with a value
    above 1 (each measure's reason, from the registry); ``undefined``, ``{measure: [where,
    ...]}`` (``"k=10: 2 of 3 topics"``) for the means over fewer topics than the row's."""
    lines = []
    for measure in dict.fromkeys(above_one):
        why = REGISTRY[re.match(r"[A-Za-z_][A-Za-z0-9_]*", measure)[0]].above_one \
            or "its normaliser allows it"
        lines += textwrap.wrap(f"{ABOVE_ONE} {measure} above 1: {why} (docs/metrics.md)", WIDTH,
                               subsequent_indent="    ")
    for measure, where in undefined.items():
        shown = "; ".join(list(where)[:4]) + ("; ..." if len(where) > 4 else "")
        lines += textwrap.wrap(f"{UNDEFINED} {measure}: the mean over the topics where it is "
                               f"defined ({shown}); the others left out of the mean",
                               WIDTH, subsequent_indent="    ")
    return lines
