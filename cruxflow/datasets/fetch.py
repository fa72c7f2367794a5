"""Download a registered set into the cache, every file checked before it is kept: the only
code in cruxflow that downloads (``cruxflow fetch``; nothing else calls it).

A file goes to ``$CRUXFLOW_HOME/downloads/<name>/`` first; its size and sha256 (for a file
pinned from the hub's listing, the hub's LFS sha256 or git blob id) are checked there, and only
then is it renamed into the set's folder (one ``os.replace``) and recorded as verified. A file
that fails a check is deleted and named in one line (:class:`~cruxflow.data.errors.DataError`);
a transfer cut short stays in ``downloads/`` and the next fetch resumes it (an HTTP ``Range``
request; Hugging Face files resume through ``huggingface_hub``). A set already verified is not
downloaded again, so a second fetch works offline.

Hugging Face files come through ``huggingface_hub`` at the registry's revision (so
``HF_ENDPOINT`` selects a mirror); a URL ``https://HOST/PATH`` is fetched from
``$CRUXFLOW_MIRROR/HOST/PATH`` when ``CRUXFLOW_MIRROR`` is set.
"""

from __future__ import annotations

import fnmatch
import hashlib
import http.client
import json
import os
import sys
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlsplit
from urllib.request import Request, urlopen

from cruxflow.data.errors import DataError
from cruxflow.datasets.cache import CHUNK, Manifest, downloads_dir, missing_files, set_dir
from cruxflow.datasets.registry import DataSet, FileEntry, Source, pins_dir

MIRROR_ENV = "CRUXFLOW_MIRROR"
HF_ENDPOINT_ENV = "HF_ENDPOINT"
TIMEOUT_S = 60
URL_WORKERS = 8
BAR_MIN_BYTES = 1 << 20     # a progress bar for a fetch of at least this much


@dataclass(frozen=True)
class Expected:
    """What a file must be to be kept: its size, and its sha256 or (a git file pinned from
    the hub's listing) its git blob id."""

    path: str
    size: int
    sha256: str | None = None
    git_blob: str | None = None


def mirrored(url: str) -> str:
    """``https://HOST/PATH`` as ``$CRUXFLOW_MIRROR/HOST/PATH`` when the variable is set."""
    mirror = os.environ.get(MIRROR_ENV)
    if not mirror:
        return url
    parts = urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def fetch(dataset: DataSet, *, progress: bool = True) -> Path:
    """Every file of ``dataset`` in the cache, verified; the set's folder. Files already
    verified are not downloaded again."""
    if not dataset.pinned:
        raise DataError(f"{dataset.name} has no pinned files (no published checksum of them "
                        f"could be read when the registry was written): `cruxflow fetch --pin "
                        f"{dataset.name}` pins them from the hub's listing and fetches them")
    todo = [Expected(e.path, e.size, e.sha256) for e in missing_files(dataset)]
    if todo:
        _download(dataset.name, dataset.source, todo, progress)
    return set_dir(dataset.name)


