"""``cruxflow.compare``: several runs scored by :func:`cruxflow.evaluate` and compared pairwise.

    import cruxflow
    report = cruxflow.compare({"bm25": "bm25.run", "dense": "dense.run"}, "crux-mds-duc04/judge",
                              measures=["Cov@10", "nDCG@10"])
    print(report)                 # the means (marked with the runs each beats), every pair
    report.tests                  # one row per measure and pair: means, diff, p, adjusted p

The argument order is ranx's ``compare(qrels, runs, metrics, stat_test=...)`` with the runs
first, as in :func:`cruxflow.evaluate` (``run, judgments, measures``) and ir_measures
(``calc_aggregate(measures, qrels, run)`` aside). Each run is scored by
:func:`cruxflow.evaluate` (the same numbers as every other door); the pairwise tests are
:func:`cruxflow.metrics.stats.pairwise_tests` under the paired-test policy
(:data:`cruxflow.metrics.policy.POLICY` unless ``test=``, ``correction=``, ``resamples=``,
``seed=`` say otherwise), so their p-values equal ``cruxflow evaluate``'s and the workflow's
for the same runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cruxflow.metrics.policy import POLICY, Policy


@dataclass
class Comparison:
    """What :func:`compare` returns.

    * ``per_topic``: one row per (run, topic), one column per measure (the runs' own
      :func:`cruxflow.evaluate` frames, stacked);
    * ``means``: one row per run, one column per measure: each run's defined mean;
    * ``tests``: one row per measure and pair of runs (a before b in the runs' order):
      ``measure, a, b, topics, mean_a, mean_b, diff, test, p, correction, p_adjusted``, over
      the topics both runs define;
    * ``policy``: the test and correction used (:class:`~cruxflow.metrics.policy.Policy`);
    * ``alpha``: the level at which :meth:`to_markdown` and :meth:`to_latex` mark a
      difference as significant.
    """

    per_topic: object        # pandas.DataFrame
    means: object            # pandas.DataFrame
    tests: object            # pandas.DataFrame
    policy: Policy
    alpha: float = 0.05

    @property
    def runs(self) -> list[str]:
        return list(self.means.index)

    @property
    def measures(self) -> list[str]:
        return list(self.means.columns)

    def to_dataframe(self):
        """The means, one row per run, one column per measure (ranx's ``Report.to_dataframe``);
        the tests are :attr:`tests`."""
        return self.means.copy()

    def beats(self) -> dict[tuple[str, str], list[str]]:
        """``{(run, measure): [runs it beats]}``: the runs whose mean it exceeds with an
        adjusted p below :attr:`alpha`."""
        out: dict[tuple[str, str], list[str]] = {(r, m): [] for r in self.runs
                                                 for m in self.measures}
        for row in self.tests.to_dict("records"):
            p = row["p_adjusted"]
            if p is None or not p < self.alpha or not row["diff"]:
                continue
            winner, loser = (row["a"], row["b"]) if row["diff"] > 0 else (row["b"], row["a"])
            out[(winner, row["measure"])].append(loser)
        return out

    def _letters(self) -> dict[str, str]:
        return {run: _letter(i) for i, run in enumerate(self.runs)}

    def note(self) -> str:
        return (f"{self.policy.describe()}; a letter marks a run whose mean is higher than "
                f"that run's with adjusted p < {self.alpha}")

    def to_markdown(self, digits: int = 4, pairs: bool = True) -> str:
        """The means as a Markdown table, each cell followed by the letters of the runs it
        beats, a note naming the test and the correction, and (``pairs``) the table of every
        pair: difference of the means, p and adjusted p."""
        from cruxflow.metrics import labels

        letters, beats = self._letters(), self.beats()
        short = labels.short_labels(self.measures)
        lines = ["| run | " + " | ".join(short[m] for m in self.measures) + " |",
                 "|:---|" + "---:|" * len(self.measures)]
        for run in self.runs:
            cells = []
            for m in self.measures:
                marks = "".join(letters[r] for r in beats[(run, m)])
                cells.append(_number(self.means.loc[run, m], digits)
                             + (f" {marks}" if marks else ""))
            lines.append(f"| ({letters[run]}) {_md(run)} | " + " | ".join(cells) + " |")
        legend = labels.legend({short[m]: labels.gloss(m) for m in self.measures
                                if short[m] != m}, "labels:")
        text = "\n".join(lines) + f"\n\n{self.note()}.\n" + "".join(
            line + "\n" for line in legend)
        if not pairs:
            return text
        rows = ["| measure | a | b | topics | a - b | p | " + self.policy.adjusted_header + " |",
                "|:---|:---|:---|---:|---:|---:|---:|"]
        rows += [f"| {_md(short[r['measure']])} | {_md(r['a'])} | {_md(r['b'])} | {r['topics']} | "
                 f"{_number(r['diff'], digits)} | {_number(r['p'], digits)} | "
                 f"{_number(r['p_adjusted'], digits)} |" for r in self.tests.to_dict("records")]
        return text + "\n" + "\n".join(rows) + "\n"

    def to_latex(self, digits: int = 4, caption: str | None = None) -> str:
        """The means as a LaTeX ``tabular`` (inside a ``table`` with the note as its caption),
        the letters of the runs a mean beats as a superscript."""
        letters, beats = self._letters(), self.beats()
        head = " & ".join(["Run", *(_tex(m) for m in self.measures)])
        rows = []
        for run in self.runs:
            cells = [f"({letters[run]}) {_tex(run)}"]
            for m in self.measures:
                marks = "".join(letters[r] for r in beats[(run, m)])
                cells.append(_number(self.means.loc[run, m], digits)
                             + (f"$^{{{marks}}}$" if marks else ""))
            rows.append(" & ".join(cells) + r" \\")
        return "\n".join([
            r"\begin{table}", r"\centering",
            r"\begin{tabular}{l" + "r" * len(self.measures) + "}", r"\toprule",
            head + r" \\", r"\midrule", *rows, r"\bottomrule", r"\end{tabular}",
            r"\caption{" + _tex(caption or self.note() + ".") + "}", r"\end{table}"]) + "\n"

    def __str__(self) -> str:
        return self.to_markdown()


def _letter(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < len(letters) else f"{letters[i // 26 - 1]}{letters[i % 26]}"


def _number(value, digits: int) -> str:
    import math

    return "undefined" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _md(text: str) -> str:
    from cruxflow.data.text import printable

    return printable(str(text)).replace("|", r"\|")


def _tex(text: str) -> str:
    from cruxflow.data.text import printable

    out = printable(str(text))
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"),
                          ("_", r"\_"), ("#", r"\#"), ("^", r"\^{}"), ("$", r"\$")):
        out = out.replace(char, escaped)
    return out


def run_names(paths: Sequence) -> list[str]:
    """Each path's file name without its last suffix, as every door names runs
    (:func:`cruxflow.data.names.named_inputs`); two runs of one name are refused."""
    from cruxflow.data.names import check_unique, input_name

    pairs = [(input_name(path), path) for path in paths]
    check_unique(pairs, "runs")
    return [name for name, _ in pairs]


def _named_runs(runs) -> dict[str, object]:
    if isinstance(runs, Mapping):
        return {str(name): run for name, run in runs.items()}
    if isinstance(runs, (str, Path)) or not isinstance(runs, Sequence):
        raise TypeError("runs: a mapping {name: run} or a list of run files")
    if not all(isinstance(r, (str, Path)) for r in runs):
        raise TypeError("runs: a list holds run files only; name other runs in a mapping "
                        "{name: run}")
    return dict(zip(run_names(runs), runs, strict=True))


def compare(runs, judgments, measures=None, *, test: str | None = None,
            correction: str | None = None, resamples: int | None = None,
            seed: int | None = None, alpha: float = 0.05, options=None, texts=None,
            tokens=None) -> Comparison:
    """Score every run of ``runs`` with :func:`cruxflow.evaluate` and test every pair.

    ``runs``: ``{name: run}`` (a run as :func:`cruxflow.evaluate` takes it: a TREC run file,
    ``{query: {passage: score}}``, a DataFrame) or a list of run files (named by their file
    stems). ``judgments``, ``measures`` (default: :func:`cruxflow.evaluate`'s), ``options``,
    ``texts`` and ``tokens`` as :func:`cruxflow.evaluate` takes them; a judgments path is read
    once for all the runs. ``test`` (``randomization``, ``t-test``, ``wilcoxon``),
    ``correction`` (``holm``, ``bh``, ``bonferroni``, ``none``), ``resamples`` and ``seed``
    default to the policy's (:data:`cruxflow.metrics.policy.POLICY`). Returns a
    :class:`Comparison`.
    """
    import pandas as pd

    from cruxflow.data.limits import check_level
    from cruxflow.datasets import resolve_judgments
    from cruxflow.metrics import api
    from cruxflow.metrics.inputs import as_judgments
    from cruxflow.metrics.options import DEFAULTS
    from cruxflow.metrics.stats import pairwise_tests

    alpha = check_level("alpha", alpha)       # as the command line checks --confidence
    named = _named_runs(runs)
    if len(named) < 2:
        raise ValueError(f"compare needs two runs or more, got {len(named)}")
    policy = POLICY.with_(test=test, correction=correction, resamples=resamples, seed=seed)
    # read once, as cruxflow.evaluate reads them (any form it takes), not once per run
    judgments = as_judgments(resolve_judgments(judgments), (options or DEFAULTS).eta)
    kwargs = {"options": options, "texts": texts, "tokens": tokens}
    if measures is not None:
        kwargs["measures"] = measures
    scores = {name: api.evaluate(run, judgments, **kwargs) for name, run in named.items()}
    columns = list(next(iter(scores.values())).columns)
    per_topic = pd.concat(scores, names=["run", "topic"])
    means = pd.DataFrame({name: frame.mean() for name, frame in scores.items()}).T[columns]
    means.index.name = "run"
    rows = pairwise_tests((({"measure": m}, {name: frame[m].to_dict()
                                             for name, frame in scores.items()})
                           for m in columns), policy)
    tests = pd.DataFrame.from_records(rows, columns=["measure", "a", "b", "topics", "mean_a",
                                                     "mean_b", "diff", "test", "p",
                                                     "correction", "p_adjusted"])
    return Comparison(per_topic, means, tests, policy, alpha)
