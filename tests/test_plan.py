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
from cruxflow.stages.prompts import PASSAGES, RATING, REPORT_REQUEST, SUBQUESTIONS
from cruxflow.workflow.config import resolve, with_defaults
from cruxflow.workflow.plan import make_plan
from cruxflow.workflow.plan_report import Rates, plan_json, plan_table, total

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
                 "--gpus", "4", "--json", str(tmp_path / "plan.json")]) == 0
    assert "total" in capsys.readouterr().out
    data = json.loads((tmp_path / "plan.json").read_text())
    assert data["rates"]["gpus"] == 4 and data["stages"][0]["stage"] == "passages"


def test_generated_files_of_fewer_topics_are_not_counted(tiny):
    # sub-questions and passages of t-0 only (an earlier config with max_topics 1): the
    # ratings of this 2-topic config are estimated, as before anything was generated (12)
    root, config = tiny
    write_generated(root, ["t-0"])
    ratings = {s.stage: s for s in make_plan(config, root=root).stages}["ratings"]
    assert (ratings.requests, ratings.prompts) == (12, "estimate")
