"""Readers that take a file a block at a time (issue 26's speed: a run, the diversity qrels and
the release's ratings are read without holding them whole): blocks of whole lines, a block
met late that needs the text reader, and ratings spread over several judge files. Inputs are
hand-written lines; the expected values are written out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cruxflow.data import runs as run_reader
from cruxflow.data.bounded import read_line_blocks
from cruxflow.data.errors import DataError


@pytest.mark.parametrize("size", [1, 2, 5, 64])
def test_line_blocks_are_whole_lines_and_the_whole_file(tmp_path, size):
    path = tmp_path / "f"
    path.write_bytes(b"a b\n\nccc d\nlast")   # the last line without its newline
    blocks = list(read_line_blocks(path, size))
    assert b"".join(blocks) == b"a b\n\nccc d\nlast"
    assert all(b.endswith(b"\n") for b in blocks[:-1]) and blocks[-1].endswith(b"last")
    if size == 64:
        assert blocks == [b"a b\n\nccc d\n", b"last"]


def test_line_blocks_name_a_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        list(read_line_blocks(tmp_path / "nope"))
    with pytest.raises(DataError, match="is a directory"):
        list(read_line_blocks(tmp_path))


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of about 40 bytes: every file below spans several."""
    def blocks(path, size=None):     # whatever size the reader asks for
        return read_line_blocks(path, 40)

    monkeypatch.setattr(run_reader, "read_line_blocks", blocks)
    from cruxflow.data.ingest import crux_common

    monkeypatch.setattr(crux_common, "read_line_blocks", blocks)


@pytest.mark.parametrize("late", ["t2 Q0 p9 1 0.5 x\r\n", "t2 Q0 p\u00e99 1 0.5 x\n"],
                         ids=["crlf", "utf8"])
def test_a_run_whose_late_block_needs_the_text_reader(tmp_path, small_blocks, late):
    # the first blocks are plain ASCII and read as bytes; a CRLF line or a UTF-8 id further
    # down sends the whole file to the text reader, which reads the same lines
    lines = [f"t1 Q0 p{i} {i + 1} {9 - i}.0 x\n" for i in range(6)] + [late]
    path = tmp_path / "r.run"
    path.write_bytes("".join(lines).encode())
    top = run_reader.read_run_file(path, max_rank=3)
    late_pid = late.split()[2]
    assert top.topics == {"t1": [("p0", 9.0, 1), ("p1", 8.0, 2), ("p2", 7.0, 3)],
                          "t2": [(late_pid, 0.5, 7)]}
    assert top.beyond_k == 3
    assert top.lines.topics == ["t1", "t2"] and top.lines.topic.tolist() == [0, 0, 0, 1]


def test_a_run_read_in_blocks_keeps_line_numbers_and_topic_order(tmp_path, small_blocks):
    # topics interleaved over several blocks: each topic's lines together, in file order,
    # topics in the order they first appear
    path = tmp_path / "r.run"
    path.write_text("b Q0 b1 1 1.5 x\na Q0 a1 1 2 x\n\nb Q0 b2 2 1.25 x\na Q0 a2 9 0.5 x\n"
                    "a Q0 a3 2 0.75 x\n")
    top = run_reader.read_run_file(path, max_rank=2)
    assert top.topics == {"b": [("b1", 1.5, 1), ("b2", 1.25, 4)],
                          "a": [("a1", 2.0, 2), ("a3", 0.75, 6)]}
    assert top.beyond_k == 1


def test_a_passage_twice_within_the_cut_over_two_blocks_is_refused(tmp_path, small_blocks):
    path = tmp_path / "r.run"
    path.write_text("t Q0 p1 1 2.0 x\nt Q0 p2 2 1.0 x\nt Q0 p3 3 0.5 x\nt Q0 p1 4 0.2 x\n")
    with pytest.raises(DataError):
        run_reader.read_run_file(path, max_rank=10)


