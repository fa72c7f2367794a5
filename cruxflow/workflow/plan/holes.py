"""The cost plan's rows (:func:`cruxflow.workflow.plan.make_plan`) of the holes in the
judgments and of the sets built from requests alone (docs/judge.md): the ratings of rule
judge_holes, estimated at their most as they depend on runs not made yet, and the sub-questions
that the CRUX authors' query generator writes from each request (questions_from: request)."""

from __future__ import annotations

import itertools
from pathlib import Path

from cruxflow.data.model import Dataset, Topic
from cruxflow.llm import Request
from cruxflow.stages import questions as question_stage
from cruxflow.workflow import config as workflow_config
from cruxflow.workflow.job import sampling
from cruxflow.workflow.plan.base import (
    PASSAGE_WORDS,
    QUESTION_WORDS,
    REQUEST_WORDS,
    Context,
    StagePlan,
    group_reuse,
    prefix_tokens,
    questions_of,
    reuses_prefix,
    stage_row,
    template_tokens,
)
from cruxflow.workflow.plan.ratings import rating_output

REQUEST_QUERIES = 10       # lines the authors' query generator asks for


def plan_request_subquestions(ctx: Context, name: str, backend: str, identity: dict,
                              topics: list[Topic], generated: dict, ratio: float) -> StagePlan:
    """The sub-questions of questions_from: request: the authors' query generator around each
    topic's request (given, or the report request stage's once it exists), counted and looked
    up once every request is known; its output estimated, as it writes ten lines of which the
    stage keeps n_questions."""
    from cruxflow.stages.prompts import SUBQUESTIONS_REQUEST

    llm, d, counter = ctx.config["llm"], ctx.config["datasets"][name], ctx.counter
    todo, _ = question_stage.to_generate(topics, "questions")
    queries = generated.get("queries", {})
    limit = llm["subquestions"]["max_tokens"]
    fixed = template_tokens(counter, SUBQUESTIONS_REQUEST)
    if all(t.query or t.topic_id in queries for t in todo):
        todo = question_stage.with_queries(todo, queries)
        s = sampling(llm, "generation", max_tokens=limit)
        requests = [Request(p, s) for p in question_stage.subquestion_prompts(
            todo, d["n_questions"], questions_from="request")]
        prompt = [fixed + n for n in counter.many(t.query for t in todo)]
        hit, basis = ctx.cache.answered(identity, requests), "counted"
    else:   # requests still to be written from summaries or documents
        requests, hit, basis = None, None, "estimate"
        prompt = [fixed + round(REQUEST_WORDS * ratio)] * len(todo)
    out = [min(limit, round(QUESTION_WORDS * REQUEST_QUERIES * ratio))] * len(todo)
    return stage_row("subquestions", name, backend, prompt, out, hit, prompts=basis,
                     requests=requests,
                     note=f"the authors' query generator (questions_from: request): "
                          f"{REQUEST_QUERIES} queries of {QUESTION_WORDS} words written")


def plan_holes(ctx: Context, name: str, dataset: Dataset, root: Path,
               generated: dict | None = None) -> StagePlan:
    """Rule judge_holes for holes.<name>: the passages in the top k of the judged runs, each
    against its topic's sub-questions (the generated ones where they exist, else its own or
    n_questions), at most: k passages of every run per topic, or every passage of the
    collection once it exists (under ``root``) where it holds fewer, none rated yet (runs
    that share passages, and passages the dataset's own ratings rate, ask fewer); passages of
    PASSAGE_WORDS words, clipped as the rating prompt clips them."""
    from cruxflow.stages.holes import AUGMENTATION
    from cruxflow.stages.prompts import RATING_AUGMENTATION
    from cruxflow.stages.ratings import rating_prompt

    config, counter = ctx.config, ctx.counter
    llm, spec, d = config["llm"], config["holes"][name], config["datasets"][name]
    backend = spec["backend"] or d["llm_backend"] or llm["backend"]
    runs = workflow_config.retrievers(config) if spec["runs"] is None else spec["runs"]
    if spec["rating_prompt"] == "augmentation":   # question first, free decoding: no reuse
        template, clip, reuse = RATING_AUGMENTATION, AUGMENTATION["max_context_words"], False
        out, out_basis = AUGMENTATION["free_max_tokens"], "limit"
    else:
        template = rating_prompt(llm["ratings"]["layout"])
        clip, reuse = llm["ratings"]["max_context_words"], reuses_prefix(config, backend)
        out, out_basis = rating_output(llm)
    texts = [doc.text for doc in itertools.islice(dataset.documents.values(), 2000)]
    ratio = counter.per_word(texts) if texts else 1.0
    fixed, prefix = template_tokens(counter, template), prefix_tokens(counter, template)
    passage = round(min(PASSAGE_WORDS, clip) * ratio)
    question = round(QUESTION_WORDS * ratio)
    questions = (generated or {}).get("questions", {})
    n = spec["k"] * len(runs)
    collection = root / "results/corpus" / (d["corpus"] or name) / "collection/passages.jsonl"
    if collection.is_file():
        with collection.open("rb") as f:
            n = min(n, sum(1 for line in f if line.strip()))
    prompt, reused = [], []
    for topic in dataset.topics.values():
        nq = len(questions.get(topic.topic_id) or []) or questions_of(topic, d["n_questions"])
        prompt += [fixed + question + passage] * (n * nq)
        reused += group_reuse(fixed + passage, nq, reuse, prefix) * n
    return stage_row("judge_holes", name, backend, prompt, [out] * len(prompt), None,
                     prompts="estimate", outputs=out_basis, reused=reused, jobs=llm["shards"],
                     note=f"at most: top {spec['k']} of {len(runs)} runs"
                          + (f" (the collection's {n} passages)" if n < spec["k"] * len(runs)
                             else "") + f" x sub-questions, none rated yet; {PASSAGE_WORDS}-word "
                          "passages")
