"""Every flag of every ``cruxflow`` command, declared once (:class:`~.flags.Flag`): its one
meaning, its grammar and its default (or the one place that holds it); and the groups of flags
that several commands add together (the paired tests, a format's options of reading)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.cli.vocabulary.flags import VOCABULARY, Flag, add, register, show
from cruxflow.data.ingest import formats as ingest_formats
from cruxflow.data.merge import DEFAULT_MERGE, MERGE_RULES
from cruxflow.data.names import NAME_PATTERN
from cruxflow.metrics.options import DEFAULTS, RELEVANCE_GRADES
from cruxflow.metrics.policy import CORRECTIONS, POLICY, TESTS
from cruxflow.stages.holes import RATING_PROMPTS

PAIRED_HOME = "cruxflow.metrics.policy.POLICY"
TRAINING_HOME = "cruxflow.data.training.TevatronOptions"
NO_TEST = "none"     # --test none: compare nothing
# a folder or file of the inputs may be a fetched set's name (or a path inside one)
_PATH, _NAMED_PATH = types.release_path, types.named_release_path
count = types.count   # a count's argument type, its bounds those of cruxflow/data/limits.py


def _flags(*flags: Flag) -> None:
    for f in flags:
        register(f)


# --- inputs: what a command reads ------------------------------------------------------------
_flags(
    Flag("dataset", "a prepared dataset directory (topics.jsonl, passages/, answerability.jsonl, "
                    "as `cruxflow ingest` or the workflow writes it)", type=_PATH, metavar="DIR",
         default_text="none"),
    Flag("run", "TREC run files, `qid Q0 passage rank score tag`, scored in one call; NAME=PATH "
         "names one (else the file name without its last suffix; two of one name refused)",
         type=_NAMED_PATH, nargs="+", action="extend", metavar="RUN", default_text="none",
         single="a TREC run file, `qid Q0 passage rank score tag`"),
    Flag("contexts", 'contexts to score: JSONL, one line per topic, {"topic_id": ..., "passages": '
                     '[ids, best first]} ("context" is accepted for "passages"); several as --run',
         type=Path, nargs="+", action="extend", metavar="FILE", default_text="none"),
    Flag("questions", "the questions to score, one record per question with what the metric "
                      "needs (its format: the command's docs page)", type=Path, metavar="FILE",
         short="the questions file of udcg and kpr"),
    Flag("answers", "RAG answers with citations: JSONL, one (topic, run) answer per line (the "
                    "TREC 2024 RAG format, or topic_id/run_id/sentences), optionally with inline "
                    "'support' labels", type=Path, metavar="FILE"),
    Flag("input", "the raw corpus to read (topics with their documents; its layout is the "
                  "format's)", metavar="PATH",
         short="the raw corpus that ingest reads"),
    Flag("judge", "the judge's 0-5 answerability ratings of (passage, question) pairs: files or "
         "folders in any ratings layout (a release's judge/, answerability.jsonl)", type=_PATH,
         nargs="+", action="extend", metavar="PATH", default_text="none",
         short="the judge's answerability ratings"),
    Flag("judge-reports", "the judge's ratings of generated reports (results/rag/.../ratings/"
         "<system>.k<k>.jsonl), a file a system: SYSTEM= names it", nargs="+",
         metavar="[SYSTEM=]PATH", default_text="none"),
    Flag("human", "annotators' labels, NAME=PATH each (else the file name without its last "
         "suffix): the labeling tool's or annotate's exports, ratings in any layout", nargs="+",
         type=_NAMED_PATH, metavar="[NAME=]PATH", default_text="none",
         short="the annotators' labels"),
    Flag("human-reports", "annotators' labels of RAG reports (the paper's Task 1), NAME=PATH each "
         "(else the file name without its last suffix)", nargs="+", metavar="[NAME=]PATH",
         type=_NAMED_PATH,
         default_text="none"),
    Flag("judge-values", "a judge's value of every item: TSV item<TAB>value (e.g. a run's "
         "per-topic Cov@10)", metavar="J.tsv"),
    Flag("human-values", "human values of some items: TSV item<TAB>value, the items a subset of "
         "--judge-values'", metavar="H.tsv"),
    Flag("qrel", "the CRUX authors' diversity qrels, e.g. $CRUX_ROOT/crux-mds-duc04/qrels/"
                 "div_qrels-tau3.txt", type=_PATH, metavar="FILE", default_text="none"),
    Flag("crux-root", "a CRUX release subset folder (crux-mds-duc04): its qrels/ and judge/ for "
                      "the authors' script, and the dataset they make when the passage texts "
                      "are known", type=_PATH, metavar="DIR", default_text="none"),
    Flag("judgments", "a judgments.jsonl to use instead of deriving the judgments from the "
                      "dataset's ratings (derived with --eta: another eta is an error)",
         type=_PATH, metavar="FILE", default_text="derived from the dataset's ratings"),
    Flag("against", "judgments as cruxflow.evaluate reads them, scored with --measures: a fetched "
                    "set's name, a release subset, a judge folder, relevance=QRELS", metavar="J",
         default_text="none"),
    Flag("measures", "measures as cruxflow.evaluate names them (Cov@10, nDCG@10, ...)", nargs="+",
         metavar="NAME", default_text="cruxflow.evaluate's"),
    Flag("list", "list the registered sets, their sizes and what is cached", action="store_true"),
    Flag("pin", "pin a set the registry leaves unpinned from the hub's listing, then fetch it",
         action="store_true"),
    Flag("collection", "the passage texts of a corpus: a JSONL file (id/_id, contents/text; a "
                       "JsonCollection) or a folder of them (passages.jsonl)", type=_PATH,
         metavar="PATH", default_text="none",
         short="a passage corpus"),
    Flag("passages", "passage texts: a JSONL file (id/docid + contents/segment/text) or a "
                     "pyserini Lucene index directory", type=Path, metavar="PATH",
         default_text="none",
         short="a file of passage texts"),
    Flag("token-counts", "token counts of passages: TSV passage<TAB>tokens or JSONL {id, tokens}",
         type=Path, metavar="FILE", default_text="none"),
    Flag("labels", "label sets, NAME=PATH each (a file or folder, or a fetched set's name such "
         "as trec-rag25): TREC qrels, ratings, report or support labels, nugget assignments",
         nargs="+", metavar="[NAME=]PATH", single_type=Path,
         default_text="none", single="support labels kept apart from the answers (TSV or JSONL: "
         "topic_id run_id sentence_index passage_id label); they win over inline labels"),
    Flag("leaderboard", "leaderboards, NAME=PATH each (a file, or a folder of a file a system): "
         "trec_eval -q, ir_measures, autojudge-evaluate's or run<TAB>score lines", nargs="+",
         metavar="[NAME=]PATH", default_text="none"),
    Flag("compare", "a second label set for the same answers (answers JSONL with inline labels, "
                    "a label file, or a labels.jsonl written by support): confusion matrix, "
                    "agreement, Cohen's kappa, Kendall's tau of the run rankings", type=Path,
         metavar="FILE", default_text="none"),
    Flag("topics", "the topics to score over: one id per line, a topics TSV or JSONL",
         type=Path, metavar="FILE", home="the command"),
    Flag("key-points", "key_points.jsonl of an earlier run (e.g. --extract-only): its key points "
                       "are used for the same ids, nothing is extracted for them", type=Path,
         metavar="FILE", default_text="none"),
    Flag("reports", "RAG reports (rule rag_generate's JSONL: topic_id, system, report); the "
                    "system is the record's, else SYSTEM=, else the file name up to its first "
                    "dot", nargs="+", metavar="[SYSTEM=]FILE", default_text="none",
         short="a file of RAG reports"),
    Flag("config", "a workflow config.yaml", type=Path, metavar="FILE", home="the command"),
    Flag("tokenizer", "a local tokenizer.json (or a directory holding one) to count tokens with",
         metavar="PATH", default_text="the regex counter"),
)

# --- outputs ----------------------------------------------------------------------------------
_flags(
    Flag("output", "the directory the command writes its files to (made if missing; a file is "
                   "refused)", type=types.output_dir, metavar="DIR", default_text="none"),
    Flag("json", "print the result as JSON to standard output, instead of the table",
         action="store_true"),
)

# --- what the metrics are told -----------------------------------------------------------------
_flags(
    Flag("eta", "answerability threshold: the rating (1-5) from which a passage answers a "
                "question", type=types.eta, metavar="ETA", default=DEFAULTS.eta),
    Flag("alpha", "alpha-nDCG's redundancy penalty, 0..1", type=types.unit_interval,
         metavar="ALPHA", default=DEFAULTS.alpha,
         short="alpha-nDCG's redundancy penalty"),
    Flag("density-weight", "the exponent w of Den (Eq. 6)", type=types.non_negative,
         metavar="W", default=DEFAULTS.density_weight),
    Flag("relevance-grades", "nDCG's grades: 2-1 is P** 2, the rest of P* 1; 3-2-1 the CRUX "
                             "authors' P** 3, passages dominated by P** 1, the rest of P* 2",
         choices=tuple(sorted(RELEVANCE_GRADES)), default=DEFAULTS.relevance_grades),
    Flag("k", "context sizes k, separated by spaces: 'oracle' (|Z*|), 'all' (each list as "
              "given) or a positive integer", type=types.context_sizes, nargs="+",
         action=types.ContextSizes, metavar="K", home="the command",
         short="the context sizes k"),
    Flag("filter-by-oracle", "the CRUX authors' Cov@k counts only the questions some judged "
                             "passage of the topic answers", action="store_true",
         spellings=("--filter_by_oracle",)),
    Flag("run-b", "one more run (the authors' script's spelling): the same as a second --run",
         type=Path, metavar="RUN", spellings=("--run_b",), default_text="none"),
    Flag("run-name", "the run's name in the tables (one run; several are named by their file "
                     "names)", metavar="NAME", default_text="the file stem"),
    Flag("strict-collection", "refuse a run that ranks a passage outside the passage "
                              "collection (else it counts as an unjudged passage, rated 0, with "
                              "a warning)", action="store_true"),
    Flag("allow-empty", "go on with an empty input (no topic, an empty run or contexts file) "
                        "instead of failing", action="store_true"),
    Flag("authors-line", "print only the authors' script's own line per run (its names: "
                         "P@10 ...), to diff against its output", action="store_true"),
)

# --- statistics --------------------------------------------------------------------------------
_flags(
    # the paired tests between runs: choices and defaults are the policy's (POLICY); the
    # commands add them with add_paired_options (below)
    Flag("test", "the paired test between every pair of runs: " + "; ".join(
        f"{name}, the {what}" for name, what in TESTS.items()) + f"; or {NO_TEST}",
         home=PAIRED_HOME),
    Flag("correction", "the multiple-testing correction over the pairs of each measure: "
                       + ", ".join(name if what.lower() == name else f"{name} ({what})"
                                   for name, what in CORRECTIONS.items() if name != "none")
                       + ", or none", home=PAIRED_HOME),
    Flag("resamples", "randomization test resamples (exact when 2^topics is fewer)",
         type=count("resamples"), metavar="N", home=PAIRED_HOME),
    Flag("seed", "the seed of the command's random draws", type=count("seed"),
         metavar="SEED", default=0, home="the command"),
    Flag("bootstrap", "bootstrap resamples over topics (0: no interval)",
         type=count("bootstrap"), metavar="N", default=1000, home="the command"),
    Flag("confidence", "the confidence level of an interval: it covers the true value with this "
         "probability", type=types.open_unit_interval, metavar="LEVEL", default=0.95),
    Flag("merge", "how annotators' labels of an item become one: mean (rounded half up), majority "
         "(lower median), min, max: ingest's rule", default=DEFAULT_MERGE, choices=(*MERGE_RULES,)),
    Flag("threshold", "the grade from which a label is positive (answerable, relevant) for kappa, "
         "confusion, precision/recall", type=types.grade, metavar="GRADE",
         default_text="--eta for answerability ratings, 1 for other grades"),
    Flag("measure", "measure names of the engine's registry (docs/evaluate.md), or a "
         "leaderboard's", nargs="+", metavar="NAME", home="the command"),
    Flag("top", "the k of the top-k overlap of two rankings", type=count("top"),
         metavar="K", default=5),
    Flag("method", "ppi: classic prediction-powered inference (lambda 1); ppi++: lambda tuned "
         "to the data, never wider than the human-only interval asymptotically",
         choices=("ppi", "ppi++"), default="ppi"),
)

# The paired tests of evaluate and crux-eval with several runs: flags and defaults come from
# the paired-test policy (cruxflow.metrics.policy), so that the CLI's are the API's and the
# workflow's.
def add_paired_options(parser) -> None:
    """``--test``, ``--correction``, ``--resamples``, ``--seed``: the paired tests between
    every pair of runs, one group of the vocabulary's flags with the choices and defaults of
    :data:`cruxflow.metrics.policy.POLICY`."""
    group = parser.add_argument_group("paired tests between every pair of runs (several runs)")
    add(group, "test", choices=[*TESTS, NO_TEST], default=POLICY.test)
    add(group, "correction", choices=list(CORRECTIONS), default=POLICY.correction)
    add(group, "resamples", default=POLICY.resamples)
    add(group, "seed", default=POLICY.seed, detail="here the randomization test's")


def paired_policy(args):
    """The policy the paired-test flags ask for; ``None`` for ``--test none``."""
    if args.test == NO_TEST:
        return None
    return POLICY.with_(test=args.test, correction=args.correction,
                          resamples=args.resamples, seed=args.seed)


# --- ingest, init, export ----------------------------------------------------------------------
_flags(
    Flag("format", "the data format the command reads (ingest, agreement) or writes (export)",
         home="the command"),
    Flag("collection-name", "the test collection's name written into the exported records "
                            "(NuggetBank's test_collection, Tevatron's source)",
         type=types.name, metavar="NAME", default_text="the dataset folder's name"),
    Flag("positive-depth", "positives are taken from each topic's first N passages of the run",
         type=count("positive-depth"), metavar="N", home=TRAINING_HOME),
    Flag("negative-depth", "negatives are taken from each topic's passages after the first N "
                           "of the run", type=count("negative-depth"), metavar="N",
         home=TRAINING_HOME),
    Flag("negatives", "the negatives a training row is padded to with deep ones",
         type=count("negatives"), metavar="N", home=TRAINING_HOME),
    Flag("dataset-name", "the dataset's name in the workflow (its output paths) and its "
                         "distractors' prefix", type=types.name, metavar="NAME",
         default="own"),
    Flag("n-questions", "sub-questions to generate per topic", type=count("n-questions"),
         metavar="N", default_text="10, as for Multi-News"),
    Flag("example", "copy the shipped example corpus (excerpts of the US Constitution) to "
                    "DIR/data and use it", action="store_true"),
    Flag("workflow", "the cruxflow checkout whose Snakefile and config.yaml to use", type=Path,
         metavar="DIR", home="the command"),
    Flag("force", "overwrite an existing config.yaml", action="store_true"),
    Flag("prompt-cache", "reuse the KV cache of a shared prompt prefix for the one-token ratings "
                         "(llama.cpp's backends): 7-9x faster ratings on a CPU, but a near tie "
                         "can then be rated differently after an interrupted run is resumed, so "
                         "the results are no longer byte-identical to an uninterrupted run's "
                         "(off by default)", action="store_true"),
    Flag("workdir", "the workflow's working directory: the config's relative paths and "
                    "results/", type=Path, metavar="DIR", default=Path(".")),
)

# --- ingest: the format registry's options ----------------------------------------------------

# Every option of reading a corpus is declared once, with its help, kind, default and formats, in
# the format registry (cruxflow.data.ingest.formats), its flag here from there. Options that are
# flags of other commands keep the vocabulary's meaning (and their kind's grammar).
INGEST_HOME = "cruxflow.data.ingest.formats.IngestOptions"
SHARED_OPTIONS = ("collection", "judge", "strict-collection", "allow-empty")

# how each kind of option is read from the command line
_KINDS = {
    "text": {}, "choice": {},
    "encoding": {"type": types.encoding, "metavar": "NAME"},
    "count": {"metavar": "N"}, "flag": {"action": "store_true"},   # a count's type: its own
    "path": {"type": _PATH, "metavar": "PATH"},
    "paths": {"type": _PATH, "nargs": "+", "action": "extend", "metavar": "PATH"},
}


def option_flag(name: str) -> str:
    """An option's flag name: ``max_topics`` -> ``max-topics``."""
    return name.replace("_", "-")


