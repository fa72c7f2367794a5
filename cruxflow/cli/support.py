"""``cruxflow support``: TREC 2024 RAG support evaluation of cited answers (docs/support.md)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from cruxflow.beyond.support import (
    AVERAGES,
    JUDGE_MODES,
    PROMPTS,
    RETRY_TEMPERATURE,
    SupportOptions,
    evaluate_support,
)
from cruxflow.cli import args as types
from cruxflow.cli import llm_options
from cruxflow.data.errors import DataError
from cruxflow.llm import LLMRunner

DEFAULTS = SupportOptions()   # every option's default, as the library declares it


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow support`` to an argparse ``subparsers``."""
    p = subparsers.add_parser(
        "support", help="support of RAG answers by their citations (TREC 2024 RAG Track)",
        description="Weighted precision and recall of cited RAG answers from given support "
                    "labels or an LLM judge, per topic and run, and agreement between two "
                    "label sets (Thakur et al., SIGIR 2025). See docs/support.md.")
    p.add_argument("--input", required=True, type=Path,
                   help="answers JSONL (TREC 2024 RAG format or topic_id/run_id/sentences), "
                        "optionally with inline 'support' labels")
    p.add_argument("--output", required=True, type=types.output_dir,
                   help="directory for the results")
    p.add_argument("--labels", type=Path,
                   help="labels kept apart (TSV or JSONL: topic_id run_id sentence_index "
                        "passage_id label); they win over inline labels")
    p.add_argument("--passages", type=Path,
                   help="passage texts for the judge: a JSONL file (id/docid + "
                        "contents/segment/text) or a pyserini Lucene index directory")
    p.add_argument("--judge", nargs="?", const="missing", choices=JUDGE_MODES,
                   default=DEFAULTS.judge,
                   help="judge with the LLM the cited pairs without a label (--judge, "
                        "--judge missing) or all of them (--judge all); default: no LLM")
    p.add_argument("--all-citations", action="store_true", default=DEFAULTS.all_citations,
                   help="score every citation of a sentence (default: the first only, as "
                        "the track did)")
    p.add_argument("--topics", type=Path,
                   help="the track's topics (one id per line, a topics TSV or JSONL); "
                        "default: every topic in --input")
    p.add_argument("--average", choices=AVERAGES, default=DEFAULTS.average,
                   help="per-run mean over all topics, a missing topic counting 0 (the "
                        "track's convention), or over the run's own topics")
    p.add_argument("--compare", type=Path,
                   help="a second label set for the same answers (answers JSONL with inline "
                        "labels, a label file, or a labels.jsonl written here): confusion "
                        "matrix, agreement, Cohen's kappa, Kendall's tau of the run rankings")
    p.add_argument("--prompt", choices=PROMPTS, default=DEFAULTS.prompt,
                   help="the judge's prompt: the track's GPT-4o support prompt (trec2024, "
                        "default) or ours (cruxflow-v1)")
    p.add_argument("--temperature", type=float, default=DEFAULTS.temperature,
                   help=f"the judge's sampling temperature (default {DEFAULTS.temperature}, "
                        "the track's)")
    p.add_argument("--attempts", type=int, default=DEFAULTS.attempts,
                   help="asks per judge output that cannot be parsed, each with the next seed "
                        "(at temperature 0 the retries sample at "
                        f"{RETRY_TEMPERATURE}; default {DEFAULTS.attempts})")
    p.add_argument("--bootstrap", type=int, default=DEFAULTS.bootstrap,
                   help="topic resamples for the intervals of the Kendall taus of --compare "
                        f"(default {DEFAULTS.bootstrap}; 0: none)")
    p.add_argument("--max-passage-words", type=int, default=DEFAULTS.max_passage_words,
                   help="the judge sees a passage's first N words (default "
                        f"{DEFAULTS.max_passage_words})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
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
        args.input, args.output, options_from_args(args), labels=args.labels,
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
