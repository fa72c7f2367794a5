"""The RAG stages of the cost plan (rules/rag.smk; :func:`cruxflow.workflow.plan.make_plan`):
reports from every context and direct prompting (``rag_generate``), and their ratings
(``rag_judge``).

Once their inputs exist, the requests are built as the jobs build them (the judgments, the
contexts and the collection for the reports; the reports and the topics' questions for their
ratings) and looked up in the LLM cache, so that after a run the plan counts what is cached as
cached. Before, they are estimated: every topic judged, |Z*| as in the CRUX authors' data,
passages an equal share of their document, every topic's questions rated against every report.
What an estimate cannot know: contexts that come out identical (the same passages in the same
order, as with small topics where a reranker keeps its first stage's top |Z*|) send the same
prompt, which the cache answers once; so do their reports' ratings.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cruxflow.data import names
from cruxflow.data.model import Dataset
from cruxflow.data.text import count_words
from cruxflow.llm import Request, spec_identity
from cruxflow.stages.prompts import REPORT, REPORT_DIRECT
from cruxflow.stages.ratings import rating_prompt, rating_requests
from cruxflow.workflow import config as workflow_config
from cruxflow.workflow.job import sampling
from cruxflow.workflow.plan import sizes
from cruxflow.workflow.plan.base import (
    ORACLE_DEFAULT,
    ORACLE_PASSAGES,
    PASSAGE_WORDS,
    QUESTION_WORDS,
    REQUEST_WORDS,
    Context,
    StagePlan,
    group_reuse,
    n_questions_of,
    passages_of_piece,
    prefix_tokens,
    reuses_prefix,
    stage_row,
    template_tokens,
)
from cruxflow.workflow.plan.ratings import rating_output

UNKNOWN_DUPLICATES = ("contexts that come out identical are answered once by the cache: known "
                      "only once retrieval has run")


def rag_paths(config: dict, name: str, root: Path) -> dict:
    """Where the RAG jobs of a dataset read and write (rules/rag.smk), at the workflow's eta."""
    d, eta = config["datasets"][name], config["metrics"]["eta"]
    corpus = d["corpus"] or name
    return {"judgments": root / f"results/judgments/{name}/eta{eta}/judgments.jsonl",
            "collection": root / f"results/corpus/{corpus}/collection/passages.jsonl",
            "topics": root / f"results/data/{name}/topics.jsonl",
            "contexts": lambda s, k: root / f"results/contexts/{name}/eta{eta}/{s}.k{k}.jsonl",
            "reports": lambda s, k: root / f"results/rag/{name}/eta{eta}/reports/{s}.k{k}.jsonl"}


def plan_rag(ctx: Context, name: str, dataset: Dataset, root: Path,
             n_topics: int | None = None) -> list[StagePlan]:
    """The two RAG rows of a dataset: counted where their inputs exist, else estimated."""
    config = ctx.config
    pairs = [*workflow_config.rag_pairs(config, name, "main"),
             *workflow_config.rag_pairs(config, name, "samples")]
    paths = rag_paths(config, name, root)
    ready = paths["judgments"].is_file() and paths["collection"].is_file() and all(
        s == names.DIRECT or paths["contexts"](s, k).is_file() for s, k in pairs)
    generate, reports = (_counted_reports(ctx, name, root, pairs, paths) if ready
                         else (None, None))
    judged = (_counted_ratings(ctx, name, pairs, paths)
              if all(paths["reports"](s, k).is_file() for s, k in pairs)
              and paths["topics"].is_file() else None)
    if judged is None and reports is not None:
        judged = _ratings_of_reports(ctx, name, dataset, reports)
    if generate is not None and judged is not None:
        return [generate, judged]
    estimated = _estimated(ctx, name, dataset, root, pairs, n_topics)
    return [generate or estimated[0], judged or estimated[1]]


