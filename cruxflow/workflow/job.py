"""Glue for workflow scripts: logging into the rule's log file, loading what rules share."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path


def setup_logging(snakemake) -> logging.Logger:
    """Send the script's log records to the rule's ``log:`` file (and keep warnings on stderr),
    and make the script's failure land there too: bad input as the one-line error, anything
    else (a bug) with its traceback. Every script calls this first, so none needs a handler
    of its own."""
    handlers = [logging.StreamHandler()]
    handlers[0].setLevel(logging.WARNING)
    if snakemake.log:
        main = getattr(snakemake.log, "main", None) or snakemake.log[0]
        Path(main).parent.mkdir(parents=True, exist_ok=True)
        rule_log = logging.FileHandler(main, mode="w")
        rule_log.cruxflow_rule_log = True   # what native code's output joins (retrieval.java)
        handlers.append(rule_log)
    for handler in handlers:   # text from the inputs shown escaped, never sent (ESC, BEL)
        handler.setFormatter(_PrintableFormatter("%(asctime)s %(levelname)s %(name)s: "
                                                 "%(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True)
    log = logging.getLogger(f"cruxflow.rule.{snakemake.rule}")
    sys.excepthook = _failure_hook(log, handlers[1:], sys.excepthook)
    return log


class _PrintableFormatter(logging.Formatter):
    """A log line whose control characters (a run's name holding ESC) are shown escaped
    (:func:`cruxflow.data.text.printable`); the newlines of a traceback stay."""

    def format(self, record: logging.LogRecord) -> str:
        from cruxflow.data.text import printable

        return printable(super().format(record), keep="\n\t")


def _failure_hook(log: logging.Logger, files: list[logging.Handler], previous):
    """An ``excepthook`` that writes an uncaught exception to the rule's log file: the message
    alone for bad input (:class:`DataError`, :class:`LLMError`, the config's errors), the
    traceback for anything else; stderr gets the same one line, or the usual traceback."""
    from cruxflow.data.errors import ConfigError, DataError
    from cruxflow.llm.base import LLMError

    def hook(kind, exc, tb):
        expected = isinstance(exc, (DataError, LLMError, ConfigError))
        record = log.makeRecord(log.name, logging.ERROR, __file__, 0,
                                "error: %s" if expected else "failed: %s", (exc,),
                                None if expected else (kind, exc, tb))
        for handler in files:
            handler.handle(record)
            handler.flush()
        if expected:
            from cruxflow.data.text import printable

            print(f"error: {printable(exc)}", file=sys.stderr)
        else:
            previous(kind, exc, tb)

    return hook


def dataset_dir(snakemake) -> Path:
    """The dataset directory of a rule whose inputs include the dataset's ``manifest``."""
    return Path(snakemake.input.manifest).parent


def rated_dataset(snakemake, log: logging.Logger | None = None, with_passages: bool = False):
    """The rule's dataset, with the added ratings of its ``judged`` input (rule judge_holes'
    shards) beside its own ratings, which are kept where both rate a pair; and how many came
    from each source (None without added ratings)."""
    from cruxflow.data.model import Dataset

    dataset = Dataset.load(dataset_dir(snakemake), with_passages=with_passages)
    judged = list(snakemake.input.get("judged", None) or [])
    if not judged:
        return dataset, None
    from cruxflow.stages.holes import add_ratings

    dataset, summary = add_ratings(dataset, judged)
    if log is not None:
        from cruxflow.data.ingest.crux_sources import sources_note

        log.info("%s", sources_note(summary) or "no added ratings")
    return dataset, summary


def job_device(snakemake) -> str:
    """``cuda`` when the job was given GPUs (its ``gpu`` resource), else ``cpu``.

    The job's resources, not the config, decide: a profile's ``--set-resources rule:gpu=0``
    (a CPU-only cluster, a test) moves the job to the CPU, and a rule that asks for no GPU
    never touches one. Its GPUs are claimed so that concurrent jobs use different ones.
    """
    return "cuda" if claim_job_gpus(snakemake) else "cpu"


def claim_job_gpus(snakemake) -> list[str]:
    """Claim the job's ``gpu`` resource's worth of GPUs (see :mod:`cruxflow.workflow.gpus`)."""
    from cruxflow.workflow.gpus import claim_gpus

    return claim_gpus(int(getattr(snakemake.resources, "gpu", 0) or 0))


def encoding_shard(snakemake, batch_size: int) -> tuple[list[tuple[str, str]], int]:
    """The ``(id, text)`` passages of an encoding job's shard (wildcards ``shard``, ``shards``)
    of its input collection, cut at batch boundaries so that the shards' batches are those
    of encoding the corpus at once; and the corpus size."""
    from cruxflow.retrieval.corpus import corpus_shard, read_collection

    texts = read_collection(snakemake.input[0])
    shard, shards = int(snakemake.wildcards.shard), int(snakemake.wildcards.shards)
    return corpus_shard(list(texts.items()), shard, shards, align=batch_size), len(texts)


def llm_runner(snakemake, desc: str):
    """The LLM runner of a rule whose params hold ``llm`` (the config section) and
    ``backend`` (a name in ``llm.backends``)."""
    from cruxflow.llm import make_runner

    claim_job_gpus(snakemake)   # vLLM in process: this job's GPUs only
    return make_runner(snakemake.params.llm, snakemake.params.backend,
                       threads=snakemake.threads, desc=desc)


def sampling(llm_config: dict, kind: str, **overrides):
    """``kind`` "generation" (text) or "judgment" (ratings) sampling from the config."""
    from cruxflow.llm import GENERATION, JUDGMENT

    s = llm_config[kind]
    if kind == "judgment":
        return replace(JUDGMENT, temperature=s["temperature"], top_p=s["top_p"], seed=s["seed"],
                       logprobs=s["top_logprobs"], **overrides)
    return replace(GENERATION, temperature=s["temperature"], top_p=s["top_p"], seed=s["seed"],
                   **overrides)


def log_llm_stats(snakemake, runner, log: logging.Logger) -> None:
    """Log the rule's LLM call counts and write them to its ``calls`` log (JSON)."""
    write_call_stats(snakemake, runner.stats.to_json(), log)


def write_call_stats(snakemake, stats: dict | None, log: logging.Logger) -> None:
    """The same from counts as a dict (``None``: the job needed no LLM, all counts 0)."""
    from cruxflow.data.io import write_json
    from cruxflow.llm import CallStats

    counts = CallStats(**{k: v for k, v in (stats or {}).items()
                          if k in CallStats.__dataclass_fields__})
    log.info("LLM: %s", counts)
    calls = getattr(snakemake.log, "calls", None)
    if calls:
        write_json(calls, {"rule": snakemake.rule, **counts.to_json(), **job_seconds()})


def write_content_checks(snakemake, counts, log: logging.Logger) -> None:
    """The stage's content checks (:mod:`cruxflow.stages.checks`: a list of
    ``CheckCounts``), one log line each, and written to the rule's ``checks`` log (JSON), which
    the workflow's summary reads (:func:`cruxflow.paper.summary.content_checks`)."""
    from cruxflow.data.io import write_json

    for c in counts:
        log.info("content check %s: %s%s", c.check.name, c.describe(),
                 f"; e.g. {c.example}" if c.flagged and c.example else "")
    path = getattr(snakemake.log, "checks", None)
    if path:
        write_json(path, {"rule": snakemake.rule, "dataset": snakemake.wildcards.dataset,
                          "checks": [c.to_json() for c in counts]})


def job_seconds() -> dict:
    """This job's process so far: ``cpu_seconds`` (its CPU time, every thread, the imports and
    the model's load included: on a machine shared with other work, the time it would take on
    cores of its own) and ``wall_seconds``. Snakemake's benchmark files sample CPU time every
    few seconds and miss a job's end (0 for a job of under a second), so the cost plan is
    checked against these (benchmarks/plan_accuracy.py)."""
    import resource
    import time

    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        import psutil

        wall = time.time() - psutil.Process().create_time()
    except ImportError:                     # not in the core install: the CPU time alone
        wall = None
    return {"cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
            "wall_seconds": None if wall is None else round(wall, 3)}


def write_checked_run(snakemake, ranking: dict, queries, tag: str,
                      log: logging.Logger) -> None:
    """Check a first-stage ranking query by query against the rule's corpus, then write it."""
    from cruxflow.data.io import iter_lines, write_run
    from cruxflow.retrieval.corpus import check_hits

    corpus_size = sum(1 for _, line in iter_lines(snakemake.input.collection) if line.strip())
    summary = check_hits(ranking, queries, depth=snakemake.params.depth,
                         corpus_size=corpus_size, path=snakemake.output[0])
    write_run(snakemake.output[0], ranking, tag=tag)
    log.info("%d queries over %d passages: %d to %d hits each, %d with fewer than %d",
             summary["queries"], corpus_size, summary["min_hits"], summary["max_hits"],
             len(summary["short_queries"]), summary["expected_hits"])


def generate_missing(snakemake, topics, field: str, what: str, generate,
                     log: logging.Logger) -> tuple[dict, dict]:
    """``(values of every topic, those the topics brought)`` for a Topic ``field`` (``query``,
    ``questions``): a topic of one's own that brings it keeps it, the others get
    ``generate(topics, runner)`` with the job's LLM runner (none is started when every topic
    brings its own, and the call stats say no call was made)."""
    from cruxflow.stages.questions import to_generate

    todo, given = to_generate(topics, field)
    if given:
        log.info("%d topics bring their %s: not generated for them", len(given), what)
    made = {}
    if todo:
        runner = llm_runner(snakemake, f"{what} {snakemake.wildcards.dataset}")
        made = generate(todo, runner)
        log_llm_stats(snakemake, runner, log)
        runner.close()
    else:
        write_call_stats(snakemake, None, log)
    return {**made, **given}, given


def stale_lock_note(workdir=".", *, me: int | None = None) -> str | None:
    """One line when ``workdir/.snakemake/locks`` holds a lock and no other Snakemake process
    of this machine runs in ``workdir``: a run killed hard (``kill -9``, out of memory, power)
    left it, and Snakemake's "Directory cannot be locked" follows. None otherwise (no lock, or
    another run holds it: then the lock is doing its job). Read from ``/proc``; elsewhere, or
    for a run on another machine of a shared file system, a lock counts as held."""
    import os

    locks = Path(workdir).resolve() / ".snakemake" / "locks"
    if not (locks.is_dir() and any(locks.iterdir())):
        return None
    proc, me = Path("/proc"), os.getpid() if me is None else me
    if not proc.is_dir():
        return None
    here = Path(workdir).resolve()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:   # gone, or another user's
            continue
        # `.../bin/snakemake ...`, `python .../bin/snakemake ...`, `python -m snakemake ...`
        if cwd == here and any(Path(os.fsdecode(part)).name == "snakemake"
                               for part in command[:3]):
            return None
    return (f"cruxflow: {locks} holds the lock of an earlier run that was killed (no other "
            "Snakemake runs here): run `snakemake --unlock` with the same options, then again")


def write_contexts(paths, sizes, run_path, judgments) -> int:
    """The context files of one run (``results/contexts/...k<k>.jsonl``, docs/data-model.md):
    for each size k of ``sizes`` (as written in paths: ``oracle`` or a number) the matching
    path of ``paths`` gets the run's top-k of every judged topic that is kept. The rule
    ``context_metrics`` writes them for the systems it scores, the rule ``contexts`` for Figure
    5's sampled runs. Returns how many topics each file holds."""
    from cruxflow.data.io import read_run, write_jsonl
    from cruxflow.metrics.scorer import contexts, parse_context_size

    judged = {t: j for t, j in judgments.items() if j.kept}
    run = read_run(run_path)
    for path, size in zip(paths, sizes, strict=True):
        k = parse_context_size(size)
        write_jsonl(path, ({"topic_id": t, "k": str(k), "oracle_size": len(judged[t].required),
                            "passages": ids} for t, ids in contexts(run, judged, k).items()))
    return len(judged)
