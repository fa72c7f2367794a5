"""Judgments (P*, P**, qrels) and the context scorer on a small dataset built by hand."""

import math

import pytest
from oracles.crux_formulas import redundant_passages

from cruxflow.data.errors import DataError
from cruxflow.data.io import RunRow, read_qrels, read_run, write_run
from cruxflow.data.model import Dataset, Passage, Topic
from cruxflow.data.outputs import atomic_write
from cruxflow.data.runs import check_run
from cruxflow.metrics.judgments import (
    TopicJudgments,
    derive,
    read_judgments,
    relevance_qrels,
    write_judgments,
)
from cruxflow.metrics.options import MetricOptions
from cruxflow.metrics.per_query import aggregate
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.tokens import (
    describe_token_counter,
    hf_token_counter,
    make_token_counter,
    regex_token_count,
)


def tiny_dataset() -> Dataset:
    topic = Topic("t", "summary", ["t:0", "t:1"], query="report on x",
                  questions=["q0?", "q1?", "q2?", "q3?"])
    texts = {"t:0#0": "a b c d", "t:0#1": "e f", "t:1#2": "g h i j k l", "x:0#0": "noise"}
    passages = {p: Passage(p, s, p.split(":")[0], p.split("#")[0]) for p, s in texts.items()}
    ratings = {("t", "t:0#0"): [5, 4, 0, 0],     # answers q0, q1
               ("t", "t:0#1"): [3, 0, 0, 0],     # redundant with t:0#0
               ("t", "t:1#2"): [0, 0, 5, 1]}     # answers q2; q3 is answered by nobody
    return Dataset({"t": topic}, {}, passages, ratings)


def test_judgments_files(tmp_path):
    ds = tiny_dataset()
    j = derive(ds, eta=3)["t"]
    assert j.kept == [0, 1, 2]
    assert j.required == ["t:0#0", "t:1#2"]
    assert j.relevant == ["t:0#0", "t:0#1", "t:1#2"]
    counts = write_judgments(derive(ds, 3), ds, tmp_path, eta=3)
    assert counts["questions_kept"] == 3 and counts["required_passages"] == 2
    assert read_qrels(tmp_path / "qrels.relevance.txt") == {
        "t": {"t:0#0": 2, "t:0#1": 1, "t:1#2": 2}}
    assert read_qrels(tmp_path / "qrels.required.txt") == {"t": {"t:0#0": 1, "t:1#2": 1}}
    div = (tmp_path / "qrels.diversity.txt").read_text().split("\n")
    assert sorted(x for x in div if x) == ["t 0 t:0#0 1", "t 0 t:0#1 1", "t 1 t:0#0 1",
                                          "t 2 t:1#2 1"]
    assert [r.doc_id for r in read_run(tmp_path / "oracle.run")["t"]] == ["t:0#0", "t:1#2"]
    assert read_judgments(tmp_path / "judgments.jsonl")["t"].required == j.required


def test_authors_grades_mark_the_passage_p_star_dominates(tmp_path):
    # P** = [t:0#0, t:1#2]; their element-wise maximum is [5, 4, 5, 1]. t:0#1 = [3, 0, 0, 0] is
    # below it on all four questions: redundant, grade 1 under "3-2-1" (P** 3, the rest 2).
    ds = tiny_dataset()
    j = derive(ds, eta=3)
    assert redundant_passages(j["t"], ds.ratings_by_topic()["t"]) == ["t:0#1"]
    write_judgments(j, ds, tmp_path, eta=3, grades="3-2-1")
    assert read_qrels(tmp_path / "qrels.relevance.txt") == {
        "t": {"t:0#0": 3, "t:0#1": 1, "t:1#2": 3}}
    assert relevance_qrels(j, ds.ratings_by_topic(), "2-1") == {
        "t": {"t:0#0": 2, "t:0#1": 1, "t:1#2": 2}}


def test_redundancy_compares_every_question_and_a_minus_one_is_below_all():
    # P** = [a, b], maximum [5, 4, 4, 0]: the fourth question (rated 0 by all of P**) blocks
    # every passage rated >= 0 on it; only e, with -1 there (unparsed), is below everywhere.
    # d ties P**'s 5 on q0: not below, not redundant.
    matrix = {"a": [5, 4, 0, 0], "b": [0, 0, 4, 0], "c": [3, 2, 1, 0], "d": [5, 0, 2, -1],
              "e": [2, 1, -1, -1]}
    j = TopicJudgments("t", 4, [0, 1, 2], list(matrix), ["a", "b"])
    assert redundant_passages(j, matrix) == ["e"]
    assert relevance_qrels({"t": j}, {"t": matrix}, "3-2-1")["t"] == {
        "a": 3, "b": 3, "c": 2, "d": 2, "e": 1}


