"""File I/O shared by every stage: atomic writes, JSONL, TREC run and qrels files.

Every writer goes through :func:`atomic_write`: the content is written to a temporary file in the
target directory and moved into place with ``os.replace``, so a killed job never leaves a
half-written output that a later rule would trust; :func:`atomic_directory` does the same for a
whole directory. Outputs get the mode a plain ``open`` would give them (the umask's, or the mode
of the file they replace), so colleagues on a shared file system can read them. Every reader
reports bad records with the file and line they came from, and a path that cannot be read or
written is a :class:`DataError` naming it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cruxflow.data.errors import DataError


def current_umask() -> int:
    """The process's umask, read without changing it where the system says (Linux)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    old = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but brief)
    os.umask(old)
    return old


def _new_mode(path: Path, full: int) -> int:
    """What ``open`` (``full`` 0o666) or ``mkdir`` (0o777) would leave ``path`` with: the mode
    of what is there, else ``full`` less the umask. ``mkstemp``/``mkdtemp`` give 0600/0700
    whatever the umask, which a colleague on a shared file system cannot read."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return full & ~current_umask()


def ensure_dir(directory) -> Path:
    """``mkdir -p``; a file in the way (the directory itself or an ancestor) is a
    :class:`DataError` naming it."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in (d, *d.parents) if p.exists() and not p.is_dir()), d)
        raise DataError("is a file, not a directory: cannot write below it",
                        path=blocker) from None
    except PermissionError:
        raise DataError("cannot create the directory: permission denied", path=d) from None
    except OSError as exc:  # a read-only file system, a full disk
        raise _write_failed(exc, d) from None
    return d


# --- outputs never replace inputs ---------------------------------------------------------

# The inputs of the running command, as (path, the option that named it); every writer below
# refuses to replace one of them (set by the CLI for the length of one command).
_PROTECTED: list[tuple[Path, str]] = []


def same_file(a, b) -> bool:
    """Whether two paths name the same file or folder: the same inode where both exist (a
    symlink or a hard link of an input is that input), else the same resolved path."""
    a, b = Path(a), Path(b)
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b)
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return os.path.abspath(a) == os.path.abspath(b)


def refuse_input(path, option: str = "--output") -> None:
    """Raise a :class:`DataError` if writing ``path`` would replace an input of the command."""
    for given, named in _PROTECTED:
        if same_file(path, given):
            raise DataError(f"is the command's input {named} {given}: writing it would destroy "
                            f"the input; choose another {option}", path=path)


@contextlib.contextmanager
def inputs_protected(inputs: Iterable[tuple[Path, str]]):
    """For the length of the block, every :func:`atomic_write` (and the LLM cache) refuses to
    replace one of ``inputs`` (path, the option that named it)."""
    added = [(Path(p), named) for p, named in inputs]
    _PROTECTED.extend(added)
    try:
        yield
    finally:
        for item in added:
            _PROTECTED.remove(item)


def check_outputs(outputs: Iterable[tuple[Path, str, tuple[str, ...]]],
                  inputs: Iterable[tuple[Path, str]]) -> None:
    """Before a command does any work: no output (path, option, the file names it writes when
    it is a folder) is one of the ``inputs`` (path, option), nor holds one under a name it
    writes. The check a writer makes at the end (:func:`refuse_input`) catches the rest."""
    inputs = list(inputs)
    for out, option, names in outputs:
        for given, named in inputs:
            if same_file(out, given) or any(same_file(Path(out) / n, given) for n in names):
                raise DataError(f"is the command's input {named} {given} (or would overwrite "
                                f"it): choose another {option}", path=out)


def _write_failed(exc: OSError, path) -> DataError:
    """A write that the system refused (disk full, read-only file system, quota) as one line."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return DataError(f"cannot write: {reason}; nothing was replaced", path=path)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file next to ``path``; on success move it over ``path``."""
    path = Path(path)
    refuse_input(path)
    ensure_dir(path.parent)
    if path.is_dir():
        raise DataError("is a directory: cannot write a file there", path=path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except PermissionError:
        raise DataError("cannot write: permission denied", path=path) from None
    except OSError as exc:
        raise _write_failed(exc, path) from None
    try:
        os.fchmod(fd, _new_mode(path, 0o666))
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _SYSTEM_REFUSALS:
            raise _write_failed(exc, path) from None
        raise


# What the system answers a write it will not do; anything else is a bug worth a traceback.
_SYSTEM_REFUSALS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM,
                    errno.EFBIG, errno.EIO}


