"""A cost plan before any LLM call (docs/plan.md): per LLM stage and dataset, the requests the
workflow will send, how many the cache already answers, their prompt and output tokens, and
(:mod:`cruxflow.workflow.plan_report`) the time or money that the rest will cost.

The requests are built by the stages' own functions over the real inputs (the raw corpus read
in memory as ``ingest`` reads it; the generated passages and sub-questions when they cover
every topic), so the counts are the workflow's. Where an
input does not exist yet (ratings before any passage), the row is an estimate from the
configured limits and the assumptions below, and says so. Nothing here loads a model.

Prompt tokens are counted by parts: the template once, plus each text filled into it counted
alone. That is exact for the regex counter (every field of the CRUX prompts sits between
whitespace) and within a token or two per field for a BPE tokenizer, whose merges can cross a
field's boundary; it lets a plan over the paper's 800K rating prompts count each passage once.
Only the first attempt of each request is planned: outputs that do not parse are asked again
(up to ``llm.attempts``), which costs more.
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.model import Dataset, Topic
from cruxflow.data.text import count_words
from cruxflow.llm import Request, spec_identity
from cruxflow.llm.cache import cache_key
from cruxflow.metrics.tokens import make_batch_token_counter
from cruxflow.stages import passages as passage_stage
from cruxflow.stages import questions as question_stage
from cruxflow.stages.prompts import (
    PASSAGES,
    REPORT_REQUEST,
    SUBQUESTIONS,
)
from cruxflow.workflow import config as workflow_config
from cruxflow.workflow import plan_sizes
from cruxflow.workflow.job import sampling

# Assumptions of the estimated rows (docs/plan.md). Fig. 7 asks for "2-3 standalone passages of
# approximately 200 words each" per document (or chunk).
PASSAGE_WORDS = 200
PASSAGES_PER_PIECE = 3
QUESTION_WORDS = 15        # one sub-question
REQUEST_WORDS = 40         # one report request x
# |Z*|, the oracle context's size, before any rating exists: |P**| per topic in the CRUX
# authors' data (Ju et al. 2025, Table 4: 274 required passages for 50 DUC topics, 14,659 for
# 4,986 Multi-News test topics); 5 for other formats.
ORACLE_PASSAGES = {"duc2004": 274 / 50, "multinews": 14659 / 4986}
ORACLE_DEFAULT = 5


@dataclass
class StagePlan:
    """One LLM stage of one dataset. ``cached`` is ``None`` where the requests are not known
    yet (an estimate cannot be looked up). ``todo_*``: the tokens of the requests the cache
    does not answer, what a run pays for."""

    stage: str
    dataset: str
    backend: str
    requests: int
    cached: int | None
    prompt_tokens: int
    output_tokens: int
    todo_prompt_tokens: int
    todo_output_tokens: int
    prompts: str           # "counted" or "estimate"
    outputs: str           # "counted", "limit" (the configured maximum) or "estimate"
    note: str = ""
    # Of todo_prompt_tokens, those a prompt cache computes once for several requests (a
    # passage rated against its questions, passage first): not computed again, still sent.
    reused_prompt_tokens: int = 0
    # Jobs that send the uncached requests: each starts a process and builds its backend.
    jobs: int = 1
    # A few uncached requests exactly as the run will send them (counted rows only), for
    # --calibrate to time; not part of the plan's JSON.
    sample: list = field(default_factory=list, repr=False, compare=False)

    def public(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "sample"}


@dataclass
class Plan:
    stages: list[StagePlan]
    tokenizer: dict
    not_planned: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)   # datasets planned from published sizes

    def to_json(self) -> dict:
        return {"tokenizer": self.tokenizer, "stages": [s.public() for s in self.stages],
                "not_planned": self.not_planned, "assumed": self.assumed}


class Counter:
    """Token counts of texts, by the tokenizer the plan uses, with a memo (a passage is rated
    against every question of its topic: counted once)."""

    def __init__(self, spec: str | None):
        self._count = make_batch_token_counter(spec)
        self._memo: dict[str, int] = {}

    def many(self, texts) -> list[int]:
        texts = list(texts)
        new = list({t for t in texts if t not in self._memo})
        self._memo.update(zip(new, self._count(new), strict=True))
        return [self._memo[t] for t in texts]

    def one(self, text: str) -> int:
        return self.many([text])[0]

    def per_word(self, texts) -> float:
        """Tokens per whitespace word over ``texts`` (for estimates of texts not written yet)."""
        texts = list(texts)
        words = sum(count_words(t) for t in texts)
        return sum(self.many(texts)) / words if words else 1.3


def choose_tokenizer(config: dict, override: str | None = None) -> tuple[str | None, dict]:
    """The tokenizer the plan counts with, and how it was chosen: ``override``, else
    ``metrics.tokenizer`` (the paper preset's Llama-3.1 tokenizer), else the ``tokenizer.json``
    of the main backend's model in the local Hugging Face cache, else the regex counter,
    which makes every count an estimate of the model's."""
    given = override or config["metrics"]["tokenizer"]
    if given:
        p = Path(given)
        if (p / "tokenizer.json" if p.is_dir() else p).is_file():
            return str(given), {"kind": "tokenizer", "path": str(given), "estimate": False}
        if override:  # asked for by name on the command line: not silently another counter
            raise DataError("no tokenizer.json there (give the file, or a folder holding it)",
                            path=override)
        missing = f"{given} not found"
    else:
        missing = "no tokenizer configured (metrics.tokenizer)"
    model = config["llm"]["backends"].get(config["llm"]["backend"], {}).get("model", "")
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "tokenizer.json") if "/" in model else None
    except Exception:  # not a repo id (a GGUF path, package:...): nothing cached
        found = None
    if isinstance(found, str):
        return found, {"kind": "tokenizer", "path": found, "estimate": False,
                       "note": f"{missing}; the local Hugging Face cache's {model}"}
    return None, {"kind": "regex", "estimate": True, "note": missing}


