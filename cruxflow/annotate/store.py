"""The annotation database: one SQLite file (WAL) holding the items, each annotator's queue and
token, and every label, committed the moment it is given.

The items (texts included) are written once, when the database is made, so a restart serves
exactly what was annotated before and a span's character offsets always index the text stored
beside it. Each change of a label is one transaction that updates the label and appends an
event (the history is never rewritten), so nothing given is lost: not on a crash, a restart, or
two annotators saving at once. A request that is wrong in any way raises :class:`LabelError`
(with the HTTP status it deserves) before anything is written.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from cruxflow.annotate.assign import RATINGS, REPORTS, Item, Question
from cruxflow.data.errors import DataError
from cruxflow.data.outputs import connect_sqlite, sqlite_error

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE annotators (name TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE);
CREATE TABLE items (
    id INTEGER PRIMARY KEY, topic_id TEXT NOT NULL, target TEXT NOT NULL, text TEXT NOT NULL,
    query TEXT, questions TEXT NOT NULL, UNIQUE (topic_id, target));
CREATE TABLE queue (
    annotator TEXT NOT NULL REFERENCES annotators (name), position INTEGER NOT NULL,
    item_id INTEGER NOT NULL REFERENCES items (id),
    PRIMARY KEY (annotator, position), UNIQUE (annotator, item_id));
CREATE TABLE labels (
    item_id INTEGER NOT NULL, question INTEGER NOT NULL, annotator TEXT NOT NULL,
    value INTEGER, cannot_judge INTEGER NOT NULL DEFAULT 0 CHECK (cannot_judge IN (0, 1)),
    span_start INTEGER, span_end INTEGER, span_text TEXT,
    review INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL,
    PRIMARY KEY (item_id, question, annotator),
    FOREIGN KEY (annotator, item_id) REFERENCES queue (annotator, item_id),
    CHECK (value IS NULL OR cannot_judge = 0));
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, annotator TEXT NOT NULL,
    item_id INTEGER NOT NULL, question INTEGER NOT NULL, value INTEGER,
    cannot_judge INTEGER NOT NULL, span_start INTEGER, span_end INTEGER, review INTEGER NOT NULL);
"""
VALUES = {RATINGS: range(0, 6), REPORTS: range(0, 2)}
UNSET = object()


class LabelError(ValueError):
    """A request that cannot be honoured; ``status`` is its HTTP status (4xx; 507: disk full)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Span:
    start: int      # character offsets into the item's text (Python str indices: code points)
    end: int
    text: str


@dataclass(frozen=True)
class Label:
    item_id: int
    question: int
    annotator: str
    value: int | None           # 0-5 (ratings) or 1/0 answerable or not (reports)
    cannot_judge: bool
    span: Span | None
    review: bool                # given in review mode, with the judge's ratings in view
    updated_at: str

    @property
    def given(self) -> bool:
        return self.value is not None or self.cannot_judge

    def to_json(self) -> dict:
        return {**asdict(self), "given": self.given}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _item_json(item: Item) -> str:
    return json.dumps([asdict(q) for q in item.questions])


# Files holding the annotators' and the admin's tokens: read and write for the owner only.
SECRET_MODE = 0o600


def _owner_only(path: Path) -> None:
    """Take group and others' access away from the database and its WAL files."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with suppress(OSError):
            if p.stat().st_mode & 0o077:
                p.chmod(SECRET_MODE)


