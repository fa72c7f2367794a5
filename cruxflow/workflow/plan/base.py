"""What every stage of the cost plan shares: a stage's row (:class:`StagePlan`, made by
:func:`stage_row`), the plan (:class:`Plan`), the plan's context (:class:`Context`: the config,
the token counter, the cache lookup, what ``--calibrate`` observed), and the token helpers.

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
from cruxflow.llm import Request
from cruxflow.llm.cache import cache_key
from cruxflow.metrics.tokens import make_batch_token_counter

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


def stage_row(name, dataset, backend, prompt, output, hit, *, prompts="counted",
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


def group_reuse(shared: int, n: int, reuse: bool, prefix: int = 0) -> list[int]:
    """Reused prompt tokens of ``n`` requests that share a ``shared``-token prefix, when the
    backend reuses prefixes: all but the first; the first reuses the ``prefix`` it shares with
    the request before it (the template's instructions, the same in every prompt)."""
    return [prefix if reuse else 0] + [shared if reuse else 0] * (n - 1) if n else []


def prefix_tokens(counter: Counter, template) -> int:
    """A template's text before its first field: what every prompt of it begins with."""
    return counter.one(re.split(r"\{\w+\}", template.text, maxsplit=1)[0])


def template_tokens(counter: Counter, template, **fixed) -> int:
    """A template's own tokens: rendered with its text fields empty."""
    return counter.one(template.render(**{f: fixed.get(f, "") for f in template.fields}))


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
class Context:
    config: dict
    counter: Counter
    cache: CacheLookup
    observed: Observed = field(default_factory=Observed)
    # per generated dataset, per topic: the tokens of each sub-question it will be rated
    # against (question_table)
    questions: dict[str, dict[str | None, list[int]]] = field(default_factory=dict)


def questions_of(topic: Topic, n_questions: int) -> int:
    """Sub-questions a topic will have: its own, when it brings them, else ``n_questions``."""
    return len(topic.questions) if topic.questions else n_questions


def n_questions_of(ctx: Context, name: str, dataset: Dataset, topic_id: str) -> int:
    """Sub-questions a topic of dataset ``name`` will be rated against: as the generation plan
    has them (:func:`cruxflow.workflow.plan.generation.question_table`), else its own, else
    ``n_questions``."""
    table = ctx.questions.get(name, {})
    if topic_id in table or None in table:     # None: a topic the table does not name
        return len(table.get(topic_id, table.get(None)))
    n = ctx.config["datasets"][name]["n_questions"]
    return questions_of(dataset.topics[topic_id], n) if topic_id in dataset.topics else n


def topic_questions(ctx: Context, name: str, topic: Topic, ratio: float) -> list[int]:
    """The tokens of each sub-question a topic of dataset ``name`` will be rated against: as
    the generation plan has them (:func:`cruxflow.workflow.plan.generation.question_table`),
    else its own, else ``n_questions`` of QUESTION_WORDS words at ``ratio`` tokens a word."""
    table = ctx.questions.get(name)
    if table is not None:
        return table.get(topic.topic_id, table[None])
    if topic.questions:
        return ctx.counter.many(topic.questions)
    return [round(QUESTION_WORDS * ratio)] * ctx.config["datasets"][name]["n_questions"]


def passages_of_piece(words: int, max_passages: int | None) -> int:
    """Passages one piece is estimated to give (Fig. 7: 2-3 of about 200 words each)."""
    cap = min(PASSAGES_PER_PIECE, max_passages or PASSAGES_PER_PIECE)
    return min(cap, max(1, math.ceil(words / PASSAGE_WORDS)))
