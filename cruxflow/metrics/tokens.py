"""Token counters for density (Eq. 6) and length control.

``make_token_counter(None)`` gives the documented fallback: a regex counter that counts words
and punctuation marks (``\\w+`` runs and single non-space symbols). It needs no model and is
stable across machines; density is a ratio of two counts from the same counter, so the choice
shifts Den only through how it treats different texts. For the paper's numbers, point it at the
Llama-3.1 tokenizer: a ``tokenizer.json`` file or a directory holding one (a local Hugging Face
snapshot), read with the ``tokenizers`` library, offline.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cruxflow.data.errors import DataError

TokenCounter = Callable[[str], int]
TokenTruncator = Callable[[str, int], str]
_TOKEN = re.compile(r"\w+|[^\w\s]")


def regex_token_count(text: str) -> int:
    return len(_TOKEN.findall(text))


# Each byte's class for the regex counter (as a bytes.translate table): 0 white space
# (str.isspace's: \t \n \v \f \r, \x1c-\x1f, space), 1 a word character (re's \w on str),
# 2 any other (a token alone)
_CLASS = bytearray([2] * 256)
for _c in b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ":
    _CLASS[_c] = 0
for _c in b"0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _CLASS[_c] = 1
_CLASS = bytes(_CLASS)
# texts counted at once: about this many bytes (a block's arrays stay in the cache and their
# memory is reused by the next block's)
_COUNT_BLOCK = 1 << 20


def regex_token_counts(texts: list[str]) -> list[int]:
    """:func:`regex_token_count` of many texts at once, a block of texts at a time: a block of
    ASCII texts is counted on its bytes with numpy, the texts of any other block one by one
    (the ASCII ones on their bytes, the others by the regular expression). A token starts at
    each byte of class 2 (neither a word character nor white space) and at each word
    character after a byte that is none: where a byte's class exceeds "the byte before is a
    word character". Equal to the one-by-one count (``tests/test_evaluate.py``)."""
    # each text followed by a space (which ends its last token and is none): every text, its
    # space included, is a slice of at least one byte of its block
    size = np.fromiter(map(len, texts), np.int64, len(texts)) + 1
    ends = np.cumsum(size)
    out = np.zeros(len(texts), dtype=np.int64)
    first = 0
    while first < len(texts):
        last = max(first + 1, int(np.searchsorted(ends, ends[first] - size[first]
                                                  + _COUNT_BLOCK, side="right")))
        part = texts[first:last]
        joined = " ".join(part)
        if joined.isascii():
            out[first:last] = _ascii_counts(joined, size[first:last])
        else:
            for i, text in enumerate(part, first):
                out[i] = _ascii_counts(text, size[i:i + 1])[0] if text.isascii() else \
                    regex_token_count(text)
        first = last
    return out.tolist()


def _ascii_counts(joined: str, size: np.ndarray) -> np.ndarray:
    """The regex tokens of each of the ASCII texts that ``joined`` holds (joined by single
    spaces; ``size``: each text's length plus one)."""
    kind = np.frombuffer((" " + joined + " ").encode("ascii").translate(_CLASS), dtype=np.uint8)
    # where a token starts, counted between the texts' bounds (a token is a text's: the
    # space after each text starts none)
    starts = np.flatnonzero(kind[1:] > (kind[:-1] == 1))
    bounds = np.concatenate(([0], np.cumsum(size)))
    return np.diff(np.searchsorted(starts, bounds))


regex_token_count.batch = regex_token_counts   # what the scorer counts many passages with


def regex_truncate(text: str, n: int) -> str:
    """The prefix of ``text`` that holds its first ``n`` regex tokens."""
    if n <= 0:
        return ""
    for i, m in enumerate(_TOKEN.finditer(text), 1):
        if i == n:
            return text[:m.end()]
    return text


def _hf_tokenizer(path):
    from tokenizers import Tokenizer

    p = Path(path)
    file = p / "tokenizer.json" if p.is_dir() else p
    if not file.is_file():
        raise DataError("no tokenizer.json (the tokenizer must be a local file or a directory "
                        "holding tokenizer.json; nothing is downloaded)", path=file)
    try:
        return file, Tokenizer.from_file(str(file))
    except Exception as e:  # the tokenizers library raises a bare Exception
        raise DataError(f"not a tokenizer.json the tokenizers library reads ({e})",
                        path=file) from None