def test_scorer_ndcg_under_both_grades_by_hand():
    ds = tiny_dataset()
    texts = {p: x.contents for p, x in ds.passages.items()}
    context = rows("t:0#1", "t:0#0")
    # nDCG@oracle = nDCG@2 (|Z*| = 2): the ideal is cut at rank 2 too (trec_eval ndcg_cut_2).
    # "2-1": gains 1, 2; ideal 2, 2, (1). DCG 1 + 2/log2(3); IDCG 2 + 2/log2(3).
    # "3-2-1": gains 1, 3; ideal 3, 3, (1). DCG 1 + 3/log2(3); IDCG 3 + 3/log2(3).
    expected = {"2-1": (1 + 2 / math.log2(3)) / (2 + 2 / math.log2(3)),        # 0.69343
                "3-2-1": (1 + 3 / math.log2(3)) / (3 + 3 / math.log2(3))}      # 0.59124
    for grades, value in expected.items():
        s = ContextScorer(ds, derive(ds, 3), texts, regex_token_count,
                          MetricOptions(relevance_grades=grades))
        r = s.score(context, "sys", "oracle").iloc[0]
        assert r.nDCG == pytest.approx(value, abs=1e-4), grades
        required = "R(rel=2)" if grades == "2-1" else "R(rel=3)"   # P**'s grade
        assert r[required] == pytest.approx(1 / 2)    # t:0#0 of P** = {t:0#0, t:1#2}
        assert r.R == pytest.approx(2 / 3)
    assert expected["2-1"] == pytest.approx(0.69343, abs=1e-5)
    assert expected["3-2-1"] == pytest.approx(0.59124, abs=1e-5)


def scorer(ds=None):
    ds = ds or tiny_dataset()
    texts = {p: x.contents for p, x in ds.passages.items()}
    return ContextScorer(ds, derive(ds, 3), texts, regex_token_count)


def rows(*pids):
    return {"t": [RunRow("t", p, i + 1, float(10 - i)) for i, p in enumerate(pids)]}


def test_scorer_oracle_context():
    frame = scorer().score(rows("t:0#0", "t:1#2", "x:0#0"), "sys", "oracle")
    r = frame.iloc[0]
    assert r.context_size == 2 and r.tokens == 10
    assert r.Cov == 1.0 and r.alpha_nDCG_crux == pytest.approx(1.0) and r.Den == pytest.approx(1.0)
    assert r.R == pytest.approx(2 / 3) and r["R(rel=2)"] == 1.0


def test_scorer_redundant_and_unjudged_passages():
    s = scorer()
    # redundant first: t:0#1 (q0 only), then the unjudged noise passage -> answers nothing
    r = s.score(rows("t:0#1", "x:0#0"), "sys", "oracle").iloc[0]
    assert r.Cov == pytest.approx(1 / 3)
    assert r.tokens == 3   # "e f" + "noise"
    assert r.Den == pytest.approx(math.sqrt((1 / 3 / 3) / (1 / 10)))
    ideal = 2 + 1 / math.log2(3)   # t:0#0 answers 2 questions, then t:1#2 answers 1
    assert r.alpha_nDCG_crux == pytest.approx(1 / ideal)
    # k = 1 keeps only the first passage
    assert s.score(rows("t:0#0", "t:1#2"), "sys", 1).iloc[0].Cov == pytest.approx(2 / 3)


def test_topic_missing_from_run_scores_zero_and_is_counted():
    frame = scorer().score({}, "empty", "oracle")
    assert frame.iloc[0].Cov == 0.0 and not frame.iloc[0].in_run
    table = aggregate(frame)
    assert table.loc[0, "missing_in_run"] == 1 and table.loc[0, "topics"] == 1


def test_unknown_ids_in_a_run_are_errors(tmp_path):
    ds = tiny_dataset()
    texts = {p: x.contents for p, x in ds.passages.items()}
    with pytest.raises(DataError, match="unknown topic 'nope'") as e:
        check_run({"nope": []}, ds.topics, texts, "my.run")
    assert e.value.field == "qid" and e.value.path == "my.run"
    # an id that is no passage id, where the collection's are <topic>:<doc>#<n>
    with pytest.raises(DataError, match="'zzz' is not a passage id"):
        check_run(rows("zzz"), ds.topics, texts, "my.run")
    # a passage id outside the collection: unjudged and counted, or refused when strict
    assert check_run(rows("t:0#0", "multi_news-train-13278:3#9", "t:9#7"), ds.topics, texts,
                     "my.run") == 2
    with pytest.raises(DataError, match="unknown passage 't:9#7'"):
        check_run(rows("t:9#7"), ds.topics, texts, "my.run", strict_collection=True)