def _counted_reports(ctx: Context, name: str, root: Path, pairs, paths
                     ) -> tuple[StagePlan, list[tuple[str, int, bool, str]]]:
    """rag_generate's requests as its jobs build them (workflow_scripts/rag_generate.py), and
    per request its topic, its bound, whether a run pays for it (not cached, not a prompt
    another job sends first) and its job."""
    from cruxflow.data.io import iter_jsonl
    from cruxflow.metrics.judgments import read_judgments
    from cruxflow.metrics.tokens import make_token_counter
    from cruxflow.rag.reports import ReportTask, rag_topics, read_topic_list, report_prompt
    from cruxflow.retrieval.corpus import read_collection

    config, counter = ctx.config, ctx.counter
    rag, llm = config["rag"], config["llm"]
    generator = rag["generator"] or llm["backend"]
    topics = {obj["topic_id"]: obj for _, obj in iter_jsonl(paths["topics"])} \
        if paths["topics"].is_file() else {}
    texts = read_collection(paths["collection"])
    judged = {t: j for t, j in read_judgments(paths["judgments"]).items() if j.kept}
    chosen = None
    if name in rag["topics"]:
        chosen = read_topic_list(workflow_config.locate(rag["topics"][name], root), topics)
    count = make_token_counter(config["metrics"]["tokenizer"])
    base = sampling(llm, "generation")
    identity = spec_identity(llm["backends"][generator])
    requests, jobs_todo, topic_of = [], set(), []
    for system, k in pairs:
        contexts = None
        if system != names.DIRECT:
            contexts = {obj["topic_id"]: obj["passages"]
                        for _, obj in iter_jsonl(paths["contexts"](system, k))}
        for tid in rag_topics(judged, rag["max_topics"], chosen):
            budget = sum(count(texts[p]) for p in judged[tid].required)
            budget = min(budget, rag["max_tokens"]) if rag["max_tokens"] else budget
            ids = None if contexts is None else contexts.get(tid, [])
            task = ReportTask(tid, (topics.get(tid) or {}).get("query", ""), ids or [],
                              None if ids is None else [texts[i] for i in ids], budget)
            prompt, _ = report_prompt(task, rag["max_context_words"])
            requests.append((Request(prompt, dataclasses.replace(base, max_tokens=max(1, budget))),
                             (system, k)))
            topic_of.append(tid)
    hit = ctx.cache.answered(identity, [r for r, _ in requests])
    # the same prompt twice is one call: the second is answered by the cache the first fills
    seen, pending = set(), []
    for (r, _pair), h in zip(requests, hit, strict=True):
        key = (r.prompt, r.sampling.max_tokens)
        pending.append(not h and key not in seen)
        seen.add(key)
    for (_, pair), todo in zip(requests, pending, strict=True):
        if todo:
            jobs_todo.add(pair)
    prompt_tokens = counter.many(r.prompt for r, _ in requests)
    row = stage_row("rag_generate", name, generator, prompt_tokens,
                    [r.sampling.max_tokens for r, _ in requests], [not p for p in pending],
                    outputs="limit", jobs=len(jobs_todo), requests=[r for r, _ in requests],
                    note=f"{len(pairs)} contexts; the same prompt in two jobs counted cached once")
    return row, [(t, r.sampling.max_tokens, todo, f"{pair[0]}.k{pair[1]}")
                 for (r, pair), t, todo in zip(requests, topic_of, pending, strict=True)]


def _ratings_of_reports(ctx: Context, name: str, dataset: Dataset, reports) -> StagePlan:
    """rag_judge before the reports exist, from rag_generate's counted requests: every report
    against its topic's questions, as long as its bound (or as --calibrate saw the generator
    write); a report of a prompt already paid for is the same report, rated once."""
    config, counter = ctx.config, ctx.counter
    llm, d = config["llm"], config["datasets"][name]
    judge = config["rag"]["judge"] or d["llm_backend"] or llm["backend"]
    template = rating_prompt(llm["ratings"]["layout"])
    fixed, prefix = template_tokens(counter, template), prefix_tokens(counter, template)
    question = round(QUESTION_WORDS * counter.per_word(
        [doc.text for doc in list(dataset.documents.values())[:200]]))
    written = ctx.observed.output_tokens.get("rag_generate")
    reuse = reuses_prefix(config, judge)
    prompt, reused, hit, jobs = [], [], [], set()
    for topic, budget, todo, job in reports:
        nq = n_questions_of(ctx, name, dataset, topic)
        report = min(budget, round(written)) if written else budget
        prompt += [fixed + question + report] * nq
        # a job's first request finds nothing cached: it computes the instructions too
        first_of_job = job not in jobs and todo
        reused += group_reuse(fixed + report, nq, reuse, 0 if first_of_job else prefix)
        hit += [not todo] * nq
        if todo:
            jobs.add(job)
    out, out_basis = rating_output(llm)
    return stage_row("rag_judge", name, judge, prompt, [out] * len(prompt), hit,
                     prompts="estimate", outputs=out_basis, reused=reused, jobs=len(jobs),
                     note="from the reports' counted prompts and bounds: every report against its "
                          "topic's sub-questions; a report made twice is rated once")


