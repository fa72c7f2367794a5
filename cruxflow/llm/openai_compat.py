"""Any OpenAI-compatible server by ``base_url``: ``vllm serve``, llama.cpp's server, Ollama,
LiteLLM or a hosted API.

The ``openai`` client does the HTTP work; the retries are ours, so that each is logged (a
warning: the rule's log and stderr) with its reason and its wait instead of a run stalling in
silence behind a hung server: up to ``max_retries`` more attempts on connection errors,
timeouts, 408/409/429 and 5xx, after the server's Retry-After or an exponential backoff (0.5 s
doubling to 8 s). Requests of a batch go out ``concurrency`` at a time. The API key is read
from the environment variable named in the config and never logged.

Two bounds hold on the wall clock, whatever the server does: ``timeout_s`` for one attempt
(connecting, sending, the whole answer) and ``deadline_s`` for the call (every attempt and
every wait between them; by default what the attempts and their backoffs can take, so that
it cuts a server's long Retry-After short). The HTTP library's
own timeout bounds each read of the socket only, so a server that sends one byte a second
would hold an attempt for as long as its answer lasts: every socket operation is given the
time left instead (:class:`_Deadlines`), and the error says which bound was hit.

Every answer is read whole under the bound on an LLM answer (:mod:`cruxflow.llm.answers`:
bytes, encoding, nesting) before the client parses it (:class:`_BoundedAnswers`); past it the
attempt failed, and is retried like a timeout. No redirect is followed: every request is a
POST carrying the prompt, which a redirect would send to wherever it points; the error names
the redirect (its status, from and to).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from urllib.parse import urlsplit

from cruxflow._extras import extra_hint
from cruxflow.data.limits import check_count
from cruxflow.llm.answers import body_problem, max_answer_bytes, too_long
from cruxflow.llm.base import (
    Backend,
    Completion,
    LLMError,
    Request,
    chat_messages,
    choice_grammar,
    may_reuse_prompt,
)
from cruxflow.llm.openai_format import ResponseShapeError, completion_from_choice

log = logging.getLogger(__name__)
# The openai client's HTTP library logs every request at INFO ("HTTP Request: POST ... 200 OK"):
# one line per LLM call, some 475,000 at the paper's scale. Retries (logged below, as warnings)
# and failures (raised as LLMError) still show. Recent openai releases use httpx2, older httpx.
for _http in ("httpx", "httpx2"):
    logging.getLogger(_http).setLevel(logging.WARNING)

# How each server family takes a constrained choice (the field goes into the request body).
CONSTRAINTS = ("none", "vllm", "llamacpp")
RETRY_STATUS = frozenset({408, 409, 429})   # and every 5xx


DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class NotJSONError(Exception):
    """A server answered 200 with a body that is not the API's JSON."""


def check_base_url(url) -> str:
    """The one rule for a server's address (the CLI's ``--base-url``, the config's
    ``base_url``, the backend itself): an http:// or https:// URL with a host; the problem as
    a sentence, or ``""`` when there is none."""
    parts = urlsplit(str(url))
    try:
        parts.port  # noqa: B018 (raises on a port that is no number or out of range)
    except ValueError as exc:
        return f"base URL {str(url)!r}: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (f"base URL {str(url)!r}: an OpenAI-compatible server is an http:// or https:// "
                "URL, e.g. http://127.0.0.1:8000/v1")
    return ""


# --- the wall-clock bounds ------------------------------------------------------------------

def backoff_s(attempt: int) -> float:
    """The longest wait after failed attempt ``attempt`` when the server asks for none: 0.5 s
    doubling to 8 s (each wait is this times a jitter of 0.75 to 1)."""
    return min(0.5 * 2 ** (attempt - 1), 8.0)


# What a call spends outside its attempts' own bounds, per attempt (setting up a retry, a sleep
# that wakes late on a loaded machine): the default deadline leaves room for it, so that the
# last attempt's timeout, not the deadline, ends a call that no server's Retry-After stretched.
ATTEMPT_SLACK_S = 1.0


def default_deadline(timeout_s: float, max_retries: int) -> float:
    """A call's deadline when none is given: what every attempt and every backoff between
    them can take, with :data:`ATTEMPT_SLACK_S` an attempt, so that only a server's longer
    Retry-After runs into it."""
    attempts = max_retries + 1
    return (attempts * (timeout_s + ATTEMPT_SLACK_S)
            + sum(backoff_s(a) for a in range(1, max_retries + 1)))