@contextlib.contextmanager
def atomic_directory(path):
    """Yield a fresh temporary directory beside ``path``; on success it replaces ``path`` as a
    whole (whatever ``path`` held is gone, so no file of an earlier output survives), on failure
    it is removed and ``path`` is left as it was.

    The swap is two renames (old aside, new in); a crash between them leaves ``path`` missing
    and the old one beside it as ``.<name>.old-*``, never a mix of both. The caller decides
    whether ``path`` may be replaced at all.
    """
    path = Path(path)
    refuse_input(path)
    ensure_dir(path.parent)
    if path.exists() and not path.is_dir():
        raise DataError("is a file, not a directory", path=path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except PermissionError:
        raise DataError("cannot write: permission denied", path=path.parent) from None
    except OSError as exc:
        raise _write_failed(exc, path) from None
    try:
        os.chmod(tmp, _new_mode(path, 0o777))
        yield tmp
        if path.is_dir() and any(path.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            os.rename(path, old / path.name)
            os.rename(tmp, path)
            shutil.rmtree(old)
        else:  # absent or empty: rename replaces an empty directory
            os.rename(tmp, path)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in _SYSTEM_REFUSALS:
            raise _write_failed(exc, path) from None
        if isinstance(exc, DataError) and exc.path and exc.path.startswith(str(tmp)):
            # name the output the user gave, not the temporary folder that is gone now
            raise DataError(exc.reason, path=str(path) + exc.path[len(str(tmp)):],
                            record=exc.record, field=exc.field) from None
        raise


def write_jsonl(path, rows: Iterable[dict]) -> int:
    """Write ``rows`` as JSON lines atomically; return how many were written."""
    n = 0
    with atomic_write(path) as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_json(path, obj) -> None:
    with atomic_write(path) as out:
        json.dump(obj, out, ensure_ascii=False, indent=2)
        out.write("\n")


def write_tsv(path, frame, *, index: bool = False, float_format: str = "%.6f") -> None:
    """Write a pandas DataFrame as a tab-separated table atomically (NaN as an empty cell)."""
    with atomic_write(path) as out:
        frame.to_csv(out, sep="\t", index=index, float_format=float_format)


def nan_to_none(value):
    """``None`` for a float NaN (JSON has no NaN), anything else unchanged."""
    return None if isinstance(value, float) and value != value else value


def existing(path, what: str) -> Path:
    """``path`` as a Path; a missing file is a :class:`DataError` saying what was expected."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"no such {what}", path=p)
    return p


def read_bytes(path) -> bytes:
    """A whole file's bytes, a ``.gz`` file's uncompressed (collections such as NeuCLIR's are
    distributed gzipped); a missing file, a directory, a file that cannot be read or a broken
    gzip stream is a :class:`DataError` naming the path (:func:`read_text` decodes them)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise _read_error(exc, path) from None
    if str(path).endswith(".gz"):
        import gzip
        import zlib

        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"not a readable gzip file: {exc}", path=path) from None
    return data


def read_line_blocks(path, size: int = 1 << 17) -> Iterator[bytes]:
    """A file's bytes in blocks of whole lines of about ``size`` bytes (the last block may
    lack its newline), read one block at a time, errors as :func:`read_bytes`'s. A reader of
    a large file that keeps little of each line then never holds the whole file: each page
    of fresh memory costs a fault (about 7 us in a virtual machine), while a block's memory
    is reused by the next."""
    try:
        with open(path, "rb") as f:
            start: list[bytes] = []   # the start of a line that goes on in the next chunk
            while chunk := f.read(size):
                cut = chunk.rfind(b"\n") + 1
                if not cut:
                    start.append(chunk)
                    continue
                yield b"".join((*start, chunk[:cut])) if start else chunk[:cut]
                start = [chunk[cut:]] if cut < len(chunk) else []
            if start:
                yield b"".join(start)
    except OSError as exc:
        raise _read_error(exc, path) from None


def _read_error(exc: OSError, path) -> DataError:
    if isinstance(exc, FileNotFoundError):
        return DataError("no such file", path=path)
    if isinstance(exc, IsADirectoryError):
        return DataError("is a directory, expected a file", path=path)
    if isinstance(exc, PermissionError):
        return DataError("cannot read: permission denied", path=path)
    # a symlink to itself (ELOOP), an I/O error
    return DataError(f"cannot read: {os.strerror(exc.errno) if exc.errno else exc}", path=path)


def read_text(path, encoding: str = "utf-8") -> str:
    """Read a whole text file; a decoding error names the file and the byte offset, a missing
    file, a directory or an unknown encoding is a :class:`DataError` naming the path.

    The one text reader of the package, so every file a user hands us reads the same way
    whatever editor wrote it: a leading byte-order mark (Windows editors write one) is dropped
    and Windows line endings (CRLF) read as LF. JSON forbids a raw CR inside a string, so no
    record changes.
    """
    return decode_text(read_bytes(path), path, encoding)


def decode_text(data: bytes, path, encoding: str = "utf-8") -> str:
    """:func:`read_text` of bytes already read from ``path``."""
    try:
        text = data.decode(encoding)
    except LookupError:
        raise DataError(f"unknown encoding {encoding!r}", path=path) from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not valid {encoding} at byte {exc.start} ({data[exc.start:exc.start + 8]!r}); "
            "pass the file's encoding (e.g. --encoding latin-1)",
            path=path,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n") if "\r" in text else text


# Python's JSON parser recurses once per level of nesting; no record of ours nests ten deep.
TOO_DEEP = "invalid JSON: nested too deeply (arrays or objects inside each other)"


def read_json(path, encoding: str = "utf-8"):
    """A whole JSON file's value; bad JSON names the file, line and column."""
    try:
        return json.loads(read_text(path, encoding))
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                        path=path) from None
    except RecursionError:
        raise DataError(TOO_DEEP, path=path) from None


