"""``cruxflow agreement``: any label sets compared item by item and, given runs or leaderboards,
system by system, with intervals (docs/judge-trust.md); with ``--human-reports``, also what the
CRUX paper reports about its human labels (Sec. 4.3, App. A.2; docs/human-labels.md).
``cruxflow meta-eval`` is its old name, kept (:mod:`cruxflow.cli.meta_eval`)."""

from __future__ import annotations

import json
import math
import sys
from functools import partial

from cruxflow.cli import vocabulary

HUMANS, JUDGE = "humans", "judge"


def _num(value, digits: int = 3) -> str:
    return "undefined" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.{digits}f}"


def error_level(confidence: float) -> float:
    """PPI's alpha for a confidence level (0.95 -> 0.05, exactly)."""
    return round(1 - confidence, 12)


# --- reading the inputs -----------------------------------------------------------------------

def label_sets(args) -> list:
    """The label sets of ``--human`` (one set of annotators, ``humans``), ``--labels`` (one set
    each) and ``--judge`` (``judge``), in that order: the earlier the reference."""
    from cruxflow.data.names import check_unique, named_inputs, split_name
    from cruxflow.datasets import resolve_label_file
    from cruxflow.paper.label_sets import read_label_set

    sets, names = [], []
    if args.human:     # the annotators' names: checked as they are read
        sets.append(read_label_set(HUMANS, [split_name(spec) for spec in args.human],
                                   fmt=args.format, merge=args.merge))
        names.append((HUMANS, ", ".join(str(p) for p in args.human)))
    for name, path in named_inputs(args.labels or (), "label sets"):
        path = resolve_label_file(path)       # a registered set's name: its file of labels
        sets.append(read_label_set(name, [(None, path)], fmt=args.format, merge=args.merge))
        names.append((name, path))
    if args.judge:
        judge = [str(p) for p in args.judge]
        sets.append(read_label_set(JUDGE, [(None, p) for p in judge], fmt=args.format,
                                   merge=args.merge, one_annotator=True))
        names.append((JUDGE, ", ".join(judge)))
    check_unique(names, "label sets")
    return sets


def read_runs(specs) -> dict:
    """``[NAME=]RUN`` specs as ``{name: {topic: [RunRow, ...]}}``, names unique."""
    from cruxflow.data.io import read_run
    from cruxflow.data.names import named_inputs

    return {name: read_run(path) for name, path in named_inputs(specs, "runs")}


# --- the command --------------------------------------------------------------------------------

def run(args) -> int:
    """Run ``cruxflow agreement`` on parsed arguments (its old name, meta-eval, too)."""
    labels = bool(args.labels or args.human or args.leaderboard)
    if not (labels or args.human_reports):
        raise SystemExit("cruxflow agreement: give label sets (--labels NAME=PATH ..., --human "
                         "and/or --judge), --leaderboard NAME=PATH ..., or --human-reports "
                         "(the paper's Task 1)")
    out: dict = {}
    if args.human_reports:
        _paper_report(args, out)
    result = None
    if args.leaderboard:
        result = _leaderboards(args)
    elif labels:
        result = _label_sets(args)
    if result is not None:
        out.update(result.to_json())
    if args.output is not None:
        from cruxflow.data.io import write_json

        write_json(args.output / "agreement.json", out)
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    if result is not None:
        _print_result(result, args)
    if args.output is not None:
        print(f"\nwrote {args.output}")
    return 0


def _label_sets(args):
    from cruxflow.metrics.options import MetricOptions
    from cruxflow.paper.meta_eval import item_level, system_level

    sets = label_sets(args)
    if len(sets) < 2 and not (sets and (sets[0].several or args.run)):
        raise SystemExit("cruxflow agreement: give two label sets or more (--labels NAME=PATH "
                         "NAME=PATH, --human A B, --judge), or one --human set of several "
                         "annotators")
    result = item_level(sets, threshold=args.threshold, eta=args.eta, merge=args.merge,
                        n_resamples=args.bootstrap, confidence=args.confidence, seed=args.seed)
    if args.run:
        system_level(result, read_runs(args.run), measures=args.measure,
                     options=MetricOptions(eta=args.eta), top=args.top,
                     n_resamples=args.bootstrap, confidence=args.confidence, seed=args.seed,
                     ppi_alpha=error_level(args.confidence), ppi_method=args.method)
    return result