def test_qrels_in_blocks_and_a_late_crlf(tmp_path, small_blocks):
    from cruxflow.data.ingest.crux_common import read_diversity_qrels

    body = "t1 0 p1 1\nt1 1 p2 1\nt2 0 q1 0\nt1 0 p2 1\nt2 3 q2 2\n"
    rows = [("t1", "0", "p1", 1), ("t1", "1", "p2", 1), ("t2", "0", "q1", 0),
            ("t1", "0", "p2", 1), ("t2", "3", "q2", 2)]
    for name, data in (("plain", body), ("crlf", body[:-1] + "\r\n")):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data.encode())
        qrels = read_diversity_qrels(path)
        assert qrels.rows == rows
        (topics, t), (subtopics, s), (passages, p) = qrels.codes()
        assert topics == ["t1", "t2"] and t.tolist() == [0, 0, 1, 0, 1]
        assert subtopics == ["0", "1", "3"] and s.tolist() == [0, 1, 0, 0, 2]
        assert passages == ["p1", "p2", "q1", "q2"] and p.tolist() == [0, 1, 2, 1, 3]
        assert qrels.relevant_topics() == {"t1", "t2"} and qrels.relevant_topics(2) == {"t2"}
        assert qrels.binary() == {"t1": {"p1": 1, "p2": 1}, "t2": {"q2": 1}}


def test_a_qrels_line_twice_in_two_blocks_is_named(tmp_path, small_blocks):
    from cruxflow.data.ingest.crux_common import read_diversity_qrels

    path = tmp_path / "q.txt"
    path.write_text("t1 0 p1 1\nt1 1 p2 1\nt2 0 q1 0\nt1 1 p2 0\n")
    with pytest.raises(DataError, match="judged again .first at line 2.") as info:
        read_diversity_qrels(path)
    assert info.value.record == "line 4"


def _judge(path: Path, records) -> Path:
    path.write_text("".join(json.dumps({"id": t, "docid": p, "rating": r}) + "\n"
                            for t, p, r in records))
    return path


def test_ratings_over_two_files_a_seen_topic_first(tmp_path):
    # the second file starts with topic A, read in the first, then a new topic C
    from cruxflow.data.ingest.crux_common import (
        RatingRows,
        _read_ratings_checked,
        jsonl_files,
        read_ratings,
    )

    folder = tmp_path / "judge"
    folder.mkdir()
    _judge(folder / "0.jsonl", [("A", "a1", [3, 0]), ("B", "b1", [1, -1, 5])])
    _judge(folder / "1.jsonl", [("A", "a2", [0, 4]), ("C", "c1", [2]), ("B", "b2", [0, 0, 0])])
    judge = read_ratings(folder)
    assert isinstance(judge.ratings, RatingRows) and judge.ratings.pristine
    assert dict(judge.ratings) == {("A", "a1"): [3, 0], ("B", "b1"): [1, -1, 5],
                                   ("A", "a2"): [0, 4], ("C", "c1"): [2],
                                   ("B", "b2"): [0, 0, 0]}
    row, topics, topic_of_row = judge.rows()
    assert row == {("A", "a1"): 0, ("B", "b1"): 1, ("A", "a2"): 2, ("C", "c1"): 3,
                   ("B", "b2"): 4}
    assert topics == ["A", "B", "C"] and topic_of_row.tolist() == [0, 1, 0, 2, 1]
    flat, lengths = judge.flat()
    assert flat.tolist() == [3, 0, 1, -1, 5, 0, 4, 2, 0, 0, 0]
    assert lengths.tolist() == [2, 3, 2, 1, 3]
    assert judge.unrated == 1
    assert judge.where[("C", "c1")] == {"path": folder / "1.jsonl", "record": "line 2"}
    assert judge == _read_ratings_checked(jsonl_files(folder, "ratings"), "utf-8", None)
    # a write moves the ratings into a dict: flat() and rows() follow it
    judge.ratings[("C", "c1")] = [5]
    assert not judge.ratings.pristine and judge.ratings[("C", "c1")] == [5]
    assert judge.flat()[0].tolist() == [3, 0, 1, -1, 5, 0, 4, 5, 0, 0, 0]
    assert judge.rows()[0] == row