# A YAML file whose aliases expand past this many values is refused: a "billion laughs" file is
# a few hundred bytes that every later walk of the config (validation, Snakemake) would expand.
MAX_YAML_VALUES = 1_000_000


def read_yaml(path, encoding: str = "utf-8"):
    """A YAML file's value; a syntax error (a tab in the indentation) names the file, line and
    column and what YAML says, in one line; an alias bomb is refused before anyone walks it."""
    import yaml

    try:
        value = yaml.safe_load(read_text(path, encoding))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        hint = "; indent with spaces, not tabs" if "\\t" in problem else ""
        raise DataError(f"invalid YAML: {problem}{hint}", path=path, record=where) from None
    except yaml.YAMLError as exc:
        raise DataError(f"invalid YAML: {' '.join(str(exc).split())}", path=path) from None
    if expanded_size(value) > MAX_YAML_VALUES:
        raise DataError(f"its aliases expand to more than {MAX_YAML_VALUES:,} values (a YAML "
                        "alias bomb?): refusing to read it", path=path)
    return value


def expanded_size(value, seen: dict | None = None) -> int:
    """How many values ``value`` holds once every shared (aliased) part is counted each time
    it occurs; computed once per shared object, so a bomb is measured in a few steps."""
    if not isinstance(value, dict | list):
        return 1
    seen = {} if seen is None else seen
    key = id(value)
    if key not in seen:
        seen[key] = 0  # a cycle (a recursive alias) counts once
        items = value.values() if isinstance(value, dict) else value
        seen[key] = 1 + sum(min(expanded_size(v, seen), MAX_YAML_VALUES + 1) for v in items)
    return seen[key]