def option_help(name: str) -> str:
    """An option's help as the command line says it (other options named as flags)."""
    return ingest_formats.describe(name, lambda other: "--" + option_flag(other))


def option_default_text(name: str) -> str:
    """An option's default as the help shows it: the registry's words, else its value."""
    spec = ingest_formats.options()[name]
    if spec.default_help is not None:
        return spec.default_help
    return "off" if spec.kind == "flag" else show(ingest_formats.defaults()[name])


def _register_ingest_options() -> None:
    for name, spec in ingest_formats.options().items():
        grammar = {**_KINDS[spec.kind], **({"type": count(name)} if spec.kind == "count" else {})}
        if spec.pattern == NAME_PATTERN:
            grammar["type"] = types.name       # the name rule, whose pattern the registry's is
        elif spec.pattern is not None:
            raise ValueError(f"{name}: no argparse type checks the pattern {spec.pattern}")
        if option_flag(name) in SHARED_OPTIONS:
            flag = VOCABULARY[option_flag(name)]
            if any(getattr(flag, k) != v for k, v in grammar.items() if k != "metavar"):
                raise ValueError(f"--{flag.name}: the vocabulary's grammar is not the format "
                                 f"registry's ({spec.kind})")
            continue
        register(Flag(option_flag(name), option_help(name), choices=spec.choices or None,
                      home=INGEST_HOME,
                      default_text=None if spec.kind == "flag" else option_default_text(name),
                      **grammar))


