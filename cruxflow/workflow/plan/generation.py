"""The cost plan's rows of the four stages that turn a raw corpus into a rated dataset
(rules/generate.smk): decontextualized passages, report requests, sub-questions, ratings.

The requests are built by the stages' own functions over the real inputs (the raw corpus read
in memory as ``ingest`` reads it; the generated passages and sub-questions when they cover
every topic), so the counts are the workflow's."""

from __future__ import annotations

from pathlib import Path

from cruxflow.data.model import Dataset, Topic
from cruxflow.llm import Request, spec_identity
from cruxflow.stages import passages as passage_stage
from cruxflow.stages import questions as question_stage
from cruxflow.stages.prompts import PASSAGES, REPORT_REQUEST, SUBQUESTIONS
from cruxflow.workflow.job import sampling
from cruxflow.workflow.plan import sizes
from cruxflow.workflow.plan.base import (
    QUESTION_WORDS,
    REQUEST_WORDS,
    Context,
    StagePlan,
    stage_row,
    template_tokens,
)
from cruxflow.workflow.plan.holes import plan_request_subquestions
from cruxflow.workflow.plan.ratings import plan_ratings


def question_table(ctx: Context, n: int, topics: list[Topic], sent: dict[str, str],
                   question_tokens: int) -> dict[str | None, list[int]]:
    """Per topic, the tokens of each sub-question it will be rated against: its own, counted;
    else those --calibrate saw the sub-question stage write for it (``sent``: its prompt; the
    stage keeps the first ``n``, none when every output was refused); else (and under ``None``,
    for topics not named) as many as --calibrate saw per topic and of their mean length, before
    any calibration ``n`` of ``question_tokens``."""
    counter = ctx.counter
    kept = {p: question_stage.kept_questions(v, n) for p, v in ctx.observed.questions.items()}
    written = counter.many(q for qs in kept.values() for q in qs)
    if kept:
        default = [round(sum(written) / len(written)) if written else question_tokens] * round(
            len(written) / len(kept))
    else:
        default = [question_tokens] * n
    table: dict[str | None, list[int]] = {None: default}
    for t in topics:
        if t.questions:
            table[t.topic_id] = counter.many(t.questions)
        elif sent.get(t.topic_id) in kept:
            table[t.topic_id] = counter.many(kept[sent[t.topic_id]])
        else:
            table[t.topic_id] = default
    return table


def plan_generation(ctx: Context, name: str, dataset: Dataset, root: Path) -> list[StagePlan]:
    """The four stages that turn a raw corpus into a rated dataset (rules/generate.smk)."""
    config, counter = ctx.config, ctx.counter
    llm, d = config["llm"], config["datasets"][name]
    backend = d["llm_backend"] or llm["backend"]
    identity = spec_identity(llm["backends"][backend])
    generated = sizes.generated(root, name, llm["shards"])
    topics = list(dataset.topics.values())
    rows = []

    # Decontextualization: one request per document (or chunk), distractors included unless
    # they are split without the LLM (llm.passages.distractors).
    stage = llm["passages"]
    pieces = passage_stage.document_pieces(dataset.documents.values(),
                                           stage["max_document_words"], stage["chunk_words"],
                                           stage["distractors"])
    texts = [c for _, c in pieces]
    piece_tokens = counter.many(texts)
    fixed = template_tokens(counter, PASSAGES)
    s = sampling(llm, "generation", max_tokens=stage["max_tokens"])
    requests = [Request(passage_stage.passage_prompt(c), s) for c in texts]
    hit = ctx.cache.answered(identity, requests)
    # A rewrite of the piece in its own words, within the output limit.
    rows.append(stage_row("passages", name, backend, [fixed + t for t in piece_tokens],
                          [min(stage["max_tokens"], t) for t in piece_tokens], hit,
                          note="output: about the piece's length (Fig. 7 rewrites it)",
                          jobs=llm["shards"], requests=requests))

    ratio = counter.per_word(texts[:2000])
    docs = dataset.documents
    request_way = d["questions_from"] == "request"
    for key, given, prompts_of, template, limit, produced, words in (
            ("report_requests", "query",
             lambda ts: question_stage.report_request_prompts(ts, docs), REPORT_REQUEST,
             llm["report_request"]["max_tokens"], generated.get("queries"), REQUEST_WORDS),
            ("subquestions", "questions",
             lambda ts: question_stage.subquestion_prompts(ts, d["n_questions"], docs),
             SUBQUESTIONS, llm["subquestions"]["max_tokens"], generated.get("questions"),
             QUESTION_WORDS * d["n_questions"])):
        if key == "subquestions" and request_way:
            rows.append(plan_request_subquestions(ctx, name, backend, identity, topics,
                                                  generated, ratio))
            continue
        # a topic that brings its own request or questions is asked nothing; one without a
        # summary is asked from its documents (the whole prompt counted)
        topics_todo, _ = question_stage.to_generate(topics, given)
        prompts = prompts_of(topics_todo)
        fixed = template_tokens(counter, template, n=d["n_questions"])
        references = [fixed + r for r in counter.many(t.reference or "" for t in topics_todo)]
        references = [r if t.reference is not None else n for t, r, n in
                      zip(topics_todo, references, counter.many(prompts), strict=True)]
        s = sampling(llm, "generation", max_tokens=limit)
        requests = [Request(p, s) for p in prompts]
        hit = ctx.cache.answered(identity, requests)
        if produced is not None:
            out = counter.many(" ".join(produced.get(t.topic_id) or "")
                               if isinstance(produced.get(t.topic_id), list)
                               else produced.get(t.topic_id, "") for t in topics_todo)
            basis = "counted"
        else:
            out, basis = [min(limit, round(words * ratio))] * len(topics_todo), "estimate"
        rows.append(stage_row(key, name, backend, references, out, hit, outputs=basis,
                              requests=requests))
        if key == "subquestions":
            sent = {t.topic_id: p for t, p in zip(topics_todo, prompts, strict=True)}
            ctx.questions[name] = question_table(ctx, d["n_questions"], topics, sent,
                                                 round(QUESTION_WORDS * ratio))
    rows.append(plan_ratings(ctx, name, backend, identity, dataset, generated, pieces,
                              piece_tokens, ratio))
    return rows