# --- the cache


class CacheLookup:
    """Which requests the LLM cache answers: exact key lookups, read only (no file is made)."""

    def __init__(self, path):
        from cruxflow.data.outputs import read_only_file_system, sqlite_error

        self._db = None
        if path and Path(path).is_file():
            # immutable on a read-only file system: a WAL database needs its -shm file else
            flags = "&immutable=1" if read_only_file_system(path) else ""
            try:
                self._db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro{flags}",
                                           uri=True)
                if not self._db.execute("SELECT 1 FROM calls LIMIT 1").fetchone():
                    self._db = None   # empty: no key needs hashing
            except sqlite3.DatabaseError as exc:   # another file named as the cache
                error = sqlite_error(exc, path, "an LLM cache", "llm.cache")
                if not isinstance(error, DataError):   # an SQLite file of something else
                    error = DataError(f"not an LLM cache (SQLite says: {exc}); name another "
                                      "llm.cache", path=path)
                raise error from None

    def answered(self, identity: dict, requests: list[Request]) -> list[bool]:
        if self._db is None:
            return [False] * len(requests)
        keys = [cache_key(identity, r) for r in requests]
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            found.update(k for (k,) in self._db.execute(
                f"SELECT key FROM calls WHERE key IN ({','.join('?' * len(chunk))})", chunk))
        return [k in found for k in keys]


SAMPLE = 8      # requests kept per counted row for --calibrate


