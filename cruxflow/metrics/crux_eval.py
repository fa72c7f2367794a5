"""The CRUX authors' evaluation script, reproduced: ``cruxflow crux-eval``.

DylanJoo/crux ``crux/evaluation/rac_eval.py`` takes a TREC run, the diversity qrels
(``qrels/div_qrels-tau3.txt``) and the judge's ratings (one file or the ``judge/`` folder) and
prints four means over topics. The semantics, read from that script and the loaders it calls
(``crux/tools/generic/ir_utils.py``), and kept here:

* the run keeps the lines whose **rank column** is <= k (10), in file order; a topic with no
  such line is not in the run;
* ``P@10`` and ``nDCG@10`` come from ir_measures (pytrec_eval) over the diversity qrels read
  as binary qrels (a passage is relevant when one of its lines has relevance >= 1); a topic
  without such a line is not evaluated. pytrec_eval orders the kept lines by score and breaks
  ties by passage id, descending;
* ``alpha_nDCG@10`` comes from ir_measures (ndeval) over the diversity qrels (subtopic in the
  iteration column); ndeval breaks score ties by passage id, ascending, and evaluates the
  topics of the qrels;
* ``Cov@10`` is the share of a topic's questions answered (rating >= eta = 3) by the max over
  the first k kept lines **in file order** (not the score order the two providers use); a
  passage without a rating answers nothing, and -1 answers nothing. Without
  ``filter_by_oracle`` every question counts; with it, only the questions some judged passage
  of the topic answers (the oracle's max over all the topic's ratings);
* every measure is averaged over the run's topics it is defined for; topics of the qrels
  missing from the run are left out with a warning that counts them.

Where the script would fail or print nan, we leave the topic out of that measure's mean and
say so: a run topic without ratings (the script stops with an error), and, with
``filter_by_oracle``, a topic whose judged passages answer nothing (0/0: the script's mean
becomes nan). Beyond the script (its TODOs): ``Den@10`` (Eq. 6) when token counts are given,
and :func:`compare_runs`, paired tests between two runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import (
    DiversityQrels,
    JudgeRatings,
    read_diversity_qrels,
    read_ratings,
)
from cruxflow.data.io import read_run, read_text
from cruxflow.metrics.crux import answerable_questions, coverage, density, select_required
from cruxflow.metrics.stats import mean_of_defined, paired_randomization, paired_t

NDEVAL_MAX_CUTOFF = 20  # pyndeval evaluates at most 20 ranks


@dataclass
class TopRun:
    """The lines of a run with rank <= k, per topic in file order: (passage, score, line)."""

    path: Path
    k: int
    topics: dict[str, list[tuple[str, float, int]]]
    beyond_k: int = 0   # lines left out by the rank column

    def scores(self) -> dict[str, dict[str, float]]:
        return {t: {pid: score for pid, score, _ in rows} for t, rows in self.topics.items()}


def read_run_top(path, k: int = 10) -> TopRun:
    """A run's lines whose rank column is <= ``k``, in file order (bad lines are errors)."""
    read_run(path)  # validates columns, numbers and duplicates, naming file and line
    topics: dict[str, list[tuple[str, float, int]]] = {}
    beyond = 0
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        parts = line.split()
        if not parts:
            continue
        qid, _, pid, rank, score, _ = parts
        if int(rank) <= k:
            topics.setdefault(qid, []).append((pid, float(score), lineno))
        else:
            beyond += 1
    return TopRun(Path(path), k, topics, beyond)