@pytest.mark.parametrize("second, message", [
    # a new topic, then a seen one of another length
    ([("C", "c1", [2]), ("A", "a2", [0, 4, 1])], "3 ratings, but topic A has 2"),
    # seen topics only, in the order first read: B is not new for being the next one
    ([("A", "a2", [0, 4]), ("B", "b2", [0, 0])], "2 ratings, but topic B has 3"),
], ids=["new-then-seen", "seen-in-order"])
def test_ratings_of_a_topic_with_two_lengths_over_two_files_are_named(tmp_path, second,
                                                                      message):
    from cruxflow.data.ingest.crux_common import read_ratings

    folder = tmp_path / "judge"
    folder.mkdir()
    _judge(folder / "0.jsonl", [("A", "a1", [3, 0]), ("B", "b1", [1, 1, 1]), ("D", "d1", [1])])
    _judge(folder / "1.jsonl", second)
    with pytest.raises(DataError, match=message) as info:
        read_ratings(folder)
    assert str(info.value.path) == str(folder / "1.jsonl") and info.value.record == "line 2"


def test_ratings_n_questions_binds_a_topic_first_seen_in_an_earlier_file(tmp_path):
    from cruxflow.data.ingest.crux_common import read_ratings

    folder = tmp_path / "judge"
    folder.mkdir()
    _judge(folder / "0.jsonl", [("A", "a1", [3, 0])])
    _judge(folder / "1.jsonl", [("A", "a2", [0, 4])])
    assert len(read_ratings(folder, n_questions={"A": 2}).ratings) == 2
    with pytest.raises(DataError, match="2 ratings but topic A has 3 questions"):
        read_ratings(folder, n_questions={"A": 3})
    assert np.array_equal(read_ratings(folder).flat()[1], [2, 2])


@pytest.mark.parametrize("seed", [1, 2])
def test_release_ratings_lines_read_on_bytes_as_the_expression_reads_them(seed):
    """crux_ratings._release_bytes (the release's ratings lines found on their bytes) against
    the expression _RELEASE_LINE (the reference): release lines as json.dumps writes them,
    then, in most files, a character or two inserted or replaced anywhere (spaces, tabs,
    quotes, escapes, commas, ratings out of -1..5, brackets, control characters, newlines):
    both accept the same files with the same topics, passages and ratings, and refuse the
    same others."""
    from cruxflow.data.ingest.crux_ratings import _release_bytes, _release_regex

    rng = np.random.default_rng(seed)
    edits = ["", " ", "\\", "\t", '"', ",", ", ", "6", "-2", "-", "[]", "\x7f", "\x1f",
             "\r", "\n", "\n\n", "}", "]", "1,1", "-1", " ,", "{", ":"]
    accepted = refused = 0
    for _ in range(1500):
        records = ({"id": f"t{rng.integers(3)}", "docid": f"t:{rng.integers(50)}#{i}",
                    "rating": rng.choice([-1, 0, 1, 2, 3, 4, 5],
                                         size=int(rng.integers(0, 5))).tolist()}
                   for i in range(int(rng.integers(1, 6))))
        text = "\n".join(map(json.dumps, records))
        text += "\n" if rng.random() < 0.7 else ""
        for _ in range(int(rng.integers(0, 3))):
            at, edit = int(rng.integers(0, len(text) + 1)), str(rng.choice(edits))
            text = text[:at] + edit + text[at + int(rng.random() < 0.3):]
        got, want = _release_bytes(text), _release_regex(text)
        assert (got is None) == (want is None), repr(text)
        if want is not None:
            accepted += 1
            assert list(got[0]) == list(want[0]) and got[1:3] == want[1:3], repr(text)
            assert got[3].tolist() == want[3].tolist() and got[4].tolist() == want[4].tolist()
        else:
            refused += 1
    assert accepted > 300 and refused > 300

