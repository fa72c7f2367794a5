"""UDCG -- Utility and Distraction-aware Cumulative Gain (Trappolini et al. 2025, "Redefining
Retrieval Evaluation in the Era of LLMs").

A passage's utility is its relevance sign times the LLM's probability of not abstaining when it
is the only passage (Eq. 1-2); UDCG scores a context by the sigmoid of its mean positive utility
plus gamma times its mean negative utility (Eq. 4), UDCG_theta with 2k learned positional
weights (Eq. 3). The correlation protocol of Sec. 7.2 checks a metric against the LLM's graded
answers on sampled contexts. See docs/udcg.md.

- :mod:`cruxflow.beyond.udcg.metric` -- the formulas, p(NO-RESPONSE), UDCG_theta fitting;
- :mod:`cruxflow.beyond.udcg.steps` -- the LLM steps (utilities, relevance judge, answers, grading);
- :mod:`cruxflow.beyond.udcg.protocol` -- the context sampler, the IR metrics, the correlations;
- :mod:`cruxflow.beyond.udcg.data` -- the input reader (the authors' released format and ours);
- :mod:`cruxflow.beyond.udcg.options` -- :class:`UdcgOptions`, every option and its default;
- :mod:`cruxflow.beyond.udcg.run` -- ``run_udcg`` (file to file; the console command is
  :mod:`cruxflow.cli.udcg`).
"""

from __future__ import annotations

from cruxflow.beyond.udcg.data import UdcgItem, UdcgPassage, read_items
from cruxflow.beyond.udcg.metric import (
    ThetaWeights,
    first_token_probability,
    fit_udcg_theta,
    load_theta,
    no_response_probability,
    passage_utility,
    save_theta,
    udcg,
    udcg_theta,
)
from cruxflow.beyond.udcg.options import UTILITY_MODES, UdcgOptions
from cruxflow.beyond.udcg.run import run_udcg

__all__ = ["UTILITY_MODES", "ThetaWeights", "UdcgItem", "UdcgOptions", "UdcgPassage",
           "first_token_probability", "fit_udcg_theta", "load_theta",
           "no_response_probability", "passage_utility", "read_items", "run_udcg",
           "save_theta", "udcg", "udcg_theta"]
