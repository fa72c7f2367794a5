"""The one entry point for LLM calls: cache first, then the backend in batches, with counts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cruxflow._extras import extra
from cruxflow.llm.answers import completion_problem
from cruxflow.llm.base import Backend, Completion, LLMError, Request
from cruxflow.llm.cache import LLMCache, cache_key

log = logging.getLogger(__name__)


@dataclass
class CallStats:
    requests: int = 0     # asked for by the caller
    cache_hits: int = 0   # answered from the cache
    calls: int = 0        # sent to the backend
    parse_failures: int = 0  # items without a usable output after every attempt
    malformed: int = 0       # outputs (or items of them) that were not text of the kind asked
    prompt_tokens: int = 0   # of the calls, as the backend counted them
    cached_tokens: int = 0   # of those, reused from an earlier prompt (prompt_cache)

    def to_json(self) -> dict:
        return dict(vars(self))

    def __str__(self) -> str:
        reused = (f" ({self.cached_tokens} of their {self.prompt_tokens} prompt tokens reused)"
                  if self.cached_tokens else "")
        malformed = (f" ({self.malformed} outputs not of the kind asked for)"
                     if self.malformed else "")
        return (f"{self.requests} requests: {self.cache_hits} from the cache, "
                f"{self.calls} LLM calls{reused}, {self.parse_failures} parse failures"
                f"{malformed}")


class LLMRunner:
    """Answers requests from the cache and sends the rest to the backend, ``batch_size`` at a
    time, committing each output to the cache as soon as the backend hands it over (one at a
    time for llama.cpp and servers, a whole batch for vLLM's offline batching). An output past
    the bound on an LLM answer (:mod:`cruxflow.llm.answers`) is neither used nor stored."""

    def __init__(self, backend: Backend, cache: LLMCache | None, *, batch_size: int = 16,
                 progress: bool = False, desc: str = "LLM"):
        self.backend = backend
        self.cache = cache
        self.batch_size = max(1, int(batch_size))
        self.progress = progress
        self.desc = desc
        self.stats = CallStats()

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        identity = self.backend.identity()
        keys = [cache_key(identity, r) for r in requests]
        self.stats.requests += len(requests)
        found = self.cache.get_many(keys) if self.cache is not None else {}
        # Identical requests in one call are sent once.
        todo: dict[str, Request] = {}
        for k, r in zip(keys, requests, strict=True):
            if k not in found and k not in todo:
                todo[k] = r
        self.stats.cache_hits += sum(k in found for k in keys)
        pending = list(todo.items())
        if self.cache is not None:   # a read-only cache: refused before any call is paid
            self.cache.check_writable(len(pending))
        bar = None
        if self.progress and pending:
            with extra(__name__, "llm"):
                from tqdm import tqdm
            bar = tqdm(total=len(pending), desc=self.desc, unit="call")
        for i in range(0, len(pending), self.batch_size):
            batch = pending[i:i + self.batch_size]
            done = 0
            # Each output is committed as soon as the backend hands it over: a killed job loses
            # only the calls still in flight.
            try:
                for j, out in self.backend.generate_iter([r for _, r in batch]):
                    key, req = batch[j]
                    if problem := completion_problem(out):   # before it is parsed or stored
                        raise LLMError(f"LLM {self.backend.kind} {self.backend.model}: "
                                       f"{problem}")
                    self.stats.calls += 1
                    self.stats.prompt_tokens += out.prompt_tokens or 0
                    self.stats.cached_tokens += out.cached_tokens or 0
                    if self.cache is not None:   # another job's answer, where it came first
                        out = self.cache.put_many([(key, identity, req, out)]).get(key, out)
                    found[key] = out
                    done += 1
                    if bar is not None:
                        bar.update(1)
            except LLMError as e:
                if bar is not None:
                    bar.close()
                raise LLMError(f"{e}; {self._progress(len(set(keys)), len(found))}") from e
            if done != len(batch):
                raise RuntimeError(f"backend returned {done} outputs for {len(batch)} requests")
        if bar is not None:
            bar.close()
        return [found[k] for k in keys]

    def _progress(self, asked: int, answered: int) -> str:
        """What a failed call leaves behind, so the user knows what a re-run will cost."""
        if self.cache is None:
            return (f"{answered} of these {asked} requests were answered, none kept (no "
                    "cache): a re-run asks for all of them again")
        return (f"{answered} of these {asked} requests are answered and cached in "
                f"{self.cache.path} ({self.stats.cache_hits} found there, {self.stats.calls} "
                f"new calls this run): a re-run asks only for the {asked - answered} missing")

    def close(self) -> None:
        self.backend.close()
        if self.cache is not None:
            self.cache.close()


class LazyRunner:
    """A runner given outright, or a zero-argument factory called on first use only, so that a
    job that turns out to need no LLM (its labels or scores are all in its input) never loads a
    model. Closes only the runner it built."""

    def __init__(self, runner: LLMRunner | Callable[[], LLMRunner] | None = None, *,
                 needed_for: str = "this job"):
        self._given = runner if isinstance(runner, LLMRunner) else None
        self._factory = None if isinstance(runner, LLMRunner) else runner
        self._built: LLMRunner | None = None
        self._closed = False
        self.needed_for = needed_for

    def get(self) -> LLMRunner:
        if self._given is not None:
            return self._given
        if self._built is None:
            if self._factory is None:
                raise LLMError(f"{self.needed_for} needs an LLM, but none was given")
            self._built = self._factory()
        return self._built

    @property
    def used(self) -> LLMRunner | None:
        """The runner that was given or built, ``None`` when none was needed."""
        return self._given or self._built

    def stats(self) -> dict | None:
        used = self.used
        return None if used is None else used.stats.to_json()

    def close(self) -> None:
        """Close the runner this built (once); its counts stay readable."""
        if self._built is not None and not self._closed:
            self._built.close()
            self._closed = True