class _Deadlines:
    """The end of the attempt each thread is making (``time.monotonic()``), enforced on every
    socket operation of the HTTP library: each read, write and connect gets at most the time
    left, and none starts once it has passed. A thread-local because the client is synchronous:
    an attempt's socket operations run in the thread that makes it."""

    def __init__(self):
        self._local = threading.local()

    def set(self, at: float | None) -> None:
        self._local.at = at

    def left(self) -> float | None:
        at = getattr(self._local, "at", None)
        return None if at is None else at - time.monotonic()

    def cap(self, timeout: float | None, expired: type[Exception]) -> float | None:
        left = self.left()
        if left is None:
            return timeout
        if left <= 0:
            raise expired("the attempt's time is up")
        return left if timeout is None else min(timeout, left)


class _BoundedStream:
    """A network stream of the HTTP library whose operations keep to the attempt's end."""

    def __init__(self, stream, deadlines: _Deadlines, errors):
        self._stream, self._deadlines, self._errors = stream, deadlines, errors

    def read(self, max_bytes, timeout=None):
        return self._stream.read(max_bytes, self._deadlines.cap(timeout, self._errors.ReadTimeout))

    def write(self, buffer, timeout=None):
        return self._stream.write(buffer, self._deadlines.cap(timeout, self._errors.WriteTimeout))

    def start_tls(self, *args, timeout=None, **kwargs):
        timeout = self._deadlines.cap(timeout, self._errors.ConnectTimeout)
        return _BoundedStream(self._stream.start_tls(*args, timeout=timeout, **kwargs),
                              self._deadlines, self._errors)

    def __getattr__(self, name):   # close, get_extra_info
        return getattr(self._stream, name)


class _BoundedBackend:
    """The HTTP library's network backend, its streams bounded by :class:`_Deadlines`."""

    def __init__(self, backend, deadlines: _Deadlines, errors):
        self._backend, self._deadlines, self._errors = backend, deadlines, errors

    def connect_tcp(self, *args, timeout=None, **kwargs):
        timeout = self._deadlines.cap(timeout, self._errors.ConnectTimeout)
        return _BoundedStream(self._backend.connect_tcp(*args, timeout=timeout, **kwargs),
                              self._deadlines, self._errors)

    def connect_unix_socket(self, *args, timeout=None, **kwargs):
        timeout = self._deadlines.cap(timeout, self._errors.ConnectTimeout)
        return _BoundedStream(self._backend.connect_unix_socket(*args, timeout=timeout,
                                                                 **kwargs),
                              self._deadlines, self._errors)

    def __getattr__(self, name):   # sleep
        return getattr(self._backend, name)


def bound_http_client(http_client, deadlines: _Deadlines) -> int:
    """Give every connection pool of ``http_client`` (an httpx client, or httpx2's: the openai
    package uses one or the other) a network backend bounded by ``deadlines``; return how many
    pools were bounded (0: this library version keeps its pools elsewhere, and a test fails)."""
    transports = [getattr(http_client, "_transport", None),
                  *getattr(http_client, "_mounts", {}).values()]
    bounded = 0
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            continue
        errors = importlib.import_module(type(pool).__module__.split(".")[0])
        pool._network_backend = _BoundedBackend(backend, deadlines, errors)
        bounded += 1
    return bounded