def _leaderboards(args):
    from cruxflow.data.names import named_inputs
    from cruxflow.paper.leaderboards import read_leaderboard
    from cruxflow.paper.meta_eval import AgreementResult, compare_sides

    if args.labels or args.human or args.run:
        raise SystemExit("cruxflow agreement: --leaderboard compares leaderboards; label sets "
                         "and runs are compared without it")
    measures = args.measure or [None]
    boards = named_inputs(args.leaderboard, "leaderboards")
    if len(boards) < 2:
        raise SystemExit("cruxflow agreement: --leaderboard needs two leaderboards or more")
    result = AgreementResult([], args.merge)
    for measure in measures:
        sides = [read_leaderboard(name, path, measure=measure, fmt=args.format)
                 for name, path in boards]
        compare_sides(result, sides, top=args.top, n_resamples=args.bootstrap,
                      confidence=args.confidence, seed=args.seed,
                      ppi_alpha=error_level(args.confidence), ppi_method=args.method)
    return result


def _paper_report(args, out: dict) -> None:
    """Task 1 (and, with --human and --judge, Task 2) as the paper reports them."""
    from cruxflow.paper.agreement import MEAN, agreement_report
    from cruxflow.paper.human_labels import gather

    inputs = gather(args.human_reports, args.human or (), args.judge or (),
                    args.judge_reports or (), eta=args.eta)
    report = agreement_report(inputs.labels, inputs.kept, inputs.llm_cov, inputs.human_ratings,
                              inputs.llm_ratings, eta=args.eta)
    report.summary["inputs"] = {"questions_counted": inputs.kept_from, **inputs.counts}
    out.update(report.summary)
    if args.output is not None:
        report.write(args.output)
    if args.json:
        return
    t1, t2 = report.summary.get("t1"), report.summary.get("t2")
    if t1 is not None:
        cov = report.tables["human_coverage"]
        wide = cov.pivot(index=["topic", "system"], columns="annotator", values="Cov")
        print(f"Task 1, report coverage: {t1['reports']} reports, {wide.shape[1]} annotators; "
              f"questions counted: {inputs.kept_from}")
        print(wide.reset_index().to_markdown(index=False, floatfmt=".3f"))
        if "fleiss" in t1:
            f = t1["fleiss"]
            print(f"Fleiss' kappa: {_num(f['kappa'])} over {f['n_items']} (report, question) "
                  f"items every annotator labelled ({f['n_dropped']} left out); the labels "
                  "are binary (answered or not): no graded kappa")
        for row in t1["annotator_spearman"]:
            print(f"Spearman {row['annotator_a']} ~ {row['annotator_b']}: "
                  f"{_num(row['rho'])} (p {_num(row['p_value'])}, {row['n']} reports)")
        for name, row in t1.get("spearman", {}).items():
            who = "annotators' mean" if name == MEAN else name
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
        print(table.to_markdown(index=False, floatfmt=".3f"))
    print()


# --- printing -------------------------------------------------------------------------------------

def _print_result(result, args) -> None:
    from cruxflow.data.merge import describe

    if result.sets:
        several = [s for s in result.sets if s.several]
        print("Label sets" + (f" (several annotators {describe(result.merge)})" if several
                              else "") + ":")
        for s in result.sets:
            print(f"  {s.describe()}")
    if result.pairs:
        _print_pairs(result.pairs, "Item level: every two label sets over the items both "
                     "labelled (the first is the reference of precision and recall)")
        for line in result.skipped:
            print(f"  not compared: {line}")
    for f in result.fleiss:
        print(f"\nFleiss' kappa of {', '.join(f['sets'])} over the {f['n_items']} items all "
              f"labelled: {_num(f['kappa'])} on the grades, {_num(f['kappa_threshold'])} at "
              f"threshold {f['threshold']}")
    if result.against_others:
        _print_pairs(result.against_others,
                     f"Each against the others' labels {describe(result.merge)}")
    names = {s.name for s in result.sets}
    for pair in result.pairs:     # between sets; the annotators' rows: in the JSON
        if pair.a in names and pair.b in names:
            _print_details(pair)
    for measure in dict.fromkeys(s.measure for s in result.scores):
        _print_scores([s for s in result.scores if s.measure == measure])
        for r in result.systems:
            if r.measure == measure:
                _print_ranking(r)
    left = {s: {r: n for r, n in runs.items() if n} for s, runs in result.runs_left_out.items()}
    for s, runs in left.items():
        if runs:
            print(f"\nrun topics without labels in {s}, left out: "
                  + ", ".join(f"{r} {n}" for r, n in runs.items()))


