"""The cost plan (cruxflow plan, rule plan): counts checked against a tiny corpus by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.llm import LLMCache, Request, Sampling
from cruxflow.llm.cache import cache_key
from cruxflow.metrics.tokens import regex_token_count
from cruxflow.stages.prompts import (
    PASSAGES,
    RATING,
    RATING_PASSAGE_FIRST,
    REPORT_REQUEST,
    SUBQUESTIONS,
)
from cruxflow.workflow.config import resolve, with_defaults
from cruxflow.workflow.plan import make_plan
from cruxflow.workflow.plan.report import Rates, plan_json, plan_table, total

REPO = Path(__file__).resolve().parents[1]
# Two clusters of two articles. Regex tokens (\w+ runs and single symbols), by hand:
#   "Rain fell all day ." -> Rain, fell, all, day, "."          = 5
#   "The river rose ."    -> The, river, rose, "."              = 4
#   "Schools closed early today ." -> 5
#   "Roads were shut ."   -> 4
#   summary 1 "A storm flooded the town ." -> 6; summary 2 "Storm hits town ." -> 4
ROWS = [{"document": "Rain fell all day. ||||| The river rose.",
         "summary": "A storm flooded the town."},
        {"document": "Schools closed early today. ||||| Roads were shut.",
         "summary": "Storm hits town."}]
IDENTITY = {"kind": "llamacpp", "model": "tiny.gguf", "endpoint": "chat"}


def _template(t, **fixed):
    """A template's own regex tokens, counted from its whole text with the fields removed."""
    return regex_token_count(t.render(**{f: fixed.get(f, "") for f in t.fields}))


@pytest.fixture
def tiny(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "tiny.gguf").write_bytes(b"")
    config = resolve(with_defaults({
        "datasets": {"tiny": {"format": "multinews", "input": str(raw), "prefix": "t",
                              "n_questions": 2}},
        "llm": {"cache": "cache.sqlite", "backend": "b", "shards": 1,
                "backends": {"b": {"kind": "llamacpp", "model": "tiny.gguf"}},
                "passages": {"max_tokens": 100}},
        "rag": {"datasets": []}, "beyond": {"udcg": {}, "support": {}, "kpr": {}}}))
    return tmp_path, config


def test_requests_and_tokens_counted_by_hand(tiny):
    root, config = tiny
    plan = make_plan(config, root=root)
    rows = {s.stage: s for s in plan.stages}
    assert plan.tokenizer["kind"] == "regex" and plan.tokenizer["estimate"]
    # one request per article: 4; prompts = 4 templates + 5 + 4 + 5 + 4 document tokens
    p = rows["passages"]
    assert (p.requests, p.cached) == (4, 0)
    assert p.prompt_tokens == 4 * _template(PASSAGES) + 18
    assert p.output_tokens == 18            # each output about its article's length
    # one request per topic, from the summaries (6 + 4 tokens)
    r = rows["report_requests"]
    assert (r.requests, r.prompt_tokens) == (2, 2 * _template(REPORT_REQUEST) + 10)
    q = rows["subquestions"]
    assert (q.requests, q.prompt_tokens) == (2, 2 * _template(SUBQUESTIONS, n=2) + 10)
    # ratings before any passage: every article is under 200 words -> 1 passage each, i.e.
    # 2 passages + 1 summary per topic, each against 2 questions: (2 + 1) * 2 * 2 topics = 12
    assert rows["ratings"].requests == 12 and rows["ratings"].cached is None
    assert rows["ratings"].prompts == "estimate"
    assert rows["ratings"].output_tokens == 12   # constrained: one token each


GENERATED = {"t-0": ("Rain fell .", ["Why rain ?"]),
             "t-1": ("Roads shut .", ["What shut ?", "When ?"])}