def _stage(name, dataset, backend, prompt, output, hit, *, prompts="counted",
           outputs="estimate", note="", reused=None, jobs=1, requests=None) -> StagePlan:
    """A row from per-request prompt and output tokens, cache hits (``None``: unknown),
    prompt tokens a prompt cache reuses (``None``: none), the jobs that send the requests
    (none when the cache answers them all) and, where counted, the requests themselves."""
    todo = [i for i, h in enumerate(hit or [False] * len(prompt)) if not h]
    # spread over the stage (its first requests may all be one topic's)
    k = min(SAMPLE, len(todo))
    spread = sorted({todo[round(j * (len(todo) - 1) / max(1, k - 1))] for j in range(k)})
    sample = [requests[i] for i in spread] if requests is not None else []
    return StagePlan(name, dataset, backend, len(prompt),
                     None if hit is None else sum(hit), sum(prompt), sum(output),
                     sum(prompt[i] for i in todo), sum(output[i] for i in todo),
                     prompts, outputs, note, sum(reused[i] for i in todo) if reused else 0,
                     jobs if todo else 0, sample)


def reuses_prefix(config: dict, backend: str) -> bool:
    """Whether rating prompts of one passage share their KV: the passage-first layout on a
    backend that keeps a prompt's prefix (llama.cpp's ``prompt_cache``; vLLM's prefix caching,
    on by default since its V1 engine). A served model is not assumed to."""
    spec = config["llm"]["backends"][backend]
    if config["llm"]["ratings"]["layout"] != "passage_first":
        return False
    if spec["kind"] == "llamacpp":
        return bool(spec.get("prompt_cache"))
    return spec["kind"] == "vllm" and spec.get("prompt_cache") is not False


def _group_reuse(shared: int, n: int, reuse: bool, prefix: int = 0) -> list[int]:
    """Reused prompt tokens of ``n`` requests that share a ``shared``-token prefix, when the
    backend reuses prefixes: all but the first; the first reuses the ``prefix`` it shares with
    the request before it (the template's instructions, the same in every prompt)."""
    return [prefix if reuse else 0] + [shared if reuse else 0] * (n - 1) if n else []


def _prefix_tokens(counter: Counter, template) -> int:
    """A template's text before its first field: what every prompt of it begins with."""
    return counter.one(re.split(r"\{\w+\}", template.text, maxsplit=1)[0])


def _template_tokens(counter: Counter, template, **fixed) -> int:
    """A template's own tokens: rendered with its text fields empty."""
    return counter.one(template.render(**{f: fixed.get(f, "") for f in template.fields}))


# --- the stages of rules/generate.smk


@dataclass
class Observed:
    """What ``--calibrate`` saw the backends write, which the plan then uses instead of its
    assumptions: mean output tokens per request by stage (for rows whose outputs are
    estimates), the passages of the pieces it decontextualized (the ratings' estimate rates
    those as they are) and their mean per piece and size (for the pieces it did not send), and
    per stage the requests that one costs when some outputs do not parse and are asked again,
    with the share that did not."""

    output_tokens: dict[str, float] = field(default_factory=dict)
    passages_per_piece: float | None = None
    asked_again: dict[str, tuple[float, float]] = field(default_factory=dict)
    passage_tokens: float | None = None      # a kept passage's, as the model wrote it
    # per decontextualization prompt sent: the passages its output was parsed into (None:
    # refused every time, the piece keeps its own text)
    pieces: dict[str, list[str] | None] = field(default_factory=dict)
    # per sub-question prompt sent: the questions its output was parsed into (None: refused
    # every time, the topic gets none)
    questions: dict[str, list[str] | None] = field(default_factory=dict)


@dataclass
class _Context:
    config: dict
    counter: Counter
    cache: CacheLookup
    observed: Observed = field(default_factory=Observed)
    # per generated dataset, per topic: the tokens of each sub-question it will be rated
    # against (_question_table)
    questions: dict[str, dict[str | None, list[int]]] = field(default_factory=dict)


def questions_of(topic: Topic, n_questions: int) -> int:
    """Sub-questions a topic will have: its own, when it brings them, else ``n_questions``."""
    return len(topic.questions) if topic.questions else n_questions


