"""Stand-ins of the servers ``cruxflow fetch`` talks to, on 127.0.0.1, serving fixture trees
laid out as the real repositories are: what the tests and the docs harness start (and stop).

* **the Hugging Face Hub**, as much of its API as ``huggingface_hub`` (the real library, through
  ``HF_ENDPOINT``) uses to list and download a dataset repository's files: the revision info
  (``/api/datasets/<repo>/revision/<rev>``), the tree listing (``/api/datasets/<repo>/tree/<rev>
  [/<path>]``, with each file's git blob id and, for a file stored with Git LFS, its sha256) and
  the resolve URL (``/datasets/<repo>/resolve/<rev>/<path>``, HEAD and GET, with the headers
  ``huggingface_hub`` checks: ``X-Repo-Commit``, ``ETag``/``X-Linked-Etag``, ``X-Linked-Size``,
  and HTTP ranges);
* **a plain mirror** for ``CRUXFLOW_MIRROR``: ``/<host>/<path>`` served from a folder, HTTP
  ranges included.

A test can make a file arrive corrupted (``corrupt``), cut a transfer short once (``cut``), and
read what was asked (``requests``). :func:`write_registry` writes a registry of the fixture
files, their sha256 computed here with hashlib.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

DATA = Path(__file__).parent / "data"
RELEASED = DATA / "released"
ANSERINI_COMMIT = "5b819c1a45c8a0a3ec9426f476694f44a29dfaf3"
LABELING_COMMIT = "a3c6758b9905674074f01d50864bdd153e0aede5"
# the fixture trees as the real repositories lay them out
HUB_REPOS = {
    "DylanJHJ/crux": DATA / "crux" / "release",
    "DylanJHJ/crux-mds-corpus": DATA / "crux" / "release" / "crux-mds-corpus",
    "hltcoe/coveragebench": RELEASED / "coveragebench",
}
MIRROR_TREES = {
    f"raw.githubusercontent.com/castorini/anserini-tools/{ANSERINI_COMMIT}":
        RELEASED / "anserini-tools",
    f"raw.githubusercontent.com/DylanJoo/crux-labeling/{LABELING_COMMIT}":
        DATA / "crux" / "labeling_clone",
}


def commit_of(repo: str) -> str:
    """The stand-in's commit of a repository: a fixed 40-hex id."""
    return hashlib.sha1(f"stand-in {repo}".encode()).hexdigest()


def is_lfs(path: str) -> bool:
    """Which fixture files the stand-in says are stored with Git LFS (so both of the hub's
    checksums, LFS sha256 and git blob id, are exercised)."""
    return path.endswith(".jsonl") or "/judge/" in f"/{path}"


def files_below(folder: Path) -> list[str]:
    """The files of a fixture tree as the repository holds them: a fixture's own README.md
    (what the excerpt is) is not one, except a dataset card (the tree's README.md with YAML
    front matter)."""
    def served(p: Path) -> bool:
        if not p.is_file() or p.name.startswith("."):
            return False
        if p.name == "README.md":
            return p.parent == folder and p.read_text(encoding="utf-8").startswith("---")
        return True

    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if served(p))


