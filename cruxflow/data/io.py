"""The file formats every stage shares: the readers (text, JSON, JSONL, YAML, TREC run and
qrels files, the files of a folder the user named) and the writers (JSON, JSONL, TSV, TREC run
and qrels files), each writing through :func:`cruxflow.data.outputs.atomic_write`.

Every text reader reads under one bound on a record (a file's bytes are read by
:mod:`cruxflow.data.bounded`, under its ``MAX_RECORD_BYTES``), reports bad records with the
file and line they came from, and a path that cannot be read (or is not what the reader
expects) is a :class:`DataError` naming it.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cruxflow.data.bounded import read_bytes, read_error, read_line_blocks
from cruxflow.data.errors import DataError
from cruxflow.data.outputs import atomic_write
from cruxflow.data.text import printable_cells

# --- files a reader recognises in a folder the user named -----------------------------------

NOT_A_FILE = ("not a readable file (a folder, a broken symlink, a loop of them, or a special "
              "file) where a reader expects one: refused rather than skipped")


def list_folder(path) -> list[Path]:
    """The entries of a folder the user named, sorted; one that cannot be listed (no read
    permission, not a folder) is a :class:`DataError` naming it."""
    try:
        return sorted(Path(path) / name for name in os.listdir(path))
    except PermissionError:
        raise DataError("cannot read the folder: permission denied", path=path) from None
    except NotADirectoryError:
        raise DataError("is a file, expected a folder", path=path) from None
    except OSError as exc:
        raise read_error(exc, path) from None


def regular_files(paths) -> list[Path]:
    """Of ``paths`` (entries a reader recognises by their names), those that are regular
    files; one that is there as anything else (a folder, a broken or looping symlink, a FIFO)
    is an error, not a file skipped in silence."""
    out = []
    for p in map(Path, paths):
        if p.is_file():
            out.append(p)
        elif os.path.lexists(p):
            raise DataError(NOT_A_FILE, path=p)
    return out


def not_used_note(entries, root, what: str = "read") -> str | None:
    """One line counting the entries of a folder (under ``root``) that no reader took, so
    that nothing is skipped in silence; None when there are none."""
    entries = list(entries)
    if not entries:
        return None
    names = [os.path.relpath(p, root) + ("/" if Path(p).is_dir() else "") for p in entries]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return f"{len(names)} entries of {root} not {what}: {shown}"


def what_is_there(path) -> str:
    """What ``path`` is, in words, where a reader wanted something else: "no such file or
    folder", "a folder", "a broken symlink (or a loop of them)", "a special file (a pipe or
    a device)", "a file"."""
    p = Path(path)
    if not os.path.lexists(p):
        return "no such file or folder"
    try:
        mode = p.stat().st_mode
    except OSError:
        return "a broken symlink (or a loop of them)"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a file" if stat.S_ISREG(mode) else "a special file (a pipe or a device)"


def wrong_kind(path, expected: str) -> DataError:
    """The one line for ``path`` that is not what a reader expects (``expected``: "a Multi-News
    .jsonl or .parquet file"), saying what is there instead of a blanket "no such file"."""
    return DataError(f"is {what_is_there(path)}, expected {expected}"
                     if os.path.lexists(path) else f"no such file or folder (expected "
                     f"{expected})", path=path)


def existing(path, what: str) -> Path:
    """``path`` as a Path; a missing file is a :class:`DataError` saying what was expected."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"no such {what}", path=p)
    return p


def iter_lines(path, encoding: str = "utf-8", errors: str = "strict") -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a text file, streamed a block at a time (a large shard, or
    only the first lines of a file), under the bound on a line; a leading byte-order mark and
    the CR of CRLF are dropped as :func:`read_text` drops them."""
    lineno = 0
    for block in read_line_blocks(path):
        try:
            text = block.decode(encoding, errors)
        except LookupError:
            raise DataError(f"unknown encoding {encoding!r}", path=path) from None
        except UnicodeDecodeError as exc:
            line = lineno + 1 + block.count(b"\n", 0, exc.start)
            raise DataError(f"not valid {encoding}; pass the file's encoding (e.g. --encoding "
                            "latin-1)", path=path, record=f"line {line}") from None
        if lineno == 0:
            text = text.removeprefix("\ufeff")
        rows = text.split("\n")
        if rows[-1] == "":
            rows.pop()   # the block ends with its newline
        for line in rows:
            lineno += 1
            yield lineno, line.removesuffix("\r")


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
            f"not valid {encoding} at byte {exc.start} ({bytes(data[exc.start:exc.start + 8])!r}); "
            "pass the file's encoding (e.g. --encoding latin-1)",
            path=path,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n") if "\r" in text else text