def n_questions_of(ctx: _Context, name: str, dataset: Dataset, topic_id: str) -> int:
    """Sub-questions a topic of dataset ``name`` will be rated against: as the generation plan
    has them (:func:`_question_table`), else its own, else ``n_questions``."""
    table = ctx.questions.get(name, {})
    if topic_id in table or None in table:     # None: a topic the table does not name
        return len(table.get(topic_id, table.get(None)))
    n = ctx.config["datasets"][name]["n_questions"]
    return questions_of(dataset.topics[topic_id], n) if topic_id in dataset.topics else n


def topic_questions(ctx: _Context, name: str, topic: Topic, ratio: float) -> list[int]:
    """The tokens of each sub-question a topic of dataset ``name`` will be rated against: as
    the generation plan has them (:func:`_question_table`), else its own, else ``n_questions``
    of QUESTION_WORDS words at ``ratio`` tokens a word."""
    table = ctx.questions.get(name)
    if table is not None:
        return table.get(topic.topic_id, table[None])
    if topic.questions:
        return ctx.counter.many(topic.questions)
    return [round(QUESTION_WORDS * ratio)] * ctx.config["datasets"][name]["n_questions"]


def _question_table(ctx: _Context, n: int, topics: list[Topic], sent: dict[str, str],
                    question_tokens: int) -> dict[str | None, list[int]]:
    """Per topic, the tokens of each sub-question it will be rated against: its own, counted;
    else those --calibrate saw the sub-question stage write for it (``sent``: its prompt; the
    stage keeps the first ``n``, none when every output was refused); else (and under ``None``,
    for topics not named) as many as --calibrate saw per topic and of their mean length, before
    any calibration ``n`` of ``question_tokens``."""
    counter = ctx.counter
    kept = {p: question_stage.kept_questions(v, n) for p, v in ctx.observed.questions.items()}
    written = counter.many(q for qs in kept.values() for q in qs)
    if kept:
        default = [round(sum(written) / len(written)) if written else question_tokens] * round(
            len(written) / len(kept))
    else:
        default = [question_tokens] * n
    table: dict[str | None, list[int]] = {None: default}
    for t in topics:
        if t.questions:
            table[t.topic_id] = counter.many(t.questions)
        elif sent.get(t.topic_id) in kept:
            table[t.topic_id] = counter.many(kept[sent[t.topic_id]])
        else:
            table[t.topic_id] = default
    return table


def _passages_per_piece(words: int, max_passages: int | None) -> int:
    """Passages one piece is estimated to give (Fig. 7: 2-3 of about 200 words each)."""
    cap = min(PASSAGES_PER_PIECE, max_passages or PASSAGES_PER_PIECE)
    return min(cap, max(1, math.ceil(words / PASSAGE_WORDS)))