@dataclass
class StandIn:
    hub: dict[str, Path] = field(default_factory=lambda: dict(HUB_REPOS))
    mirror: dict[str, Path] = field(default_factory=lambda: dict(MIRROR_TREES))
    # keyed by a request's path (unquoted: /mirror/<host>/<path>, /hub/datasets/<repo>/...)
    corrupt: dict[str, bytes] = field(default_factory=dict)   # bytes served instead
    cut: dict[str, int] = field(default_factory=dict)         # bytes sent, then cut (once)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)

    def __post_init__(self):
        self._server = None
        self._thread = None

    # --- life -----------------------------------------------------------------------------
    def start(self) -> StandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):   # quiet
                pass

            def do_HEAD(self):
                standin._answer(self, head=True)

            def do_GET(self):
                standin._answer(self, head=False)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def hub_url(self) -> str:
        return f"{self.url}/hub"

    @property
    def mirror_url(self) -> str:
        return f"{self.url}/mirror"

    # --- answers ----------------------------------------------------------------------------
    def _answer(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        split = urlsplit(h.path)
        path = unquote(split.path)
        self.requests.append((h.command, path, h.headers.get("Range")))
        if path.startswith("/hub/"):
            return self._hub(h, path, split.query, head)
        if path.startswith("/mirror/"):
            rel = path[len("/mirror/"):]
            for prefix, folder in self.mirror.items():
                if rel.startswith(prefix + "/"):
                    return self._file(h, folder / rel[len(prefix) + 1:], path, head)
        return self._error(h, 404, "no such file")

    def _hub(self, h, path: str, query: str, head: bool) -> None:
        parts = path[len("/hub/"):].strip("/").split("/")
        if parts[:2] == ["api", "datasets"] and len(parts) >= 6:
            repo, verb, rev, rest = "/".join(parts[2:4]), parts[4], parts[5], parts[6:]
            folder = self._repo(h, repo, rev)
            if folder is None:
                return None
            if verb == "revision":
                return self._json(h, {"id": repo, "sha": commit_of(repo), "private": False,
                                      "siblings": [{"rfilename": f}
                                                   for f in files_below(folder)]})
            if verb == "tree":
                below = "/".join(rest)
                return self._json(h, self._tree(folder, below, "recursive=true" in
                                                query.lower()))
        if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
            repo, rev, rel = "/".join(parts[1:3]), parts[4], "/".join(parts[5:])
            folder = self._repo(h, repo, rev)
            if folder is None:
                return None
            return self._file(h, folder / rel, path, head, hub=(repo, rel))
        return self._error(h, 404, "not a route of the stand-in", code="EntryNotFound")

    def _repo(self, h, repo: str, rev: str) -> Path | None:
        if repo not in self.hub:
            self._error(h, 404, f"repository {repo} not found", code="RepoNotFound")
            return None
        if rev not in ("main", commit_of(repo)):
            self._error(h, 404, f"revision {rev} not found", code="RevisionNotFound")
            return None
        return self.hub[repo]

    def _tree(self, folder: Path, below: str, recursive: bool) -> list[dict]:
        out = []
        seen_dirs = set()
        for rel in files_below(folder):
            if below and not rel.startswith(below.rstrip("/") + "/"):
                continue
            rest = rel[len(below) + 1:] if below else rel
            if not recursive and "/" in rest:
                d = (f"{below}/" if below else "") + rest.split("/")[0]
                if d not in seen_dirs:
                    seen_dirs.add(d)
                    out.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": d})
                continue
            data = (folder / rel).read_bytes()
            entry = {"type": "file", "path": rel, "size": len(data),
                     "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
            if is_lfs(rel):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                "pointerSize": 134}
            out.append(entry)
        return out

    def _file(self, h, file: Path, key: str, head: bool, hub=None) -> None:
        if not file.is_file():
            return self._error(h, 404, "no such file", code="EntryNotFound")
        data = file.read_bytes()
        true_data = data
        if key in self.corrupt:
            data = self.corrupt[key]
        start = 0
        status = 200
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and not head:
            first = rng[len("bytes="):].split("-")[0]
            start = int(first) if first else 0
            status = 206
        body = data[start:]
        h.send_response(status)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(body)))
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        if hub is not None:
            repo, rel = hub
            h.send_header("X-Repo-Commit", commit_of(repo))
            if is_lfs(rel):
                sha = hashlib.sha256(true_data).hexdigest()
                h.send_header("ETag", f'"{sha}"')
                h.send_header("X-Linked-Etag", f'"{sha}"')
                h.send_header("X-Linked-Size", str(len(true_data)))
            else:
                blob = hashlib.sha1(b"blob %d\0" % len(true_data) + true_data).hexdigest()
                h.send_header("ETag", f'"{blob}"')
        h.end_headers()
        if head:
            return
        if key in self.cut:      # send part of the file, then drop the connection (once)
            n = self.cut.pop(key)
            h.wfile.write(body[:n])
            h.wfile.flush()
            h.close_connection = True
            return
        h.wfile.write(body)

    def _json(self, h, value) -> None:
        body = json.dumps(value).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _error(self, h, status: int, message: str, code: str | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        if code:
            h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", message)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


def _toml(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def registry_entry(name: str, kind: str, folder: Path, source: dict, files: list[str],
                   layout: dict | None = None, title: str = "a fixture set",
                   include: list[str] | None = None) -> str:
    """A ``[[set]]`` of the registry for fixture files: their sizes and sha256 computed here."""
    lines = ["[[set]]", f"name = {_toml(name)}", f"title = {_toml(title)}",
             f"kind = {_toml(kind)}", 'license = "fixture"']
    if layout:
        lines.append("layout = {" + ", ".join(f"{k} = {_toml(v)}" for k, v in layout.items())
                     + "}")
    lines.append("source = {" + ", ".join(f"{k} = {_toml(v)}" for k, v in source.items())
                 + "}")
    if include is not None:     # what `cruxflow fetch --pin` takes from the hub's listing
        lines.append(f"include = {_toml(include)}")
    lines.append("files = [")
    for rel in files:
        data = (folder / rel).read_bytes()
        lines.append(f"  {{path = {_toml(rel)}, size = {len(data)}, sha256 = "
                     f"\"{hashlib.sha256(data).hexdigest()}\", checked = \"bytes\"}},")
    lines.append("]")
    return "\n".join(lines) + "\n"


def write_registry(path: Path) -> Path:
    """The stand-in's registry: the TREC RAG excerpts and the labeling excerpt at the real
    sets' names and sources (URL sets, served by the mirror), and crux-mds-duc04, its corpus
    and a CoverageBench config pinned at the stand-in's commits (Hugging Face sets)."""
    anserini = RELEASED / "anserini-tools"
    labeling = DATA / "crux" / "labeling_clone"
    coveragebench = RELEASED / "coveragebench"
    duc = HUB_REPOS["DylanJHJ/crux"] / "crux-mds-duc04"
    url = "https://raw.githubusercontent.com/"
    parts = [
        *(registry_entry(name, "trec-qrels", anserini,
                         {"type": "url", "repo": "castorini/anserini-tools",
                          "revision": ANSERINI_COMMIT,
                          "url": f"{url}castorini/anserini-tools/{ANSERINI_COMMIT}/"},
                         [qrels, topics], {"judgments": qrels, "topics": topics})
          for name, qrels, topics in (
              ("trec-rag24", "qrels/qrels.rag24.test.txt", "topics/topics.rag24.test.txt"),
              ("trec-rag25", "qrels/qrels.rag25.test.txt", "topics/topics.rag25.test.jsonl"),
              ("trec-rag25-umbrela", "qrels/qrels.rag25.test-umbrela2.txt",
               "topics/topics.rag25.test.jsonl"))),
        registry_entry("crux-labeling", "labeling", labeling,
                       {"type": "url", "repo": "DylanJoo/crux-labeling",
                        "revision": LABELING_COMMIT,
                        "url": f"{url}DylanJoo/crux-labeling/{LABELING_COMMIT}/"},
                       files_below(labeling),
                       {"topics": "annotator_1/crux_testb",
                        "collection": "annotator_1/documents",
                        "judgments": ["results/annotator1/qrels_a1.jsonl",
                                      "results/annotator2/qrels.jsonl"],
                        "runs": "annotator_1/crux_testb"}),
        registry_entry("crux-mds-duc04", "crux-subset", duc,
                       {"type": "hf", "repo": "DylanJHJ/crux",
                        "revision": commit_of("DylanJHJ/crux"), "subdir": "crux-mds-duc04"},
                       files_below(duc),
                       {"judgments": ".", "topics": "topic", "questions": "subtopics",
                        "runs": "run", "collection": "../crux-mds-corpus"}, include=["*"]),
        registry_entry("crux-mds-corpus", "corpus", HUB_REPOS["DylanJHJ/crux-mds-corpus"],
                       {"type": "hf", "repo": "DylanJHJ/crux-mds-corpus",
                        "revision": commit_of("DylanJHJ/crux-mds-corpus")},
                       files_below(HUB_REPOS["DylanJHJ/crux-mds-corpus"]), include=["*"]),
        registry_entry("coveragebench-crux_duc04", "coveragebench", coveragebench,
                       {"type": "hf", "repo": "hltcoe/coveragebench",
                        "revision": commit_of("hltcoe/coveragebench")},
                       [f for f in files_below(coveragebench) if "duc04" in f.lower()
                        or f == "README.md"], {"config": "crux_duc04"},
                       include=["readme.md", "*duc04*"]),
    ]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
