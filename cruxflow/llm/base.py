"""What every LLM backend speaks: requests with their sampling, completions with logprobs.

A request is one prompt (sent as a single user turn on chat endpoints, as raw text on
completion endpoints) with its sampling parameters. Everything a request holds goes into the
cache key, so two requests that could give different outputs never share an entry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field


class LLMError(RuntimeError):
    """A backend failed for good (after its retries) or was configured wrongly."""


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters. The paper: text at temperature 0.7, top-p 0.95; judgments greedy.

    ``logprobs``: how many top alternatives to return for the first generated token (0: none).
    ``choices``: constrain the output to one of these strings (a grammar on llama.cpp,
    ``structured_outputs`` on vLLM); backends that cannot constrain ignore it and the caller
    parses the text.
    """

    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 512
    seed: int | None = 0
    logprobs: int = 0
    choices: tuple[str, ...] | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self):
        # Canonical types, so that temperature=0 and temperature=0.0 share a cache key.
        object.__setattr__(self, "temperature", float(self.temperature))
        object.__setattr__(self, "top_p", float(self.top_p))
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "logprobs", int(self.logprobs))
        if self.seed is not None:
            object.__setattr__(self, "seed", int(self.seed))
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        object.__setattr__(self, "stop", tuple(self.stop))

    def to_json(self) -> dict:
        return asdict(self)


GENERATION = Sampling(temperature=0.7, top_p=0.95)
JUDGMENT = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, logprobs=20,
                    choices=tuple("012345"))


@dataclass(frozen=True)
class Request:
    """A prompt (the user message on chat endpoints) and how to sample. ``system``: an optional
    system message (chat endpoints; prepended to the prompt on completion endpoints)."""

    prompt: str
    sampling: Sampling = field(default_factory=Sampling)
    system: str | None = None

    @property
    def text(self) -> str:
        """The whole prompt as one text, for completion endpoints."""
        return f"{self.system}\n\n{self.prompt}" if self.system else self.prompt


def may_reuse_prompt(sampling: Sampling) -> bool:
    """Whether a backend's ``prompt_cache`` applies to a request: only to a one-token answer (a
    rating read from its first token), where reusing the previous prompt's KV saves most of the
    work. A text (passages, questions, reports) is computed from an empty slot, so it depends on
    its request alone: with reuse, the float rounding of a prefix computed in another request's
    batch changed sampled texts, and a job resumed after a crash (its first call on an empty
    slot) wrote other passages than an uninterrupted one (docs/ratings.md)."""
    return sampling.max_tokens == 1


@dataclass
class Completion:
    """One output. ``top_logprobs``: the first generated token's alternatives (token -> ln p).
    ``cached_tokens``: of the ``prompt_tokens``, those whose KV the backend reused from an
    earlier prompt (``prompt_cache``) instead of computing them; ``None`` when it does not say."""

    text: str
    finish_reason: str | None = None
    top_logprobs: dict[str, float] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict) -> Completion:
        return cls(**{k: obj.get(k) for k in
                      ("text", "finish_reason", "top_logprobs", "prompt_tokens",
                       "completion_tokens", "cached_tokens")})


def backend_identity(kind: str, model: str, endpoint: str = "chat",
                     model_revision: str | None = None) -> dict:
    """The backend's part of every cache key (see :meth:`Backend.identity`), also computable
    from a config entry without building the backend (``cruxflow plan`` looks up the cache)."""
    out = {"kind": kind, "model": model, "endpoint": endpoint}
    if model_revision is not None:
        out["model_revision"] = model_revision
    return out


class Backend(ABC):
    """A model behind some API. Subclasses implement :meth:`generate` for a batch."""

    kind: str = "?"
    # An optional fingerprint of the weights behind ``model`` (a commit hash, a file's sha256,
    # a date): set from the config's ``model_revision``, it joins the cache key, so two
    # different models served under one name never share entries.
    model_revision: str | None = None

    def __init__(self, model: str, *, endpoint: str = "chat"):
        if endpoint not in ("chat", "completion"):
            raise LLMError(f"endpoint must be 'chat' or 'completion', not {endpoint!r}")
        self.model = model
        self.endpoint = endpoint

    def identity(self) -> dict:
        """What decides the output besides the request: part of every cache key.

        The server address is deliberately not part of it: a ``vllm serve`` job gets a new
        host every time it is scheduled, and the same weights give the same outputs there. The
        price is that two different models served under the same name would share entries;
        ``model_revision``, when set, tells them apart (absent otherwise, so the keys of
        earlier runs stay valid).
        """
        return backend_identity(self.kind, self.model, self.endpoint, self.model_revision)

    @abstractmethod
    def generate(self, requests: list[Request]) -> list[Completion]:
        """Outputs for ``requests``, in order. Raises :class:`LLMError` when it cannot."""

    def generate_iter(self, requests: list[Request]) -> Iterator[tuple[int, Completion]]:
        """``(index, output)`` pairs as they finish, so that each can be cached at once.

        By default the whole batch at once (vLLM's offline batching); backends that answer one
        request at a time override it.
        """
        outputs = self.generate(requests)
        if len(outputs) != len(requests):  # which output answers which request is unknown
            raise LLMError(f"backend returned {len(outputs)} outputs for {len(requests)} "
                           "requests")
        yield from enumerate(outputs)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model or connections."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def chat_messages(request: Request) -> list[dict]:
    system = [{"role": "system", "content": request.system}] if request.system else []
    return [*system, {"role": "user", "content": request.prompt}]


def choice_grammar(choices: tuple[str, ...]) -> str:
    """A GBNF grammar (llama.cpp) that accepts exactly one of ``choices``."""
    import json

    return "root ::= " + " | ".join(json.dumps(c) for c in choices)