@dataclass
class CruxEvalResult:
    run: str                                  # the run path as given (the script prints it)
    k: int
    measures: list[str]
    per_topic: dict[str, dict[str, float | None]]
    aggregate: dict[str, float | None]
    evaluated: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def line(self) -> str:
        """The script's output: ``<run folder> | <run file> | P@10 | 0.xxxx | ... |``."""
        head = f"{self.run.rsplit('/', 1)[0]} | {self.run.rsplit('/')[-1]} | "
        cells = "".join(f"{m} | {_fmt(self.aggregate[m])} | " for m in self.measures)
        return (head + cells).rstrip()

    def to_json(self) -> dict:
        return {"run": self.run, "k": self.k, "measures": self.measures,
                "aggregate": self.aggregate, "evaluated": self.evaluated,
                "warnings": self.warnings, "info": self.info, "per_topic": self.per_topic}


def _fmt(value: float | None) -> str:
    return "nan" if value is None else f"{value:.4f}"


def _ir_measures(run: TopRun, qrels: DiversityQrels, k: int, alpha: float,
                 topics: set[str]) -> dict[str, dict[str, float]]:
    """``{measure name: {topic: value}}`` from ir_measures, as the script calls it."""
    import ir_measures

    out: dict[str, dict[str, float]] = {}
    scores = {t: s for t, s in run.scores().items() if t in topics}
    binary = {t: d for t, d in qrels.binary().items() if t in topics}
    named = {ir_measures.P @ k: f"P@{k}", ir_measures.nDCG @ k: f"nDCG@{k}"}
    if binary and scores:
        for m in ir_measures.iter_calc(list(named), binary, scores):
            if m.query_id in scores:  # ir_measures gives 0 for qrels topics not in the run
                out.setdefault(named[m.measure], {})[m.query_id] = float(m.value)
    frame = qrels.frame()
    frame = frame[frame["query_id"].isin(topics)]
    if k <= NDEVAL_MAX_CUTOFF and len(frame) and scores:
        measure = ir_measures.alpha_nDCG(alpha=alpha) @ k
        for m in ir_measures.iter_calc([measure], frame, scores):
            if m.query_id in scores:
                out.setdefault(f"alpha_nDCG@{k}", {})[m.query_id] = float(m.value)
    return out


def _oracle_rows(matrix: Mapping[str, list[int]], kept: list[int], eta: int) -> list[str]:
    return select_required(matrix, kept, eta) if kept else []