_register_ingest_options()

# --- annotate ----------------------------------------------------------------------------------
_flags(
    Flag("task", "the annotation task: ratings (0-5 answerability of passage-question pairs on "
                 "the judge's rubric) or reports (which sub-questions a RAG report answers)",
         choices=("ratings", "reports"), default_text="the database's"),
    Flag("annotators", "annotator names, separated by spaces", type=types.annotators,
         nargs="+", action=types.Annotators, metavar="NAME", default_text="the database's"),
    Flag("overlap", "how many annotators label each item: items labelled by several give the "
                    "kappa", type=count("overlap"), metavar="N",
         default_text="2, or 1 for one annotator"),
    Flag("sample", "annotate N (passage, question) pairs (ratings) or N reports, drawn with "
                   "--seed", type=count("sample"), metavar="N", default_text="all"),
    Flag("uncertain-share", "ratings: draw this share of the sample from the pairs the judge "
                            "rated 2-4 (its uncertain ratings), the rest from the others",
         type=types.unit_interval, metavar="F", default_text="none: a plain random sample"),
    Flag("for-ppi", "ratings: draw the --sample uniformly within each topic, topics in "
                    "proportion to their pairs: the sample `cruxflow ppi` needs "
                    "(docs/judge-trust.md)", action="store_true"),
    Flag("db", "the annotation database (SQLite); an existing one resumes", type=Path,
         metavar="FILE", default_text="annotate-<task>.sqlite"),
    Flag("review", "show the judge's ratings beside the human ones, for correction (labels "
                   "given then are marked as reviewed)", action="store_true"),
    Flag("show-system", "reports: name the system that wrote each report (hidden by default, so "
                        "that it cannot sway the labels; for review)", action="store_true"),
    Flag("export", "write the labels to DIR (report_labels.jsonl or passage_ratings.jsonl, and "
                   "a summary) and exit", type=Path, metavar="DIR", default_text="none: serve"),
    Flag("host", "the address to listen on (127.0.0.1: this machine only)",
         default="127.0.0.1"),
    Flag("port", "the port to listen on",
         type=types.port, metavar="PORT", home="the command"),
)

