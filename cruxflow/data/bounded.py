"""A file's bytes under the one bound on a record (:data:`MAX_RECORD_BYTES`), for every text
reader of :mod:`cruxflow.data.io` (which re-exports what is public here): a line of a run, qrels,
JSONL or TSV file, or a whole JSON or YAML file, longer than the bound stops the reader with one
line naming the file; a ``.gz`` file reads as its uncompressed bytes under the same bound; a
path that cannot be read is a :class:`DataError` naming it."""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator

from cruxflow.data.errors import DataError

# --- the bound on a record ------------------------------------------------------------------

# The longest record any text reader takes: a line of a run, qrels, JSONL or TSV file, or a whole
# JSON or YAML file. Without a bound, an input with no newline (``--run /dev/zero``, a binary file
# given by mistake) grows in memory until the machine swaps; with it, the reader stops with one
# line naming the file. 32 MiB is some 60 times the longest Multi-News article; where lines
# really are longer, raise it with the environment variable.
MAX_RECORD_BYTES = 32 << 20
MAX_RECORD_ENV = "CRUXFLOW_MAX_RECORD_BYTES"
_CHUNK = 1 << 22


def max_record_bytes() -> int:
    """The bound in force: ``$CRUXFLOW_MAX_RECORD_BYTES`` where set, else
    :data:`MAX_RECORD_BYTES`."""
    text = os.environ.get(MAX_RECORD_ENV, "").strip()
    if not text:
        return MAX_RECORD_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise DataError(f"${MAX_RECORD_ENV} is {text!r}: expected a positive number of bytes")
    return value


def _too_long(path, limit: int, at: int) -> DataError:
    return DataError(f"a line longer than {limit:,} bytes (from byte {at:,}): not a text file of "
                     "records (a device, a binary file?); where lines are this long, raise the "
                     f"bound with {MAX_RECORD_ENV}", path=path)


def _check_lines(data, line_start: int, limit: int, path) -> None:
    """Raise :func:`_too_long` if a line of ``data`` (the first begun at ``line_start``) runs
    past ``limit`` bytes. Each step jumps to the last newline within ``limit`` bytes of a line's
    start: about one ``rfind`` per ``limit`` bytes, whatever the number of lines."""
    pos, end = line_start, len(data)
    while end - pos > limit:
        newline = data.rfind(b"\n", pos, pos + limit + 1)
        if newline < 0:
            raise _too_long(path, limit, pos)
        pos = newline + 1


class _LineBound:
    """The bound over the consecutive pieces of a stream, each no longer than the bound (so a
    line between two newlines of one piece is within it): only the line that spans pieces is
    counted."""

    def __init__(self, path, limit: int):
        self.path, self.limit = path, limit
        self.offset = self.since = 0   # bytes read; bytes since the last newline

    def feed(self, piece: bytes) -> int:
        """Check ``piece``; return where its last newline ends (0: none)."""
        cut = piece.rfind(b"\n") + 1
        if self.since + (piece.find(b"\n") if cut else len(piece)) > self.limit:
            raise _too_long(self.path, self.limit, self.offset - self.since)
        self.offset += len(piece)
        self.since = len(piece) - cut if cut else self.since + len(piece)
        return cut


def read_bytes(path) -> bytes:
    """A whole file's bytes, a ``.gz`` file's uncompressed (collections such as NeuCLIR's are
    distributed gzipped); a missing file, a directory, a file that cannot be read, a broken
    gzip stream or a line longer than :func:`max_record_bytes` is a :class:`DataError` naming
    the path (:func:`read_text` decodes them).

    A regular file is checked through a memory map before it is read whole (an 8 GB file with
    no newline is refused having touched a few pages of it); a pipe, a device or a gzip stream
    is read in pieces, each checked as it arrives."""
    limit = max_record_bytes()
    if _gzipped(path):
        with _read_errors(path):
            bound, pieces = _LineBound(path, limit), []
            for piece in _gzip_pieces(path, min(_CHUNK, limit)):
                bound.feed(piece)
                pieces.append(piece)
            return b"".join(pieces)
    try:
        with open(path, "rb") as f:
            if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                try:
                    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                except (ValueError, OSError):   # empty, or a file system without mmap
                    mapped = None
                if mapped is not None:
                    with mapped:
                        _check_lines(mapped, 0, limit, path)
                    return f.read()
            bound, pieces = _LineBound(path, limit), []
            while piece := f.read(min(_CHUNK, limit)):
                bound.feed(piece)
                pieces.append(piece)
            return b"".join(pieces)
    except OSError as exc:
        raise read_error(exc, path) from None


def read_line_blocks(path, size: int = 1 << 17) -> Iterator[bytes]:
    """A file's bytes in blocks of whole lines of about ``size`` bytes (the last block may
    lack its newline), read one block at a time, errors (and the bound on a line) as
    :func:`read_bytes`'s. A reader of a large file that keeps little of each line then never
    holds the whole file: each page of fresh memory costs a fault (about 7 us in a virtual
    machine), while a block's memory is reused by the next."""
    bound = _LineBound(path, max_record_bytes())
    step = min(size, bound.limit)
    with _read_errors(path):
        start: list[bytes] = []   # the start of a line that goes on in the next chunk
        for chunk in _gzip_pieces(path, step) if _gzipped(path) else _pieces(path, step):
            cut = bound.feed(chunk)
            if not cut:
                start.append(chunk)
                continue
            yield b"".join((*start, chunk[:cut])) if start else chunk[:cut]
            start = [chunk[cut:]] if cut < len(chunk) else []
        if start:
            yield b"".join(start)


def _gzipped(path) -> bool:
    return str(path).endswith(".gz")


def _pieces(path, size: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while piece := f.read(size):
            yield piece


def _gzip_pieces(path, size: int) -> Iterator[bytes]:
    """A ``.gz`` file's uncompressed bytes in pieces of ``size`` (a gzip bomb is cut by the
    bound on a line, or read no faster than a file of its uncompressed size)."""
    import gzip

    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as f:
        while piece := f.read(size):
            yield piece


@contextlib.contextmanager
def _read_errors(path):
    """An OSError of reading ``path`` as :func:`_read_error`'s one line; a broken gzip stream
    as 'not a readable gzip file'."""
    import gzip
    import zlib

    try:
        yield
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DataError(f"not a readable gzip file: {exc}", path=path) from None
    except OSError as exc:
        raise read_error(exc, path) from None


def read_error(exc: OSError, path) -> DataError:
    if isinstance(exc, FileNotFoundError):
        return DataError("no such file", path=path)
    if isinstance(exc, IsADirectoryError):
        return DataError("is a directory, expected a file", path=path)
    if isinstance(exc, PermissionError):
        return DataError("cannot read: permission denied", path=path)
    # a symlink to itself (ELOOP), an I/O error
    return DataError(f"cannot read: {os.strerror(exc.errno) if exc.errno else exc}", path=path)
