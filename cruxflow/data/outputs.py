"""Writing outputs: atomic files and folders, a command's outputs together, inputs protected.

Every writer goes through :func:`atomic_write`: the content is written to a temporary file in the
target directory and moved into place with ``os.replace``, so a killed job never leaves a
half-written output that a later rule would trust; :func:`atomic_directory` does the same for a
whole directory, and under :func:`outputs_together` (every console command) a command's files
are moved into place together when it succeeds. Outputs get the mode a plain ``open`` would
give them (the umask's, or the mode of the file they replace), so colleagues on a shared file
system can read them. No writer replaces an input of the running command
(:func:`inputs_protected`), and the system's refusal (a full disk, a read-only file system)
is one line naming the output. A temporary file or folder carries its writer's host and process
id in its name, so that the next writer of the same output removes what a killed one left
(:func:`remove_stale`). The writers of file formats (:mod:`cruxflow.data.io`) write through
:func:`atomic_write`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterable
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


# --- temporaries a killed writer left ---------------------------------------------------------


def owner_tag() -> str:
    """This process as the name of its temporaries say it: ``<host>-<pid>``."""
    host = re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname()) or "host"
    return f"{host}-{os.getpid()}"


def _temporary_prefix(path: Path, old: bool = False) -> str:
    """The name a temporary of ``path`` begins with: ``.<name>.<host>-<pid>.`` (a file or a
    folder being written) or ``.<name>.old-<host>-<pid>.`` (the folder replaced, moved aside)."""
    return f".{path.name}.{'old-' if old else ''}{owner_tag()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process
        return True
    return True


def remove_stale(path) -> list[Path]:
    """Remove the temporaries of ``path`` that a writer killed before it finished left beside
    it (``kill -9``, out of memory): those named for a process of this host that no longer
    runs; a folder killed between its two renames (``path`` gone, the old one aside) is put
    back first. A live writer's temporaries (another process writing the same output) and
    another host's (a shared file system) are left alone. Returns what was removed."""
    path = Path(path)
    host = owner_tag().rsplit("-", 1)[0]
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:old-)?{re.escape(host)}-(\d+)\.")
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or _alive(int(match[1])):
            continue
        with contextlib.suppress(OSError):
            aside = Path(entry.path) / path.name
            if ".old-" in entry.name and not os.path.lexists(path) and aside.is_dir():
                os.rename(aside, path)   # killed between its two renames: the old one back
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


# --- a command's outputs together -----------------------------------------------------------

# The open stage (at most one): the finished temporaries of atomic_write, each with its target,
# moved into place when the stage ends without an error; and the temporary folders of
# atomic_directory, inside which files are written as they come.
_STAGE: list[list[tuple[str, Path]]] = []
_OPEN_DIRECTORIES: list[Path] = []


@contextlib.contextmanager
def outputs_together():
    """For the block (one console command): every :func:`atomic_write` keeps its finished
    temporary file beside its target, and all of them are moved into place when the block
    ends without an error; when it fails (a full disk, a bad record met late, Ctrl-C), they
    are removed and every output stays as it was. So a command's files appear together or not
    at all: never a new ``per_query.tsv`` beside an old ``aggregate.tsv``. The moves are
    renames within each target's folder, done one after the other at the end; a folder
    written by :func:`atomic_directory` is swapped in as a whole when it is complete."""
    if _STAGE:   # already inside one: the outer block decides
        yield
        return
    stage: list[tuple[str, Path]] = []
    _STAGE.append(stage)
    try:
        yield
    except BaseException:
        for tmp, _ in stage:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _STAGE.remove(stage)
    for i, (tmp, target) in enumerate(stage):
        try:
            os.replace(tmp, target)
        except OSError as exc:
            for rest, _ in stage[i:]:
                with contextlib.suppress(OSError):
                    os.unlink(rest)
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            done = f"{i} of the {len(stage)} outputs were replaced before it" if i else \
                "nothing was replaced"
            raise DataError(f"cannot write: {reason}; {done}", path=target) from None