def _counted_ratings(ctx: Context, name: str, pairs, paths) -> StagePlan:
    """rag_judge's requests as its jobs build them (workflow_scripts/rag_judge.py)."""
    from cruxflow.data.io import iter_jsonl
    from cruxflow.stages.ratings import rating_options

    config, counter = ctx.config, ctx.counter
    llm, d = config["llm"], config["datasets"][name]
    judge = config["rag"]["judge"] or d["llm_backend"] or llm["backend"]
    identity = spec_identity(llm["backends"][judge])
    questions = {obj["topic_id"]: obj.get("questions") or []
                 for _, obj in iter_jsonl(paths["topics"])}
    options = rating_options(llm)
    out, out_basis = rating_output(llm)
    requests, owner = [], []
    for pair in pairs:
        items = [(questions.get(obj["topic_id"], []), obj["report"])
                 for _, obj in iter_jsonl(paths["reports"](*pair)) if obj["report"].strip()]
        built, _ = rating_requests(items, sampling=sampling(llm, "judgment"), **options)
        requests += built
        owner += [pair] * len(built)
    hit = ctx.cache.answered(identity, requests)
    seen, pending = set(), []
    for r, h in zip(requests, hit, strict=True):
        pending.append(not h and r.prompt not in seen)
        seen.add(r.prompt)
    prompt_tokens = counter.many(r.prompt for r in requests)
    return stage_row("rag_judge", name, judge, prompt_tokens, [out] * len(requests),
                     [not p for p in pending], outputs=out_basis, requests=requests,
                     jobs=len({o for o, p in zip(owner, pending, strict=True) if p}),
                     note="every report against its topic's sub-questions")


def _estimated(ctx: Context, name: str, dataset: Dataset, root: Path, pairs,
               n_topics: int | None) -> list[StagePlan]:
    """Reports from every context (and direct prompting), and their ratings, estimated: every
    topic is assumed judged, |Z*| = ORACLE_PASSAGES, passages an equal share of their document
    (or chunk), as the ratings' estimate has them."""
    from cruxflow.rag.reports import max_words, read_topic_list

    config, counter = ctx.config, ctx.counter
    rag, llm = config["rag"], config["llm"]
    d = config["datasets"][name]
    generator = rag["generator"] or llm["backend"]
    judge = rag["judge"] or d["llm_backend"] or llm["backend"]
    topic_ids = list(dataset.topics)
    if n_topics is not None:   # a stand-in (sizes): only the count of topics is known
        listed = rag["topics"].get(name) and workflow_config.locate(rag["topics"][name], root)
        if listed and Path(listed).is_file():
            n_topics = len(read_topic_list(listed, sizes.AnyTopic()))
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
        per_piece = ctx.observed.passages_per_piece or passages_of_piece(
            words, stage["max_passages"])
        shares.append(words / per_piece)
    passage_words = sum(shares) / len(shares) if shares else PASSAGE_WORDS
    if ctx.observed.passage_tokens:       # as long as --calibrate saw the model write them
        passage_words = ctx.observed.passage_tokens / ratio
    oracle = ORACLE_PASSAGES.get(d["format"], ORACLE_DEFAULT)
    passage = round(passage_words * ratio)
    budget = round(oracle * passage)
    if rag["max_tokens"]:
        budget = min(budget, rag["max_tokens"])
    query = round(REQUEST_WORDS * ratio)
    fixed = template_tokens(counter, REPORT, max_words=max_words(budget))
    direct = template_tokens(counter, REPORT_DIRECT, max_words=max_words(budget))
    context_words = rag["max_context_words"]
    prompt = []
    for system, k in pairs:
        if system == names.DIRECT:
            prompt += [direct + query] * len(topic_ids)
            continue
        words = (oracle if k == names.ORACLE_K else int(k)) * passage_words
        words = words if context_words is None else min(words, context_words)
        prompt += [fixed + query + round(words * ratio)] * len(topic_ids)
    note = (f"{len(pairs)} contexts x {len(topic_ids)} topics; |Z*| = {oracle:.1f}, "
            f"{passage_words:.0f}-word passages; {UNKNOWN_DUPLICATES}")
    rows = [stage_row("rag_generate", name, generator, prompt, [budget] * len(prompt), None,
                      prompts="estimate", outputs="estimate", note=note, jobs=len(pairs))]
    # each topic's questions: as the generation plan has them, else its own, else n_questions
    per_topic = [n_questions_of(ctx, name, dataset, t) for t in topic_ids]
    template = rating_prompt(llm["ratings"]["layout"])
    rating = template_tokens(counter, template) + round(QUESTION_WORDS * ratio) + budget
    prefix = prefix_tokens(counter, template)
    reuse = reuses_prefix(config, judge)
    judged, reused = [], []
    for _ in pairs:
        for i, nq in enumerate(per_topic):       # a job's first request computes everything
            judged += [rating] * nq
            reused += group_reuse(rating - round(QUESTION_WORDS * ratio), nq, reuse,
                                  prefix if i else 0)
    out, out_basis = rating_output(llm)
    rows.append(stage_row("rag_judge", name, judge, judged, [out] * len(judged), None,
                          prompts="estimate", outputs=out_basis, reused=reused, jobs=len(pairs),
                          note="every report against its topic's sub-questions (the reports of "
                               "identical contexts are the same: rated once)"))
    return rows