def iter_jsonl(path, encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad JSON names file and line."""
    text = read_text(path, encoding)
    # split on "\n" only: str.splitlines() also splits on U+2028 and friends, which JSON
    # allows unescaped inside strings
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})",
                            path=path, record=f"line {lineno}") from None
        except RecursionError:
            raise DataError(TOO_DEEP, path=path, record=f"line {lineno}") from None
        if not isinstance(obj, dict):
            raise DataError(f"expected a JSON object, got {type(obj).__name__}",
                            path=path, record=f"line {lineno}")
        yield lineno, obj


def read_jsonl(path, encoding: str = "utf-8") -> list[dict]:
    return [obj for _, obj in iter_jsonl(path, encoding)]


# --- TREC files -------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunRow:
    query_id: str
    doc_id: str
    rank: int
    score: float


def read_run(path) -> dict[str, list[RunRow]]:
    """Read a TREC run (``qid Q0 docid rank score tag``) into ranked lists per query.

    Each query's list is in :func:`trec_order` (score descending, then document id
    descending: what trec_eval, and so ir_measures, do; the rank column is checked to be an
    integer and otherwise ignored); duplicate (query, doc) pairs are an error. Every door of
    cruxflow's own that reads a run reads it here.
    """
    runs: dict[str, list[RunRow]] = {}
    seen: set[tuple[str, str]] = set()
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        where = {"path": path, "record": f"line {lineno}"}
        if len(parts) != 6:
            raise DataError(f"expected 6 columns 'qid Q0 docid rank score tag', got {len(parts)}",
                            **where)
        qid, _, doc, rank, score, _tag = parts
        try:
            rank_i = int(rank)
        except ValueError:
            raise DataError(f"rank {rank!r} is not an integer", field="rank", **where) from None
        try:
            score_f = float(score)
        except ValueError:
            raise DataError(f"score {score!r} is not a number", field="score", **where) from None
        if math.isnan(score_f):  # NaN compares false with everything: the order would be
            raise DataError("score is NaN", field="score", **where)  # the file's line order
        if (qid, doc) in seen:
            raise DataError(f"document {doc!r} appears twice for query {qid!r}",
                            field="docid", **where)
        seen.add((qid, doc))
        runs.setdefault(qid, []).append(RunRow(qid, doc, rank_i, score_f))
    return {qid: trec_order(rows) for qid, rows in runs.items()}


def trec_order(rows: Iterable[RunRow]) -> list[RunRow]:
    """The one tie policy of cruxflow's doors: score descending, then document id descending
    (trec_eval's order; the rank column plays no part)."""
    by_id = sorted(rows, key=lambda r: r.doc_id, reverse=True)
    return sorted(by_id, key=lambda r: -r.score)   # stable: equal scores keep the id order


def ties_at_cutoff(run: dict[str, list[RunRow]], cutoffs) -> list[str]:
    """The topics whose top k (``cutoffs``: one int for every topic, or ``{topic: k}``)
    depends on the tie policy: the passage at rank k and the one at rank k + 1 have the same
    score, so which of the tied passages fall inside the top k is decided by their ids.
    Each door warns once with their count (:func:`tie_warning`)."""
    out = []
    for qid, rows in run.items():
        k = cutoffs.get(qid) if isinstance(cutoffs, dict) else cutoffs
        if k is not None and 0 < k < len(rows) and rows[k - 1].score == rows[k].score:
            out.append(qid)
    return out


def tie_warning(topics, total: int | None = None) -> str | None:
    """One line for ``ties_at_cutoff``'s topics (None when there are none)."""
    topics = list(topics)
    if not topics:
        return None
    of = f" of {total}" if total is not None else ""
    shown = ", ".join(topics[:5]) + (", ..." if len(topics) > 5 else "")
    return (f"tied scores decide which passages fall inside the top k for {len(topics)}{of} "
            f"topics ({shown}): ties are broken by passage id, descending (trec_eval's order)")


def write_run(path, ranking: dict[str, list[tuple[str, float]]], tag: str) -> None:
    """Write ``{qid: [(docid, score), ...]}`` (already in rank order) as a TREC run file."""
    with atomic_write(path) as out:
        for qid in sorted(ranking):
            for rank, (doc, score) in enumerate(ranking[qid], 1):
                out.write(f"{qid} Q0 {doc} {rank} {score:.6f} {tag}\n")


def read_qrels(path) -> dict[str, dict[str, int]]:
    """Read TREC qrels (``qid iter docid rel``) into ``{qid: {docid: rel}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise DataError(f"expected 4 columns 'qid iter docid rel', got {len(parts)}",
                            path=path, record=f"line {lineno}")
        try:
            rel = int(parts[3])
        except ValueError:
            raise DataError(f"relevance {parts[3]!r} is not an integer", path=path,
                            record=f"line {lineno}", field="rel") from None
        qrels.setdefault(parts[0], {})[parts[2]] = rel
    return qrels


def write_qrels(path, rows: Iterable[tuple[str, str, str, int]]) -> None:
    """Write ``(qid, iteration, docid, rel)`` rows; ``iteration`` is the subtopic for ndeval."""
    with atomic_write(path) as out:
        for qid, it, doc, rel in rows:
            out.write(f"{qid} {it} {doc} {rel}\n")
