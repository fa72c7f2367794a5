"""``cruxflow udcg``: UDCG scores of the contexts in a file and the correlation protocol of
Sec. 7.2 (docs/udcg.md)."""

from __future__ import annotations

import argparse
from dataclasses import fields
from fractions import Fraction
from pathlib import Path

from cruxflow.beyond.udcg.options import UTILITY_MODES, UdcgOptions
from cruxflow.beyond.udcg.protocol import GRADINGS
from cruxflow.beyond.udcg.run import run_udcg
from cruxflow.cli import args as types
from cruxflow.cli import llm_options
from cruxflow.data.errors import DataError

DEFAULTS = UdcgOptions()


def _fraction(text: str) -> float:
    try:
        return float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a number or fraction: {text!r}") from None


def add_command(subparsers) -> argparse.ArgumentParser:
    """Add ``cruxflow udcg`` to a subparsers object."""
    p = subparsers.add_parser(
        "udcg", help="UDCG (Trappolini et al. 2025): utility- and distraction-aware scores of "
                     "retrieved contexts, and their correlation with RAG answers",
        description="Score contexts with UDCG (Eq. 4), optionally UDCG_theta (Eq. 3), beside "
                    "nDCG/MRR/MAP/P/Hits; with --protocol, correlate them with the LLM's "
                    "graded answers (Sec. 7.2). See docs/udcg.md.")
    p.add_argument("--input", required=True, type=Path,
                   help="JSON list or JSONL of items {question, answers, passages}")
    p.add_argument("--output", required=True, type=types.output_dir,
                   help="directory for the results")
    p.add_argument("--gamma", type=_fraction, default=DEFAULTS.gamma,
                   help="weight of the distracting effect in Eq. 4 (default "
                        f"{Fraction(DEFAULTS.gamma).limit_denominator(1000)})")
    p.add_argument("--utility", choices=UTILITY_MODES, default=DEFAULTS.utility,
                   help="p(NO-RESPONSE): the probability of the first token of NO-RESPONSE "
                        "with the authors' prompt layout (first-token, default), the summed "
                        "mass of the first tokens that begin it with Fig. 4's prompt "
                        "(logprobs), by sampling (App. D), or given in the input's "
                        "models_info")
    p.add_argument("--no-response-token", default=DEFAULTS.no_response_token,
                   help="with first-token: the first token of the encoded NO-RESPONSE "
                        f"(default {DEFAULTS.no_response_token!r}; ' NO' for a SentencePiece "
                        "tokenizer with a dummy prefix)")
    p.add_argument("--logprobs", type=int, default=DEFAULTS.logprobs,
                   help=f"top first-token alternatives asked for (default {DEFAULTS.logprobs})")
    p.add_argument("--samples", type=int, default=DEFAULTS.samples,
                   help=f"samples per passage with --utility sampling (default {DEFAULTS.samples})")
    p.add_argument("--temperature", type=float, default=DEFAULTS.temperature,
                   help=f"their temperature (default {DEFAULTS.temperature})")
    p.add_argument("--sample-max-tokens", type=int, default=DEFAULTS.sample_max_tokens,
                   help=f"tokens per sampled answer (default {DEFAULTS.sample_max_tokens})")
    p.add_argument("--given-model", default=DEFAULTS.given_model,
                   help="models_info key with --utility given (default: the only model in the "
                        "file)")
    p.add_argument("--judge-relevance", action="store_true", default=DEFAULTS.judge_relevance,
                   help="judge passages without a relevance label with the LLM (Fig. 5)")
    p.add_argument("--protocol", action="store_true", default=DEFAULTS.protocol,
                   help="run the correlation protocol of Sec. 7.2 on the input")
    p.add_argument("--grading", choices=GRADINGS, default=DEFAULTS.grading,
                   help="ideal grades of the protocol: Sec. 6.2's rule (context-aware, "
                        "default: a correct answer from a context without a relevant passage "
                        "is partially correct) or the grader's grade alone (answer-only)")
    p.add_argument("--contexts-per-question", type=int, default=DEFAULTS.contexts_per_question,
                   help="contexts sampled per question by --protocol "
                        f"(default {DEFAULTS.contexts_per_question})")
    p.add_argument("--context-size", type=int, default=DEFAULTS.context_size,
                   help=f"passages per context (default {DEFAULTS.context_size})")
    p.add_argument("--depth", type=int, default=DEFAULTS.depth,
                   help="the protocol samples from each question's first DEPTH passages "
                        f"(default {DEFAULTS.depth})")
    p.add_argument("--seed", type=types.non_negative_int, default=DEFAULTS.seed,
                   help=f"seed of the context sampler (default {DEFAULTS.seed})")
    p.add_argument("--max-answer-tokens", type=int, default=DEFAULTS.max_answer_tokens,
                   help="tokens of the LLM's answer to a context with --protocol "
                        f"(default {DEFAULTS.max_answer_tokens})")
    p.add_argument("--judge-max-tokens", type=int, default=DEFAULTS.judge_max_tokens,
                   help="tokens for a relevance or grading judgment (JSON with a motivation; "
                        f"default {DEFAULTS.judge_max_tokens})")
    p.add_argument("--judge-attempts", type=int, default=DEFAULTS.judge_attempts,
                   help="asks per judgment when the output cannot be parsed "
                        f"(default {DEFAULTS.judge_attempts})")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--fit-theta", type=Path, metavar="TRAIN_FILE",
                   help="run the protocol on TRAIN_FILE, fit UDCG_theta's weights (written to "
                        "OUTPUT/theta.json) and score the input with them too")
    g.add_argument("--theta", type=Path, metavar="WEIGHTS_JSON",
                   help="UDCG_theta weights from an earlier --fit-theta")
    p.add_argument("--theta-c", type=float, default=DEFAULTS.theta_c,
                   help=f"SVM-rank's C for --fit-theta (default {DEFAULTS.theta_c}, SVM-rank's "
                        "default)")
    llm_options.add_llm_arguments(p)
    llm_options.add_role_arguments(p, "judge", "relevance judgments and answer grading")
    # what --output gets, so an input there under one of these names is refused before any work
    p.set_defaults(func=_cmd_udcg,
                   writes=("passages.jsonl", "contexts.tsv", "answers.jsonl", "correlation.tsv",
                           "summary.json", "theta.json", "llm_cache.sqlite"))
    return p


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
        args.input, args.output, opts,
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
