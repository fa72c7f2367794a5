"""The paper's own formulas (Trappolini et al. 2025), hand-written: passage utility (Eq. 1-2),
p(NO-RESPONSE) from first-token logprobs (one token, as the authors' code; or the summed
mass of the tokens that begin NO-RESPONSE) or from samples (App. D), UDCG (Eq. 4) and UDCG_theta
(Eq. 3) with its 2k positional weights learned by a pairwise linear ranking model (Sec. 7.2).

Sign convention: ``u+ = max(u, 0)`` and ``u- = min(u, 0)`` (so ``u- <= 0``), the positive and
negative parts of Eq. 3 as the paper writes them, with ``+ gamma * u-`` in Eq. 4: a distracting
passage (an irrelevant one the LLM does not abstain on) lowers the score. This is exactly the
authors' released code, ``sigmoid((sum_rel (1 - p) - gamma * sum_irr (1 - p)) / k)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.data.io import read_json, write_json
from cruxflow.llm.logprobs import class_log_mass, mass, strip_token

ABSTENTION = "NO-RESPONSE"
_ABSTENTION_TEXT = re.compile(r"NO[\s_-]*RESPONSE", re.IGNORECASE)
# What may surround a bare abstention: whitespace, quotes, emphasis, punctuation.
_MARKUP = re.compile(r"[\s\"'`*.!:;,()\[\]]+")


# --- p(NO-RESPONSE | q, p) ---------------------------------------------------------------------

def is_abstention_token(token: str) -> bool:
    """Whether a first generated token begins the answer ``NO-RESPONSE``.

    The token is stripped of whitespace and tokenizer space markers and must be a prefix of
    ``NO-RESPONSE`` of at least two characters (``NO``, ``NO-``, ``NO-RESP``, ...) or start with
    the whole string. Case matters (``No`` begins ordinary answers, the prompt asks for the
    upper-case string), and a lone ``N`` is not counted: it begins many names. The authors'
    code takes the first token of the tokenized ``NO-RESPONSE``, which is one of these.
    """
    s = strip_token(token)
    return len(s) >= 2 and (ABSTENTION.startswith(s) or s.startswith(ABSTENTION))


def no_response_probability(top_logprobs: Mapping[str, float] | None) -> float | None:
    """p(NO-RESPONSE | q, p) of Eq. 1 from the first generated token's top logprobs.

    The probability mass of the listed tokens that begin ``NO-RESPONSE``
    (:func:`is_abstention_token`), summed (``"NO"`` and ``" NO"`` are two ways to start it) and
    not renormalised: it is the model's own probability of starting to abstain, as in the
    authors' code (the softmax probability of the first token of ``NO-RESPONSE``). Tokens
    outside the top N are unknown and count as 0, so this is a lower bound, short by less than
    the smallest listed probability per missing variant. ``None`` when the backend returned no
    logprobs.
    """
    if top_logprobs is None:
        return None
    log_mass = class_log_mass(top_logprobs, lambda t: True if is_abstention_token(t) else None)
    return mass(log_mass.get(True))


# Tokenizer space markers read as what they stand for, so that a token is compared by its text.
_MARKER_TEXT = str.maketrans({"\u2581": " ", "\u0120": " ", "\u010a": "\n"})


def first_token_probability(top_logprobs: Mapping[str, float] | None,
                            token: str = "NO") -> float | None:
    """p(NO-RESPONSE | q, p) as the authors compute it: the softmax probability of one token,
    the first token of the encoded ``NO-RESPONSE`` (their
    ``tokenizer.encode("NO-RESPONSE", add_special_tokens=False)[0]``), at the first generated
    position.

    ``token`` is that token's text (``"NO"`` by default; a SentencePiece tokenizer with a dummy
    prefix encodes it as ``"▁NO"``, written ``" NO"``). A listed alternative matches when its
    text, with the tokenizer space markers ``▁``/``Ġ`` read as a space, equals ``token``
    exactly (case and leading space matter, so ``" NO"`` and ``"No"`` are other tokens). Not
    in the top N: 0, a lower bound (the authors read the whole softmax). ``None`` when the
    backend returned no logprobs."""
    if top_logprobs is None:
        return None
    probs = [math.exp(float(lp)) for t, lp in top_logprobs.items()
             if lp is not None and not math.isnan(float(lp))
             and str(t).translate(_MARKER_TEXT) == token]
    return min(1.0, math.fsum(probs))


def is_abstention_text(text: str | None) -> bool:
    """Whether a sampled answer abstains: it contains ``NO-RESPONSE`` (any case; a space, an
    underscore or nothing may stand for the hyphen)."""
    return bool(text) and _ABSTENTION_TEXT.search(text) is not None


def abstention_frequency(texts: Sequence[str]) -> float:
    """The Monte-Carlo estimate of p(NO-RESPONSE | q, p) of App. D: the share of sampled
    answers that abstain (:func:`is_abstention_text`)."""
    if not texts:
        raise ValueError("no samples")
    return sum(is_abstention_text(t) for t in texts) / len(texts)


def is_bare_abstention(answer: str | None) -> bool:
    """Whether an answer is nothing but ``NO-RESPONSE`` (in any case, with markup around it)
    or empty: Fig. 6's own rule grades it ABSTAINED without a judge."""
    core = _MARKUP.sub("", answer or "")
    return not core or _ABSTENTION_TEXT.fullmatch(core) is not None


