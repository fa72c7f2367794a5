"""Agreement coefficients of labels: Cohen's kappa (scikit-learn), Fleiss' kappa
(statsmodels), Krippendorff's alpha (krippendorff); undefined is ``None``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np


def cohen_kappa(a: Sequence, b: Sequence, labels: Sequence | None = None,
                weights: str | None = None) -> float | None:
    """Cohen's kappa of two label sequences (scikit-learn; ``weights="linear"`` or
    ``"quadratic"`` for an ordinal scale); ``None`` when it is 0/0 (chance agreement 1, e.g.
    one label everywhere) or there is nothing to compare."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(cohen_kappa_score(a, b, labels=labels, weights=weights))
    return None if math.isnan(kappa) else kappa

def fleiss_kappa(ratings: np.ndarray, n_categories: int) -> float | None:
    """Fleiss' kappa (statsmodels) of an items x raters matrix of category indices
    0..n_categories-1, every item rated by every rater; ``None`` when it is 0/0 (every label in
    one category)."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    table, _ = aggregate_raters(np.asarray(ratings, dtype=int), n_cat=n_categories)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(_fleiss(table, method="fleiss"))
    return None if math.isnan(kappa) else kappa

def krippendorff_alpha(a: Sequence[int], b: Sequence[int], *,
                       level: str = "ordinal", values: Sequence[int] | None = None
                       ) -> float | None:
    """Krippendorff's alpha of two raters' labels of the same items (the ``krippendorff``
    package, the 'judge' extra) at ``level``, over the value domain ``values``; ``None`` when
    it is 0/0 (one label everywhere) or there is nothing to compare."""
    from cruxflow._extras import extra

    with extra(__name__, "judge"):
        import krippendorff

    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(krippendorff.alpha(reliability_data=np.array([a, b], dtype=float),
                                         level_of_measurement=level,
                                         value_domain=None if values is None else list(values)))
    return None if math.isnan(value) else value
