"""Build a reranker from its config entry (``retrieval.rerankers.<name>``), by its kind's
entry in :mod:`cruxflow.rerank.registry`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cruxflow.rerank.registry import KINDS as REGISTERED
from cruxflow.rerank.registry import Build, kind

KINDS = tuple(REGISTERED)


def make_reranker(spec: dict, *, llm_runner: Callable[[str | None], object] | None = None,
                  device: str | None = None,
                  questions: Mapping[str, Sequence[str]] | None = None):
    """A reranker for ``spec``. ``llm_runner(backend_name)`` supplies the cached LLM runner of
    the kinds that call an LLM through cruxflow (``None``: the default backend). ``device``
    (the job's: ``cuda`` or ``cpu``) defaults to ``cuda`` where the spec asks for GPUs. An
    unknown kind is a ValueError that names the known kinds. ``questions``: the topics' own
    sub-questions by query text (LANCER's ``subquestions: topic``)."""
    entry = kind(spec["kind"])
    if device is None:
        device = "cuda" if spec.get("gpus", 0) > 0 else "cpu"
    return entry.build(spec, Build(device=device, llm_runner=llm_runner,
                                   questions=questions))
