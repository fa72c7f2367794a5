"""What a KPR job can be told, and its defaults, declared once: ``cruxflow kpr`` reads its
argparse defaults from :class:`KprOptions`, and the workflow's config schema
(``definitions.kpr_job``) declares types and ranges but no defaults.

Two named pipelines set how key points are made (:data:`PIPELINES`):

- ``fast`` (default): one extraction round per document, normalised de-duplication only, no
  filter. Cheap, and what a small model can do; it is **not** the paper's key point set.
- ``paper``: Long2RAG Sec. 3.3 and App. A.2: several extraction rounds, each asking for what
  the earlier ones overlooked; the LLM's de-duplication and aggregation with the paper's
  completeness check; the AutoDS filter at 0.7 (28,611 raw points down to 8,457 in the
  paper, before its human annotation).

``rounds``, ``aggregate`` and ``filter_threshold`` left ``None`` take the pipeline's value; a
value given overrides it (and the summary records the effective settings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cruxflow.beyond.kpr.metric import FAILURES
from cruxflow.beyond.kpr.prompts import EXTRACT_SAMPLING, FILTER_THRESHOLD, JUDGE_SAMPLING
from cruxflow.data.limits import check_count

PRECISION_REFERENCES = ("key_points", "documents")
# The paper does not say how many rounds it ran ("multiple rounds of extraction"): 3 is ours;
# a document stops earlier when a round adds nothing new.
PIPELINES = {
    "fast": {"rounds": 1, "aggregate": False, "filter_threshold": None},
    "paper": {"rounds": 3, "aggregate": True, "filter_threshold": FILTER_THRESHOLD},
}


@dataclass
class KprOptions:
    """Everything ``run_kpr`` can be told. These defaults are the only ones: the console
    command's flags and the workflow's config (whose schema declares none) read them here."""

    extract_only: bool = False          # only key_points.jsonl; no response needed
    pipeline: str = "fast"              # fast | paper (see PIPELINES)
    rounds: int | None = None           # extraction rounds per document (None: the pipeline's)
    aggregate: bool | None = None       # the paper's LLM de-duplication (None: the pipeline's)
    filter_threshold: float | None = None     # the AutoDS filter (None: the pipeline's)
    group_by: Sequence[str] = ()        # columns to average by, besides overall
    precision: bool = True              # also KPP and KPF (Sec. 6.4)
    precision_reference: str = "key_points"   # key_points | documents
    failures: str = "exclude"           # unparseable verdicts, responses without points
    drop_unfound: bool = False          # drop extracted points with no span in the document
    max_words: int | None = None        # cut longer documents into pieces before extraction
    extract_max_tokens: int = EXTRACT_SAMPLING.max_tokens
    judge_max_tokens: int = JUDGE_SAMPLING.max_tokens
    attempts: int = 3                   # tries per unparseable output (sampled decoding only)

    def check(self) -> None:
        """Raise ``ValueError`` naming the first invalid option."""
        if self.pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}, "
                             f"got {self.pipeline!r}")
        if self.precision_reference not in PRECISION_REFERENCES:
            raise ValueError(f"precision_reference must be one of "
                             f"{', '.join(PRECISION_REFERENCES)}, got {self.precision_reference!r}")
        if self.failures not in FAILURES:
            raise ValueError(f"failures must be one of {', '.join(FAILURES)}, "
                             f"got {self.failures!r}")
        for name in ("extract_max_tokens", "judge_max_tokens", "attempts"):
            check_count(name, getattr(self, name))   # within its bounds (data/limits.py)
        if self.rounds is not None:
            check_count("rounds", self.rounds)
        if self.aggregate is not None and not isinstance(self.aggregate, bool):
            raise ValueError(f"aggregate must be true, false or null, got {self.aggregate!r}")
        if self.max_words is not None:
            check_count("max_words", self.max_words)
        t = self.filter_threshold
        if t is not None and not (math.isfinite(t) and 0 <= t <= 1):
            raise ValueError(f"filter_threshold must be between 0 and 1, got {t}")
        if isinstance(self.group_by, str) or not all(isinstance(c, str) for c in self.group_by):
            raise ValueError(f"group_by must be a list of column names, got {self.group_by!r}")

    def effective(self) -> dict:
        """The pipeline's settings with the values given here over them: ``pipeline``,
        ``rounds``, ``aggregate``, ``filter_threshold``."""
        out = dict(PIPELINES[self.pipeline])
        for name in out:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return {"pipeline": self.pipeline, **out}