def test_malformed_id_names_the_run_line(tmp_path):
    ds = tiny_dataset()
    run = tmp_path / "my.run"
    run.write_text("t Q0 t:0#0 1 2.0 x\nt Q0 t:9#1 2 1.5 x\nt Q0 zzz 3 1.0 x\n")
    with pytest.raises(DataError) as e:
        check_run(read_run(run), ds.topics, {p: x.contents for p, x in ds.passages.items()}, run)
    assert e.value.record == "line 3" and e.value.field == "docid"


def test_passage_outside_the_collection_is_unjudged_and_den_undefined():
    """t:0#0 (4 tokens, answers q0 q1) then t:5#0, a passage not in the collection: Cov and
    the IR measures as for t:0#0 alone with an unjudged passage after it; Den undefined
    (its tokens are unknown), counted per k; the oracle context (t:0#0, t:1#2) is whole."""
    sc = scorer()
    frame = sc.score(rows("t:0#0", "t:5#0", "t:1#2"), "sys", 2)
    r = frame.iloc[0]
    assert r.Cov == pytest.approx(2 / 3) and math.isnan(r.Den)
    assert sc.den_undefined == {"2": ["t"]}
    whole = sc.score(rows("t:0#0", "t:1#2", "t:5#0"), "sys", 2).iloc[0]
    assert whole.Cov == 1.0 and whole.Den == pytest.approx(1.0)
    assert sc.den_undefined["2"] == []


def test_run_reader_orders_by_score_and_rejects_bad_lines(tmp_path):
    p = tmp_path / "r.run"
    p.write_text("t Q0 b 1 1.0 x\nt Q0 a 2 3.0 x\nt Q0 c 3 3.0 x\n")
    # a and c tie at 3.0: trec_eval's order puts the larger id first, whatever the ranks say
    assert [r.doc_id for r in read_run(p)["t"]] == ["c", "a", "b"]
    p.write_text("t Q0 b 1 high x\n")
    with pytest.raises(DataError, match="line 1: field 'score'"):
        read_run(p)
    p.write_text("t Q0 b 1 1 x\nt Q0 b 2 0.5 x\n")
    with pytest.raises(DataError, match="appears twice"):
        read_run(p)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.run"
    write_run(target, {"t": [("a", 1.0)]}, tag="x")
    before = target.read_text()
    with pytest.raises(RuntimeError), atomic_write(target) as out:
        out.write("half a line")
        raise RuntimeError("killed")
    assert target.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.run"]   # no temp file left


def test_regex_token_counter():
    assert regex_token_count("Hello, world! It's 2.5") == 10   # Hello , world ! It ' s 2 . 5
    assert make_token_counter(None) is regex_token_count


def test_hf_token_counter_reads_a_local_tokenizer(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    count = make_token_counter(str(tmp_path))   # a directory holding tokenizer.json
    assert count("hello world hello unknown") == 4
    with pytest.raises(DataError, match="nothing is downloaded") as err:
        hf_token_counter(tmp_path / "missing")
    assert str(err.value).count(str(tmp_path / "missing")) == 1  # the path once, not twice
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(DataError, match="not a tokenizer.json"):
        hf_token_counter(tmp_path / "broken.json")
    # what a run's manifest records: the file, its SHA-256 and vocabulary size
    import hashlib
    about = describe_token_counter(str(tmp_path))
    assert about == {"kind": "tokenizer", "path": str(tmp_path / "tokenizer.json"),
                     "sha256": hashlib.sha256((tmp_path / "tokenizer.json").read_bytes())
                     .hexdigest(), "vocab_size": 3}
    assert describe_token_counter(None) == {"kind": "regex", "pattern": r"\w+|[^\w\s]"}


def test_dataset_round_trip_and_rating_shape_check(tmp_path):
    ds = tiny_dataset()
    ds.save(tmp_path)
    back = Dataset.load(tmp_path)
    assert back.ratings == ds.ratings and list(back.passages) == list(ds.passages)
    lines = (tmp_path / "answerability.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace("[3, 0, 0, 0]", "[3, 0, 0]")
    (tmp_path / "answerability.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="3 ratings but topic t has 4 questions") as e:
        Dataset.load(tmp_path)
    assert e.value.field == "ratings" and "answerability.jsonl" in e.value.path


def test_the_batch_regex_counter_counts_as_the_regex():
    """regex_token_counts (numpy on the bytes of ASCII texts) against regex_token_count, one
    text at a time, on random texts of word characters, punctuation, every ASCII white space
    (\\x1c-\\x1f included, as str.isspace has them), non-ASCII letters and empty texts."""
    import random

    from cruxflow.metrics.tokens import regex_token_counts

    rng = random.Random(7)
    alphabet = "ab_9Z .,!?-'\"()\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x7fé–ß"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
             for _ in range(3000)] + ["", " ", "", "a", "!!", "a_b c"]
    assert regex_token_counts(texts) == [regex_token_count(t) for t in texts]
    assert regex_token_counts([]) == []
