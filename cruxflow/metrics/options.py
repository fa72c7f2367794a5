"""The parameters every scoring door shares, with their defaults declared once.

:class:`MetricOptions` is what the workflow's scorer, ``cruxflow evaluate``, the Python API
(:func:`cruxflow.evaluate`) and the measure names (:mod:`cruxflow.metrics.names`, where ``rel``
defaults to ``eta``) read; argparse takes its defaults from :data:`DEFAULTS` and
``tests/test_doors.py`` checks that ``cruxflow/schemas/config.schema.json`` says the same.

There is no tie option: every door that is ours orders a run one way (:data:`TIE_POLICY`,
:func:`cruxflow.data.io.trec_order`), so that a number does not depend on which door printed
it. Kept light (no numpy, no pandas): the CLI imports it to build its parser.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from cruxflow.data.errors import DataError

RATING_MIN, RATING_MAX = 0, 5   # as cruxflow.data.model (tested equal)

TIE_POLICY = ("score descending, then passage id descending (trec_eval's order); the rank "
              "column is ignored")


@dataclass(frozen=True)
class RelevanceGrades:
    """The grades of qrels.relevance (nDCG's gains; R, P and AP count every grade >= 1)."""

    required: int    # P** = Z*
    relevant: int    # the rest of P*
    redundant: int   # passages of P* that judgments.redundant_passages finds dominated by P**


# "2-1" (our default): P** 2, the rest of P* 1. "3-2-1": the CRUX authors' qrels
# (DylanJoo/crux, augmentation/create_ranking_data.py on main): P** 3, redundant passages 1,
# the rest of P* 2.
RELEVANCE_GRADES = {"2-1": RelevanceGrades(2, 1, 1), "3-2-1": RelevanceGrades(3, 2, 1)}


def check_eta(eta) -> int:
    """The answerability threshold: a rating from 1 to 5 (at 0 every passage answers every
    question, above 5 none does)."""
    if isinstance(eta, bool) or not isinstance(eta, int) or not RATING_MIN < eta <= RATING_MAX:
        raise DataError(f"must be a rating from {RATING_MIN + 1} to {RATING_MAX}, got {eta!r}",
                        field="eta")
    return eta


@dataclass(frozen=True)
class MetricOptions:
    """How a run is scored, beyond the measure names: ``eta`` (Eq. 2, a name's ``rel``),
    ``alpha`` (Eq. 5), ``density_weight`` (w of Eq. 6), ``relevance_grades`` (the qrels of
    R, P, AP and nDCG: :data:`RELEVANCE_GRADES`) and ``tokenizer`` (Den's token counts: a
    local ``tokenizer.json``, or None for the regex counter)."""

    eta: int = 3
    alpha: float = 0.5
    density_weight: float = 0.5
    relevance_grades: str = "2-1"
    tokenizer: str | None = None

    def __post_init__(self):
        check_eta(self.eta)
        if not 0 <= float(self.alpha) <= 1:
            raise DataError(f"must lie in 0..1, got {self.alpha!r}", field="alpha")
        if not float(self.density_weight) > 0:
            raise DataError(f"must be more than 0, got {self.density_weight!r}",
                            field="density_weight")
        if self.relevance_grades not in RELEVANCE_GRADES:
            raise DataError(f"must be one of {sorted(RELEVANCE_GRADES)}, got "
                            f"{self.relevance_grades!r}", field="relevance_grades")

    def with_(self, **changes) -> MetricOptions:
        """A copy with ``changes`` (None values keep the current setting)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def grades(self) -> RelevanceGrades:
        return RELEVANCE_GRADES[self.relevance_grades]


DEFAULTS = MetricOptions()

# ndeval (pyndeval) reports at most rank 20; the CRUX paper used @20
NDEVAL_CUTOFF = 20
