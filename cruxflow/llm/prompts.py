"""Prompts as named, versioned templates. The texts live with their method: the CRUX pipeline's
in :mod:`cruxflow.stages.prompts`, UDCG's, support's and KPR's in their packages under
:mod:`cruxflow.beyond`. A template's ``id`` (``name/version``) is recorded with every result
that used it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["PromptTemplate"]


@dataclass(frozen=True)
class PromptTemplate:
    """A named, versioned prompt with ``{field}`` placeholders.

    Only the names in ``fields`` are placeholders: any other braces in the text (or in the
    substituted values) are kept literally. When ``fields`` is not given, it is inferred from
    the ``{identifier}`` occurrences in ``text``, in order of first appearance.
    """

    name: str
    version: str
    text: str
    fields: tuple[str, ...] = field(default=())

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