def pin(dataset: DataSet, *, progress: bool = True) -> DataSet:
    """Pin a Hugging Face set from the hub's own listing: the revision's commit, and every file
    below the set's ``subdir`` that its ``include`` globs take, with the hub's checksum of it
    (an LFS file's sha256, a git file's blob id); fetch them, checked against it, and write the
    pin (``$CRUXFLOW_HOME/pins/<name>.toml``, each file's sha256 from the bytes kept)."""
    from cruxflow.datasets.registry import read_registry_file

    if dataset.source.type != "hf":
        raise DataError(f"{dataset.name} is pinned by the registry to {dataset.source.revision}"
                        ": --pin lists Hugging Face repositories only")
    api = _hf_api()
    src = dataset.source
    try:
        commit = api.repo_info(src.repo, repo_type=src.repo_type, revision=src.revision).sha
        items = list(api.list_repo_tree(src.repo, path_in_repo=src.subdir or None,
                                        recursive=True, revision=commit,
                                        repo_type=src.repo_type))
    except Exception as exc:   # the hub library's many errors: one line naming the set
        raise DataError(f"{dataset.name}: could not list {src.describe()} on "
                        f"{_endpoint()}: {_first_line(exc)}") from None
    prefix = f"{src.subdir}/" if src.subdir else ""
    listed = [x for x in items if hasattr(x, "blob_id") and x.path.startswith(prefix)]
    chosen = [x for x in listed if _included(x.path[len(prefix):], dataset.include)]
    if not chosen:
        raise DataError(f"{dataset.name}: no file of {src.describe()} (commit {commit}) matches "
                        f"{list(dataset.include)}; it holds "
                        f"{', '.join(x.path for x in listed[:10]) or 'nothing there'}")
    expected = [Expected(x.path[len(prefix):], x.size,
                         x.lfs.sha256 if x.lfs is not None else None,
                         None if x.lfs is not None else x.blob_id) for x in chosen]
    source = Source(**{**src.__dict__, "revision": commit})
    have = Manifest(set_dir(dataset.name))
    kept = {}
    for e in expected:   # files already in the cache with the hub's sha256: kept as they are
        entry = have.entries.get(e.path)
        if entry and e.sha256 and entry.get("sha256") == e.sha256 and \
                have.verified(FileEntry(e.path, e.size, e.sha256, "hub-api")):
            kept[e.path] = e.sha256
    todo = [e for e in expected if e.path not in kept]
    kept.update(_download(dataset.name, source, todo, progress))
    files = tuple(FileEntry(e.path, e.size, kept[e.path], "hub-api") for e in expected)
    out = pins_dir() / f"{dataset.name}.toml"
    _write_pin(out, dataset, source, files)
    return read_registry_file(out)[0]


def _included(path: str, globs) -> bool:
    """Whether ``include`` takes ``path`` (globs over the lower-cased path; none: all)."""
    low = path.lower()
    return not globs or any(g in ("", "*") or fnmatch.fnmatchcase(low, g.lower())
                            for g in globs)


# --- downloading ------------------------------------------------------------------------------

def _download(name: str, source: Source, todo: list[Expected], progress: bool) -> dict:
    """Download, check and keep ``todo``; their sha256 by path."""
    folder, staging = set_dir(name), downloads_dir(name)
    manifest = Manifest(folder)
    bar = _bar(sum(e.size for e in todo), progress and source.type == "url")

    def one(exp: Expected) -> tuple[str, str]:
        if source.type == "url":
            url = mirrored(source.url + quote(exp.path))
            staged = _get_url(name, exp, url, staging / "url" / exp.path, bar)
        else:
            staged = _get_hf(name, source, exp, staging / "hf")
        sha = _check(name, exp, staged)
        target = folder / exp.path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, target)
        manifest.record(exp.path, exp.size, sha)
        return exp.path, sha

    try:
        if source.type == "url" and len(todo) > 1:
            with ThreadPoolExecutor(URL_WORKERS) as pool:
                futures = [pool.submit(one, e) for e in todo]
                done, pending = wait(futures, return_when=FIRST_EXCEPTION)
                for f in pending:
                    f.cancel()
                for f in done:
                    if f.exception() is not None:
                        raise f.exception()
                return dict(f.result() for f in futures)
        return dict(one(e) for e in todo)
    finally:
        if bar is not None:
            bar.close()


