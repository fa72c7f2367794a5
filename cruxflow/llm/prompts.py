"""Prompts as named, versioned templates, kept as data: one TOML file per method under
``cruxflow/prompts/`` (the CRUX pipeline's ``crux.toml``; UDCG's, support's, KPR's and LANCER's),
read by :func:`load_prompts`. A template's ``id`` (``name/version``) is recorded with every
result that used it, and its rendered text is in every LLM call's cache key
(:func:`cruxflow.llm.cache.cache_key`), so an edit to a file changes the key of every request
it reaches.

A prompt's table in a file holds its ``version``, ``source`` (where the text comes from),
``fields`` (the ``{placeholders}`` filled per request), ``template`` (the text, with
``${part}`` where a named part goes) and its named parts: an ``instruction``, a ``rubric`` (a
list of ``[grade, text]`` levels written as ``rubric_format`` says), an in-context example, ...
``parts_from = "other"`` reuses another prompt's parts. The parts are kept on the template
(:attr:`PromptTemplate.parts`) for whoever shows them to people (the annotation app shows the
rating prompt's instruction and rubric), so that what people see and what the LLM is sent are
the same text.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType

__all__ = ["PROMPT_DIR", "PromptTemplate", "load_prompts"]

PROMPT_DIR = Path(__file__).resolve().parents[1] / "prompts"
# The keys of a prompt's table that are not parts.
_META = ("version", "source", "fields", "template", "parts_from", "rubric_format")
_PART = re.compile(r"\$\{([A-Za-z_]\w*)\}")


@dataclass(frozen=True)
class PromptTemplate:
    """A named, versioned prompt with ``{field}`` placeholders.

    Only the names in ``fields`` are placeholders: any other braces in the text (or in the
    substituted values) are kept literally. When ``fields`` is not given, it is inferred from
    the ``{identifier}`` occurrences in ``text``, in order of first appearance. ``parts``: the
    named pieces the text was built from (:func:`load_prompts`), read-only.
    """

    name: str
    version: str
    text: str
    fields: tuple[str, ...] = field(default=())
    parts: Mapping = field(default_factory=lambda: MappingProxyType({}), compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.fields:
            inferred = dict.fromkeys(re.findall(r"\{([A-Za-z_]\w*)\}", self.text))
            object.__setattr__(self, "fields", tuple(inferred))
        for name in self.fields:
            if not name.isidentifier():
                raise ValueError(f"invalid field name {name!r} in prompt {self.name!r}")
            if f"{{{name}}}" not in self.text:
                raise ValueError(f"field {name!r} does not occur in prompt {self.name!r}")

    @property
    def id(self) -> str:
        """``"name/version"``, e.g. ``"rating/crux-v1"``."""
        return f"{self.name}/{self.version}"

    def render(self, **values: object) -> str:
        """Substitute every declared ``{field}`` with ``str(value)`` in one pass.

        Extra keyword arguments are ignored (as with ``str.format``). Raises ``ValueError``
        naming the missing field(s).
        """
        missing = [name for name in self.fields if name not in values]
        if missing:
            raise ValueError(f"prompt {self.id}: missing field(s): {', '.join(missing)}")
        if not self.fields:
            return self.text
        pattern = re.compile(r"\{(" + "|".join(map(re.escape, self.fields)) + r")\}")
        return pattern.sub(lambda m: str(values[m.group(1)]), self.text)


def _part_text(spec: Mapping, name: str, value) -> str:
    """A part as it goes into the text: a string as it is, a rubric as its lines."""
    if isinstance(value, str):
        return value
    if name == "rubric":
        line = spec.get("rubric_format", "- {grade}: {text}")
        return "\n".join(line.format(grade=grade, text=text) for grade, text in value)
    raise ValueError(f"part {name!r} is neither text nor a rubric")


def _frozen(value):
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    return value


def prompts_from_toml(text: str, where: str = "prompts") -> dict[str, PromptTemplate]:
    """The prompts of one TOML document (see the module's docstring), by name."""
    tables = tomllib.loads(text)
    out: dict[str, PromptTemplate] = {}
    for name, spec in tables.items():
        parts = dict(tables[spec["parts_from"]]) if "parts_from" in spec else {}
        parts = {k: v for k, v in parts.items() if k not in _META}
        parts.update({k: v for k, v in spec.items() if k not in _META})

        def part(m, spec=spec, parts=parts, name=name):
            key = m.group(1)
            if key not in parts:
                raise ValueError(f"{where}: prompt {name!r} has no part {key!r}")
            return _part_text(spec, key, parts[key])

        body = _PART.sub(part, spec["template"])
        out[name] = PromptTemplate(name=name, version=spec["version"], text=body,
                                   fields=tuple(spec.get("fields", ())),
                                   parts=_frozen(parts), source=spec.get("source", ""))
    return out


@cache
def load_prompts(method: str) -> dict[str, PromptTemplate]:
    """The prompts of ``cruxflow/prompts/<method>.toml``, by name."""
    path = PROMPT_DIR / f"{method}.toml"
    return prompts_from_toml(path.read_text(encoding="utf-8"), str(path))