# --- utility and UDCG ---------------------------------------------------------------------------

def passage_utility(relevant: bool, p_no_response: float) -> float:
    """Eq. 2: ``u(q, p) = R(q, p) * (1 - p_LLM(NO-RESPONSE | q, p))`` with ``R = +1`` for a
    relevant passage and ``-1`` otherwise; for an irrelevant passage ``1 - p`` is the
    distracting effect of Eq. 1."""
    if not 0.0 <= p_no_response <= 1.0:
        raise ValueError(f"p(NO-RESPONSE) must be in [0, 1], got {p_no_response!r}")
    return (1.0 if relevant else -1.0) * (1.0 - p_no_response) + 0.0  # + 0.0: no "-0.0"


def _sigma(x) -> float:
    """sigma of Eq. 3-4, without overflow (scipy imported on first use: every ``cruxflow``
    command's parser imports this module)."""
    from scipy.special import expit

    return float(expit(x))


def udcg(utilities: Sequence[float], gamma: float = 1 / 3) -> float:
    """Eq. 4: ``UDCG(q, C) = sigma(1/k sum_i u_i+ + gamma/k sum_i u_i-)`` over the ``k``
    passages of the context (both means are over all ``k`` positions, as in the paper and the
    authors' code); ``u-`` is ``<= 0``. Raises ``ValueError`` for an empty context (Eq. 4
    divides by ``k``)."""
    k = len(utilities)
    if k == 0:
        raise ValueError("UDCG of an empty context is undefined (Eq. 4 divides by k)")
    pos = math.fsum(max(u, 0.0) for u in utilities)
    neg = math.fsum(min(u, 0.0) for u in utilities)
    return _sigma(pos / k + gamma * neg / k)


def theta_features(utilities: Sequence[float]) -> np.ndarray:
    """The feature vector of Eq. 3: ``[u_1+, ..., u_k+, u_1-, ..., u_k-]``."""
    u = np.asarray(utilities, dtype=float)
    return np.concatenate([np.maximum(u, 0.0), np.minimum(u, 0.0)])


@dataclass
class ThetaWeights:
    """The 2k positional weights of Eq. 3: ``alpha`` (for ``u+``) and ``beta`` (for ``u-``)."""

    alpha: list[float]
    beta: list[float]
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if len(self.alpha) != len(self.beta) or not self.alpha:
            raise ValueError(f"alpha and beta need the same non-zero length, got "
                             f"{len(self.alpha)} and {len(self.beta)}")

    @property
    def k(self) -> int:
        return len(self.alpha)

    def to_json(self) -> dict:
        return {"version": "udcg-theta-v1", "k": self.k, "alpha": list(self.alpha),
                "beta": list(self.beta), **self.info}