def write_generated(root, topics) -> None:
    """One generated passage (of each topic's first article) and the sub-questions of each
    of ``topics``, as the passages and subquestions rules write them (1 shard)."""
    g = root / "results" / "generated" / "tiny"
    (g / "passages").mkdir(parents=True)
    (g / "passages" / "shard0-of1.jsonl").write_text("".join(
        json.dumps({"id": f"{t}:0#0", "contents": GENERATED[t][0], "topic_id": t,
                    "doc_id": f"{t}:0"}) + "\n" for t in topics))
    (g / "subquestions.jsonl").write_text("".join(
        json.dumps({"topic_id": t, "questions": GENERATED[t][1]}) + "\n" for t in topics))


def test_ratings_exact_once_passages_and_questions_exist(tiny):
    root, config = tiny
    write_generated(root, ["t-0", "t-1"])
    rows = {s.stage: s for s in make_plan(config, root=root).stages}
    ratings = rows["ratings"]
    # t-0: 1 question x (1 passage + summary) = 2; t-1: 2 questions x 2 = 4 -> 6
    assert (ratings.requests, ratings.prompts) == (6, "counted")
    # tokens: t-0: Why rain ? (3) with "Rain fell ." (3) and the summary (6): 3+3 + 3+6 = 15;
    # t-1: What shut ? (3), When ? (2), each with "Roads shut ." (3) and the summary (4):
    # (3+3) + (2+3) + (3+4) + (2+4) = 24
    assert ratings.prompt_tokens == 6 * _template(RATING) + 15 + 24
    assert rows["subquestions"].outputs == "counted"


@pytest.fixture
def own_topics(tmp_path):
    """Two topics in folders: "a" brings its own two questions, "b" gets n_questions = 3.
    Regex tokens by hand: "Rain fell all day." 5 (4 words), "The river rose." 4 (3),
    "Schools closed early today." 5 (4), "Roads were shut." 4 (3): 18 tokens in 14 words, so
    a 15-word question is round(15 * 18 / 14) = 19 tokens; "Did it rain?" 4, "Did the river
    rise?" 5."""
    for topic, docs in (("a", ["Rain fell all day.", "The river rose."]),
                        ("b", ["Schools closed early today.", "Roads were shut."])):
        (tmp_path / "data" / topic).mkdir(parents=True)
        for i, text in enumerate(docs):
            (tmp_path / "data" / topic / f"{i}.txt").write_text(text + "\n")
    (tmp_path / "data" / "a" / "questions.txt").write_text("Did it rain?\nDid the river rise?\n")
    (tmp_path / "tiny.gguf").write_bytes(b"")
    config = resolve(with_defaults({
        "datasets": {"own": {"format": "documents", "input": str(tmp_path / "data"),
                             "prefix": "own", "n_questions": 3}},
        "llm": {"cache": "cache.sqlite", "backend": "b", "shards": 1,
                "backends": {"b": {"kind": "llamacpp", "model": "tiny.gguf"}}},
        "rag": {"datasets": []}, "beyond": {"udcg": {}, "support": {}, "kpr": {}}}))
    return tmp_path, config


def test_ratings_estimate_counts_a_topics_own_questions(own_topics):
    root, config = own_topics
    ratings = {s.stage: s for s in make_plan(config, root=root).stages}["ratings"]
    # every document under 200 words: 1 passage of its own tokens; no summaries.
    # a: 2 own questions (4, 5 tokens) x passages 5 and 4: (4+5) * 2 + 2 * (5+4) = 36;
    # b: 3 questions of 19 tokens x passages 5 and 4: 6 * 19 + 3 * (5+4) = 141
    assert ratings.requests == 10
    assert ratings.prompt_tokens == 10 * _template(RATING) + 36 + 141


