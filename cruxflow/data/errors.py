"""The errors of bad input: :class:`DataError` names the file, the record and the field;
:class:`ConfigError` the key paths of a workflow config (``cruxflow.workflow.config``)."""

from __future__ import annotations


class DataError(ValueError):
    """Input that cannot be used as it is.

    ``path`` is the file, ``record`` says where in it (``line 12``, ``row 3``, ``doc APW...``) and
    ``field`` which field is wrong; each is optional but the message always carries what is known.
    """

    def __init__(self, message: str, *, path=None, record=None, field=None):
        self.path = None if path is None else str(path)
        self.record = record
        self.field = field
        self.reason = message
        where = [x for x in (self.path, None if record is None else str(record)) if x]
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{': '.join(where)}: {message}" if where else message)


class ConfigError(ValueError):
    """Problems in a workflow config, each as (key path, what is wrong)."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        lines = [f"{key}: {message}" for key, message in problems]
        super().__init__("invalid config:\n  " + "\n  ".join(lines) if len(lines) > 1
                         else f"invalid config: {lines[0]}")

    @property
    def keys(self) -> list[str]:
        return [key for key, _ in self.problems]
