"""``cruxflow udcg``: UDCG scores of the contexts in a file and the correlation protocol of
Sec. 7.2 (docs/udcg.md)."""

from __future__ import annotations

import argparse
from dataclasses import fields
from fractions import Fraction
from functools import partial

from cruxflow.beyond.udcg.options import UTILITY_MODES, UdcgOptions
from cruxflow.beyond.udcg.protocol import GRADINGS
from cruxflow.beyond.udcg.run import run_udcg
from cruxflow.cli import llm_options, vocabulary
from cruxflow.data.errors import DataError

DEFAULTS = UdcgOptions()


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow udcg`` to a subparsers object."""
    p = vocabulary.command(
        subparsers, "udcg",
        description="Score contexts with UDCG (Eq. 4), optionally UDCG_theta (Eq. 3), beside "
                    "nDCG/MRR/MAP/P/Hits; with --protocol, correlate them with the LLM's "
                    "graded answers (Sec. 7.2). See docs/udcg.md.")
    add = partial(vocabulary.add, p)
    add("questions", required=True, detail="here a JSON list or JSONL of items {question, "
                                           "answers, passages}")
    add("output", required=True)
    # every option is a flag of the same name, its default UdcgOptions' (tests/test_udcg.py)
    for name in ("gamma", "utility", "no-response-token", "logprobs", "samples"):
        add(name, **_home(name))
    add("temperature", **_home("temperature"), detail="here of --utility sampling (App. D)")
    for name in ("sample-max-tokens", "given-model", "judge-relevance", "protocol", "grading",
                 "contexts-per-question", "context-size", "depth", "seed", "max-answer-tokens"):
        add(name, **_home(name))
    add("judge-max-tokens", **_home("judge-max-tokens"),
        detail="here a relevance or grading judgment, JSON with a motivation")
    add("attempts", **_home("attempts"), detail="here per relevance or grading judgment")
    g = p.add_mutually_exclusive_group()
    vocabulary.add(g, "fit-theta")
    vocabulary.add(g, "theta")
    add("theta-c", **_home("theta-c"), detail="SVM-rank's default")
    llm_options.add_llm_arguments(p)
    llm_options.add_role_arguments(p, "judge", "relevance judgments and answer grading")
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_udcg,
                   writes=("passages.jsonl", "contexts.tsv", "answers.jsonl", "correlation.tsv",
                           "summary.json", "theta.json", "llm_cache.sqlite"))
    return p


def _home(name: str) -> dict:
    """The default (and choices) of a flag from :class:`UdcgOptions`, their one home."""
    field = name.replace("-", "_")
    out: dict = {} if vocabulary.VOCABULARY[name].home is None \
        else {"default": getattr(DEFAULTS, field)}
    choices = {"utility": UTILITY_MODES, "grading": GRADINGS}.get(field)
    if choices:
        out["choices"] = choices
    if field == "gamma":
        out["default_text"] = (f"{Fraction(DEFAULTS.gamma).limit_denominator(1000)} = "
                               f"{vocabulary.show(DEFAULTS.gamma)}")
    return out


def _cmd_udcg(args) -> int:
    # every option is a flag of the same name (tests/test_udcg.py checks it)
    opts = UdcgOptions(**{f.name: getattr(args, f.name) for f in fields(UdcgOptions)})
    try:
        opts.check()
    except ValueError as e:
        raise DataError(str(e)) from None
    cache = args.output / "llm_cache.sqlite"
    judge = llm_options.role_runner_factory(args, "judge", default_cache=cache,
                                            desc="udcg judge")
    summary = run_udcg(
        args.questions, args.output, opts,
        runner=lambda: llm_options.runner_from_args(args, default_cache=cache, desc="udcg"),
        judge_runner=judge, theta=args.theta, fit_theta=args.fit_theta)
    print(format_summary(summary))
    print(f"wrote {args.output}/passages.jsonl, contexts.tsv and summary.json"
          + (", answers.jsonl and correlation.tsv" if opts.protocol else "")
          + (" and theta.json" if args.fit_theta else ""))
    return 0


def _utility_line(summary: dict) -> str:
    u = summary["utility_estimate"]
    if u["mode"] == "first-token":
        return (f"first-token: p of the token {u['token']!r}, the authors' prompt layout "
                f"(top {u['logprobs']})")
    if u["mode"] == "logprobs":
        return f"logprobs: summed mass of the first tokens of NO-RESPONSE (top {u['logprobs']})"
    if u["mode"] == "sampling":
        return f"sampling: {u['samples']} samples at temperature {u['temperature']:g}"
    return "given in the input"


def format_summary(summary: dict) -> str:
    """The aggregate as printed by ``cruxflow udcg``."""
    lines = [f"{summary['items']} questions, {summary['contexts']} contexts, "
             f"{summary['passages']} passages scored (model: {summary['model']}, "
             f"gamma = {summary['gamma']:.6g})",
             f"p(NO-RESPONSE): {_utility_line(summary)}",
             "relevance: " + ", ".join(f"{n} {k}" for k, n in
                                       sorted(summary["relevance"].items()))]
    released = summary.get("released_udcg")
    if released:
        lines.append(f"the input's released UDCG ({released['model']}): {released['items']} "
                     f"questions, largest difference {released['max_abs_difference']:.3g}")
    corr = summary.get("correlation")
    header = f"{'metric':<12}{'mean':>10}" + (f"{'spearman':>10}{'questions':>11}"
                                                f"{'(own set)':>11}" if corr else "")
    lines += ["", header]
    for m, v in summary["means"].items():
        line = f"{m:<12}{'-' if v is None else f'{v:.4f}':>10}"
        if corr:
            c = corr[m]
            rho = "-" if c["spearman"] is None else f"{c['spearman']:.4f}"
            own = ("-" if c["spearman_where_defined"] is None
                   else f"{c['spearman_where_defined']:.4f}")
            line += f"{rho:>10}{c['questions']:>11}{own:>11}"
        lines.append(line)
    if corr:
        q = summary["correlation_questions"]
        r = q["reasons"]
        lines.append(f"every metric averaged over the same {q['used']} of {q['total']} "
                     f"questions; left out: {r['grades_constant']} with one grade for all "
                     f"contexts, {r['no_relevant_passage']} without a relevant passage (IR "
                     f"metrics constant), {r['metric_constant']} with another metric constant "
                     f"(grading: {summary['grading']})")
    if "grades" in summary:
        lines.append("\nanswers: " + ", ".join(f"{n} {g}" for g, n in
                                               sorted(summary["grades"].items())))
    if "sampler" in summary:
        s = summary["sampler"]
        lines.append(f"sampler: {s.get('questions', 0)} questions, "
                     f"{s.get('unbalanced_questions', 0)} unbalanced, "
                     f"{s.get('questions_skipped_too_few_passages', 0)} skipped "
                     f"(fewer passages than the context size)")
    for key, what in (("llm", "LLM"), ("judge_llm", "judge LLM")):
        if summary.get(key):
            llm = summary[key]
            lines.append(f"{what} ({llm['model']}): {llm['requests']} requests, "
                         f"{llm['cache_hits']} from the cache, {llm['calls']} calls, "
                         f"{llm['parse_failures']} parse failures")
    return "\n".join(lines)
