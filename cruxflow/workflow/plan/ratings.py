"""The ratings row of a dataset's plan (:mod:`cruxflow.workflow.plan.generation`): the
requests counted where the passages and sub-questions exist, else estimated from what
``--calibrate`` saw written (each piece it sent at its own passages, the others at the sample's
mean) or from the prompts' own limits."""

from __future__ import annotations

import math
from collections import defaultdict

from cruxflow.data.model import Topic
from cruxflow.data.text import clip_words, count_words
from cruxflow.stages import passages as passage_stage
from cruxflow.stages.ratings import rating_items, rating_prompt, rating_requests
from cruxflow.workflow.job import sampling
from cruxflow.workflow.plan import sizes
from cruxflow.workflow.plan.base import (
    PASSAGES_PER_PIECE,
    QUESTION_WORDS,
    StagePlan,
    group_reuse,
    passages_of_piece,
    prefix_tokens,
    reuses_prefix,
    stage_row,
    template_tokens,
    topic_questions,
)


def rating_output(llm: dict) -> tuple[int, str]:
    """Output tokens of one rating: one constrained token, or at most free_max_tokens."""
    r = llm["ratings"]
    return (1, "counted") if r["decoding"] == "constrained" else (r["free_max_tokens"], "limit")


def plan_ratings(ctx, name, backend, identity, dataset, generated, pieces, piece_tokens,
                  ratio) -> StagePlan:
    llm, counter = ctx.config["llm"], ctx.counter
    clip = llm["ratings"]["max_context_words"]
    layout = llm["ratings"]["layout"]
    fixed = template_tokens(counter, rating_prompt(layout))
    prefix = prefix_tokens(counter, rating_prompt(layout))
    out, out_basis = rating_output(llm)
    questions = generated.get("questions")
    # questions_from: request rates the summaries only (the pool is rule judge_holes')
    request_way = ctx.config["datasets"][name]["questions_from"] == "request"
    ready = questions is not None and (
        set(dataset.topics) <= set(questions) if request_way
        else "passages" in generated and sizes.covers(generated, dataset))
    if ready:
        # Everything the stage reads exists: its own requests, counted and looked up.
        topics = [Topic(t.topic_id, t.reference, t.doc_ids, t.query,
                        questions.get(t.topic_id, []), t.references, t.source_id)
                  for t in dataset.topics.values()]
        by_topic = defaultdict(list)
        for p in generated.get("passages", {}).values():
            if p.topic_id is not None and not request_way:
                by_topic[p.topic_id].append(p)
        _, items = rating_items(topics, by_topic)
        context = counter.many(clip_words(text, clip) for _, text in items)
        prompt = [fixed + qt + context[i] for i, (qs, _) in enumerate(items)
                  for qt in counter.many(qs)]
        reuse = reuses_prefix(ctx.config, backend)
        reused = [r for i, (qs, _) in enumerate(items)
                  for r in group_reuse(fixed + context[i], len(qs), reuse, prefix)]
        requests, slots = rating_requests(items, sampling=sampling(llm, "judgment"),
                                          max_context_words=clip,
                                          decoding=llm["ratings"]["decoding"],
                                          free_max_tokens=llm["ratings"]["free_max_tokens"],
                                          layout=layout)
        hit = ctx.cache.answered(identity, requests)
        # rating_requests sends in request_order; the prompt tokens above are item by item
        order = {slot: j for j, slot in enumerate(slots)}
        hit = [hit[order[(i, qi)]] for i, (qs, _) in enumerate(items) for qi in range(len(qs))]
        return stage_row("ratings", name, backend, prompt, [out] * len(prompt), hit,
                         outputs=out_basis, reused=reused, jobs=llm["shards"],
                         requests=[requests[order[(i, qi)]] for i, (qs, _) in enumerate(items)
                                   for qi in range(len(qs))])
    # Estimate: each piece gives passages of equal shares of its tokens (Fig. 7), or as many as
    # --calibrate saw the backend write (a piece it sent: the very passages), rated against the
    # topic's questions (question_table); a topic's summary, where it has one, is rated too.
    max_passages = llm["passages"]["max_passages"]
    observed = ctx.observed.passages_per_piece
    reuse = reuses_prefix(ctx.config, backend)
    prompt, reused = [], []
    topics = dataset.topics
    seen = 0
    for (doc, chunk), t in zip(pieces, piece_tokens, strict=True):
        if doc.topic_id is None or request_way:
            continue  # distractors are retrieved, never rated (nor, so, a request set's own)
        questions = topic_questions(ctx, name, topics[doc.topic_id], ratio)
        nq = len(questions)
        sent = passage_stage.passage_prompt(chunk)
        if sent in ctx.observed.pieces:
            seen += 1
            kept = passage_stage.kept_passages(ctx.observed.pieces[sent], chunk, max_passages)
            for passage in counter.many(clip_words(p, clip) for p in kept):
                prompt += [fixed + q + passage for q in questions]
                reused += group_reuse(fixed + passage, nq, reuse, prefix)
            continue
        n = observed or passages_of_piece(count_words(chunk), max_passages)
        written = ctx.observed.passage_tokens
        passage = min(round(written) if written else int(t // n), round(clip * ratio))
        k = round(n * nq)
        prompt += [fixed + questions[i % nq] + passage for i in range(k)]   # k = 0 if nq = 0
        reused += (group_reuse(fixed + passage, nq, reuse, prefix) * math.ceil(n))[:k]
    with_summary = [t for t in topics.values() if t.reference]
    summaries = counter.many(clip_words(t.reference, clip) for t in with_summary)
    for topic, s in zip(with_summary, summaries, strict=True):
        questions = topic_questions(ctx, name, topic, ratio)
        prompt += [fixed + q + s for q in questions]
        reused += group_reuse(fixed + s, len(questions), reuse, prefix)
    rated = sum(doc.topic_id is not None for doc, _ in pieces)
    per_piece = (f"{observed:.2f} passages per piece (measured by --calibrate)" if observed
                 else f"{PASSAGES_PER_PIECE} passages per piece at most")
    if seen:
        per_piece = (f"the passages --calibrate saw written for {seen} of {rated} pieces"
                     + (f", {observed:.2f} per piece for the others" if seen < rated else ""))
    return stage_row("ratings", name, backend, prompt, [out] * len(prompt), None,
                     prompts="estimate", outputs=out_basis, reused=reused, jobs=llm["shards"],
                     note=f"before passages and sub-questions exist: {per_piece}, " + (
                         "sub-questions as --calibrate saw them written where a topic brings none"
                         if ctx.observed.questions else
                         f"{QUESTION_WORDS}-word questions where a topic brings none"))