# --- judge: the holes in the judgments (cruxflow.stages.holes) --------------------------------
_flags(
    Flag("shard", "do shard I of N only (0-based; cut by topic, balanced by the pairs to rate)",
         type=types.shard, metavar="I/N", default_text="all of it"),
    Flag("rating-prompt", "the judge's prompt: dataset (the dataset's own, Fig. 8 in "
         "llm.ratings' layout and decoding) or augmentation (the CRUX authors' prompt for "
         "unjudged passages)", choices=RATING_PROMPTS, default=RATING_PROMPTS[0]),
)

# --- the LLM: which model, how it is called ----------------------------------------------------
_flags(
    Flag("model", "the LLM: a GGUF path or package:<module>/<file> for llama.cpp, or the served "
                  "model's name with --base-url", metavar="MODEL", home="the command"),
    Flag("base-url", "an OpenAI-compatible server, e.g. http://host:8000/v1", type=types.base_url,
         metavar="URL", default_text="none: llama.cpp in process"),
    Flag("api-key-env", "the environment variable holding the key for --base-url",
         metavar="NAME", default="OPENAI_API_KEY"),
    Flag("endpoint", "the API a model is called through: chat (messages, the chat template) or "
                     "completion (the raw prompt)", choices=("chat", "completion"),
         default="chat"),
    Flag("backend", "an LLM backend, by its name in a workflow config's llm.backends",
         metavar="NAME", home="the command"),
    Flag("cache", "the LLM call cache (one SQLite file)", type=Path, metavar="FILE",
         default_text="llm_cache.sqlite in --output, or the config's llm.cache with --config"),
    Flag("threads", "CPU threads for llama.cpp", type=count("threads"), metavar="N",
         default=os.cpu_count() or 1, default_text=f"the CPU count, here {os.cpu_count() or 1}"),
    Flag("n-ctx", "llama.cpp's context window (per slot when serving)", type=count("n-ctx"),
         metavar="TOKENS", default=4096),
    Flag("timeout", "the time one attempt at a request may take on the wall clock: connecting, "
                    "sending and the whole answer", type=types.positive_number,
         metavar="SECONDS", default_text="300"),
    Flag("deadline", "the time one request may take in all: every attempt and every wait "
                     "between them, a server's Retry-After included", type=types.positive_number,
         metavar="SECONDS", default_text="what the attempts and their backoffs can take"),
    Flag("max-retries", "retries of a request after a timeout, a connection error, 429 or 5xx, "
                        "each logged with its reason and wait", type=count("max-retries"),
         metavar="N", default_text="5"),
    Flag("constrain", "how the server takes a constrained choice (the 0-5 ratings): vllm's "
                      "structured_outputs, a llama.cpp grammar, or none",
         home="cruxflow.llm.openai_compat.CONSTRAINTS", default_text="none"),
    Flag("model-revision", "a fingerprint of the weights (commit hash, file checksum) kept in the "
                           "cache key, so another model served under the same --model name "
                           "never reuses this one's answers", metavar="ID", default_text="none"),
    Flag("parallel", "requests served at once", type=count("parallel"), metavar="N", default=1),
    Flag("verbose", "print llama.cpp's own log", action="store_true"),
    Flag("temperature", "the sampling temperature of the LLM's outputs",
         type=types.non_negative, metavar="T", home="the command"),
    Flag("attempts", "asks per LLM output that cannot be parsed (only sampled decoding can "
                     "answer differently)", type=count("attempts"), metavar="N",
         home="the command"),
    Flag("judge-max-tokens", "tokens of one judgment by the LLM",
         type=count("judge-max-tokens"), metavar="N", home="the command"),
)