def hf_token_counter(path) -> TokenCounter:
    file, tok = _hf_tokenizer(path)

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    count.__name__ = f"hf:{file}"
    return count


def describe_token_counter(spec: str | None) -> dict:
    """Which counter ``spec`` names, for a run's manifest: the regex fallback (its pattern), or
    the tokenizer file with its SHA-256 and vocabulary size, so that a table's Den and token(Z*)
    can be traced to the tokenizer that counted them (the paper: Llama-3.1's)."""
    if spec in (None, "", "regex"):
        return {"kind": "regex", "pattern": _TOKEN.pattern}
    file, tok = _hf_tokenizer(spec)
    return {"kind": "tokenizer", "path": str(file),
            "sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
            "vocab_size": tok.get_vocab_size()}


def make_token_counter(spec: str | None) -> TokenCounter:
    """``None``/``"regex"``: the fallback; anything else: a local tokenizer path."""
    if spec in (None, "", "regex"):
        return regex_token_count
    return hf_token_counter(spec)


def hf_truncator(path) -> TokenTruncator:
    _, tok = _hf_tokenizer(path)

    def truncate(text: str, n: int) -> str:
        if n <= 0:
            return ""
        offsets = tok.encode(text, add_special_tokens=False).offsets
        return text if len(offsets) <= n else text[:offsets[n - 1][1]]

    return truncate


def make_token_truncator(spec: str | None) -> TokenTruncator:
    """Cut a text to its first ``n`` tokens, counted as :func:`make_token_counter` counts."""
    if spec in (None, "", "regex"):
        return regex_truncate
    return hf_truncator(spec)


def make_batch_token_counter(spec: str | None) -> Callable[[list[str]], list[int]]:
    """Token counts of many texts at once, as :func:`make_token_counter` counts them (a
    tokenizer's batch encoding runs in parallel: what a plan over a whole corpus needs)."""
    if spec in (None, "", "regex"):
        return regex_token_counts
    _, tok = _hf_tokenizer(spec)
    return lambda texts: [len(e.ids) for e in tok.encode_batch(list(texts),
                                                               add_special_tokens=False)]


# --- token counts given as files ----------------------------------------------------------

def read_token_counts(path) -> dict[str, int]:
    """Token counts per passage: TSV ``passage<TAB>tokens`` or JSONL ``{"id", "tokens"}``."""
    from cruxflow.data.io import iter_jsonl, read_text

    p = Path(path)
    counts: dict[str, int] = {}
    if p.suffix == ".jsonl":
        rows = ((f"line {ln}", obj.get("id"), obj.get("tokens")) for ln, obj in iter_jsonl(p))
    else:
        rows = ((f"line {ln}", *(line.split("\t") + [None, None])[:2])
                for ln, line in enumerate(read_text(p).split("\n"), 1) if line.strip())
    for record, pid, value in rows:
        try:
            tokens = int(value)
            if tokens < 0 or str(value).strip() not in (str(tokens), f"{tokens}.0"):
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(f"expected a non-negative integer, got {value!r}", path=p,
                            record=record, field="tokens") from None
        if not isinstance(pid, str) or not pid.strip():
            raise DataError("missing passage id", path=p, record=record, field="id")
        counts[pid.strip()] = tokens
    return counts


def collection_token_counts(collection, tokenizer: str | None, pids) -> dict[str, int]:
    """Token counts of the passages ``pids`` that the collection holds (the others are reported
    where a context needs them), counted with a local tokenizer or the regex counter."""
    from cruxflow.data.ingest.crux_common import read_collection
    from cruxflow.metrics.tokens import make_token_counter

    texts, _ = read_collection(collection)
    try:
        count = make_token_counter(tokenizer)
    except FileNotFoundError as exc:
        raise DataError(str(exc), path=tokenizer) from None
    return {pid: count(texts[pid]) for pid in pids if pid in texts}