def test_ratings_estimate_rates_the_passages_calibration_saw(own_topics):
    from cruxflow.stages.passages import passage_prompt
    from cruxflow.workflow.plan import Counter, Observed
    from cruxflow.workflow.plan.calibrate import observed

    root, config = own_topics
    # --calibrate sent two of the four pieces: "Rain fell all day." came back as three
    # passages (3, 7, 3 tokens), "Schools closed early today." was refused every time (it
    # keeps its own text, 5 tokens, as one passage)
    pieces = {passage_prompt("Rain fell all day."): ["It rained .",
                                                     "All day long it rained hard .",
                                                     "Rain fell ."],
              passage_prompt("Schools closed early today."): None}
    seen = observed([], pieces, {}, Counter(None))
    # per piece (3 + 1) / 2 = 2.0; a kept passage (3 + 7 + 3) / 3 tokens, rounded to 4
    assert seen.passages_per_piece == 2.0 and seen.passage_tokens == pytest.approx(13 / 3)
    ratings = {s.stage: s for s in make_plan(config, root=root, observed=seen).stages
               }["ratings"]
    # a, sent: 3 passages x own questions (4, 5): 3 * 9 + 2 * (3 + 7 + 3) = 53, 6 requests
    # a, not sent: 2.0 passages of 4 tokens x 2 questions: 4 requests, 4+5+4+5 + 4 * 4 = 34
    # b, sent: its own text (5) x 3 questions of 19: 3 requests, 57 + 15 = 72
    # b, not sent: 2.0 x 3 = 6 requests, 6 * 19 + 6 * 4 = 138
    assert ratings.requests == 6 + 4 + 3 + 6
    assert ratings.prompt_tokens == 19 * _template(RATING) + 53 + 34 + 72 + 138
    assert "the passages --calibrate saw written for 2 of 4 pieces, 2.00 per piece" in \
        ratings.note
    # with llm.passages.max_passages = 2 a piece keeps its first two: (2 + 1) / 2 per piece,
    # a kept passage (3 + 7) / 2 tokens
    seen = observed([], pieces, {}, Counter(None), max_passages=2)
    assert (seen.passages_per_piece, seen.passage_tokens) == (1.5, 5.0)
    assert isinstance(seen, Observed)


def test_ratings_estimate_rates_the_sub_questions_calibration_saw(own_topics):
    from cruxflow.workflow.plan import Observed

    root, config = own_topics
    # topic b's sub-question request (a brings its own questions: asked nothing)
    sub = {s.stage: s for s in make_plan(config, root=root).stages}["subquestions"]
    assert sub.requests == 1
    asked = sub.sample[0].prompt
    # b's output gave 4 questions; the stage keeps n_questions = 3 of them: "Why did schools
    # close?" 5, "Which roads were shut?" 5, "Who shut them?" 4 tokens
    seen = Observed(questions={asked: ["Why did schools close?", "Which roads were shut?",
                                       "Who shut them?", "Was it raining?"]})
    ratings = {s.stage: s for s in make_plan(config, root=root, observed=seen).stages
               }["ratings"]
    # a as before: 4 requests, 36; b: 2 passages (5, 4 tokens) x 3 questions (5 + 5 + 4):
    # 6 requests, 2 * 14 + 3 * (5 + 4) = 55
    assert ratings.requests == 4 + 6
    assert ratings.prompt_tokens == 10 * _template(RATING) + 36 + 55
    assert "sub-questions as --calibrate saw them written" in ratings.note
    # every output refused: b gets no question and nothing of it is rated
    none = {s.stage: s for s in make_plan(config, root=root, observed=Observed(
        questions={asked: None})).stages}["ratings"]
    assert (none.requests, none.prompt_tokens) == (4, 4 * _template(RATING) + 36)
    # b not among the topics sent: as many questions as a topic sent got on average, of their
    # mean length: two topics, one with "Why did it rain?" (5), "Where did it rain?" (5), one
    # refused -> 1 question of 5 tokens; b: 2 passages x 1 = 2 requests, 2 * 5 + 5 + 4 = 19
    mean = {s.stage: s for s in make_plan(config, root=root, observed=Observed(
        questions={"x": ["Why did it rain?", "Where did it rain?"], "y": None})).stages
        }["ratings"]
    assert (mean.requests, mean.prompt_tokens) == (6, 6 * _template(RATING) + 36 + 19)


