"""cruxflow.data.columns: whitespace-separated columns checked on their bytes (hand-made lines,
values written out by hand)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cruxflow.data import columns
from cruxflow.data.columns import (
    Codes,
    IdTable,
    decimals,
    id_bytes,
    integers,
    plain_decimals,
    split_fields,
)


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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_single_spaced_lines_are_split_as_str_splits_them(seed, monkeypatch):
    """The usual layout (one space between fields, no blank line) is found from its white
    space alone (columns._single_spaced): on random blocks mostly so laid out, now and then a
    double space, a tab, a leading space, a blank line, a line of other width or no final
    newline, the same answer as the general route's and as str.split's."""
    rng = np.random.default_rng(seed)
    blocks, fast = [], 0
    for _ in range(400):
        lines = []
        for _ in range(int(rng.integers(1, 6))):
            fields = ["".join(rng.choice(list("ab1.-"), size=int(rng.integers(1, 5))))
                      for _ in range(3 if rng.random() > 0.03 else 2)]
            gap = " " if rng.random() > 0.05 else str(rng.choice(["  ", "\t", " \t"]))
            line = gap.join(fields)
            lines.append(line if rng.random() > 0.03 else " " + line)
        if rng.random() < 0.03:
            lines.insert(int(rng.integers(0, len(lines))), "")
        block = ("\n".join(lines) + ("\n" if rng.random() < 0.9 else "")).encode()
        found = split_fields(block, 3)
        blocks.append((block, found))
        fast += columns._single_spaced(np.frombuffer(block, dtype=np.uint8), 3) is not None
        text = block.decode()
        rows = [(n, line.split()) for n, line in enumerate(text.split("\n"), 1) if line.split()]
        assert (found is not None) == all(len(f) == 3 for _, f in rows), block
        if found is not None:
            _, starts, ends, row_line = found
            cut = [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
            assert cut == text.split() and row_line.tolist() == [n for n, _ in rows]
    assert 150 < fast < 400
    monkeypatch.setattr(columns, "_single_spaced", lambda data, n_fields: None)
    for block, found in blocks:
        general = split_fields(block, 3)
        assert (general is None) == (found is None)
        if found is not None:
            assert all(np.array_equal(a, b) for a, b in zip(general, found, strict=True))


def test_decimals_read_a_word_at_a_time_are_floats_values_to_the_bit():
    """Random plain decimals of 1-8 bytes (a point anywhere, a minus now and then), of 9-17
    bytes, and the edge cases: the value float() reads, sign of zero included; more than 15
    digits are left to float()."""
    rng = np.random.default_rng(11)
    fields = ["0", "-0", "-0.0", "3.", ".5", "-.5", "99999999", ".1234567", "1234567.",
              "-1234567", "0.1", "0.3", "-9.99999"]
    for _ in range(3000):
        f = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 7))))
        if rng.random() < 0.6:
            at = int(rng.integers(0, len(f) + 1))
            f = f[:at] + "." + f[at:]
        fields.append("-" + f if rng.random() < 0.3 else f)
    block = "".join(f"x {f}\n" for f in fields).encode()
    data, starts, ends, _ = split_fields(block, 2)
    got = decimals(data, starts[1::2], ends[1::2])
    want = np.array([float(f) for f in fields])
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    data, starts, ends, _ = split_fields(b"x 123456789\ny 1e5\nz 1234567890.1234567\n", 2)
    assert decimals(data, starts[1::2][1:2], ends[1::2][1:2]) is None    # not plain
    assert decimals(data, starts[1::2][2:], ends[1::2][2:]) is None      # 17 digits: float's
    # longer fields (nine bytes and more: most runs write 20.000000), as matrices of bytes
    long = [f"{rng.uniform(-1e6, 1e6):.{int(rng.integers(0, 8))}f}" for _ in range(3000)]
    long += ["123456789", "-0.00000000", "0.000000001", "999999999999999", "-.123456789"]
    block = "".join(f"x {f}\n" for f in long).encode()
    data, starts, ends, _ = split_fields(block, 2)
    got = decimals(data, starts[1::2], ends[1::2])
    want = np.array([float(f) for f in long])
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("seed", [1, 2])
def test_fields_coded_on_their_bytes_are_coded_as_their_strings(seed):
    """Codes.add_fields (distinct fields told apart on their bytes) against Codes.add of the
    fields as strings, over several blocks: repeats within and across blocks, ids that are
    prefixes of one another, lengths around the 8-byte words and past 32 bytes."""
    rng = np.random.default_rng(seed)
    pool = ["a", "ab", "a" * 8, "a" * 9, "a" * 16, "a" * 17, "b" * 32, "c" * 33, "x1", "1x"]
    by_bytes, by_strings = Codes(), Codes()
    for _ in range(30):
        n = int(rng.integers(1, 40))
        fields = [str(rng.choice(pool)) if rng.random() < 0.5 else
                  "".join(rng.choice(list("ab:#1"), size=int(rng.integers(1, 12))))
                  for _ in range(n)]
        text = "".join(f"{f} 1\n" for f in fields)
        data, starts, ends, _ = split_fields(text.encode(), 2)
        by_bytes.add_fields(text, data, starts[0::2], ends[0::2])
        by_strings.add(fields)
    assert by_bytes.values == by_strings.values
    assert by_bytes.codes().tolist() == by_strings.codes().tolist()


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


def test_ids_looked_up_a_block_at_a_time_as_at_once(monkeypatch):
    """Queries past LOOKUP_BLOCK go a block at a time (bounded memory): blocks of 7 here, one
    of them not ASCII (its block takes the dict's route), give the dict's numbers."""
    monkeypatch.setattr(columns, "LOOKUP_BLOCK", 7)
    rng = np.random.default_rng(5)
    ids = list(dict.fromkeys(_random_ids(rng, 100)))
    queries = [*rng.choice(ids, 40).tolist(), *_random_ids(rng, 30), "caf\u00e9", ids[0]]
    got = IdTable(ids).numbers(queries)
    assert len(got) == len(queries) and got.tolist() == _by_dict(ids, queries)


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


def _cells_route(monkeypatch):
    """integers and plain_decimals through their matrix of bytes (the route of fields over
    eight bytes) whatever the fields' lengths."""
    original = columns._Words

    class Never(original):
        def __init__(self, *a):
            raise AssertionError("the word route was taken")
    monkeypatch.setattr(columns, "_Words", Never)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_fields_read_a_word_at_a_time_as_the_bytes_are_read(seed, monkeypatch):
    """Fields of 1-8 bytes are checked and valued a 64-bit word at a time: the same answer
    as the matrix of their bytes, and as int and float, on random fields of digits, points,
    minus signs and other characters (every one of them valid now and then)."""
    rng = np.random.default_rng(seed)
    answers = []
    for _ in range(600):
        n = int(rng.integers(1, 5))
        alphabet = rng.choice(["0123456789", "0123456789.", "0123456789.-", "09.-a/:+e"])
        fields = ["".join(rng.choice(list(alphabet), size=int(rng.integers(1, 9))))
                  for _ in range(n)]
        block = " ".join(f"x {f}\n" for f in fields).replace("\n ", "\n").encode()
        data, starts, ends, _ = split_fields(block, 2)
        got = (integers(data, starts[1::2], ends[1::2]),
               integers(data, starts[1::2], ends[1::2], signed=True),
               plain_decimals(data, starts[1::2], ends[1::2]))
        answers.append((data, starts, ends, got))
        ints = all(f.isdigit() for f in fields)
        signed = all(f.isdigit() or (f[:1] == "-" and f[1:].isdigit()) for f in fields)
        assert (got[0] is not None) == ints and (got[1] is not None) == signed, fields
        if signed:
            assert got[1].tolist() == [int(f) for f in fields]
        plain = all(re.fullmatch(r"-?(\d+\.?\d*|\.\d+)", f) for f in fields)
        assert got[2] is bool(plain), fields
    _cells_route(monkeypatch)
    monkeypatch.setattr(columns, "_WORD_BYTES", 0)
    for data, starts, ends, got in answers:
        again = (integers(data, starts[1::2], ends[1::2]),
                 integers(data, starts[1::2], ends[1::2], signed=True),
                 plain_decimals(data, starts[1::2], ends[1::2]))
        assert [None if a is None else a.tolist() for a in again[:2]] == \
            [None if a is None else a.tolist() for a in got[:2]] and again[2] is got[2]