# Another LLM for one step of a command (--judge-model ...): the same three flags per role.
ROLES = {"judge": "the judge LLM", "filter": "the filter LLM"}
for _role, _what in ROLES.items():
    _flags(
        Flag(f"{_role}-model", f"{_what}: a GGUF for llama.cpp, or the served model's name with "
                               f"--{_role}-base-url", metavar="MODEL",
             default_text="the LLM of --model"),
        Flag(f"{_role}-base-url", f"{_what}'s OpenAI-compatible server", type=types.base_url,
             metavar="URL", default_text="the LLM's"),
        Flag(f"{_role}-backend", f"{_what}: a backend of --config's llm section",
             metavar="NAME", default_text="the LLM's"),
    )

# --- plan --------------------------------------------------------------------------------------
_flags(
    Flag("gpus", "GPUs available: each backend runs as many instances as fit (its 'gpus' is "
                 "one instance, tensor parallel)", type=count("gpus"), metavar="N",
         default_text="one instance of every backend"),
    Flag("gpu-kind", "the GPUs' kind, for the rate table (docs/plan.md: h100, h200, a100, l40s, "
                     "mi250x, mi250x-gcd, mi210, mi300x)", metavar="KIND", default="h100"),
    Flag("calibrate", "measure the configured backends (a few real requests of each stage's "
                      "shape, never cached) and plan with the measured rates",
         action="store_true"),
    Flag("calibrate-requests", "requests per stage when calibrating (a batching server's batch "
                               "size; passages and sub-questions send at least 8)",
         type=count("calibrate-requests"), metavar="N", default=3),
    Flag("tokens-per-second", "generated tokens per second of one instance of every backend "
                              "(instead of the table)", type=types.positive_number,
         metavar="RATE", default_text="the table's"),
    Flag("prompt-tokens-per-second", "prompt (prefill) tokens per second of one instance "
                                     "(instead of the table)", type=types.positive_number,
         metavar="RATE", default_text="the table's"),
    Flag("price-per-million", "the cost of a served model per million prompt and output "
                              "tokens: print money instead of time", type=types.non_negative,
         nargs=2, metavar=("PROMPT", "OUTPUT"), default_text="none: time"),
)

