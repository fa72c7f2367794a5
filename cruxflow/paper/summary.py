"""What a finished workflow run made and where, with its headline table: the end of
``scripts/demo.sh`` (``python -m cruxflow.paper.summary [WORKDIR]``).

The headline is the hand-rated dataset's context metrics at k = |Z*|: its ratings come from
people, not from the demo's 135M model, so its differences between systems are real ones. The
sentences under the table are computed from the same file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HEADLINE_DATASET = "demo-crux"
# The table's columns at k = |Z*|, under their full measure names (docs/evaluate.md).
COLUMNS = {"Cov": "Cov@oracle", "alpha_nDCG_crux": "alpha_nDCG_crux@oracle",
           "Den": "Den@oracle", "R": "R@oracle", "nDCG": "nDCG@oracle"}


def headline(path: Path) -> tuple[str, list[str]]:
    """The context metrics at k = |Z*| as a small table, and what they show."""
    table = pd.read_csv(path, sep="\t", dtype={"k": str, "system": str})
    at_oracle = table[table["k"] == "oracle"].set_index("system")
    shown = at_oracle[[c for c in COLUMNS if c in at_oracle]].rename(columns=COLUMNS)
    text = shown.to_string(float_format=lambda v: f"{v:.3f}")
    cov = at_oracle["Cov"]
    findings = []
    if {"oracle", "random-relevant"} <= set(cov.index):
        findings.append(f"Random relevant passages cover {cov['random-relevant']:.2f} of the "
                        f"sub-questions where Z* covers {cov['oracle']:.2f}: relevance alone is "
                        "not coverage.")
    kept = {s: cov[s] / cov[s.split("+")[0]] for s in cov.index
            if "+" in s and cov.get(s.split("+")[0], 0) > 0}
    if kept:
        low, high = min(kept.values()), max(kept.values())
        span = f"{low:.0%}" if f"{low:.0%}" == f"{high:.0%}" else f"{low:.0%}-{high:.0%}"
        reranker = next(iter(kept)).split("+", 1)[1].upper()
        findings.append(f"{reranker} re-ranking keeps {span} of its first stage's coverage.")
    return text, findings


def summary(workdir: Path) -> str:
    workdir = Path(workdir)
    results = workdir / "results"
    jobs = len(list((workdir / "benchmarks" / "results").rglob("*.tsv")))
    def names(folder: Path) -> str:
        return ", ".join(sorted(p.name for p in folder.iterdir() if p.is_dir())) if (
            folder.is_dir()) else "none"

    lines = [f"Done: {jobs} jobs. Context metrics for {names(results / 'metrics')}; RAG "
             f"reports for {names(results / 'rag')} (logs in {workdir / 'logs'}, times in "
             f"{workdir / 'benchmarks' / 'results'})."]
    metrics = results / "metrics" / HEADLINE_DATASET / "eta3" / "context_metrics.tsv"
    if metrics.is_file():
        table, findings = headline(metrics)
        lines += ["", f"Headline: the hand-rated dataset {HEADLINE_DATASET}, context metrics at "
                      f"k = |Z*| ({metrics.with_suffix('.md')}):", "", table, ""]
        lines += [f"  {f}" for f in findings]
    lines += llm_outputs(workdir)
    lines += content_checks(workdir)
    lines += ["", "Where the rest is:"]
    for what, path in (("context metrics of every dataset", results / "metrics"),
                       ("RAG tables (Tables 1-3, paired tests)", results / "tables"),
                       ("figures", results / "figures"),
                       ("HTML report", results / "report.html")):
        state = "" if path.exists() else "  (not made)"
        lines.append(f"  {what + ':':40} {path}{state}")
    lines.append("  The RAG tables of the demo (2 topics, a 135M model) say why they rank nothing; "
                 "presets/demo-full.yaml and presets/paper.yaml give them topics.")
    return "\n".join(lines) + "\n"


GENERATION_RULES = ("passages", "report_requests", "subquestions", "ratings", "rag_generate",
                    "rag_judge")


def llm_outputs(workdir: Path) -> list[str]:
    """What the LLM wrote, per stage and dataset, from the jobs' ``logs/<rule>/<dataset>...
    .calls.json``: requests, outputs that were not text of the kind asked for (dropped and
    asked again: cruxflow.llm.parsing.TextCheck) and items without a usable output after every
    attempt (kept as their fallback: a passage's own text, the last request written, a rating
    of 0; a topic without sub-questions)."""
    import json

    rows: dict[tuple[str, str], list[int]] = {}
    for rule in GENERATION_RULES:
        for path in sorted((workdir / "logs" / rule).rglob("*.calls.json")):
            dataset = path.relative_to(workdir / "logs" / rule).parts[0].removesuffix(
                ".calls.json")
            calls = json.loads(path.read_text())
            row = rows.setdefault((rule, dataset), [0, 0, 0, 0])
            for i, key in enumerate(("requests", "calls", "malformed", "parse_failures")):
                row[i] += int(calls.get(key) or 0)
    if not rows:
        return []
    head = ("stage", "dataset", "requests", "LLM calls", "not of the kind asked",
            "failed every attempt")
    table = [head] + [(rule, ds, *map(str, v)) for (rule, ds), v in rows.items()]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    out = ["", "LLM outputs (logs/<stage>/): not text of the kind asked for (dropped, asked "
               "again), and failed every attempt (kept as their fallback):"]
    for r in table:
        out.append("  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                    for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return out


CHECKED_RULES = ("report_requests", "subquestions", "passages")


def content_checks(workdir: Path) -> list[str]:
    """What a reader would notice in the generated content, per dataset and stage, from the
    jobs' ``logs/<rule>/<dataset>....checks.json`` (:mod:`cruxflow.stages.checks`: the rules,
    their counts per topic, the first flagged item); and, for a dataset where a stage's share
    of flagged items passes :data:`~cruxflow.stages.checks.UNFIT_SHARE`, one line saying that
    its content is not fit for conclusions, the checks that failed and what model to use."""
    import json

    from cruxflow.data.text import printable
    from cruxflow.stages.checks import merged, verdict

    reports: dict[str, list] = {}
    for rule in CHECKED_RULES:
        for path in sorted((workdir / "logs" / rule).rglob("*.checks.json")):
            dataset = path.relative_to(workdir / "logs" / rule).parts[0].removesuffix(
                ".checks.json")
            reports.setdefault(dataset, []).append((rule, json.loads(path.read_text())["checks"]))
    if not reports:
        return []
    out = ["", "Content checks of what the LLM wrote (cruxflow/stages/checks.py; per topic in "
               "logs/<stage>/*.checks.json):"]
    verdicts = []
    for dataset, found in reports.items():
        counts = merged(found)
        width = max(len(c.check.stage) for c in counts)
        for c in counts:
            out.append(printable(f"  {dataset}  {c.check.stage:{width}}  {c.describe()}"))
            if c.flagged and c.example:
                out.append(printable(f"  {'':{len(dataset)}}  {'':{width}}    e.g. {c.example}"))
        if line := verdict(dataset, counts):
            verdicts.append(printable(line))
    return out + [f"  {line}" for line in verdicts]


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(summary(Path(args[0]) if args else Path(".")), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
