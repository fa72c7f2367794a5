"""What a support job can be told, and its defaults, declared once: ``cruxflow support`` reads
its argparse defaults from :class:`SupportOptions`, the workflow builds one from the config (whose
schema, ``definitions.support_job``, declares types and ranges but no defaults), and the library
functions that share an option take their default from :data:`DEFAULTS`."""

from __future__ import annotations

from dataclasses import dataclass

from cruxflow.beyond.support.prompts import JUDGE_PROMPTS, TREC2024_TEMPERATURE
from cruxflow.data.limits import check_count

# How a run's per-topic values become its score (see metric.average_runs).
AVERAGES = ("over-all-topics", "over-run-topics")
# What the LLM judges: the cited pairs without a label, or all of them.
JUDGE_MODES = ("missing", "all")
# The judge's prompts: the track's GPT-4o prompt, or ours.
PROMPTS = tuple(JUDGE_PROMPTS)


@dataclass
class SupportOptions:
    """Everything ``evaluate_support`` can be told besides its files; the defaults are the
    track's protocol (Thakur et al., SIGIR 2025, Sec. 3.3-3.4)."""

    judge_pairs: str | None = None        # None: no LLM | missing | all
    all_citations: bool = False           # the track judged each sentence's first citation
    average: str = "over-all-topics"      # the track's per-run mean, a missing topic 0
    prompt: str = "trec2024"              # the track's GPT-4o support prompt
    temperature: float = TREC2024_TEMPERATURE   # the track's (its script's default, 0.1)
    attempts: int = 3                     # asks per judge output that cannot be parsed
    max_passage_words: int | None = 1024  # the judge sees at most this much of a passage
    bootstrap: int = 1000                 # topic resamples for the taus' intervals (0: none)

    def check(self) -> None:
        """Raise ``ValueError`` naming the first option with an invalid value."""
        if self.judge_pairs is not None and self.judge_pairs not in JUDGE_MODES:
            raise ValueError(f"judge_pairs must be one of {', '.join(JUDGE_MODES)} or None, "
                             f"not {self.judge_pairs!r}")
        if self.average not in AVERAGES:
            raise ValueError(f"average must be one of {', '.join(AVERAGES)}, "
                             f"not {self.average!r}")
        if self.prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {', '.join(PROMPTS)}, not {self.prompt!r}")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 2:
            raise ValueError(f"temperature must be a number from 0 to 2, not {t!r}")
        if not isinstance(self.all_citations, bool):
            raise ValueError(f"all_citations must be true or false, not {self.all_citations!r}")
        for name in ("attempts", "bootstrap"):   # within its bounds (data/limits.py)
            check_count(name, getattr(self, name))
        if self.max_passage_words is not None:
            check_count("max_passage_words", self.max_passage_words)


DEFAULTS = SupportOptions()