# --- udcg --------------------------------------------------------------------------------------
_flags(
    Flag("gamma", "the weight of the distracting effect in UDCG (Eq. 4)", type=types.fraction,
         metavar="GAMMA", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("utility", "how p(NO-RESPONSE) is had: the probability of the first token of "
                    "NO-RESPONSE with the authors' prompt layout (first-token), the summed mass "
                    "of the first tokens that begin it with Fig. 4's prompt (logprobs), by "
                    "sampling (App. D), or given in the input's models_info",
         home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("no-response-token", "with --utility first-token: the first token of the encoded "
                              "NO-RESPONSE (' NO' for a SentencePiece tokenizer with a dummy "
                              "prefix)", metavar="TOKEN", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("logprobs", "top first-token alternatives asked for", type=count("logprobs"),
         metavar="N", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("samples", "samples per passage with --utility sampling", type=count("samples"),
         metavar="N", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("sample-max-tokens", "tokens per sampled answer",
         type=count("sample-max-tokens"), metavar="N", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("given-model", "the models_info key with --utility given", metavar="NAME",
         home="cruxflow.beyond.udcg.UdcgOptions", default_text="the only model in the file"),
    Flag("judge-relevance", "judge passages without a relevance label with the LLM (Fig. 5)",
         action="store_true"),
    Flag("protocol", "run the correlation protocol of Sec. 7.2 on the questions",
         action="store_true"),
    Flag("grading", "the protocol's ideal grades: Sec. 6.2's rule (context-aware: a correct "
                    "answer from a context without a relevant passage is partially correct) or "
                    "the grader's grade alone (answer-only)",
         home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("contexts-per-question", "contexts sampled per question by --protocol",
         type=count("contexts-per-question"), metavar="N", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("context-size", "passages per context of --protocol", type=count("context-size"),
         metavar="N", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("depth", "the protocol samples from each question's first DEPTH passages",
         type=count("depth"), metavar="DEPTH", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("max-answer-tokens", "tokens of the LLM's answer to a context with --protocol",
         type=count("max-answer-tokens"), metavar="N", home="cruxflow.beyond.udcg.UdcgOptions"),
    Flag("fit-theta", "run the protocol on TRAIN_FILE, fit UDCG_theta's weights (written to "
                      "OUTPUT/theta.json) and score the questions with them too", type=Path,
         metavar="TRAIN_FILE", default_text="none"),
    Flag("theta", "UDCG_theta weights from an earlier --fit-theta", type=Path,
         metavar="WEIGHTS_JSON", default_text="none"),
    Flag("theta-c", "SVM-rank's C for --fit-theta", type=types.positive_number, metavar="C",
         home="cruxflow.beyond.udcg.UdcgOptions"),
)

# --- support -----------------------------------------------------------------------------------
_flags(
    Flag("judge-pairs", "judge with the LLM the cited (sentence, passage) pairs without a label "
                        "(--judge-pairs, or --judge-pairs missing) or all of them (all)",
         nargs="?", const="missing", home="cruxflow.beyond.support.SupportOptions",
         default_text="none: no LLM"),
    Flag("all-citations", "score every citation of a sentence (else the first only, as the track "
                          "did)", action="store_true"),
    Flag("average", "a run's mean over all topics, a missing topic counting 0 (the track's), or "
                    "over the run's own topics", home="cruxflow.beyond.support.SupportOptions"),
    Flag("prompt", "the judge's prompt: the track's GPT-4o support prompt (trec2024) or ours "
                   "(cruxflow-v1)", home="cruxflow.beyond.support.SupportOptions"),
    Flag("max-passage-words", "the judge sees a passage's first N words",
         type=count("max-passage-words"),
         metavar="N", home="cruxflow.beyond.support.SupportOptions"),
)

# --- kpr ---------------------------------------------------------------------------------------
_flags(
    Flag("extract-only", "only extract key points (no response needed)", action="store_true"),
    Flag("pipeline", "how key points are made: fast (one round, no LLM de-duplication, no "
                     "filter) or paper (Long2RAG Sec. 3.3: several rounds, LLM de-duplication, "
                     "the AutoDS filter)", home="cruxflow.beyond.kpr.KprOptions"),
    Flag("rounds", "extraction rounds per document", type=count("rounds"), metavar="N",
         home="cruxflow.beyond.kpr.KprOptions", default_text="the pipeline's"),
    Flag("group-by", "columns to average by, separated by spaces, e.g. domain question_type",
         type=types.columns, nargs="+", action=types.Columns, metavar="COLUMN",
         home="cruxflow.beyond.kpr.KprOptions",
         default_text="none: overall only"),
    Flag("no-precision", "skip KPP/KPF (saves the extraction and judging of response points)",
         action="store_false", dest="precision"),
    Flag("precision-reference", "what a response point must be present in for KPP: the "
                                "question's key points or its documents",
         home="cruxflow.beyond.kpr.KprOptions"),
    Flag("drop-unfound-spans", "drop extracted points none of whose spans occurs in the "
                               "document", action="store_true", dest="drop_unfound"),
    Flag("aggregate", "the paper's LLM de-duplication/aggregation of key points",
         action=argparse.BooleanOptionalAction, home="cruxflow.beyond.kpr.KprOptions",
         default_text="the pipeline's"),
    Flag("filter-threshold", "keep key points whose AutoDS score (Eq. 3) reaches this; the flag "
                             "alone: the paper's threshold", type=types.unit_interval, nargs="?",
         metavar="SCORE", home="cruxflow.beyond.kpr.KprOptions", default_text="the pipeline's"),
    Flag("failures", "an unparseable verdict or a response with no extracted key point: left "
                     "out of the means and counted (exclude), or the paper's Eq. 1 read "
                     "literally, not entailed (as-not-entailed)",
         home="cruxflow.beyond.kpr.KprOptions"),
    Flag("max-words", "cut documents longer than this into pieces of this many words before "
                      "extraction (for small context windows)", type=count("max-words"),
         metavar="N", home="cruxflow.beyond.kpr.KprOptions", default_text="no cut"),
    Flag("extract-max-tokens", "tokens of one key point extraction by the LLM",
         type=count("extract-max-tokens"), metavar="N", home="cruxflow.beyond.kpr.KprOptions"),
)
