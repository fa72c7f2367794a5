"""The measures: one definition per name, in one registry that every door derives from
(issues 26 and 36).

A name is written the ir_measures way, ``Measure(param=value,...)@cutoff``: ``Cov@10``,
``Cov(questions='all')@10``, ``R(rel=2)@10``, ``alpha_nDCG@10`` (a string value may be
written unquoted, ``Cov(questions=all)@10``; the canonical form quotes it as ir_measures
does, and lists the parameters that differ from their defaults in alphabetical order).
The cutoff is a number or ``oracle``: ``Cov@oracle`` is Cov at k = |Z*|, the size of each
topic's oracle context (the paper's default context size).

**A definition** (:class:`MeasureDef`, one per measure in :data:`REGISTRY`) holds the
measure's parameters with their defaults, the judgments it reads (:data:`READS`), and the
function that computes it per topic on the judgments' arrays of :mod:`cruxflow.metrics.judged`
(``compute``: ``"module:function"``, called with the run's contexts and the parsed name,
see :mod:`cruxflow.metrics.compute`). Every measure also takes the parameters that say
which passages form a context and which topics its mean covers (:data:`COMMON`):

* ``cut``: ``'score'`` (default) the top k of each topic's list; ``'rank'`` the lines whose
  rank column is <= k (the CRUX authors' loader);
* ``order``: how a topic's lines are ordered before the first k are taken: ``'score'``
  (default) score descending, then passage id descending (trec_eval's order, the one tie
  policy of every door of ours); ``'file'`` the file's line order; ``'ndeval'`` score
  descending, then passage id ascending (ndeval's own);
* ``topics``: ``'judged'`` (default) the judged topics that have something to find (an
  answerable question at eta: a CRUX measure's ``rel``, the options' eta for the others;
  without ratings, a relevant line in the qrels), a judged topic absent from the run being an
  empty context and a run topic absent from the judgments an error; ``'run'`` the run's topics
  (those with a line inside the cut) that the judgments define the measure for, the others
  left out (the CRUX authors' rac_eval.py); ``'all'`` every topic of the judgments, a value
  undefined for a topic counting 0 (ir_measures' habit).

The scorer's columns (:data:`TABLE_MEASURES`, :func:`table_columns`), ``cruxflow evaluate``'s
tables and JSON, :func:`cruxflow.evaluate`, the ir_measures measure objects
(:mod:`cruxflow.metrics.measures`), crux-eval's names (:mod:`cruxflow.metrics.crux_eval`) and
the paper tables' labels (:mod:`cruxflow.paper.labels`) are all built from :data:`REGISTRY`;
``tests/test_registry.py`` checks each against it. docs/adding-a-metric.md shows how a
measure is added.

Where ir_measures defines a measure (``P``, ``R``, ``AP``, ``nDCG``, ``alpha_nDCG``) the name
means its formula (trec_eval's, ndeval's) on the qrels the entry names, on our contexts (the
``order`` above) and over our topics (``topics`` above); CRUX's own measures (``Cov``,
``alpha_nDCG_crux``, ``Den``, ``alpha_nDCG_published``) are defined here.

Parameters equal to their default are left out of the canonical form (:meth:`Name.__str__`):
``Cov(rel=3)@10`` is ``Cov@10``. The default of ``rel`` for CRUX's measures is
:data:`cruxflow.metrics.options.DEFAULTS` ``.eta`` (3), of ``alpha`` its ``.alpha`` (0.5),
of ``weight`` its ``.density_weight`` (0.5).

**Tables with a k column** (the workflow's and ``cruxflow evaluate``'s per_query.tsv and
aggregate.tsv): one row per context size k, one column per measure written *without* its
cutoff (:data:`TABLE_MEASURES`); the column ``M`` in the row of size k holds ``M@k``, computed
with the options the directory was made with (``rel`` = its eta). :func:`qualified` writes
the full name of such a cell.

Kept light (no numpy, pandas or ir_measures at import): argparse reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property

from cruxflow.metrics.options import DEFAULTS, MetricOptions

ORACLE = "oracle"          # the cutoff k = |Z*|
# how the ir_measures measures of a name ir_measures has too print (cruxflow.metrics.measures)
NAMESPACE = "cruxflow."
NDEVAL_MAX_CUTOFF = 20     # pyndeval refuses cutoffs above 20 (so ir_measures' alpha_nDCG does)

# the doors
WORKFLOW, EVALUATE, API, IR_MEASURES, CRUX_EVAL = (
    "workflow", "evaluate", "api", "ir_measures", "crux-eval")
DOORS = (WORKFLOW, EVALUATE, API, IR_MEASURES, CRUX_EVAL)
OURS = (WORKFLOW, EVALUATE, API)   # the doors that share the batch scorer

# What a measure reads (docs/evaluate.md, "Which qrels"); cruxflow.metrics.inputs.Judgments
# holds them.
RATINGS = "ratings"
RELEVANCE = "relevance qrels"
DIVERSITY = "diversity qrels"
TOKENS = "token counts"
READS = {
    RATINGS: "the answerability ratings (graded diversity qrels: one 0-5 rating per passage "
             "and sub-question)",
    RELEVANCE: "relevance qrels: P* (every rated passage of the topic) graded by the "
               "relevance grades option, P** = Z* highest (2-1: P** 2, rest 1); or relevance "
               "qrels given as such",
    DIVERSITY: "diversity qrels: one line per (passage of P*, answerable sub-question it "
               "answers at eta), relevance 1, sub-question as subtopic; or the diversity "
               "qrels given (a CRUX release's qrels/div_qrels-tau<eta>.txt), a line of "
               "relevance >= 1 relevant",
    TOKENS: "the passages' token counts (their texts, counted by the tokenizer option)",
}


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


# The parameters every measure takes (see the module's docstring).
CUT = Param("cut", str, "score",
            "which lines of a topic form its context: 'score' the first k in the order "
            "below; 'rank' the lines whose rank column is <= k (the CRUX authors' loader), "
            "then the first k of those in that order", ("score", "rank"))
ORDER = Param("order", str, "score",
              "how a topic's lines are ordered: 'score' score descending, then passage id "
              "descending (trec_eval's order); 'file' the file's line order; 'ndeval' score "
              "descending, then passage id ascending (ndeval's own)",
              ("score", "file", "ndeval"))
TOPICS = Param("topics", str, "judged",
               "the topics of the mean: 'judged' the judged topics with an answerable "
               "question at eta (without ratings: a relevant line), a topic absent from the "
               "run an empty context, a run topic absent from the judgments an error; 'run' "
               "the run's topics the judgments define the measure for; 'all' every judged "
               "topic, an undefined value counting 0", ("judged", "run", "all"))
COMMON = {p.name: p for p in (CUT, ORDER, TOPICS)}


@dataclass(frozen=True)
class MeasureDef:
    """One measure: its parameters (cutoff aside; :data:`COMMON` added by :func:`register`),
    its definition, what it reads, how it is computed and where it is printed."""

    name: str
    params: dict[str, Param]
    definition: str
    reads: tuple[str, ...]
    # "module:function" (or the function): (contexts, name) -> one value per topic, NaN where
    # undefined (cruxflow.metrics.compute)
    compute: str | Callable
    doors: tuple[str, ...] = DOORS
    origin: str = "cruxflow"            # or "ir_measures": the name means its formula
    max_cutoff: int | None = None
    notes: str = ""
    option_of: dict[str, str] = field(default_factory=dict)  # param -> MetricOptions field
    # its columns in the per-query tables ("R(rel={required})": P**'s grade filled in), in
    # order; () for a measure that is only asked for by name
    table: tuple[str, ...] = ()
    label: str = ""     # the paper tables' label (cruxflow.paper.labels)
    latex: str = ""
    # this measure's own defaults of common parameters (a name ir_measures also has: its
    # ties and its topics, so that the bare name is ir_measures' number)
    defaults: dict[str, object] = field(default_factory=dict)
    # whether a name without a cutoff is the whole ranked list (ir_measures' AP, nDCG, Judged)
    cutoff_optional: bool = False
    # whether an empty context (a topic the run lacks) has a value (False: undefined, NaN)
    defined_on_empty: bool = True
    # why a value may exceed 1 (the note under a table that prints one; "" where it cannot)
    above_one: str = ""

    def function(self) -> Callable:
        """The compute function, imported on first use (numpy is not imported here)."""
        if callable(self.compute):
            return self.compute
        import importlib

        module, _, attribute = self.compute.partition(":")
        return getattr(importlib.import_module(module), attribute)


def _rel(default: int, desc: str) -> Param:
    return Param("rel", int, default, desc)


_ETA = _rel(DEFAULTS.eta, "answerability threshold eta (Eq. 2): a rating >= rel answers")
_GRADE = _rel(1, "minimum grade that counts as relevant")
_ALPHA = Param("alpha", float, DEFAULTS.alpha, "redundancy penalty alpha (Eq. 5)")
_WEIGHT = Param("weight", float, DEFAULTS.density_weight, "exponent w of Eq. 6")
_QUESTIONS = Param("questions", str, "answerable",
                   "which sub-questions Cov divides by: 'answerable' (those some rated "
                   "passage answers at rel, Eq. 3) or 'all' (every sub-question, the CRUX "
                   "authors' rac_eval.py default)", ("answerable", "all"))
_QRELS = Param("qrels", str, "relevance",
               "the qrels: 'relevance' (P* graded by the relevance grades option) or "
               "'diversity' (a passage with a diversity qrels line of relevance >= 1 is "
               "relevant, grade 1: rac_eval.py's binary qrels)", ("relevance", "diversity"))

REGISTRY: dict[str, MeasureDef] = {}

# Where ir_measures defines a measure, the bare name is its number: its ties and its topics.
# trec_eval's measures order a topic's lines by score, ties by passage id descending (our
# ``order='score'``), and average over every topic of the qrels (``topics='all'``: a topic the
# run misses, or one with nothing relevant, counts 0); ndeval's alpha-nDCG and the judged
# rate break ties by passage id ascending (``order='ndeval'``).
_IR = {"topics": "all"}
_NDEVAL = {"topics": "all", "order": "ndeval"}


def register(measure: MeasureDef) -> MeasureDef:
    """Add ``measure`` (its own parameters, then :data:`COMMON`'s) to :data:`REGISTRY`; the
    order of registration is the order of the tables' columns."""
    if measure.name in REGISTRY:
        raise ValueError(f"measure {measure.name!r} is registered already")
    if not measure.label or not measure.latex:
        raise ValueError(f"{measure.name}: give its label and LaTeX label (the paper tables')")
    clash = set(measure.params) & set(COMMON)
    if clash:
        raise ValueError(f"{measure.name}: {', '.join(sorted(clash))} is a common parameter")
    common = {name: replace(p, default=measure.defaults[name]) if name in measure.defaults
              else p for name, p in COMMON.items()}
    full = MeasureDef(**{**measure.__dict__, "params": {**measure.params, **common}})
    REGISTRY[measure.name] = full
    return full


_COMPUTE = "cruxflow.metrics.compute"
register(MeasureDef(
    "Cov", {"rel": _ETA, "questions": _QUESTIONS},
    "CRUX coverage (Eq. 3): the share of the topic's sub-questions (per `questions`) that "
    "some passage of the top k answers (rating >= rel); an unrated passage answers nothing",
    (RATINGS,), f"{_COMPUTE}:coverage", option_of={"rel": "eta"}, table=("Cov",),
    label="Cov(Z)", latex="$Cov(Z)$"))
register(MeasureDef(
    "alpha_nDCG_crux", {"rel": _ETA, "alpha": _ALPHA},
    "CRUX ranked coverage (Eq. 4-5): alpha-DCG of the top k over the answerable "
    "sub-questions, divided by the alpha-DCG of the oracle context Z* (the greedy required "
    "set P**, in greedy novelty order) over its |Z*| ranks; a context longer than Z* can "
    "score above 1",
    (RATINGS,), f"{_COMPUTE}:alpha_ndcg_crux", option_of={"rel": "eta", "alpha": "alpha"},
    table=("alpha_nDCG_crux",), label="alpha-nDCG (Eq. 4)", latex=r"$\alpha$-nDCG (Eq.~4)",
    above_one="the paper's Eq. 4 divides by the oracle context's alpha-DCG over its |Z*| ranks, "
              "so a context longer than Z* (k > |Z*|) can pass it"))
register(MeasureDef(
    "Den", {"rel": _ETA, "weight": _WEIGHT},
    "CRUX density (Eq. 6): ((Cov@k / tokens of the top k) / (Cov(Z*) / tokens of Z*)) ** "
    "weight; tokens by the tokenizer option (regex counter by default); undefined where a "
    "passage of the context or of Z* has no text",
    (RATINGS, TOKENS), f"{_COMPUTE}:density",
    option_of={"rel": "eta", "weight": "density_weight"}, table=("Den",),
    label="Den(Z)", latex="$Den(Z)$",
    above_one="a context with more coverage per token than the oracle context Z* (Eq. 6)"))
register(MeasureDef(
    "R", {"rel": _GRADE, "qrels": _QRELS},
    "ir_measures' R@k (trec_eval recall_k): relevant passages in the top k / relevant "
    "passages; R(rel=2)@k under 2-1 grades is the share of P** (3 under 3-2-1)",
    (RELEVANCE,), f"{_COMPUTE}:recall", origin="ir_measures",
    table=("R", "R(rel={required})"), label="Recall", latex="Recall", defaults=_IR))
register(MeasureDef(
    "P", {"rel": _GRADE, "qrels": _QRELS},
    "ir_measures' P@k (trec_eval P_k): relevant passages in the top k / k",
    (RELEVANCE,), f"{_COMPUTE}:precision", origin="ir_measures", table=("P",),
    label="Precision", latex="Precision", defaults=_IR))
register(MeasureDef(
    "AP", {"rel": _GRADE, "qrels": _QRELS},
    "ir_measures' AP@k (trec_eval map_cut_k; AP without a cutoff: trec_eval's map, the whole "
    "ranked list): the mean over the topic's relevant passages of the precision at the rank "
    "of each retrieved in the top k",
    (RELEVANCE,), f"{_COMPUTE}:average_precision", origin="ir_measures", table=("AP",),
    label="MAP", latex="MAP", defaults=_IR, cutoff_optional=True))
register(MeasureDef(
    "nDCG", {"qrels": _QRELS},
    "ir_measures' nDCG@k (trec_eval ndcg_cut_k; nDCG without a cutoff: trec_eval's ndcg, the "
    "whole ranked list): gains = the grades, discount log2(rank + 1), ideal over the qrels "
    "cut at k too", (RELEVANCE,), f"{_COMPUTE}:ndcg",
    origin="ir_measures", table=("nDCG",), label="nDCG", latex="nDCG", defaults=_IR,
    cutoff_optional=True))
register(MeasureDef(
    "alpha_nDCG", {"alpha": _ALPHA},
    "ir_measures' alpha_nDCG@k (ndeval, beta 1): alpha-DCG of the top k / ndeval's greedy "
    "ideal over the qrels at rank k (ties to the larger passage id); undefined for k > 20, "
    "where ndeval stops",
    (DIVERSITY,), f"{_COMPUTE}:alpha_ndcg_ndeval", origin="ir_measures",
    max_cutoff=NDEVAL_MAX_CUTOFF, option_of={"alpha": "alpha"}, table=("alpha_nDCG",),
    label="alpha-nDCG (ndeval)", latex=r"$\alpha$-nDCG (ndeval)", defaults=_NDEVAL))
register(MeasureDef(
    "alpha_nDCG_published", {"alpha": _ALPHA},
    "the CRUX paper's tables' alpha-nDCG: ir_measures' alpha_nDCG@20 (ndeval) of the top-k "
    "context, i.e. the context's alpha-DCG over min(k, 20) ranks divided by ndeval's ideal "
    "over P* at rank 20 (docs/paper-parity.md, point 1)",
    (DIVERSITY,), f"{_COMPUTE}:alpha_ndcg_published", option_of={"alpha": "alpha"},
    table=("alpha_nDCG_published",), label="alpha-nDCG (published computation)",
    latex=r"$\alpha$-nDCG (published computation)"))

register(MeasureDef(
    "Judged", {}, "ir_measures' Judged@k: the share of the top k passages that the judge "
    "rated for the topic (of the passages ranked, where a list holds fewer than k; without a "
    "cutoff, of the whole list); undefined for an empty context (0 in the mean over every "
    "rated topic, as ir_measures counts it)", (RATINGS,), f"{_COMPUTE}:judged",
    origin="ir_measures", table=("Judged",), label="Judged", latex="Judged",
    defaults=_NDEVAL, cutoff_optional=True, defined_on_empty=False))


def table_measures() -> tuple[str, ...]:
    """The measure columns of the per_query / aggregate tables, in order (the cutoff is the
    row's k; ``{required}`` stands for P**'s grade)."""
    return tuple(column for d in REGISTRY.values() for column in d.table)


TABLE_MEASURES = table_measures()

# What a printed table shows unless asked for more: the CRUX paper's measures of a retrieval
# context (Table 1: Cov(Z), alpha-nDCG and Den(Z) at k = |Z*|; Table 3 at 10 and 20 too) and
# the judged share, which says how far the others can be trusted (docs/what-to-report.md)
PAPER_COLUMNS = ("Cov", "alpha_nDCG_crux", "Den", "Judged")


def table_columns(options: MetricOptions = DEFAULTS) -> list[str]:
    """The measure columns of a table made with ``options`` (``R(rel=2)``: the share of P**,
    whose grade the relevance grades fix)."""
    return [c.format(required=options.grades.required) for c in table_measures()]


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
        return self._params[key]

    def get(self, key, default=None):
        return self._params.get(key, default)

    @cached_property
    def _params(self) -> dict:
        return dict(self.params)

    def base(self) -> str:
        """The name without its cutoff (a column of a table with a k column)."""
        d = self.definition
        shown = sorted(f"{k}={_fmt(v)}" for k, v in self.params if v != d.params[k].default)
        return self.measure + (f"({','.join(shown)})" if shown else "")

    def __str__(self) -> str:
        return self.base() + ("" if self.cutoff is None else f"@{self.cutoff}")

    def at(self, cutoff) -> Name:
        return Name(self.measure, self.params, cutoff)

    def with_(self, **params) -> Name:
        """The same name with ``params`` changed (checked as :func:`parse` checks them)."""
        return parse(Name(self.measure, tuple({**dict(self.params), **params}.items()),
                          self.cutoff))

    def options(self, base: MetricOptions = DEFAULTS) -> MetricOptions:
        """The options this name fixes (``rel`` -> eta, ``alpha``, ``weight``), others from
        ``base``."""
        d = self.definition
        return base.with_(**{d.option_of[k]: v for k, v in self.params if k in d.option_of})

    @property
    def reads(self) -> tuple[str, ...]:
        """What this name reads: the definition's, the ``qrels`` parameter deciding which
        qrels."""
        qrels = self.get("qrels")
        if qrels is None:
            return self.definition.reads
        return tuple(DIVERSITY if r == RELEVANCE and qrels == "diversity" else r
                     for r in self.definition.reads)


def _fmt(value) -> str:
    """As ir_measures prints a parameter (``questions='all'``, ``judged_only=True``), so that
    ir_measures.parse_measure reads every canonical name of CRUX's measures but ``@oracle``."""
    return repr(value) if isinstance(value, (str, bool)) else str(value)


_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@\s*([0-9]+|oracle))?\s*$")