def test_calibration_sends_more_of_the_stages_that_size_the_ratings():
    from cruxflow.cli.vocabulary import VOCABULARY
    from cruxflow.workflow.plan import SAMPLE, StagePlan
    from cruxflow.workflow.plan.calibrate import SIZING_REQUESTS, _requests, sample_size

    assert SIZING_REQUESTS == SAMPLE == 8
    # the flag's help says so, from this home
    assert f"passages and sub-questions send at least {SIZING_REQUESTS})" in \
        VOCABULARY["calibrate-requests"].meaning
    assert (sample_size("passages", 3), sample_size("passages", 12)) == (8, 12)
    assert sample_size("subquestions", 3) == 8
    assert sample_size("ratings", 3) == sample_size("report_requests", 3) == 3
    sent = [Request(f"piece {i}", Sampling()) for i in range(5)]
    for stage, expected in (("passages", sent), ("subquestions", sent),
                            ("report_requests", [sent[0], sent[2], sent[4]])):
        row = StagePlan(stage, "d", "b", 5, 0, 50, 50, 50, 50, "counted", "estimate",
                        sample=sent)
        requests, real, reused = _requests(row, None, 3, 0, {})
        assert (requests, real, reused) == (expected, True, 0)


def test_cached_answers_are_looked_up_not_called(tiny):
    root, config = tiny
    cache = LLMCache(root / "cache.sqlite")
    # the first attempt of article "The river rose." as the passage stage sends it
    # (generation sampling of config: 0.7 / 0.95 / seed 0, max_tokens from llm.passages)
    request = Request(PASSAGES.render(document="The river rose."),
                      Sampling(temperature=0.7, top_p=0.95, seed=0, max_tokens=100))
    from cruxflow.llm import Completion

    cache.put_many([(cache_key(IDENTITY, request), IDENTITY, request, Completion("<p>x</p>"))])
    cache.close()
    p = {s.stage: s for s in make_plan(config, root=root).stages}["passages"]
    assert (p.requests, p.cached) == (4, 1)
    # what is left to pay: the three other articles (5 + 5 + 4) and their templates
    assert p.todo_prompt_tokens == 3 * _template(PASSAGES) + 14
    assert p.todo_output_tokens == 14


