"""The registry of the field's released sets, kept as data (``registry/*.toml`` beside this
module) and read into typed objects.

A set is one thing a user fetches by name: a CRUX release subset, a corpus, the labeling
tool's release, a CoverageBench config, TREC RAG qrels. Each names its source (a Hugging Face
dataset repository at a revision, or a URL prefix pinned to a commit), its license, what its
files are for (``layout``: which file holds the judgments, the topics, the runs) and every file
with its size and sha256, and says where each checksum came from (``checked``):

* ``bytes``: computed from the file's bytes at the pinned commit (a git checkout of the
  source, ``scripts/registry_from_git.py``);
* ``hub-page``: copied from the hub's page of the file (its Git LFS details);
* ``hub-api``: pinned by ``cruxflow fetch --pin``, the hub's own listing at a commit (an LFS
  file's sha256, a git file's blob id), verified against the bytes fetched.

A set whose files no published checksum could be read for has no files (``pinned`` false):
``cruxflow fetch --pin NAME`` pins it from the hub's listing into ``$CRUXFLOW_HOME/pins/``.
More registry files (``CRUXFLOW_REGISTRY``, paths separated by ``os.pathsep``) add sets or
replace sets of the same name: one's own sets, or the stand-in's in the tests.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from cruxflow.data.errors import DataError

PACKAGED = Path(__file__).with_name("registry")
REGISTRY_ENV = "CRUXFLOW_REGISTRY"
HOME_ENV = "CRUXFLOW_HOME"
KINDS = ("crux-subset", "corpus", "labeling", "coveragebench", "trec-qrels")
CHECKED = ("bytes", "hub-page", "hub-api")
SOURCE_TYPES = ("hf", "url")


@dataclass(frozen=True)
class FileEntry:
    """One file of a set: its path in the source (below the set's ``subdir``), size, sha256
    and where the checksum came from."""

    path: str
    size: int
    sha256: str
    checked: str


@dataclass(frozen=True)
class Source:
    """Where a set's files come from: a Hugging Face repository (``repo``, ``revision``, the
    set's files below ``subdir``) or a URL prefix (``url``, pinned to ``revision``)."""

    type: str
    repo: str
    revision: str
    url: str = ""
    repo_type: str = "dataset"
    subdir: str = ""

    def describe(self) -> str:
        where = f"{self.repo}/{self.subdir}" if self.subdir else self.repo
        if self.type == "hf":
            return f"Hugging Face {self.repo_type} {where} at {self.revision}"
        return f"{where} at {self.revision} ({self.url})"


@dataclass(frozen=True)
class DataSet:
    name: str
    title: str
    kind: str
    license: str
    source: Source
    files: tuple[FileEntry, ...]
    # what the files are for: "judgments", "topics", "nuggets", "runs" (a folder), "config"
    layout: dict = field(default_factory=dict)
    # for a set not pinned: the paths below subdir its files are taken from (prefixes)
    include: tuple[str, ...] = ()
    notes: str = ""
    origin: str = ""            # the registry file it was read from

    @property
    def pinned(self) -> bool:
        return bool(self.files)

    def laid_out(self, key: str) -> list[str]:
        """The paths inside the set that ``layout`` gives for ``key`` ("judgments",
        "topics", ...), as a list (none, one or several)."""
        value = self.layout.get(key)
        if value is None:
            return []
        return value if isinstance(value, list) else [value]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def url_of(self, entry: FileEntry) -> str:
        """The public address of a file (a URL set's prefix and path; a hub file's resolve
        URL), what ``--list --json`` prints."""
        from urllib.parse import quote

        if self.source.type == "url":
            return self.source.url + quote(entry.path)
        path = f"{self.source.subdir}/{entry.path}" if self.source.subdir else entry.path
        kind = {"dataset": "datasets/", "space": "spaces/"}.get(self.source.repo_type, "")
        return (f"https://huggingface.co/{kind}{self.source.repo}/resolve/"
                f"{self.source.revision}/{quote(path)}")


def _entry(raw: dict, where: str) -> FileEntry:
    missing = {"path", "size", "sha256", "checked"} - set(raw)
    if missing:
        raise DataError(f"a file needs {', '.join(sorted(missing))}", path=where,
                        record=str(raw.get("path", "?")))
    sha = str(raw["sha256"]).lower()
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise DataError(f"not a sha256: {raw['sha256']!r}", path=where, record=raw["path"],
                        field="sha256")
    if raw["checked"] not in CHECKED:
        raise DataError(f"one of {', '.join(CHECKED)}, got {raw['checked']!r}", path=where,
                        record=raw["path"], field="checked")
    if not isinstance(raw["size"], int) or raw["size"] < 0:
        raise DataError(f"a size in bytes, got {raw['size']!r}", path=where,
                        record=raw["path"], field="size")
    path = str(raw["path"])
    if path.startswith("/") or ".." in Path(path).parts:
        raise DataError("a path inside the set, not absolute and without '..'", path=where,
                        record=path, field="path")
    return FileEntry(path, raw["size"], sha, raw["checked"])


def _set(raw: dict, where: str) -> DataSet:
    name = raw.get("name")
    if not name or "/" in name or name != name.strip():
        raise DataError(f"a set needs a name without '/', got {name!r}", path=where)
    for key in ("title", "kind", "license", "source"):
        if key not in raw:
            raise DataError(f"missing {key!r}", path=where, record=f"set {name}")
    if raw["kind"] not in KINDS:
        raise DataError(f"one of {', '.join(KINDS)}, got {raw['kind']!r}", path=where,
                        record=f"set {name}", field="kind")
    src = dict(raw["source"])
    if src.get("type") not in SOURCE_TYPES or not src.get("repo") or not src.get("revision"):
        raise DataError("a source needs type (hf or url), repo and revision", path=where,
                        record=f"set {name}", field="source")
    if src["type"] == "url" and not str(src.get("url", "")).startswith(("https://", "http://")):
        raise DataError("a url source needs its url prefix", path=where, record=f"set {name}",
                        field="source.url")
    source = Source(**{k: src[k] for k in ("type", "repo", "revision", "url", "repo_type",
                                            "subdir") if k in src})
    files = tuple(_entry(f, where) for f in raw.get("files", ()))
    paths = [f.path for f in files]
    if len(set(paths)) != len(paths):
        raise DataError("a file is listed twice", path=where, record=f"set {name}")
    return DataSet(name=name, title=raw["title"], kind=raw["kind"], license=raw["license"],
                   source=source, files=files, layout=dict(raw.get("layout", {})),
                   include=tuple(raw.get("include", ())), notes=raw.get("notes", ""),
                   origin=where)


def read_registry_file(path: Path) -> list[DataSet]:
    """The sets of one registry file (``[[set]]`` tables)."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"not TOML: {exc}", path=path) from None
    return [_set(raw, str(path)) for raw in data.get("set", [])]


def home() -> Path:
    """The cache: ``$CRUXFLOW_HOME``, default ``~/.cache/cruxflow``."""
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "cruxflow"


def pins_dir() -> Path:
    return home() / "pins"


def registry_files() -> list[Path]:
    """The packaged registry files, then ``CRUXFLOW_REGISTRY``'s, then the pins ``cruxflow
    fetch --pin`` wrote: a later file's set replaces an earlier one of the same name."""
    files = sorted(PACKAGED.glob("*.toml"))
    files += [Path(p) for p in os.environ.get(REGISTRY_ENV, "").split(os.pathsep) if p]
    pins = pins_dir()
    if pins.is_dir():
        files += sorted(pins.glob("*.toml"))
    return files


@cache
def _read(files: tuple[Path, ...], stamps: tuple) -> dict[str, DataSet]:
    out: dict[str, DataSet] = {}
    for path in files:
        if not path.is_file():
            raise DataError(f"no such registry file ({REGISTRY_ENV})", path=path)
        for s in read_registry_file(path):
            out[s.name] = s
    return out


def sets() -> dict[str, DataSet]:
    """Every registered set by name (read again when a registry file changed)."""
    files = tuple(registry_files())
    stamps = tuple(p.stat().st_mtime_ns if p.is_file() else None for p in files)
    return _read(files, stamps)


def get(name: str) -> DataSet:
    known = sets()
    if name not in known:
        raise DataError(f"no set named {name!r}: `cruxflow fetch --list` shows the registered "
                        "sets")
    return known[name]
