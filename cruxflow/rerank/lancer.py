"""LANCER: LLM reranking for nugget coverage (Ju et al., ECIR 2026, arXiv 2601.22008).

The method, as the authors' code does it (DylanJoo/LANCER at 75be2d1, ``src/lancer/``):

1. **Sub-questions** (``qg.py``): the LLM writes ``n_subquestions`` (2) sub-questions for the
   report request, between ``<START OF LIST>`` and ``<END OF LIST>``; the first ``n`` lines,
   bullets and numbers removed, are kept. Or, in the authors' "oracle" setting, the topic's
   own CRUX sub-questions are used (``subquestions: topic``).
2. **Judgments** (``aj.py``): every candidate is rated 0-5 against every sub-question by the
   CRUX answerability prompt (greedy, 3 output tokens, the first digit taken; -1 when there is
   none). With generated sub-questions the request is written above each one
   (``concat_original``); with the topic's own it is not (``run_cruxmds.py``).
3. **Order** (``ca.py``, ``coverage_based_aggregation``): one of the authors' five
   aggregations of the rating matrix (:data:`AGGREGATIONS`, :func:`coverage_order`); ``sum``,
   their default, sorts candidates by the sum of their ratings of at least ``tau`` (1), ties
   kept in first-stage order (Python's stable sort, which the authors' ``sorted`` is).

Every prompt goes through cruxflow's LLM layer: cached, counted, any backend, and each step is
one batch over all queries. An output that does not parse is asked again (``attempts``, at
``retry_temperature``) and counted in ``parse_failures``; a request left with no sub-question
keeps its first-stage order, a rating left unparsed is -1 (counts for nothing), as the
authors' parser gives. The prompt texts are the authors' (cited above), with their spacing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

import numpy as np

from cruxflow.data.text import clip_words
from cruxflow.llm.base import Sampling
from cruxflow.llm.parsing import UNRATED, parse_free_rating
from cruxflow.llm.prompts import load_prompts
from cruxflow.llm.retry import ask_with_retries
from cruxflow.rerank import Candidate, by_order

log = logging.getLogger(__name__)

VERSION = "lancer-v1"
# The authors' prompts as their code sends them (cruxflow/prompts/lancer.toml, with where each
# comes from): sub-questions from a report request, and the 0-5 rating of a context. Their
# judgment's context is a corpus entry {"title": "", "text": ...} joined as title + " " + text:
# hence the two spaces after "Context:" (the caller passes the text; render_judgment adds the
# space).
SUBQUESTIONS = load_prompts("lancer")["lancer-subquestions"]
JUDGMENT = load_prompts("lancer")["lancer-judgment"]
# src/lancer/llm_request.py: the system message of every request.
SYSTEM = SUBQUESTIONS.parts["system"]
PROMPTS = {p.name: p for p in (SUBQUESTIONS, JUDGMENT)}

# ``ca.py``'s aggregations (``--agg_method``), each a function of the rating matrix below.
AGGREGATIONS = ("sum", "greedy-sum", "greedy-coverage", "greedy-alpha", "rrf")
# greedy-alpha: how much a sub-question's gain shrinks each time a chosen candidate answers it
# (``ca.py`` greedy_alpha: alpha = 0.5, as alpha-nDCG's alpha)
ALPHA = 0.5
# rrf: the reciprocal rank fusion constant (``ca.py`` rank_by_rrf: k = 60)
RRF_K = 60
_LIST = re.compile(r"<START OF LIST>(.*?)<END OF LIST>", flags=re.DOTALL)
_BULLET = re.compile(r"^[\-\*\d\.\)\s]+")


def parse_subquestions(text: str, n: int) -> list[str]:
    """The first ``n`` sub-questions of an output, as the authors' ``extract_subtopics``: the
    text between the list markers (or all of it), one per line, leading bullets, numbers and
    spaces removed, empty lines dropped."""
    m = _LIST.search(text)
    body = m.group(1).strip() if m else text
    lines = [s.strip() for s in body.split("\n")]
    lines = [s for s in lines if s and s not in ("START OF LIST", "END OF LIST")]
    return [q for q in (_BULLET.sub("", s) for s in lines) if q][:n]


def coverage_scores(ratings: Sequence[Sequence[int]], tau: int = 1) -> list[int]:
    """Each candidate's sum of its ratings of at least ``tau`` (``tau`` 0: every rating, -1s
    included, as the authors' code does)."""
    if tau == 0:
        return [sum(row) for row in ratings]
    return [sum(r for r in row if r >= tau) for row in ratings]


def _descending(values: Sequence[float]) -> list[int]:
    """Positions by value, highest first, equal values the later position first: what the
    authors' ``np.argsort(values).tolist()[::-1]`` gives with a stable sort. (numpy's default
    kind is not stable: with AVX-512 its order of equal values differs from machine to
    machine, so that the authors' own code orders ties differently on different hardware;
    docs/lancer.md.)"""
    return sorted(range(len(values)), key=lambda i: (values[i], i), reverse=True)