def _get_url(name: str, exp: Expected, url: str, part: Path, bar) -> Path:
    """``url`` into ``part``, resuming what an earlier fetch left there (HTTP Range)."""
    part = part.with_name(part.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if have > exp.size:
        part.unlink()
        have = 0
    if have == exp.size and have:
        _update(bar, have)
        return part
    headers = {"User-Agent": "cruxflow", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        with urlopen(Request(url, headers=headers), timeout=TIMEOUT_S) as resp:
            mode = "ab"
            if have and resp.status != 206:     # the server sent the whole file: start over
                mode, have = "wb", 0
            _update(bar, have)
            with open(part, mode) as f:
                for block in iter(lambda: resp.read(CHUNK), b""):
                    f.write(block)
                    _update(bar, len(block))
        got = part.stat().st_size
        if got < exp.size:      # the connection closed early: kept, for the next fetch
            raise ConnectionError(f"the transfer stopped after {got} of {exp.size} bytes")
    except HTTPError as exc:
        raise DataError(f"{name}: {exp.path}: {url} answered HTTP {exc.code} {exc.reason}: "
                        "nothing kept") from None
    except (URLError, OSError, TimeoutError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        raise DataError(f"{name}: {exp.path}: could not download {url} ({reason}); "
                        f"{part.stat().st_size if part.exists() else 0} bytes kept in "
                        f"{part.parent} for the next fetch to resume") from None
    return part


def _get_hf(name: str, source: Source, exp: Expected, staging: Path) -> Path:
    hf_hub_download = _hf_download_function()
    filename = f"{source.subdir}/{exp.path}" if source.subdir else exp.path
    try:
        local = hf_hub_download(source.repo, filename, repo_type=source.repo_type,
                                revision=source.revision, local_dir=staging,
                                endpoint=os.environ.get(HF_ENDPOINT_ENV) or None)
    except Exception as exc:   # the hub library's many errors: one line naming the file
        raise DataError(f"{name}: {exp.path}: could not download {source.repo}/{filename} at "
                        f"{source.revision} from {_endpoint()}: {_first_line(exc)}") from None
    return Path(local)


def _check(name: str, exp: Expected, staged: Path) -> str:
    """The sha256 of ``staged`` if it is what ``exp`` says; else it is deleted and the error
    names the file and what differed."""
    size = staged.stat().st_size
    problem = None
    if size != exp.size:
        problem = f"{size} bytes, not the {exp.size} expected"
    else:
        sha = hashlib.sha256()
        blob = hashlib.sha1(b"blob %d\0" % size) if exp.git_blob else None
        with open(staged, "rb") as f:
            for block in iter(lambda: f.read(CHUNK), b""):
                sha.update(block)
                if blob is not None:
                    blob.update(block)
        digest = sha.hexdigest()
        if exp.sha256 and digest != exp.sha256:
            problem = f"sha256 {digest} is not the expected {exp.sha256}"
        elif blob is not None and blob.hexdigest() != exp.git_blob:
            problem = f"git blob id {blob.hexdigest()} is not the hub's {exp.git_blob}"
    if problem:
        staged.unlink(missing_ok=True)
        raise DataError(f"{name}: {exp.path}: {problem}: refused, not kept")
    return digest


def _update(bar, n: int) -> None:
    if bar is not None and n:
        bar.update(n)


def _bar(total: int, wanted: bool):
    if not wanted or total < BAR_MIN_BYTES:
        return None
    try:
        from tqdm import tqdm
    except ImportError:     # the bar is a nicety: fetching works without it
        return None
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr,
                desc="fetch", leave=False)


# --- Hugging Face -----------------------------------------------------------------------------

def _hf_download_function():
    from cruxflow._extras import extra

    with extra(__name__, "fetch"):
        from huggingface_hub import hf_hub_download
    return hf_hub_download


def _hf_api():
    from cruxflow._extras import extra

    with extra(__name__, "fetch"):
        from huggingface_hub import HfApi
    return HfApi(endpoint=os.environ.get(HF_ENDPOINT_ENV) or None)


def _endpoint() -> str:
    return os.environ.get(HF_ENDPOINT_ENV) or "https://huggingface.co"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _write_pin(path: Path, dataset: DataSet, source: Source, files) -> None:
    def s(value) -> str:
        return json.dumps(value, ensure_ascii=False)

    src = {k: v for k, v in source.__dict__.items() if v != ""}
    lines = [f"# Pinned by `cruxflow fetch --pin {dataset.name}` from the hub's listing of "
             f"{source.repo} at commit {source.revision}:",
             "# each file's sha256 is that of the bytes fetched, checked against the hub's "
             "own checksum of it.", "", "[[set]]",
             f"name = {s(dataset.name)}", f"title = {s(dataset.title)}",
             f"kind = {s(dataset.kind)}", f"license = {s(dataset.license)}"]
    if dataset.notes:
        lines.append(f"notes = {s(dataset.notes)}")
    if dataset.layout:
        lines.append("layout = {" + ", ".join(f"{k} = {s(v)}" for k, v in
                                                dataset.layout.items()) + "}")
    lines.append("source = {" + ", ".join(f"{k} = {s(v)}" for k, v in src.items()) + "}")
    lines.append(f"include = {s(list(dataset.include))}")
    lines.append("files = [")
    lines += [f"  {{path = {s(f.path)}, size = {f.size}, sha256 = {s(f.sha256)}, "
              f"checked = {s(f.checked)}}}," for f in files]
    lines.append("]")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
