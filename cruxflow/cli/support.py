"""``cruxflow support``: TREC 2024 RAG support evaluation of cited answers (docs/support.md)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from functools import partial

from cruxflow.beyond.support import (
    AVERAGES,
    JUDGE_MODES,
    PROMPTS,
    RETRY_TEMPERATURE,
    SupportOptions,
    evaluate_support,
)
from cruxflow.cli import llm_options, vocabulary
from cruxflow.data.errors import DataError
from cruxflow.llm import LLMRunner

DEFAULTS = SupportOptions()   # every option's default, as the library declares it


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow support`` to an argparse ``subparsers``."""
    p = vocabulary.command(
        subparsers, "support",
        description="Weighted precision and recall of cited RAG answers from given support "
                    "labels or an LLM judge, per topic and run, and agreement between two "
                    "label sets (Thakur et al., SIGIR 2025). See docs/support.md.")
    add = partial(vocabulary.add, p)
    add("answers", required=True)
    add("output", required=True)
    add("labels", single=True, metavar="FILE")
    add("passages", detail="here the cited passages' texts, for the judge")
    add("judge-pairs", choices=JUDGE_MODES, default=DEFAULTS.judge_pairs)
    add("all-citations")
    add("topics", default=None, default_text="every topic in --answers",
        detail="here the track's")
    add("average", choices=AVERAGES, default=DEFAULTS.average)
    add("compare")
    add("prompt", choices=PROMPTS, default=DEFAULTS.prompt)
    add("temperature", default=DEFAULTS.temperature,
        detail="here the judge's; the default is the track's")
    add("attempts", default=DEFAULTS.attempts,
        detail=f"here each with the next seed (at temperature 0 the retries sample at "
               f"{RETRY_TEMPERATURE})")
    add("bootstrap", default=DEFAULTS.bootstrap, detail="here for the intervals of "
                                                        "--compare's Kendall taus")
    add("max-passage-words", default=DEFAULTS.max_passage_words)
    add("json", detail="here the summary")
    llm_options.add_llm_arguments(p)
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_support,
                   writes=("labels.jsonl", "per_topic.tsv", "per_run.tsv", "agreement.json",
                           "summary.json", "llm_cache.sqlite"))
    return p


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def _tau(level: dict) -> str:
    if level.get("low") is None:
        return _fmt(level["tau"])
    return f"{_fmt(level['tau'])} [{level['low']:.3f}, {level['high']:.3f}]"


def options_from_args(args) -> SupportOptions:
    """The :class:`SupportOptions` given on the command line (each field is an argument of
    the same name); an invalid value is a :class:`DataError`."""
    opts = SupportOptions(**{f.name: getattr(args, f.name)
                             for f in dataclasses.fields(SupportOptions)})
    try:
        opts.check()
    except ValueError as e:
        raise DataError(str(e)) from None
    return opts


def _cmd_support(args) -> int:
    def factory() -> LLMRunner:
        return llm_options.runner_from_args(args, default_cache=args.output / "llm_cache.sqlite",
                                            desc="support")

    summary = evaluate_support(
        args.answers, args.output, options_from_args(args), labels=args.labels,
        passages=args.passages, topics=args.topics, compare=args.compare, runner=factory)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{'run':<24} {'w. precision':>12} {'w. recall':>10} {'topics':>7}")
    for r in summary["per_run"]:
        print(f"{r['run_id']:<24} {_fmt(r['weighted_precision']):>12} "
              f"{_fmt(r['weighted_recall']):>10} {r['topics_answered']:>7}")
    mean = summary["mean_over_runs"]
    print(f"{'(mean over runs)':<24} {_fmt(mean['weighted_precision']):>12} "
          f"{_fmt(mean['weighted_recall']):>10}")
    lc = summary["label_counts"]
    print(f"\n{summary['runs']} runs, {summary['answers']} answers, {summary['topics']} topics "
          f"(average {summary['average']}, {summary['citations']} citation per sentence"
          f"{'s' if summary['citations'] == 'all' else ''}); labels: FS {lc['FS']}, "
          f"PS {lc['PS']}, NS {lc['NS']}, not judged {lc['not_judged']}, "
          f"{lc['uncited_sentences']} sentences without citation (NS)")
    short = [r["run_id"] for r in summary["per_run"]
             if r["topics_answered"] < summary["topics"]]
    if short and args.average == "over-all-topics":
        print(f"{len(short)} runs answer fewer than the {summary['topics']} topics "
              f"({', '.join(short[:5])}{', ...' if len(short) > 5 else ''}): a missing topic "
              "counts 0")
    if summary["topics_without_answers"] and args.average == "over-all-topics":
        print(f"{len(summary['topics_without_answers'])} topics without any answer count 0 "
              "for every run")
    if summary["answers_outside_topics"]:
        print(f"{summary['answers_outside_topics']} answers for topics outside --topics "
              "were left out of the per-run means")
    if "agreement" in summary:
        ag = summary["agreement"]
        rows = ag["rows"]
        print(f"agreement with {args.compare}: {ag['n']} pairs, exact "
              f"{_fmt(ag['exact_agreement'])}, Cohen's kappa {_fmt(ag['cohen_kappa'])}; "
              f"{rows['paired']} (topic, run) rows in both ({rows['input']} in the input, "
              f"{rows['compare']} in the other), {ag['topics']} topics")
        print(f"{'Kendall tau':<22}{'run level [95% CI]':<27}{'topic average [95% CI]':<27}"
              "all rows")
        for metric, tau in ag["kendall_tau"].items():
            print(f"  {metric.replace('_', ' '):<20}{_tau(tau['run_level']):<27}"
                  f"{_tau(tau['topic_average']):<27}{_fmt(tau['all_paired_rows']['tau'])}")
    if summary["llm"] is not None:
        s = summary["llm"]
        print(f"LLM: {s['requests']} requests: {s['cache_hits']} from the cache, "
              f"{s['calls']} LLM calls, {s['parse_failures']} parse failures")
    files = ["labels.jsonl", "per_topic.tsv", "per_run.tsv", "summary.json"]
    if "agreement" in summary:
        files.append("agreement.json")
    print(f"wrote {', '.join(str(args.output / f) for f in files)}")
    return 0
