"""What a UDCG job can be told, and its defaults, declared once: ``cruxflow udcg`` reads its
argparse defaults from :class:`UdcgOptions`, and the workflow's config schema
(``definitions.udcg_job``) declares types and ranges but no defaults, so an option left out of
the config gets the default here."""

from __future__ import annotations

import math
from dataclasses import dataclass

from cruxflow.beyond.udcg.protocol import GRADINGS
from cruxflow.data.limits import check_count

# How p(NO-RESPONSE) is had (docs/udcg.md): the authors' single first token (their prompt
# layout), the summed mass of the first tokens that begin NO-RESPONSE (Fig. 4's prompt),
# Monte-Carlo samples (App. D), or given in the input.
UTILITY_MODES = ("first-token", "logprobs", "sampling", "given")


@dataclass
class UdcgOptions:
    """Everything ``run_udcg`` can be told; the defaults are the paper's (gamma, the protocol)
    and the authors' code's (p(NO-RESPONSE))."""

    gamma: float = 1 / 3                # Eq. 4; the authors' released scores used 0.333
    utility: str = "first-token"        # first-token | logprobs | sampling | given
    no_response_token: str = "NO"       # first-token: the first token of "NO-RESPONSE"
    logprobs: int = 20                  # top alternatives of the first token
    samples: int = 10                   # Monte-Carlo samples per passage (seeds 0..n-1)
    temperature: float = 1.0            # their temperature
    sample_max_tokens: int = 16         # tokens per sampled answer
    given_model: str | None = None      # models_info key for --utility given
    judge_relevance: bool = False       # judge passages without a label with Fig. 5
    protocol: bool = False              # Sec. 7.2 on the input
    grading: str = "context-aware"      # Sec. 6.2: correct without a relevant passage: partial
    contexts_per_question: int = 10
    context_size: int = 5
    depth: int = 25
    seed: int = 0                       # the context sampler's
    max_answer_tokens: int = 64
    judge_max_tokens: int = 256
    attempts: int = 3                   # asks per judgment whose output cannot be parsed
    theta_c: float = 0.01               # SVM-rank's C for --fit-theta

    def check(self) -> None:
        """Raise ``ValueError`` naming the first option with an invalid value."""
        if self.utility not in UTILITY_MODES:
            raise ValueError(f"utility must be one of {', '.join(UTILITY_MODES)}")
        if self.grading not in GRADINGS:
            raise ValueError(f"grading must be one of {', '.join(GRADINGS)}")
        if not isinstance(self.no_response_token, str) or not self.no_response_token.strip():
            raise ValueError("no_response_token must be a non-empty string")
        if not (self.gamma >= 0 and math.isfinite(self.gamma)):
            raise ValueError(f"gamma must be a non-negative number, got {self.gamma}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be non-negative, got {self.temperature}")
        if not self.theta_c > 0:
            raise ValueError(f"theta_c must be positive, got {self.theta_c}")
        for name in ("logprobs", "samples", "sample_max_tokens", "contexts_per_question",
                     "context_size", "depth", "attempts", "max_answer_tokens",
                     "judge_max_tokens", "seed"):   # each within its bounds (data/limits.py)
            check_count(name, getattr(self, name))
