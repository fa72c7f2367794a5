"""Measure names: one name, one definition, in every door (issue 26).

A name is written the ir_measures way, ``Measure(param=value,...)@cutoff``: ``Cov@10``,
``Cov(questions='all')@10``, ``R(rel=2)@10``, ``alpha_nDCG@10`` (a string value may be
written unquoted, ``Cov(questions=all)@10``; the canonical form quotes it as ir_measures
does). Where ir_measures defines the measure (``P``, ``R``, ``AP``, ``nDCG``,
``alpha_nDCG``) the name means exactly ir_measures' computation, on the qrels the registry
entry names; CRUX's own measures (``Cov``, ``alpha_nDCG_crux``, ``Den``,
``alpha_nDCG_published``) are defined here and registered with ir_measures by
:mod:`cruxflow.metrics.measures`.

The cutoff is a number or ``oracle``: ``Cov@oracle`` is Cov at k = |Z*|, the size of each
topic's oracle context (the paper's default context size). ir_measures cannot parse
``@oracle``; :func:`parse` can, and it parses every other name the same way ir_measures does.

Parameters equal to their default are left out of the canonical form (:meth:`Name.__str__`):
``Cov(rel=3)@10`` is ``Cov@10``. The default of ``rel`` for CRUX's measures is
:data:`cruxflow.metrics.options.DEFAULTS` ``.eta`` (3), of ``alpha`` its ``.alpha`` (0.5),
of ``weight`` its ``.density_weight`` (0.5).

**Which doors print which names** (:data:`DOORS`): ``workflow`` (rule ``context_metrics``'
per_query.tsv), ``evaluate`` (``cruxflow evaluate``), ``api`` (:func:`cruxflow.evaluate`),
``ir_measures`` (the measures of :mod:`cruxflow.metrics.measures` on graded diversity qrels)
and ``crux-eval`` (the CRUX authors' rac_eval.py, :mod:`cruxflow.metrics.crux_eval`).

**Tables with a k column** (the workflow's and ``cruxflow evaluate``'s per_query.tsv and
aggregate.tsv): one row per context size k, one column per measure written *without* its
cutoff (:data:`TABLE_MEASURES`); the column ``M`` in the row of size k holds ``M@k``, computed
with the options the directory was made with (``rel`` = its eta). :func:`qualified` writes
the full name of such a cell.

Kept light (no numpy, pandas or ir_measures at import): argparse reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from cruxflow.metrics.options import DEFAULTS, MetricOptions

ORACLE = "oracle"          # the cutoff k = |Z*|
NDEVAL_MAX_CUTOFF = 20     # pyndeval refuses cutoffs above 20 (so ir_measures' alpha_nDCG does)

# the doors
WORKFLOW, EVALUATE, API, IR_MEASURES, CRUX_EVAL = (
    "workflow", "evaluate", "api", "ir_measures", "crux-eval")
DOORS = (WORKFLOW, EVALUATE, API, IR_MEASURES, CRUX_EVAL)
OURS = (WORKFLOW, EVALUATE, API)   # the doors that share the batch scorer

# the qrels a measure is computed on (docs/evaluate.md, "Which qrels")
RELEVANCE_QRELS = ("relevance qrels: P* (every rated passage of the topic) graded by the "
                   "relevance grades option, P** = Z* highest (2-1: P** 2, rest 1)")
DIVERSITY_QRELS = ("diversity qrels at eta: one line per (passage of P*, answerable "
                   "sub-question it answers, rating >= eta), relevance 1, sub-question as "
                   "subtopic; equal to ir_measures' alpha_nDCG(rel=eta) on graded qrels")
RATINGS = "the answerability ratings (graded diversity qrels: one 0-5 rating per passage and "\
          "sub-question)"


@dataclass(frozen=True)
class Param:
    name: str
    dtype: type
    default: object
    desc: str
    choices: tuple = ()

    def convert(self, text: str):
        if self.dtype is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError(f"{self.name} must be true or false, got {text!r}")
            value = text.lower() == "true"
        elif self.dtype is int:
            value = int(text)
        elif self.dtype is float:
            value = float(text)
        else:
            value = text.strip("'\"")
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, "
                             f"got {text!r}")
        return value


@dataclass(frozen=True)
class MeasureDef:
    """One measure: its parameters (cutoff aside), its definition and where it is printed."""

    name: str
    params: dict[str, Param]
    definition: str
    qrels: str
    doors: tuple[str, ...]
    origin: str = "cruxflow"            # or "ir_measures": the name means its computation
    max_cutoff: int | None = None
    notes: str = ""
    option_of: dict[str, str] = field(default_factory=dict)  # param -> MetricOptions field


def _rel(default: int, desc: str) -> Param:
    return Param("rel", int, default, desc)


_ETA = _rel(DEFAULTS.eta, "answerability threshold eta (Eq. 2): a rating >= rel answers")
_ALPHA = Param("alpha", float, DEFAULTS.alpha, "redundancy penalty alpha (Eq. 5)")
_WEIGHT = Param("weight", float, DEFAULTS.density_weight, "exponent w of Eq. 6")
_QUESTIONS = Param("questions", str, "answerable",
                   "which sub-questions Cov divides by: 'answerable' (those some rated "
                   "passage answers at rel, Eq. 3) or 'all' (every sub-question, the CRUX "
                   "authors' rac_eval.py default)", ("answerable", "all"))

REGISTRY: dict[str, MeasureDef] = {}


def register(measure: MeasureDef) -> MeasureDef:
    REGISTRY[measure.name] = measure
    return measure


register(MeasureDef(
    "Cov", {"rel": _ETA, "questions": _QUESTIONS},
    "CRUX coverage (Eq. 3): the share of the topic's sub-questions (per `questions`) that "
    "some passage of the top k answers (rating >= rel); an unrated passage answers nothing",
    RATINGS, (WORKFLOW, EVALUATE, API, IR_MEASURES),
    option_of={"rel": "eta"}))
register(MeasureDef(
    "alpha_nDCG_crux", {"rel": _ETA, "alpha": _ALPHA},
    "CRUX ranked coverage (Eq. 4-5): alpha-DCG of the top k over the answerable "
    "sub-questions, divided by the alpha-DCG of the oracle context Z* (the greedy required "
    "set P**, in greedy novelty order) over its |Z*| ranks; a context longer than Z* can "
    "score above 1",
    RATINGS, (WORKFLOW, EVALUATE, API, IR_MEASURES),
    option_of={"rel": "eta", "alpha": "alpha"}))
register(MeasureDef(
    "Den", {"rel": _ETA, "weight": _WEIGHT},
    "CRUX density (Eq. 6): ((Cov@k / tokens of the top k) / (Cov(Z*) / tokens of Z*)) ** "
    "weight; tokens by the tokenizer option (regex counter by default)",
    RATINGS + " and the passages' token counts", (WORKFLOW, EVALUATE, API, IR_MEASURES),
    option_of={"rel": "eta", "weight": "density_weight"}))
register(MeasureDef(
    "alpha_nDCG_published", {"alpha": _ALPHA},
    "the CRUX paper's tables' alpha-nDCG: ir_measures' alpha_nDCG@20 (ndeval) of the top-k "
    "context, i.e. the context's alpha-DCG over min(k, 20) ranks divided by ndeval's ideal "
    "over P* at rank 20 (docs/paper-parity.md, point 1)",
    DIVERSITY_QRELS, (WORKFLOW, EVALUATE, API), option_of={"alpha": "alpha"}))
register(MeasureDef(
    "R", {"rel": _rel(1, "minimum grade that counts as relevant")},
    "ir_measures' R@k (trec_eval recall_k): relevant passages in the top k / relevant "
    "passages; R(rel=2)@k under 2-1 grades is the share of P** (3 under 3-2-1)",
    RELEVANCE_QRELS, (WORKFLOW, EVALUATE, API), origin="ir_measures"))
register(MeasureDef(
    "P", {"rel": _rel(1, "minimum grade that counts as relevant")},
    "ir_measures' P@k (trec_eval P_k): relevant passages in the top k / k",
    RELEVANCE_QRELS, (WORKFLOW, EVALUATE, API), origin="ir_measures"))
register(MeasureDef(
    "AP", {"rel": _rel(1, "minimum grade that counts as relevant")},
    "ir_measures' AP@k (trec_eval map_cut_k)", RELEVANCE_QRELS,
    (WORKFLOW, EVALUATE, API), origin="ir_measures"))
register(MeasureDef(
    "nDCG", {}, "ir_measures' nDCG@k (trec_eval ndcg_cut_k): gains = the grades, ideal over "
    "the qrels cut at k too", RELEVANCE_QRELS, (WORKFLOW, EVALUATE, API), origin="ir_measures"))
register(MeasureDef(
    "alpha_nDCG", {"alpha": _ALPHA},
    "ir_measures' alpha_nDCG@k (ndeval, beta 1): alpha-DCG of the top k / ndeval's greedy "
    "ideal over the qrels at rank k; undefined (NaN) for k > 20, where ndeval stops",
    DIVERSITY_QRELS, (WORKFLOW, EVALUATE, API), origin="ir_measures",
    max_cutoff=NDEVAL_MAX_CUTOFF, option_of={"alpha": "alpha"}))

# The measure columns of the per_query / aggregate tables, in order (the cutoff is the row's k).
TABLE_MEASURES = ("Cov", "alpha_nDCG_crux", "Den", "R", "R(rel={required})", "P", "AP", "nDCG",
                  "alpha_nDCG", "alpha_nDCG_published")


def table_columns(options: MetricOptions = DEFAULTS) -> list[str]:
    """The measure columns of a table made with ``options`` (``R(rel=2)``: the share of P**,
    whose grade the relevance grades fix)."""
    return [c.format(required=options.grades.required) for c in TABLE_MEASURES]


@dataclass(frozen=True)
class Name:
    """A parsed measure name. ``params`` holds every parameter (defaults filled in)."""

    measure: str
    params: tuple[tuple[str, object], ...]
    cutoff: int | str | None = None

    @property
    def definition(self) -> MeasureDef:
        return REGISTRY[self.measure]

    def __getitem__(self, key):
        return dict(self.params)[key]

    def base(self) -> str:
        """The name without its cutoff (a column of a table with a k column)."""
        d = self.definition
        shown = [f"{k}={_fmt(v)}" for k, v in self.params if v != d.params[k].default]
        return self.measure + (f"({','.join(shown)})" if shown else "")

    def __str__(self) -> str:
        return self.base() + ("" if self.cutoff is None else f"@{self.cutoff}")

    def at(self, cutoff) -> Name:
        return Name(self.measure, self.params, cutoff)

    def options(self, base: MetricOptions = DEFAULTS) -> MetricOptions:
        """The options this name fixes (``rel`` -> eta, ``alpha``, ``weight``), others from
        ``base``."""
        d = self.definition
        return base.with_(**{d.option_of[k]: v for k, v in self.params if k in d.option_of})


def _fmt(value) -> str:
    """As ir_measures prints a parameter (``questions='all'``, ``judged_only=True``), so that
    ir_measures.parse_measure reads every canonical name but ``@oracle``."""
    return repr(value) if isinstance(value, (str, bool)) else str(value)


_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@\s*([0-9]+|oracle))?\s*$")


def parse(text: str) -> Name:
    """``Cov(rel=4)@10`` -> Name; ValueError with one line on an unknown measure, parameter
    or value (a cutoff above 20 for alpha_nDCG is an error, as in ir_measures)."""
    if isinstance(text, Name):
        return text
    m = _NAME.match(str(text))
    if not m:
        raise ValueError(f"not a measure name: {text!r} (e.g. Cov@10, R(rel=2)@oracle)")
    measure, args, cutoff = m.groups()
    if measure not in REGISTRY:
        raise ValueError(f"unknown measure {measure!r} in {text!r}; known: "
                         f"{', '.join(REGISTRY)}")
    d = REGISTRY[measure]
    values = {k: p.default for k, p in d.params.items()}
    for part in filter(None, (a.strip() for a in (args or "").split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in d.params:
            raise ValueError(f"{measure} takes no parameter {key!r} in {text!r}; it takes "
                             f"{', '.join(d.params) or 'none'}")
        values[key] = d.params[key].convert(value.strip())
    k: int | str | None = None
    if cutoff is not None:
        k = cutoff if cutoff == ORACLE else int(cutoff)
        if k == 0:
            raise ValueError(f"a cutoff must be positive, got {text!r}")
        if d.max_cutoff is not None and k != ORACLE and k > d.max_cutoff:
            raise ValueError(f"{measure} stops at cutoff {d.max_cutoff} (ndeval), got {text!r}")
    return Name(measure, tuple(values.items()), k)


def parse_all(texts: Iterable[str] | str) -> list[Name]:
    """Several names (a list, or one comma-free string each); duplicates are an error."""
    names = [parse(t) for t in ([texts] if isinstance(texts, str) else texts)]
    seen: set[str] = set()
    for n in names:
        if str(n) in seen:
            raise ValueError(f"measure {str(n)!r} is asked for twice")
        seen.add(str(n))
    return names


def qualified(column: str, k, options: MetricOptions = DEFAULTS) -> str:
    """The full name of a table cell: measure column ``column`` in the row of size ``k`` of
    a table made with ``options`` (``Cov``, 10, eta 4 -> ``Cov(rel=4)@10``)."""
    name = parse(column)
    d = name.definition
    params = dict(name.params)
    for key, opt in d.option_of.items():
        if params[key] == d.params[key].default:   # not written in the column: the option's
            params[key] = getattr(options, opt)
    return str(Name(name.measure, tuple(params.items()), k))


def doors_table() -> list[dict]:
    """One row per measure for docs/evaluate.md: name, definition, qrels, doors."""
    return [{"name": d.name, "parameters": ", ".join(
                f"{p.name}={_fmt(p.default)}" for p in d.params.values()),
             "definition": d.definition, "qrels": d.qrels, "doors": ", ".join(d.doors)}
            for d in REGISTRY.values()]