def _greedy(matrix: list[list[int]]) -> list[int]:
    """``ca.py``'s greedy_sum / greedy_coverage on the prepared matrix: candidates visited in
    :func:`_descending` order of their row sums; each step takes the first with the largest
    gain (how far its row lifts the best value seen per sub-question); once no candidate
    gains anything the rest follow in the visiting order."""
    remaining = _descending([sum(row) for row in matrix])
    best = [0] * (len(matrix[0]) if matrix else 0)
    chosen: list[int] = []
    rest: list[int] = []
    while remaining:
        gains = [sum(max(b - a, 0) for a, b in zip(best, matrix[i], strict=True))
                 for i in remaining]
        k = gains.index(max(gains))
        i = remaining.pop(k)
        if gains[k] > 0:
            best = [max(a, b) for a, b in zip(best, matrix[i], strict=True)]
            chosen.append(i)
        else:
            rest.append(i)
    return chosen + rest


def _greedy_alpha(ratings: Sequence[Sequence[int]], tau: int) -> list[int]:
    """``ca.py``'s greedy_alpha: each step takes the first candidate with the largest sum of
    the gains of the sub-questions it answers (rating >= ``tau``); a sub-question's gain starts
    at 1 and is multiplied by 1 - :data:`ALPHA` each time a chosen candidate answers it."""
    m = len(ratings)
    n = len(ratings[0]) if m else 0
    gain = [1.0] * n
    selected = [False] * m
    order = []
    for _ in range(m):
        where, top = -1, 0.0
        for i in range(m):
            if selected[i]:
                continue
            score = 0.0
            for j in range(n):   # summed in column order, as theirs: the same floats
                if ratings[i][j] >= tau:
                    score += gain[j]
            if where == -1 or score > top:
                where, top = i, score
        order.append(where)
        selected[where] = True
        for j in range(n):
            if ratings[where][j] >= tau:
                gain[j] *= 1.0 - ALPHA
    return order


def _rrf(ratings: Sequence[Sequence[int]]) -> list[int]:
    """``ca.py``'s rank_by_rrf: each sub-question ranks the candidates by their rating (ties in
    first-stage order), and a candidate's score is the sum over sub-questions of
    1 / (:data:`RRF_K` + its rank); candidates by score, ties in first-stage order. Every
    rating counts, -1 included (no ``tau``), as theirs."""
    matrix = np.asarray(ratings, dtype=np.int64)
    m, n = matrix.shape
    ranks = np.zeros((m, n), dtype=np.int64)
    for s in range(n):
        ranks[np.argsort(-matrix[:, s], kind="stable"), s] = np.arange(1, m + 1)
    # numpy's sum along the row, as theirs (its pairwise summation gives the same floats)
    fused = np.sum(1.0 / (RRF_K + ranks), axis=1)
    return np.argsort(-fused, kind="stable").tolist()