def plan_generation(ctx: _Context, name: str, dataset: Dataset, root: Path) -> list[StagePlan]:
    """The four stages that turn a raw corpus into a rated dataset (rules/generate.smk)."""
    config, counter = ctx.config, ctx.counter
    llm, d = config["llm"], config["datasets"][name]
    backend = d["llm_backend"] or llm["backend"]
    identity = spec_identity(llm["backends"][backend])
    generated = plan_sizes.generated(root, name, llm["shards"])
    topics = list(dataset.topics.values())
    rows = []

    # Decontextualization: one request per document (or chunk), distractors included unless
    # they are split without the LLM (llm.passages.distractors).
    stage = llm["passages"]
    pieces = passage_stage.document_pieces(dataset.documents.values(),
                                           stage["max_document_words"], stage["chunk_words"],
                                           stage["distractors"])
    texts = [c for _, c in pieces]
    piece_tokens = counter.many(texts)
    fixed = _template_tokens(counter, PASSAGES)
    s = sampling(llm, "generation", max_tokens=stage["max_tokens"])
    requests = [Request(passage_stage.passage_prompt(c), s) for c in texts]
    hit = ctx.cache.answered(identity, requests)
    # A rewrite of the piece in its own words, within the output limit.
    rows.append(_stage("passages", name, backend, [fixed + t for t in piece_tokens],
                       [min(stage["max_tokens"], t) for t in piece_tokens], hit,
                       note="output: about the piece's length (Fig. 7 rewrites it)",
                       jobs=llm["shards"], requests=requests))

    ratio = counter.per_word(texts[:2000])
    docs = dataset.documents
    request_way = d["questions_from"] == "request"
    for key, given, prompts_of, template, limit, produced, words in (
            ("report_requests", "query",
             lambda ts: question_stage.report_request_prompts(ts, docs), REPORT_REQUEST,
             llm["report_request"]["max_tokens"], generated.get("queries"), REQUEST_WORDS),
            ("subquestions", "questions",
             lambda ts: question_stage.subquestion_prompts(ts, d["n_questions"], docs),
             SUBQUESTIONS, llm["subquestions"]["max_tokens"], generated.get("questions"),
             QUESTION_WORDS * d["n_questions"])):
        if key == "subquestions" and request_way:
            from cruxflow.workflow.plan_holes import plan_request_subquestions

            rows.append(plan_request_subquestions(ctx, name, backend, identity, topics,
                                                  generated, ratio))
            continue
        # a topic that brings its own request or questions is asked nothing; one without a
        # summary is asked from its documents (the whole prompt counted)
        topics_todo, _ = question_stage.to_generate(topics, given)
        prompts = prompts_of(topics_todo)
        fixed = _template_tokens(counter, template, n=d["n_questions"])
        references = [fixed + r for r in counter.many(t.reference or "" for t in topics_todo)]
        references = [r if t.reference is not None else n for t, r, n in
                      zip(topics_todo, references, counter.many(prompts), strict=True)]
        s = sampling(llm, "generation", max_tokens=limit)
        requests = [Request(p, s) for p in prompts]
        hit = ctx.cache.answered(identity, requests)
        if produced is not None:
            out = counter.many(" ".join(produced.get(t.topic_id) or "")
                               if isinstance(produced.get(t.topic_id), list)
                               else produced.get(t.topic_id, "") for t in topics_todo)
            basis = "counted"
        else:
            out, basis = [min(limit, round(words * ratio))] * len(topics_todo), "estimate"
        rows.append(_stage(key, name, backend, references, out, hit, outputs=basis,
                           requests=requests))
        if key == "subquestions":
            sent = {t.topic_id: p for t, p in zip(topics_todo, prompts, strict=True)}
            ctx.questions[name] = _question_table(ctx, d["n_questions"], topics, sent,
                                                  round(QUESTION_WORDS * ratio))
    from cruxflow.workflow.plan_ratings import plan_ratings

    rows.append(plan_ratings(ctx, name, backend, identity, dataset, generated, pieces,
                              piece_tokens, ratio))
    return rows


# --- the whole plan


def _scaled(rows: list[StagePlan], loaded: plan_sizes.Loaded) -> list[StagePlan]:
    """A stand-in's rows at the published number of topics, all estimates."""
    if loaded.topics is None:
        return rows
    scale = loaded.scale
    keys = ("requests", "prompt_tokens", "output_tokens", "todo_prompt_tokens",
            "todo_output_tokens")
    return [StagePlan(**{**r.public(), **{k: round(getattr(r, k) * scale) for k in keys},
                         "cached": None,
                         "prompts": "estimate", "outputs": "estimate"}, sample=r.sample)
            for r in rows]