class _BoundedAnswers:
    """The HTTP library's transport, every answer read whole under the bound on an LLM answer
    (:mod:`cruxflow.llm.answers`) before the client sees it: an answer past it is a transport
    error of its own kind (:func:`_refusal`), which the client reports as a connection error
    and :meth:`OpenAIBackend._retry` as the bound it broke. Uncompressed answers are asked for
    (a compressed one could be small on the wire and huge in memory)."""

    def __init__(self, transport, lib):
        self._transport, self._lib = transport, lib

    def handle_request(self, request):
        request.headers["Accept-Encoding"] = "identity"
        response = self._transport.handle_request(request)
        try:
            body, problem = self._read(response)
        finally:
            response.close()
        if problem is None and 200 <= response.status_code < 300:
            problem = body_problem(body)
        if problem is not None:
            raise _refusal(self._lib)(problem, request=request)
        headers = [(k, v) for k, v in response.headers.raw
                   if k.lower() not in (b"content-length", b"transfer-encoding")]
        return self._lib.Response(response.status_code, headers=headers, content=body,
                                  extensions=response.extensions, request=request)

    @staticmethod
    def _read(response) -> tuple[bytes, str | None]:
        limit = max_answer_bytes()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return b"", (f"an answer compressed as {encoding!r}, though cruxflow asks for none "
                         "(its size in memory would be unbounded)")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return b"", too_long(limit) + f" (it declares {int(declared):,})"
        chunks, size = [], 0
        for chunk in response.stream:
            size += len(chunk)
            if size > limit:
                return b"", too_long(limit)
            chunks.append(chunk)
        return b"".join(chunks), None

    def close(self):
        self._transport.close()

    def __getattr__(self, name):   # __enter__, __exit__, the pool
        return getattr(self._transport, name)


_REFUSALS: dict[str, type] = {}


def _refusal(lib) -> type:
    """The error of an answer past the bound, a transport error of ``lib`` (httpx or httpx2,
    whichever the client uses), so that the client wraps it as it wraps a broken
    connection."""
    if lib.__name__ not in _REFUSALS:
        _REFUSALS[lib.__name__] = type("AnswerRefused", (lib.TransportError,),
                                       {"answer_bound": True})
    return _REFUSALS[lib.__name__]


def bound_answers(http_client) -> int:
    """Put :class:`_BoundedAnswers` around every transport of ``http_client``; return how many
    (0: this library version keeps them elsewhere, and a test fails)."""
    # the HTTP library the client is built on (the openai package subclasses its Client)
    lib = next(importlib.import_module(c.__module__.split(".")[0])
               for c in type(http_client).__mro__ if c.__module__.startswith("httpx"))
    wrapped = 0
    if getattr(http_client, "_transport", None) is not None:
        http_client._transport = _BoundedAnswers(http_client._transport, lib)
        wrapped += 1
    mounts = getattr(http_client, "_mounts", {})
    for pattern, transport in list(mounts.items()):
        if transport is not None:
            mounts[pattern] = _BoundedAnswers(transport, lib)
            wrapped += 1
    return wrapped