def _staged(path: Path) -> bool:
    """Whether a finished ``path`` waits for the end of the stage (not inside a temporary
    folder of :func:`atomic_directory`, which is swapped in as a whole)."""
    if not _STAGE:
        return False
    here = Path(os.path.abspath(path))
    return not any(Path(os.path.abspath(d)) in here.parents for d in _OPEN_DIRECTORIES)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file next to ``path``; on success move it over ``path`` (at the end of
    the command, under :func:`outputs_together`)."""
    path = Path(path)
    refuse_input(path)
    ensure_dir(path.parent)
    if path.is_dir():
        raise DataError("is a directory: cannot write a file there", path=path)
    remove_stale(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".tmp",
                                   dir=path.parent)
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
        if _staged(path):
            _STAGE[0].append((tmp, path))
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _SYSTEM_REFUSALS:
            raise _write_failed(exc, path) from None
        raise


# SQLite's result codes for what the system refused (a full disk, a read-only file system, a
# folder one may not write) and for a file that is no database (sqlite3.Error.sqlite_errorcode).
_SQLITE_SYSTEM = {13: errno.ENOSPC, 8: errno.EROFS, 3: errno.EACCES, 14: errno.EACCES,
                  10: errno.EIO}
_SQLITE_NOT_A_DATABASE = {26, 11}   # SQLITE_NOTADB, SQLITE_CORRUPT


def read_only_file_system(path) -> bool:
    """Whether ``path`` (or, where it is not there yet, its nearest folder that is) lies on a
    file system mounted read-only."""
    for candidate in (Path(path), *Path(path).absolute().parents):
        try:
            return bool(os.statvfs(candidate).f_flag & os.ST_RDONLY)
        except OSError:
            continue
    return False


def _almost_full(path) -> bool:
    """Whether the file system holding ``path`` has less than a MiB left to write."""
    for candidate in (Path(path), *Path(path).absolute().parents):
        try:
            fs = os.statvfs(candidate)
        except OSError:
            continue
        return fs.f_bavail * fs.f_frsize < 1 << 20
    return False


def connect_sqlite(path, *, timeout: float = 5.0):
    """A connection to the SQLite database ``path`` (autocommit) and whether it may write:
    read-write, except on a read-only file system, where it is opened immutable (read-only,
    no lock and no ``-wal``/``-shm`` files, which that system could not hold; nothing can
    change the file there), so that work that only reads runs."""
    import sqlite3
    from urllib.parse import quote

    if read_only_file_system(path) and Path(path).is_file():
        uri = f"file:{quote(str(Path(path).absolute()))}?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None,
                               check_same_thread=False), False
    return sqlite3.connect(path, timeout=timeout, isolation_level=None,
                           check_same_thread=False), True


def sqlite_error(exc, path, what: str, option: str) -> DataError | Exception:
    """One line for an SQLite error on a database the user named (``what``: "an LLM cache",
    given as ``option``): the system's refusal as "cannot write: No space left on device"
    (a database a full disk left empty is no reason to move it away; a read-only file system
    said as such, whatever SQLite's code), a file that is no database as such; anything else
    is returned as it is (a bug: its traceback)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:   # before Python 3.11, or no code: SQLite's words
        text = str(exc)
        code = (13 if "full" in text else 8 if "readonly" in text else
                26 if "not a database" in text else None)
    else:
        code &= 0xFF   # the primary code of an extended one (SQLITE_IOERR_WRITE is an IOERR)
    if code in _SQLITE_SYSTEM:
        refused = _SQLITE_SYSTEM[code]
        if refused != errno.ENOSPC and read_only_file_system(path):
            refused = errno.EROFS
        elif refused == errno.EIO and _almost_full(path):   # SQLite's "disk I/O error" when
            refused = errno.ENOSPC                           # its -shm file cannot grow
        reason = os.strerror(refused)
        return DataError(f"cannot write: {reason} (SQLite: {exc}); what was stored before "
                         "stays", path=path)
    if code in _SQLITE_NOT_A_DATABASE:
        return DataError(f"not {what} (SQLite says: {exc}); give another {option} or move "
                         "the file away", path=path)
    return exc


# What the system answers a write it will not do; anything else is a bug worth a traceback.
_SYSTEM_REFUSALS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM,
                    errno.EFBIG, errno.EIO}


@contextlib.contextmanager
def atomic_directory(path):
    """Yield a fresh temporary directory beside ``path``; on success it replaces ``path`` as a
    whole (whatever ``path`` held is gone, so no file of an earlier output survives), on failure
    it is removed and ``path`` is left as it was.

    The swap is two renames (old aside, new in); a crash between them leaves ``path`` missing
    and the old one beside it as ``.<name>.old-*``, never a mix of both; the next writer of
    ``path`` removes it (:func:`remove_stale`). The caller decides whether ``path`` may be
    replaced at all.
    """
    path = Path(path)
    refuse_input(path)
    ensure_dir(path.parent)
    if path.exists() and not path.is_dir():
        raise DataError("is a file, not a directory", path=path)
    remove_stale(path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=_temporary_prefix(path), suffix=".tmp",
                                    dir=path.parent))
    except PermissionError:
        raise DataError("cannot write: permission denied", path=path.parent) from None
    except OSError as exc:
        raise _write_failed(exc, path) from None
    _OPEN_DIRECTORIES.append(tmp)
    try:
        os.chmod(tmp, _new_mode(path, 0o777))
        yield tmp
        _OPEN_DIRECTORIES.remove(tmp)
        if path.is_dir() and any(path.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=_temporary_prefix(path, old=True),
                                        dir=path.parent))
            os.rename(path, old / path.name)
            os.rename(tmp, path)
            shutil.rmtree(old)
        else:  # absent or empty: rename replaces an empty directory
            os.rename(tmp, path)
    except BaseException as exc:
        if tmp in _OPEN_DIRECTORIES:
            _OPEN_DIRECTORIES.remove(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in _SYSTEM_REFUSALS:
            raise _write_failed(exc, path) from None
        if isinstance(exc, DataError) and exc.path and exc.path.startswith(str(tmp)):
            # name the output the user gave, not the temporary folder that is gone now
            raise DataError(exc.reason, path=str(path) + exc.path[len(str(tmp)):],
                            record=exc.record, field=exc.field) from None
        raise
