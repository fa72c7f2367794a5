"""``cruxflow agreement --human-reports ... --human ... --judge ...``: what the CRUX paper reports
about its human labels (Sec. 4.3, App. A.2), from the labeling tool's exports or our own label
files (docs/human-labels.md)."""

from __future__ import annotations

import json
import math
from functools import partial

from cruxflow.cli import vocabulary
from cruxflow.data.text import printable, printable_cells


def _num(value, digits: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.{digits}f}"


def _cmd_agreement(args) -> int:
    from cruxflow.paper.agreement import MEAN, agreement_report
    from cruxflow.paper.human_labels import gather

    if not args.human_reports and not args.human:
        raise SystemExit("cruxflow agreement: give --human-reports (Task 1) and/or --human "
                         "(Task 2) label files")
    if args.human and not args.judge:
        raise SystemExit("cruxflow agreement: --human needs --judge (the judge's passage "
                         "ratings to score against the human ones)")
    inputs = gather(args.human_reports or (), args.human or (), args.judge or (),
                    args.judge_reports or (), eta=args.eta)
    report = agreement_report(inputs.labels, inputs.kept, inputs.llm_cov, inputs.human_ratings,
                              inputs.llm_ratings, eta=args.eta)
    report.summary["inputs"] = {"questions_counted": inputs.kept_from, **inputs.counts}
    if args.output is not None:
        report.write(args.output)
    if args.json:
        print(json.dumps(report.summary, indent=2, default=str))
        return 0
    t1, t2 = report.summary.get("t1"), report.summary.get("t2")
    if t1 is not None:
        cov = report.tables["human_coverage"]
        wide = cov.pivot(index=["topic", "system"], columns="annotator", values="Cov")
        print(f"Task 1, report coverage: {t1['reports']} reports, {wide.shape[1]} annotators; "
              f"questions counted: {inputs.kept_from}")
        print(printable_cells(wide.reset_index()).to_markdown(index=False, floatfmt=".3f"))
        if "fleiss" in t1:
            f = t1["fleiss"]
            print(f"Fleiss' kappa: {_num(f['kappa'])} over {f['n_items']} (report, question) "
                  f"items every annotator labelled ({f['n_dropped']} left out)")
        for row in t1["annotator_spearman"]:
            print(f"Spearman {printable(row['annotator_a'])} ~ {printable(row['annotator_b'])}: "
                  f"{_num(row['rho'])} (p {_num(row['p_value'])}, {row['n']} reports)")
        for name, row in t1.get("spearman", {}).items():
            who = "annotators' mean" if name == MEAN else printable(name)
            print(f"Spearman judge ~ {who}: {_num(row['rho'])} (p {_num(row['p_value'])}, "
                  f"{row['n']} reports)")
        if "spearman" not in t1:
            print("(no judge ratings of the reports: give --judge with report ratings or "
                  "--judge-reports for Spearman against the judge)")
    if t2 is not None:
        table = report.tables["judge_precision_recall"]
        print(f"\nTask 2, passage ratings: {t2['examples']} human ratings "
              f"({inputs.counts.get('t2_not_labelled', 0)} not labelled), exact 0-5 agreement "
              f"{_num(t2['exact_agreement'])}; the judge per class at eta={args.eta}:")
        print(printable_cells(table).to_markdown(index=False, floatfmt=".3f"))
    if args.output is not None:
        print(f"\nwrote {args.output}")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow agreement`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "agreement",
        description="Fleiss' kappa, per-report coverage and Spearman rho between annotators "
                    "(Task 1); with judge ratings, Spearman between judge and human coverage "
                    "and the judge's precision/recall per class (Task 2). Label files are the "
                    "CRUX labeling tool's exports (one per annotator) or our own formats; see "
                    "docs/human-labels.md.")
    add = partial(vocabulary.add, p)
    add("human-reports")
    add("human")
    add("judge", detail="here also of the Task 1 reports: the records whose passage field is a "
                        "report's id (<system>_<topic>, or the topic for the oracle)")
    add("judge-reports")
    add("eta")
    add("output", detail="here the tables (TSV) and summary.json")
    add("json", detail="here the summary")
    p.set_defaults(func=_cmd_agreement)