def test_a_request_only_set_plans_the_query_generator_and_the_pool(tmp_path):
    """questions_from: request: the sub-questions row is the authors' query generator around
    each request (found in the cache as the stage sends it), the ratings row rates nothing
    (no summary, and the topics' passages are not P*), and judge_holes' row is the pool at
    its most: k passages of each judged run per topic, against the topic's questions."""
    from cruxflow.llm import Completion
    from cruxflow.stages.holes import AUGMENTATION
    from cruxflow.stages.prompts import RATING_AUGMENTATION, SUBQUESTIONS_REQUEST

    topics = tmp_path / "topics.jsonl"
    # requests of 5 and 3 regex tokens; topic "b" brings 3 questions of its own
    topics.write_text(json.dumps({"topic_id": "a", "request": "Why did rain fall ?"}) + "\n"
                      + json.dumps({"topic_id": "b", "request": "Explain floods .",
                                    "questions": ["Q1?", "Q2?", "Q3?"]}) + "\n"
                      + json.dumps({"topic_id": "c", "request": "Explain roads ."}) + "\n")
    distractors = tmp_path / "distractors.jsonl"
    distractors.write_text(json.dumps({"docno": "x", "headline": "", "text": "Rain fell."})
                           + "\n")
    (tmp_path / "tiny.gguf").write_bytes(b"")

    def plan(holes):
        config = resolve(with_defaults({
            "datasets": {"own": {"format": "documents", "input": str(topics),
                                 "questions_from": "request", "n_questions": 2,
                                 "distractors": str(distractors)}},
            "holes": {"own": holes},
            "retrieval": {"retrievers": ["bm25", "dense"]},
            "llm": {"cache": "cache.sqlite", "backend": "b", "shards": 2,
                    "backends": {"b": {"kind": "llamacpp", "model": "tiny.gguf"}},
                    "passages": {"distractors": "split"}},
            "rag": {"datasets": []}, "beyond": {"udcg": {}, "support": {}, "kpr": {}}}))
        return {s.stage: s for s in make_plan(config, root=tmp_path).stages}

    # the query generator's first attempt for topic "a", as the stage sends it, is cached
    request = Request(SUBQUESTIONS_REQUEST.render(request="Why did rain fall ?"),
                      Sampling(temperature=0.7, top_p=0.95, seed=0, max_tokens=768))
    cache = LLMCache(tmp_path / "cache.sqlite")
    cache.put_many([(cache_key(IDENTITY, request), IDENTITY, request, Completion("q a"))])
    cache.close()
    rows = plan({"k": 4})
    q = rows["subquestions"]       # "b" brings its questions: asked for "a" and "c" only
    assert (q.requests, q.cached, q.prompts) == (2, 1, "counted")
    assert q.prompt_tokens == 2 * _template(SUBQUESTIONS_REQUEST) + 5 + 3
    assert rows["ratings"].requests == 0 and rows["report_requests"].requests == 0
    # the pool: top 4 of 2 first stages per topic, x 2 questions (a, c) or 3 (b): 8 x 7 = 56
    h = rows["judge_holes"]
    assert (h.requests, h.cached, h.prompts, h.jobs) == (56, None, "estimate", 2)
    assert h.output_tokens == 56                       # constrained: one token each
    augmented = plan({"k": 1, "runs": ["bm25"], "rating_prompt": "augmentation"})["judge_holes"]
    assert augmented.requests == 7 and augmented.output_tokens == 7 * AUGMENTATION[
        "free_max_tokens"]
    assert augmented.prompt_tokens > 7 * _template(RATING_AUGMENTATION)
    # once the collection exists, a pool holds no more than its passages: 3 x 7 = 21
    collection = tmp_path / "results/corpus/own/collection/passages.jsonl"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(json.dumps({"id": f"x:0#{i}", "contents": "Rain fell."})
                                  + "\n" for i in range(3)))
    h = plan({"k": 4})["judge_holes"]
    assert h.requests == 21 and "the collection's 3 passages" in h.note


def test_time_and_money_of_the_uncached_tokens(tiny):
    root, config = tiny
    plan = make_plan(config, root=root)
    t = total(plan)
    rates = Rates(output_tokens_per_s=10, prompt_tokens_per_s=100, gpus=2)
    assert rates.seconds(t) == pytest.approx(
        (t.todo_prompt_tokens / 100 + t.todo_output_tokens / 10) / 2)
    priced = Rates(price_in=1.0, price_out=3.0)
    assert priced.money(t) == pytest.approx(
        (t.todo_prompt_tokens + 3 * t.todo_output_tokens) / 1e6)
    out = plan_json(plan, priced)
    assert out["total"]["requests"] == 4 + 2 + 2 + 12
    assert "cost" in plan_table(plan, priced)
    with pytest.raises(ValueError):
        Rates(price_in=1.0)