class OpenAIBackend(Backend):
    kind = "openai"

    def __init__(self, model: str, *, base_url: str, endpoint: str = "chat",
                 api_key_env: str = DEFAULT_KEY_ENV, timeout_s: float = 300.0,
                 max_retries: int = 5, deadline_s: float | None = None, concurrency: int = 8,
                 constrain: str = "none", extra_body: dict | None = None,
                 prompt_cache: bool | None = None):
        super().__init__(model, endpoint=endpoint)
        if constrain not in CONSTRAINTS:
            raise LLMError(f"constrain must be one of {CONSTRAINTS}, not {constrain!r}")
        try:
            import openai
        except ImportError as e:
            raise LLMError(extra_hint("the openai backend", "llm", "openai")) from e
        self._openai = openai
        if problem := check_base_url(base_url):
            raise LLMError(problem)
        # Local servers take any key (the default variable may be unset); a variable named on
        # purpose must hold one. Its value is never logged.
        key = os.environ.get(api_key_env)
        if not key and api_key_env != DEFAULT_KEY_ENV:
            raise LLMError(f"the environment variable {api_key_env} (api key) is not set or "
                           "empty: export it, or name another with --api-key-env")
        key = key or "EMPTY"
        self.base_url = base_url
        self.timeout_s = float(timeout_s)
        self.max_retries = check_count("max_retries", max_retries)
        self.deadline_s = (float(deadline_s) if deadline_s is not None
                           else default_deadline(self.timeout_s, self.max_retries))
        if not (self.timeout_s > 0 and self.deadline_s > 0):
            raise LLMError(f"timeout_s ({timeout_s}) and deadline_s ({deadline_s}) must be "
                           "more than 0 seconds")
        self._deadlines = _Deadlines()
        # follow_redirects=False: a redirect would carry the prompt (a POST's body) elsewhere
        http_client = openai.DefaultHttpxClient(follow_redirects=False)
        self.bounded_pools = bound_http_client(http_client, self._deadlines)
        if not self.bounded_pools:
            log.warning("this version of the HTTP library keeps its connections where cruxflow "
                        "cannot bound them: --timeout bounds each read, not a whole answer")
        self.bounded_transports = bound_answers(http_client)
        # max_retries=0: the client's own retries say nothing about why or how long they wait
        self.client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s,
                                    max_retries=0, http_client=http_client)
        self.concurrency = check_count("concurrency", concurrency)
        self.constrain = constrain
        self.extra_body = dict(extra_body or {})
        self.prompt_cache = prompt_cache
        log.info("OpenAI-compatible server %s, model %s (key from $%s)", base_url, model,
                 api_key_env)

    def _extra(self, request: Request) -> dict:
        extra = dict(self.extra_body)
        choices = request.sampling.choices
        if choices and self.constrain == "vllm":
            extra["structured_outputs"] = {"choice": list(choices)}
        if choices and self.constrain == "llamacpp":
            extra["grammar"] = choice_grammar(choices)
        # cache_prompt is llama.cpp's server's own field, sent only when it is configured (or,
        # with constrain: llamacpp, off as in process: reuse makes near ties depend on request
        # order). Other servers decide prefix caching at start-up (vllm serve
        # --enable-prefix-caching).
        if self.prompt_cache is not None:  # text generation never reuses (may_reuse_prompt)
            extra.setdefault("cache_prompt", bool(self.prompt_cache)
                             and may_reuse_prompt(request.sampling))
        elif self.constrain == "llamacpp":
            extra.setdefault("cache_prompt", False)
        return extra

    def _one(self, request: Request) -> Completion:
        s = request.sampling
        kwargs = dict(model=self.model, max_tokens=s.max_tokens, temperature=s.temperature,
                      top_p=s.top_p, extra_body=self._extra(request) or None)
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.stop:
            kwargs["stop"] = list(s.stop)
        if self.endpoint == "chat":
            if s.logprobs:
                kwargs.update(logprobs=True, top_logprobs=s.logprobs)
            call = lambda: self.client.chat.completions.create(  # noqa: E731
                messages=chat_messages(request), **kwargs)
        else:
            if s.logprobs:
                kwargs["logprobs"] = s.logprobs
            call = lambda: self.client.completions.create(prompt=request.text, **kwargs)  # noqa: E731

        def answer() -> dict:
            resp = call()
            if not hasattr(resp, "model_dump"):  # the client hands back a non-JSON body as text
                raise NotJSONError(f"HTTP 200 but the body is not JSON "
                                   f"(it starts {str(resp)[:60]!r})")
            return resp.model_dump(warnings=False)   # a wrong shape is ours to name

        data = self._with_retries(answer)
        try:
            if not isinstance(data.get("choices"), list) or not data["choices"]:
                raise ResponseShapeError("choices", "missing or empty (a response without "
                                                    "choices)")
            return completion_from_choice(data["choices"][0], data.get("usage"),
                                          data.get("timings"))
        except ResponseShapeError as e:
            raise LLMError(f"LLM server {self.base_url}: HTTP 200 but the answer is not in the "
                           f"API's shape: {e}") from None

    def _with_retries(self, call):
        """``call()`` within the bounds: each attempt ends by ``timeout_s``, the whole call
        (attempts and waits) by ``deadline_s``; the error says which bound was hit."""
        attempts = self.max_retries + 1
        deadline = time.monotonic() + self.deadline_s
        for attempt in range(1, attempts + 1):
            start = time.monotonic()
            self._deadlines.set(min(start + self.timeout_s, deadline))
            try:
                return call()
            except (self._openai.OpenAIError, NotJSONError, json.JSONDecodeError) as e:
                now = time.monotonic()
                reason, wait = self._retry(e, attempt, cut=now >= deadline - 1e-3,
                                           took=now - start)
                if wait is None:
                    raise LLMError(f"LLM server {self.base_url}: {type(e).__name__}: "
                                   f"{reason}") from e
                left = deadline - now
                bound = None
                if attempt == attempts:
                    bound = (f"gave up after {attempt} attempts: max_retries "
                             f"{self.max_retries}") if attempt > 1 else ""
                elif left <= 1e-3:
                    bound = (f"the call's deadline of {self.deadline_s:g} s passed after "
                             f"{attempt} attempts")
                elif wait >= left:
                    bound = (f"the call's deadline of {self.deadline_s:g} s leaves "
                             f"{left:.1f} s: no time to wait {wait:g} s for attempt "
                             f"{attempt + 1}")
                if bound is not None:
                    if "deadline" in reason and "deadline" in bound:
                        bound = f"attempt {attempt} of {attempts}"
                    raise LLMError(f"LLM server {self.base_url}: {type(e).__name__}: "
                                   f"{reason}" + (f" ({bound})" if bound else "")) from e
                log.warning("LLM server %s: %s (attempt %d of %d); retrying in %.1f s",
                            self.base_url, reason, attempt, attempts, wait)
                time.sleep(wait)
            finally:
                self._deadlines.set(None)
        raise AssertionError("unreachable")

    def _retry(self, e, attempt: int, *, cut: bool = False,
               took: float = 0.0) -> tuple[str, float | None]:
        """Why ``e`` happened, and how long to wait before trying again (``None``: do not;
        the request itself is wrong). ``cut``: the call's deadline ended the attempt."""
        backoff = backoff_s(attempt) * random.uniform(0.75, 1.0)
        # A proxy's or a half-started server's page instead of the API's JSON: a failed attempt
        if isinstance(e, NotJSONError):
            return str(e), backoff
        if isinstance(e, json.JSONDecodeError):
            return (f"HTTP 200 but the body is not JSON ({e.msg} at character {e.pos}; it "
                    f"starts {e.doc[:60]!r})"), backoff
        cause = type(e.__cause__).__name__ if e.__cause__ is not None else ""
        if isinstance(e, self._openai.APITimeoutError):
            if cut:
                return (f"the call's deadline of {self.deadline_s:g} s passed (deadline: "
                        "connecting, answers, retries and waits together)"), backoff
            if cause == "ConnectTimeout":
                return f"cannot connect within {self.timeout_s:g} s (timeout)", backoff
            return f"no whole answer within {self.timeout_s:g} s (timeout)", backoff
        if isinstance(e, self._openai.APIConnectionError):
            if getattr(e.__cause__, "answer_bound", False):   # past the bound on an answer
                return str(e.__cause__), backoff
            if cause in ("RemoteProtocolError", "ReadError", "WriteError"):
                # it connected: the answer (or the request) broke off half way
                return (f"the connection broke during the exchange after {took:.1f} s "
                        f"({e.__cause__})"), backoff
            return f"cannot connect ({e.__cause__ or e})", backoff
        if isinstance(e, self._openai.APIStatusError):
            status = e.status_code
            if 300 <= status < 400:
                return _redirect(e.response), None
            body = e.body if isinstance(e.body, dict) else {}
            reason = f"HTTP {status}: {body.get('message') or e.message}"
            if status in RETRY_STATUS or status >= 500:
                return reason, _retry_after(e.response.headers) or backoff
            return reason, None
        return str(e), None

    def generate(self, requests: list[Request]) -> list[Completion]:
        out: list[Completion | None] = [None] * len(requests)
        for i, c in self.generate_iter(requests):
            out[i] = c
        return out  # type: ignore[return-value]

    def generate_iter(self, requests: list[Request]):
        if self.concurrency == 1 or len(requests) <= 1:
            for i, r in enumerate(requests):
                yield i, self._one(r)
            return
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = {pool.submit(self._one, r): i for i, r in enumerate(requests)}
            try:
                for f in as_completed(futures):
                    yield futures[f], f.result()
            finally:  # on an error, do not start what has not started
                for f in futures:
                    f.cancel()

    def close(self) -> None:
        self.client.close()


def _redirect(response) -> str:
    """A redirect, not followed: its status, where from and where to."""
    location = response.headers.get("location")
    to = str(response.url.join(location)) if location else "nowhere (no Location header)"
    return (f"HTTP {response.status_code} redirect from {response.url} to {to}: not followed (a "
            "redirect would send the prompt there); give the server's own address as the base "
            "URL")


def _retry_after(headers) -> float | None:
    """The wait a server asks for (``retry-after-ms``, or ``retry-after`` in seconds); the
    call's deadline decides whether it can be waited."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if 0 <= value < float("inf"):
            return value
    return None