def coverage_order(ratings: Sequence[Sequence[int]], *, aggregation: str = "sum",
                   tau: int = 1) -> list[int]:
    """Candidate positions, best first, from their ratings (one row per candidate in
    first-stage order, one column per sub-question): LANCER's selection step, by one of the
    authors' aggregations (``ca.py``):

    * ``sum``: by the sum of the ratings of at least ``tau`` (``tau`` 0: all, -1s included),
      ties in first-stage order;
    * ``greedy-sum``: greedy, ratings below ``tau`` as 0 (:func:`_greedy`);
    * ``greedy-coverage``: greedy over answered (rating >= ``tau``) or not;
    * ``greedy-alpha``: greedy with alpha-nDCG's discount of answered sub-questions
      (:func:`_greedy_alpha`);
    * ``rrf``: reciprocal rank fusion of the sub-questions' rankings (:func:`_rrf`).

    With no sub-question (no column) every aggregation keeps the first-stage order (theirs
    would reverse it in the greedy ones, which visit equal sums the later first)."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {aggregation!r} (one of {', '.join(AGGREGATIONS)})")
    if not ratings or not len(ratings[0]):
        return list(range(len(ratings)))
    if aggregation == "sum":
        scores = coverage_scores(ratings, tau)
        return sorted(range(len(scores)), key=lambda i: -scores[i])
    if aggregation == "greedy-sum":
        return _greedy([[r if r >= tau else 0 for r in row] for row in ratings])
    if aggregation == "greedy-coverage":
        return _greedy([[int(r >= tau) for r in row] for row in ratings])
    if aggregation == "greedy-alpha":
        return _greedy_alpha(ratings, tau)
    return _rrf(ratings)


def render_judgment(question: str, text: str, max_words: int | None = None) -> str:
    context = clip_words(text, max_words) if max_words else text
    return JUDGMENT.render(question=question, context=f" {context}")


class LancerReranker:
    """LANCER through a :class:`cruxflow.llm.LLMRunner` (see the module docstring).

    ``questions``: the topic's own sub-questions by query text, for ``subquestions="topic"``.
    """

    def __init__(self, runner, *, subquestions: str = "generate", n_subquestions: int = 2,
                 questions: Mapping[str, Sequence[str]] | None = None,
                 concat_original: bool | None = None, aggregation: str = "sum", tau: int = 1,
                 max_words: int | None = None, max_tokens: int = 512, attempts: int = 3,
                 retry_temperature: float | None = 0.7, seed: int = 0):
        if subquestions not in ("generate", "topic"):
            raise ValueError(f"subquestions must be 'generate' or 'topic', not {subquestions!r}")
        if subquestions == "topic" and questions is None:
            raise ValueError("subquestions: topic needs the topics' own sub-questions")
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {aggregation!r} (one of "
                             f"{', '.join(AGGREGATIONS)})")
        self.runner, self.mode, self.n = runner, subquestions, n_subquestions
        self.questions = questions or {}
        # The authors concatenate for generated sub-questions only (run_cruxmds.py).
        self.concat = (subquestions == "generate") if concat_original is None \
            else concat_original
        self.aggregation, self.tau, self.max_words = aggregation, tau, max_words
        self.attempts, self.retry_temperature = attempts, retry_temperature
        # Greedy, as the authors' client (temperature 0, top-p 1): 512 tokens for the list,
        # 3 for a rating.
        self.qg_sampling = Sampling(temperature=0.0, top_p=1.0, max_tokens=max_tokens,
                                    seed=seed)
        self.judge_sampling = Sampling(temperature=0.0, top_p=1.0, max_tokens=3, seed=seed)
        self.no_subquestions = 0

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        return self.rerank_batch([(query, candidates)])[0]

    def subquestions_of(self, queries: Sequence[str]) -> list[list[str]]:
        """Step 1 for every query: one LLM batch, or the topics' own sub-questions."""
        if self.mode == "topic":
            missing = [q for q in queries if q not in self.questions]
            if missing:
                raise KeyError(f"no sub-questions for the query {missing[0][:60]!r}")
            return [list(self.questions[q]) for q in queries]
        prompts = [SUBQUESTIONS.render(n=self.n, title="", background="", request=q)
                   for q in queries]
        answers = ask_with_retries(
            self.runner, prompts, self.qg_sampling, lambda t: parse_subquestions(t, self.n) or None,
            attempts=self.attempts, retry_temperature=self.retry_temperature, fallback=[],
            system=SYSTEM)
        out = []
        for q, a in zip(queries, answers, strict=True):
            if not a.value:
                self.no_subquestions += 1
                log.warning("no sub-question for %r after %d attempts: first-stage order kept",
                            q[:60], a.attempts)
            out.append(list(a.value or []))
        return out

    def judge(self, items: Sequence[tuple[str, Sequence[str], Sequence[Candidate]]]
              ) -> list[list[list[int]]]:
        """Step 2: the rating matrix (candidates x sub-questions) of every
        ``(query, sub-questions, candidates)``, all queries' prompts in one batch."""
        prompts, shape = [], []
        for query, questions, cands in items:
            asked = [f"{query}\n{q}" for q in questions] if self.concat else list(questions)
            # The authors' order: candidate by candidate, each against every sub-question.
            prompts += [render_judgment(q, c.text, self.max_words) for c in cands for q in asked]
            shape.append((len(cands), len(asked)))

        def parse(text: str) -> int | None:
            r = parse_free_rating(text)
            return None if r == UNRATED else r

        answers = ask_with_retries(self.runner, prompts, self.judge_sampling, parse,
                                   attempts=self.attempts,
                                   retry_temperature=self.retry_temperature,
                                   fallback=UNRATED, system=SYSTEM)
        values = iter(a.value for a in answers)
        return [[[next(values) for _ in range(cols)] for _ in range(rows)]
                for rows, cols in shape]

    def rerank_batch(self, items: Sequence[tuple[str, Sequence[Candidate]]]
                     ) -> list[list[tuple[str, float]]]:
        questions = self.subquestions_of([q for q, _ in items])
        matrices = self.judge([(q, qs, c) for (q, c), qs in zip(items, questions, strict=True)])
        return [by_order(cands, coverage_order(m, aggregation=self.aggregation, tau=self.tau))
                for (_, cands), m in zip(items, matrices, strict=True)]


def from_spec(spec: dict, build) -> LancerReranker:
    """The registry's builder (cruxflow/rerank/registry.py)."""
    if build.llm_runner is None:
        raise ValueError("a lancer reranker needs an LLM runner")
    return LancerReranker(
        build.llm_runner(spec["llm_backend"]), subquestions=spec["subquestions"],
        n_subquestions=spec["n_subquestions"], questions=build.questions,
        concat_original=spec["concat_original"], aggregation=spec["aggregation"],
        tau=spec["tau"], max_words=spec["max_words"], max_tokens=spec["max_tokens"],
        attempts=spec["attempts"], retry_temperature=spec["retry_temperature"])