def test_the_demo_plans_in_seconds_without_a_model(tmp_path):
    code = ("import sys, time; from cruxflow.workflow.plan import make_plan, load_config; "
            "t = time.perf_counter(); p = make_plan(load_config('config.yaml')); "
            "print(time.perf_counter() - t, len(p.stages), "
            "[m for m in ('xllamacpp', 'vllm', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.split(maxsplit=2)
    assert float(out[0]) < 10
    assert out[1] == "6"        # 4 generation stages of demo-multinews, 2 RAG stages
    assert out[2].strip() == "[]"


def test_cli_writes_json(tmp_path, capsys):
    assert main(["plan", "--config", str(REPO / "config.yaml"), "--workdir", str(REPO),
                 "--gpus", "4", "--output", str(tmp_path)]) == 0
    assert "total" in capsys.readouterr().out
    data = json.loads((tmp_path / "plan.json").read_text())
    assert data["rates"]["gpus_available"] == 4 and data["stages"][0]["stage"] == "passages"
    # llama.cpp runs on the CPU: one instance whatever the GPUs
    assert data["rates"]["backends"]["smollm2"]["instances"] == 1


def test_generated_files_of_fewer_topics_are_not_counted(tiny):
    # sub-questions and passages of t-0 only (an earlier config with max_topics 1): the
    # ratings of this 2-topic config are estimated, as before anything was generated (12)
    root, config = tiny
    write_generated(root, ["t-0"])
    ratings = {s.stage: s for s in make_plan(config, root=root).stages}["ratings"]
    assert (ratings.requests, ratings.prompts) == (12, "estimate")


# --- before the data exist, rates by model and GPU, bad input


def _paper_like(tmp_path, **llm):
    """Multi-News test and DUC 2004 as the paper preset names them, neither on disk."""
    return resolve(with_defaults({
        "datasets": {
            "mn": {"format": "multinews", "input": "data/multi_news/test.jsonl", "prefix": "mn",
                   "n_questions": 10},
            "duc": {"format": "duc2004", "input": "data/duc2004", "prefix": "duc",
                    "n_questions": 15}},
        "llm": {"cache": "cache.sqlite", "backend": "big", "shards": 1,
                "backends": {"big": {"kind": "vllm", "model": "org/Llama-3.1-70B-Instruct",
                                     "gpus": 4}}, **llm},
        "rag": {"datasets": []}, "beyond": {"udcg": {}, "support": {}, "kpr": {}}}))


def test_missing_data_is_planned_from_published_sizes(tmp_path):
    plan = make_plan(_paper_like(tmp_path), root=tmp_path)
    rows = {(s.stage, s.dataset): s for s in plan.stages}
    # DUC 2004: 50 clusters x 10 documents of ~464 words (under 1,024: one request each)
    assert rows["passages", "duc"].requests == 500
    assert rows["subquestions", "duc"].requests == 50
    # Multi-News test: 5,622 clusters, 2.79 documents each (Fabbri et al. 2019, Table 2:
    # 125,417 documents in 44,972 clusters); the 60-topic stand-in rounds the mix
    assert rows["report_requests", "mn"].requests == 5622
    assert rows["passages", "mn"].requests == pytest.approx(5622 * 125417 / 44972, rel=0.02)
    assert all(s.prompts == "estimate" and s.cached is None for s in plan.stages)
    assert len(plan.assumed) == 2 and "Fabbri" in plan.assumed[0]
    assert "planned from published sizes" in plan_table(plan, Rates())


def test_missing_data_without_a_known_size_is_one_line(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("datasets:\n  mine: {format: multinews, input: mine.jsonl}\n"
                      "rag: {datasets: []}\n")
    assert main(["plan", "--config", str(config), "--workdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "datasets.mine.input" in err and "published size" in err


def test_missing_model_file_is_assumed_and_unknown_kind_is_one_line(tmp_path, capsys):
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    config = tmp_path / "c.yaml"

    def write(spec):
        config.write_text(f"datasets:\n  t: {{format: multinews, input: {raw}}}\n"
                          f"rag: {{datasets: []}}\nllm: {{backend: b, backends: {{b: {spec}}}}}\n")

    # a model file the user has not downloaded yet: planned by its name, and said so
    write("{kind: llamacpp, model: models/none.gguf}")
    assert main(["plan", "--config", str(config), "--workdir", str(tmp_path)]) == 0
    assert "llm.backends.b.model: models/none.gguf is not on disk" in capsys.readouterr().out
    # ... which calibrating cannot do without: one line
    assert main(["plan", "--config", str(config), "--workdir", str(tmp_path),
                 "--calibrate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "none.gguf" in err
    write("{kind: ollama, model: x}")
    assert main(["plan", "--config", str(config), "--workdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "llm.backends.b.kind" in err


def test_tensor_parallel_instances_and_table_rates(tmp_path):
    from cruxflow.workflow.plan.rates import model_params_b, table_rate

    spec = {"kind": "vllm", "model": "org/Llama-3.1-70B-Instruct", "gpus": 4}
    h100 = table_rate(spec, "h100")
    # 8B on one H100: 30,000 prompt / 5,777 output tokens/s; 70B: x 8/70; 4 GPUs: x 4
    assert h100.prompt_tokens_per_s == pytest.approx(30000 * 8 / 70 * 4)
    assert h100.output_tokens_per_s == pytest.approx(5777 * 8 / 70 * 4)
    mi = table_rate(spec, "mi250x")   # 383 vs 989 TFLOP/s, 3.2 vs 3.35 TB/s
    assert mi.prompt_tokens_per_s == pytest.approx(h100.prompt_tokens_per_s * 383 / 989)
    assert mi.output_tokens_per_s == pytest.approx(h100.output_tokens_per_s * 3.2 / 3.35)
    assert [model_params_b(m) for m in ("meta-llama/Llama-3.1-8B-Instruct",
                                        "SmolLM2-135M-Instruct.Q4_1.gguf", "t5-3b", "gpt")] == [
        8, 0.135, 3, None]
    plan = make_plan(_paper_like(tmp_path), root=tmp_path)
    # one 70B instance on 4 GPUs, two on 8; too few GPUs for one instance is an error
    one = Rates(gpus=4, backends={"big": h100})
    two = Rates(gpus=9, backends={"big": h100})
    assert (one.instances("big"), two.instances("big")) == (1, 2)
    assert one.total_seconds(plan) == pytest.approx(2 * two.total_seconds(plan))
    t = total(plan)
    assert one.total_seconds(plan) == pytest.approx(
        t.todo_prompt_tokens / h100.prompt_tokens_per_s
        + t.todo_output_tokens / h100.output_tokens_per_s)
    with pytest.raises(ValueError, match="over 4 GPUs"):
        Rates(gpus=2, backends={"big": h100})


def test_calibration_fit_recovers_known_rates():
    from cruxflow.workflow.plan.calibrate import Batch, fit

    # seconds = prompt / 200 + output / 20, by construction
    batches = [Batch("a", "b", 3, 1000, 10, 1000 / 200 + 10 / 20),
               Batch("c", "b", 3, 300, 300, 300 / 200 + 300 / 20),
               Batch("d", "b", 3, 3000, 3, 3000 / 200 + 3 / 20)]
    rate = fit(batches)["b"]
    assert rate.prompt_tokens_per_s == pytest.approx(200)
    assert rate.output_tokens_per_s == pytest.approx(20)


@pytest.mark.model
def test_calibrate_runs_real_requests_and_leaves_the_cache_alone(tiny, capsys):
    # The packaged SmolLM2 on the CPU, one request per stage: real calls, timed, not cached.
    root, _ = tiny
    config = root / "c.yaml"
    config.write_text(
        f"datasets:\n  t: {{format: multinews, input: {root / 'raw.jsonl'}, n_questions: 2}}\n"
        "rag: {datasets: []}\nllm: {cache: cache.sqlite, shards: 1, "
        "passages: {max_tokens: 24}, subquestions: {max_tokens: 24}}\n")
    assert main(["plan", "--config", str(config), "--workdir", str(root), "--calibrate",
                 "--calibrate-requests", "1", "--output", str(root / "p")]) == 0
    err = capsys.readouterr().err
    # passages, report_requests, subquestions, ratings, and 3 probes (prefill, generation,
    # requests)
    assert err.count("calibration: ") == 7 and err.count("calibration: (probe)") == 3
    assert not (root / "cache.sqlite").exists()
    backend = json.loads((root / "p" / "plan.json").read_text())["rates"]["backends"]["smollm2"]
    assert backend["source"].startswith("measured") and backend["output_tokens_per_s"] > 0


def test_prompt_cache_reuse_of_passage_first_ratings(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "tiny.gguf").write_bytes(b"")
    config = resolve(with_defaults({
        "datasets": {"tiny": {"format": "multinews", "input": str(raw), "prefix": "t",
                              "n_questions": 2}},
        "llm": {"cache": "cache.sqlite", "backend": "b", "shards": 1,
                "backends": {"b": {"kind": "llamacpp", "model": "tiny.gguf",
                                   "prompt_cache": True}},
                "ratings": {"layout": "passage_first"}},
        "rag": {"datasets": []}, "beyond": {"udcg": {}, "support": {}, "kpr": {}}}))
    ratings = {s.stage: s for s in make_plan(config, root=tmp_path).stages}["ratings"]
    # 6 (text, 2 questions) groups: the second question reuses the template and the text:
    # articles 5 + 4 (t-0), 5 + 4 (t-1), summaries 6 and 4 -> 28 text tokens; the first
    # question of each reuses the instructions before the context, the same in every prompt
    instructions = RATING_PASSAGE_FIRST.text[:RATING_PASSAGE_FIRST.text.index("{context}")]
    assert instructions.endswith("Context: ")
    assert ratings.reused_prompt_tokens == (6 * _template(RATING_PASSAGE_FIRST) + 28
                                            + 6 * regex_token_count(instructions))
    rates = Rates(output_tokens_per_s=1e9, prompt_tokens_per_s=100)
    assert rates.seconds(ratings) == pytest.approx(
        (ratings.todo_prompt_tokens - ratings.reused_prompt_tokens) / 100, rel=1e-6)


def test_llamacpp_runs_on_the_cpu_at_the_measured_rate():
    from cruxflow.workflow.plan.rates import table_rate

    # anchor: SmolLM2-135M, 96 prompt / 69 output tokens/s on one thread; a 1.35B GGUF with
    # 2 threads: x 0.1 x 2; on the CPU, one instance however many GPUs there are
    rate = table_rate({"kind": "llamacpp", "model": "models/Tiny-1.35B.Q4.gguf"}, "h100",
                      threads=2)
    assert rate.prompt_tokens_per_s == pytest.approx(96 * 0.1 * 2)
    assert rate.output_tokens_per_s == pytest.approx(69 * 0.1 * 2)
    assert Rates(gpus=8, backends={"b": rate}).instances("b") == 1


@pytest.mark.workflow
def test_after_a_run_everything_is_counted_and_found_cached(demo_run):
    """The session's demo slice, finished: every LLM stage counted from its real inputs (RAG
    included: contexts, judgments, reports) and every request found in the cache, so nothing
    is left to pay for; the RAG rows are the requests the jobs logged."""
    from cruxflow.workflow.plan import load_config

    work, _ = demo_run
    plan = make_plan(load_config(work / "config.yaml", work), root=work)
    rows = {s.stage: s for s in plan.stages}
    assert set(rows) == {"passages", "report_requests", "subquestions", "ratings",
                         "rag_generate", "rag_judge"}
    for s in plan.stages:
        assert (s.prompts, s.cached, s.jobs) == ("counted", s.requests, 0), s
        assert s.requests > 0 and s.todo_prompt_tokens == s.todo_output_tokens == 0
    for rule in ("rag_generate", "rag_judge"):
        logged = sum(json.loads(p.read_text())["requests"]
                     for p in (work / "logs" / rule).rglob("*.calls.json"))
        assert rows[rule].requests == logged
    assert total(plan).cached == total(plan).requests
