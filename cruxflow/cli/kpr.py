"""``cruxflow kpr``: Long2RAG key point recall (KPR, KPP, KPF) of responses (docs/kpr.md)."""

from __future__ import annotations

import argparse
import dataclasses
from functools import partial

from cruxflow.beyond.kpr import FILTER_THRESHOLD, KprOptions, run_kpr
from cruxflow.beyond.kpr.metric import FAILURES
from cruxflow.beyond.kpr.options import PIPELINES, PRECISION_REFERENCES
from cruxflow.cli import llm_options, vocabulary
from cruxflow.data.errors import DataError
from cruxflow.data.text import printable_cells

DEFAULTS = KprOptions()


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow kpr`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "kpr",
        description="Extract key points from retrieved documents and score responses by the "
                    "fraction they entail (Long2RAG KPR, Eq. 2), with key point precision "
                    "and F1 (Sec. 6.4). See docs/kpr.md.")
    add = partial(vocabulary.add, p)
    add("questions", required=True,
        detail='here JSONL, one line per question: {"id", "question", "documents": [{"id"?, '
               '"text"}] or "key_points": [...], "response", other columns}')
    add("output", required=True)
    add("key-points")
    add("extract-only")
    add("pipeline", choices=tuple(PIPELINES), default=DEFAULTS.pipeline,
        detail=f"the paper's: {PIPELINES['paper']['rounds']} rounds, the filter at "
               f"{FILTER_THRESHOLD}")
    add("rounds", default=DEFAULTS.rounds)
    add("group-by", default=DEFAULTS.group_by)
    add("no-precision")
    add("precision-reference", choices=PRECISION_REFERENCES,
        default=DEFAULTS.precision_reference)
    add("drop-unfound-spans")
    add("aggregate", default=DEFAULTS.aggregate)
    add("filter-threshold", default=DEFAULTS.filter_threshold, const=FILTER_THRESHOLD,
        detail=f"here {FILTER_THRESHOLD}")
    add("failures", choices=FAILURES, default=DEFAULTS.failures)
    add("max-words", default=DEFAULTS.max_words)
    add("extract-max-tokens", default=DEFAULTS.extract_max_tokens)
    add("judge-max-tokens", default=DEFAULTS.judge_max_tokens, detail="here an entailment "
                                                                      "verdict")
    add("attempts", default=DEFAULTS.attempts)
    llm_options.add_llm_arguments(p)
    llm_options.add_role_arguments(p, "judge", "entailment judgments")
    llm_options.add_role_arguments(p, "filter", "the AutoDS filter's scores")
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_kpr,
                   writes=("key_points.jsonl", "response_key_points.jsonl", "judgments.jsonl",
                           "per_question.tsv", "grouped.tsv", "summary.json",
                           "llm_cache.sqlite"))
    return p


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")


def _pipeline_line(p: dict) -> str:
    line = (f"pipeline: {p['pipeline']} ({p['rounds']} round{'s' * (p['rounds'] != 1)}, "
            f"{'LLM de-duplication' if p['aggregate'] else 'no LLM de-duplication'}, "
            + ("no filter" if p["filter_threshold"] is None
               else f"AutoDS filter at {p['filter_threshold']:g}") + ")")
    if p["pipeline"] == "fast":
        line += ": not the paper's key points (--pipeline paper)"
    return line


def _failures_line(f: dict) -> str:
    verdicts = f["unparseable_verdicts"]
    n = sum(verdicts.values())
    how = ("left out of the means" if f["treatment"] == "exclude"
           else "counted as not entailed (--failures as-not-entailed)")
    kinds = ", ".join(f"{v} {k}" for k, v in verdicts.items())
    line = (f"failures: {n} unparseable verdicts ({kinds}) in "
            f"{len(f['questions_with_unparseable_verdicts'])} questions")
    if "responses_without_points" in f:
        line += f", {len(f['responses_without_points'])} responses with no extracted key point"
    line += f": {how}"
    if f["questions_without_kpr"]:
        line += f"; no KPR (every verdict failed): {_ids(f['questions_without_kpr'])}"
    if f.get("questions_without_kpp"):
        line += f"; no KPP: {_ids(f['questions_without_kpp'])}"
    return line


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def options_from_args(args) -> KprOptions:
    """The options of a parsed ``cruxflow kpr`` command line (its flags' dests are the
    fields' names)."""
    return KprOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(KprOptions)})


def _cmd_kpr(args) -> int:
    opts = options_from_args(args)
    try:
        opts.check()
    except ValueError as e:
        raise DataError(str(e)) from None
    cache = args.output / "llm_cache.sqlite"
    summary = run_kpr(
        args.questions, args.output, opts, key_points=args.key_points,
        runner=lambda: llm_options.runner_from_args(args, default_cache=cache, desc="kpr"),
        judge_runner=llm_options.role_runner_factory(args, "judge", default_cache=cache,
                                                     desc="kpr judge"),
        filter_runner=llm_options.role_runner_factory(args, "filter", default_cache=cache,
                                                      desc="kpr filter"))
    print(f"{summary['n_questions']} questions, {summary['n_key_points']} key points "
          f"({summary['n_extracted']} questions extracted)")
    if summary["n_extracted"]:
        print(_pipeline_line(summary["pipeline"]))
    if not opts.extract_only:
        line = f"KPR {_fmt(summary['KPR'])}"
        if opts.precision:
            line += f"  KPP {_fmt(summary['KPP'])}  KPF {_fmt(summary['KPF'])}"
        print(f"{line}  over {summary['n_scored']} questions")
        if summary["without_key_points"]:
            print(f"{len(summary['without_key_points'])} questions without key points, left "
                  f"out of the means: {_ids(summary['without_key_points'])}")
        print(_failures_line(summary["failures"]))
        if summary["grouped"]:
            import pandas as pd

            print(printable_cells(pd.DataFrame(summary["grouped"])).to_markdown(
                index=False, floatfmt=".4f"))
    if summary["llm"] is not None:
        llm = summary["llm"]
        print(f"LLM: {llm['requests']} requests: {llm['cache_hits']} from the cache, "
              f"{llm['calls']} LLM calls, {llm['parse_failures']} parse failures")
    print(f"wrote {args.output}")
    return 0