def parse(text) -> Name:
    """``Cov(rel=4)@10`` -> Name; ValueError with one line on an unknown measure, parameter
    or value. (A cutoff above a measure's ``max_cutoff`` parses: the values are undefined,
    NaN, as ndeval's alpha-nDCG above rank 20 is, so that every name a table prints parses.)"""
    if isinstance(text, Name):
        return _check(text.measure, dict(text.params), text.cutoff, str(text))
    m = _NAME.match(str(text).strip().removeprefix(NAMESPACE))
    if not m:
        raise ValueError(f"not a measure name: {text!r} (e.g. Cov@10, R(rel=2)@oracle)")
    measure, args, cutoff = m.groups()
    if measure not in REGISTRY:
        raise ValueError(f"unknown measure {measure!r} in {text!r}; known: "
                         f"{', '.join(REGISTRY)}")
    d = REGISTRY[measure]
    values = {}
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
    return _check(measure, values, k, text)


def _check(measure: str, values: dict, k, text) -> Name:
    d = REGISTRY[measure]
    unknown = set(values) - set(d.params)
    if unknown:
        raise ValueError(f"{measure} takes no parameter {sorted(unknown)[0]!r} in {text!r}")
    full = {key: values.get(key, p.default) for key, p in d.params.items()}
    for key, p in d.params.items():
        if p.choices and full[key] not in p.choices:
            raise ValueError(f"{key} must be one of {', '.join(map(str, p.choices))}, got "
                             f"{full[key]!r} in {text!r}")
    if k == 0:
        raise ValueError(f"a cutoff must be positive, got {text!r}")
    return Name(measure, tuple(full.items()), k)


