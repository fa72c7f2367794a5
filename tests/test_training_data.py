"""`cruxflow export --format tevatron` (docs/training-data.md): a dataset's topics with a run's
passages sorted by coverage into the CoveR authors' splits (DylanJoo/CoveR
src/multi-view-data-curation/sample-from-coverage.py).

The expected rows are counted by hand in the comments; the random cases are checked against
:func:`authors_rows`, the script's rule written again here from its definition (coverage from
the ratings themselves, not through the engine). benchmarks/tevatron_vs_authors.py runs the
authors' script itself on the same kind of input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import IngestOptions, ingest
from cruxflow.data.model import Dataset, Document, Passage, Topic
from cruxflow.data.training import TevatronOptions, training_data, write_training_data

DUC = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"
ROW_KEYS = ["query_id", "query_text", "positive_document_ids", "negative_document_ids",
            "answer", "source"]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def load_folder(folder: Path, tmp_path: Path, monkeypatch):
    """The export read back by `datasets` as a user would: the folder (its card), offline."""
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = str(tmp_path / "hf-cache")
    rows = datasets.load_dataset(str(folder), cache_dir=cache)
    corpus = datasets.load_dataset(str(folder), "corpus", split="train", cache_dir=cache)
    one = datasets.load_dataset("json", data_files={"pos_20.neg_51": str(
        folder / "pos_20.neg_51.jsonl")}, split="pos_20.neg_51", cache_dir=cache)
    return rows, corpus, one


def ids(rows, key="positive_document_ids"):
    return {r["query_id"]: list(r[key]) for r in rows}


# --- the release excerpt, counted by hand --------------------------------------------------------

@pytest.fixture(scope="module")
def duc_dataset(tmp_path_factory) -> Path:
    ds, _ = ingest("crux", DUC, IngestOptions(prefix="crux"))
    folder = tmp_path_factory.mktemp("duc") / "duc04"
    ds.save(folder)
    return folder


def test_release_excerpt_buckets_by_hand(duc_dataset, tmp_path, monkeypatch, capsys):
    """tests/data/crux/release/crux-mds-duc04, its bm25.run, tau 4 (the authors' default).

    duc04-test-0 (3 questions): answered at >= 4 by some rated passage: q1 (0:0#0 rates 5), q2
    (0:0#1 rates 4); q3's best is 2. So 2 answerable questions. In run order:
      0:0#1 [3, 4, -1] answers q2 -> 1/2 = 0.5  half
      0:0#0 [5, 0, 1]  answers q1 -> 0.5        half
      0:1#2 [0, 2, 0]              -> 0          low and zero
      9:0#0 (not rated for topic 0) -> 0         low and zero
      0:1#3 [1, 1, 2] (rank 11, 5th line) -> 0   low and zero
    duc04-test-1 (2 questions, both answerable: 1:0#0 rates q1 4, 1:0#1 rates q2 5):
      1:0#1 [0, 5] -> 0.5 half; 1:0#0 [4, 1] -> 0.5 half
    duc04-test-2: the best ratings are 2 and 1: nothing answerable, every passage 0:
      2:0#0 zero, 2:0#1 zero
    duc04-test-3 is not in the run: no row. No passage is high, nor at rank > 50.
    """
    out = tmp_path / "scope"
    assert main(["export", "--format", "tevatron", "--dataset", str(duc_dataset),
                 "--run", str(DUC / "run" / "bm25.run"), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no row of pos_high.neg_zero, pos_high.neg_low, pos_high.neg_quarter, " \
           "pos_high.neg_half: not written" in printed
    t0 = ["duc04-test-0:0#1", "duc04-test-0:0#0", "duc04-test-0:1#2", "duc04-test-9:0#0",
          "duc04-test-0:1#3"]
    half0, zero0 = t0[:2], t0[2:]
    t1 = ["duc04-test-1:0#1", "duc04-test-1:0#0"]
    t2 = ["duc04-test-2:0#0", "duc04-test-2:0#1"]
    want = {   # split -> {topic: (positives, negatives)}
        "pos_20.neg_51": {"duc04-test-0": (t0, []), "duc04-test-1": (t1, []),
                          "duc04-test-2": (t2, [])},
        "pos_20.neg_51.filtered": {"duc04-test-0": (half0, []), "duc04-test-1": (t1, [])},
        "pos_half.neg_zero": {"duc04-test-0": (half0, zero0), "duc04-test-1": (t1, [])},
        "pos_low.neg_zero": {"duc04-test-0": (zero0, zero0), "duc04-test-2": (t2, t2)},
        "pos_zero.neg_high": {"duc04-test-0": (zero0, []), "duc04-test-2": (t2, [])},
    }
    # read back by an independent route: the JSON lines themselves
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(["README.md", "corpus.jsonl", *(f"{s}.jsonl" for s in want)])
    for split, topics in want.items():
        rows = read_jsonl(out / f"{split}.jsonl")
        assert [list(r) for r in rows] == [ROW_KEYS] * len(rows)
        assert {r["query_id"]: (r["positive_document_ids"], r["negative_document_ids"])
                for r in rows} == topics, split
        assert {r["answer"] for r in rows} == {None}
        assert {r["source"] for r in rows} == {"duc04" if split == "pos_20.neg_51"
                                               else "duc04.tau:4"}
    assert read_jsonl(out / "pos_20.neg_51.jsonl")[0]["query_text"] == \
        "Write a report on the flooding of the river valley."
    corpus = read_jsonl(out / "corpus.jsonl")
    assert [c["docid"] for c in corpus] == t0 + t1 + t2
    assert corpus[3] == {"docid": "duc04-test-9:0#0", "title": "",
                         "text": "A passage of another topic."}

    # and by `datasets`, as Tevatron loads it: every split of the folder with one schema
    rows, texts, one = load_folder(out, tmp_path, monkeypatch)
    assert sorted(rows) == sorted(want)
    for split, topics in want.items():
        assert {r["query_id"]: (r["positive_document_ids"], r["negative_document_ids"])
                for r in rows[split]} == topics
    assert rows["pos_zero.neg_high"].features["negative_document_ids"].feature.dtype == "string"
    assert texts.num_rows == 9 and texts[0]["docid"] == "duc04-test-0:0#1"
    assert ids(one) == ids(rows["pos_20.neg_51"])


def test_release_excerpt_at_tau_3(duc_dataset, tmp_path):
    """At --eta 3, 0:0#1 [3, 4, -1] answers q1 and q2 of topic 0 -> 2/2 = 1.0: high, so the
    four pos_high splits get topic 0, each with its negatives: zero/low {0:1#2, 9:0#0, 0:1#3},
    quarter the same (no quarter passage), half those and 0:0#0 (0.5)."""
    out = tmp_path / "scope3"
    assert main(["export", "--format", "tevatron", "--dataset", str(duc_dataset), "--eta", "3",
                 "--run", str(DUC / "run" / "bm25.run"), "--output", str(out)]) == 0
    zero0 = ["duc04-test-0:1#2", "duc04-test-9:0#0", "duc04-test-0:1#3"]
    for split, negatives in (("pos_high.neg_zero", zero0), ("pos_high.neg_low", zero0),
                             ("pos_high.neg_quarter", zero0),
                             ("pos_high.neg_half", ["duc04-test-0:0#0", *zero0])):
        [row] = read_jsonl(out / f"{split}.jsonl")
        assert (row["query_id"], row["positive_document_ids"], row["negative_document_ids"],
                row["source"]) == ("duc04-test-0", ["duc04-test-0:0#1"], negatives,
                                   "duc04.tau:3")
    assert ids(read_jsonl(out / "pos_zero.neg_high.jsonl"), "negative_document_ids") == \
        {"duc04-test-0": ["duc04-test-0:0#1"], "duc04-test-2": []}


# --- a hand-made dataset: every edge, the padding, the cut --------------------------------------

def hand_made() -> tuple[Dataset, str]:
    """t1: 5 questions, q5 answered by no passage at >= 4, so 4 answerable; t2: 5 questions,
    all answerable; t3: nothing answerable; t4: not in the run."""
    ratings = {
        ("t1", "t1:0#1"): [4, 4, 4, 4, 0],     # 4/4 = 1.0   high
        ("t1", "t1:0#2"): [5, 4, 4, 2, 3],     # 3/4 = 0.75  high (its lower edge)
        ("t1", "t1:0#3"): [4, 5, 0, 0, 0],     # 2/4 = 0.5   half (its lower edge)
        ("t1", "t1:0#4"): [0, 0, 0, 4, 1],     # 1/4 = 0.25  quarter (its lower edge)
        ("t1", "t1:0#5"): [3, -1, 3, 3, 3],    # 0           low and zero
        # t1:0#6 unrated: 0, low and zero
        ("t1", "t1:0#7"): [4, 4, 4, 4, 0],     # high, but below the positive depth
        ("t2", "t2:0#1"): [4, 0, 0, 0, 0],     # 1/5 = 0.2   low, not zero
        ("t2", "t2:0#2"): [0, 4, 4, 0, 0],     # 2/5 = 0.4   quarter
        ("t2", "t2:0#3"): [0, 0, 4, 4, 5],     # 3/5 = 0.6   half
        ("t3", "t3:0#1"): [3, 3], ("t3", "t3:0#2"): [3, 2],   # nothing >= 4: all 0
        ("t4", "t4:0#1"): [5],
    }
    topics, docs, passages = {}, {}, {}
    for t, n_q, n_p in (("t1", 5, 12), ("t2", 5, 4), ("t3", 2, 2), ("t4", 1, 1)):
        topics[t] = Topic(t, "summary", [f"{t}:0"], f"request {t}", [f"{t} q{i}?" for i in
                                                                    range(n_q)])
        docs[f"{t}:0"] = Document(f"{t}:0", t, "doc")
        for n in range(1, n_p + 1):
            passages[f"{t}:0#{n}"] = Passage(f"{t}:0#{n}", f"text {t} {n}", t, f"{t}:0")
    lines = [f"t1 Q0 t1:0#{n} {n} {20 - n} run" for n in range(1, 13)]
    # t2 in file order, whatever the scores; its 4th line is cut by the run depth
    lines += ["t2 Q0 t2:0#1 1 1.0 run", "t2 Q0 t2:0#2 2 5.0 run", "t2 Q0 t2:0#3 3 3.0 run",
              "t2 Q0 t2:0#4 1001 9.0 run"]
    lines += ["t3 Q0 t3:0#1 1 2.0 run", "t3 Q0 t3:0#2 2 1.0 run"]
    return Dataset(topics, docs, passages, ratings), "\n".join(lines) + "\n"


SMALL = TevatronOptions(positive_depth=6, negative_depth=7, negatives=3)


def test_every_bucket_edge_the_padding_and_the_cut(tmp_path):
    """t1 with positive depth 6, negative depth 7, 3 negatives: the top six are p1..p6 (p7 is
    high but below the depth); the deep ones are at positions > 7 (p9..p12), the plain split's
    negatives from position 7 (p8..p12). Padding is deep[:3 - len(negatives)]: with 4
    negatives already (pos_high.neg_half) that is deep[:-1], the script's slice."""
    ds, run = hand_made()
    (tmp_path / "run.trec").write_text(run)
    data = training_data(ds, tmp_path / "run.trec", SMALL, name="hand")
    p = [None] + [f"t1:0#{n}" for n in range(1, 13)]
    want_t1 = {
        "pos_6.neg_8": (p[1:7], p[8:13]),
        "pos_6.neg_8.filtered": (p[1:5], p[8:13]),
        "pos_high.neg_zero": ([p[1], p[2]], [p[5], p[6], p[9]]),
        "pos_high.neg_low": ([p[1], p[2]], [p[5], p[6], p[9]]),
        "pos_high.neg_quarter": ([p[1], p[2]], [p[4], p[5], p[6]]),
        "pos_high.neg_half": ([p[1], p[2]], [p[3], p[4], p[5], p[6], p[9], p[10], p[11]]),
        "pos_half.neg_zero": ([p[3]], [p[5], p[6], p[9]]),
        "pos_low.neg_zero": ([p[5], p[6]], [p[5], p[6], p[9]]),
        "pos_zero.neg_high": ([p[5], p[6]], [p[1], p[2], p[9]]),
    }
    q = ["t2:0#1", "t2:0#2", "t2:0#3"]     # file order; t2:0#4 (rank 1001) cut
    want_t2 = {"pos_6.neg_8": (q, []), "pos_6.neg_8.filtered": (q, []),
               "pos_half.neg_zero": ([q[2]], []), "pos_low.neg_zero": ([q[0]], [])}
    r = ["t3:0#1", "t3:0#2"]
    want_t3 = {"pos_6.neg_8": (r, []), "pos_low.neg_zero": (r, r), "pos_zero.neg_high": (r, [])}
    assert list(data.splits) == SMALL.split_names
    for split, rows in data.splits.items():
        got = {row["query_id"]: (row["positive_document_ids"], row["negative_document_ids"])
               for row in rows}
        want = {t: w[split] for t, w in (("t1", want_t1), ("t2", want_t2), ("t3", want_t3))
                if split in w}
        assert got == want, split
    assert data.without_text == []
    assert any("ranks not 1..n" in note for note in data.notes)   # t2's rank 1001
    assert data.splits["pos_6.neg_8"][0]["source"] == "hand"
    assert data.splits["pos_low.neg_zero"][0]["source"] == "hand.tau:4"
    assert [c["docid"] for c in data.corpus] == [*p[1:7], *p[8:13], *q, *r]


def test_a_passage_without_text_is_unrated_and_has_no_corpus_row(tmp_path, capsys):
    ds, run = hand_made()
    (tmp_path / "run.trec").write_text(run + "t3 Q0 t3:0#9 3 0.5 run\n")
    data = training_data(ds, tmp_path / "run.trec", SMALL, name="hand")
    assert data.without_text == ["t3:0#9"]
    assert ids(data.splits["pos_low.neg_zero"])["t3"] == ["t3:0#1", "t3:0#2", "t3:0#9"]
    with pytest.raises(DataError, match="t3:0#9.*strict-collection"):
        training_data(ds, tmp_path / "run.trec", SMALL, name="hand", strict_collection=True)


def test_refusals(tmp_path, capsys):
    ds, run = hand_made()
    ds.save(tmp_path / "ds")
    (tmp_path / "run.trec").write_text(run)
    args = ["export", "--format", "tevatron", "--dataset", str(tmp_path / "ds"),
            "--output", str(tmp_path / "out")]
    assert main(args) == 2
    assert "--run goes with --format tevatron" in capsys.readouterr().err
    assert main(["export", "--format", "nuggetbank", "--dataset", str(tmp_path / "ds"),
                 "--output", str(tmp_path / "nb"), "--run", str(tmp_path / "run.trec")]) == 2
    assert "--run goes with --format tevatron" in capsys.readouterr().err
    # a run topic the dataset lacks: file, line and field
    (tmp_path / "other.trec").write_text(run + "t9 Q0 t1:0#1 1 1.0 run\n")
    assert main([*args, "--run", str(tmp_path / "other.trec")]) == 2
    err = capsys.readouterr().err
    assert "other.trec: query t9: field 'qid': unknown topic 't9'" in err
    assert not (tmp_path / "out").exists()
    # a split empty now whose file an earlier export left: refused, nothing replaced
    assert main([*args, "--run", str(tmp_path / "run.trec")]) == 0
    (tmp_path / "t1only.trec").write_text("t3 Q0 t3:0#1 1 2.0 run\n")
    before = (tmp_path / "out" / "pos_20.neg_51.jsonl").read_text()
    assert main([*args, "--run", str(tmp_path / "t1only.trec")]) == 2
    assert "pos_20.neg_51.filtered.jsonl: holds no row in this export" in capsys.readouterr().err
    assert (tmp_path / "out" / "pos_20.neg_51.jsonl").read_text() == before
    # options out of range: one line
    with pytest.raises(DataError, match="eta"):
        TevatronOptions(eta=6)
    with pytest.raises(DataError, match="positive_depth must be at least 1"):
        TevatronOptions(positive_depth=0)


def test_a_topic_without_a_request_is_refused(tmp_path):
    ds, run = hand_made()
    ds.topics["t3"].query = None
    (tmp_path / "run.trec").write_text(run)
    with pytest.raises(DataError, match="query t3.*no report request"):
        training_data(ds, tmp_path / "run.trec", SMALL, name="hand")


# --- the script's rule, written again, on random inputs ------------------------------------------

def authors_rows(ratings: dict, questions: dict, queries: dict, ranked: dict, tau: int,
                 top: int, deep_after: int, pad: int) -> dict[str, dict[str, tuple]]:
    """sample-from-coverage.py's splits by its definition: coverage = (questions the passage
    rates >= tau) / (questions some rated passage of the topic rates >= tau), 0 without any;
    buckets of the first ``top`` passages by their first lower edge among 0.75, 0.5, 0.25, 0
    (c == 0 also "zero"); deep negatives at positions > ``deep_after``; padding with the slice
    deep[:pad - n]. Rows as {topic: (sorted positives, sorted negatives)}: the script's order
    is its set()'s."""
    out: dict[str, dict[str, tuple]] = {}
    for t, pids in ranked.items():
        rated = [r for (tt, _), r in ratings.items() if tt == t]
        answerable = sum(1 for i in range(len(questions[t]))
                         if any(r[i] >= tau for r in rated))
        bucket = {0.75: [], 0.5: [], 0.25: [], 0.0: [], "zero": []}
        for pid in pids[:top]:
            r = ratings.get((t, pid), [0])
            c = sum(x >= tau for x in r) / answerable if answerable else 0
            edge = next(e for e in (0.75, 0.5, 0.25, 0.0) if c >= e)
            bucket[edge].append(pid)
            if c == 0:
                bucket["zero"].append(pid)
        deep = [pid for i, pid in enumerate(pids) if i > deep_after]
        plain = f"pos_{top}.neg_{deep_after + 1}"
        out.setdefault(plain, {})[t] = (sorted(pids[:top]), sorted(pids[deep_after:]))
        kept = [pid for pid in pids[:top] if pid not in bucket["zero"]]
        if kept:
            out.setdefault(plain + ".filtered", {})[t] = (sorted(kept), sorted(pids[deep_after:]))
        positive = {"high": bucket[0.75], "half": bucket[0.5], "low": bucket[0.0],
                    "zero": bucket["zero"]}
        negative = {"zero": bucket["zero"], "low": bucket[0.0],
                    "quarter": bucket[0.25] + bucket[0.0],
                    "half": bucket[0.5] + bucket[0.25] + bucket[0.0], "high": bucket[0.75]}
        for p, n in (("high", "zero"), ("high", "low"), ("high", "quarter"), ("high", "half"),
                     ("half", "zero"), ("low", "zero"), ("zero", "high")):
            pos, neg = list(set(positive[p])), list(set(negative[n]))
            neg += deep[:(pad - len(neg))]
            if pos:
                out.setdefault(f"pos_{p}.neg_{n}", {})[t] = (sorted(pos), sorted(neg))
    return out


def random_case(seed: int, n_topics: int = 40) -> tuple[Dataset, str]:
    rng = random.Random(seed)
    topics, docs, passages, ratings, lines = {}, {}, {}, {}, []
    for k in range(n_topics):
        t = f"r{k}"
        n_q = rng.randint(1, 6)
        topics[t] = Topic(t, "s", [f"{t}:0"], f"request {k}", [f"q{i}" for i in range(n_q)])
        docs[f"{t}:0"] = Document(f"{t}:0", t, "doc")
        pids = [f"{t}:0#{n}" for n in range(rng.randint(3, 70))]
        high = rng.choice([3, 5])     # some topics with nothing answerable at tau 4 or 5
        for pid in pids:
            passages[pid] = Passage(pid, f"text {pid}", t, f"{t}:0")
            if rng.random() < 0.7:
                ratings[(t, pid)] = [rng.choice([-1, 0, 0, 1, 2, 3, 4, high]) for _ in
                                     range(n_q)]
        rng.shuffle(pids)
        for rank, pid in enumerate(pids, 1):
            lines.append(f"{t} Q0 {pid} {rank} {100 - rank} r")
    return Dataset(topics, docs, passages, ratings), "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed, options", [
    (1, TevatronOptions()), (2, TevatronOptions(eta=3)), (3, TevatronOptions(eta=5)),
    (4, TevatronOptions(positive_depth=8, negative_depth=10, negatives=5)),
    (5, TevatronOptions(positive_depth=12, negative_depth=4, negatives=20))])
def test_random_inputs_equal_the_scripts_rule(tmp_path, seed, options):
    ds, run = random_case(seed)
    (tmp_path / "run.trec").write_text(run)
    data = training_data(ds, tmp_path / "run.trec", options, name="r")
    ranked: dict[str, list[str]] = {}
    for line in run.splitlines():
        t, _, pid, *_ = line.split()
        ranked.setdefault(t, []).append(pid)
    want = authors_rows(ds.ratings, {t: x.questions for t, x in ds.topics.items()},
                        {}, ranked, options.eta, options.positive_depth,
                        options.negative_depth, options.negatives)
    got = {split: {r["query_id"]: (sorted(r["positive_document_ids"]),
                                   sorted(r["negative_document_ids"])) for r in rows}
           for split, rows in data.splits.items() if rows}
    assert got == want
    # every bucket is met somewhere, so the comparison is not vacuous
    assert len(got) == 9
    # rows keep the run's order
    for rows in data.splits.values():
        for row in rows:
            order = {pid: i for i, pid in enumerate(ranked[row["query_id"]])}
            assert row["positive_document_ids"] == sorted(row["positive_document_ids"],
                                                          key=order.__getitem__)


def test_written_files_are_the_splits_with_rows(tmp_path):
    ds, run = hand_made()
    (tmp_path / "run.trec").write_text(run)
    data = training_data(ds, tmp_path / "run.trec", SMALL, name="hand")
    written = write_training_data(data, tmp_path / "out")
    assert {p.name: n for p, n in written.items()} == {
        **{f"{s}.jsonl": len(rows) for s, rows in data.splits.items() if rows},
        "corpus.jsonl": len(data.corpus)}
    card = (tmp_path / "out" / "README.md").read_text()
    assert "tau (eta) 4, positives from each topic's first 6 passages" in card
    assert "| `pos_6.neg_8` | 3 |" in card
