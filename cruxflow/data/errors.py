"""One error type for bad input, so every message names the file, the record and the field."""

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