def parse_all(texts: Iterable[str] | str) -> list[Name]:
    """Several names (a list, or one comma-free string each); duplicates are an error."""
    names = [parse(t) for t in ([texts] if isinstance(texts, str) else texts)]
    seen: set[str] = set()
    for n in names:
        if str(n) in seen:
            raise ValueError(f"measure {str(n)!r} is asked for twice")
        seen.add(str(n))
    return names


# What every column of a per-query table is over: the table's topics (one row per judged topic
# with an answerable question, the default topic set of CRUX's measures) in the one tie policy
# of cruxflow's doors (score descending, then passage id descending)
TABLE_PARAMS = {"topics": "judged", "order": "score"}


def qualified(column: str, k, options: MetricOptions = DEFAULTS) -> str:
    """The full name of a table cell: measure column ``column`` in the row of size ``k`` of
    a table made with ``options`` (``Cov``, 10, eta 4 -> ``Cov(rel=4)@10``; ``nDCG``, 10 ->
    ``nDCG(topics='judged')@10``: a table's rows are its judged topics,
    :data:`TABLE_PARAMS`)."""
    name = parse(column)
    d = name.definition
    params = dict(name.params)
    for key, opt in d.option_of.items():
        if params[key] == d.params[key].default:   # not written in the column: the option's
            params[key] = getattr(options, opt)
    for key, value in TABLE_PARAMS.items():
        if params[key] == d.params[key].default:
            params[key] = value
    return str(Name(name.measure, tuple(params.items()), k))


def with_options(name, options: MetricOptions = DEFAULTS) -> Name:
    """``name`` with the parameters it leaves at their defaults that an option sets (``rel``,
    ``alpha``, ``weight``) taken from ``options``."""
    name = parse(name)
    d = name.definition
    params = dict(name.params)
    for key, opt in d.option_of.items():
        if params[key] == d.params[key].default:
            params[key] = getattr(options, opt)
    return Name(name.measure, tuple(params.items()), name.cutoff)


def doors_table() -> list[dict]:
    """One row per measure for docs/metrics.md: name, parameters, definition, reads."""
    return [{"name": d.name, "parameters": ", ".join(
                f"{p.name}={_fmt(p.default)}" for p in d.params.values() if p.name not in COMMON),
             "definition": d.definition, "reads": ", ".join(d.reads), "doors": ", ".join(d.doors)}
            for d in REGISTRY.values()]
