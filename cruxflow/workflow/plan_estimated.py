"""The stages the cost plan (:func:`cruxflow.workflow.plan.make_plan`) can only estimate from a
dataset's sizes: RAG reports and their ratings (they need contexts and judgments), and the
LLM requests of LANCER rerankers (cruxflow/rerank/lancer.py)."""

from __future__ import annotations

from pathlib import Path

from cruxflow.data import names
from cruxflow.data.model import Dataset
from cruxflow.data.text import count_words
from cruxflow.stages.prompts import REPORT, REPORT_DIRECT
from cruxflow.stages.ratings import rating_prompt
from cruxflow.workflow import config as workflow_config
from cruxflow.workflow import plan_sizes
from cruxflow.workflow.plan import (
    ORACLE_DEFAULT,
    ORACLE_PASSAGES,
    PASSAGE_WORDS,
    QUESTION_WORDS,
    REQUEST_WORDS,
    StagePlan,
    _Context,
    _group_reuse,
    _passages_per_piece,
    _rating_output,
    _stage,
    _template_tokens,
    reuses_prefix,
)

# --- the stages of rules/rag.smk (estimates: they need contexts and judgments)


def plan_rag(ctx: _Context, name: str, dataset: Dataset, root: Path,
             n_topics: int | None = None) -> list[StagePlan]:
    """Reports from every context (and direct prompting), and their ratings (rules/rag.smk),
    estimated: every topic is assumed judged, |Z*| = ORACLE_PASSAGES, passages an equal share
    of their document (or chunk), as the ratings' estimate has them."""
    from cruxflow.rag.reports import max_words, read_topic_list

    config, counter = ctx.config, ctx.counter
    rag, llm = config["rag"], config["llm"]
    d = config["datasets"][name]
    generator = rag["generator"] or llm["backend"]
    judge = rag["judge"] or d["llm_backend"] or llm["backend"]
    topic_ids = list(dataset.topics)
    if n_topics is not None:   # a stand-in (plan_sizes): only the count of topics is known
        listed = rag["topics"].get(name) and workflow_config.locate(rag["topics"][name], root)
        if listed and Path(listed).is_file():
            n_topics = len(read_topic_list(listed, plan_sizes.AnyTopic()))
        topic_ids = [f"topic-{i}" for i in range(n_topics)]
    elif name in rag["topics"]:
        topic_ids = read_topic_list(workflow_config.locate(rag["topics"][name], root),
                                    dataset.topics)
    topic_ids = sorted(topic_ids)[:rag["max_topics"]] if rag["max_topics"] else topic_ids
    texts = [dataset.documents[i].text for t in list(dataset.topics)[:200]
             for i in dataset.topics[t].doc_ids if i in dataset.documents]
    ratio = counter.per_word(texts)
    stage = llm["passages"]
    shares = []
    for text in texts:
        words = count_words(text)
        words = stage["chunk_words"] if words > stage["max_document_words"] else words
        shares.append(words / _passages_per_piece(words, stage["max_passages"]))
    passage_words = sum(shares) / len(shares) if shares else PASSAGE_WORDS
    oracle = ORACLE_PASSAGES.get(d["format"], ORACLE_DEFAULT)
    passage = round(passage_words * ratio)
    budget = round(oracle * passage)
    if rag["max_tokens"]:
        budget = min(budget, rag["max_tokens"])
    query = round(REQUEST_WORDS * ratio)
    fixed = _template_tokens(counter, REPORT, max_words=max_words(budget))
    direct = _template_tokens(counter, REPORT_DIRECT, max_words=max_words(budget))
    context_words = rag["max_context_words"]
    prompt = []
    pairs = [*workflow_config.rag_pairs(config, name, "main"),
             *workflow_config.rag_pairs(config, name, "samples")]
    for system, k in pairs:
        if system == names.DIRECT:
            prompt += [direct + query] * len(topic_ids)
            continue
        words = (oracle if k == names.ORACLE_K else int(k)) * passage_words
        words = words if context_words is None else min(words, context_words)
        prompt += [fixed + query + round(words * ratio)] * len(topic_ids)
    note = (f"{len(pairs)} contexts x {len(topic_ids)} topics; |Z*| = {oracle:.1f}, "
            f"{passage_words:.0f}-word passages")
    rows = [_stage("rag_generate", name, generator, prompt, [budget] * len(prompt), None,
                   prompts="estimate", outputs="estimate", note=note)]
    rating = (_template_tokens(counter, rating_prompt(llm["ratings"]["layout"]))
              + round(QUESTION_WORDS * ratio) + budget)
    judged = [rating] * (len(prompt) * d["n_questions"])
    reused = _group_reuse(rating - round(QUESTION_WORDS * ratio), d["n_questions"],
                          reuses_prefix(config, judge)) * len(prompt)
    out, out_basis = _rating_output(llm)
    rows.append(_stage("rag_judge", name, judge, judged, [out] * len(judged), None,
                       prompts="estimate", outputs=out_basis, reused=reused,
                       note=f"every report against {d['n_questions']} sub-questions"))
    return rows


def plan_lancer(ctx: _Context, name: str, dataset: Dataset) -> list[StagePlan]:
    """LANCER rerankers (cruxflow/rerank/lancer.py) over a dataset's first stages, estimated:
    a sub-question list per topic (unless it reuses the topic's own), then every candidate of
    the retrieval depth against every sub-question, first attempts only."""
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
            prompt = _template_tokens(counter, lancer.SUBQUESTIONS, n=spec["n_subquestions"])
            n = len(topics) * len(first)
            rows.append(_stage(f"lancer:{rname}:subquestions", name, backend,
                               [prompt + query] * n, [spec["max_tokens"]] * n, None,
                               prompts="estimate", outputs="limit",
                               note=f"{len(topics)} topics x {len(first)} first stages"))
        judgment = (_template_tokens(counter, lancer.JUDGMENT) + round(QUESTION_WORDS * ratio)
                    + (query if concat else 0) + round(PASSAGE_WORDS * ratio))
        n = sum(n_questions) * depth * len(first)
        rows.append(_stage(f"lancer:{rname}:judgments", name, backend, [judgment] * n, [3] * n,
                           None, prompts="estimate", outputs="limit",
                           note=f"top {depth} x sub-questions x {len(first)} first stages"))
    return rows