def crux_eval(run, qrels, judge, *, k: int = 10, filter_by_oracle: bool = False, eta: int = 3,
              alpha: float = 0.5, token_counts: Mapping[str, int] | None = None,
              density_weight: float = 0.5) -> CruxEvalResult:
    """Score ``run`` as rac_eval.py does. ``qrels`` and ``judge`` are paths or already read
    (:class:`DiversityQrels`, :class:`JudgeRatings`) so that several runs share them;
    ``token_counts`` (passage -> tokens) adds ``Den@k``."""
    run_arg = str(run)
    top = read_run_top(run, k)
    div = qrels if isinstance(qrels, DiversityQrels) else read_diversity_qrels(qrels)
    ratings = judge if isinstance(judge, JudgeRatings) else read_ratings(judge)
    by_topic = ratings.by_topic()
    qrel_topics = div.topics()
    relevant = div.binary()
    missing = [t for t in qrel_topics if t not in top.topics]
    # The script's "missing" topics are those of its threshold-1 qrels: a qrels topic with
    # only 0 lines is not one of them. When none is missing it keeps the whole diversity qrels,
    # and ir_measures scores such a topic absent from the run at alpha-nDCG 0, which stays in
    # that mean; when one is, it filters the diversity qrels to the run's topics.
    zero_only = [t for t in missing if t not in relevant]
    kept_zero = zero_only if len(zero_only) == len(missing) else []
    missing = [t for t in missing if t not in kept_zero]
    warnings = []
    if kept_zero:
        warnings.append(f"{len(kept_zero)} qrels topics with only 0 lines are missing from the "
                        f"run: alpha_nDCG@{k} 0 for them, in its mean as the script does: "
                        + ", ".join(kept_zero[:10]) + (", ..." if len(kept_zero) > 10 else ""))
    if missing:
        warnings.append(f"{len(missing)} of {len(qrel_topics)} qrels topics are missing from "
                        f"the run and left out: {', '.join(missing[:10])}"
                        + (", ..." if len(missing) > 10 else ""))
    run_topics = list(top.topics)
    measures = [f"P@{k}", f"nDCG@{k}", f"alpha_nDCG@{k}", f"Cov@{k}"]
    if token_counts is not None:
        measures.append(f"Den@{k}")
    ir = _ir_measures(top, div, k, alpha, set(run_topics))
    per_topic: dict[str, dict[str, float | None]] = {}
    for tid in run_topics:
        row: dict[str, float | None] = {m: ir.get(m, {}).get(tid) for m in measures[:3]}
        row.update(_coverage_density(tid, top, by_topic.get(tid), k, filter_by_oracle, eta,
                                     token_counts, density_weight))
        per_topic[tid] = row
    for tid in kept_zero:
        per_topic[tid] = {m: None for m in measures}
        if k <= NDEVAL_MAX_CUTOFF:
            per_topic[tid][f"alpha_nDCG@{k}"] = 0.0
    no_text = [] if token_counts is None else [
        t for t in run_topics if any(p not in token_counts for p, _, _ in top.topics[t][:k])]
    if no_text:
        warnings.append(f"Den@{k} undefined for {len(no_text)} topics whose context ranks a "
                        "passage without text or token count: " + ", ".join(no_text[:10])
                        + (", ..." if len(no_text) > 10 else ""))
    aggregate = {m: mean_of_defined(r[m] for r in per_topic.values()) for m in measures}
    evaluated = {m: sum(r[m] is not None for r in per_topic.values()) for m in measures}
    reasons = {f"P@{k}": "no relevant passage in the qrels",
               f"nDCG@{k}": "no relevant passage in the qrels",
               f"alpha_nDCG@{k}": "not in the qrels" if k <= NDEVAL_MAX_CUTOFF
               else f"ndeval stops at rank {NDEVAL_MAX_CUTOFF}",
               f"Cov@{k}": "no ratings" + (", or no question answered by the judged passages"
                                           if filter_by_oracle else ""),
               f"Den@{k}": "no ratings, or an oracle that covers nothing"}
    for m in measures:
        left = sum(per_topic[t][m] is None for t in run_topics)
        if left:
            warnings.append(f"{m}: {left} of {len(run_topics)} run topics left out "
                            f"({reasons[m]})")
    info = {"qrels": div.summary(), "judge": ratings.summary(), "run_topics": len(run_topics),
            "lines_beyond_k": top.beyond_k, "filter_by_oracle": filter_by_oracle, "eta": eta,
            "alpha": alpha, "missing_from_run": missing,
            "zero_only_missing_from_run": kept_zero, "den_undefined_no_text": no_text}
    return CruxEvalResult(run_arg, k, measures, per_topic, aggregate, evaluated, warnings, info)


def _coverage_density(tid: str, top: TopRun, matrix: Mapping[str, list[int]] | None, k: int,
                      filter_by_oracle: bool, eta: int,
                      token_counts: Mapping[str, int] | None,
                      weight: float) -> dict[str, float | None]:
    cov_name, den_name = f"Cov@{k}", f"Den@{k}"
    out: dict[str, float | None] = {cov_name: None}
    if token_counts is not None:
        out[den_name] = None
    if not matrix:
        return out
    n = len(next(iter(matrix.values())))
    kept = answerable_questions(matrix, n, eta)
    questions = kept if filter_by_oracle else list(range(n))
    unjudged = [0] * n   # the script's "empty" ratings: an unjudged passage answers nothing
    context = [pid for pid, _, _ in top.topics[tid][:k]]
    rows = [matrix.get(pid, unjudged) for pid in context]
    cov = coverage(rows, questions, eta)
    if math.isnan(cov):
        return out
    out[cov_name] = cov
    if token_counts is not None:
        if any(p not in token_counts for p in context):
            return out   # a ranked passage without text (outside the collection): undefined
        oracle = _oracle_rows(matrix, kept, eta)
        tokens = _tokens(token_counts, context, top, tid)
        tokens_oracle = _tokens(token_counts, oracle, None, tid)
        cov_oracle = coverage([matrix[p] for p in oracle], questions, eta)
        den = density(cov, tokens, cov_oracle, tokens_oracle, weight)
        out[den_name] = None if math.isnan(den) else den
    return out