class Store:
    """One annotation database; every method opens its own connection, so threads (and
    processes) share it safely: SQLite serialises the writers, WAL lets readers go on."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            with self._connect() as con:
                meta = dict(con.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:  # notes.txt given as --db, or another database
            error = sqlite_error(exc, self.path, "an annotation database", "--db")
            if isinstance(error, DataError):   # a full disk, or not a database
                raise error from None
            raise DataError(f"not an annotation database (SQLite says: {exc}); give "
                            "another --db", path=self.path) from None
        with self._connect() as con:
            if "settings" not in meta:
                raise DataError("not a complete annotation database (no settings): remove it "
                                "and start again", path=self.path)
            self.settings: dict = json.loads(meta["settings"])
            self.admin_token: str = meta["admin_token"]
            self.items: dict[int, Item] = {
                row[0]: Item(row[1], row[2], row[3], row[4],
                             tuple(Question(**q) for q in json.loads(row[5])))
                for row in con.execute("SELECT id, topic_id, target, text, query, questions "
                                       "FROM items ORDER BY id")}
            self.tokens: dict[str, str] = dict(con.execute(
                "SELECT name, token FROM annotators ORDER BY rowid"))
            self.queues: dict[str, list[int]] = {name: [] for name in self.tokens}
            for name, item_id in con.execute(
                    "SELECT annotator, item_id FROM queue ORDER BY annotator, position"):
                self.queues[name].append(item_id)
        self._by_token = {token: name for name, token in self.tokens.items()}
        self._assigned = {name: set(q) for name, q in self.queues.items()}
        _owner_only(self.path)  # one made by an older version, or copied with cp

    @property
    def task(self) -> str:
        return self.settings["task"]

    # --- making and opening

    @classmethod
    def create(cls, path, settings: Mapping, items: Sequence[Item],
               queues: Mapping[str, Sequence[int]]) -> Store:
        """A new database with the items and each annotator's queue (item indices), a fresh
        secret token per annotator and one for the admin pages. One transaction: a database
        made halfway holds nothing."""
        path = Path(path)
        if path.exists():
            raise DataError("exists already: open it to resume, or remove it", path=path)
        try:
            cls._make(path, settings, items, queues)
        except (OSError, sqlite3.Error) as exc:   # a full disk, a read-only file system
            error = (sqlite_error(exc, path, "an annotation database", "--db")
                     if isinstance(exc, sqlite3.Error) else exc)
            if isinstance(error, OSError) and error.errno is not None:
                error = DataError(f"cannot write: {os.strerror(error.errno)}", path=path)
            if not isinstance(error, DataError):
                raise
            reason = error.reason.split("; what was stored before")[0]
            raise DataError(f"cannot create the annotation database: {reason}",
                            path=path) from None
        return cls(path)

    @staticmethod
    def _make(path: Path, settings: Mapping, items: Sequence[Item],
              queues: Mapping[str, Sequence[int]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The tokens are the only key to the app: the file is the owner's alone whatever the
        # umask. Made empty with that mode first (SQLite gives its -wal and -shm files the
        # database's mode), so no moment exists when others could open it.
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, SECRET_MODE))
        os.chmod(path, SECRET_MODE)  # os.open's mode is less the umask: 0o600 stays 0o600
        con = sqlite3.connect(path, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("BEGIN")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    con.execute(statement)
            con.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)",
                            [(i, it.topic_id, it.target, it.text, it.query, _item_json(it))
                             for i, it in enumerate(items)])
            for name, queue in queues.items():
                con.execute("INSERT INTO annotators VALUES (?, ?)",
                            (name, secrets.token_urlsafe(18)))
                con.executemany("INSERT INTO queue VALUES (?, ?, ?)",
                                [(name, pos, i) for pos, i in enumerate(queue, 1)])
            con.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("settings", json.dumps(dict(settings))),
                ("admin_token", secrets.token_urlsafe(18))])
            con.execute("COMMIT")
        except BaseException:
            con.close()
            for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                leftover.unlink(missing_ok=True)
            raise
        con.close()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection (read-only and immutable on a read-only file system, so that an export
        still runs); what the system refuses (a full disk) is a :class:`DataError` saying so."""
        if not self.path.is_file():
            raise DataError("no such annotation database", path=self.path)
        try:
            con, writable = connect_sqlite(self.path, timeout=60)
            # FULL: a label is on disk when its request is answered, not only after a checkpoint
            if writable:
                con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
        except sqlite3.OperationalError as exc:   # a full disk: its -shm file cannot grow
            raise self._refused(exc) from None
        try:
            yield con
        finally:
            con.close()

    def _refused(self, exc: sqlite3.Error) -> Exception:
        """What the system refused (a full disk, a read-only file system) as a one-line
        :class:`DataError`; another SQLite error as it is (a bug)."""
        return sqlite_error(exc, self.path, "an annotation database", "--db")

    # --- who is asking

    def annotator(self, token: str) -> str | None:
        return self._by_token.get(token)

    def is_admin(self, token: str) -> bool:
        return secrets.compare_digest(token, self.admin_token)

    # --- labels

    def labels(self, annotator: str | None = None, item_id: int | None = None) -> list[Label]:
        """Labels (given or holding only a span) of one annotator, one item, or all."""
        where, args = [], []
        if annotator is not None:
            where.append("annotator = ?")
            args.append(annotator)
        if item_id is not None:
            where.append("item_id = ?")
            args.append(item_id)
        sql = ("SELECT item_id, question, annotator, value, cannot_judge, span_start, span_end, "
               "span_text, review, updated_at FROM labels"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY item_id, question, annotator")
        with self._connect() as con:
            return [Label(r[0], r[1], r[2], r[3], bool(r[4]),
                          None if r[5] is None else Span(r[5], r[6], r[7]), bool(r[8]), r[9])
                    for r in con.execute(sql, args)]

    def n_events(self) -> int:
        with self._connect() as con:
            return con.execute("SELECT COUNT(*) FROM events").fetchone()[0]

    def _check(self, annotator: str, item_id, question, value, cannot_judge, span) -> Item:
        if annotator not in self.queues:
            raise LabelError(403, f"unknown annotator {annotator!r}")
        if isinstance(item_id, bool) or not isinstance(item_id, int) or item_id not in self.items:
            raise LabelError(404, f"unknown item {item_id!r}")
        if item_id not in self._assigned[annotator]:
            raise LabelError(403, f"item {item_id} is not assigned to {annotator}")
        item = self.items[item_id]
        asked = [q.index for q in item.questions]
        if isinstance(question, bool) or not isinstance(question, int) or question not in asked:
            raise LabelError(404, f"question {question!r} is not asked on item {item_id} "
                                  f"(asked: {', '.join(map(str, asked))})")
        allowed = VALUES[self.task]
        if value is not UNSET and value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value not in allowed):
            what = "a rating from 0 to 5" if self.task == RATINGS else "1 (answerable) or 0 (not)"
            raise LabelError(400, f"value {value!r} is not {what}")
        if cannot_judge is not None:
            if not isinstance(cannot_judge, bool):
                raise LabelError(400, f"cannot_judge must be true or false, got {cannot_judge!r}")
            if cannot_judge and self.task != RATINGS:
                raise LabelError(400, "'cannot judge' is a choice of the ratings task only")
            if cannot_judge and value not in (UNSET, None):
                raise LabelError(400, "give a value or 'cannot judge', not both")
        if span is not UNSET and span is not None:
            if not isinstance(span, Span):
                raise LabelError(400, "a span needs start, end and text")
            if not (0 <= span.start < span.end <= len(item.text)):
                raise LabelError(400, f"span {span.start}..{span.end} lies outside the text "
                                      f"(0..{len(item.text)})")
            if item.text[span.start:span.end] != span.text:
                raise LabelError(400, f"span {span.start}..{span.end} is not the text sent")
        return item

    def save(self, annotator: str, item_id: int, question: int, *, value=UNSET,
             cannot_judge: bool | None = None, span=UNSET, review: bool = False) -> Label:
        """Give, change or clear one label, or set its span, in one transaction with its
        event. A value clears 'cannot judge' and the other way round; the span is kept unless
        given (None clears it)."""
        self._check(annotator, item_id, question, value, cannot_judge, span)
        at = _now()
        try:
            with self._connect() as con:
                new_value, new_cannot, new_span = self._write(
                    con, annotator, item_id, question, at, value=value,
                    cannot_judge=cannot_judge, span=span, review=review)
        except DataError as error:   # a full disk: the client may try again
            raise LabelError(507, f"the label was not stored: {error.reason}") from None
        return Label(item_id, question, annotator, new_value, new_cannot,
                     None if new_span[0] is None else Span(*new_span), review, at)

    def _write(self, con, annotator: str, item_id: int, question: int, at: str, *, value,
               cannot_judge, span, review: bool):
        """The label's row and its event in one transaction; what the system refuses is a
        :class:`DataError` (nothing written), another error is raised as it is."""
        try:
            con.execute("BEGIN IMMEDIATE")
            row = con.execute(
                "SELECT value, cannot_judge, span_start, span_end, span_text FROM labels "
                "WHERE item_id = ? AND question = ? AND annotator = ?",
                (item_id, question, annotator)).fetchone()
            old_value, old_cannot, *old_span = row or (None, 0, None, None, None)
            new_value, new_cannot = old_value, bool(old_cannot)
            if value is not UNSET:
                new_value, new_cannot = value, False
            if cannot_judge is not None:
                new_cannot = cannot_judge
                if cannot_judge:
                    new_value = None
            new_span = (old_span if span is UNSET else
                        (None, None, None) if span is None else
                        (span.start, span.end, span.text))
            con.execute("INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (item_id, question, annotator, new_value, int(new_cannot),
                         *new_span, int(review), at))
            con.execute("INSERT INTO events (at, annotator, item_id, question, value, "
                        "cannot_judge, span_start, span_end, review) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (at, annotator, item_id, question, new_value, int(new_cannot),
                         new_span[0], new_span[1], int(review)))
            con.execute("COMMIT")
        except BaseException as exc:
            with suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._refused(exc) from None
            raise
        return new_value, new_cannot, new_span

    # --- progress

    def progress(self, annotator: str | None = None) -> list[dict]:
        """Per annotator and topic: items and questions assigned and labelled (a question
        counts once it has a value or 'cannot judge'; an item once all its questions do)."""
        given: dict[tuple[str, int], int] = {}
        for label in self.labels(annotator):
            if label.given:
                key = (label.annotator, label.item_id)
                given[key] = given.get(key, 0) + 1
        rows: dict[tuple[str, str], dict] = {}
        for name, queue in self.queues.items():
            if annotator is not None and name != annotator:
                continue
            for item_id in queue:
                item = self.items[item_id]
                row = rows.setdefault((name, item.topic_id), {
                    "annotator": name, "topic_id": item.topic_id, "items": 0, "items_done": 0,
                    "questions": 0, "questions_done": 0})
                done = given.get((name, item_id), 0)
                row["items"] += 1
                row["items_done"] += done == len(item.questions)
                row["questions"] += len(item.questions)
                row["questions_done"] += done
        return list(rows.values())

    def first_open_position(self, annotator: str) -> int:
        """The 1-based queue position of the first item with a question not yet labelled
        (where a restarted annotator goes on), or 0 when all are done."""
        done: dict[int, int] = {}
        for label in self.labels(annotator):
            if label.given:
                done[label.item_id] = done.get(label.item_id, 0) + 1
        for pos, item_id in enumerate(self.queues[annotator], 1):
            if done.get(item_id, 0) < len(self.items[item_id].questions):
                return pos
        return 0
