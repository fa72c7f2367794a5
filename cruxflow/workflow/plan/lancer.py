"""The LLM requests of LANCER rerankers (cruxflow/rerank/lancer.py), which the cost plan
(:func:`cruxflow.workflow.plan.make_plan`) can only estimate from a dataset's sizes."""

from __future__ import annotations

from cruxflow.data.model import Dataset
from cruxflow.workflow import config as workflow_config
from cruxflow.workflow.plan.base import (
    PASSAGE_WORDS,
    QUESTION_WORDS,
    REQUEST_WORDS,
    Context,
    StagePlan,
    stage_row,
    template_tokens,
)


def plan_lancer(ctx: Context, name: str, dataset: Dataset,
                n_topics: int | None = None) -> list[StagePlan]:
    """LANCER rerankers (cruxflow/rerank/lancer.py) over a dataset's first stages, estimated:
    a sub-question list per topic (unless it reuses the topic's own), then every candidate of
    the retrieval depth against every sub-question, first attempts only. ``n_topics``: the
    published number of topics when ``dataset`` is a stand-in (its rows are scaled later)."""
    from cruxflow.rerank import lancer, registry

    config, counter = ctx.config, ctx.counter
    llm = config["llm"]
    # Generated datasets get their queries and sub-questions later: count every topic.
    topics = list(dataset.topics.values())
    default_questions = config["datasets"][name]["n_questions"]
    texts = [dataset.documents[i].text for t in topics[:200] for i in t.doc_ids
             if i in dataset.documents]
    ratio = counter.per_word(texts) if texts else 1.0
    rows = []
    for rname, spec in config["retrieval"]["rerankers"].items():
        if spec["kind"] != "lancer":
            continue
        spec = registry.kind("lancer").with_defaults(spec)
        depth = spec.get("depth") or config["retrieval"]["depth"]
        backend = spec["llm_backend"] or llm["backend"]
        first = [r for r in workflow_config.retrievers(config)
                 if spec.get("retrievers") is None or r in spec["retrievers"]]
        generate = spec["subquestions"] == "generate"
        concat = generate if spec["concat_original"] is None else spec["concat_original"]
        n_questions = [spec["n_subquestions"] if generate
                       else len(t.questions) or default_questions for t in topics]
        query = round(REQUEST_WORDS * ratio)
        if generate:
            prompt = template_tokens(counter, lancer.SUBQUESTIONS, n=spec["n_subquestions"])
            n = len(topics) * len(first)
            rows.append(stage_row(f"lancer:{rname}:subquestions", name, backend,
                                  [prompt + query] * n, [spec["max_tokens"]] * n, None,
                                  prompts="estimate", outputs="limit",
                                  note=f"{n_topics or len(topics):,} topics x {len(first)} first "
                                       "stages", jobs=0))   # the judgments' job asks them
        judgment = (template_tokens(counter, lancer.JUDGMENT) + round(QUESTION_WORDS * ratio)
                    + (query if concat else 0) + round(PASSAGE_WORDS * ratio))
        n = sum(n_questions) * depth * len(first)
        rows.append(stage_row(f"lancer:{rname}:judgments", name, backend, [judgment] * n, [3] * n,
                              None, prompts="estimate", outputs="limit", jobs=len(first),
                              note=f"top {depth} x sub-questions x {len(first)} first stages"))
    return rows
