"""A persistent, content-addressed cache of LLM calls, shared by every rule.

One SQLite file in WAL mode: many Snakemake jobs (processes) read and write it at once, each
finished call is committed as soon as its batch returns, so a killed job loses only the calls
that were still in flight, and a re-run of a finished workflow makes no call at all.

The key is the SHA-256 of the canonical JSON of (backend identity, prompt, sampling). The two
rating layouts (``llm.ratings.layout``) are different prompt texts, so different keys. A
backend's ``prompt_cache`` is deliberately not in the key: with it on, an output depends on the
request before it (a near tie can flip, docs/ratings.md), which no key of one request can
describe, as vLLM's outputs depend on the batch they ran in; and both settings answer the same
request with the same model. Keying on it would only make turning it on recompute everything.
A run from scratch stays reproducible because the stages send requests in a fixed order, and
two jobs that send the same request at once (two systems with the same context) both keep the
answer stored first (:meth:`LLMCache.put_many`), so a re-run reads what they wrote. SQLite
locking needs a local file system or one with working POSIX locks; on a cluster, put the cache
on such a shared file system (``llm.cache`` in the config).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.outputs import connect_sqlite, ensure_dir, refuse_input, sqlite_error
from cruxflow.llm.base import Completion, Request

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    request TEXT NOT NULL,
    completion TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(identity: dict, request: Request) -> str:
    payload = {"backend": identity, "prompt": request.prompt,
               "sampling": request.sampling.to_json()}
    if request.system is not None:  # absent otherwise, so older keys stay valid
        payload["system"] = request.system
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """``get``/``put`` of completions by key; safe to share between processes."""

    def __init__(self, path, *, timeout_s: float = 600.0):
        self.path = Path(path)
        refuse_input(self.path, "--cache")
        ensure_dir(self.path.parent)
        if self.path.is_dir():
            raise DataError("is a directory: the LLM cache is one SQLite file; give a file "
                            "path (--cache)", path=self.path)
        try:
            # isolation_level=None: autocommit; writes are grouped in explicit transactions.
            # On a read-only file system, read-only: a run the cache answers whole still runs.
            self._db, self.writable = connect_sqlite(self.path, timeout=timeout_s)
            if self.writable:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(_SCHEMA)
            self._db.execute("SELECT key, completion FROM calls LIMIT 0")
        except sqlite3.DatabaseError as exc:  # another file given as the cache, a full disk
            raise sqlite_error(exc, self.path, "an LLM cache", "--cache") from None

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        return {key: Completion.from_json(json.loads(blob))
                for key, blob in self._stored(list(keys)).items()}

    def put_many(self, items: Iterable[tuple[str, dict, Request, Completion]]
                 ) -> dict[str, Completion]:
        """Store ``(key, identity, request, completion)`` rows in one transaction. The first
        completion stored under a key stays: returns, by key, the one already there where
        another job (a process sharing the file) stored the same request first, which the
        caller then uses instead of its own, so that what every job writes is what a re-run
        reads from the cache. Two jobs that send one request at once can get slightly
        different outputs (a backend's prompt cache, its batching: see the module's note)."""
        now = time.time()
        rows = [(key, json.dumps(identity, sort_keys=True),
                 json.dumps({"prompt": req.prompt, "system": req.system,
                             "sampling": req.sampling.to_json()}, ensure_ascii=False),
                 json.dumps(comp.to_json(), ensure_ascii=False), now)
                for key, identity, req, comp in items]
        if not rows:
            return {}
        self.check_writable(len(rows))
        for attempt in range(5):
            try:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    stored = self._stored([row[0] for row in rows])
                    self._db.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?)",
                                         [row for row in rows if row[0] not in stored])
                return {key: Completion.from_json(json.loads(blob))
                        for key, blob in stored.items()}
            except sqlite3.OperationalError as e:  # locked beyond the timeout, a full disk
                if "locked" not in str(e) or attempt == 4:
                    raise sqlite_error(e, self.path, "an LLM cache", "--cache") from None
                time.sleep(1 + attempt)
        return {}   # not reached: the last attempt raises

    def check_writable(self, missing: int) -> None:
        """Refuse, before any call is paid for, to keep ``missing`` new answers in a cache on
        a read-only file system (which answers only what it holds)."""
        if missing and not self.writable:
            raise DataError(f"cannot write: Read-only file system: {missing} of the requests "
                            "are not in this cache, whose answers could not be kept; give a "
                            "--cache where they can", path=self.path)

    def _stored(self, keys: list[str]) -> dict[str, str]:
        """The completions (JSON text) stored under any of ``keys``."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, str] = {}
        for i in range(0, len(keys), 500):  # SQLite's limit on bound parameters
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.update(self._db.execute(
                f"SELECT key, completion FROM calls WHERE key IN ({marks})", chunk))
        return out

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        self._db.close()
