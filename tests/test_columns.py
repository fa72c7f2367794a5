"""cruxflow.data.columns: whitespace-separated columns checked on their bytes (hand-made lines,
values written out by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from cruxflow.data.columns import integers, plain_decimals, split_fields


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