def _tokens(counts: Mapping[str, int], pids: list[str], top: TopRun | None, tid: str) -> int:
    total = 0
    for pid in pids:
        if pid not in counts:
            line = next((ln for p, _, ln in top.topics[tid] if p == pid), None) if top else None
            where = {"path": top.path, "record": f"line {line}", "field": "docid"} if top \
                else {"record": f"topic {tid}"}
            raise DataError(f"no token count for passage {pid!r} (Den needs the text or the "
                            "token count of every passage in a context and in Z*)", **where)
        total += counts[pid]
    return total


# --- two runs ------------------------------------------------------------------------------------

def compare_runs(a: CruxEvalResult, b: CruxEvalResult, *, n_resamples: int = 9999,
                 seed: int = 0) -> list[dict]:
    """Per measure, over the topics both runs have a value for: the means, their difference
    (a - b) and the two-sided p-values of a paired t-test and a paired randomization test."""
    out = []
    for m in a.measures:
        if m not in b.measures:
            continue
        topics = [t for t in a.per_topic if t in b.per_topic
                  and a.per_topic[t][m] is not None and b.per_topic[t][m] is not None]
        xa = [a.per_topic[t][m] for t in topics]
        xb = [b.per_topic[t][m] for t in topics]
        mean_a, mean_b = mean_of_defined(xa), mean_of_defined(xb)
        out.append({
            "measure": m, "topics": len(topics), "mean_a": mean_a, "mean_b": mean_b,
            "diff": None if mean_a is None else mean_a - mean_b,
            "p_t_test": paired_t(xa, xb),
            "p_randomization": paired_randomization(xa, xb, n_resamples=n_resamples,
                                                    seed=seed)})
    return out


def read_token_counts(path) -> dict[str, int]:
    """Token counts per passage: TSV ``passage<TAB>tokens`` or JSONL ``{"id", "tokens"}``."""
    from cruxflow.data.io import iter_jsonl

    p = Path(path)
    counts: dict[str, int] = {}
    if p.suffix == ".jsonl":
        rows = ((f"line {ln}", obj.get("id"), obj.get("tokens")) for ln, obj in iter_jsonl(p))
    else:
        rows = ((f"line {ln}", *(line.split("\t") + [None, None])[:2])
                for ln, line in enumerate(read_text(p).split("\n"), 1) if line.strip())
    for record, pid, value in rows:
        try:
            tokens = int(value)
            if tokens < 0 or str(value).strip() not in (str(tokens), f"{tokens}.0"):
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(f"expected a non-negative integer, got {value!r}", path=p,
                            record=record, field="tokens") from None
        if not isinstance(pid, str) or not pid.strip():
            raise DataError("missing passage id", path=p, record=record, field="id")
        counts[pid.strip()] = tokens
    return counts


def collection_token_counts(collection, tokenizer: str | None, pids) -> dict[str, int]:
    """Token counts of the passages ``pids`` that the collection holds (the others are reported
    where a context needs them), counted with a local tokenizer or the regex counter."""
    from cruxflow.data.ingest.crux_common import read_collection
    from cruxflow.metrics.tokens import make_token_counter

    texts, _ = read_collection(collection)
    try:
        count = make_token_counter(tokenizer)
    except FileNotFoundError as exc:
        raise DataError(str(exc), path=tokenizer) from None
    return {pid: count(texts[pid]) for pid in pids if pid in texts}
