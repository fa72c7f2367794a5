"""Prediction-powered inference (PPI) of a mean: a judge's scores on every item, corrected by
human scores on a subset of them, with a confidence interval that stays honest when the judge
is biased (Angelopoulos et al., "Prediction-powered inference", Science 2023; PPI++:
Angelopoulos, Duchi and Zrnic, arXiv:2311.01453). docs/judge-trust.md explains when to use it.

The estimate and its interval come from the authors' library, ``ppi-python`` (``ppi_py``, the
``judge`` extra); this module reads the inputs, checks them and names the three numbers a user
compares: the judge-only mean (biased by whatever bias the judge has), the human-only mean (no
bias, wide interval from few labels) and the PPI estimate (no bias, narrower interval when the
judge tracks the humans).

The labelled items are those with a human value; the judge's values on the *other* items form
PPI's unlabelled sample, so the two samples are disjoint as the method assumes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from cruxflow._extras import extra
from cruxflow.data.errors import DataError
from cruxflow.data.io import read_text

METHODS = ("ppi", "ppi++")


@dataclass(frozen=True)
class PPIResult:
    estimate: float          # the PPI point estimate of the mean over all items
    ci_low: float
    ci_high: float
    judge_only: float        # the judge's mean over all items
    human_only: float        # the humans' mean over the labelled items
    human_ci_low: float      # the classical (CLT) interval of the human-only mean
    human_ci_high: float
    n_labeled: int
    n_total: int
    method: str
    alpha: float
    lam: float               # PPI's power-tuning weight: 1 for classic PPI, tuned for PPI++

    def to_json(self) -> dict:
        return asdict(self)


def read_item_values(path) -> dict[str, float]:
    """``item<TAB>value`` lines (blank lines skipped); an item twice, a value that is not a
    finite number or an empty file is an error naming the file and line."""
    values: dict[str, float] = {}
    first: dict[str, int] = {}
    for lineno, line in enumerate(read_text(path, "utf-8-sig").split("\n"), 1):
        if not line.strip():
            continue
        where = {"path": path, "record": f"line {lineno}"}
        parts = line.rstrip("\r").split("\t")
        if len(parts) != 2 or not parts[0].strip():
            raise DataError(f"expected 'item<TAB>value', got {line[:60]!r}", **where)
        item, text = parts[0].strip(), parts[1].strip()
        try:
            value = float(text)
        except ValueError:
            raise DataError(f"{text!r} is not a number", field="value", **where) from None
        if not math.isfinite(value):
            raise DataError(f"{text!r} is not a finite number", field="value", **where)
        if item in values:
            raise DataError(f"item {item!r} again (first at line {first[item]})", field="item",
                            **where)
        values[item], first[item] = value, lineno
    if not values:
        raise DataError("no 'item<TAB>value' line in the file", path=path)
    return values


def ppi_interval(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, *,
                 alpha: float = 0.05, method: str = "ppi") -> tuple[float, float, float, float]:
    """(estimate, low, high, lambda) from arrays, through ``ppi_py``; no checks (the simulation
    in the tests calls this a thousand times)."""
    with extra(__name__, "judge"):
        from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    lam = 1.0 if method == "ppi" else None   # None: ppi_py tunes lambda (PPI++)
    low, high = ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=alpha, lam=lam)
    estimate = float(np.ravel(ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=lam))[0])
    if lam is None:
        # the estimate is lam * mean(yhat_unlabeled) + mean(y - lam * yhat): solve for the lambda
        # ppi_py chose (undefined when the judge's two means coincide; then it does not matter)
        gap = float(yhat_unlabeled.mean() - yhat.mean())
        lam = (estimate - float(y.mean())) / gap if gap else math.nan
    return estimate, float(np.ravel(low)[0]), float(np.ravel(high)[0]), lam


def ppi_mean(judge: Mapping[str, float], human: Mapping[str, float], *, alpha: float = 0.05,
             method: str = "ppi", judge_path=None, human_path=None) -> PPIResult:
    """The PPI estimate of the mean of ``judge``'s items with its ``1 - alpha`` interval.

    ``judge`` has a value for every item; ``human`` for a subset (the labelled items). Errors
    (one line each): a human item the judge lacks, fewer than two labelled items, every item
    labelled (no unlabelled sample: the human mean is then the answer), every human value the
    same (no variance to build an interval from). ``*_path`` only name the files in errors.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    from cruxflow.data.limits import check_level

    alpha = check_level("alpha", alpha)   # NaN too, in the command line's words
    unknown = [item for item in human if item not in judge]
    if unknown:
        raise DataError(f"{len(unknown)} human item(s) have no judge value, first {unknown[0]!r}"
                        " (the human items must be a subset of the judge's)",
                        path=human_path, field="item")
    if len(human) < 2:
        raise DataError(f"{len(human)} labelled item(s): PPI needs at least 2", path=human_path)
    unlabeled = [item for item in judge if item not in human]
    if not unlabeled:
        raise DataError(f"every one of the {len(judge)} judge items has a human value: nothing "
                        "is left for the judge to add (report the human mean)", path=judge_path)
    y = np.array([human[i] for i in human], dtype=float)
    if np.ptp(y) == 0:
        raise DataError(f"all {len(y)} human values are {y[0]:g}: no interval can be built "
                        "from a constant column (label more items)", path=human_path,
                        field="value")
    yhat = np.array([judge[i] for i in human], dtype=float)
    yhat_unlabeled = np.array([judge[i] for i in unlabeled], dtype=float)
    estimate, low, high, lam = ppi_interval(y, yhat, yhat_unlabeled, alpha=alpha, method=method)
    with extra(__name__, "judge"):
        from ppi_py import classical_mean_ci
    h_low, h_high = classical_mean_ci(y, alpha=alpha)
    return PPIResult(estimate, low, high, float(np.mean(list(judge.values()))), float(y.mean()),
                     float(np.ravel(h_low)[0]), float(np.ravel(h_high)[0]), len(y), len(judge),
                     method, alpha, lam)


def ppi_files(judge_path, human_path, *, alpha: float = 0.05, method: str = "ppi") -> PPIResult:
    """:func:`ppi_mean` of two ``item<TAB>value`` files."""
    return ppi_mean(read_item_values(judge_path), read_item_values(human_path), alpha=alpha,
                    method=method, judge_path=judge_path, human_path=human_path)