def udcg_theta(utilities: Sequence[float], weights: ThetaWeights) -> float:
    """Eq. 3: ``UDCG_theta(q, C) = sigma(sum_i alpha_i u_i+ + sum_i beta_i u_i-)``; the context
    must have exactly ``weights.k`` passages."""
    if len(utilities) != weights.k:
        raise ValueError(f"UDCG_theta weights are for k = {weights.k} passages, the context "
                         f"has {len(utilities)}")
    w = np.concatenate([np.asarray(weights.alpha, float), np.asarray(weights.beta, float)])
    return _sigma(w @ theta_features(utilities))


def fit_udcg_theta(train_contexts: Sequence[tuple[str, Sequence[float], float]], *,
                   c: float = 0.01, seed: int = 0) -> ThetaWeights:
    """Learn ``alpha``/``beta`` of Eq. 3 with a pairwise linear ranking model (SVM-rank,
    Joachims 2002, as in Sec. 7.2).

    ``train_contexts``: ``(question id, utilities, ideal grade)`` per context, the grade larger
    for better answers (correct 2 > abstained 1 > incorrect 0). Every pair of contexts of the
    same question with different grades gives the difference of their feature vectors
    (:func:`theta_features`), labelled by which is better; a linear SVM without intercept
    (sklearn ``LinearSVC``, hinge loss) separates them, and its coefficients are the weights.
    Pairs alternate in orientation so both classes are present. ``c`` is SVM-rank's ``-c``
    (default 0.01, its default), which SVM-rank divides by the number of training questions;
    ``LinearSVC`` gets ``C = c / n_questions``. The weights' scale does not change the ranking
    of one question's contexts, only how far UDCG_theta spreads around 0.5.
    """
    from sklearn.svm import LinearSVC

    by_question: dict[str, list[tuple[np.ndarray, float]]] = {}
    k = None
    for qid, utilities, grade in train_contexts:
        if k is None:
            k = len(utilities)
        if len(utilities) != k or k == 0:
            raise ValueError(f"every training context needs the same non-zero number of "
                             f"passages; got {len(utilities)} after {k}")
        by_question.setdefault(str(qid), []).append((theta_features(utilities), float(grade)))
    diffs, labels = [], []
    for contexts in by_question.values():
        for i in range(len(contexts)):
            for j in range(i + 1, len(contexts)):
                (xi, gi), (xj, gj) = contexts[i], contexts[j]
                if gi == gj:
                    continue
                d, y = (xi - xj, 1) if gi > gj else (xj - xi, 1)
                if len(diffs) % 2:  # alternate the orientation: both classes for the SVM
                    d, y = -d, -1
                diffs.append(d)
                labels.append(y)
    if len(set(labels)) < 2:
        raise ValueError("UDCG_theta needs at least two pairs of contexts of the same question "
                         "with different answer grades to learn from")
    questions = sum(1 for cs in by_question.values() if len({g for _, g in cs}) > 1)
    svm = LinearSVC(C=c / questions, loss="hinge", fit_intercept=False, dual=True,
                    max_iter=100_000, random_state=seed)
    svm.fit(np.vstack(diffs), np.asarray(labels))
    w = svm.coef_.ravel()
    return ThetaWeights([float(x) for x in w[:k]], [float(x) for x in w[k:]],
                        {"pairs": len(diffs), "questions": questions, "c": c,
                         "model": "sklearn LinearSVC(loss='hinge', fit_intercept=False)"})


def save_theta(path, weights: ThetaWeights) -> None:
    write_json(path, weights.to_json())


def load_theta(path) -> ThetaWeights:
    """Weights written by :func:`save_theta`; a malformed file names the field."""
    obj = read_json(path)
    if not isinstance(obj, dict):
        raise DataError("expected a JSON object with alpha and beta", path=path)
    vectors = {}
    for key in ("alpha", "beta"):
        v = obj.get(key)
        if not isinstance(v, list) or not v or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in v):
            raise DataError("expected a non-empty list of numbers", path=path, field=key)
        vectors[key] = [float(x) for x in v]
    if len(vectors["alpha"]) != len(vectors["beta"]):
        raise DataError(f"alpha has {len(vectors['alpha'])} weights, beta "
                        f"{len(vectors['beta'])}", path=path, field="beta")
    info = {k: v for k, v in obj.items() if k not in ("alpha", "beta", "k", "version")}
    return ThetaWeights(vectors["alpha"], vectors["beta"], info)
