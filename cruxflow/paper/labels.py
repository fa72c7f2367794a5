"""How the paper names and orders systems and metrics: display labels (Markdown and LaTeX),
the kind of a system (reference, baseline, pipeline) and Table 1's row order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cruxflow.data.names import (
    DIRECT,
    HUMAN,
    ORACLE,
    RANDOM,
    RANDOM_RELEVANT,
    REFERENCE_RUNS,
    REFERENCE_SYSTEMS,
)
from cruxflow.metrics.names import REGISTRY, qualified
from cruxflow.metrics.options import MetricOptions

REFERENCES = REFERENCE_SYSTEMS
BASELINES = REFERENCE_RUNS
FIRST_STAGES = ("bm25", "dense", "splade")
# Keys are lower-cased: presets name re-rankers "MMR", "miniLM", "monoT5", ...; Table 1's order.
RERANKERS = {"mmr": "MMR", "minilm": "miniLM", "monot5": "monoT5", "rankzephyr": "RankZephyr",
             "rankfirst": "RankFirst", "setwise": "SetwiseFlanT5",
             "setwiseflant5": "SetwiseFlanT5"}
_RERANKER_ORDER = {"mmr": 0, "minilm": 1, "monot5": 2, "rankzephyr": 3, "rankfirst": 4,
                   "setwise": 5, "setwiseflant5": 5}
FIRST_STAGE_LABELS = {"bm25": "BM25 (LR)", "dense": "Dense (DR)", "splade": "SPLADE (LSR)"}
FIRST_STAGE_SHORT = {"bm25": "LR", "dense": "DR", "splade": "LSR"}
SYSTEM_LABELS = {DIRECT: "(#1) Direct prompting", HUMAN: "(#2) Oracle result y*",
                 ORACLE: "(#3) Oracle retrieval Z*", RANDOM: "Random",
                 RANDOM_RELEVANT: "Random relevant", **FIRST_STAGE_LABELS}
LATEX_SYSTEM_LABELS = {DIRECT: r"(\#1) Direct prompting", HUMAN: r"(\#2) Oracle result $y^*$",
                        ORACLE: r"(\#3) Oracle retrieval $Z^*$"}

# The measures' labels come from their definitions (cruxflow.metrics.names.REGISTRY: the two
# alpha-nDCG columns named so that nobody takes one for the other: the paper's tables print
# ndeval's alpha-nDCG@20 with the ideal over all of P* ("published computation"), while its
# Eq. 4 takes the ideal over Z*, docs/paper-parity.md, point 1). Cov(y) and Den(y) measure
# the generated report y, not a run: they are the RAG stage's (cruxflow.rag.reports), labelled
# here.
FINAL_RESULT_LABELS = {"Cov_y": ("Cov(y)", "$Cov(y)$"), "Den_y": ("Den(y)", "$Den(y)$")}
METRIC_LABELS = {**{d.name: d.label for d in REGISTRY.values() if d.label},
                 **{m: plain for m, (plain, _) in FINAL_RESULT_LABELS.items()}}
LATEX_METRIC_LABELS = {**{d.name: d.latex for d in REGISTRY.values() if d.latex},
                       **{m: latex for m, (_, latex) in FINAL_RESULT_LABELS.items()}}
TABLE1_METRICS = ("Cov", "alpha_nDCG_published", "alpha_nDCG_crux", "Cov_y", "Den", "Den_y")
# Table 1's last row: the context metric (key) against the final-result metric (value).
TABLE1_PAIRS = {"Cov": "Cov_y", "alpha_nDCG_published": "Cov_y", "alpha_nDCG_crux": "Cov_y",
                "Den": "Den_y"}
TABLE3_PAIRS = {"Cov": "Cov_y", "alpha_nDCG_published": "Cov_y", "alpha_nDCG_crux": "Cov_y",
                "R": "Cov_y", "AP": "Cov_y", "nDCG": "Cov_y", "Den": "Den_y"}
TAU_ROW = "kendall_tau"


def measure_name(metric: str, k, eta: int) -> str:
    """The full registry name of a table's ``metric`` column at context size ``k`` and
    threshold ``eta`` (``Cov``, oracle, 3 -> ``Cov@oracle``); "" for Cov(y) and Den(y), which
    measure the generated report, not a run."""
    if metric not in REGISTRY:
        return ""
    return qualified(metric, k, MetricOptions(eta=int(eta)))
TAU_LABEL = "Rank Corr. (Kendall tau)"
DASH = "-"


def _split(system: str) -> tuple[str, str] | None:
    first, sep, second = system.partition("+")
    if sep and first in FIRST_STAGES and second:
        return first, second
    return None


def display_name(system: str, names: Mapping[str, str] | None = None) -> str:
    """The paper's label of a system: ``bm25+mmr`` -> ``LR + MMR``, ``direct`` -> ``(#1) ...``.

    ``names`` overrides (whole system names). A known first stage with an unknown re-ranker keeps
    the re-ranker's name (``bm25+foo`` -> ``LR + foo``); any other unknown name is unchanged.
    """
    if names and system in names:
        return names[system]
    if system in SYSTEM_LABELS:
        return SYSTEM_LABELS[system]
    parts = _split(system)
    if parts:
        first, second = parts
        return f"{FIRST_STAGE_SHORT[first]} + {RERANKERS.get(second.lower(), second)}"
    return system


def system_kind(system: str) -> str:
    """``"reference"`` (#1-#3), ``"baseline"`` (random ones) or ``"pipeline"`` (all others)."""
    if system in REFERENCES:
        return "reference"
    if system in BASELINES:
        return "baseline"
    return "pipeline"


def _order_key(system: str) -> tuple:
    if system in REFERENCES:
        return (0, REFERENCES.index(system))
    if system in BASELINES:
        return (1, BASELINES.index(system))
    if system in FIRST_STAGES:
        return (2, FIRST_STAGES.index(system))
    parts = _split(system)
    if parts:
        first, second = parts
        known = _RERANKER_ORDER.get(second.lower())
        if known is not None:
            return (3, known, "", FIRST_STAGES.index(first))
        return (4, 0, second.lower(), FIRST_STAGES.index(first))
    return (5, system)


def order_systems(systems: Iterable[str]) -> list[str]:
    """Table 1's row order: #1-#3, random baselines, first stages, then per re-ranker (in the
    paper's order, unknown ones alphabetically) the three first stages, then other runs A-Z."""
    return sorted(set(systems), key=_order_key)


def table_block(system: str) -> str:
    """Rows of one block are printed without a rule between them."""
    kind = system_kind(system)
    if kind != "pipeline":
        return kind
    if system in FIRST_STAGES:
        return "first"
    parts = _split(system)
    if parts:
        return RERANKERS.get(parts[1].lower(), parts[1]).lower()
    return "other"