def _with_observed_outputs(rows: list[StagePlan], observed: Observed) -> list[StagePlan]:
    """Rows whose outputs are estimates, at the mean output that --calibrate measured; the
    tokens still to pay for, times the requests that outputs asked again add."""
    for r in rows:
        mean = observed.output_tokens.get(r.stage)
        if mean is not None and r.outputs in ("estimate", "limit"):
            todo = r.requests - (r.cached or 0)
            r.output_tokens, r.todo_output_tokens = round(mean * r.requests), round(mean * todo)
            r.outputs = "calibrated"
        if r.stage in observed.asked_again:
            factor, share = observed.asked_again[r.stage]
            r.todo_prompt_tokens = round(r.todo_prompt_tokens * factor)
            r.todo_output_tokens = round(r.todo_output_tokens * factor)
            r.reused_prompt_tokens = round(r.reused_prompt_tokens * factor)
            r.note = "; ".join(filter(None, [
                r.note, f"x {factor:.2f} for outputs asked again (--calibrate's first "
                        f"outputs: {share:.0%} refused)"]))
    return rows


def make_plan(config: dict, *, root=".", tokenizer: str | None = None,
              observed: Observed | None = None) -> Plan:
    """The plan of a validated, resolved config (:func:`cruxflow.workflow.config.resolve`),
    with its relative paths under ``root`` (the workflow's working directory); ``observed``:
    what --calibrate measured, used instead of the assumptions it replaces."""
    from cruxflow.workflow.plan_estimated import plan_lancer  # they import this module
    from cruxflow.workflow.plan_holes import plan_holes
    from cruxflow.workflow.plan_rag import plan_rag

    root = Path(root)
    spec, described = choose_tokenizer(config, tokenizer)
    ctx = _Context(config, Counter(spec), CacheLookup(root / config["llm"]["cache"]
                                                      if config["llm"]["cache"] else None),
                   observed or Observed())
    stages, loaded, assumed = [], {}, []
    plan_sizes.check_backends(config, root, assumed)
    for name, d in config["datasets"].items():
        if d["generate"]:
            loaded[name] = plan_sizes.load_or_stand_in(config, name, root, assumed)
            stages += _scaled(plan_generation(ctx, name, loaded[name].dataset, root),
                              loaded[name])
    for name in config["holes"]:
        if name not in loaded:
            loaded[name] = plan_sizes.load_or_stand_in(config, name, root, assumed)
        generated = (plan_sizes.generated(root, name, config["llm"]["shards"])
                     if config["datasets"][name]["generate"] else {})
        stages += _scaled([plan_holes(ctx, name, loaded[name].dataset, root, generated)],
                          loaded[name])
    for name in config["rag"]["datasets"]:
        if name not in loaded:
            loaded[name] = plan_sizes.load_or_stand_in(config, name, root, assumed)
        stages += plan_rag(ctx, name, loaded[name].dataset, root, loaded[name].topics)
    if any(r["kind"] == "lancer" for r in config["retrieval"]["rerankers"].values()):
        evaluated = [d for d in workflow_config.rated_datasets(config)
                     if config["datasets"][d]["evaluate"] or d in config["rag"]["datasets"]]
        for name in evaluated:
            if name not in loaded:
                loaded[name] = plan_sizes.load_or_stand_in(config, name, root, assumed)
            stages += _scaled(plan_lancer(ctx, name, loaded[name].dataset, loaded[name].topics),
                              loaded[name])
    not_planned = [f"beyond.{metric}.{job}" for metric in ("udcg", "support", "kpr")
                   for job in config["beyond"][metric]]
    not_planned += [f"retrieval.rerankers.{n} (listwise, cruxflow engine)"
                    for n, r in config["retrieval"]["rerankers"].items()
                    if r["kind"] == "listwise" and r.get("engine", "cruxflow") == "cruxflow"]
    return Plan(_with_observed_outputs(stages, ctx.observed), described, not_planned, assumed)


def load_config(path, basedir=".") -> dict:
    """A workflow config file, checked as ``rules/common.smk`` checks it (one check: the
    schema, the keys across, the files it names relative to ``basedir``), except that the
    datasets' inputs may be missing: they are planned from published sizes."""
    from cruxflow.data.io import read_yaml

    return workflow_config.check(read_yaml(path), basedir, data_optional=True)
