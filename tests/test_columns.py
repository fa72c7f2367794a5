"""cruxflow.data.columns: whitespace-separated columns checked on their bytes (hand-made lines,
values written out by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from cruxflow.data import columns
from cruxflow.data.columns import IdTable, id_bytes, integers, plain_decimals, split_fields


def test_fields_lines_and_values():
    block = b"a 1 -12 3.5\n\nbb\t20  007 -0.25\n"
    data, starts, ends, lines = split_fields(block, 4)
    assert lines.tolist() == [1, 3]                       # the blank line 2 holds no row
    assert [block[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)] == \
        [b"a", b"1", b"-12", b"3.5", b"bb", b"20", b"007", b"-0.25"]
    assert integers(data, starts[1::4], ends[1::4]).tolist() == [1, 20]
    assert integers(data, starts[2::4], ends[2::4], signed=True).tolist() == [-12, 7]
    assert integers(data, starts[2::4], ends[2::4]) is None   # a minus, not allowed here
    assert plain_decimals(data, starts[3::4], ends[3::4])


@pytest.mark.parametrize("block", [
    b"a 1 2\nb 1\n",            # a line of two fields
    b"a 1 2\r\n",               # CR: str.split splits on it, a line reader must see it
    b"a\x0b1 2\n",              # vertical tab
    "a 1 \u00e9\n".encode(),    # not ASCII
    b"",
])
def test_anything_else_is_left_to_the_line_reader(block):
    assert split_fields(block, 3) is None


@pytest.mark.parametrize("score, plain", [("3", True), ("-3.", True), (".5", True),
                                          ("1e5", False), ("+1", False), ("1.2.3", False),
                                          ("-", False), ("3-", False), ("nan", False)])
def test_plain_decimals(score, plain):
    block = f"x {score}\n".encode()
    data, starts, ends, _ = split_fields(block, 2)
    assert plain_decimals(data, starts[1::2], ends[1::2]) is plain
    if plain:
        assert float(score) == float(np.float64(score))


@pytest.mark.parametrize("field", [b"-", b"--1", b"1-", b"1a", b"1234567890123456789"])
def test_integers_leave_other_fields_to_the_line_reader(field):
    data, starts, ends, _ = split_fields(b"x " + field + b"\n", 2)
    assert integers(data, starts[1::2], ends[1::2], signed=True) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_fields_found_on_bytes_are_str_splits(seed):
    """columns.split_fields against Python's str.split on random ASCII blocks (letters,
    spaces, tabs, blank lines, a control character now and then): where it answers, the
    fields it cuts out are str.split's and each row's line number is that of a non-blank
    line; it answers None where a non-blank line has another number of fields or a control
    character other than a tab or newline is there."""
    rng = np.random.default_rng(seed)
    answered = 0
    for _ in range(400):
        n_lines = int(rng.integers(1, 6))
        lines = []
        for _ in range(n_lines):
            fields = int(rng.choice([0, 3, 3, 3, 2, 4]))
            gaps = [rng.choice([" ", "\t", "  ", " \t"]) for _ in range(fields + 1)]
            words = ["".join(rng.choice(list("ab1."), size=int(rng.integers(1, 4))))
                     for _ in range(fields)]
            text = "".join(g + w for g, w in zip(gaps, words + [""], strict=True))
            lines.append(text if rng.random() > 0.05 else text + "\x0b")
        block = ("\n".join(lines) + ("\n" if rng.random() < 0.8 else "")).encode()
        found = split_fields(block, 3)
        text = block.decode()
        rows = [(n, line.split()) for n, line in enumerate(text.split("\n"), 1) if line.split()]
        plain = "\x0b" not in text and all(len(f) == 3 for _, f in rows)
        assert (found is not None) == (plain and bool(rows)), block
        if found is not None:
            answered += 1
            _, starts, ends, row_line = found
            cut = [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
            assert cut == text.split()
            assert row_line.tolist() == [n for n, _ in rows]
    assert answered > 50


# --- IdTable: ids looked up on their bytes, against a dict -------------------------------------

def _by_dict(ids: list[str], queries: list[str]) -> list[int]:
    number = {x: i for i, x in enumerate(ids)}
    return [number.get(q, -1) for q in queries]


def _random_ids(rng, n: int, alphabet: str = "abz019:#_-.") -> list[str]:
    # lengths 0-40 cross the 8-byte words; a small alphabet makes near misses
    return ["".join(rng.choice(list(alphabet), size=int(rng.integers(0, 41)))) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ids_are_numbered_as_a_dict_numbers_them(seed):
    rng = np.random.default_rng(seed)
    ids = list(dict.fromkeys(_random_ids(rng, 400)))
    # queries: ids of the table (repeated), ids it lacks, prefixes and extensions of its ids
    queries = [*rng.choice(ids, 300).tolist(), *_random_ids(rng, 300),
               *(x[:-1] for x in ids[:50]), *(x + "a" for x in ids[50:100]), ""]
    table = IdTable(ids)
    assert table.numbers(queries).tolist() == _by_dict(ids, queries)
    assert table._bytes is not None       # the bytes route, not the dict's


def test_an_id_and_the_same_id_with_a_trailing_nul_differ():
    ids = ["a", "a\x00", "b\x00\x00", "12345678", "12345678\x00"]
    queries = ["a\x00", "a", "b", "b\x00", "b\x00\x00", "12345678", "12345678\x00", "x"]
    assert IdTable(ids).numbers(queries).tolist() == [1, 0, -1, -1, 2, 3, 4, -1]


@pytest.mark.parametrize("ids,queries", [
    (["caf\u00e9", "tea"], ["tea", "caf\u00e9", "cafe"]),     # a table that is not ASCII
    (["cafe", "tea"], ["tea", "caf\u00e9", "cafe"]),          # queries that are not
    (["a\nb", "a"], ["a", "a\nb", "b"]),                      # an id holding a newline
    (["x" * 300, "y"], ["y", "x" * 300, "x" * 299]),          # an id past 256 bytes
    ([], ["a", ""]),
    (["a", ""], []),
])
def test_other_ids_are_looked_up_in_a_dict(ids, queries):
    assert IdTable(ids).numbers(queries).tolist() == _by_dict(ids, queries)


def test_ids_whose_hashes_collide_are_still_told_apart(monkeypatch):
    """Every id of a length sharing one hash: the buckets hold many ids, the first id of a
    hash is the only candidate, the dict decides the rest; the answer stays exact."""
    monkeypatch.setattr(columns, "_id_hashes", lambda matrix, length: length.astype(np.uint64))
    rng = np.random.default_rng(7)
    ids = list(dict.fromkeys(_random_ids(rng, 200)))
    queries = [*ids[::-1], *_random_ids(rng, 100)]
    assert IdTable(ids).numbers(queries).tolist() == _by_dict(ids, queries)


def test_id_bytes_are_the_ids_padded_with_zeros():
    matrix, length = id_bytes(["ab", "", "123456789"])
    assert matrix.shape == (3, 16) and length.tolist() == [2, 0, 9]
    assert bytes(matrix[0]) == b"ab" + bytes(14) and not matrix[1].any()
    assert bytes(matrix[2]) == b"123456789" + bytes(7)