def _print_pairs(pairs, title: str) -> None:
    import pandas as pd

    print(f"\n{title}:")
    rows = [{"a": p.a, "b": p.b, "n": p.n, "exact": _num(p.exact),
             "kappa": _num(p.cohen_kappa), "kappa linear": _num(p.kappa_linear),
             "kappa quadratic": _num(p.kappa_quadratic), "alpha (ordinal)": _num(p.alpha_ordinal),
             "threshold": p.threshold, "kappa@threshold": _num(p.kappa_threshold),
             "precision": _num(p.precision), "recall": _num(p.recall),
             "note": "; ".join(x for x in (p.note, p.warning) if x)} for p in pairs]
    print(pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True))


def _print_details(p) -> None:
    if not p.n:
        return
    width = max(len(p.a), len(p.b), 9)
    print(f"\n{p.a} ~ {p.b}: {p.n} items both labelled ({p.only_a} only in {p.a}, {p.only_b} "
          f"only in {p.b}); share of grades >= {p.threshold}: {_num(p.positive_a)} in {p.a}, "
          f"{_num(p.positive_b)} in {p.b}")
    head = " ".join(f"{g:>6}" for g in p.scale)
    print(f"  {'base rate':{width}s}  {head}")
    for name, rates in ((p.a, p.base_rate_a), (p.b, p.base_rate_b)):
        print(f"  {name:{width}s}  " + " ".join(f"{_num(rates[g]):>6}" for g in p.scale))
    print(f"  confusion, rows {p.a}, columns {p.b}:")
    for g, row in zip(p.scale, p.confusion, strict=True):
        print(f"  {g:>{width}}  " + " ".join(f"{c:>6}" for c in row))
    if p.per_topic:
        level = f"{p.confidence:.0%}"
        print(f"  Cohen's kappa per topic [{level} percentile bootstrap over the topic's items, "
              f"{p.resamples} resamples]:")
        for t in p.per_topic:
            interval = f"[{_num(t.ci_low)}, {_num(t.ci_high)}]" if t.ci_low is not None \
                else "[no interval]"
            extra = f" ({t.undefined} resamples undefined)" if t.undefined else ""
            print(f"    {t.topic:12s} {t.n:>6} items  {_num(t.kappa):>9} {interval}{extra}")


def _print_scores(sides) -> None:
    systems = list(dict.fromkeys(x for side in sides for x in side.systems))
    width = max([len(x) for x in systems] + [8])
    cols = [max(len(side.name), 8) for side in sides]
    print(f"\nSystem level, {sides[0].measure}: each system's mean over each side's own "
          "topics" + (" (cruxflow.evaluate)" if sides[0].means is None else ""))
    print(f"  {'system':{width}s}  " + "  ".join(f"{side.name:>{c}}" for side, c in
                                                 zip(sides, cols, strict=True)))
    for x in systems:
        print(f"  {x:{width}s}  " + "  ".join(
            f"{_num(side.mean(x) if x in side.systems else None, 4):>{c}}"
            for side, c in zip(sides, cols, strict=True)))
    if sides[0].means is None:
        print(f"  {'topics':{width}s}  " + "  ".join(
            f"{max((len(t) for t in side.per_topic.values()), default=0):>{c}}"
            for side, c in zip(sides, cols, strict=True)))
    for side in sides:
        if side.source and side.source != side.name:
            print(f"  {side.source}")