# Python's JSON parser recurses once per level of nesting; no record of ours nests ten deep.
TOO_DEEP = "invalid JSON: nested too deeply (arrays or objects inside each other)"


# A \uD800-\uDFFF escape: half of a UTF-16 pair, which json.loads takes even alone; a string
# holding one alone cannot be written as UTF-8 (it would fail at the first output, far away).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _no_lone_surrogate(obj, text: str, path, record=None):
    """``obj`` (parsed from ``text``) unless one of its strings holds half a UTF-16 pair."""
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DataError(f"a string holds {exc.object[exc.start]!r}, half of a UTF-16 "
                            "surrogate pair without its other half: not text",
                            path=path, record=record) from None
    return obj


def read_json(path, encoding: str = "utf-8"):
    """A whole JSON file's value; bad JSON names the file, line and column."""
    text = read_text(path, encoding)
    try:
        return _no_lone_surrogate(json.loads(text), text, path)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                        path=path) from None
    except RecursionError:
        raise DataError(TOO_DEEP, path=path) from None


# A YAML file whose aliases expand past this many values is refused: a "billion laughs" file is
# a few hundred bytes that every later walk of the config (validation, Snakemake) would expand.
MAX_YAML_VALUES = 1_000_000
# Mappings and lists inside each other: a workflow config nests some six deep; PyYAML builds a
# value recursing a few frames a level, and a list nested 5,000 deep was a RecursionError.
MAX_YAML_DEPTH = 100
# What YAML 1.1 reads as something other than a string when unquoted (yes, no, on, off, 1.0,
# null): a key of a config is a name, and would become a boolean or a number.
_NOT_A_STRING = {"tag:yaml.org,2002:bool": "a boolean", "tag:yaml.org,2002:int": "a number",
                 "tag:yaml.org,2002:float": "a number", "tag:yaml.org,2002:null": "null",
                 "tag:yaml.org,2002:timestamp": "a date"}


def _strict_loader():
    """PyYAML's safe loader made strict for the files cruxflow reads (configs): a key given
    twice in one mapping is an error naming both lines (not the last one winning in silence),
    a key YAML would read as something other than a string (``yes``, ``1.0``) is an error
    saying to quote it, and values nested past :data:`MAX_YAML_DEPTH` are refused before they
    are built."""
    import yaml
    from yaml.constructor import ConstructorError

    class StrictLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    raise ConstructorError(None, None, f"nested more than {MAX_YAML_DEPTH} "
                                           "deep (mappings or lists inside each other)",
                                           self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue   # << merges are overridden by the mapping's own keys
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag in _NOT_A_STRING \
                        and key_node.style is None:
                    raise ConstructorError(
                        None, None, f"key {key_node.value!r} is read by YAML as "
                        f"{_NOT_A_STRING[key_node.tag]}, not as a name: quote it "
                        f"('{key_node.value}')", key_node.start_mark)
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                    seen.setdefault(key, line)
                except TypeError:   # an unhashable key: PyYAML's own error names it
                    continue
                if first is not None:
                    lines = f"lines {first} and {line}" if first != line else f"on line {line}"
                    raise ConstructorError(None, None, f"key {key!r} is given twice ({lines}): "
                                           "remove one", key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def read_yaml(path, encoding: str = "utf-8"):
    """A YAML file's value, read strictly (:func:`_strict_loader`: no key given twice, no key
    that is not a string, no nesting past :data:`MAX_YAML_DEPTH`); a syntax error (a tab in the
    indentation) names the file, line and column and what YAML says, in one line; an alias
    bomb is refused before anyone walks it."""
    import yaml

    try:
        value = yaml.load(read_text(path, encoding), Loader=_strict_loader())  # noqa: S506
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


@contextmanager
def paused_gc() -> Iterator[None]:
    """Reading a large input makes millions of small objects and none with a cycle; the
    cyclic garbage collector, run again and again meanwhile over every object alive, adds
    a third to the time of a read (a dataset of 200,000 passages and rating rows: 4.0 s,
    2.9 s with it paused) and doubles that of a crux-eval call."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
        yield lineno, _no_lone_surrogate(obj, line, path, f"line {lineno}")


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


# --- writers of JSON, JSON lines and tables

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
    """Write a pandas DataFrame as a tab-separated table atomically (NaN as an empty cell);
    a control character in its text (a run's name holding ESC) is written as its escape
    (:func:`cruxflow.data.text.printable`), never raw."""
    with atomic_write(path) as out:
        printable_cells(frame).to_csv(out, sep="\t", index=index, float_format=float_format)


def nan_to_none(value):
    """``None`` for a float NaN (JSON has no NaN), anything else unchanged."""
    return None if isinstance(value, float) and value != value else value
