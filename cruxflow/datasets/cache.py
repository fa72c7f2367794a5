"""Where fetched sets live and which of their files are verified.

``$CRUXFLOW_HOME/datasets/<name>/`` holds a set's files at their paths in the source (below the
set's ``subdir``), so that a subset and its corpus are folders side by side, as the authors'
``$CRUX_ROOT`` has them; ``.cruxflow-verified.json`` in it records each file verified (size,
sha256 and the file's modification time: a file changed since is hashed again, and refused
when its bytes no longer match). ``$CRUXFLOW_HOME/downloads/<name>/`` holds what is still
arriving (partial files, resumed by the next fetch); nothing there is ever read as data.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.datasets.registry import DataSet, FileEntry, home

MANIFEST = ".cruxflow-verified.json"
CHUNK = 1 << 20


def set_dir(name: str) -> Path:
    return home() / "datasets" / name


def downloads_dir(name: str) -> Path:
    return home() / "downloads" / name


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


class Manifest:
    """The verified files of one set folder, written atomically after each file."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / MANIFEST
        self._lock = threading.Lock()
        try:
            self.entries = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}

    def verified(self, entry: FileEntry) -> bool:
        """Whether ``entry``'s file is in the folder with the registry's bytes: recorded with
        the same size, sha256 and modification time, or hashed again and found equal."""
        path = self.folder / entry.path
        try:
            stat = path.stat()
        except OSError:
            return False
        if stat.st_size != entry.size:
            return False
        seen = self.entries.get(entry.path)
        if seen and seen.get("sha256") == entry.sha256 and seen.get("mtime_ns") == stat.st_mtime_ns:
            return True
        if sha256_of(path) != entry.sha256:
            return False
        self.record(entry.path, entry.size, entry.sha256)
        return True

    def record(self, rel: str, size: int, sha256: str) -> None:
        stat = (self.folder / rel).stat()
        with self._lock:
            self.entries[rel] = {"size": size, "sha256": sha256, "mtime_ns": stat.st_mtime_ns}
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{MANIFEST}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.entries, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)


def missing_files(dataset: DataSet) -> list[FileEntry]:
    """The files of ``dataset`` not (or no longer) verified in the cache."""
    manifest = Manifest(set_dir(dataset.name))
    return [e for e in dataset.files if not manifest.verified(e)]


def is_cached(dataset: DataSet) -> bool:
    return dataset.pinned and not missing_files(dataset)


def state(dataset: DataSet) -> str:
    """``cached``, ``partly cached (N of M files)``, ``not cached`` or ``not pinned``, for
    ``cruxflow fetch --list``; a quick look (sizes and recorded times, no hashing)."""
    if not dataset.pinned:
        return "not pinned"
    folder = set_dir(dataset.name)
    manifest = Manifest(folder)
    good = 0
    for e in dataset.files:
        seen = manifest.entries.get(e.path)
        try:
            stat = (folder / e.path).stat()
        except OSError:
            continue
        good += bool(seen and seen.get("sha256") == e.sha256 and stat.st_size == e.size
                     and seen.get("mtime_ns") == stat.st_mtime_ns)
    if good == len(dataset.files):
        return "cached"
    return f"partly cached ({good} of {len(dataset.files)} files)" if good else "not cached"


# --- a set in the cache, or the one line that says how to fetch it ----------------------------

def not_fetched(dataset: DataSet) -> DataError:
    if not dataset.pinned:
        how = f"`cruxflow fetch --pin {dataset.name}`"
    else:
        how = f"`cruxflow fetch {dataset.name}`"
    return DataError(f"{dataset.name} is a registered set that is not fetched: run {how} "
                     "first (nothing is downloaded otherwise)")


def set_path(dataset: DataSet, sub: str = "") -> Path:
    """The cached folder of ``dataset`` (or ``sub`` inside it), checked to be there."""
    if not is_cached(dataset):
        raise not_fetched(dataset)
    folder = set_dir(dataset.name)
    if not sub:
        return folder
    path = folder / sub
    if not path.exists():
        raise DataError(f"no {sub} in the set {dataset.name} (fetched to {folder})")
    return path