def _print_ranking(r) -> None:
    print(f"\n{r.reference} (reference) ~ {r.other}, {r.measure}: {len(r.systems)} systems "
          f"over the {len(r.topics)} topics both score"
          + "".join(f"; {n} topics {why}" for why, n in r.left_out.items() if n))
    for side, missing in r.not_in_both.items():
        if missing:
            print(f"  systems only {side} scores, left out: {', '.join(missing)}")
    width = max([len(s) for s in r.systems] + [6])
    print(f"  {'system':{width}s}  {r.reference[:10]:>10}  {r.other[:10]:>10}")
    for s in r.systems:
        print(f"  {s:{width}s}  {_num(r.reference_means[s], 4):>10}  "
              f"{_num(r.other_means[s], 4):>10}")
    boot = r.tau.interval
    for label, stat in (("Kendall tau-b", r.tau), ("tau_AP", r.tau_ap),
                        ("Spearman rho", r.spearman), (f"top-{r.top} overlap", r.overlap)):
        i = stat.interval
        interval = f"[{_num(i.low)}, {_num(i.high)}]" if i.low is not None else \
            "[no interval]"
        print(f"  {label:16s} {_num(stat.value):>9} {interval}")
    if boot.resamples:
        print(f"  intervals: {boot.describe()}, every system's scores drawn together")
    elif r.topics:
        print("  no intervals: fewer than 3 systems or no resamples")
    else:
        print("  no intervals: the leaderboards hold no per-topic values")
    if r.ppi_note:
        print(f"  {r.ppi_note}")
    for system, res in r.ppi.items():
        if isinstance(res, str):
            print(f"    {system}: undefined ({res})")
        else:
            print(f"    {system}: {r.other}-only {res.judge_only:.4f}, {r.reference}-only "
                  f"{res.human_only:.4f} [{res.human_ci_low:.4f}, {res.human_ci_high:.4f}], "
                  f"PPI {res.estimate:.4f} [{res.ci_low:.4f}, {res.ci_high:.4f}]")


# --- the parser ---------------------------------------------------------------------------------

def add_flags(p) -> None:
    """The flags of ``cruxflow agreement`` (and of its old name, ``meta-eval``)."""
    add = partial(vocabulary.add, p)
    add("labels")
    add("human", detail="here one label set, 'humans': its annotators' labels of an item "
                        "merged by --merge, each annotator also compared on its own")
    add("judge", detail="here the label set 'judge', read as one; with --human-reports also "
                        "its ratings of the Task 1 reports (the records whose passage field "
                        "is a report's id: <system>_<topic>, or the topic for the oracle)")
    add("format", choices=("qrels", "ratings", "reports", "support", "nuggets", "trec_eval",
                           "ir_measures", "tot", "ranking", "jsonl", "tsv"),
        default=None, default_text="told from each file",
        detail="here of every label set (qrels ... nuggets) or leaderboard (trec_eval ... tsv)")
    add("merge")
    add("threshold")
    add("eta")
    add("run", metavar="[NAME=]RUN", detail="here the system level: each run scored against "
                                            "every label set; NAME= names a run, else its "
                                            "file name without its last suffix")
    add("measure", default=None, default_text="Cov@10 for answerability ratings, nDCG@10 "
                                              "for qrels; a leaderboard's only measure",
        detail="here each gives one system-level comparison")
    add("leaderboard")
    add("top")
    add("bootstrap", default=1000, detail="here for every interval: per topic over its items, "
                                          "and of the rank correlations over the topics")
    add("confidence", detail="here of every interval")
    add("seed", default=0, detail="here the bootstrap's")
    add("method", detail="here of the system level's PPI")
    add("human-reports")
    add("judge-reports")
    add("output", detail="here agreement.json, and with --human-reports the paper's tables "
                         "(TSV) and summary.json")
    add("json", detail="here per pair cohen_kappa, kappa_linear, kappa_quadratic, per_topic, "
                       "...")


DESCRIPTION = (
    "Any label sets compared item by item: TREC qrels, answerability ratings (a judge's, "
    "annotators'), report labels, support labels, nugget assignments. Every two over the items "
    "both labelled: exact agreement, Cohen's kappa (plain, linear and quadratic weights), "
    "Krippendorff's alpha, kappa at a threshold, the confusion matrix with base rates, kappa "
    "per topic with a bootstrap interval; Fleiss' kappa for three or more. With --run, each "
    "run scored against each label set by --measure and the rankings compared (Kendall tau-b, "
    "tau_AP, Spearman, top-k overlap, with bootstrap intervals over topics; PPI-corrected "
    "means); --leaderboard compares leaderboards the same way. --human-reports adds the "
    "paper's Task 1 (Sec. 4.3). See docs/judge-trust.md and docs/human-labels.md.")


def add_command(subparsers) -> None:
    """Add ``cruxflow agreement`` to the CLI's subparsers."""
    p = vocabulary.command(subparsers, "agreement", description=DESCRIPTION)
    add_flags(p)
    p.set_defaults(func=run, writes=("agreement.json",))


def notice(old: str) -> None:
    print(f"cruxflow: note: {old} is now cruxflow agreement (the same flags)", file=sys.stderr)
